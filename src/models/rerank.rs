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
        let id = reranker_id(cfg)?;
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
        Ok(OnnxReranker { model, id })
    }
}

/// The cross-encoder's id, `name@sha12`: its folder's name and the first 12
/// hex digits of its `model.onnx`'s sha256, as every score it makes is
/// labelled; without loading it.
pub fn reranker_id(cfg: &ModelConfig) -> Result<String> {
    let dir = cfg.reranker_dir();
    let onnx_path = dir.join("model.onnx");
    let digest = sha256_file(&onnx_path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::ModelMissing {
            what: "cross-encoder (reranker)",
            path: onnx_path.clone(),
        },
        _ => Error::io(&onnx_path, e),
    })?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("reranker");
    Ok(format!("{name}@{}", &digest[..12]))
}

impl Reranker for OnnxReranker {
    fn model_id(&self) -> &str {
        &self.id
    }

    /// Scores each pair in its own run ([`RERANK_BATCH`]), returning scores
    /// in input order.
    fn rerank(&mut self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let results = self
            .model
            .rerank(query, documents, false, Some(RERANK_BATCH))
            .map_err(|e| Error::Embedding(format!("cross-encoder: {e}")))?;
        let mut scores = vec![f32::NAN; documents.len()];
        for r in results {
            scores[r.index] = r.score;
        }
        Ok(scores)
    }
}

/// Pairs per cross-encoder run: one. A batch pads every pair to its longest,
/// and the int8 model quantizes its activations over the whole batch, so a
/// card's score moved with the other cards in its batch (Cranfield P@1
/// 0.151 with batches of 8, 0.147 with 4, 0.160 with 1, same cards).
/// Alone, a pair always gets the same score, which the cache keyed by
/// (query, card) assumes; and on one thread it was faster: subject p50 on
/// Cranfield 259 ms in batches of 8, 226 ms sorted by length, 203 ms alone.
const RERANK_BATCH: usize = 1;

/// Cross-encoder sessions the subject lane scores on at once: a query is
/// interactive and short, so it may use every core, up to four (past that
/// a session would score one of the six cards or none).
pub fn rerank_sessions() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4)
}

/// Several sessions of one cross-encoder: a query's cards are split among
/// them and scored at once, one thread each.
pub struct RerankPool {
    sessions: Vec<OnnxReranker>,
}

impl RerankPool {
    /// Loads `n` sessions (at least one) of the cross-encoder `cfg` names.
    pub fn load(cfg: &ModelConfig, n: usize) -> Result<RerankPool> {
        let sessions = (0..n.max(1))
            .map(|_| OnnxReranker::load(cfg))
            .collect::<Result<Vec<_>>>()?;
        Ok(RerankPool { sessions })
    }
}

impl Reranker for RerankPool {
    fn model_id(&self) -> &str {
        self.sessions[0].model_id()
    }

    /// Splits the cards, longest first, each to the session with the
    /// fewest characters so far, so every session finishes at about the
    /// same time; then scores the parts at once.
    fn rerank(&mut self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let n = self.sessions.len().min(documents.len());
        if n <= 1 {
            return self.sessions[0].rerank(query, documents);
        }
        let mut order: Vec<usize> = (0..documents.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(documents[i].len()));
        let mut parts: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); n];
        for i in order {
            let lightest = parts
                .iter_mut()
                .min_by_key(|(chars, _)| *chars)
                .expect("at least two parts");
            lightest.0 += documents[i].len();
            lightest.1.push(i);
        }
        let results: Vec<Result<Vec<f32>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .sessions
                .iter_mut()
                .zip(&parts)
                .map(|(session, (_, part))| {
                    let texts: Vec<&str> = part.iter().map(|&i| documents[i]).collect();
                    scope.spawn(move || session.rerank(query, &texts))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Embedding("a cross-encoder session panicked".into()))
                    })
                })
                .collect()
        });
        let mut scores = vec![f32::NAN; documents.len()];
        for ((_, part), result) in parts.iter().zip(results) {
            for (&i, s) in part.iter().zip(result?) {
                scores[i] = s;
            }
        }
        Ok(scores)
    }
}
