//! The retrieval log's rows: appended one query at a time, pruned by a
//! retention, read newest first. What a row says is the lanes' decision
//! (`lanes::log`); keeping it is this file's.

use rusqlite::params;
use serde::Serialize;

use super::SqliteStore;
use crate::error::Result;
use crate::score::Scored;

/// One lane decision as logged.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub at: i64,
    pub query: String,
    pub lane: String,
    pub doc: i64,
    /// The number and the scale it is on, as `"score"` and `"scale"`.
    #[serde(flatten)]
    pub score: Scored,
    pub scorer: String,
    pub calibrated: bool,
    pub admitted: bool,
    pub decision: String,
    /// Why the lexical checks could not judge this candidate, if they could
    /// not.
    pub unjudged: Option<String>,
}

/// How much of the log is kept: rows past either limit are dropped, oldest
/// first, each time a query is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub max_rows: u64,
    pub max_age_s: i64,
}

impl Default for Retention {
    /// About 10,000 queries' worth at 20 candidates a query, and 90 days.
    fn default() -> Self {
        Retention {
            max_rows: 200_000,
            max_age_s: 90 * 24 * 3600,
        }
    }
}

impl SqliteStore {
    /// Appends `rows` in one transaction.
    pub fn append_log(&mut self, rows: &[LogEntry]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO retrieval_log (at, query, lane, doc, score, scale, scorer, calibrated, admitted, decision, unjudged)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?;
            for r in rows {
                insert.execute(params![
                    r.at,
                    r.query,
                    r.lane,
                    r.doc,
                    r.score.get() as f64,
                    r.score.scale(),
                    r.scorer,
                    r.calibrated,
                    r.admitted,
                    r.decision,
                    r.unjudged
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Drops rows past `keep`; how many. Rows are appended in time order, so
    /// the oldest are the lowest ids: both deletes walk the primary key, not
    /// the table, and by age only as far as the first row young enough to
    /// keep (a question asks this once; reading the 10,000 oldest rows each
    /// time took 18 ms a question on PostgreSQL).
    /// The PostgreSQL store prunes with the same statements.
    pub fn prune_log(&self, keep: Retention, now: i64) -> Result<usize> {
        let by_count = self.conn.execute(
            "DELETE FROM retrieval_log WHERE id <= (SELECT MAX(id) FROM retrieval_log) - ?1",
            [keep.max_rows as i64],
        )?;
        let by_age = self.conn.execute(
            "DELETE FROM retrieval_log WHERE id IN
               (SELECT id FROM retrieval_log
                WHERE id < coalesce((SELECT id FROM retrieval_log WHERE at >= ?1 ORDER BY id LIMIT 1),
                                    9223372036854775807)
                ORDER BY id LIMIT 10000)",
            [now - keep.max_age_s],
        )?;
        Ok(by_count + by_age)
    }

    /// The newest `limit` entries, newest first.
    pub fn read_log(&self, limit: usize) -> Result<Vec<LogEntry>> {
        let mut stmt = self.conn.prepare(
            "SELECT at, query, lane, doc, score, scale, scorer, calibrated, admitted, decision, unjudged
             FROM retrieval_log ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            let scale: String = r.get(5)?;
            let score = Scored::from_parts(&scale, r.get(4)?).ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(
                    5,
                    rusqlite::types::Type::Text,
                    format!("unknown scale {scale}").into(),
                )
            })?;
            Ok(LogEntry {
                at: r.get(0)?,
                query: r.get(1)?,
                lane: r.get(2)?,
                doc: r.get(3)?,
                score,
                scorer: r.get(6)?,
                calibrated: r.get(7)?,
                admitted: r.get(8)?,
                decision: r.get(9)?,
                unjudged: r.get(10)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(store: &SqliteStore) -> Vec<(i64, i64)> {
        let mut stmt = store
            .conn
            .prepare("SELECT id, at FROM retrieval_log ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn the_log_keeps_only_what_its_retention_covers() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("library.sqlite3")).unwrap();
        for at in [100, 200, 300, 400, 500] {
            store
                .conn
                .execute(
                    "INSERT INTO retrieval_log (at, query, lane, doc, score, scale, scorer, calibrated, admitted, decision)
                     VALUES (?1, 'q', 'topic', 1, 0.5, 'cosine', 's', 0, 1, 'admitted')",
                    [at],
                )
                .unwrap();
        }
        let keep = Retention {
            max_rows: 4,
            max_age_s: 250,
        };
        assert_eq!(store.prune_log(keep, 500).unwrap(), 2);
        let ats: Vec<i64> = rows(&store).into_iter().map(|(_, at)| at).collect();
        assert_eq!(ats, vec![300, 400, 500], "the oldest by count, then by age");
        assert_eq!(
            store.prune_log(keep, 500).unwrap(),
            0,
            "nothing left to drop"
        );
        assert_eq!(store.prune_log(keep, 10_000).unwrap(), 3, "every row old");
        assert!(rows(&store).is_empty());
    }
}
