//! Rows of the `documents` table: one per source (path or URL), pointing at a
//! content or carrying the reason it is broken.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use super::{SqliteStore, now};
use crate::error::{Error, Result};
use crate::extract::BrokenReason;

/// What a source resolved to.
pub enum DocumentState<'a> {
    Indexed { content_id: i64 },
    Broken(&'a BrokenReason),
}

pub struct NewDocument<'a> {
    pub source: &'a str,
    pub kind: Option<&'a str>,
    pub title: &'a str,
    pub bytes: u64,
    pub mtime_ns: Option<i64>,
    pub validators: &'a Validators,
    /// The watch whose sync adds this source (`None`: added by hand). Only
    /// a new row takes it: a row already there keeps its owner, so a watch
    /// never adopts a hand-added document or another watch's.
    pub watch: Option<i64>,
}

/// What writing a document's row found and did.
pub(crate) struct Upserted {
    pub id: i64,
    /// The content the row pointed at before (`None`: no row, or broken).
    pub before: Option<i64>,
    /// The content the row no longer points at, to collect.
    pub dropped: Option<i64>,
}

/// What an HTTP server said identifies the version it sent, so the next
/// fetch can ask "changed since?" (ETag / Last-Modified).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// What the library last saw of a source: enough to skip it unread.
#[derive(Debug, Clone)]
pub struct SourceStamp {
    pub id: i64,
    pub bytes: u64,
    pub mtime_ns: Option<i64>,
    pub content_id: Option<i64>,
    pub validators: Validators,
}

/// One document as `carrel list` shows it.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct DocumentRow {
    pub id: i64,
    pub title: String,
    pub kind: Option<String>,
    /// The reader that produced its text (`extract::Reader`); none when broken.
    pub reader: Option<String>,
    /// The language most of its text is in ("en", "ru"; `und` when its
    /// text does not tell); none when broken.
    pub language: Option<String>,
    pub source: String,
    pub bytes: u64,
    pub chunks: u64,
    pub content_hash: Option<String>,
    /// `indexed`, `stale` (vectors from another model or chunker), or `broken`.
    pub state: String,
    pub broken_reason: Option<String>,
    pub broken_code: Option<String>,
    pub truncated_at_chunk: Option<u64>,
    /// `ready`, `stale`, or `none` (broken documents have no card).
    pub card_state: String,
    pub added_at: i64,
    /// When the source was last read (or found unchanged).
    pub synced_at: i64,
    /// The file is no longer where the document says (set by the library,
    /// which looks; a watch would have removed or moved it).
    pub source_missing: bool,
}

/// `carrel stats --density`, per document.
#[derive(Debug, Clone, Serialize)]
pub struct Density {
    pub id: i64,
    pub title: String,
    pub chunks: u64,
    pub chars: u64,
    pub avg_chunk: f64,
}

impl SqliteStore {
    /// How many documents the library lists, broken ones included.
    pub fn document_count(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT count(*) FROM documents", [], |r| r.get(0))?)
    }

