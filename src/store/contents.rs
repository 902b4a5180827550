//! Content-addressed rows: `contents` (hash → extracted text), its `chunks`,
//! its `cards`, and their vectors. Each vector row carries the fingerprint of
//! the model and chunker/card builder that made it; the same fingerprint is
//! written on the chunk or card row in the same transaction, so staleness is
//! a plain indexed query.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use super::{SqliteStore, vector_blob};
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::Extracted;
use crate::score::Cosine;

/// A chunk ready to be written.
pub struct NewChunk {
    pub heading_path: Vec<String>,
    pub section: usize,
    pub start: usize,
    pub end: usize,
    pub page: Option<u32>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChunkRow {
    pub id: i64,
    pub seq: i64,
    pub heading_path: Vec<String>,
    pub page: Option<u32>,
    pub text: String,
}

/// A content whose chunk or card vectors were made by another fingerprint.
pub struct StaleContent {
    pub id: i64,
    pub extracted: Extracted,
    pub truncated_at_chunk: Option<usize>,
    pub chunks_stale: bool,
    pub card_stale: bool,
}

/// Reads a JSON-encoded column; malformed JSON is an error, not an empty value.
fn json_column<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<T> {
    let text: String = r.get(idx)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// How much of the library a lane's index covers: indexed documents, and
/// those whose vectors (chunks for the topic lane, cards for the subject
/// lane) were made by another model and wait to be re-embedded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    pub indexed: usize,
    pub stale: usize,
}

impl Coverage {
    /// What the lane cannot see, as a sentence; `None` when it sees it all.
    pub fn shortfall(&self) -> Option<String> {
        (self.stale > 0).then(|| {
            format!(
                "re-embedding {} of {} documents (their vectors were made by another model); \
                 hits from them are missing until it finishes",
                self.stale, self.indexed
            )
        })
    }
}

impl SqliteStore {
    pub fn content_by_hash(&self, hash: &str) -> Result<Option<i64>> {
        SqliteStore::content_id_in(&self.conn, hash)
    }

    pub fn content_hash(&self, content_id: i64) -> Result<String> {
        Ok(self.conn.query_row(
            "SELECT hash FROM contents WHERE id = ?1",
            [content_id],
            |r| r.get(0),
        )?)
    }

    pub fn extracted(&self, content_id: i64) -> Result<Extracted> {
        let json: String = self.conn.query_row(
            "SELECT extracted FROM contents WHERE id = ?1",
            [content_id],
            |r| r.get(0),
        )?;
        serde_json::from_str(&json)
            .map_err(|e| Error::Corrupt(format!("content {content_id}: {e}")))
    }

