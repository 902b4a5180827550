//! Local models behind small traits. The engine asks an [`Embedder`] for
//! vectors and never learns how they are made; [`onnx`] is the real
//! implementation (fastembed over ONNX Runtime, loaded dynamically).
//!
//! A [`Fingerprints`] names exactly what produced a vector: the model file
//! hashes, pooling and max length, plus the chunker or card version. Vectors
//! with another fingerprint are stale and get re-embedded.

pub mod embedders;
pub mod onnx;
pub mod pool;
pub mod rerank;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

pub use embedders::{EmbedderKind, Side};
pub use onnx::OnnxEmbedder;
pub use pool::{EmbedPool, PoolSize, Ticket};
pub use rerank::{OnnxReranker, RerankPool, Reranker, reranker_id};

/// Dimension of every stored vector (all-MiniLM-L6-v2). The vec0 tables are
/// declared with it; a model of another width is refused at load.
pub const EMBED_DIM: usize = 384;

/// Turns texts into unit vectors of [`EMBED_DIM`] floats. The embedder
/// owns the words its model expects before a text ([`Side`]): a caller
/// hands over passages or a query, never a prefix.
pub trait Embedder: Send {
    /// Passages and cards: what is searched.
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// A query: what is searched for.
    fn embed_query(&mut self, query: &str) -> Result<Vec<f32>>;

    /// Starts embedding `texts` and returns at once where the embedder can
    /// work in the background ([`EmbedPool`]); else embeds them now.
    fn submit(&mut self, texts: Vec<String>) -> Ticket {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ticket::ready(self.embed(&refs))
    }
}

/// The default embedder's name: all-MiniLM-L6-v2, int8 ONNX
/// ([`EmbedderKind`] lists every one).
pub const EMBEDDER_NAME: &str = "all-MiniLM-L6-v2";
/// The ONNX Runtime library file `make models` installs (1.24 or newer works).
pub const RUNTIME_FILE: &str = "libonnxruntime.so.1.24.4";
pub const POOLING: &str = "mean";
/// The cross-encoder Carrel ships (`models/carrel-ce-v2`, see its
/// MODEL_CARD.md); `make models` installs it beside the embedder, with
/// carrel-ce-v1 (`--reranker` loads either).
pub const RERANKER_NAME: &str = "carrel-ce-v2";
pub const DEFAULT_MAX_LENGTH: usize = 256;
/// One intra-op thread beat two on a 2-core machine (DESIGN.md), and leaves
/// a core for extraction and the UI.
pub const DEFAULT_THREADS: usize = 1;
/// Texts per ONNX run. Measured on the R FAQ PDF (244 chunks of ~470 chars,
/// 1 thread, 2 cores): batch 1 took 9.7 s and peaked at 273 MB; batch 8,
/// 15.9 s and 549 MB; batch 32, 22.0 s and 1.58 GB (ONNX Runtime's arena grows
/// with every padded shape). Texts are still sorted by length, so a larger
/// configured batch pads little.
pub const DEFAULT_BATCH: usize = 1;

/// Where the models folder was found, in the order it is looked for when
/// none is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum ModelsFrom {
    /// Named by the caller (`--models`, a test).
    Given,
    /// Installed with the program (the package's `lib/Carrel/models`, beside
    /// its `bin/`).
    Installed,
    /// `CARREL_MODELS`.
    Env,
    /// `models/` in the platform data dir (`make models` fills it).
    DataDir,
}

impl ModelsFrom {
    pub fn describe(self) -> &'static str {
        match self {
            ModelsFrom::Given => "named by --models",
            ModelsFrom::Installed => "installed with the package",
            ModelsFrom::Env => "named by CARREL_MODELS",
            ModelsFrom::DataDir => "the data dir (make models)",
        }
    }
}

/// Where a package puts the models, relative to the folder above the
/// program's own `bin/` (`/usr/bin/carrel` → `/usr/lib/Carrel/models`): the
/// Tauri bundler's resource folder for the product name in
/// `src-tauri/tauri.conf.json`, whose resources `make package` maps to
/// `models/`.
pub const INSTALLED_MODELS: &str = "lib/Carrel/models";

/// Where the models live and how to run them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub dir: PathBuf,
    /// How `dir` was found.
    pub from: ModelsFrom,
    /// The embedder: the library's own, recorded in it.
    pub embedder: EmbedderKind,
    pub threads: usize,
    pub max_length: usize,
    pub batch_size: usize,
    /// A cross-encoder folder to use instead of the shipped one, e.g. a
    /// downloaded ms-marco-MiniLM-L-6-v2 or bge-reranker-base.
    pub reranker: Option<PathBuf>,
    /// Embedding workers, each its own session ([`pool`]).
    pub jobs: usize,
    /// Resident memory all embedding workers may take together (MB).
    pub worker_memory_mb: u64,
}

