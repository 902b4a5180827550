//! The metrics every ranked list is scored by (nDCG@10, Recall@10, MRR@10,
//! P@1, how often a lane fires and is right), where the topic lane lost
//! relevant documents, and which scorer put the subject lane's relevant
//! card first.

use super::*;

/// Both lanes' figures over the relevant queries of one kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindMetrics {
    pub queries: usize,
    pub subject: Metrics,
    pub topic: Metrics,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    pub ndcg_at_10: f64,
    pub recall_at_10: f64,
    pub mrr_at_10: f64,
    /// Share of queries with qrels whose first hit is relevant.
    pub p_at_1: f64,
    /// Noise queries (no qrels) that got a `Ready` hit.
    pub noise_leaks: usize,
    /// Share of queries with qrels on which the system fired: a lane `Ready`
    /// with hits (its weak fallback does not count), a baseline any hit.
    pub fires_on: f64,
    /// Of the queries it fired on, the share whose first hit is relevant:
    /// how far a hit it stands by can be trusted.
    pub right_when_fired: f64,
    #[serde(skip)]
    fired: usize,
}

impl Metrics {
    /// Adds one query's ranking against its relevant documents; `fired`
    /// says whether the system stood by it (see [`Metrics::fires_on`]).
    pub(super) fn add(&mut self, ranked: &[String], relevant: &HashMap<String, f64>, fired: bool) {
        let (ndcg, recall, mrr, p1) = score(ranked, relevant);
        self.ndcg_at_10 += ndcg;
        self.recall_at_10 += recall;
        self.mrr_at_10 += mrr;
        self.p_at_1 += p1;
        if fired {
            self.fired += 1;
            self.right_when_fired += p1;
        }
    }

    /// Turns the sums into means over `queries` queries with qrels.
    pub(super) fn average(&mut self, queries: usize) {
        let n = queries.max(1) as f64;
        self.ndcg_at_10 /= n;
        self.recall_at_10 /= n;
        self.mrr_at_10 /= n;
        self.p_at_1 /= n;
        self.fires_on = self.fired as f64 / n;
        self.right_when_fired /= self.fired.max(1) as f64;
    }
}

/// Among the cards the cross-encoder scored, which order puts a relevant
/// card first more often: the cross-encoder's or cosine's. Counted over the
/// relevant queries with at least one relevant card among the scored ones,
/// so it judges the model's order, not the floors.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SubjectOrder {
    pub queries: usize,
    pub cross_encoder_first: usize,
    pub cosine_first: usize,
}

impl SubjectOrder {
    pub(super) fn add(&mut self, relevant: &HashMap<String, f64>, subject: &[CardScores]) {
        let scored = CardScores::scored(subject);
        let is_relevant = |d: &String| relevant.get(d).is_some_and(|g| *g > 0.0);
        if !scored.iter().any(|(d, _, _)| is_relevant(d)) {
            return;
        }
        // Each order on its own scale, never one number across both.
        let cross_encoder = scored.iter().min_by(|a, b| a.2.rank(b.2));
        let cosine = scored.iter().min_by(|a, b| a.1.rank(b.1));
        self.queries += 1;
        self.cross_encoder_first += cross_encoder.is_some_and(|(d, _, _)| is_relevant(d)) as usize;
        self.cosine_first += cosine.is_some_and(|(d, _, _)| is_relevant(d)) as usize;
    }
}

/// Where the topic lane lost relevant documents: every (query, relevant
/// document) pair, by the first rule that kept the document out of the
/// lane's first [`CUTOFF`] hits.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopicLosses {
    /// Relevant (query, document) pairs.
    pub pairs: usize,
    /// Returned in the first [`CUTOFF`].
    pub found: usize,
    /// None of the document's passages was among the candidates (the
    /// nearest vectors and the best keyword matches).
    pub outside_pool: usize,
    /// Vetoed, though its best passage was at or over the floor: the veto
    /// alone removed it.
    pub vetoed: usize,
    /// Vetoed, and under the floor as well.
    pub vetoed_below_floor: usize,
    /// Not vetoed; its best passage was under the floor that applied: the
    /// tail floor when the lane fired, the lane's floor when it did not.
    pub below_floor: usize,
    /// Over the floor and not vetoed, but held back: the library uses none
    /// of half the query's words ([`crate::lanes::topic::unfamiliar`]).
    pub unfamiliar: usize,
    /// Admitted, but ranked past [`CUTOFF`].
    pub ranked_out: usize,
}

