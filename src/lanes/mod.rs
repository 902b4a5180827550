//! The two retrieval lanes. They answer different questions and are never
//! sorted together:
//!
//! - [`subject`]: "is this document what you are asking ABOUT?" Cosine over
//!   cards decides eligibility (and is the number shown); a cross-encoder
//!   orders the eligible cards and has its own admission floor.
//! - [`topic`]: "does this document DISCUSS it?" The best passage per document
//!   by vector search, then a heading veto.
//!
//! [`assemble`] is the one place that turns each lane's run into a
//! [`LaneOutcome`], including the rules for weak fallbacks and for the
//! `below_floor` tail.

pub mod floors;
pub mod log;
pub mod merge;
pub mod outcome;
pub mod subject;
pub mod terms;
pub mod topic;

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::language::Language;
use crate::score::{Cosine, RerankLogit, ScorerId};
use crate::store::Coverage;
pub use crate::store::Location;
pub use floors::CosineFloors;
pub use outcome::{LaneOutcome, LaneState, LaneView};

/// Chunks fetched by KNN before taking the best passage per document; wide
/// enough that a long document's many passages do not crowd out the rest.
pub const TOPIC_CANDIDATES: usize = 100;
/// Cards fetched by KNN for the subject lane; the eligible ones all go to the
/// cross-encoder, which may promote any of them. It is the lane's cost: with
/// carrel-ce-v1 on one thread, 40 cards took 741 ms p50 and 998 ms p95 per
/// query on Cranfield (where long queries make most cards eligible); 20 took
/// about half (333 / 443 ms), Cranfield nDCG within 0.002. From 20 to 10
/// (release, two sessions, pairs alone): Cranfield (1,400 cards, 225
/// queries) 107 → 55 ms p50, P@1 0.160 → 0.164, right-when-fired 0.434 →
/// 0.463; the calibration set (1,159 documents, 404 relevant and 173 noise
/// queries) 82 → 48 ms p50, P@1 0.554 → 0.550 (2 of 404 queries),
/// right-when-fired 0.674 both, noise leaks 1 both; fixtures/labelled
/// unchanged (every relevant card is first by cosine already). 15 cards:
/// 86 and 65 ms p50, P@1 as at 20. From 10 to 6 (2026-12-02, release, two
/// sessions on 2 vCPUs, so 3 pairs each instead of 5; one run each unless
/// said): Cranfield 73–82 → 45–47 ms p50 (two runs, three runs), P@1 37 →
/// 36 of 225, right-when-fired 37/80 → 36/79; CISI 80–89 → 55 ms, P@1 6 →
/// 5 of 76, fired on 12 both; the calibration set 61 → 33 ms, P@1 222 →
/// 223 of 404, right-when-fired 0.674 → 0.683, noise admitted 1 of 173
/// both (its 1%-noise point stays 1.69–2.24, so [`RERANK_FLOOR`] holds);
/// fixtures/labelled unchanged. 8 cards (4 pairs a session) held every P@1
/// but read 56 and 66 ms on Cranfield, no margin under 60; 7 costs what 8
/// does on two sessions (4 + 3 pairs).
///
/// [`RERANK_FLOOR`]: subject::RERANK_FLOOR
pub const SUBJECT_CANDIDATES: usize = 6;
/// The cross-encoder's time budget per query; past it the lane is
/// unavailable (never silently cosine-ordered).
pub const RERANK_BUDGET: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct SubjectHit {
    pub doc: i64,
    pub title: String,
    pub locations: Vec<Location>,
    pub cosine: Cosine,
    pub rerank: Option<RerankLogit>,
    /// The scorer that decided this hit's place: the cross-encoder for
    /// admitted hits, cosine for weak ones.
    #[specta(type = String)]
    pub scorer: ScorerId,
    /// True only when the order came from a calibrated cross-encoder score.
    pub calibrated: bool,
    /// The card's `what:` line.
    pub why: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct TopicHit {
    pub doc: i64,
    pub title: String,
    pub locations: Vec<Location>,
    pub chunk: i64,
    pub heading_path: Vec<String>,
    pub passage: String,
    pub page: Option<u32>,
    pub cosine: Cosine,
    #[specta(type = String)]
    pub scorer: ScorerId,
}

/// What [`assemble`] needs to know of a lane's hit: the document it names,
/// so that the `below_floor` tail never repeats a hit.
pub trait Hit {
    fn doc(&self) -> i64;
}

impl Hit for SubjectHit {
    fn doc(&self) -> i64 {
        self.doc
    }
}

impl Hit for TopicHit {
    fn doc(&self) -> i64 {
        self.doc
    }
}

/// Why a candidate was or was not admitted. The debug pane and the log show
/// these, from the same functions retrieval runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Admitted,
    /// Under the cosine gate: not even a weak candidate.
    BelowGate,
    /// Under the lane's cosine floor: weak fallback at most.
    BelowCosineFloor,
    /// Eligible by cosine, refused by the cross-encoder's floor.
    BelowRerankFloor,
    /// Over both floors, but the cross-encoder and cosine put different
    /// cards first and the cross-encoder is not sure of its own
    /// (`subject::RERANK_SURE`), so the subject lane does not fire on this
    /// query.
    Disputed,
    /// The passage's headings and title do not mention the query.
    Vetoed,
    /// Over the topic floor and not vetoed, but the library uses none of at
    /// least half the query's words, so the topic lane does not fire on this
    /// query ([`topic::unfamiliar`]).
    Unfamiliar,
    /// Eligible, but the cross-encoder could not run: suppressed.
    RerankerUnavailable,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Admitted => "admitted",
            Decision::BelowGate => "below_gate",
            Decision::BelowCosineFloor => "below_cosine_floor",
            Decision::BelowRerankFloor => "below_rerank_floor",
            Decision::Disputed => "disputed",
            Decision::Vetoed => "vetoed",
            Decision::Unfamiliar => "unfamiliar",
            Decision::RerankerUnavailable => "reranker_unavailable",
        }
    }
}

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Candidate {
    pub doc: i64,
    pub title: String,
    pub cosine: Cosine,
    pub rerank: Option<RerankLogit>,
    pub heading_path: Option<Vec<String>>,
    /// The topic lane's rank of this document by keyword (BM25) match, when
    /// the keyword index found it; its order fuses this with the cosine rank.
    pub keyword_rank: Option<u32>,
    pub decision: Decision,
    /// Why a check could not judge this candidate. In the topic lane, the
    /// lexical checks (the heading veto and the hold-back) on a passage in
    /// another language ("cross-lingual, en → ru"): they then neither vetoed
    /// nor held it back, and its decision is its floor's alone. In the
    /// subject lane, the cross-encoder on a card in a language it does not
    /// read ("carrel-ce-v2 reads English; this card is Russian (ru)"): the
    /// card is unavailable, never ranked by cosine instead. None where
    /// every check judged it.
    pub unjudged: Option<String>,
}

