//! The retrieval log: every lane decision, with the scorer that produced the
//! number, so "which scorer made the number on screen?" always has an answer.
//! This file decides what a row says (which scorer, calibrated or not); the
//! store keeps the rows.

use super::{Candidate, Decision};
use crate::error::Result;
use crate::score::{Scored, ScorerId};
pub use crate::store::{LogEntry, Retention};
use crate::store::{Store, now};

/// Per lane: its name, its candidates, the cosine scorer and, when one ran,
/// the cross-encoder.
pub type LaneLog<'a> = (&'a str, &'a [Candidate], &'a ScorerId, Option<&'a ScorerId>);

/// Writes one row per candidate of both lanes, in one transaction, then
/// drops what `keep` no longer covers.
pub fn record(
    store: &mut Store,
    query: &str,
    lanes: &[LaneLog<'_>],
    keep: Retention,
) -> Result<()> {
    let at = now();
    let mut rows = Vec::new();
    for (lane, candidates, cosine_scorer, ce_scorer) in lanes {
        for c in *candidates {
            let (score, scorer, calibrated) = match (c.rerank, ce_scorer) {
                (Some(logit), Some(ce)) => (
                    Scored::RerankLogit(logit),
                    ce.to_string(),
                    super::subject::floor_calibrated_for(&ce.model),
                ),
                _ => (Scored::Cosine(c.cosine), cosine_scorer.to_string(), false),
            };
            rows.push(LogEntry {
                at,
                query: query.to_string(),
                lane: lane.to_string(),
                doc: c.doc,
                score,
                scorer,
                calibrated,
                admitted: c.decision == Decision::Admitted,
                decision: c.decision.as_str().to_string(),
                unjudged: c.unjudged.clone(),
            });
        }
    }
    store.append_log(&rows)?;
    store.prune_log(keep, now())?;
    Ok(())
}
