//! Writing into a PostgreSQL library, the same two writes as on SQLite and
//! with the same outcomes, made safe for many writers at once: a body is
//! stored once however many writers race for it (its hash is unique, and
//! the loser points at the winner's row: "unchanged", never an error), a
//! content is locked while a row is pointed at it, so garbage collection
//! never deletes what another writer is pointing at, and writers of one
//! source take turns.

use pgvector::Vector;
use postgres::Transaction;
use postgres::types::ToSql;

use super::words::passage_words;
use super::{Failed, PgStore};
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::Extracted;
use crate::models::Fingerprints;
use crate::store::languages::{code_of, settle};
use crate::store::{ContentToWrite, Holding, NewChunk, NewDocument, Reembedded, Written, now};

impl PgStore {
    /// One document, one transaction: its new content (if any), its row,
    /// and the garbage collection of the content it no longer points at.
    /// The fault points keep ingest's names, which the crash tests set.
    pub fn write_document(
        &self,
        doc: &NewDocument<'_>,
        holding: Holding<'_>,
        fp: &Fingerprints,
    ) -> Result<Written> {
        let mut client = self.client();
        let mut tx = client.transaction().map_err(|e| self.failed(e))?;
        let written = self
            .write_in(&mut tx, doc, holding, fp)
            .map_err(|e| self.failed_or(e))?;
        fail::fail_point!("ingest::before_commit", |_| crate::fault::die());
        tx.commit().map_err(|e| self.failed(e))?;
        fail::fail_point!("ingest::after_commit", |_| crate::fault::die());
        Ok(written)
    }