/// Query embeddings and cross-encoder scores, so that typing the same query
/// again (as a match panel does) costs no model call. Keys carry the
/// fingerprint or reranker id; the library drops the whole cache on any
/// change to its contents.
#[derive(Debug, Default)]
pub struct Cache {
    pub query_vectors: HashMap<(String, String), Vec<f32>>,
    /// (query, content hash, reranker id) → logit.
    pub rerank: HashMap<(String, String, String), RerankLogit>,
    /// The lanes' coverage (see [`Coverage`]), keyed by the database's
    /// `data_version` and the fingerprints it was counted for.
    pub coverage: Option<((i64, String), (Coverage, Coverage))>,
    /// The languages the library's passages are in, most text first, keyed
    /// by the database's `data_version`.
    pub languages: Option<(i64, Vec<Language>)>,
}

/// A query as both lanes see it: its text, its embedding, its language
/// (none when it does not tell), the floors of the embedder that made its
/// vector, and how many hits to return per lane.
#[derive(Debug, Clone, Copy)]
pub struct LaneQuery<'a> {
    pub text: &'a str,
    pub vector: &'a [f32],
    pub language: Option<Language>,
    pub floors: &'a CosineFloors,
    pub top_k: usize,
}

/// Why a lane produced no list at all.
#[derive(Debug, Clone)]
pub enum Unready {
    Unavailable(String),
    Failed(String),
}

