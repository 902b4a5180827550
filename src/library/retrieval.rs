//! Both lanes for a query, side by side, never merged: the query vector
//! and cross-encoder caches, the lanes' coverage, and the retrieval log.

use super::Library;
use crate::error::{Error, Result};
use crate::lanes::{self, Explain, MatchResponse};
use crate::language::Language;
use crate::models::{Fingerprints, ModelConfig, RerankPool, Reranker};
use crate::score;
use crate::store::Coverage;

/// The subject lane's cross-encoder: not yet looked for, loaded, or the
/// sentence that says why there is none.
pub(super) enum RerankerSlot {
    Unloaded,
    Loaded(Box<dyn Reranker>),
    /// Not installed: looked for again each time it is needed (a file check),
    /// so `make models` while the app runs brings the subject lane back.
    Missing(String),
    /// Installed but failed to load: not retried, since a load costs seconds.
    Failed(String),
}

impl RerankerSlot {
    pub(super) fn get(
        &mut self,
        models: &ModelConfig,
    ) -> std::result::Result<&mut dyn Reranker, String> {
        if let RerankerSlot::Unloaded | RerankerSlot::Missing(_) = self {
            let sessions = crate::models::rerank::rerank_sessions();
            *self = match RerankPool::load(models, sessions) {
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

impl Library {
    /// Runs both lanes for `query`; logs every decision. The lanes are
    /// returned side by side and never merged.
    pub fn match_query(&mut self, query: &str, top_k: usize) -> Result<MatchResponse> {
        let fp = Fingerprints::of(&self.config.models)?;
        let started = std::time::Instant::now();
        let query_vec = self.embed_query(query)?;
        let embed_ms = ms(started);
        let language = crate::language::detect_query(query, &self.languages()?);

        let started = std::time::Instant::now();
        let models = &self.config.models;
        let reranker = &mut self.reranker;
        let q = lanes::LaneQuery {
            text: query,
            vector: &query_vec,
            language,
            floors: lanes::CosineFloors::of(models.embedder),
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
        let (topic, topic_search, topic_held_back) =
            lanes::topic::run(&self.store, &q, &fp.chunk, &fp.model)?;
        let topic_ms = ms(started);

        let (cosine_scorer, ce_scorer) = self.scorers(&fp);
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
                topic_search,
                topic_held_back,
                query_language: language.map(|l| l.code().to_string()),
            },
        })
    }

    /// Who made the lanes' numbers: the embedder's cosine, and the
    /// cross-encoder when one is loaded.
    fn scorers(&self, fp: &Fingerprints) -> (score::ScorerId, Option<score::ScorerId>) {
        let cosine = score::ScorerId {
            kind: score::ScorerKind::Cosine,
            model: fp.model.clone(),
        };
        let cross_encoder = match &self.reranker {
            RerankerSlot::Loaded(r) => Some(score::ScorerId {
                kind: score::ScorerKind::CrossEncoder,
                model: r.model_id().to_string(),
            }),
            _ => None,
        };
        (cosine, cross_encoder)
    }

    /// The query's vector, from the cache when this text was embedded before.
    pub fn embed_query(&mut self, query: &str) -> Result<Vec<f32>> {
        let fp = Fingerprints::of(&self.config.models)?;
        let key = (query.to_string(), fp.model);
        if let Some(v) = self.cache.query_vectors.get(&key) {
            return Ok(v.clone());
        }
        let v = crate::models::Embedder::embed_query(&mut self.embedder, query)?;
        self.cache.query_vectors.insert(key, v.clone());
        Ok(v)
    }

    /// The lanes' coverage, counted again only when the database changed: the
    /// count reads every chunk row (30 ms at 55k chunks) and the match panel
    /// asks on every keystroke. This connection's own writes drop the cache;
    /// another connection's commit (the app's ingest, a watcher, the CLI)
    /// changes `data_version`.
    fn coverage(&mut self, fp: &Fingerprints) -> Result<(Coverage, Coverage)> {
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

    /// The languages the library's passages are in, counted again only when
    /// the database changed, as [`Self::coverage`] is: the count reads every
    /// passage's text (860 ms a question at a million passages on
    /// PostgreSQL), and every question needs it to tell its own language.
    fn languages(&mut self) -> Result<Vec<Language>> {
        let version = self.store.data_version()?;
        if let Some((v, languages)) = &self.cache.languages
            && *v == version
        {
            return Ok(languages.clone());
        }
        let languages = self.store.languages()?;
        self.cache.languages = Some((version, languages.clone()));
        Ok(languages)
    }

    /// The newest entries of the retrieval log.
    pub fn log(&self, limit: usize) -> Result<Vec<lanes::log::LogEntry>> {
        self.store.read_log(limit)
    }
}

fn ms(since: std::time::Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}
