//! A library copied whole into an empty one, on either store: `carrel kb
//! copy` moves a library between SQLite and PostgreSQL. Everything a
//! library holds goes: its identity and embedder, bodies with their
//! passages, cards and vectors (with the fingerprints that made them),
//! documents with their states, times and validators, watches and what
//! each owns, read tokens (their digests), the kept chat, the retrieval
//! log and foreign sources. The keyword index and languages are made again
//! from the same text by the same rules.

use std::collections::HashMap;

use rusqlite::params;
use serde::Serialize;

use super::{NewChunk, SqliteStore, Store, StoredTurn, Watch, floats};
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::Extracted;

/// A body as stored, with everything made from it.
pub struct StoredContent {
    pub hash: String,
    pub extracted: Extracted,
    pub truncated_at_chunk: Option<usize>,
    pub chunks: Vec<NewChunk>,
    pub chunk_vectors: Vec<Vec<f32>>,
    /// The fingerprint the chunk vectors were made under (one per body: a
    /// body's chunks are always written together).
    pub chunk_fingerprint: String,
    pub card: Card,
    pub card_vector: Vec<f32>,
    pub card_fingerprint: String,
}

/// A document row as stored, its body named by hash and its watch by
/// target and machine, so both can be found again in another store.
pub struct StoredDocument {
    pub source: String,
    pub kind: Option<String>,
    pub title: String,
    pub bytes: i64,
    pub mtime_ns: Option<i64>,
    pub content_hash: Option<String>,
    pub broken_code: Option<String>,
    pub broken_reason: Option<String>,
    pub added_at: i64,
    pub synced_at: i64,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The watch that owns it: (target, machine).
    pub watch: Option<(String, Option<String>)>,
}

/// A read token as stored: its digest, never the secret.
pub struct StoredToken {
    pub sha256: String,
    pub label: String,
    pub created: i64,
}

/// What a copy moved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    pub documents: usize,
    pub contents: usize,
    pub chunks: usize,
    pub watches: usize,
    pub read_tokens: usize,
    pub chat_turns: usize,
    pub log_rows: usize,
    pub foreign_sources: usize,
}

/// Where a copy is, for a progress bar: the bodies (with their passages and
/// cards) are most of it, then the search indexes are built once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyStep {
    Bodies { done: usize, of: usize },
    Indexing,
}

impl Store {
    /// Copies everything `self` holds into `to`, which must hold nothing,
    /// telling `progress` where it is.
    pub fn copy_into(&self, to: &mut Store, progress: &mut dyn FnMut(CopyStep)) -> Result<Copied> {
        if to.document_count()? > 0 || !to.watches()?.is_empty() {
            return Err(Error::CopyTargetNotEmpty);
        }
        let mut copied = Copied::default();
        to.set_identity(&self.identity()?)?;
        to.set_embedder(self.embedder()?)?;
        let mut watch_ids = HashMap::new();
        for w in self.watches()? {
            let key = (w.target.clone(), w.machine.clone());
            watch_ids.insert(key, to.import_watch(&w)?);
            copied.watches += 1;
        }
        // The bodies go in before the search indexes are built, each once,
        // and built even when a body fails (whose failure is then the one
        // said).
        to.defer_search_indexes()?;
        let contents = self.copy_contents(to, &mut copied, progress);
        progress(CopyStep::Indexing);
        let built = to.build_search_indexes();
        let content_ids = contents?;
        built?;
        for d in self.stored_documents()? {
            let content = match &d.content_hash {
                Some(h) => Some(*content_ids.get(h).ok_or_else(|| {
                    Error::Corrupt(format!(
                        "document {} names body {h}, which is not there",
                        d.source
                    ))
                })?),
                None => None,
            };
            let watch = d.watch.as_ref().and_then(|k| watch_ids.get(k)).copied();
            to.import_document(&d, content, watch)?;
            copied.documents += 1;
        }
        for t in self.stored_tokens()? {
            to.import_token(&t)?;
            copied.read_tokens += 1;
        }
        for t in self.turns(usize::MAX >> 1)? {
            to.import_turn(&t)?;
            copied.chat_turns += 1;
        }
        let mut log = self.read_log(usize::MAX >> 1)?;
        log.reverse();
        copied.log_rows = log.len();
        to.append_log(&log)?;
        for (name, record) in self.foreign_source_records()? {
            to.put_foreign_source_record(&name, &record)?;
            copied.foreign_sources += 1;
        }
        Ok(copied)
    }

    /// Copies every body with its chunks and card; each one's id in `to`
    /// by its hash.
    fn copy_contents(
        &self,
        to: &mut Store,
        copied: &mut Copied,
        progress: &mut dyn FnMut(CopyStep),
    ) -> Result<HashMap<String, i64>> {
        let mut content_ids = HashMap::new();
        let ids = self.content_ids()?;
        for (done, id) in ids.iter().enumerate() {
            progress(CopyStep::Bodies {
                done,
                of: ids.len(),
            });
            let c = self.stored_content(*id)?;
            copied.chunks += c.chunks.len();
            content_ids.insert(c.hash.clone(), to.import_content(&c)?);
            copied.contents += 1;
        }
        Ok(content_ids)
    }
}