    fn write_in(
        &self,
        tx: &mut Transaction<'_>,
        doc: &NewDocument<'_>,
        holding: Holding<'_>,
        fp: &Fingerprints,
    ) -> std::result::Result<Written, Failed> {
        // Writers of one source take turns, so what this one reads of the
        // row is what it writes over.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&doc.source])?;
        let (content_id, code, reason) = match holding {
            Holding::Stored { content_id } => {
                let held = tx.query_opt(
                    "SELECT id FROM contents WHERE id = $1 FOR KEY SHARE",
                    &[&content_id],
                )?;
                if held.is_none() {
                    return Err(Failed::Carrel(Error::Corrupt(format!(
                        "content {content_id} vanished mid-batch"
                    ))));
                }
                (Some(content_id), None, None)
            }
            Holding::New(body) => (Some(self.store_content(tx, &body, fp)?), None, None),
            Holding::Broken(r) => (None, Some(r.code()), Some(r.to_string())),
        };
        let before: Option<i64> = tx
            .query_opt(
                "SELECT content_id FROM documents WHERE source = $1",
                &[&doc.source],
            )?
            .and_then(|r| r.get(0));
        let state = if content_id.is_some() {
            "indexed"
        } else {
            "broken"
        };
        let t = now();
        let id: i64 = tx
            .query_one(
                "INSERT INTO documents (source, kind, title, bytes, mtime_ns, content_id, state, broken_code,
                    broken_reason, added_at, synced_at, etag, last_modified, watch_id, written_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12, $13, $14)
                 ON CONFLICT (source) DO UPDATE SET kind = excluded.kind, title = excluded.title,
                    bytes = excluded.bytes, mtime_ns = excluded.mtime_ns, content_id = excluded.content_id,
                    state = excluded.state, broken_code = excluded.broken_code,
                    broken_reason = excluded.broken_reason, synced_at = excluded.synced_at,
                    etag = excluded.etag, last_modified = excluded.last_modified
                 RETURNING id",
                &[
                    &doc.source,
                    &doc.kind,
                    &doc.title,
                    &(doc.bytes as i64),
                    &doc.mtime_ns,
                    &content_id,
                    &state,
                    &code,
                    &reason,
                    &t,
                    &doc.validators.etag,
                    &doc.validators.last_modified,
                    &doc.watch,
                    &self.writer,
                ],
            )?
            .get(0);
        if let Some(old) = before.filter(|old| Some(*old) != content_id) {
            collect_garbage(tx, old)?;
        }
        Ok(Written {
            id,
            unchanged: content_id.is_some() && before == content_id,
        })
    }

    /// Stores a new body with its chunks, card and their vectors, or finds
    /// the one another writer stored first; its id, locked against garbage
    /// collection until this transaction ends.
    fn store_content(
        &self,
        tx: &mut Transaction<'_>,
        c: &ContentToWrite<'_>,
        fp: &Fingerprints,
    ) -> std::result::Result<i64, Failed> {
        if c.chunks.len() != c.chunk_vectors.len() {
            return Err(Failed::Carrel(Error::Embedding(format!(
                "{} vectors came back for {} chunks",
                c.chunk_vectors.len(),
                c.chunks.len()
            ))));
        }
        let card_vector = c.card_vector.ok_or_else(|| {
            Failed::Carrel(Error::Embedding("no vector came back for the card".into()))
        })?;
        // The hash is unique: of two writers of one body, the second waits
        // for the first's commit and then inserts nothing.
        let inserted = self.insert_content_row(
            tx,
            (c.hash, c.extracted, c.truncated_at_chunk),
            c.chunks,
            "ON CONFLICT (hash) DO NOTHING",
        )?;
        let Some(content_id) = inserted else {
            let found = tx.query_opt(
                "SELECT id FROM contents WHERE hash = $1 FOR KEY SHARE",
                &[&c.hash],
            )?;
            return found.map(|r| r.get(0)).ok_or_else(|| {
                Failed::Carrel(Error::Corrupt(format!(
                    "content {} was stored and removed by another writer mid-write; add it again",
                    c.hash
                )))
            });
        };
        insert_chunks(tx, content_id, c.chunks, c.chunk_vectors, &fp.chunk)?;
        put_card(tx, content_id, c.card, card_vector, &fp.card)?;
        Ok(content_id)
    }

    /// Inserts a body's row (`conflict`: what a second row of its hash
    /// does), its language settled from `chunks`; its id, none when the
    /// conflict clause inserted nothing.
    pub(super) fn insert_content_row(
        &self,
        tx: &mut Transaction<'_>,
        (hash, extracted, truncated_at_chunk): (&str, &Extracted, Option<usize>),
        chunks: &[NewChunk],
        conflict: &str,
    ) -> std::result::Result<Option<i64>, Failed> {
        let json = serde_json::to_string(extracted)
            .map_err(|e| Failed::Carrel(Error::Corrupt(e.to_string())))?;
        let (language, _) = languages_of(chunks);
        let row = tx.query_opt(
            &format!(
                "INSERT INTO contents (hash, extracted, chars, truncated_at_chunk, reader, language, written_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) {conflict} RETURNING id"
            ),
            &[
                &hash,
                &json,
                &(extracted.char_count() as i64),
                &truncated_at_chunk.map(|t| t as i64),
                &extracted.reader.as_str(),
                &language,
                &self.writer,
            ],
        )?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Replaces a stale content's chunks and card with the ones made again,
    /// in one transaction.
    pub fn write_reembedded(&self, r: Reembedded<'_>, fp: &Fingerprints) -> Result<()> {
        self.in_transaction(|tx| {
            if let Some((chunks, vectors, truncated_at_chunk)) = r.chunks {
                if chunks.len() != vectors.len() {
                    return Err(Failed::Carrel(Error::Embedding(format!(
                        "{} vectors came back for {} chunks",
                        vectors.len(),
                        chunks.len()
                    ))));
                }
                tx.execute("DELETE FROM chunks WHERE content_id = $1", &[&r.content_id])?;
                let language = insert_chunks(tx, r.content_id, chunks, vectors, &fp.chunk)?;
                tx.execute(
                    "UPDATE contents SET truncated_at_chunk = $2, language = $3 WHERE id = $1",
                    &[
                        &r.content_id,
                        &truncated_at_chunk.map(|t| t as i64),
                        &language,
                    ],
                )?;
            }
            if let Some((card, vector)) = r.card {
                put_card(tx, r.content_id, card, vector, &fp.card)?;
            }
            Ok(())
        })
    }
}

/// Deletes a content (its chunks and card go with it) if no document points
/// at it any more. The row is locked first: a writer pointing a document at
/// it holds a key-share lock until it commits, so this waits, then sees
/// that document.
pub(super) fn collect_garbage(
    tx: &mut Transaction<'_>,
    content_id: i64,
) -> std::result::Result<bool, Failed> {
    tx.execute(
        "SELECT id FROM contents WHERE id = $1 FOR UPDATE",
        &[&content_id],
    )?;
    let used: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM documents WHERE content_id = $1)",
            &[&content_id],
        )?
        .get(0);
    if used {
        return Ok(false);
    }
    tx.execute("DELETE FROM contents WHERE id = $1", &[&content_id])?;
    Ok(true)
}

