//! What a lane returns. "Could not look" and "looked, found nothing" are
//! different values, never the same empty list.

use serde::{Deserialize, Serialize};

/// A lane that looked (`Ready`, `Weak`) also carries its `below_floor`
/// tail: the candidates it judged and kept under its floor, best first,
/// never the same documents as its hits. The tail is never an answer: it is
/// not counted by [`LaneOutcome::hits`] or [`LaneOutcome::has_ready_hits`].
#[derive(Debug, Clone)]
pub enum LaneOutcome<H> {
    /// Hits that passed every floor (possibly none: looked, found nothing).
    Ready { hits: Vec<H>, below_floor: Vec<H> },
    /// Hits to take with care, and why: sub-floor hits, shown only because
    /// neither lane had anything real (no reason; the tail is then empty,
    /// the sub-floor hits being the hits), or hits from a library that the
    /// lane could search only in part (the reason says which part).
    Weak {
        hits: Vec<H>,
        below_floor: Vec<H>,
        reason: Option<String>,
    },
    /// The lane could not run; the reason says what to do.
    Unavailable { reason: String },
    /// The lane failed.
    Failed(String),
}

/// A lane's state, as the UI and JSON name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum LaneState {
    Ready,
    Weak,
    Unavailable,
    Failed,
}

impl LaneState {
    pub fn as_str(self) -> &'static str {
        match self {
            LaneState::Ready => "ready",
            LaneState::Weak => "weak",
            LaneState::Unavailable => "unavailable",
            LaneState::Failed => "failed",
        }
    }
}

impl<H> LaneOutcome<H> {
    pub fn state(&self) -> &'static str {
        self.lane_state().as_str()
    }

    pub fn lane_state(&self) -> LaneState {
        match self {
            LaneOutcome::Ready { .. } => LaneState::Ready,
            LaneOutcome::Weak { .. } => LaneState::Weak,
            LaneOutcome::Unavailable { .. } => LaneState::Unavailable,
            LaneOutcome::Failed(_) => LaneState::Failed,
        }
    }

    /// The lane's answer: admitted hits, or weak ones as [`LaneOutcome::Weak`]
    /// says. Never the `below_floor` tail.
    pub fn hits(&self) -> &[H] {
        match self {
            LaneOutcome::Ready { hits, .. } | LaneOutcome::Weak { hits, .. } => hits,
            _ => &[],
        }
    }

    /// Candidates under the lane's floor that are not among its hits, best
    /// first: shown apart, labelled, never counted as hits. Empty for a lane
    /// that did not run (nothing was judged).
    pub fn below_floor(&self) -> &[H] {
        match self {
            LaneOutcome::Ready { below_floor, .. } | LaneOutcome::Weak { below_floor, .. } => {
                below_floor
            }
            _ => &[],
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            LaneOutcome::Unavailable { reason }
            | LaneOutcome::Failed(reason)
            | LaneOutcome::Weak {
                reason: Some(reason),
                ..
            } => Some(reason),
            _ => None,
        }
    }

    /// True when the lane has real (not weak) hits.
    pub fn has_ready_hits(&self) -> bool {
        matches!(self, LaneOutcome::Ready { hits, .. } if !hits.is_empty())
    }
}

/// The JSON shape of a lane: `{"state", "reason", "hits", "below_floor"}`.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct LaneView<H> {
    pub state: LaneState,
    pub reason: Option<String>,
    pub hits: Vec<H>,
    /// Candidates under the lane's floor, not among `hits`, best first (at
    /// most top_k): a tail to look at, not an answer. Empty when the lane
    /// could not run, or when its weak hits are already the `hits`.
    pub below_floor: Vec<H>,
}

impl<H: Clone> LaneOutcome<H> {
    pub fn view(&self) -> LaneView<H> {
        LaneView {
            state: self.lane_state(),
            reason: self.reason().map(str::to_string),
            hits: self.hits().to_vec(),
            below_floor: self.below_floor().to_vec(),
        }
    }
}