impl SqliteStore {
    /// Every body's id, in the order stored.
    pub fn content_ids(&self) -> Result<Vec<i64>> {
        let mut stmt = self.conn.prepare("SELECT id FROM contents ORDER BY id")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A body with its passages, card and vectors.
    pub fn stored_content(&self, id: i64) -> Result<StoredContent> {
        let (hash, truncated): (String, Option<i64>) = self.conn.query_row(
            "SELECT hash, truncated_at_chunk FROM contents WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT k.heading_path, k.section, k.start, k.end, k.page, k.text, v.embedding, v.fingerprint
             FROM chunks k JOIN chunk_vectors v ON v.chunk_id = k.id
             WHERE k.content_id = ?1 ORDER BY k.seq",
        )?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<u32>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, Vec<u8>>(6)?,
                    r.get::<_, Option<String>>(7)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let (mut chunks, mut chunk_vectors, mut chunk_fingerprint) =
            (Vec::new(), Vec::new(), String::new());
        for (path, section, start, end, page, text, blob, fp) in rows {
            chunks.push(NewChunk {
                heading_path: serde_json::from_str(&path)
                    .map_err(|e| Error::Corrupt(format!("a passage of content {id}: {e}")))?,
                section: section as usize,
                start: start as usize,
                end: end as usize,
                page,
                text,
            });
            chunk_vectors.push(floats(&blob));
            chunk_fingerprint = fp.unwrap_or_default();
        }
        let card = self
            .card(id)?
            .ok_or_else(|| Error::Corrupt(format!("content {id} has no card")))?;
        let (blob, card_fingerprint): (Vec<u8>, Option<String>) = self.conn.query_row(
            "SELECT embedding, fingerprint FROM card_vectors WHERE content_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(StoredContent {
            hash,
            extracted: self.extracted(id)?,
            truncated_at_chunk: truncated.map(|t| t as usize),
            chunks,
            chunk_vectors,
            chunk_fingerprint,
            card,
            card_vector: floats(&blob),
            card_fingerprint: card_fingerprint.unwrap_or_default(),
        })
    }

    /// Every document row, oldest first.
    pub fn stored_documents(&self) -> Result<Vec<StoredDocument>> {
        let mut stmt = self.conn.prepare(
            "SELECT d.source, d.kind, d.title, d.bytes, d.mtime_ns, c.hash, d.broken_code, d.broken_reason,
                    d.added_at, d.synced_at, d.etag, d.last_modified, w.target
             FROM documents d LEFT JOIN contents c ON c.id = d.content_id
             LEFT JOIN watches w ON w.id = d.watch_id ORDER BY d.id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(StoredDocument {
                source: r.get(0)?,
                kind: r.get(1)?,
                title: r.get(2)?,
                bytes: r.get(3)?,
                mtime_ns: r.get(4)?,
                content_hash: r.get(5)?,
                broken_code: r.get(6)?,
                broken_reason: r.get(7)?,
                added_at: r.get(8)?,
                synced_at: r.get(9)?,
                etag: r.get(10)?,
                last_modified: r.get(11)?,
                watch: r.get::<_, Option<String>>(12)?.map(|t| (t, None)),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every read token's digest, oldest first.
    pub fn stored_tokens(&self) -> Result<Vec<StoredToken>> {
        let mut stmt = self
            .conn
            .prepare("SELECT sha256, label, created FROM read_tokens ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            Ok(StoredToken {
                sha256: r.get(0)?,
                label: r.get(1)?,
                created: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Nothing to defer: SQLite's vector and keyword tables take each row
    /// as it comes.
    pub fn defer_search_indexes(&mut self) -> Result<()> {
        Ok(())
    }

    /// See [`Self::defer_search_indexes`].
    pub fn build_search_indexes(&mut self) -> Result<()> {
        Ok(())
    }

    /// Writes a body copied from another library; its id here.
    pub fn import_content(&mut self, c: &StoredContent) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let id = SqliteStore::insert_content(&tx, &c.hash, &c.extracted, c.truncated_at_chunk)?;
        SqliteStore::write_chunks(&tx, id, &c.chunks, &c.chunk_vectors, &c.chunk_fingerprint)?;
        SqliteStore::write_card(&tx, id, &c.card, &c.card_vector, &c.card_fingerprint)?;
        tx.commit()?;
        Ok(id)
    }

    /// Writes a document row copied from another library, as it was.
    pub fn import_document(
        &mut self,
        d: &StoredDocument,
        content: Option<i64>,
        watch: Option<i64>,
    ) -> Result<()> {
        let state = if content.is_some() {
            "indexed"
        } else {
            "broken"
        };
        self.conn.execute(
            "INSERT INTO documents (source, kind, title, bytes, mtime_ns, content_id, state, broken_code,
                broken_reason, added_at, synced_at, etag, last_modified, watch_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![d.source, d.kind, d.title, d.bytes, d.mtime_ns, content, state, d.broken_code,
                d.broken_reason, d.added_at, d.synced_at, d.etag, d.last_modified, watch],
        )?;
        Ok(())
    }

    /// Writes a watch copied from another library; its id here.
    pub fn import_watch(&mut self, w: &Watch) -> Result<i64> {
        let list = |v: &[String]| serde_json::to_string(v).expect("strings serialise");
        self.conn.execute(
            "INSERT INTO watches (target, kind, interval_s, include, exclude, allow_private, created_at,
                synced_at, last_error)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![w.target, w.kind.as_str(), w.interval_s as i64, list(&w.include), list(&w.exclude),
                w.allow_private, w.created_at, w.synced_at, w.last_error],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn import_token(&mut self, t: &StoredToken) -> Result<()> {
        self.conn.execute(
            "INSERT INTO read_tokens (sha256, label, created) VALUES (?1, ?2, ?3)",
            params![t.sha256, t.label, t.created],
        )?;
        Ok(())
    }

    pub fn import_turn(&mut self, t: &StoredTurn) -> Result<()> {
        self.conn.execute(
            "INSERT INTO chat_turns (asked_at, message, answer, error) VALUES (?1, ?2, ?3, ?4)",
            params![t.asked_at, t.message, t.answer, t.error],
        )?;
        Ok(())
    }
}
