//! Foreign sources kept in the library (schema v12): one JSON record per
//! source, by name. What a record means is `foreign::saved`'s.

use rusqlite::OptionalExtension;

use super::SqliteStore;
use crate::error::Result;

impl SqliteStore {
    /// Every foreign source's (name, JSON record), by name.
    pub fn foreign_source_records(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, source FROM foreign_sources ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The JSON record of the source called `name`, if there is one.
    pub fn foreign_source_record(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT source FROM foreign_sources WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Saves `record` under `name`, replacing what was there.
    pub fn put_foreign_source_record(&self, name: &str, record: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO foreign_sources (name, source) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET source = excluded.source",
            rusqlite::params![name, record],
        )?;
        Ok(())
    }

    /// Forgets the source called `name`; whether there was one.
    pub fn remove_foreign_source_record(&self, name: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM foreign_sources WHERE name = ?1", [name])?
            > 0)
    }
}
