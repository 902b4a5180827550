//! Adding sources to the library: files, folders and URLs through the one
//! pipeline ([`crate::ingest`]), re-embedding stale vectors, and the probe
//! that plans one file exactly as the writer would.

use std::path::Path;

use serde::Serialize;

use super::Library;
use super::documents::ReEmbedding;
use crate::chunk::{self, Mode};
use crate::error::{Error, Result};
use crate::extract::{self, Kind};
use crate::ingest::{self, AddReport, Limits, Progress};
use crate::lanes;
use crate::models::Fingerprints;
use crate::store;

/// `carrel probe`: what the writer would store for one file.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub mode: Mode,
    pub chunks: usize,
    pub avg_chars: f64,
    pub chars: usize,
    pub truncated_at_chunk: Option<usize>,
    /// The reader that produced the text, and what did not read.
    pub reader: extract::Reader,
    pub warnings: Vec<String>,
}

impl Library {
    /// Adds files, folders (recursively) and, later, URLs. Bad inputs are
    /// listed in the report's `failed` and the rest still lands. Stale vectors
    /// are re-embedded first.
    pub fn add(
        &mut self,
        inputs: &[String],
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<AddReport> {
        let expanded = ingest::expand(inputs);
        let mut report = self.add_sources(&expanded.sources, expanded.failed, progress)?;
        report.skipped = expanded.skipped;
        Ok(report)
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
        // The embedder is only called for new content, and loads its
        // sessions then: an all-unchanged re-scan never loads the model.
        let mut pipeline = ingest::Pipeline {
            store: &mut self.store,
            embedder: &mut self.embedder,
            fingerprints: &fingerprints,
            limits,
            watch,
            resolver: self.config.resolver.clone(),
            cancel: self.cancel.clone(),
        };
        pipeline.run(sources, &mut report, progress)?;
        Ok(report)
    }

    /// Re-embeds contents whose vectors came from another model or chunker.
    pub fn refresh(&mut self, progress: &mut dyn FnMut(&Progress)) -> Result<usize> {
        let fp = Fingerprints::of(&self.config.models)?;
        let limits = self.config.limits;
        self.cache = lanes::Cache::default();
        let _marked = ReEmbedding::start(&self.config.dir);
        ingest::refresh_stale(
            &mut self.store,
            &mut self.embedder,
            &fp,
            &limits,
            &self.cancel,
            progress,
        )
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
    let doc = match extract::isolated(
        &name,
        &data,
        Kind::detect(path, &data),
        &limits.isolation,
        &mut |_, _| {},
    )? {
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
        reader: doc.reader,
        warnings: doc.warnings,
    }))
}
