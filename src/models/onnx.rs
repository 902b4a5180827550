//! The real embedder: fastembed's user-defined model over ONNX Runtime, which
//! is loaded from a file (`ort::init_from`) so that a missing runtime is an
//! error, not a panic. One ORT environment per process.

use std::path::Path;
use std::sync::{Mutex, atomic::AtomicU64, atomic::Ordering};

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};
use ort::environment::Environment;

use super::EMBED_DIM;
use super::{Embedder, EmbedderKind, ModelConfig, Side};
use crate::error::{Error, Result};

/// Number of texts sent to any ONNX embedder in this process. Tests use it to
/// prove that unchanged inputs cost zero model calls.
pub static TEXTS_EMBEDDED: AtomicU64 = AtomicU64::new(0);

/// Loads ONNX Runtime from `path` once per process and returns its environment.
pub fn environment(path: &Path) -> Result<Environment> {
    static ENV: Mutex<Option<Environment>> = Mutex::new(None);
    let mut slot = crate::fault::lock(&ENV);
    if let Some(env) = slot.as_ref() {
        return Ok(env.clone());
    }
    let runtime_err = |reason: String| Error::Runtime {
        path: path.to_path_buf(),
        reason,
    };
    if !path.exists() {
        return Err(runtime_err("the file does not exist".into()));
    }
    let env = ort::init_from(path)
        .map_err(|e| runtime_err(e.to_string()))?
        .with_name("carrel")
        .build()
        .map_err(|e| runtime_err(e.to_string()))?;
    *slot = Some(env.clone());
    Ok(env)
}

pub struct OnnxEmbedder {
    model: TextEmbedding,
    kind: EmbedderKind,
    batch_size: usize,
}

impl OnnxEmbedder {
    pub fn load(cfg: &ModelConfig) -> Result<OnnxEmbedder> {
        // Checks presence and pins before anything is handed to ORT.
        super::Fingerprints::of(cfg)?;
        let env = environment(&cfg.runtime_path())?;
        let dir = cfg.embedder_dir();
        let read =
            |name: &str| std::fs::read(dir.join(name)).map_err(|e| Error::io(dir.join(name), e));
        let tokenizer = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let model = UserDefinedEmbeddingModel::new(read("model.onnx")?, tokenizer)
            .with_pooling(Pooling::Mean);
        let options = InitOptionsUserDefined::new()
            .with_environment(env)
            .with_max_length(cfg.max_length)
            .with_intra_threads(cfg.threads.max(1))
            .with_session_config("session.intra_op.allow_spinning", "0")
            .with_session_config("session.inter_op.allow_spinning", "0");
        let model = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| Error::Embedding(format!("loading {}: {e}", dir.display())))?;
        let mut embedder = OnnxEmbedder {
            model,
            kind: cfg.embedder,
            batch_size: cfg.batch_size.max(1),
        };
        let probe = embedder.run(&["dimension probe"])?;
        if probe[0].len() != EMBED_DIM {
            return Err(Error::Embedding(format!(
                "the model gives {}-dimensional vectors; this library stores {EMBED_DIM}",
                probe[0].len()
            )));
        }
        Ok(embedder)
    }

    fn run(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.model
            .embed(texts, Some(self.batch_size))
            .map_err(|e| Error::Embedding(e.to_string()))
    }

    /// Raw forward passes (tokenise + ONNX run, no pooling, no sorting), for
    /// the benchmark's baseline.
    pub fn forward_only(&mut self, texts: &[&str]) -> Result<()> {
        self.model
            .transform(texts, Some(self.batch_size))
            .map(|_| ())
            .map_err(|e| Error::Embedding(e.to_string()))
    }
}

impl OnnxEmbedder {
    /// Embeds texts on `side`, each with the words this model expects
    /// before it, in length-sorted batches (less padding), returning
    /// vectors in input order.
    pub fn embed_side(&mut self, side: Side, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let kind = self.kind;
        let read: Vec<_> = texts.iter().map(|t| kind.text(side, t)).collect();
        let texts: Vec<&str> = read.iter().map(|t| t.as_ref()).collect();
        TEXTS_EMBEDDED.fetch_add(texts.len() as u64, Ordering::Relaxed);
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let sorted: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
        let vectors = self.run(&sorted)?;
        let mut out = vec![Vec::new(); texts.len()];
        for (v, &i) in vectors.into_iter().zip(&order) {
            out[i] = v;
        }
        Ok(out)
    }
}

impl Embedder for OnnxEmbedder {
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_side(Side::Passage, texts)
    }

    fn embed_query(&mut self, query: &str) -> Result<Vec<f32>> {
        self.embed_side(Side::Query, &[query])?
            .pop()
            .ok_or_else(|| Error::Embedding("no vector came back for the query".into()))
    }
}
