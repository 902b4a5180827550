//! What a lane returns. "Could not look" and "looked, found nothing" are
//! different values, never the same empty list.

use serde::Serialize;

#[derive(Debug, Clone)]
pub enum LaneOutcome<H> {
    /// Hits that passed every floor (possibly none: looked, found nothing).
    Ready(Vec<H>),
    /// Sub-floor hits, shown only because neither lane had anything real.
    Weak(Vec<H>),
    /// The lane could not run; the reason says what to do.
    Unavailable { reason: String },
    /// The lane failed.
    Failed(String),
}

impl<H> LaneOutcome<H> {
    pub fn state(&self) -> &'static str {
        match self {
            LaneOutcome::Ready(_) => "ready",
            LaneOutcome::Weak(_) => "weak",
            LaneOutcome::Unavailable { .. } => "unavailable",
            LaneOutcome::Failed(_) => "failed",
        }
    }

    pub fn hits(&self) -> &[H] {
        match self {
            LaneOutcome::Ready(h) | LaneOutcome::Weak(h) => h,
            _ => &[],
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            LaneOutcome::Unavailable { reason } | LaneOutcome::Failed(reason) => Some(reason),
            _ => None,
        }
    }

    /// True when the lane has real (not weak) hits.
    pub fn has_ready_hits(&self) -> bool {
        matches!(self, LaneOutcome::Ready(h) if !h.is_empty())
    }
}

/// The JSON shape of a lane: `{"state", "reason", "hits"}`.
#[derive(Debug, Clone, Serialize)]
pub struct LaneView<'a, H: Serialize> {
    pub state: &'static str,
    pub reason: Option<&'a str>,
    pub hits: &'a [H],
}

impl<H: Serialize> LaneOutcome<H> {
    pub fn view(&self) -> LaneView<'_, H> {
        LaneView {
            state: self.state(),
            reason: self.reason(),
            hits: self.hits(),
        }
    }
}
