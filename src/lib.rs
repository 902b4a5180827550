//! Carrel's engine: a local document library in one SQLite file.
//!
//! Whole files go in ([`Library::add`]); each is extracted ([`extract`]),
//! chunked in document mode ([`chunk::plan`], the one owner of boundaries),
//! given a card ([`card`]), embedded locally ([`models`]) and written by
//! content hash ([`store`]). No Tauri and no UI here: everything is testable
//! headless, and the CLI, the app and the MCP server are thin over it.

pub mod answer;
pub mod card;
pub mod chunk;
pub mod cli;
pub mod error;
pub mod eval;
pub mod extract;
mod fault;
pub mod ingest;
pub mod lanes;
pub mod mcp;
pub mod models;
pub mod store;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub use error::{Error, Result};
pub use ingest::{AddReport, Limits, Progress};
pub use store::{Density, DocumentRow};

use card::Card;
use chunk::Mode;
use extract::{Kind, Section};
use lanes::{Explain, MatchResponse};
use models::{Embedder, Fingerprints, ModelConfig, OnnxEmbedder, OnnxReranker, Reranker};
use store::Store;

/// The application identifier; the desktop app's data dir is named after it,
/// so the CLI and the app find the same default library.
pub const APP_IDENTIFIER: &str = "app.carrel";

/// The database file inside a library folder.
pub const DATABASE_FILE: &str = "library.sqlite3";

/// The per-user data folder shared by the app and the CLI.
pub fn default_data_dir() -> Result<PathBuf> {
    Ok(dirs::data_dir()
        .ok_or(Error::NoDataDir)?
        .join(APP_IDENTIFIER))
}

/// Who chose the library folder in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryDirFrom {
    /// The CLI's `--library`: said for this one command.
    Flag,
    /// `CARREL_LIBRARY`: beats a saved choice, so a script or a test can
    /// point the app anywhere without touching the user's settings.
    Env,
    /// The app's saved setting.
    Saved,
    /// `library/` in the per-user data folder.
    Default,
}

/// The library folder, in the one order the CLI and the app share:
/// a flag, then `CARREL_LIBRARY`, then the saved setting, then `library/`
/// in the data folder.
pub fn library_dir(flag: Option<&Path>, saved: Option<&Path>) -> Result<(PathBuf, LibraryDirFrom)> {
    if let Some(dir) = flag {
        return Ok((dir.to_path_buf(), LibraryDirFrom::Flag));
    }
    if let Some(dir) = std::env::var_os("CARREL_LIBRARY") {
        return Ok((PathBuf::from(dir), LibraryDirFrom::Env));
    }
    match saved {
        Some(dir) => Ok((dir.to_path_buf(), LibraryDirFrom::Saved)),
        None => Ok((default_data_dir()?.join("library"), LibraryDirFrom::Default)),
    }
}

#[derive(Debug, Clone)]
pub struct LibraryConfig {
    pub dir: PathBuf,
    pub models: ModelConfig,
    pub limits: Limits,
    /// The cross-encoder's time budget per query.
    pub rerank_budget: std::time::Duration,
    /// How much of the retrieval log is kept.
    pub log_retention: lanes::log::Retention,
    /// Where URL hosts are looked up: the system's DNS, unless a test
    /// injects its own answers.
    pub resolver: Arc<dyn ingest::HostResolver>,
}

impl LibraryConfig {
    pub fn new(dir: PathBuf, models: ModelConfig) -> Self {
        LibraryConfig {
            dir,
            models,
            limits: Limits::default(),
            rerank_budget: lanes::RERANK_BUDGET,
            log_retention: lanes::log::Retention::default(),
            resolver: Arc::new(ingest::SystemResolver),
        }
    }
}

/// An open library. The embedding model is loaded on first need, so listing,
/// reading and re-scanning unchanged files never load it.
pub struct Library {
    store: Store,
    config: LibraryConfig,
    embedder: Option<Box<dyn Embedder>>,
    reranker: RerankerSlot,
    cache: lanes::Cache,
}

/// The subject lane's cross-encoder: not yet looked for, loaded, or the
/// sentence that says why there is none.
enum RerankerSlot {
    Unloaded,
    Loaded(Box<dyn Reranker>),
    /// Not installed: looked for again each time it is needed (a file check),
    /// so `make models` while the app runs brings the subject lane back.
    Missing(String),
    /// Installed but failed to load: not retried, since a load costs seconds.
    Failed(String),
}

