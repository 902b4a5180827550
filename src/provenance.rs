//! What this build is: its version, the commit it was built from, and the
//! fingerprints of the model files it runs (the ONNX Runtime library, the
//! embedder, the cross-encoder, and the answerer's language model, which a
//! package may leave out), as `carrel --version` and the app's Settings →
//! About show them.

use std::path::PathBuf;

use serde::Serialize;

use crate::models::{self, ModelConfig, ModelsFrom};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit this build was made from (12 hex digits), or "unknown".
pub const COMMIT: &str = env!("CARREL_COMMIT");

/// One model file and its fingerprint: the first 12 hex digits of its
/// sha256, or why it could not be read.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ModelFile {
    pub what: &'static str,
    pub path: PathBuf,
    pub sha256_12: Option<String>,
    pub error: Option<String>,
}

/// The build and the model files it finds.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Provenance {
    pub version: &'static str,
    pub commit: &'static str,
    pub models_dir: PathBuf,
    pub models_from: ModelsFrom,
    /// How the folder was found, in words ([`ModelsFrom::describe`]).
    pub models_found: &'static str,
    pub files: Vec<ModelFile>,
}

impl Provenance {
    /// Reads (hashes) the model files `models` names.
    pub fn of(models: &ModelConfig) -> Provenance {
        let file = |what, path: PathBuf| {
            let (sha256_12, error) = match models::sha256_file(&path) {
                Ok(sha) => (Some(sha[..12].to_string()), None),
                Err(e) => (None, Some(e.to_string())),
            };
            ModelFile {
                what,
                path,
                sha256_12,
                error,
            }
        };
        Provenance {
            version: VERSION,
            commit: COMMIT,
            models_dir: models.dir.clone(),
            models_from: models.from,
            models_found: models.from.describe(),
            files: vec![
                file("onnx runtime", models.runtime_path()),
                file("embedder", models.embedder_dir().join("model.onnx")),
                file("cross-encoder", models.reranker_dir().join("model.onnx")),
                file("answerer", crate::models::writer::writer_path(&models.dir)),
            ],
        }
    }

    /// `carrel --version`'s text: the version and commit on the first line,
    /// then the models folder and each file's fingerprint.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "{} (commit {})\nmodels  {} ({})",
            self.version,
            self.commit,
            self.models_dir.display(),
            self.models_found
        );
        for f in &self.files {
            let print = match (&f.sha256_12, &f.error) {
                (Some(sha), _) => format!("sha256 {sha}"),
                (None, Some(e)) => format!("unreadable: {e}"),
                (None, None) => "unreadable".into(),
            };
            out.push_str(&format!("\n{:<14}  {print}  {}", f.what, f.path.display()));
        }
        out
    }
}
