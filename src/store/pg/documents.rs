//! Documents in a PostgreSQL library, read and removed as on SQLite
//! (`store/documents.rs`): the same rows, the same states judged against
//! the fingerprints in use.

use postgres::Row;

use super::PgStore;
use crate::error::{Error, Result};
use crate::store::{Density, DocumentRow, SourceStamp, Validators, now};

impl PgStore {
    /// How many documents the library lists, broken ones included.
    pub fn document_count(&self) -> Result<i64> {
        self.one("SELECT count(*) FROM documents", &[])
    }

    pub fn density(&self) -> Result<Vec<Density>> {
        let rows = self.rows(
            "SELECT d.id, d.title, count(k.id), sum(length(k.text))::bigint
             FROM documents d JOIN chunks k ON k.content_id = d.content_id
             GROUP BY d.id ORDER BY count(k.id) DESC, d.id",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let (chunks, chars): (i64, i64) = (r.get(2), r.get(3));
                Density {
                    id: r.get(0),
                    title: r.get(1),
                    chunks: chunks as u64,
                    chars: chars as u64,
                    avg_chunk: chars as f64 / chunks.max(1) as f64,
                }
            })
            .collect())
    }

    pub fn stamp(&self, source: &str) -> Result<Option<SourceStamp>> {
        let row = self.row(
            "SELECT id, bytes, mtime_ns, content_id, etag, last_modified FROM documents WHERE source = $1",
            &[&source],
        )?;
        Ok(row.map(|r| SourceStamp {
            id: r.get(0),
            bytes: r.get::<_, i64>(1) as u64,
            mtime_ns: r.get(2),
            content_id: r.get(3),
            validators: Validators {
                etag: r.get(4),
                last_modified: r.get(5),
            },
        }))
    }

    /// Lists every document, with states judged against the current
    /// fingerprints (`None`: vectors are not judged stale).
    pub fn list(&self, chunk_fp: Option<&str>, card_fp: Option<&str>) -> Result<Vec<DocumentRow>> {
        self.document_rows(chunk_fp, card_fp, None)
    }

    /// One document, judged like [`PgStore::list`] judges it.
    pub fn document(
        &self,
        id: i64,
        chunk_fp: Option<&str>,
        card_fp: Option<&str>,
    ) -> Result<DocumentRow> {
        self.document_rows(chunk_fp, card_fp, Some(id))?
            .pop()
            .ok_or(Error::UnknownDocument(id))
    }

    fn document_rows(
        &self,
        chunk_fp: Option<&str>,
        card_fp: Option<&str>,
        only: Option<i64>,
    ) -> Result<Vec<DocumentRow>> {
        let rows = self.rows(
            "SELECT d.id, d.title, d.kind, d.source, d.bytes, c.hash, d.state, d.broken_code, d.broken_reason,
                    c.truncated_at_chunk, d.added_at, d.synced_at,
                    (SELECT count(*) FROM chunks k WHERE k.content_id = d.content_id),
                    (SELECT count(*) FROM chunks k WHERE k.content_id = d.content_id
                        AND k.fingerprint IS DISTINCT FROM $1),
                    (SELECT fingerprint IS DISTINCT FROM $2 FROM cards WHERE content_id = d.content_id),
                    c.reader, c.language
             FROM documents d LEFT JOIN contents c ON c.id = d.content_id
             WHERE $3::bigint IS NULL OR d.id = $3
             ORDER BY d.id",
            &[&chunk_fp, &card_fp, &only],
        )?;
        Ok(rows
            .iter()
            .map(|r| document_row(r, chunk_fp.is_some()))
            .collect())
    }

    pub fn document_content(&self, id: i64) -> Result<Option<i64>> {
        self.row("SELECT content_id FROM documents WHERE id = $1", &[&id])?
            .map(|r| r.get(0))
            .ok_or(Error::UnknownDocument(id))
    }

    /// Removes a document and, if it was the last one pointing at its
    /// content, the content with its chunks and card.
    pub fn remove_document(&self, id: i64) -> Result<()> {
        let content = self.document_content(id)?;
        self.in_transaction(|tx| {
            tx.execute("DELETE FROM documents WHERE id = $1", &[&id])?;
            if let Some(c) = content {
                super::write::collect_garbage(tx, c)?;
            }
            Ok(())
        })
    }

    /// Records that a source was seen unchanged.
    pub fn touch(&self, id: i64) -> Result<()> {
        self.execute(
            "UPDATE documents SET synced_at = $2 WHERE id = $1",
            &[&id, &now()],
        )
        .map(|_| ())
    }
}

/// A document row as SQLite's `rows` makes it, from the same columns.
fn document_row(r: &Row, judged: bool) -> DocumentRow {
    let state: String = r.get(6);
    let stale_chunks: i64 = r.get(13);
    let card_stale: Option<bool> = r.get(14);
    DocumentRow {
        id: r.get(0),
        title: r.get(1),
        kind: r.get(2),
        reader: r.get(15),
        language: r.get(16),
        source: r.get(3),
        bytes: r.get::<_, i64>(4) as u64,
        content_hash: r.get(5),
        state: if state == "indexed" && judged && (stale_chunks > 0 || card_stale == Some(true)) {
            "stale".into()
        } else {
            state
        },
        broken_code: r.get(7),
        broken_reason: r.get(8),
        truncated_at_chunk: r.get::<_, Option<i64>>(9).map(|v| v as u64),
        added_at: r.get(10),
        synced_at: r.get(11),
        chunks: r.get::<_, i64>(12) as u64,
        source_missing: false,
        card_state: match card_stale {
            None => "none".into(),
            Some(true) if judged => "stale".into(),
            Some(_) => "ready".into(),
        },
    }
}
