//! `carrel eval DIR`: the lanes against labelled data, with an SQLite FTS5
//! BM25 baseline over the same documents in the same run.
//!
//! DIR is BEIR layout (`corpus.jsonl` with `_id`, `title`, `text`;
//! `queries.jsonl`; `qrels.tsv` with a header), or has a `corpus/` folder of
//! files whose relative paths are the document ids, ingested through the
//! normal extractors. Queries without qrels are noise: a `Ready` hit for one
//! is a leak. `per_query` carries every ranked list, so anyone can recompute
//! the metrics.

mod data;
mod floors;
mod metrics;
mod report;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ingest::Source;
use crate::lanes::CosineFloors;
use crate::models::EmbedderKind;
use crate::score::{Cosine, Floor, RerankLogit, Scale};
use crate::sweep::{Judged, Sweep};
use crate::{Library, LibraryConfig, Progress};

use data::*;
use floors::*;
use metrics::*;
pub use metrics::{KindMetrics, Latency, Metrics, SubjectOrder, TopicLosses, score, score_run};
pub use report::{CardScores, EvalReport, LaneRanking, PassageScores, QueryResult};

/// Ranks scored by every metric.
pub const CUTOFF: usize = 10;

/// Runs the evaluation in a temporary library under `work`.
pub fn run(
    dir: &Path,
    config: LibraryConfig,
    progress: &mut dyn FnMut(&Progress),
) -> Result<EvalReport> {
    let work = &config.dir;
    let corpus = load_corpus(dir, work)?;
    let queries: Vec<QueryLine> = read_jsonl(&dir.join("queries.jsonl"))?;
    let qrels = read_qrels(&dir.join("qrels.tsv"))?;

    let (broken, doc_ids, bm25) = index(&config, &corpus, progress)?;
    // Reopen, so the first query pays what a user's first query pays.
    let mut lib = Library::open(config)?;
    let embedder = lib.embedder();
    let mut tally = Tally {
        embedder,
        sweeps: Floors::of(embedder),
        ..Tally::default()
    };
    let total = queries.len();
    for (n, q) in queries.iter().enumerate() {
        progress(&Progress {
            done: n,
            total,
            current: format!("query {}", q.id),
            ..Progress::default()
        });
        let ranked = tally.rank(&mut lib, n, q, &doc_ids, &bm25)?;
        tally.score(q, ranked, &qrels);
    }
    Ok(tally.report(dir, corpus.sources.len(), broken, total))
}

/// One query's rankings, as corpus ids, best first.
struct Ranked {
    r: crate::lanes::MatchResponse,
    subject_docs: Vec<String>,
    topic_docs: Vec<String>,
    /// The subject lane's eligible cards by cosine alone.
    cosine_docs: Vec<String>,
    /// The topic lane's candidates by their best passage's cosine alone.
    dense_docs: Vec<String>,
    /// The topic lane's candidates, in its order.
    topic_candidates: Vec<PassageScores>,
    /// The subject lane's candidates: corpus id, cosine, logit if reranked.
    subject_candidates: Vec<CardScores>,
    /// The nearest passages' documents and logits, as the foreign lane
    /// would score them.
    foreign_passages: Vec<(String, f32)>,
    bm25_docs: Vec<String>,
}

/// What the queries so far add up to: timings, metric sums, lane states and
/// every ranking.
#[derive(Default)]
struct Tally {
    embed_ms: Vec<f64>,
    subject_ms: Vec<f64>,
    topic_ms: Vec<f64>,
    bm25_ms: Vec<f64>,
    cold_first_query_ms: f64,
    per_query: BTreeMap<String, QueryResult>,
    subject: Metrics,
    cosine: Metrics,
    topic: Metrics,
    dense: Metrics,
    losses: TopicLosses,
    order: SubjectOrder,
    sweeps: Floors,
    base: Metrics,
    subject_states: BTreeMap<String, usize>,
    topic_states: BTreeMap<String, usize>,
    relevant_queries: usize,
    by_kind: BTreeMap<String, KindMetrics>,
    /// The embedder of the library asked, whose floors are in use.
    embedder: EmbedderKind,
}

