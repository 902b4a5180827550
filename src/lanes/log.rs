//! The retrieval log: every lane decision, with the scorer that produced the
//! number, so "which scorer made the number on screen?" always has an answer.

use rusqlite::params;
use serde::Serialize;

use super::{Candidate, Decision, ScorerId};
use crate::error::Result;
use crate::store::{Store, now};

#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub at: i64,
    pub query: String,
    pub lane: String,
    pub doc: i64,
    pub score: f64,
    pub scale: String,
    pub scorer: String,
    pub calibrated: bool,
    pub admitted: bool,
    pub decision: String,
}

/// Per lane: its name, its candidates, the cosine scorer and, when one ran,
/// the cross-encoder.
pub type LaneLog<'a> = (&'a str, &'a [Candidate], &'a ScorerId, Option<&'a ScorerId>);

/// Writes one row per candidate of both lanes, in one transaction.
pub fn record(store: &mut Store, query: &str, lanes: &[LaneLog<'_>]) -> Result<()> {
    let tx = store.conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO retrieval_log (at, query, lane, doc, score, scale, scorer, calibrated, admitted, decision)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        let at = now();
        for (lane, candidates, cosine_scorer, ce_scorer) in lanes {
            for c in *candidates {
                let (score, scale, scorer, calibrated) = match (c.rerank, ce_scorer) {
                    (Some(logit), Some(ce)) => (
                        logit.0 as f64,
                        "rerank_logit",
                        ce.to_string(),
                        super::subject::floor_calibrated_for(&ce.model),
                    ),
                    _ => (
                        c.cosine.0 as f64,
                        "cosine",
                        cosine_scorer.to_string(),
                        false,
                    ),
                };
                insert.execute(params![
                    at,
                    query,
                    lane,
                    c.doc,
                    score,
                    scale,
                    scorer,
                    calibrated,
                    c.decision == Decision::Admitted,
                    c.decision.as_str()
                ])?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// The newest `limit` entries, newest first.
pub fn read(store: &Store, limit: usize) -> Result<Vec<LogEntry>> {
    let mut stmt = store.conn.prepare(
        "SELECT at, query, lane, doc, score, scale, scorer, calibrated, admitted, decision
         FROM retrieval_log ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([limit as i64], |r| {
        Ok(LogEntry {
            at: r.get(0)?,
            query: r.get(1)?,
            lane: r.get(2)?,
            doc: r.get(3)?,
            score: r.get(4)?,
            scale: r.get(5)?,
            scorer: r.get(6)?,
            calibrated: r.get(7)?,
            admitted: r.get(8)?,
            decision: r.get(9)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