impl TopicLosses {
    /// Adds one query's pairs, judged from the lane's candidates and the
    /// documents it returned.
    pub(super) fn add(
        &mut self,
        floor: Floor<Cosine>,
        candidates: &[PassageScores],
        returned: &[String],
        relevant: &HashMap<String, f64>,
    ) {
        use crate::lanes::Decision;
        for (doc, _) in relevant.iter().filter(|(_, g)| **g > 0.0) {
            self.pairs += 1;
            if returned.iter().take(CUTOFF).any(|d| d == doc) {
                self.found += 1;
                continue;
            }
            match candidates.iter().find(|p| &p.doc == doc) {
                None => self.outside_pool += 1,
                Some(p) => match p.decision {
                    Decision::Vetoed if floor.admits(p.cosine) => self.vetoed += 1,
                    Decision::Vetoed => self.vetoed_below_floor += 1,
                    Decision::BelowCosineFloor => self.below_floor += 1,
                    Decision::Unfamiliar => self.unfamiliar += 1,
                    _ => self.ranked_out += 1,
                },
            }
        }
    }
}

/// Scores another system's ranking (query id → doc ids, best first) on a
/// BEIR-layout dataset with the metrics `carrel eval` uses, so a peer's
/// figures are computed by the same code as ours (`make bench-peer`).
/// A query missing from `run` counts as found nothing.
pub fn score_run(dir: &Path, run: &HashMap<String, Vec<String>>) -> Result<Metrics> {
    let queries: Vec<QueryLine> = read_jsonl(&dir.join("queries.jsonl"))?;
    let qrels = read_qrels(&dir.join("qrels.tsv"))?;
    let mut m = Metrics::default();
    let mut relevant_queries = 0;
    for q in &queries {
        let ranked = run.get(&q.id).map(Vec::as_slice).unwrap_or(&[]);
        match qrels.get(&q.id) {
            Some(rel) => {
                relevant_queries += 1;
                m.add(ranked, rel, !ranked.is_empty());
            }
            None => m.noise_leaks += !ranked.is_empty() as usize,
        }
    }
    m.average(relevant_queries);
    Ok(m)
}

/// Query latency in milliseconds over every query of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// The first query on a freshly opened library: model load included.
    pub cold_first_query_ms: f64,
    pub embed_p50_ms: f64,
    pub embed_p95_ms: f64,
    pub subject_p50_ms: f64,
    pub subject_p95_ms: f64,
    pub topic_p50_ms: f64,
    pub topic_p95_ms: f64,
    /// FTS5 BM25 over the same documents, same queries.
    pub bm25_p50_ms: f64,
    pub bm25_p95_ms: f64,
}

pub(super) fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Scores one ranked list: (nDCG@10, Recall@10, MRR@10).
/// nDCG@10, Recall@10, MRR@10 and P@1 of one ranking.
pub fn score(ranked: &[String], relevant: &HashMap<String, f64>) -> (f64, f64, f64, f64) {
    let top = &ranked[..ranked.len().min(CUTOFF)];
    let dcg: f64 = top
        .iter()
        .enumerate()
        .map(|(i, d)| {
            relevant
                .get(d)
                .map(|g| (2f64.powf(*g) - 1.0) / ((i + 2) as f64).log2())
                .unwrap_or(0.0)
        })
        .sum();
    let mut ideal: Vec<f64> = relevant.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(CUTOFF)
        .enumerate()
        .map(|(i, g)| (2f64.powf(*g) - 1.0) / ((i + 2) as f64).log2())
        .sum();
    let found = top.iter().filter(|d| relevant.contains_key(*d)).count();
    let mrr = top
        .iter()
        .position(|d| relevant.contains_key(d))
        .map(|p| 1.0 / (p + 1) as f64)
        .unwrap_or(0.0);
    (
        if idcg > 0.0 { dcg / idcg } else { 0.0 },
        found as f64 / relevant.len().max(1) as f64,
        mrr,
        if mrr == 1.0 { 1.0 } else { 0.0 },
    )
}
