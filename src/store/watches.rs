//! Watched folders and URLs: what to keep in sync, and how the last sync went.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{SqliteStore, now};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum WatchKind {
    Folder,
    Url,
}

impl WatchKind {
    pub fn as_str(self) -> &'static str {
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
    /// The machine whose watcher syncs it, in a team library many machines
    /// share (a folder is a path on one machine); none in a library of one
    /// machine, where any watcher syncs it.
    pub machine: Option<String>,
}

impl Watch {
    /// Whether this machine's watcher syncs it: another machine's folder
    /// is never read here, so nothing it added is removed for being
    /// missing here.
    pub fn runs_here(&self) -> bool {
        self.machine
            .as_deref()
            .is_none_or(|m| m == super::home::machine())
    }
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

impl SqliteStore {
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
                machine: None,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Removes a watch; its documents stay in the library, owned by no
    /// watch from now on (as if added by hand), so no other watch's sync
    /// removes them.
    pub fn remove_watch(&mut self, id: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE documents SET watch_id = NULL WHERE watch_id = ?1",
            [id],
        )?;
        if tx.execute("DELETE FROM watches WHERE id = ?1", [id])? == 0 {
            return Err(Error::UnknownWatch(id));
        }
        tx.commit()?;
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

    /// Documents that watch `id` added and still owns: the only ones its
    /// sync may remove.
    pub fn documents_of_watch(&self, id: i64) -> Result<Vec<(i64, String, Option<i64>)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, source, content_id FROM documents WHERE watch_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The watch that added document `id`, or `None` when it was added by
    /// hand (or its watch was removed).
    pub fn document_watch(&self, id: i64) -> Result<Option<i64>> {
        self.conn
            .query_row("SELECT watch_id FROM documents WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?
            .ok_or(Error::UnknownDocument(id))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_watch_leaves_its_documents_to_no_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        let (id, _) = store
            .add_watch(&NewWatch {
                target: "/d".into(),
                kind: WatchKind::Folder,
                interval_s: 3600,
                include: vec![],
                exclude: vec![],
                allow_private: false,
            })
            .unwrap();
        store
            .conn
            .execute(
                "INSERT INTO documents (source, title, bytes, state, broken_code, broken_reason, added_at, synced_at, watch_id)
                 VALUES ('/d/a.txt', 'a', 0, 'broken', 'empty', 'empty file', 1, 1, ?1)",
                [id],
            )
            .unwrap();
        assert_eq!(store.documents_of_watch(id).unwrap().len(), 1);
        store.remove_watch(id).unwrap();
        let docs = store.list(None, None).unwrap();
        assert_eq!(docs.len(), 1, "the document stays");
        assert_eq!(store.document_watch(docs[0].id).unwrap(), None);
        assert!(matches!(
            store.remove_watch(id),
            Err(Error::UnknownWatch(_))
        ));
    }
}