/// The dataset's ids of the documents at these locations, in order.
fn docs_of<'a>(
    locations: impl Iterator<Item = &'a Vec<crate::lanes::Location>>,
    doc_ids: &HashMap<i64, String>,
) -> Vec<String> {
    locations
        .flatten()
        .filter_map(|l| doc_ids.get(&l.doc).cloned())
        .collect()
}

/// The subject lane's baseline: the cards over its cosine floor, in cosine
/// order.
fn cosine_order(
    candidates: &[crate::lanes::Candidate],
    embedder: EmbedderKind,
    doc_ids: &HashMap<i64, String>,
) -> Vec<String> {
    let floor = CosineFloors::of(embedder).subject;
    let mut eligible: Vec<&crate::lanes::Candidate> = candidates
        .iter()
        .filter(|c| floor.admits(c.cosine))
        .collect();
    eligible.sort_by(|a, b| a.cosine.rank(b.cosine));
    eligible
        .iter()
        .filter_map(|c| doc_ids.get(&c.doc).cloned())
        .collect()
}

/// Every topic candidate's scores and decision, for the floor sweeps.
fn passage_scores(
    candidates: &[crate::lanes::Candidate],
    doc_ids: &HashMap<i64, String>,
) -> Vec<PassageScores> {
    candidates
        .iter()
        .filter_map(|c| {
            Some(PassageScores {
                doc: doc_ids.get(&c.doc)?.clone(),
                cosine: c.cosine,
                keyword_rank: c.keyword_rank,
                decision: c.decision,
            })
        })
        .collect()
}

/// Every subject candidate's cosine and logit, for the floor sweeps.
fn card_scores(
    candidates: &[crate::lanes::Candidate],
    doc_ids: &HashMap<i64, String>,
) -> Vec<CardScores> {
    candidates
        .iter()
        .filter_map(|c| {
            Some(CardScores {
                doc: doc_ids.get(&c.doc)?.clone(),
                cosine: c.cosine,
                rerank: c.rerank,
            })
        })
        .collect()
}

/// The topic lane's baseline: its candidates' best passages by cosine only.
fn dense_order(candidates: &[PassageScores]) -> Vec<String> {
    let mut dense: Vec<&PassageScores> = candidates.iter().collect();
    dense.sort_by(|a, b| a.cosine.rank(b.cosine));
    dense
        .into_iter()
        .map(|p| p.doc.clone())
        .take(CUTOFF)
        .collect()
}

impl Ranked {
    /// What is kept of one query for the per-query report.
    fn into_result(self, noise: bool) -> QueryResult {
        QueryResult {
            subject: LaneRanking {
                state: self.r.subject.state().into(),
                docs: self.subject_docs,
            },
            topic: LaneRanking {
                state: self.r.topic.state().into(),
                docs: self.topic_docs,
            },
            bm25: self.bm25_docs,
            noise,
            subject_candidates: self.subject_candidates,
            topic_candidates: self.topic_candidates,
        }
    }
}