/// Each passage's settled language and the content's ([`settle`]).
pub(super) fn languages_of(chunks: &[NewChunk]) -> (&'static str, Vec<&'static str>) {
    let own: Vec<(&'static str, usize)> = chunks
        .iter()
        .map(|k| (code_of(&k.text), k.text.chars().count()))
        .collect();
    settle(&own)
}

/// The passages one `INSERT` writes. Each statement fires the library's
/// count triggers once (`chunk_totals`, `language_totals`) and is one
/// round trip, so a body's passages go in a few statements, not one each.
const PASSAGES_PER_INSERT: usize = 200;

/// The parameters of one passage's row, after the two every row shares
/// (the content and the fingerprint).
const PASSAGE_PARAMETERS: usize = 11;

/// Inserts a content's chunks with their vectors and settled languages;
/// the content's language.
pub(super) fn insert_chunks(
    tx: &mut Transaction<'_>,
    content_id: i64,
    chunks: &[NewChunk],
    vectors: &[Vec<f32>],
    fingerprint: &str,
) -> std::result::Result<&'static str, Failed> {
    let (language, codes) = languages_of(chunks);
    let paths = chunks
        .iter()
        .map(|k| serde_json::to_string(&k.heading_path))
        .collect::<serde_json::Result<Vec<String>>>()
        .map_err(|e| Failed::Carrel(Error::Corrupt(e.to_string())))?;
    let passages: Vec<(&str, &str)> = paths
        .iter()
        .zip(chunks)
        .map(|(path, k)| (path.as_str(), k.text.as_str()))
        .collect();
    let words = passage_words(&passages).map_err(Failed::Carrel)?;
    let rows: Vec<PassageRow> = chunks
        .iter()
        .zip(vectors)
        .enumerate()
        .map(|(seq, (k, v))| PassageRow {
            seq: seq as i32,
            section: k.section as i32,
            start: k.start as i32,
            end: k.end as i32,
            page: k.page.map(|p| p as i32),
            vector: Vector::from(v.clone()),
        })
        .collect();
    let mut at = 0;
    for group in rows.chunks(PASSAGES_PER_INSERT) {
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&content_id, &fingerprint];
        for (i, row) in group.iter().enumerate() {
            let (k, path, w) = (&chunks[at + i], &paths[at + i], &words[at + i]);
            params.extend([
                &row.seq as &(dyn ToSql + Sync),
                path,
                &row.section,
                &row.start,
                &row.end,
                &row.page,
                &k.text,
                &codes[at + i],
                &row.vector,
                &w.vector,
                &w.tokens,
            ]);
        }
        tx.execute(&insert_passages_sql(group.len()), &params)?;
        at += group.len();
    }
    Ok(language)
}

/// A passage's own values that are not borrowed from it.
struct PassageRow {
    seq: i32,
    section: i32,
    start: i32,
    end: i32,
    page: Option<i32>,
    vector: Vector,
}

/// The `INSERT` of `rows` passages of one content: `$1` the content, `$2`
/// the fingerprint, then [`PASSAGE_PARAMETERS`] for each passage.
fn insert_passages_sql(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|r| {
            let p = |i: usize| 3 + r * PASSAGE_PARAMETERS + i;
            format!(
                "($1, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, $2, ${}::text::tsvector, ${})",
                p(0),
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6),
                p(7),
                p(8),
                p(9),
                p(10)
            )
        })
        .collect();
    format!(
        "INSERT INTO chunks (content_id, seq, heading_path, section, start_at, end_at, page, text,
            language, embedding, fingerprint, words, tokens)
         VALUES {}",
        values.join(", ")
    )
}

/// Writes (or replaces) a content's card with its vector.
pub(super) fn put_card(
    tx: &mut Transaction<'_>,
    content_id: i64,
    card: &Card,
    vector: &[f32],
    fingerprint: &str,
) -> std::result::Result<(), Failed> {
    let json = |v: &Vec<String>| {
        serde_json::to_string(v).map_err(|e| Failed::Carrel(Error::Corrupt(e.to_string())))
    };
    tx.execute(
        "INSERT INTO cards (content_id, title, what, outline, key_terms, text, embedding, fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (content_id) DO UPDATE SET title = excluded.title, what = excluded.what,
            outline = excluded.outline, key_terms = excluded.key_terms, text = excluded.text,
            embedding = excluded.embedding, fingerprint = excluded.fingerprint",
        &[
            &content_id,
            &card.title,
            &card.what,
            &json(&card.outline)?,
            &json(&card.key_terms)?,
            &card.text(),
            &Vector::from(vector.to_vec()),
            &fingerprint,
        ],
    )?;
    Ok(())
}
