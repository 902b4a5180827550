//! Watched folders and URLs: what to keep in sync, and how the last sync went.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, now};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum WatchKind {
    Folder,
    Url,
}

impl WatchKind {
    fn as_str(self) -> &'static str {
        match self {
            WatchKind::Folder => "folder",
            WatchKind::Url => "url",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Watch {
    pub id: i64,
    /// The absolute folder path or the URL.
    pub target: String,
    pub kind: WatchKind,
    /// Seconds between re-fetches of a URL, or between full re-scans of a
    /// folder (file events trigger a sync sooner).
    pub interval_s: u64,
    /// gitignore-syntax patterns; only matching files are taken (empty: all).
    pub include: Vec<String>,
    /// gitignore-syntax patterns to leave out, on top of hidden files.
    pub exclude: Vec<String>,
    pub allow_private: bool,
    pub created_at: i64,
    /// When the last sync finished (successfully or not).
    pub synced_at: Option<i64>,
    /// Why the last sync failed, if it did.
    pub last_error: Option<String>,
}

/// A watch to add.
#[derive(Debug, Clone)]
pub struct NewWatch {
    pub target: String,
    pub kind: WatchKind,
    pub interval_s: u64,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub allow_private: bool,
}

impl Store {
    /// Adds a watch, or returns the id of the one on the same target.
    pub fn add_watch(&self, w: &NewWatch) -> Result<(i64, bool)> {
        if let Some(id) = self
            .conn
            .query_row(
                "SELECT id FROM watches WHERE target = ?1",
                [&w.target],
                |r| r.get(0),
            )
            .optional()?
        {
            return Ok((id, false));
        }
        let list = |v: &[String]| serde_json::to_string(v).expect("strings serialise");
        self.conn.execute(
            "INSERT INTO watches (target, kind, interval_s, include, exclude, allow_private, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                w.target,
                w.kind.as_str(),
                w.interval_s as i64,
                list(&w.include),
                list(&w.exclude),
                w.allow_private,
                now()
            ],
        )?;
        Ok((self.conn.last_insert_rowid(), true))
    }

    pub fn watches(&self) -> Result<Vec<Watch>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, target, kind, interval_s, include, exclude, allow_private, created_at, synced_at, last_error
             FROM watches ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            let list = |i: usize| -> rusqlite::Result<Vec<String>> {
                let s: String = r.get(i)?;
                serde_json::from_str(&s).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        i,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    )
                })
            };
            let kind: String = r.get(2)?;
            Ok(Watch {
                id: r.get(0)?,
                target: r.get(1)?,
                kind: if kind == "url" {
                    WatchKind::Url
                } else {
                    WatchKind::Folder
                },
                interval_s: r.get::<_, i64>(3)? as u64,
                include: list(4)?,
                exclude: list(5)?,
                allow_private: r.get(6)?,
                created_at: r.get(7)?,
                synced_at: r.get(8)?,
                last_error: r.get(9)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Removes a watch; its documents stay in the library.
    pub fn remove_watch(&self, id: i64) -> Result<()> {
        if self
            .conn
            .execute("DELETE FROM watches WHERE id = ?1", [id])?
            == 0
        {
            return Err(Error::UnknownWatch(id));
        }
        Ok(())
    }

    /// Records the end of a sync: its time, and its error if it failed.
    pub fn record_sync(&self, id: i64, error: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE watches SET synced_at = ?2, last_error = ?3 WHERE id = ?1",
            params![id, now(), error],
        )?;
        Ok(())
    }

    /// Documents whose source lies inside `folder` (an absolute path).
    pub fn documents_under(&self, folder: &str) -> Result<Vec<(i64, String, Option<i64>)>> {
        let prefix = format!("{}/", folder.trim_end_matches('/'));
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, source, content_id FROM documents WHERE substr(source, 1, length(?1)) = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([&prefix], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// A file was renamed or moved: the document `keep` takes the source of
    /// the freshly indexed row `fresh` (same content), which goes. The id a
    /// chat mentions survives, and nothing is embedded again.
    pub fn move_document(&mut self, keep: i64, fresh: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        let (source, bytes, mtime): (String, i64, Option<i64>) = tx.query_row(
            "SELECT source, bytes, mtime_ns FROM documents WHERE id = ?1",
            [fresh],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        tx.execute("DELETE FROM documents WHERE id = ?1", [fresh])?;
        tx.execute(
            "UPDATE documents SET source = ?2, bytes = ?3, mtime_ns = ?4, synced_at = ?5 WHERE id = ?1",
            params![keep, source, bytes, mtime, now()],
        )?;
        tx.commit()?;
        Ok(())
    }
}