impl Tally {
    /// Runs the lanes and BM25 on the `n`th query, timing all but the first
    /// (its time is the cold start's).
    fn rank(
        &mut self,
        lib: &mut Library,
        n: usize,
        q: &QueryLine,
        doc_ids: &HashMap<i64, String>,
        bm25: &Bm25,
    ) -> Result<Ranked> {
        let started = std::time::Instant::now();
        let r = lib.match_query(&q.text, CUTOFF)?;
        if n == 0 {
            self.cold_first_query_ms = started.elapsed().as_secs_f64() * 1000.0;
        } else {
            self.embed_ms.push(r.explain.embed_ms);
            self.subject_ms.push(r.explain.subject_ms);
            self.topic_ms.push(r.explain.topic_ms);
        }
        let subject_docs = docs_of(r.subject.hits().iter().map(|h| &h.locations), doc_ids);
        let topic_docs = docs_of(r.topic.hits().iter().map(|h| &h.locations), doc_ids);
        let cosine_docs = cosine_order(&r.explain.subject, self.embedder, doc_ids);
        let topic_candidates = passage_scores(&r.explain.topic, doc_ids);
        let subject_candidates = card_scores(&r.explain.subject, doc_ids);
        let dense_docs = dense_order(&topic_candidates);
        let foreign_passages = lib
            .passage_logits(&q.text, crate::foreign::POINTS_ASKED)?
            .into_iter()
            .filter_map(|(d, l)| Some((doc_ids.get(&d)?.clone(), l)))
            .collect();
        let started = std::time::Instant::now();
        let bm25_docs = bm25.search(&q.text)?;
        if n > 0 {
            self.bm25_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        Ok(Ranked {
            r,
            subject_docs,
            topic_docs,
            cosine_docs,
            dense_docs,
            topic_candidates,
            subject_candidates,
            foreign_passages,
            bm25_docs,
        })
    }

    /// Scores one query's rankings against its qrels (a query without any
    /// is noise: any `Ready` hit is a leak) and keeps them.
    fn score(
        &mut self,
        q: &QueryLine,
        ranked: Ranked,
        qrels: &HashMap<String, HashMap<String, f64>>,
    ) {
        let r = &ranked.r;
        *self
            .subject_states
            .entry(r.subject.state().to_string())
            .or_insert(0) += 1;
        *self
            .topic_states
            .entry(r.topic.state().to_string())
            .or_insert(0) += 1;
        let noise = !qrels.contains_key(&q.id);
        let no_qrels = HashMap::new();
        let rel = qrels.get(&q.id).unwrap_or(&no_qrels);
        self.sweeps.judge(
            noise,
            rel,
            &ranked.subject_candidates,
            &ranked.topic_candidates,
            &ranked.foreign_passages,
        );
        if noise {
            self.add_noise(&ranked);
        } else {
            self.add_relevant(q, &ranked, rel);
        }
        self.per_query
            .insert(q.id.clone(), ranked.into_result(noise));
    }

    /// A noise query: each list that admitted anything leaked.
    fn add_noise(&mut self, k: &Ranked) {
        self.subject.noise_leaks += k.r.subject.has_ready_hits() as usize;
        self.cosine.noise_leaks += !k.cosine_docs.is_empty() as usize;
        self.topic.noise_leaks += k.r.topic.has_ready_hits() as usize;
        self.dense.noise_leaks += !k.dense_docs.is_empty() as usize;
        self.base.noise_leaks += !k.bm25_docs.is_empty() as usize;
    }

    /// A query with qrels: every list's metrics, the topic lane's losses,
    /// the subject lane's order, and its kind's metrics.
    fn add_relevant(&mut self, q: &QueryLine, k: &Ranked, rel: &HashMap<String, f64>) {
        let (subject_fired, topic_fired) =
            (k.r.subject.has_ready_hits(), k.r.topic.has_ready_hits());
        self.relevant_queries += 1;
        self.subject.add(&k.subject_docs, rel, subject_fired);
        self.cosine
            .add(&k.cosine_docs, rel, !k.cosine_docs.is_empty());
        self.topic.add(&k.topic_docs, rel, topic_fired);
        self.dense.add(&k.dense_docs, rel, !k.dense_docs.is_empty());
        self.losses.add(
            CosineFloors::of(self.embedder).topic,
            &k.topic_candidates,
            &k.topic_docs,
            rel,
        );
        self.order.add(rel, &k.subject_candidates);
        self.base.add(&k.bm25_docs, rel, !k.bm25_docs.is_empty());
        if let Some(kind) = &q.kind {
            let by = self.by_kind.entry(kind.clone()).or_default();
            by.queries += 1;
            by.subject.add(&k.subject_docs, rel, subject_fired);
            by.topic.add(&k.topic_docs, rel, topic_fired);
        }
    }

    /// The report: metric sums turned into means, latency percentiles.
    fn report(
        self,
        dir: &Path,
        documents: usize,
        broken_documents: usize,
        total: usize,
    ) -> EvalReport {
        let Tally {
            embed_ms,
            subject_ms,
            topic_ms,
            bm25_ms,
            cold_first_query_ms,
            per_query,
            mut subject,
            mut cosine,
            mut topic,
            mut dense,
            losses,
            order,
            sweeps,
            mut base,
            subject_states,
            topic_states,
            relevant_queries,
            mut by_kind,
            embedder,
        } = self;
        for m in [&mut subject, &mut cosine, &mut topic, &mut dense, &mut base] {
            m.average(relevant_queries);
        }
        for k in by_kind.values_mut() {
            k.subject.average(k.queries);
            k.topic.average(k.queries);
        }
        EvalReport {
            embedder: embedder.to_string(),
            dataset: dir.display().to_string(),
            documents,
            broken_documents,
            queries: total,
            relevant_queries,
            noise_queries: total - relevant_queries,
            subject,
            subject_cosine: cosine,
            topic,
            topic_dense: dense,
            topic_losses: losses,
            subject_order: order,
            floors: vec![
                sweeps.subject_cosine,
                sweeps.subject_rerank,
                sweeps.topic,
                sweeps.foreign,
            ],
            bm25: base,
            subject_states,
            topic_states,
            by_kind,
            latency: Latency {
                cold_first_query_ms,
                embed_p50_ms: percentile(&embed_ms, 0.5),
                embed_p95_ms: percentile(&embed_ms, 0.95),
                subject_p50_ms: percentile(&subject_ms, 0.5),
                subject_p95_ms: percentile(&subject_ms, 0.95),
                topic_p50_ms: percentile(&topic_ms, 0.5),
                topic_p95_ms: percentile(&topic_ms, 0.95),
                bm25_p50_ms: percentile(&bm25_ms, 0.5),
                bm25_p95_ms: percentile(&bm25_ms, 0.95),
            },
            per_query,
        }
    }
}

/// The library of a labelled set's documents (its `corpus/`) at `dir`,
/// filled once, when empty; with the corpus folder, which the set's
/// document ids are relative to. The measuring commands share one
/// (`make answers`, `make follow-ups`, `make bench-writer`).
pub fn set_library(set: &Path, dir: &Path, models: Option<PathBuf>) -> Result<(Library, PathBuf)> {
    let models = crate::models::ModelConfig::new(match models {
        Some(dir) => dir,
        None => crate::models::ModelConfig::default_dir()?,
    });
    let corpus = std::path::absolute(set.join("corpus")).map_err(|e| Error::io(set, e))?;
    let mut lib = Library::open(LibraryConfig::new(dir.to_path_buf(), models))?;
    if lib.list()?.is_empty() {
        eprintln!("adding {} (once)", corpus.display());
        let report = lib.add(&[corpus.display().to_string()], &mut |_| {})?;
        eprintln!("added {}, {} failed", report.added, report.failed.len());
    }
    Ok((lib, corpus))
}

/// A fresh temporary folder for an evaluation library.
pub fn scratch_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "carrel-eval-{}-{}",
        std::process::id(),
        crate::store::now()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::{metrics::*, report::*};