    pub fn chunk_count(&self, content_id: i64) -> Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM chunks WHERE content_id = ?1",
            [content_id],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    /// The content a chunk belongs to, if the chunk exists.
    pub fn chunk_content(&self, chunk_id: i64) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT content_id FROM chunks WHERE id = ?1")?
            .query_row([chunk_id], |r| r.get(0))
            .optional()?)
    }

    /// A chunk's content and text, if the chunk exists.
    pub fn chunk_text(&self, chunk_id: i64) -> Result<Option<(i64, String)>> {
        Ok(self
            .conn
            .prepare_cached("SELECT content_id, text FROM chunks WHERE id = ?1")?
            .query_row([chunk_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    /// Every chunk of a content, in order, each with its cosine to `query`
    /// as sqlite-vec computes it for the topic lane's KNN; `None` where the
    /// chunk has no vector made by `fingerprint`. One read of the chunks.
    pub fn chunks_with_cosines(
        &self,
        content_id: i64,
        query: &[f32],
        fingerprint: &str,
    ) -> Result<Vec<(ChunkRow, Option<Cosine>)>> {
        let mut point = self.conn.prepare_cached(
            "SELECT vec_distance_cosine(embedding, ?2), fingerprint FROM chunk_vectors WHERE chunk_id = ?1",
        )?;
        let mut out = Vec::new();
        for chunk in self.chunks(content_id)? {
            let row: Option<(f32, String)> = point
                .query_row(rusqlite::params![chunk.id, vector_blob(query)], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            let cosine = row
                .filter(|(_, fp)| fp == fingerprint)
                .map(|(d, _)| Cosine::from_distance(d));
            out.push((chunk, cosine));
        }
        Ok(out)
    }

    pub fn chunks(&self, content_id: i64) -> Result<Vec<ChunkRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, seq, heading_path, page, text FROM chunks WHERE content_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([content_id], |r| {
            Ok(ChunkRow {
                id: r.get(0)?,
                seq: r.get(1)?,
                heading_path: json_column(r, 2)?,
                page: r.get(3)?,
                text: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub fn card(&self, content_id: i64) -> Result<Option<Card>> {
        Ok(self
            .conn
            .query_row(
                "SELECT title, what, outline, key_terms FROM cards WHERE content_id = ?1",
                [content_id],
                |r| {
                    Ok(Card {
                        title: r.get(0)?,
                        what: r.get(1)?,
                        outline: json_column(r, 2)?,
                        key_terms: json_column(r, 3)?,
                    })
                },
            )
            .optional()?)
    }

    /// The lanes' coverage of the indexed documents: (subject lane, by card
    /// vectors; topic lane, by chunk vectors). The stale passages are found
    /// through their fingerprints' index, as ranges either side of the
    /// current one (`IS NOT`, or the three terms ORed, read every passage).
    pub fn coverage(&self, chunk_fp: &str, card_fp: &str) -> Result<(Coverage, Coverage)> {
        let (indexed, stale_cards, stale_chunks): (i64, i64, i64) = self.conn.query_row(
            "SELECT COUNT(*),
                    COALESCE(SUM(NOT EXISTS (SELECT 1 FROM cards d
                        WHERE d.content_id = o.content_id AND d.embedded_with IS ?2)), 0),
                    COALESCE(SUM(o.content_id IN (
                        SELECT content_id FROM chunks WHERE embedded_with IS NULL
                        UNION ALL SELECT content_id FROM chunks WHERE embedded_with < ?1
                        UNION ALL SELECT content_id FROM chunks WHERE embedded_with > ?1)), 0)
             FROM documents o WHERE o.content_id IS NOT NULL",
            params![chunk_fp, card_fp],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let of = |stale: i64| Coverage {
            indexed: indexed as usize,
            stale: stale as usize,
        };
        Ok((of(stale_cards), of(stale_chunks)))
    }

    /// Contents with any chunk or card not embedded under the given
    /// fingerprints (or with no vectors at all).
    pub fn stale_contents(&self, chunk_fp: &str, card_fp: &str) -> Result<Vec<StaleContent>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id, c.extracted, c.truncated_at_chunk,
                    EXISTS (SELECT 1 FROM chunks k WHERE k.content_id = c.id AND k.embedded_with IS NOT ?1),
                    NOT EXISTS (SELECT 1 FROM cards d WHERE d.content_id = c.id AND d.embedded_with IS ?2)
             FROM contents c ORDER BY c.id",
        )?;
        let rows = stmt.query_map(params![chunk_fp, card_fp], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get(3)?,
                r.get(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json, truncated, chunks_stale, card_stale): (
                i64,
                String,
                Option<i64>,
                bool,
                bool,
            ) = row?;
            if !chunks_stale && !card_stale {
                continue;
            }
            let extracted = serde_json::from_str(&json)
                .map_err(|e| Error::Corrupt(format!("content {id}: {e}")))?;
            out.push(StaleContent {
                id,
                extracted,
                truncated_at_chunk: truncated.map(|t| t as usize),
                chunks_stale,
                card_stale,
            });
        }
        Ok(out)
    }

    /// [`SqliteStore::content_by_hash`] on a given connection, or inside a write
    /// transaction (which derefs to one).
    pub(super) fn content_id_in(conn: &rusqlite::Connection, hash: &str) -> Result<Option<i64>> {
        Ok(conn
            .query_row("SELECT id FROM contents WHERE hash = ?1", [hash], |r| {
                r.get(0)
            })
            .optional()?)
    }

    pub(super) fn insert_content(
        tx: &Transaction<'_>,
        hash: &str,
        extracted: &Extracted,
        truncated_at_chunk: Option<usize>,
    ) -> Result<i64> {
        let json = serde_json::to_string(extracted).map_err(|e| Error::Corrupt(e.to_string()))?;
        Ok(tx.query_row(
            "INSERT INTO contents (hash, extracted, chars, truncated_at_chunk, reader) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
            params![hash, json, extracted.char_count() as i64, truncated_at_chunk.map(|t| t as i64), extracted.reader.as_str()],
            |r| r.get(0),
        )?)
    }

    /// Replaces every chunk of a content, with its vectors.
    pub(super) fn write_chunks(
        tx: &Transaction<'_>,
        content_id: i64,
        chunks: &[NewChunk],
        vectors: &[Vec<f32>],
        fingerprint: &str,
    ) -> Result<()> {
        // In release builds too: a zip over unequal lengths would store
        // chunks without vectors, which no lane could ever find.
        if chunks.len() != vectors.len() {
            return Err(crate::Error::Embedding(format!(
                "{} vectors came back for {} chunks",
                vectors.len(),
                chunks.len()
            )));
        }
        SqliteStore::delete_chunks(tx, content_id)?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO chunks (content_id, seq, heading_path, section, start, end, page, text, embedded_with, language)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
        )?;
        let mut insert_vec = tx.prepare_cached(
            "INSERT INTO chunk_vectors (chunk_id, embedding, fingerprint) VALUES (?1, ?2, ?3)",
        )?;
        let mut insert_signs = tx.prepare_cached(
            "INSERT INTO chunk_signs (chunk_id, fingerprint, bits) VALUES (?1, ?3, vec_quantize_binary(?2))",
        )?;
        for (seq, (c, v)) in chunks.iter().zip(vectors).enumerate() {
            let path = serde_json::to_string(&c.heading_path)
                .map_err(|e| Error::Corrupt(e.to_string()))?;
            let id: i64 = insert.query_row(
                params![
                    content_id,
                    seq as i64,
                    path,
                    c.section as i64,
                    c.start as i64,
                    c.end as i64,
                    c.page,
                    c.text,
                    fingerprint,
                    super::languages::code_of(&c.text)
                ],
                |r| r.get(0),
            )?;
            insert_vec.execute(params![id, vector_blob(v), fingerprint])?;
            insert_signs.execute(params![id, vector_blob(v), fingerprint])?;
        }
        SqliteStore::settle_content_language(tx, content_id)
    }

    /// Replaces the card of a content, with its vector.
    pub(super) fn write_card(
        tx: &Transaction<'_>,
        content_id: i64,
        card: &Card,
        vector: &[f32],
        fingerprint: &str,
    ) -> Result<()> {
        let json =
            |v: &Vec<String>| serde_json::to_string(v).map_err(|e| Error::Corrupt(e.to_string()));
        tx.execute(
            "INSERT OR REPLACE INTO cards (content_id, title, what, outline, key_terms, text, embedded_with)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![content_id, card.title, card.what, json(&card.outline)?, json(&card.key_terms)?, card.text(), fingerprint],
        )?;
        tx.execute(
            "DELETE FROM card_vectors WHERE content_id = ?1",
            [content_id],
        )?;
        tx.execute(
            "INSERT INTO card_vectors (content_id, embedding, fingerprint) VALUES (?1, ?2, ?3)",
            params![content_id, vector_blob(vector), fingerprint],
        )?;
        Ok(())
    }

    /// Deletes a content's chunks and their vectors (their sign bits go with
    /// them, by cascade). vec0 answers `chunk_id IN (SELECT …)` with a scan
    /// of every vector in the library, sorted: that made each document's
    /// write cost grow with the library (a 1M-chunk build fell to 320
    /// chunks/s), so each vector is deleted by its own id.
    fn delete_chunks(tx: &Transaction<'_>, content_id: i64) -> Result<()> {
        let ids = tx
            .prepare_cached("SELECT id FROM chunks WHERE content_id = ?1")?
            .query_map([content_id], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut delete = tx.prepare_cached("DELETE FROM chunk_vectors WHERE chunk_id = ?1")?;
        for id in ids {
            delete.execute([id])?;
        }
        tx.execute("DELETE FROM chunks WHERE content_id = ?1", [content_id])?;
        Ok(())
    }

    /// Deletes a content and everything hanging off it, if no document points
    /// at it any more.
    pub(super) fn collect_garbage(tx: &Transaction<'_>, content_id: i64) -> Result<bool> {
        let used: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM documents WHERE content_id = ?1)",
            [content_id],
            |r| r.get(0),
        )?;
        if used {
            return Ok(false);
        }
        SqliteStore::delete_chunks(tx, content_id)?;
        tx.execute(
            "DELETE FROM card_vectors WHERE content_id = ?1",
            [content_id],
        )?;
        tx.execute("DELETE FROM cards WHERE content_id = ?1", [content_id])?;
        tx.execute("DELETE FROM contents WHERE id = ?1", [content_id])?;
        Ok(true)
    }

    /// Row counts, for `carrel doctor` and tests: (documents, contents, chunks,
    /// chunk vectors, cards, card vectors).
    pub fn counts(&self) -> Result<[i64; 6]> {
        let q = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        Ok([
            q("SELECT count(*) FROM documents")?,
            q("SELECT count(*) FROM contents")?,
            q("SELECT count(*) FROM chunks")?,
            q("SELECT count(*) FROM chunk_vectors")?,
            q("SELECT count(*) FROM cards")?,
            q("SELECT count(*) FROM card_vectors")?,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{Extracted, Section};

    /// Regression: a `debug_assert` guarded this, so a release build would
    /// have stored chunks that no vector search could reach.
    #[test]
    fn chunks_and_vectors_of_unequal_length_are_refused_in_every_build() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(&dir.path().join("library.sqlite3")).unwrap();
        let tx = store.conn.transaction().unwrap();
        let doc = Extracted {
            title: "t".into(),
            sections: vec![Section {
                heading_path: vec![],
                text: "abc".into(),
                page: None,
            }],
            ..Default::default()
        };
        let id = SqliteStore::insert_content(&tx, "hash", &doc, None).unwrap();
        let chunk = NewChunk {
            heading_path: vec![],
            section: 0,
            start: 0,
            end: 3,
            page: None,
            text: "abc".into(),
        };
        let err = SqliteStore::write_chunks(&tx, id, &[chunk], &[], "fp").unwrap_err();
        assert!(
            err.to_string().contains("0 vectors came back for 1 chunks"),
            "{err}"
        );
    }
}
