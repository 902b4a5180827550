//! The one facade over the engine: an open library. The CLI, the app and
//! the MCP server hold a [`Library`] and call it; what it does is split by
//! concern, one file each:
//!
//! - here: opening, config, and the models it loads on first need;
//! - [`ingest`](self::ingest): adding sources, re-embedding, probing a file;
//! - [`documents`](self::documents): listing, reading and removing documents;
//! - [`retrieval`](self::retrieval): both lanes, the query cache, the log;
//! - [`watches`](self::watches): the watch list (the syncing is [`crate::watch`]);
//! - [`chat`](self::chat): grounded answers and the kept chat;
//! - [`across`](self::across): an `@kb:` question explained, library by
//!   library;
//! - [`doctor`](self::doctor): each part, and whether it works;
//! - [`shelf`](self::shelf): the libraries kept on this machine;
//! - [`hub`](self::hub): several libraries asked as one, with attribution;
//! - [`remote`](self::remote): a library another machine's hub serves;
//! - [`shared`](self::shared): what a search across libraries carries,
//!   spoken by both.

mod across;
mod chat;
mod doctor;
mod documents;
mod foreign;
pub mod hub;
mod ingest;
pub mod remote;
mod retrieval;
pub mod shared;
pub mod shelf;
mod watches;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use across::{Across, AskedLanes, AskedLibrary, explain_across};
pub use chat::{ask_from, ask_shared};
pub use doctor::{Doctor, HealthCheck};
pub use documents::{DocState, DocumentText, Listed, Shown};
pub use ingest::{Probe, probe};

use crate::error::{Error, Result};
use crate::ingest::{Cancel, Limits};
use crate::lanes;
use crate::models::{EmbedPool, EmbedderKind, ModelConfig, PoolSize, Reranker};
use crate::store::Store;
use retrieval::RerankerSlot;

/// Where a library lives, the models it uses, and its limits.
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
    pub resolver: Arc<dyn crate::ingest::HostResolver>,
}

impl LibraryConfig {
    pub fn new(dir: PathBuf, models: ModelConfig) -> Self {
        LibraryConfig {
            dir,
            models,
            limits: Limits::default(),
            rerank_budget: lanes::RERANK_BUDGET,
            log_retention: lanes::log::Retention::default(),
            resolver: Arc::new(crate::ingest::SystemResolver),
        }
    }
}

/// An open library. The embedding workers load the model on first need, so
/// listing, reading and re-scanning unchanged files never load it.
pub struct Library {
    store: Store,
    config: LibraryConfig,
    embedder: EmbedPool,
    reranker: RerankerSlot,
    cache: lanes::Cache,
    cancel: Cancel,
}

impl Library {
    pub fn open(mut config: LibraryConfig) -> Result<Library> {
        std::fs::create_dir_all(&config.dir).map_err(|e| Error::io(&config.dir, e))?;
        let store = Store::open_dir(&config.dir)?;
        // The library's own embedder, whatever the caller's models say.
        config.models.embedder = store.embedder()?;
        Ok(Library {
            store,
            embedder: EmbedPool::new(config.models.clone()),
            config,
            reranker: RerankerSlot::Unloaded,
            cache: lanes::Cache::default(),
            cancel: Cancel::default(),
        })
    }

    /// Opens a library that exists; a folder without one is
    /// [`Error::NoLibrary`]. Commands that only read use this, so that a
    /// mistyped path is an error and not an empty library.
    pub fn open_existing(config: LibraryConfig) -> Result<Library> {
        if !Store::held_in(&config.dir) {
            return Err(Error::NoLibrary(config.dir));
        }
        Library::open(config)
    }

    /// The embedder this library's vectors are made with.
    pub fn embedder(&self) -> EmbedderKind {
        self.config.models.embedder
    }

    /// Makes this library's vectors with `kind` from now on. The vectors
    /// made with another embedder are stale by their fingerprint: both
    /// lanes say "re-embedding N of M" until [`Library::refresh`] (or the
    /// next add) has made them again. Returns whether anything changed.
    pub fn set_embedder(&mut self, kind: EmbedderKind) -> Result<bool> {
        if kind == self.embedder() {
            return Ok(false);
        }
        let mut models = self.config.models.clone();
        models.embedder = kind;
        // Its files are checked before the library is told to use it.
        crate::models::Fingerprints::of(&models)?;
        self.store.set_embedder(kind)?;
        self.config.models = models;
        self.embedder = EmbedPool::new(self.config.models.clone());
        self.cache = lanes::Cache::default();
        Ok(true)
    }

    /// Uses this cross-encoder for the subject lane instead of the one in the
    /// models folder.
    pub fn set_reranker(&mut self, reranker: Box<dyn Reranker>) {
        self.reranker = RerankerSlot::Loaded(reranker);
    }

    pub fn config(&self) -> &LibraryConfig {
        &self.config
    }

    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Stops this library's ingest between two documents, from any thread:
    /// what was written stays, and adding the same inputs again goes on. A
    /// cancel is for good: every later add on this `Library` returns at
    /// once, so the CLI and the app open one per import.
    pub fn cancel_handle(&self) -> Cancel {
        self.cancel.clone()
    }

    /// Uses `cancel` as this library's stop request: a caller that must hold
    /// the handle before the library is open (the app, which opens it off
    /// the UI thread) makes it first.
    pub fn set_cancel(&mut self, cancel: Cancel) {
        self.cancel = cancel;
    }

    /// The embedding workers running, once something was embedded.
    pub fn embedding_workers(&self) -> Option<PoolSize> {
        self.embedder.size()
    }
}