    #[test]
    fn a_peer_run_is_scored_like_a_lane_and_noise_answers_count_as_leaks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("queries.jsonl"),
            "{\"_id\": \"1\", \"text\": \"a\"}\n{\"_id\": \"2\", \"text\": \"b\"}\n{\"_id\": \"3\", \"text\": \"noise\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("qrels.tsv"),
            "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n",
        )
        .unwrap();
        let run: HashMap<String, Vec<String>> = [
            ("1".to_string(), vec!["d1".to_string()]),
            ("3".to_string(), vec!["d9".to_string()]),
        ]
        .into();
        let m = score_run(dir.path(), &run).unwrap();
        // Query 1 perfect, query 2 missing from the run (found nothing).
        assert!((m.ndcg_at_10 - 0.5).abs() < 1e-9, "{m:?}");
        assert_eq!((m.p_at_1, m.noise_leaks), (0.5, 1));
        // It fired on one of two, and was right that time.
        assert_eq!((m.fires_on, m.right_when_fired), (0.5, 1.0));
    }

    #[test]
    fn each_lost_document_is_put_down_to_the_first_rule_that_lost_it() {
        use crate::lanes::Decision::*;
        use crate::score::Cosine;
        let c = |d: &str, decision, cos| PassageScores {
            doc: d.to_string(),
            cosine: Cosine::new(cos),
            keyword_rank: None,
            decision,
        };
        let candidates = [
            c("found", Admitted, 0.8),
            c("veto", Vetoed, 0.7),
            c("veto-floor", Vetoed, 0.2),
            c("floor", BelowCosineFloor, 0.3),
            c("late", Admitted, 0.6),
            c("unfamiliar", Unfamiliar, 0.6),
        ];
        let relevant: HashMap<String, f64> = [
            "found",
            "veto",
            "veto-floor",
            "floor",
            "late",
            "pool",
            "unfamiliar",
        ]
        .iter()
        .map(|d| (d.to_string(), 1.0))
        .chain([("judged-irrelevant".to_string(), 0.0)])
        .collect();
        let mut returned = vec!["found".to_string()];
        returned.extend((0..CUTOFF).map(|i| format!("other{i}")));
        returned.push("late".into());
        let mut t = TopicLosses::default();
        t.add(
            crate::lanes::topic::TOPIC_FLOOR,
            &candidates,
            &returned,
            &relevant,
        );
        assert_eq!(
            (
                t.pairs,
                t.found,
                t.outside_pool,
                t.vetoed,
                t.vetoed_below_floor,
                t.below_floor,
                t.unfamiliar,
                t.ranked_out
            ),
            (7, 1, 1, 1, 1, 1, 1, 1),
            "{t:?}"
        );
    }

    #[test]
    fn subject_order_counts_only_scored_cards_and_only_queries_with_a_relevant_one() {
        let rel: HashMap<String, f64> = [("a".to_string(), 1.0)].into();
        let card = |d: &str, cosine: f32, logit: Option<f32>| CardScores {
            doc: d.to_string(),
            cosine: Cosine::new(cosine),
            rerank: logit.map(RerankLogit::new),
        };
        let mut o = SubjectOrder::default();
        // The cross-encoder puts "a" first, cosine puts "x" first.
        o.add(
            &rel,
            &[card("x", 0.9, Some(0.1)), card("a", 0.5, Some(2.0))],
        );
        // Cosine's best card was never scored: among the scored, both agree.
        o.add(
            &rel,
            &[
                card("y", 0.95, None),
                card("a", 0.6, Some(1.0)),
                card("x", 0.4, Some(0.0)),
            ],
        );
        // The relevant card was not scored: the query does not count.
        o.add(&rel, &[card("a", 0.2, None), card("x", 0.5, Some(3.0))]);
        assert_eq!(
            (o.queries, o.cross_encoder_first, o.cosine_first),
            (2, 2, 1),
            "{o:?}"
        );
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        let rel: HashMap<String, f64> = [("a".to_string(), 1.0), ("b".to_string(), 1.0)].into();
        let ranked = vec![
            "x".to_string(),
            "a".to_string(),
            "y".to_string(),
            "b".to_string(),
        ];
        let (ndcg, recall, mrr, p1) = score(&ranked, &rel);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg - dcg / idcg).abs() < 1e-9);
        assert_eq!((recall, mrr, p1), (1.0, 0.5, 0.0));
        assert_eq!(score(&[], &rel), (0.0, 0.0, 0.0, 0.0));
        assert_eq!(score(&ranked[1..], &rel).3, 1.0);
    }
}
