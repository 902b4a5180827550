//! `carrel doctor`: each part of the library and its models, and whether it
//! works.

use std::path::PathBuf;

use serde::Serialize;

use super::Library;
use crate::error::Result;
use crate::models::{self, Fingerprints, OnnxEmbedder, OnnxReranker, Reranker};

/// `carrel doctor`: each part, and whether it works.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Doctor {
    pub library: PathBuf,
    pub schema_version: i64,
    /// The server holding a team library ("PostgreSQL 16.2 at
    /// db.example:5432/carrel"); none for a library in its SQLite file.
    pub server: Option<String>,
    /// The vector search's version: sqlite-vec's in a SQLite library,
    /// pgvector's on PostgreSQL (the other none).
    pub sqlite_vec: Option<String>,
    pub pgvector: Option<String>,
    pub models_dir: PathBuf,
    /// How the models folder was found (installed with the package,
    /// `CARREL_MODELS`, the data dir, or named by `--models`).
    pub models_from: models::ModelsFrom,
    pub runtime: HealthCheck,
    pub embedder: HealthCheck,
    /// The subject lane's cross-encoder: which one is active, by id.
    pub reranker: HealthCheck,
    /// Optional readers: poppler's `pdftotext` (PDFs pdf-extract cannot
    /// read) and Tesseract OCR (scans and images). Without them those files
    /// are listed broken, saying what to install; nothing else is affected.
    pub pdftotext: HealthCheck,
    pub ocr: HealthCheck,
    pub fingerprints: Option<Fingerprints>,
    pub documents: i64,
    pub contents: i64,
    pub chunks: i64,
    pub chunk_vectors: i64,
    /// Rows pointing at nothing, by kind (all zero in a sound library).
    pub orphans: Vec<(&'static str, i64)>,
    /// `PRAGMA integrity_check`: "ok", or what SQLite found; on PostgreSQL
    /// "ok" once the server answers (it checks its own pages).
    pub integrity: String,
}

#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum HealthCheck {
    Ok { detail: String },
    Failed { error: String },
}

impl HealthCheck {
    pub fn is_ok(&self) -> bool {
        matches!(self, HealthCheck::Ok { .. })
    }
}

impl Library {
    pub fn doctor(&self) -> Result<Doctor> {
        let models = &self.config.models;
        let fingerprints = Fingerprints::of(models);
        let runtime = match models::onnx::environment(&models.runtime_path()) {
            Ok(_) => HealthCheck::Ok {
                detail: models.runtime_path().display().to_string(),
            },
            Err(e) => HealthCheck::Failed {
                error: e.to_string(),
            },
        };
        let embedder = match (&fingerprints, runtime.is_ok()) {
            (Err(e), _) => HealthCheck::Failed {
                error: e.to_string(),
            },
            (Ok(_), false) => HealthCheck::Failed {
                error: "not loaded: the ONNX Runtime library is missing".into(),
            },
            (Ok(_), true) => match OnnxEmbedder::load(models) {
                Ok(_) => HealthCheck::Ok {
                    detail: format!(
                        "{} ({}), {} pooling, max length {}, {} thread(s)",
                        models.embedder,
                        models.embedder_dir().display(),
                        models::POOLING,
                        models.max_length,
                        models.threads
                    ),
                },
                Err(e) => HealthCheck::Failed {
                    error: e.to_string(),
                },
            },
        };
        let reranker = match (runtime.is_ok(), OnnxReranker::load(models)) {
            (false, _) => HealthCheck::Failed {
                error: "not loaded: the ONNX Runtime library is missing".into(),
            },
            (true, Ok(r)) => HealthCheck::Ok {
                detail: format!("{} ({})", r.model_id(), models.reranker_dir().display()),
            },
            (true, Err(e)) => HealthCheck::Failed {
                error: e.to_string(),
            },
        };
        let (pdftotext, ocr) = readers();
        let [documents, contents, chunks, chunk_vectors, _, _] = self.store.counts()?;
        let (server, vectors) = (self.store.held_by()?, self.store.vec_version()?);
        Ok(Doctor {
            library: self.config.dir.clone(),
            schema_version: self.store.schema_version()?,
            server: server.clone(),
            sqlite_vec: server.is_none().then_some(vectors.clone()),
            pgvector: server.is_some().then_some(vectors),
            models_dir: models.dir.clone(),
            models_from: models.from,
            runtime,
            embedder,
            reranker,
            pdftotext,
            ocr,
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

/// The optional readers: poppler's `pdftotext` and Tesseract OCR.
fn readers() -> (HealthCheck, HealthCheck) {
    let pdftotext = match crate::extract::poppler_version() {
        Some(v) => HealthCheck::Ok { detail: v },
        None => HealthCheck::Failed {
            error: "pdftotext is not installed; PDFs pdf-extract cannot read stay broken (apt install poppler-utils)".into(),
        },
    };
    let ocr = match crate::extract::ocr::Ocr::probe() {
        crate::extract::ocr::Ocr::Ready { version, languages } => HealthCheck::Ok {
            detail: format!("{version}, languages: {}", languages.join(", ")),
        },
        crate::extract::ocr::Ocr::Missing => HealthCheck::Failed {
            error: "Tesseract is not installed; scanned PDFs and images stay broken (apt install tesseract-ocr tesseract-ocr-eng)".into(),
        },
    };
    (pdftotext, ocr)
}