/// One lane's raw run, before [`assemble`].
#[derive(Debug, Clone)]
pub struct LaneRun<H> {
    pub admitted: Result<Vec<H>, Unready>,
    pub weak: Vec<H>,
    pub candidates: Vec<Candidate>,
}

impl<H> LaneRun<H> {
    pub fn has_admitted(&self) -> bool {
        matches!(&self.admitted, Ok(h) if !h.is_empty())
    }

    pub fn unready(u: Unready) -> Self {
        LaneRun {
            admitted: Err(u),
            weak: Vec::new(),
            candidates: Vec::new(),
        }
    }
}

/// Turns both lanes' runs into outcomes. Sub-floor hits count as a lane's
/// hits only as `Weak`, and only when neither lane has an admitted hit;
/// otherwise every lane that looked carries them as its `below_floor` tail
/// (those not already among its hits), shown apart and never counted as a
/// hit. A lane whose index covers only part of the library is never `Ready`:
/// it is `Weak` with the reason, or `Unavailable` when it covers none of it.
pub fn assemble(
    subject: &LaneRun<SubjectHit>,
    topic: &LaneRun<TopicHit>,
    coverage: (Coverage, Coverage),
) -> (LaneOutcome<SubjectHit>, LaneOutcome<TopicHit>) {
    let any_real = subject.has_admitted() || topic.has_admitted();
    (
        one(subject, any_real, coverage.0),
        one(topic, any_real, coverage.1),
    )
}

fn one<H: Clone + Hit>(run: &LaneRun<H>, any_real: bool, coverage: Coverage) -> LaneOutcome<H> {
    // The lane's weak hits (best first, at most top_k) that `hits` does not
    // already show.
    let tail = |hits: &[H]| -> Vec<H> {
        run.weak
            .iter()
            .filter(|w| !hits.iter().any(|h| h.doc() == w.doc()))
            .cloned()
            .collect()
    };
    let outcome = match &run.admitted {
        Err(Unready::Unavailable(reason)) => LaneOutcome::Unavailable {
            reason: reason.clone(),
        },
        Err(Unready::Failed(reason)) => LaneOutcome::Failed(reason.clone()),
        Ok(_) if !any_real && !run.weak.is_empty() => LaneOutcome::Weak {
            hits: run.weak.clone(),
            below_floor: Vec::new(),
            reason: None,
        },
        Ok(hits) => LaneOutcome::Ready {
            hits: hits.clone(),
            below_floor: tail(hits),
        },
    };
    let Some(reason) = coverage.shortfall() else {
        return outcome;
    };
    match outcome {
        _ if coverage.stale >= coverage.indexed => LaneOutcome::Unavailable { reason },
        LaneOutcome::Ready { hits, below_floor }
        | LaneOutcome::Weak {
            hits, below_floor, ..
        } => LaneOutcome::Weak {
            hits,
            below_floor,
            reason: Some(reason),
        },
        other => other,
    }
}

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Explain {
    pub subject: Vec<Candidate>,
    pub topic: Vec<Candidate>,
    /// True when no card reached the cosine floor, so the cross-encoder was
    /// not run.
    pub reranker_skipped_by_gate: bool,
    pub vetoed: usize,
    /// The scorer behind every cosine shown.
    #[specta(type = String)]
    pub cosine_scorer: ScorerId,
    /// The cross-encoder behind every rerank score shown, if one is loaded.
    #[specta(type = Option<String>)]
    pub rerank_scorer: Option<ScorerId>,
    /// Whether the subject lane's rerank floor was calibrated on that
    /// cross-encoder (false for any other model).
    pub rerank_calibrated: bool,
    pub embed_ms: f64,
    pub subject_ms: f64,
    pub topic_ms: f64,
    /// How the topic lane fetched its nearest chunks (exact, or sign bits
    /// then exact cosines); the cosines shown are exact either way.
    pub topic_search: crate::store::signs::Search,
    /// Why the topic lane held back on this query, when it did: the query's
    /// words no passage uses ([`topic::held_back`]).
    pub topic_held_back: Option<String>,
    /// The query's language ("en"), which the lexical checks compare each
    /// passage's with; none when the query does not tell.
    pub query_language: Option<String>,
}

/// The answer to one query: two lanes, never merged.
#[derive(Debug, Clone)]
pub struct MatchResponse {
    pub query: String,
    pub subject: LaneOutcome<SubjectHit>,
    pub topic: LaneOutcome<TopicHit>,
    pub explain: Explain,
}

