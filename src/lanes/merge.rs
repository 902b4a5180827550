//! One lane over several libraries. Each library runs its own lanes
//! ([`super::assemble`] per library); this module is the one rule for
//! putting their hits in one list: hits are ordered together only when the
//! scorer that placed them is the same ([`ScorerId`]: the same embedder, or
//! the same cross-encoder by fingerprint) and they stand the same way (an
//! admitted hit, a weak one, or a sub-floor tail entry). Anything else stays
//! a separate [`LaneGroup`], shown apart with its own scorer. The two lanes
//! are still never sorted together: a [`SharedLane`] holds one lane's hits.

use serde::{Deserialize, Serialize};

use super::{Hit, LaneOutcome, LaneState, SubjectHit, TopicHit};
use crate::kb::Kb;
use crate::score::{ScorerId, ScorerKind};

/// A hit with the library it came from and who keeps that library.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Attributed<H> {
    pub kb: Kb,
    pub owner: Option<String>,
    #[serde(flatten)]
    pub hit: H,
}

/// What [`LaneGroup`] needs of a hit: the scorer that placed it, and its
/// place on that scorer's own scale. The number is compared only with hits
/// of the same [`ScorerId`], which [`LaneGroup::merge`] checks.
pub trait Placed: Hit {
    fn scorer(&self) -> &ScorerId;
    fn place(&self) -> f32;
}

impl Placed for SubjectHit {
    fn scorer(&self) -> &ScorerId {
        &self.scorer
    }

    /// The cross-encoder's logit for a hit it placed, the cosine for one
    /// that cosine placed (a weak or sub-floor card).
    fn place(&self) -> f32 {
        match (self.scorer.kind, self.rerank) {
            (ScorerKind::CrossEncoder, Some(logit)) => logit.get(),
            _ => self.cosine.get(),
        }
    }
}

impl Placed for TopicHit {
    fn scorer(&self) -> &ScorerId {
        &self.scorer
    }

    fn place(&self) -> f32 {
        self.cosine.get()
    }
}

/// How the hits of a group stand in their libraries' lanes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, specta::Type,
)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Admitted by the lane: an answer.
    Hit,
    /// A weak hit: to take with care (the library's lane says why).
    Weak,
    /// Under the lane's floor: shown for context, never an answer.
    BelowFloor,
}

impl Standing {
    /// How people read it.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Hit => "hits",
            Standing::Weak => "weak hits",
            Standing::BelowFloor => "below the floor",
        }
    }
}

/// Hits placed by one scorer and standing one way, best first, from one or
/// more libraries.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct LaneGroup<H> {
    #[specta(type = String)]
    pub scorer: ScorerId,
    pub standing: Standing,
    pub hits: Vec<Attributed<H>>,
}

impl<H: Placed> LaneGroup<H> {
    /// One list from two, best first (ties keep `self`'s hits first), when
    /// the same scorer placed both and they stand the same way; otherwise
    /// both, untouched, to be shown apart.
    #[allow(clippy::result_large_err)]
    pub fn merge(mut self, other: LaneGroup<H>) -> Result<LaneGroup<H>, (Self, Self)> {
        if self.scorer != other.scorer || self.standing != other.standing {
            return Err((self, other));
        }
        self.hits.extend(other.hits);
        self.hits
            .sort_by(|a, b| b.hit.place().total_cmp(&a.hit.place()));
        Ok(self)
    }
}

/// One library's lane as it stood, for the shared view.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct LibraryLane {
    pub kb: Kb,
    pub owner: Option<String>,
    pub state: LaneState,
    pub reason: Option<String>,
}

/// One lane over several libraries: how the lane stood in each, and its hits
/// in groups that were each ordered by one scorer (admitted hits first,
/// then weak ones, then the sub-floor tails), at most `top_k` per group.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct SharedLane<H> {
    pub libraries: Vec<LibraryLane>,
    pub groups: Vec<LaneGroup<H>>,
}

