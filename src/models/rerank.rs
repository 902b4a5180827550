//! The subject lane's cross-encoder. Any model in the standard cross-encoder
//! layout (`model.onnx` with a `logits` output, plus tokenizer files) loads
//! from a folder: Carrel's own, or ms-marco-MiniLM-L-6-v2 / bge-reranker-base
//! that a user has downloaded.

use fastembed::{
    RerankInitOptionsUserDefined, TextRerank, TokenizerFiles, UserDefinedRerankingModel,
};

use super::{ModelConfig, sha256_file};
use crate::error::{Error, Result};

/// Scores (query, document) pairs; one raw logit per document, input order.
pub trait Reranker: Send {
    /// `cross-encoder` name and fingerprint, e.g. `carrel-ce@0123abcd4567`.
    fn model_id(&self) -> &str;
    fn rerank(&mut self, query: &str, documents: &[&str]) -> Result<Vec<f32>>;
}

pub struct OnnxReranker {
    model: TextRerank,
    id: String,
}

impl OnnxReranker {
    /// Loads the cross-encoder in `cfg.reranker_dir()`. A missing folder is
    /// [`Error::ModelMissing`], so callers can tell "not installed" from
    /// "installed but broken".
    pub fn load(cfg: &ModelConfig) -> Result<OnnxReranker> {
        let dir = cfg.reranker_dir();
        let onnx_path = dir.join("model.onnx");
        if !onnx_path.exists() {
            return Err(Error::ModelMissing {
                what: "cross-encoder (reranker)",
                path: onnx_path,
            });
        }
        let read =
            |name: &str| std::fs::read(dir.join(name)).map_err(|e| Error::io(dir.join(name), e));
        let digest = sha256_file(&onnx_path).map_err(|e| Error::io(&onnx_path, e))?;
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("reranker")
            .to_string();
        let env = super::onnx::environment(&cfg.runtime_path())?;
        let tokenizer = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let options = RerankInitOptionsUserDefined::new()
            .with_environment(env)
            .with_max_length(cfg.max_length)
            .with_intra_threads(cfg.threads.max(1))
            .with_session_config("session.intra_op.allow_spinning", "0");
        let model = TextRerank::try_new_from_user_defined(
            UserDefinedRerankingModel::new(read("model.onnx")?, tokenizer),
            options,
        )
        .map_err(|e| {
            Error::Embedding(format!(
                "loading the cross-encoder at {}: {e}",
                dir.display()
            ))
        })?;
        Ok(OnnxReranker {
            model,
            id: format!("{name}@{}", &digest[..12]),
        })
    }
}

impl Reranker for OnnxReranker {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn rerank(&mut self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let results = self
            .model
            .rerank(query, documents, false, Some(8))
            .map_err(|e| Error::Embedding(format!("cross-encoder: {e}")))?;
        let mut scores = vec![f32::NAN; documents.len()];
        for r in results {
            scores[r.index] = r.score;
        }
        Ok(scores)
    }
}