/// [`MatchResponse`] on the wire, the one shape for the app and `carrel
/// match --json` (MCP `search` gives several libraries' lanes, attributed:
/// [`merge::SharedLane`]): each lane as `{state, reason, hits,
/// below_floor}`, side by side, the count the heading veto dropped, and,
/// when asked for, the explanation with every candidate.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct MatchView {
    pub query: String,
    pub subject: LaneView<SubjectHit>,
    pub topic: LaneView<TopicHit>,
    /// Topic candidates dropped by the heading veto: a reason for an empty
    /// topic lane that the hits alone would hide.
    pub topic_vetoed: usize,
    /// Why the topic lane held back on this query, when it did: a reason
    /// for an empty topic lane, and for a tail over its floor.
    pub topic_held_back: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub explain: Option<Explain>,
}

/// Whether a [`MatchView`] carries the [`Explain`] (every candidate, scorer
/// and timing), which the debug pane and `--explain` want and an agent's
/// context does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Hits,
    Explain,
}

impl MatchResponse {
    pub fn view(&self, detail: Detail) -> MatchView {
        MatchView {
            query: self.query.clone(),
            subject: self.subject.view(),
            topic: self.topic.view(),
            topic_vetoed: self.explain.vetoed,
            topic_held_back: self.explain.topic_held_back.clone(),
            explain: (detail == Detail::Explain).then(|| self.explain.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::ScorerKind;

    fn hit(doc: i64) -> TopicHit {
        TopicHit {
            doc,
            title: String::new(),
            locations: Vec::new(),
            chunk: 0,
            heading_path: Vec::new(),
            passage: String::new(),
            page: None,
            cosine: Cosine::new(0.1),
            scorer: ScorerId {
                kind: ScorerKind::Cosine,
                model: "m".into(),
            },
        }
    }

    const FULL: (Coverage, Coverage) = (
        Coverage {
            indexed: 10,
            stale: 0,
        },
        Coverage {
            indexed: 10,
            stale: 0,
        },
    );

    fn run<H>(admitted: Result<Vec<H>, Unready>, weak: Vec<H>) -> LaneRun<H> {
        LaneRun {
            admitted,
            weak,
            candidates: Vec::new(),
        }
    }

    fn subject_hit(doc: i64) -> SubjectHit {
        SubjectHit {
            doc,
            title: String::new(),
            locations: Vec::new(),
            cosine: Cosine::new(0.1),
            rerank: None,
            scorer: ScorerId {
                kind: ScorerKind::Cosine,
                model: "m".into(),
            },
            calibrated: false,
            why: String::new(),
        }
    }

    fn docs<H: Hit>(hits: &[H]) -> Vec<i64> {
        hits.iter().map(Hit::doc).collect()
    }

    /// Sub-floor hits are a lane's hits (`weak`) only when neither lane has
    /// an admitted one; then they are not repeated as its tail.
    #[test]
    fn weak_hits_show_only_when_no_lane_has_real_ones() {
        let subject: LaneRun<SubjectHit> = run(Ok(vec![]), vec![]);
        let (s, t) = assemble(&subject, &run(Ok(vec![]), vec![hit(1)]), FULL);
        assert_eq!((s.state(), t.state()), ("ready", "weak"));
        assert!(s.hits().is_empty());
        assert_eq!(docs(t.hits()), [1]);
        assert!(t.below_floor().is_empty(), "weak hits are not shown twice");

        let (_, t) = assemble(&subject, &run(Ok(vec![hit(2)]), vec![hit(1)]), FULL);
        assert_eq!(t.state(), "ready");
        assert_eq!(docs(t.hits()), [2]);
    }

    /// The tail users asked to see: a lane with admitted hits also says what
    /// it found under its floor, best first, apart from its hits.
    #[test]
    fn a_ready_lane_shows_its_sub_floor_tail_apart_from_its_hits() {
        let subject = run(
            Ok(vec![subject_hit(7)]),
            vec![subject_hit(8), subject_hit(9)],
        );
        let topic = run(Ok(vec![hit(2)]), vec![hit(3), hit(2), hit(1)]);
        let (s, t) = assemble(&subject, &topic, FULL);
        assert_eq!((s.state(), t.state()), ("ready", "ready"));
        assert_eq!(docs(s.hits()), [7]);
        assert_eq!(docs(s.below_floor()), [8, 9]);
        assert_eq!(docs(t.hits()), [2]);
        assert_eq!(docs(t.below_floor()), [3, 1], "a hit is never in the tail");

        let view = t.view();
        assert_eq!(docs(&view.below_floor), [3, 1]);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["hits"].as_array().unwrap().len(), 1);
        assert_eq!(json["below_floor"].as_array().unwrap().len(), 2);

        // A lane with nothing admitted, beside one with real hits, keeps its
        // sub-floor candidates as a tail, not as hits.
        let (s, _) = assemble(&run(Ok(vec![]), vec![subject_hit(8)]), &topic, FULL);
        assert_eq!(s.state(), "ready");
        assert!(s.hits().is_empty());
        assert_eq!(docs(s.below_floor()), [8]);
    }

    /// Eval counts a noise query's leaks with `has_ready_hits`: a tail must
    /// never turn into one, whichever lane it hangs under.
    #[test]
    fn a_noise_querys_tail_never_counts_as_a_hit() {
        // Both lanes empty above their floors: the weak fallback, no leak.
        let (s, t) = assemble(
            &run(Ok(vec![]), vec![subject_hit(8)]),
            &run(Ok(vec![]), vec![hit(1)]),
            FULL,
        );
        assert!(!s.has_ready_hits() && !t.has_ready_hits());
        // The subject lane leaked; the topic lane's tail is still no hit.
        let (s, t) = assemble(
            &run(Ok(vec![subject_hit(7)]), vec![]),
            &run(Ok(vec![]), vec![hit(1), hit(2)]),
            FULL,
        );
        assert!(s.has_ready_hits());
        assert!(!t.has_ready_hits(), "a tail is not a leak");
        assert!(t.hits().is_empty());
        assert_eq!(docs(t.below_floor()), [1, 2]);
    }

    #[test]
    fn an_unavailable_lane_says_so_and_keeps_the_other_real() {
        let subject: LaneRun<SubjectHit> =
            LaneRun::unready(Unready::Unavailable("no cross-encoder".into()));
        let (s, t) = assemble(&subject, &run(Ok(vec![]), vec![hit(1)]), FULL);
        assert_eq!(s.state(), "unavailable");
        assert_eq!(s.reason(), Some("no cross-encoder"));
        assert_eq!(t.state(), "weak", "an unavailable lane is not a real hit");
    }

    /// A lane that did not run judged nothing, so it has no tail either.
    #[test]
    fn a_lane_that_did_not_run_has_no_tail() {
        let subject = run(Ok(vec![subject_hit(7)]), vec![]);
        for unready in [
            Unready::Unavailable("no index".into()),
            Unready::Failed("disk".into()),
        ] {
            let (_, t) = assemble(&subject, &run(Err(unready), vec![hit(1)]), FULL);
            assert!(t.below_floor().is_empty(), "{}", t.state());
            assert!(t.view().below_floor.is_empty());
        }
    }

    /// Regression: after a model change, stale vectors dropped out of the
    /// KNN and the lanes answered `ready` with nothing.
    #[test]
    fn a_lane_that_sees_part_of_the_library_is_never_ready() {
        let subject: LaneRun<SubjectHit> = run(Ok(vec![]), vec![]);
        let part = Coverage {
            indexed: 1400,
            stale: 120,
        };
        let (s, t) = assemble(&subject, &run(Ok(vec![hit(2)]), vec![hit(3)]), (part, part));
        assert_eq!((s.state(), t.state()), ("weak", "weak"));
        assert_eq!(t.hits()[0].doc, 2, "what it found is still shown");
        assert_eq!(docs(t.below_floor()), [3], "and so is its tail");
        assert!(
            s.reason()
                .unwrap()
                .starts_with("re-embedding 120 of 1400 documents"),
            "{:?}",
            s.reason()
        );
        let none = Coverage {
            indexed: 1400,
            stale: 1400,
        };
        let (s, _) = assemble(&subject, &run(Ok(vec![]), vec![]), (none, part));
        assert_eq!(s.state(), "unavailable");
    }
}