impl RerankerSlot {
    fn get(&mut self, models: &ModelConfig) -> std::result::Result<&mut dyn Reranker, String> {
        if let RerankerSlot::Unloaded | RerankerSlot::Missing(_) = self {
            *self = match OnnxReranker::load(models) {
                Ok(r) => RerankerSlot::Loaded(Box::new(r)),
                Err(Error::ModelMissing { path, .. }) => RerankerSlot::Missing(format!(
                    "no cross-encoder is installed (looked for {}); the subject lane needs one to rank cards, see `make reranker`",
                    path.display()
                )),
                Err(e) => RerankerSlot::Failed(format!("the cross-encoder failed to load: {e}")),
            };
        }
        match self {
            RerankerSlot::Loaded(r) => Ok(r.as_mut()),
            RerankerSlot::Missing(reason) | RerankerSlot::Failed(reason) => Err(reason.clone()),
            RerankerSlot::Unloaded => Err("the cross-encoder was not loaded".into()),
        }
    }
}

/// A document with everything `carrel read` shows.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct DocumentText {
    pub document: DocumentRow,
    pub card: Option<Card>,
    pub sections: Vec<Section>,
}

/// `carrel probe`: what the writer would store for one file.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub mode: Mode,
    pub chunks: usize,
    pub avg_chars: f64,
    pub chars: usize,
    pub truncated_at_chunk: Option<usize>,
}

/// `carrel doctor`: each part, and whether it works.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Doctor {
    pub library: PathBuf,
    pub schema_version: i64,
    pub sqlite_vec: String,
    pub models_dir: PathBuf,
    pub runtime: Check,
    pub embedder: Check,
    /// The subject lane's cross-encoder: which one is active, by id.
    pub reranker: Check,
    pub fingerprints: Option<Fingerprints>,
    pub documents: i64,
    pub contents: i64,
    pub chunks: i64,
    pub chunk_vectors: i64,
    /// Rows pointing at nothing, by kind (all zero in a sound library).
    pub orphans: Vec<(&'static str, i64)>,
    /// `PRAGMA integrity_check`: "ok", or what SQLite found.
    pub integrity: String,
}

#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(tag = "status", rename_all = "lowercase")]
#[serde(rename = "HealthCheck")]
pub enum Check {
    Ok { detail: String },
    Failed { error: String },
}

impl Check {
    pub fn is_ok(&self) -> bool {
        matches!(self, Check::Ok { .. })
    }
}

impl Library {
    pub fn open(config: LibraryConfig) -> Result<Library> {
        std::fs::create_dir_all(&config.dir).map_err(|e| Error::io(&config.dir, e))?;
        let store = Store::open(&config.dir.join(DATABASE_FILE))?;
        Ok(Library {
            store,
            config,
            embedder: None,
            reranker: RerankerSlot::Unloaded,
            cache: lanes::Cache::default(),
        })
    }

    /// The lanes' coverage, counted again only when the database changed: the
    /// count reads every chunk row (30 ms at 55k chunks) and the match panel
    /// asks on every keystroke. This connection's own writes drop the cache;
    /// another connection's commit (the app's ingest, a watcher, the CLI)
    /// changes `data_version`.
    fn coverage(&mut self, fp: &Fingerprints) -> Result<(lanes::Coverage, lanes::Coverage)> {
        let key = (
            self.store.data_version()?,
            format!("{}\u{1f}{}", fp.chunk, fp.card),
        );
        if let Some((k, c)) = &self.cache.coverage
            && *k == key
        {
            return Ok(*c);
        }
        let c = self.store.coverage(&fp.chunk, &fp.card)?;
        self.cache.coverage = Some((key, c));
        Ok(c)
    }

    /// Opens a library that exists; a folder without one is
    /// [`Error::NoLibrary`]. Commands that only read use this, so that a
    /// mistyped path is an error and not an empty library.
    pub fn open_existing(config: LibraryConfig) -> Result<Library> {
        if !config.dir.join(DATABASE_FILE).is_file() {
            return Err(Error::NoLibrary(config.dir));
        }
        Library::open(config)
    }

    /// Uses this cross-encoder for the subject lane instead of the one in the
    /// models folder.
    pub fn set_reranker(&mut self, reranker: Box<dyn Reranker>) {
        self.reranker = RerankerSlot::Loaded(reranker);
    }

