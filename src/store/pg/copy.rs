//! A PostgreSQL library's side of `carrel kb copy` (`store/copy.rs`): every
//! row read out as it is stored, and rows copied in as they were.

use pgvector::Vector;

use super::{Failed, PgStore};
use crate::error::{Error, Result};
use crate::store::copy::{StoredContent, StoredDocument, StoredToken};
use crate::store::{NewChunk, StoredTurn, Watch};

/// The search indexes, each made if it is missing: the chunks' and cards'
/// HNSW graphs and the chunks' words. A copy into an empty library drops
/// them and builds each once at its end ([`PgStore::defer_search_indexes`]),
/// rather than inserting every row into each; opening a library makes any
/// that a copy killed midway, or a migration, left missing.
///
/// The passages' graph is wider than pgvector's default (m 16,
/// ef_construction 64): at three million synthetic passages the default
/// found 0.939 of the exact ten nearest at pgvector's most `ef_search`, the
/// issue's goal 0.98. The cards' graph keeps the default, which found 0.996
/// of the nearest cards at 300k.
pub(super) const SEARCH_INDEXES: &str = "
    CREATE INDEX IF NOT EXISTS chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)
        WITH (m = 24, ef_construction = 128);
    CREATE INDEX IF NOT EXISTS chunks_words ON chunks USING gin (words);
    CREATE INDEX IF NOT EXISTS cards_embedding ON cards USING hnsw (embedding vector_cosine_ops);";

/// The memory one vector takes in pgvector's HNSW graph while it is built:
/// its 384 floats (1,544 bytes as a value), its neighbours (2 × m on the
/// lowest layer, each a pointer and a distance) and the element's own
/// fields, with room (the default graph of a million passages took 1,953
/// MB on disk; m 24 adds 16 neighbours a passage to it). A build
/// whose graph outgrows `maintenance_work_mem` goes on from disk, many
/// times slower; the fixed 2 GB this replaced held a million passages'
/// default graph and no more.
const GRAPH_BYTES_PER_VECTOR: i64 = 384 * 4 + 1536;

impl PgStore {
    /// Drops the search indexes of this (empty) library before a copy
    /// fills it; [`Self::build_search_indexes`] makes them again.
    pub fn defer_search_indexes(&mut self) -> Result<()> {
        self.client()
            .batch_execute("DROP INDEX IF EXISTS chunks_embedding, chunks_words, cards_embedding")
            .map_err(|e| self.failed(e))
    }

    /// Makes the search indexes after a copy, each in one pass over its
    /// table, and the planner's statistics of what was copied.
    pub fn build_search_indexes(&mut self) -> Result<()> {
        tracing::info!(server = %self.server, "building the search indexes");
        self.make_search_indexes()?;
        self.execute("ANALYZE chunks, cards", &[]).map(|_| ())
    }

    /// Makes any missing search index. Asked first, since making one (even
    /// one that is there) locks its table against writers.
    pub(super) fn make_search_indexes(&self) -> Result<()> {
        let held: i64 = self.one(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()
               AND indexname IN ('chunks_embedding', 'chunks_words', 'cards_embedding')",
            &[],
        )?;
        if held == 3 {
            return Ok(());
        }
        let build_kb = self.index_build_memory_kb()?;
        self.client()
            .batch_execute(&format!(
                "SET maintenance_work_mem = '{build_kb}kB'; {SEARCH_INDEXES}
                 RESET maintenance_work_mem;"
            ))
            .map_err(|e| self.failed(e))
    }

