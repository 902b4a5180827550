//! The app's chat turns: each message with the engine's answer (as the JSON
//! the app was sent) or the error asking it raised. Typed in
//! [`crate::answer::history`].

use rusqlite::params;

use super::{SqliteStore, now};
use crate::error::Result;

/// One turn as stored. Exactly one of `answer` and `error` is set (the
/// table checks it).
#[derive(Debug, Clone)]
pub struct StoredTurn {
    pub id: i64,
    pub asked_at: i64,
    pub message: String,
    pub answer: Option<String>,
    pub error: Option<String>,
}

impl SqliteStore {
    pub fn add_turn(
        &self,
        message: &str,
        answer: Option<&str>,
        error: Option<&str>,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO chat_turns (asked_at, message, answer, error) VALUES (?1, ?2, ?3, ?4)",
            params![now(), message, answer, error],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The newest `limit` turns, oldest first.
    pub fn turns(&self, limit: usize) -> Result<Vec<StoredTurn>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, asked_at, message, answer, error FROM
               (SELECT * FROM chat_turns ORDER BY id DESC LIMIT ?1)
             ORDER BY id",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(StoredTurn {
                id: r.get(0)?,
                asked_at: r.get(1)?,
                message: r.get(2)?,
                answer: r.get(3)?,
                error: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Deletes every turn; returns how many there were.
    pub fn clear_turns(&self) -> Result<usize> {
        Ok(self.conn.execute("DELETE FROM chat_turns", [])?)
    }
}