    /// Runs both lanes for `query`; logs every decision. The lanes are
    /// returned side by side and never merged.
    pub fn match_query(&mut self, query: &str, top_k: usize) -> Result<MatchResponse> {
        let fp = Fingerprints::of(&self.config.models)?;
        let started = std::time::Instant::now();
        let query_vec = self.embed_query(query)?;
        let embed_ms = ms(started);
        let terms = lanes::terms::stems(query);

        let started = std::time::Instant::now();
        let models = &self.config.models;
        let reranker = &mut self.reranker;
        let q = lanes::LaneQuery {
            text: query,
            vector: &query_vec,
            top_k,
        };
        let (subject, gate_skipped) = lanes::subject::run(
            &self.store,
            &q,
            &fp.card,
            &fp.model,
            || reranker.get(models),
            self.config.rerank_budget,
            &mut self.cache.rerank,
        )?;
        let subject_ms = ms(started);

        let started = std::time::Instant::now();
        let topic = lanes::topic::run(&self.store, &q, &terms, &fp.chunk, &fp.model)?;
        let topic_ms = ms(started);

        let cosine_scorer = lanes::ScorerId {
            kind: lanes::ScorerKind::Cosine,
            model: fp.model.clone(),
        };
        let ce_scorer = match &self.reranker {
            RerankerSlot::Loaded(r) => Some(lanes::ScorerId {
                kind: lanes::ScorerKind::CrossEncoder,
                model: r.model_id().to_string(),
            }),
            _ => None,
        };
        lanes::log::record(
            &mut self.store,
            query,
            &[
                (
                    "subject",
                    &subject.candidates,
                    &cosine_scorer,
                    ce_scorer.as_ref(),
                ),
                ("topic", &topic.candidates, &cosine_scorer, None),
            ],
            self.config.log_retention,
        )?;
        let coverage = self.coverage(&fp)?;
        let (subject_outcome, topic_outcome) = lanes::assemble(&subject, &topic, coverage);
        Ok(MatchResponse {
            query: query.to_string(),
            subject: subject_outcome,
            topic: topic_outcome,
            explain: Explain {
                vetoed: topic
                    .candidates
                    .iter()
                    .filter(|c| c.decision == lanes::Decision::Vetoed)
                    .count(),
                subject: subject.candidates,
                topic: topic.candidates,
                reranker_skipped_by_gate: gate_skipped,
                rerank_calibrated: ce_scorer
                    .as_ref()
                    .is_some_and(|s| lanes::subject::floor_calibrated_for(&s.model)),
                cosine_scorer,
                rerank_scorer: ce_scorer,
                embed_ms,
                subject_ms,
                topic_ms,
            },
        })
    }

    /// The query's vector, from the cache when this text was embedded before.
    pub fn embed_query(&mut self, query: &str) -> Result<Vec<f32>> {
        let fp = Fingerprints::of(&self.config.models)?;
        let key = (query.to_string(), fp.model);
        if let Some(v) = self.cache.query_vectors.get(&key) {
            return Ok(v.clone());
        }
        let embedder = lazy_embedder(&mut self.embedder, &self.config.models);
        let v = embedder
            .embed(&[query])?
            .pop()
            .ok_or_else(|| Error::Embedding("no vector came back for the query".into()))?;
        self.cache.query_vectors.insert(key, v.clone());
        Ok(v)
    }

    /// A grounded answer to `message`; see [`answer`].
    pub fn ask(&mut self, message: &str, answerer: &answer::Answerer) -> Result<answer::Answer> {
        answer::ask(self, message, answerer)
    }

    pub fn config(&self) -> &LibraryConfig {
        &self.config
    }

    pub fn watches(&self) -> Result<Vec<store::Watch>> {
        self.store.watches()
    }

    /// Adds a watch (or finds the one on the same target): `(id, created)`.
    pub fn add_watch(&mut self, w: &store::NewWatch) -> Result<(i64, bool)> {
        self.store.add_watch(w)
    }

    /// Stops watching; the documents stay.
    pub fn remove_watch(&mut self, id: i64) -> Result<()> {
        self.store.remove_watch(id)
    }

    /// Gives document `keep` the source of the fresh row `fresh` (a rename).
    pub fn move_document(&mut self, keep: i64, fresh: i64) -> Result<()> {
        self.cache = lanes::Cache::default();
        self.store.move_document(keep, fresh)
    }