impl ModelConfig {
    pub fn new(dir: PathBuf) -> Self {
        ModelConfig {
            dir,
            from: ModelsFrom::Given,
            embedder: EmbedderKind::default(),
            threads: DEFAULT_THREADS,
            max_length: DEFAULT_MAX_LENGTH,
            batch_size: DEFAULT_BATCH,
            reranker: None,
            jobs: pool::default_jobs(),
            worker_memory_mb: pool::DEFAULT_WORKER_MEMORY_MB,
        }
    }

    /// The models folder when none is given: installed with the program
    /// (a package), else `CARREL_MODELS`, else `models/` in the platform
    /// data dir beside the default library.
    pub fn located() -> Result<ModelConfig> {
        let (dir, from) = if let Some(dir) = installed_models() {
            (dir, ModelsFrom::Installed)
        } else if let Some(dir) = std::env::var_os("CARREL_MODELS") {
            (PathBuf::from(dir), ModelsFrom::Env)
        } else {
            (
                crate::paths::default_data_dir()?.join("models"),
                ModelsFrom::DataDir,
            )
        };
        Ok(ModelConfig {
            from,
            ..ModelConfig::new(dir)
        })
    }

    /// The folder [`ModelConfig::located`] finds.
    pub fn default_dir() -> Result<PathBuf> {
        Ok(ModelConfig::located()?.dir)
    }

    pub fn runtime_path(&self) -> PathBuf {
        self.dir.join("onnxruntime").join(RUNTIME_FILE)
    }

    pub fn embedder_dir(&self) -> PathBuf {
        self.dir.join(self.embedder.name())
    }

    /// The cross-encoder folder (standard layout: `model.onnx` + tokenizer
    /// files): the one asked for, else the shipped one.
    pub fn reranker_dir(&self) -> PathBuf {
        self.reranker
            .clone()
            .unwrap_or_else(|| self.dir.join(RERANKER_NAME))
    }
}

/// The models installed with this program, if it was installed by a
/// package: [`INSTALLED_MODELS`] above its `bin/`, holding the runtime.
fn installed_models() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    let dir = exe.parent()?.parent()?.join(INSTALLED_MODELS);
    dir.join("onnxruntime")
        .join(RUNTIME_FILE)
        .is_file()
        .then_some(dir)
}

/// What produced a vector. `chunk` keys chunk vectors, `card` card vectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Fingerprints {
    pub model: String,
    pub chunk: String,
    pub card: String,
}

impl Fingerprints {
    /// Reads and checks the model files. Cached per process and config, since
    /// it hashes 23 MB.
    pub fn of(cfg: &ModelConfig) -> Result<Fingerprints> {
        static CACHE: Mutex<Vec<(ModelConfig, Fingerprints)>> = Mutex::new(Vec::new());
        let mut cache = crate::fault::lock(&CACHE);
        if let Some((_, fp)) = cache.iter().find(|(c, _)| c == cfg) {
            return Ok(fp.clone());
        }
        let dir = cfg.embedder_dir();
        let (onnx_pin, tokenizer_pin) = cfg.embedder.pins();
        let onnx = verified(&dir.join("model.onnx"), "embedding model", onnx_pin)?;
        let tok = verified(
            &dir.join("tokenizer.json"),
            "embedding tokenizer",
            tokenizer_pin,
        )?;
        let mut base = format!("{onnx}|{tok}|{POOLING}|{}", cfg.max_length);
        // The prefixes make the vector too (MiniLM has none, and its
        // fingerprints stay what they were before embedders were chosen).
        for side in [Side::Query, Side::Passage] {
            match cfg.embedder.prefix(side) {
                "" => {}
                p => base.push_str(&format!("|{p}")),
            }
        }
        let model = format!(
            "{}@{}",
            cfg.embedder.name(),
            &hex(&Sha256::digest(base.as_bytes()))[..12]
        );
        let fp = Fingerprints {
            chunk: format!("{model}/chunker-v{}", crate::chunk::CHUNKER_VERSION),
            card: format!("{model}/card-v{}", crate::card::CARD_VERSION),
            model,
        };
        cache.push((cfg.clone(), fp.clone()));
        Ok(fp)
    }
}

/// sha256 of a file, checked against the pinned value.
fn verified(path: &Path, what: &'static str, expected: &'static str) -> Result<String> {
    let found = sha256_file(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::ModelMissing {
            what,
            path: path.to_path_buf(),
        },
        _ => Error::io(path, e),
    })?;
    if found != expected {
        return Err(Error::ModelChecksum {
            what,
            path: path.to_path_buf(),
            expected,
            found,
        });
    }
    Ok(found)
}

pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