    /// The memory the index builds may take, in kB: room for the passages'
    /// graph, or the server's own setting where that is more.
    fn index_build_memory_kb(&self) -> Result<i64> {
        self.one(
            "SELECT greatest(pg_size_bytes(current_setting('maintenance_work_mem')),
                             (SELECT count(*) FROM chunks) * $1::bigint) / 1024",
            &[&GRAPH_BYTES_PER_VECTOR],
        )
    }

    /// Every body's id, in the order stored.
    pub fn content_ids(&self) -> Result<Vec<i64>> {
        Ok(self
            .rows("SELECT id FROM contents ORDER BY id", &[])?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// A body with its passages, card and vectors.
    pub fn stored_content(&self, id: i64) -> Result<StoredContent> {
        let head = self
            .row(
                "SELECT hash, truncated_at_chunk FROM contents WHERE id = $1",
                &[&id],
            )?
            .ok_or_else(|| Error::Corrupt(format!("content {id} is not there")))?;
        let mut chunks = Vec::new();
        let mut chunk_vectors = Vec::new();
        let mut chunk_fingerprint = String::new();
        for r in self.rows(
            "SELECT heading_path, section, start_at, end_at, page, text, embedding, fingerprint
             FROM chunks WHERE content_id = $1 ORDER BY seq",
            &[&id],
        )? {
            chunks.push(NewChunk {
                heading_path: serde_json::from_str(r.get(0))
                    .map_err(|e| Error::Corrupt(format!("a passage of content {id}: {e}")))?,
                section: r.get::<_, i32>(1) as usize,
                start: r.get::<_, i32>(2) as usize,
                end: r.get::<_, i32>(3) as usize,
                page: r.get::<_, Option<i32>>(4).map(|p| p as u32),
                text: r.get(5),
            });
            chunk_vectors.push(r.get::<_, Vector>(6).to_vec());
            chunk_fingerprint = r.get(7);
        }
        let card = self
            .card(id)?
            .ok_or_else(|| Error::Corrupt(format!("content {id} has no card")))?;
        let v = self
            .row(
                "SELECT embedding, fingerprint FROM cards WHERE content_id = $1",
                &[&id],
            )?
            .ok_or_else(|| Error::Corrupt(format!("content {id} has no card")))?;
        Ok(StoredContent {
            hash: head.get(0),
            extracted: self.extracted(id)?,
            truncated_at_chunk: head.get::<_, Option<i64>>(1).map(|t| t as usize),
            chunks,
            chunk_vectors,
            chunk_fingerprint,
            card,
            card_vector: v.get::<_, Vector>(0).to_vec(),
            card_fingerprint: v.get(1),
        })
    }

    /// Every document row, oldest first.
    pub fn stored_documents(&self) -> Result<Vec<StoredDocument>> {
        Ok(self
            .rows(
                "SELECT d.source, d.kind, d.title, d.bytes, d.mtime_ns, c.hash, d.broken_code,
                        d.broken_reason, d.added_at, d.synced_at, d.etag, d.last_modified, w.target, w.machine
                 FROM documents d LEFT JOIN contents c ON c.id = d.content_id
                 LEFT JOIN watches w ON w.id = d.watch_id ORDER BY d.id",
                &[],
            )?
            .iter()
            .map(|r| StoredDocument {
                source: r.get(0),
                kind: r.get(1),
                title: r.get(2),
                bytes: r.get(3),
                mtime_ns: r.get(4),
                content_hash: r.get(5),
                broken_code: r.get(6),
                broken_reason: r.get(7),
                added_at: r.get(8),
                synced_at: r.get(9),
                etag: r.get(10),
                last_modified: r.get(11),
                watch: r
                    .get::<_, Option<String>>(12)
                    .map(|t| (t, r.get::<_, Option<String>>(13))),
            })
            .collect())
    }

    /// Every read token's digest, oldest first.
    pub fn stored_tokens(&self) -> Result<Vec<StoredToken>> {
        Ok(self
            .rows(
                "SELECT sha256, label, created FROM read_tokens ORDER BY id",
                &[],
            )?
            .iter()
            .map(|r| StoredToken {
                sha256: r.get(0),
                label: r.get(1),
                created: r.get(2),
            })
            .collect())
    }

    /// Writes a body copied from another library; its id here.
    pub fn import_content(&self, c: &StoredContent) -> Result<i64> {
        self.in_transaction(|tx| {
            let id = self
                .insert_content_row(
                    tx,
                    (&c.hash, &c.extracted, c.truncated_at_chunk),
                    &c.chunks,
                    "",
                )?
                .ok_or_else(|| {
                    Failed::Carrel(Error::Corrupt(format!("body {} was not stored", c.hash)))
                })?;
            super::write::insert_chunks(tx, id, &c.chunks, &c.chunk_vectors, &c.chunk_fingerprint)?;
            super::write::put_card(tx, id, &c.card, &c.card_vector, &c.card_fingerprint)?;
            Ok(id)
        })
    }

    /// Writes a document row copied from another library, as it was.
    pub fn import_document(
        &self,
        d: &StoredDocument,
        content: Option<i64>,
        watch: Option<i64>,
    ) -> Result<()> {
        let state = if content.is_some() {
            "indexed"
        } else {
            "broken"
        };
        self.execute(
            "INSERT INTO documents (source, kind, title, bytes, mtime_ns, content_id, state, broken_code,
                broken_reason, added_at, synced_at, etag, last_modified, watch_id, written_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            &[
                &d.source,
                &d.kind,
                &d.title,
                &d.bytes,
                &d.mtime_ns,
                &content,
                &state,
                &d.broken_code,
                &d.broken_reason,
                &d.added_at,
                &d.synced_at,
                &d.etag,
                &d.last_modified,
                &watch,
                &self.writer,
            ],
        )
        .map(|_| ())
    }

    /// Writes a watch copied from another library; its id here. A watch
    /// from a library of one machine becomes this machine's.
    pub fn import_watch(&self, w: &Watch) -> Result<i64> {
        let list = |v: &[String]| serde_json::to_string(v).expect("strings serialise");
        let machine = w.machine.clone().unwrap_or_else(crate::store::machine);
        self.one(
            "INSERT INTO watches (target, kind, interval_s, include, exclude, allow_private, created_at,
                synced_at, last_error, written_by, machine)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
            &[
                &w.target,
                &w.kind.as_str(),
                &(w.interval_s as i64),
                &list(&w.include),
                &list(&w.exclude),
                &w.allow_private,
                &w.created_at,
                &w.synced_at,
                &w.last_error,
                &self.writer,
                &machine,
            ],
        )
    }

    pub fn import_token(&self, t: &StoredToken) -> Result<()> {
        self.execute(
            "INSERT INTO read_tokens (sha256, label, created) VALUES ($1, $2, $3)",
            &[&t.sha256, &t.label, &t.created],
        )
        .map(|_| ())
    }

    pub fn import_turn(&self, t: &StoredTurn) -> Result<()> {
        self.execute(
            "INSERT INTO chat_turns (asked_at, message, answer, error, written_by)
             VALUES ($1, $2, $3, $4, $5)",
            &[&t.asked_at, &t.message, &t.answer, &t.error, &self.writer],
        )
        .map(|_| ())
    }
}