    /// The newest entries of the retrieval log.
    pub fn log(&self, limit: usize) -> Result<Vec<lanes::log::LogEntry>> {
        lanes::log::read(&self.store, limit)
    }

    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Adds files, folders (recursively) and, later, URLs. Bad inputs are
    /// listed in the report's `failed` and the rest still lands. Stale vectors
    /// are re-embedded first.
    pub fn add(
        &mut self,
        inputs: &[String],
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<AddReport> {
        let (sources, failed) = ingest::expand(inputs);
        self.add_sources(&sources, failed, progress)
    }

    /// [`Library::add_sources`] for a watch's sync: private-address URLs
    /// are allowed or not as the watch says, for this call only, and the
    /// documents it creates are the watch's (see [`watch`]). A source that
    /// is already in the library keeps the owner it has.
    pub fn add_for_watch(
        &mut self,
        w: &store::Watch,
        sources: &[ingest::Source],
        failed: Vec<ingest::Failure>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<AddReport> {
        let saved = self.config.limits.allow_private_urls;
        self.config.limits.allow_private_urls = w.allow_private;
        let r = self.run_pipeline(sources, failed, Some(w.id), progress);
        self.config.limits.allow_private_urls = saved;
        r
    }

    /// The pipeline over already expanded sources (files may vanish between
    /// listing and reading; they are then listed as broken). What it adds is
    /// added by hand: no watch's sync removes it.
    pub fn add_sources(
        &mut self,
        sources: &[ingest::Source],
        failed: Vec<ingest::Failure>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<AddReport> {
        self.run_pipeline(sources, failed, None, progress)
    }

    fn run_pipeline(
        &mut self,
        sources: &[ingest::Source],
        failed: Vec<ingest::Failure>,
        watch: Option<i64>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<AddReport> {
        let fingerprints = Fingerprints::of(&self.config.models)?;
        self.cache = lanes::Cache::default();
        self.refresh(progress)?;
        let mut report = AddReport {
            failed,
            ..AddReport::default()
        };
        let limits = self.config.limits;
        // The embedder is only called for new content; the lazy wrapper keeps
        // an all-unchanged re-scan from loading the model at all.
        let embedder = lazy_embedder(&mut self.embedder, &self.config.models);
        let mut pipeline = ingest::Pipeline {
            store: &mut self.store,
            embedder,
            fingerprints: &fingerprints,
            limits,
            watch,
            resolver: self.config.resolver.clone(),
        };
        pipeline.run(sources, &mut report, progress)?;
        Ok(report)
    }

    /// Re-embeds contents whose vectors came from another model or chunker.
    pub fn refresh(&mut self, progress: &mut dyn FnMut(&Progress)) -> Result<usize> {
        let fp = Fingerprints::of(&self.config.models)?;
        let limits = self.config.limits;
        self.cache = lanes::Cache::default();
        let embedder = lazy_embedder(&mut self.embedder, &self.config.models);
        ingest::refresh_stale(&mut self.store, embedder, &fp, &limits, progress)
    }

    /// Every document, with its state judged against the current models.
    pub fn list(&self) -> Result<Vec<DocumentRow>> {
        let fp = Fingerprints::of(&self.config.models).ok();
        let mut docs = self.store.list(
            fp.as_ref().map(|f| f.chunk.as_str()),
            fp.as_ref().map(|f| f.card.as_str()),
        )?;
        docs.iter_mut().for_each(look_for_source);
        Ok(docs)
    }

    pub fn document(&self, id: i64) -> Result<DocumentRow> {
        let fp = Fingerprints::of(&self.config.models).ok();
        let mut doc = self.store.document(
            id,
            fp.as_ref().map(|f| f.chunk.as_str()),
            fp.as_ref().map(|f| f.card.as_str()),
        )?;
        look_for_source(&mut doc);
        Ok(doc)
    }

    pub fn read(&self, id: i64) -> Result<DocumentText> {
        let document = self.document(id)?;
        let (card, sections) = match self.store.document_content(id)? {
            Some(c) => (self.store.card(c)?, self.store.extracted(c)?.sections),
            None => (None, Vec::new()),
        };
        Ok(DocumentText {
            document,
            card,
            sections,
        })
    }

    /// A document's passages. A broken document has none to give: that is
    /// an error naming its reason, never an empty list.
    pub fn chunks(&self, id: i64) -> Result<Vec<store::ChunkRow>> {
        match self.store.document_content(id)? {
            Some(c) => self.store.chunks(c),
            None => Err(Error::BrokenDocument {
                id,
                reason: self
                    .document(id)?
                    .broken_reason
                    .unwrap_or_else(|| "it has no indexed text".into()),
            }),
        }
    }

    pub fn remove(&mut self, id: i64) -> Result<()> {
        self.cache = lanes::Cache::default();
        self.store.remove_document(id)
    }

    /// Chunk density per document, densest first: the check from
    /// `004_c58a719d7463d7eb.txt` (a 600 ceiling should show 400–600).
    pub fn density(&self) -> Result<Vec<Density>> {
        self.store.density()
    }

    pub fn doctor(&self) -> Result<Doctor> {
        let models = &self.config.models;
        let fingerprints = Fingerprints::of(models);
        let runtime = match models::onnx::environment(&models.runtime_path()) {
            Ok(_) => Check::Ok {
                detail: models.runtime_path().display().to_string(),
            },
            Err(e) => Check::Failed {
                error: e.to_string(),
            },
        };
        let embedder = match (&fingerprints, runtime.is_ok()) {
            (Err(e), _) => Check::Failed {
                error: e.to_string(),
            },
            (Ok(_), false) => Check::Failed {
                error: "not loaded: the ONNX Runtime library is missing".into(),
            },
            (Ok(_), true) => match OnnxEmbedder::load(models) {
                Ok(_) => Check::Ok {
                    detail: format!(
                        "{} ({}), {} pooling, max length {}, {} thread(s)",
                        models::EMBEDDER_NAME,
                        models.embedder_dir().display(),
                        models::POOLING,
                        models.max_length,
                        models.threads
                    ),
                },
                Err(e) => Check::Failed {
                    error: e.to_string(),
                },
            },
        };
        let reranker = match (runtime.is_ok(), OnnxReranker::load(models)) {
            (false, _) => Check::Failed {
                error: "not loaded: the ONNX Runtime library is missing".into(),
            },
            (true, Ok(r)) => Check::Ok {
                detail: format!("{} ({})", r.model_id(), models.reranker_dir().display()),
            },
            (true, Err(e)) => Check::Failed {
                error: e.to_string(),
            },
        };
        let [documents, contents, chunks, chunk_vectors, _, _] = self.store.counts()?;
        Ok(Doctor {
            library: self.config.dir.clone(),
            schema_version: self.store.schema_version()?,
            sqlite_vec: self.store.vec_version()?,
            models_dir: models.dir.clone(),
            runtime,
            embedder,
            reranker,
            fingerprints: fingerprints.ok(),
            documents,
            contents,
            chunks,
            chunk_vectors,
            orphans: self.store.orphans()?,
            integrity: self.store.integrity_check()?,
        })
    }
}

/// Sets `source_missing` for a file document whose file is gone.
fn look_for_source(doc: &mut DocumentRow) {
    let is_url = doc.source.starts_with("http://") || doc.source.starts_with("https://");
    doc.source_missing = !is_url && !Path::new(&doc.source).exists();
}

fn ms(since: std::time::Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn lazy_embedder<'a>(
    slot: &'a mut Option<Box<dyn Embedder>>,
    config: &ModelConfig,
) -> &'a mut dyn Embedder {
    slot.get_or_insert_with(|| {
        Box::new(LazyEmbedder {
            config: config.clone(),
            loaded: None,
        })
    })
    .as_mut()
}

/// Loads the ONNX embedder on its first call, so runs that embed nothing
/// never pay for (or depend on) loading the model.
struct LazyEmbedder {
    config: ModelConfig,
    loaded: Option<OnnxEmbedder>,
}

impl Embedder for LazyEmbedder {
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if self.loaded.is_none() {
            self.loaded = Some(OnnxEmbedder::load(&self.config)?);
        }
        self.loaded.as_mut().expect("loaded above").embed(texts)
    }
}

/// Extracts and plans one file exactly as the writer would, without a library.
pub fn probe(
    path: &Path,
    mode: Mode,
    limits: &Limits,
) -> Result<std::result::Result<Probe, extract::BrokenReason>> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::MissingSource(path.to_path_buf()),
        _ => Error::io(path, e),
    })?;
    if let Some(what) = ingest::not_a_file(&meta) {
        return Ok(Err(extract::BrokenReason::NotAFile(what.into())));
    }
    let data = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::MissingSource(path.to_path_buf()),
        _ => Error::io(path, e),
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doc = match extract::isolated(&name, &data, Kind::detect(path, &data), &limits.isolation)? {
        Ok(d) => d,
        Err(reason) => return Ok(Err(reason)),
    };
    let (spans, truncated_at_chunk) = ingest::plan_capped(&doc, mode, limits);
    let (chunks, avg_chars) = chunk::summary(&doc, &spans);
    Ok(Ok(Probe {
        mode,
        chunks,
        avg_chars,
        chars: doc.char_count(),
        truncated_at_chunk,
    }))
}
