//! What a lane returns. "Could not look" and "looked, found nothing" are
//! different values, never the same empty list.

use serde::Serialize;

#[derive(Debug, Clone)]
pub enum LaneOutcome<H> {
    /// Hits that passed every floor (possibly none: looked, found nothing).
    Ready(Vec<H>),
    /// Hits to take with care, and why: sub-floor hits, shown only because
    /// neither lane had anything real (no reason), or hits from a library
    /// that the lane could search only in part (the reason says which part).
    Weak {
        hits: Vec<H>,
        reason: Option<String>,
    },
    /// The lane could not run; the reason says what to do.
    Unavailable { reason: String },
    /// The lane failed.
    Failed(String),
}

/// A lane's state, as the UI and JSON name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
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
            LaneOutcome::Ready(_) => LaneState::Ready,
            LaneOutcome::Weak { .. } => LaneState::Weak,
            LaneOutcome::Unavailable { .. } => LaneState::Unavailable,
            LaneOutcome::Failed(_) => LaneState::Failed,
        }
    }

    pub fn hits(&self) -> &[H] {
        match self {
            LaneOutcome::Ready(h) | LaneOutcome::Weak { hits: h, .. } => h,
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
        matches!(self, LaneOutcome::Ready(h) if !h.is_empty())
    }
}

/// The JSON shape of a lane: `{"state", "reason", "hits"}`.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct LaneView<H> {
    pub state: LaneState,
    pub reason: Option<String>,
    pub hits: Vec<H>,
}

impl<H: Clone> LaneOutcome<H> {
    pub fn view(&self) -> LaneView<H> {
        LaneView {
            state: self.lane_state(),
            reason: self.reason().map(str::to_string),
            hits: self.hits().to_vec(),
        }
    }
}