    pub fn density(&self) -> Result<Vec<Density>> {
        let mut stmt = self.conn.prepare(
            "SELECT d.id, d.title, count(k.id), sum(length(k.text))
             FROM documents d JOIN chunks k ON k.content_id = d.content_id
             GROUP BY d.id ORDER BY count(k.id) DESC, d.id",
        )?;
        let rows = stmt.query_map([], |r| {
            let chunks: i64 = r.get(2)?;
            let chars: i64 = r.get(3)?;
            Ok(Density {
                id: r.get(0)?,
                title: r.get(1)?,
                chunks: chunks as u64,
                chars: chars as u64,
                avg_chunk: chars as f64 / chunks.max(1) as f64,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub fn stamp(&self, source: &str) -> Result<Option<SourceStamp>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, bytes, mtime_ns, content_id, etag, last_modified FROM documents WHERE source = ?1",
                [source],
                |r| {
                    Ok(SourceStamp {
                        id: r.get(0)?,
                        bytes: r.get::<_, i64>(1)? as u64,
                        mtime_ns: r.get(2)?,
                        content_id: r.get(3)?,
                        validators: Validators {
                            etag: r.get(4)?,
                            last_modified: r.get(5)?,
                        },
                    })
                },
            )
            .optional()?)
    }

    /// Lists every document, with states judged against the current
    /// fingerprints (`None` when the models cannot be read: then vectors are
    /// not judged stale).
    pub fn list(&self, chunk_fp: Option<&str>, card_fp: Option<&str>) -> Result<Vec<DocumentRow>> {
        self.rows(chunk_fp, card_fp, None)
    }

    /// One document, judged like [`SqliteStore::list`] judges it.
    pub fn document(
        &self,
        id: i64,
        chunk_fp: Option<&str>,
        card_fp: Option<&str>,
    ) -> Result<DocumentRow> {
        self.rows(chunk_fp, card_fp, Some(id))?
            .pop()
            .ok_or(Error::UnknownDocument(id))
    }

    fn rows(
        &self,
        chunk_fp: Option<&str>,
        card_fp: Option<&str>,
        only: Option<i64>,
    ) -> Result<Vec<DocumentRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT d.id, d.title, d.kind, d.source, d.bytes, c.hash, d.state, d.broken_code, d.broken_reason,
                    c.truncated_at_chunk, d.added_at, d.synced_at,
                    (SELECT count(*) FROM chunks k WHERE k.content_id = d.content_id),
                    (SELECT count(*) FROM chunks k WHERE k.content_id = d.content_id
                        AND k.embedded_with IS NOT ?1),
                    (SELECT embedded_with IS NOT ?2 FROM cards WHERE content_id = d.content_id),
                    c.reader, c.language
             FROM documents d LEFT JOIN contents c ON c.id = d.content_id
             WHERE ?3 IS NULL OR d.id = ?3
             ORDER BY d.id",
        )?;
        let rows = stmt.query_map(params![chunk_fp, card_fp, only], |r| {
            let state: String = r.get(6)?;
            let stale_chunks: i64 = r.get(13)?;
            let card_stale: Option<bool> = r.get(14)?;
            let judged = chunk_fp.is_some();
            Ok(DocumentRow {
                id: r.get(0)?,
                title: r.get(1)?,
                kind: r.get(2)?,
                reader: r.get(15)?,
                language: r.get(16)?,
                source: r.get(3)?,
                bytes: r.get::<_, i64>(4)? as u64,
                content_hash: r.get(5)?,
                state: if state == "indexed"
                    && judged
                    && (stale_chunks > 0 || card_stale == Some(true))
                {
                    "stale".into()
                } else {
                    state
                },
                broken_code: r.get(7)?,
                broken_reason: r.get(8)?,
                truncated_at_chunk: r.get::<_, Option<i64>>(9)?.map(|v| v as u64),
                added_at: r.get(10)?,
                synced_at: r.get(11)?,
                chunks: r.get::<_, i64>(12)? as u64,
                source_missing: false,
                card_state: match card_stale {
                    None => "none".into(),
                    Some(true) if judged => "stale".into(),
                    Some(_) => "ready".into(),
                },
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub fn document_content(&self, id: i64) -> Result<Option<i64>> {
        self.conn
            .query_row(
                "SELECT content_id FROM documents WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?
            .ok_or(Error::UnknownDocument(id))
    }

    /// Removes a document and, if it was the last one pointing at its content,
    /// the content with its chunks, card and vectors.
    pub fn remove_document(&mut self, id: i64) -> Result<()> {
        let content = self.document_content(id)?;
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM documents WHERE id = ?1", [id])?;
        if let Some(c) = content {
            SqliteStore::collect_garbage(&tx, c)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Inserts or updates the row for `doc.source`; says what it pointed at
    /// before. An update leaves the row's owner as it was.
    pub(super) fn upsert_document(
        tx: &Transaction<'_>,
        doc: &NewDocument<'_>,
        state: &DocumentState<'_>,
    ) -> Result<Upserted> {
        let previous: Option<Option<i64>> = tx
            .query_row(
                "SELECT content_id FROM documents WHERE source = ?1",
                [doc.source],
                |r| r.get(0),
            )
            .optional()?;
        let (state, content_id, code, reason) = match state {
            DocumentState::Indexed { content_id } => ("indexed", Some(*content_id), None, None),
            DocumentState::Broken(r) => ("broken", None, Some(r.code()), Some(r.to_string())),
        };
        let t = now();
        let id = tx.query_row(
            "INSERT INTO documents (source, kind, title, bytes, mtime_ns, content_id, state, broken_code, broken_reason, added_at, synced_at, etag, last_modified, watch_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13)
             ON CONFLICT(source) DO UPDATE SET kind = excluded.kind, title = excluded.title, bytes = excluded.bytes,
                mtime_ns = excluded.mtime_ns, content_id = excluded.content_id, state = excluded.state,
                broken_code = excluded.broken_code, broken_reason = excluded.broken_reason, synced_at = excluded.synced_at,
                etag = excluded.etag, last_modified = excluded.last_modified
             RETURNING id",
            params![doc.source, doc.kind, doc.title, doc.bytes as i64, doc.mtime_ns, content_id, state, code, reason, t,
                doc.validators.etag, doc.validators.last_modified, doc.watch],
            |r| r.get(0),
        )?;
        let before = previous.flatten();
        Ok(Upserted {
            id,
            before,
            dropped: before.filter(|old| Some(*old) != content_id),
        })
    }

    /// Records that a source was seen unchanged.
    pub fn touch(&self, id: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE documents SET synced_at = ?2 WHERE id = ?1",
            params![id, now()],
        )?;
        Ok(())
    }
}