impl<H: Placed + Clone> SharedLane<H> {
    /// The lane of each library, in the order given.
    pub fn gather<'a>(
        lanes: impl IntoIterator<Item = (&'a Kb, &'a Option<String>, &'a LaneOutcome<H>)>,
        top_k: usize,
    ) -> SharedLane<H>
    where
        H: 'a,
    {
        let mut libraries = Vec::new();
        let mut groups: Vec<LaneGroup<H>> = Vec::new();
        for (kb, owner, outcome) in lanes {
            libraries.push(LibraryLane {
                kb: kb.clone(),
                owner: owner.clone(),
                state: outcome.lane_state(),
                reason: outcome.reason().map(str::to_string),
            });
            let standing = match outcome {
                LaneOutcome::Weak { .. } => Standing::Weak,
                _ => Standing::Hit,
            };
            let lists = [
                (standing, outcome.hits()),
                (Standing::BelowFloor, outcome.below_floor()),
            ];
            for (standing, hits) in lists {
                for hit in hits {
                    let one = LaneGroup {
                        scorer: hit.scorer().clone(),
                        standing,
                        hits: vec![Attributed {
                            kb: kb.clone(),
                            owner: owner.clone(),
                            hit: hit.clone(),
                        }],
                    };
                    place(&mut groups, one);
                }
            }
        }
        let mut lane = SharedLane { libraries, groups };
        lane.settle(top_k);
        lane
    }

    /// Takes in the lane another hub answered for its libraries: their
    /// states, and each hit into the group of its scorer and standing, or
    /// apart when no group here has them.
    pub fn absorb(&mut self, other: SharedLane<H>, top_k: usize) {
        self.libraries.extend(other.libraries);
        for group in other.groups {
            for hit in group.hits {
                let one = LaneGroup {
                    scorer: group.scorer.clone(),
                    standing: group.standing,
                    hits: vec![hit],
                };
                place(&mut self.groups, one);
            }
        }
        self.settle(top_k);
    }

    /// Admitted hits first, then weak ones, then the tails; `top_k` each.
    fn settle(&mut self, top_k: usize) {
        self.groups.sort_by_key(|g| g.standing);
        for g in &mut self.groups {
            g.hits.truncate(top_k);
        }
    }

    /// Every hit that is an answer (admitted or weak), group by group.
    pub fn answers(&self) -> impl Iterator<Item = &Attributed<H>> {
        self.groups
            .iter()
            .filter(|g| g.standing != Standing::BelowFloor)
            .flat_map(|g| &g.hits)
    }
}

/// Milliseconds since `started`, to the hundredth: a route's time. Kept to
/// two decimals so that it reads back exactly from a kept chat turn's JSON
/// (a full-precision f64 can come back one unit in the last place off).
pub fn route_ms(started: std::time::Instant) -> f64 {
    hundredths(started.elapsed().as_secs_f64() * 1000.0)
}

fn hundredths(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}

/// How one library took part in a search or an answer: the route, which
/// is the record of every wall crossed.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct RouteStep {
    pub kb: Option<Kb>,
    pub owner: Option<String>,
    #[serde(flatten)]
    pub state: RouteState,
    /// From asking to its answer (or failure).
    pub ms: f64,
}

