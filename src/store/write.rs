//! The two writes ingest makes, each one transaction: a document with what
//! it holds ([`SqliteStore::write_document`]) and a stale content's new vectors
//! ([`SqliteStore::write_reembedded`]). Ingest says what to write; how rows,
//! vectors and the write lock are kept is this store's business, so the
//! pipeline names no backend.

use rusqlite::{Transaction, TransactionBehavior};

use super::{DocumentState, NewChunk, NewDocument, SqliteStore};
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::{BrokenReason, Extracted};
use crate::models::Fingerprints;

/// A body with everything made from it: its chunks and their vectors, its
/// card and the card's vector.
pub struct ContentToWrite<'a> {
    pub hash: &'a str,
    pub extracted: &'a Extracted,
    pub truncated_at_chunk: Option<usize>,
    pub chunks: &'a [NewChunk],
    pub chunk_vectors: &'a [Vec<f32>],
    pub card: &'a Card,
    /// None when the embedder sent no vector back for the card: an error,
    /// unless another writer stored this body first.
    pub card_vector: Option<&'a [f32]>,
}

/// What a written document row holds.
pub enum Holding<'a> {
    /// A content already stored.
    Stored {
        content_id: i64,
    },
    /// A body that was not stored when it was read: stored now, or pointed
    /// at when another writer stored the same body since.
    New(ContentToWrite<'a>),
    Broken(&'a BrokenReason),
}

/// The row written, and whether it already held that content (a second
/// writer of the same file finds it so: "unchanged", never an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub id: i64,
    pub unchanged: bool,
}

/// A stale content's rows made again by the embedder in use.
pub struct Reembedded<'a> {
    pub content_id: i64,
    /// Its chunks with their vectors, and where the cap cut it; none when
    /// only the card was stale.
    pub chunks: Option<(&'a [NewChunk], &'a [Vec<f32>], Option<usize>)>,
    /// Its card with the card's vector; none when only the chunks were.
    pub card: Option<(&'a Card, &'a [f32])>,
}

impl SqliteStore {
    /// One document, one transaction: its new content (if any), its row, and
    /// the garbage collection of the content it no longer points at.
    ///
    /// The transaction takes the write lock first (IMMEDIATE), so what it
    /// reads is what it writes over: a body another process stored since
    /// this one was read is pointed at, not inserted a second time. The
    /// fault points keep ingest's names, which the crash tests set.
    pub fn write_document(
        &mut self,
        doc: &NewDocument<'_>,
        holding: Holding<'_>,
        fp: &Fingerprints,
    ) -> Result<Written> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let state = match holding {
            Holding::Stored { content_id } => DocumentState::Indexed { content_id },
            Holding::Broken(reason) => DocumentState::Broken(reason),
            Holding::New(c) => DocumentState::Indexed {
                content_id: match SqliteStore::content_id_in(&tx, c.hash)? {
                    Some(id) => id,
                    None => store_content(&tx, &c, fp)?,
                },
            },
        };
        let content_id = match state {
            DocumentState::Indexed { content_id } => Some(content_id),
            DocumentState::Broken(_) => None,
        };
        let row = SqliteStore::upsert_document(&tx, doc, &state)?;
        if let Some(old) = row.dropped {
            SqliteStore::collect_garbage(&tx, old)?;
        }
        fail::fail_point!("ingest::before_commit", |_| crate::fault::die());
        tx.commit()?;
        fail::fail_point!("ingest::after_commit", |_| crate::fault::die());
        Ok(Written {
            id: row.id,
            unchanged: content_id.is_some() && row.before == content_id,
        })
    }

    /// Replaces a stale content's chunks and card with the ones made again,
    /// in one transaction.
    pub fn write_reembedded(&mut self, r: Reembedded<'_>, fp: &Fingerprints) -> Result<()> {
        let tx = self.conn.transaction()?;
        if let Some((chunks, vectors, truncated_at_chunk)) = r.chunks {
            SqliteStore::write_chunks(&tx, r.content_id, chunks, vectors, &fp.chunk)?;
            tx.execute(
                "UPDATE contents SET truncated_at_chunk = ?2 WHERE id = ?1",
                rusqlite::params![r.content_id, truncated_at_chunk.map(|t| t as i64)],
            )?;
        }
        if let Some((card, vector)) = r.card {
            SqliteStore::write_card(&tx, r.content_id, card, vector, &fp.card)?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// Stores a new body with its chunks, card and their vectors; its id.
fn store_content(tx: &Transaction<'_>, c: &ContentToWrite<'_>, fp: &Fingerprints) -> Result<i64> {
    let card_vector = c
        .card_vector
        .ok_or_else(|| Error::Embedding("no vector came back for the card".into()))?;
    let content_id = SqliteStore::insert_content(tx, c.hash, c.extracted, c.truncated_at_chunk)?;
    SqliteStore::write_chunks(tx, content_id, c.chunks, c.chunk_vectors, &fp.chunk)?;
    SqliteStore::write_card(tx, content_id, c.card, card_vector, &fp.card)?;
    Ok(content_id)
}
