//! What `carrel eval` reports: the report and each query's ranked lists
//! and candidates, so anyone can recompute the metrics.

use super::*;

#[derive(Debug, Clone, Serialize)]
pub struct LaneRanking {
    pub state: String,
    pub docs: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub subject: LaneRanking,
    pub topic: LaneRanking,
    pub bm25: Vec<String>,
    pub noise: bool,
    /// Every card the subject lane looked at, in its cosine order, with the
    /// cross-encoder's logit where it scored the card: what any floor or
    /// margin on either scale can be recomputed from.
    pub subject_candidates: Vec<CardScores>,
    /// Every document the topic lane looked at, in its candidate order: its
    /// best passage's cosine and the lane's decision on it.
    pub topic_candidates: Vec<PassageScores>,
}

/// One document the topic lane looked at for a query: its corpus id, its
/// best passage's cosine, and the lane's decision.
#[derive(Debug, Clone, Serialize)]
pub struct PassageScores {
    pub doc: String,
    pub cosine: Cosine,
    pub keyword_rank: Option<u32>,
    pub decision: crate::lanes::Decision,
}

/// One card the subject lane looked at for a query, on both its scales: its
/// document's corpus id, its cosine, and the cross-encoder's logit if the
/// card was scored.
#[derive(Debug, Clone, Serialize)]
pub struct CardScores {
    pub doc: String,
    pub cosine: Cosine,
    pub rerank: Option<RerankLogit>,
}

impl CardScores {
    /// The cards the cross-encoder scored, in their order, on both scales.
    pub(super) fn scored(cards: &[CardScores]) -> Vec<(&String, Cosine, RerankLogit)> {
        cards
            .iter()
            .filter_map(|c| c.rerank.map(|l| (&c.doc, c.cosine, l)))
            .collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub dataset: String,
    /// The embedder the set's library was made with, whose floors judged it.
    pub embedder: String,
    pub documents: usize,
    /// Documents that could not be indexed (listed broken, never retrievable).
    pub broken_documents: usize,
    pub queries: usize,
    pub relevant_queries: usize,
    pub noise_queries: usize,
    pub subject: Metrics,
    /// The baseline the cross-encoder must beat: the subject lane's eligible
    /// cards (cosine at or over its floor) ordered by cosine alone.
    pub subject_cosine: Metrics,
    pub topic: Metrics,
    /// The baseline the topic lane's rules must not lose to: each
    /// candidate document's best passage by cosine, no veto, no floor.
    pub topic_dense: Metrics,
    /// Where the topic lane lost relevant documents.
    pub topic_losses: TopicLosses,
    /// The cross-encoder's order against cosine's on the cards it scored.
    pub subject_order: SubjectOrder,
    /// Each floor's population on this set: the subject lane's cosine
    /// eligibility, its rerank floor, and the topic floor.
    pub floors: Vec<Sweep>,
    pub bm25: Metrics,
    /// Subject-lane states over all queries (ready / weak / unavailable / failed).
    pub subject_states: BTreeMap<String, usize>,
    pub topic_states: BTreeMap<String, usize>,
    /// Both lanes per kind of relevant query, where the set names kinds.
    pub by_kind: BTreeMap<String, KindMetrics>,
    pub latency: Latency,
    pub per_query: BTreeMap<String, QueryResult>,
}