impl RouteStep {
    /// The library's name as a sentence gives it: `` `kb` ``, or what it
    /// is when its name could not be read.
    pub fn name(&self) -> String {
        match &self.kb {
            Some(kb) => format!("`{kb}`"),
            None => "a library that could not be opened".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RouteState {
    /// Searched; its lanes are in the answer, each with its own state.
    Answered,
    /// Not searched: it could not be opened, or its folder went away.
    Unavailable { reason: String },
    /// Searched and failed.
    Failed { reason: String },
}

/// Merges `one` into the first group that takes it, else adds it apart.
fn place<H: Placed>(groups: &mut Vec<LaneGroup<H>>, one: LaneGroup<H>) {
    let mut pending = Some(one);
    for g in std::mem::take(groups) {
        match pending.take() {
            Some(p) => match g.merge(p) {
                Ok(merged) => groups.push(merged),
                Err((g, p)) => {
                    groups.push(g);
                    pending = Some(p);
                }
            },
            None => groups.push(g),
        }
    }
    groups.extend(pending);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A route's time reads back from JSON as the same number; a full
    /// precision one does not always (10.847529999999999 came back 10.84753).
    #[test]
    fn a_route_time_reads_back_exactly_from_json() {
        // One unit in the last place under 10.84753: 10.847529999999999.
        let full = f64::from_bits(10.84753_f64.to_bits() - 1);
        assert_ne!(
            serde_json::from_str::<f64>(&serde_json::to_string(&full).unwrap()).unwrap(),
            full,
            "the full-precision value this guards against"
        );
        for i in 0..200_000u32 {
            let ms = hundredths(i as f64 * 0.0137 + 0.001);
            let back: f64 = serde_json::from_str(&serde_json::to_string(&ms).unwrap()).unwrap();
            assert_eq!(back, ms, "{ms}");
        }
    }
    use crate::score::Cosine;

    fn scorer(model: &str) -> ScorerId {
        ScorerId {
            kind: ScorerKind::Cosine,
            model: model.into(),
        }
    }

    fn hit(doc: i64, cosine: f32, model: &str) -> TopicHit {
        TopicHit {
            doc,
            title: String::new(),
            locations: Vec::new(),
            chunk: doc,
            heading_path: Vec::new(),
            passage: String::new(),
            page: None,
            cosine: Cosine::new(cosine),
            scorer: scorer(model),
        }
    }

    fn kb(s: &str) -> Kb {
        Kb::parse(s).unwrap()
    }

    fn ready(hits: Vec<TopicHit>, below: Vec<TopicHit>) -> LaneOutcome<TopicHit> {
        LaneOutcome::Ready {
            hits,
            below_floor: below,
        }
    }

    fn docs(g: &LaneGroup<TopicHit>) -> Vec<(String, i64)> {
        g.hits
            .iter()
            .map(|h| (h.kb.to_string(), h.hit.doc))
            .collect()
    }

    #[test]
    fn hits_of_one_scorer_are_ordered_together_with_their_library() {
        let (a, b) = (kb("research"), kb("notes"));
        let owner = Some("Ada".to_string());
        let la = ready(
            vec![hit(1, 0.9, "m@1"), hit(2, 0.5, "m@1")],
            vec![hit(3, 0.2, "m@1")],
        );
        let lb = ready(vec![hit(1, 0.7, "m@1")], vec![]);
        let lane = SharedLane::gather([(&a, &owner, &la), (&b, &None, &lb)], 10);
        assert_eq!(lane.groups.len(), 2);
        assert_eq!(lane.groups[0].standing, Standing::Hit);
        assert_eq!(
            docs(&lane.groups[0]),
            [
                ("research".into(), 1),
                ("notes".into(), 1),
                ("research".into(), 2)
            ]
        );
        assert_eq!(lane.groups[0].hits[1].owner, None);
        assert_eq!(lane.groups[0].hits[0].owner.as_deref(), Some("Ada"));
        assert_eq!(lane.groups[1].standing, Standing::BelowFloor);
        assert_eq!(lane.answers().count(), 3);
    }

    #[test]
    fn another_embedder_is_listed_apart_however_high_its_numbers() {
        let (a, b) = (kb("research"), kb("remote"));
        let la = ready(vec![hit(1, 0.6, "m@1")], vec![]);
        let lb = ready(vec![hit(7, 0.99, "other@2")], vec![]);
        let lane = SharedLane::gather([(&a, &None, &la), (&b, &None, &lb)], 10);
        assert_eq!(lane.groups.len(), 2, "two scorers, two lists");
        assert_eq!(docs(&lane.groups[0]), [("research".into(), 1)]);
        assert_eq!(docs(&lane.groups[1]), [("remote".into(), 7)]);
        assert_eq!(lane.groups[1].scorer, scorer("other@2"));
        // The rule itself: a merge of two scorers gives both back untouched.
        let g = |h: TopicHit| LaneGroup {
            scorer: h.scorer.clone(),
            standing: Standing::Hit,
            hits: vec![Attributed {
                kb: kb("x"),
                owner: None,
                hit: h,
            }],
        };
        let (x, y) = g(hit(1, 0.1, "m@1"))
            .merge(g(hit(2, 0.9, "other@2")))
            .unwrap_err();
        assert_eq!((x.hits[0].hit.doc, y.hits[0].hit.doc), (1, 2));
        let weak = LaneGroup {
            standing: Standing::Weak,
            ..g(hit(3, 0.9, "m@1"))
        };
        assert!(
            g(hit(1, 0.1, "m@1")).merge(weak).is_err(),
            "a weak hit is never ranked among admitted ones"
        );
    }

    #[test]
    fn a_lane_that_could_not_run_is_listed_with_its_reason_and_no_hits() {
        let (a, b) = (kb("research"), kb("notes"));
        let la = ready(vec![hit(1, 0.6, "m@1")], vec![]);
        let lb: LaneOutcome<TopicHit> = LaneOutcome::Unavailable {
            reason: "no index yet".into(),
        };
        let lane = SharedLane::gather([(&a, &None, &la), (&b, &None, &lb)], 1);
        assert_eq!(lane.libraries[1].state, LaneState::Unavailable);
        assert_eq!(lane.libraries[1].reason.as_deref(), Some("no index yet"));
        assert_eq!(lane.groups.len(), 1);
    }
}
