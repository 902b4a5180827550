//! Watched folders and URLs of a PostgreSQL library, as on SQLite
//! (`store/watches.rs`). Each document records the watch that added it, so
//! a watch's sync, on whichever machine runs it, removes only its own:
//! never what a person or another watch added. A watch belongs to the
//! machine that added it (a folder is a path on one machine): two machines
//! may watch folders at the same path, each its own.

use super::PgStore;
use crate::error::{Error, Result};
use crate::store::home::machine;
use crate::store::{NewWatch, Watch, WatchKind, now};

impl PgStore {
    /// Adds a watch, or returns the id of the one on the same target.
    pub fn add_watch(&self, w: &NewWatch) -> Result<(i64, bool)> {
        let list = |v: &[String]| serde_json::to_string(v).expect("strings serialise");
        let kind = match w.kind {
            WatchKind::Folder => "folder",
            WatchKind::Url => "url",
        };
        let inserted = self.row(
            "INSERT INTO watches (target, kind, interval_s, include, exclude, allow_private, created_at,
                written_by, machine)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (machine, target) DO NOTHING RETURNING id",
            &[
                &w.target,
                &kind,
                &(w.interval_s as i64),
                &list(&w.include),
                &list(&w.exclude),
                &w.allow_private,
                &now(),
                &self.writer,
                &machine(),
            ],
        )?;
        match inserted {
            Some(r) => Ok((r.get(0), true)),
            None => Ok((
                self.one(
                    "SELECT id FROM watches WHERE machine = $1 AND target = $2",
                    &[&machine(), &w.target],
                )?,
                false,
            )),
        }
    }

    pub fn watches(&self) -> Result<Vec<Watch>> {
        self.rows(
            "SELECT id, target, kind, interval_s, include, exclude, allow_private, created_at, synced_at, last_error,
                machine
             FROM watches ORDER BY id",
            &[],
        )?
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let list = |i: usize| -> Result<Vec<String>> {
                serde_json::from_str(r.get(i))
                    .map_err(|e| Error::Corrupt(format!("watch {id}: {e}")))
            };
            Ok(Watch {
                id,
                target: r.get(1),
                kind: if r.get::<_, &str>(2) == "url" {
                    WatchKind::Url
                } else {
                    WatchKind::Folder
                },
                interval_s: r.get::<_, i64>(3) as u64,
                include: list(4)?,
                exclude: list(5)?,
                allow_private: r.get(6),
                created_at: r.get(7),
                synced_at: r.get(8),
                last_error: r.get(9),
                machine: r.get(10),
            })
        })
        .collect()
    }

    /// Removes a watch; its documents stay, owned by no watch from now on.
    pub fn remove_watch(&self, id: i64) -> Result<()> {
        self.in_transaction(|tx| {
            tx.execute(
                "UPDATE documents SET watch_id = NULL WHERE watch_id = $1",
                &[&id],
            )?;
            if tx.execute("DELETE FROM watches WHERE id = $1", &[&id])? == 0 {
                return Err(super::Failed::Carrel(Error::UnknownWatch(id)));
            }
            Ok(())
        })
    }

    /// Records the end of a sync: its time, and its error if it failed.
    pub fn record_sync(&self, id: i64, error: Option<&str>) -> Result<()> {
        self.execute(
            "UPDATE watches SET synced_at = $2, last_error = $3 WHERE id = $1",
            &[&id, &now(), &error],
        )
        .map(|_| ())
    }

    /// Documents that watch `id` added and still owns: the only ones its
    /// sync may remove.
    pub fn documents_of_watch(&self, id: i64) -> Result<Vec<(i64, String, Option<i64>)>> {
        Ok(self
            .rows(
                "SELECT id, source, content_id FROM documents WHERE watch_id = $1 ORDER BY id",
                &[&id],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    /// The watch that added document `id`, or `None` when it was added by
    /// hand (or its watch was removed).
    pub fn document_watch(&self, id: i64) -> Result<Option<i64>> {
        self.row("SELECT watch_id FROM documents WHERE id = $1", &[&id])?
            .map(|r| r.get(0))
            .ok_or(Error::UnknownDocument(id))
    }

    /// A file was renamed or moved: the document `keep` takes the source of
    /// the freshly indexed row `fresh` (same content), which goes.
    pub fn move_document(&self, keep: i64, fresh: i64) -> Result<()> {
        self.in_transaction(|tx| {
            let r = tx.query_one(
                "DELETE FROM documents WHERE id = $1 RETURNING source, bytes, mtime_ns",
                &[&fresh],
            )?;
            let (source, bytes, mtime): (String, i64, Option<i64>) = (r.get(0), r.get(1), r.get(2));
            tx.execute(
                "UPDATE documents SET source = $2, bytes = $3, mtime_ns = $4, synced_at = $5 WHERE id = $1",
                &[&keep, &source, &bytes, &mtime, &now()],
            )?;
            Ok(())
        })
    }
}
