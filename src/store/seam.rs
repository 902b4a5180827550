//! The one seam between a library and its backend: [`Store`], over the
//! SQLite store (the default; `store/*.rs`) and the PostgreSQL one
//! (`store/pg/`). Ingest, the lanes, answers, watches and every surface
//! call these methods and name no backend (`tests/architecture.rs`); each
//! method is the backend's own, dispatched here and nowhere else.

use std::path::Path;

use super::copy::{StoredContent, StoredDocument, StoredToken};
use super::keywords::Vocabulary;
use super::pg::PgStore;
use super::signs::Search;
use super::*;
use crate::card::Card;
use crate::error::Result;
use crate::extract::Extracted;
use crate::kb::{Identity, ReadToken, TokenDigest, TokenInfo};
use crate::language::Language;
use crate::models::{EmbedderKind, Fingerprints};
use crate::score::Cosine;

/// A library's rows, on one of two backends.
pub enum Store {
    Sqlite(SqliteStore),
    Pg(PgStore),
}

impl Store {
    /// Opens (creating if needed) the SQLite library file at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        Ok(Store::Sqlite(SqliteStore::open(path)?))
    }

    /// Connects to the PostgreSQL library at `url`, writing as `writer`.
    pub fn open_postgres(url: &str, writer: &str) -> Result<Store> {
        Ok(Store::Pg(PgStore::open(url, writer)?))
    }
}

/// Each method of the seam, dispatched to the backend that holds the
/// library: `reading` methods take the store shared, `writing` ones take it
/// whole (SQLite's writes hold its one connection's transaction).
macro_rules! seam {
    (
        reading { $(fn $r:ident(&self $(, $ra:ident: $rt:ty)*) -> $rr:ty;)* }
        writing { $(fn $w:ident(&mut self $(, $wa:ident: $wt:ty)*) -> $wr:ty;)* }
    ) => {
        impl Store {
            $(
                pub fn $r(&self $(, $ra: $rt)*) -> $rr {
                    match self {
                        Store::Sqlite(s) => s.$r($($ra),*),
                        Store::Pg(p) => p.$r($($ra),*),
                    }
                }
            )*
            $(
                pub fn $w(&mut self $(, $wa: $wt)*) -> $wr {
                    match self {
                        Store::Sqlite(s) => s.$w($($wa),*),
                        Store::Pg(p) => p.$w($($wa),*),
                    }
                }
            )*
        }
    };
}

seam! {
    reading {
    fn nearest_cards_exact(&self, query_vec: &[f32], k: usize, fingerprint: &str) -> Result<Vec<NearCard>>;
    fn content_ids(&self) -> Result<Vec<i64>>;
    fn stored_content(&self, id: i64) -> Result<StoredContent>;
    fn stored_documents(&self) -> Result<Vec<StoredDocument>>;
    fn stored_tokens(&self) -> Result<Vec<StoredToken>>;
    fn locations(&self, content_id: i64) -> Result<Vec<Location>>;
    fn nearest_cards(&self, query_vec: &[f32], k: usize, fingerprint: &str) -> Result<Vec<NearCard>>;
    fn locations_of(&self, contents: &[i64]) -> Result<ById<Vec<Location>>>;
    fn passage(&self, chunk: i64) -> Result<Option<Passage>>;
    fn passages_with_locations(&self, chunks: &[i64]) -> Result<ById<(Passage, Vec<Location>)>>;
    fn passages(&self, chunks: &[i64]) -> Result<ById<Passage>>;
    fn chunk_content(&self, chunk_id: i64) -> Result<Option<i64>>;
    fn chunk_contents(&self, chunks: &[i64]) -> Result<ById<i64>>;
    fn keyword_chunks(&self, text: &str, k: usize) -> Result<Vec<i64>>;
    fn schema_version(&self) -> Result<i64>;
    fn nearest_chunks(&self, query: &[f32], k: usize, fingerprint: &str) -> Result<(Vec<(i64, f32)>, Search)>;
    fn topic_candidates(&self, ask: &TopicAsk<'_>) -> Result<TopicCandidates>;
    fn nearest_chunks_exact(&self, query: &[f32], k: usize, fingerprint: &str) -> Result<Vec<(i64, f32)>>;
    fn embedder(&self) -> Result<EmbedderKind>;
    fn set_embedder(&self, kind: EmbedderKind) -> Result<()>;
    fn touch(&self, id: i64) -> Result<()>;
    fn add_turn(&self, message: &str, answer: Option<&str>, error: Option<&str>) -> Result<i64>;
    fn turns(&self, limit: usize) -> Result<Vec<StoredTurn>>;
    fn clear_turns(&self) -> Result<usize>;
    fn content_by_hash(&self, hash: &str) -> Result<Option<i64>>;
    fn content_hash(&self, content_id: i64) -> Result<String>;
    fn extracted(&self, content_id: i64) -> Result<Extracted>;
    fn chunk_count(&self, content_id: i64) -> Result<usize>;
    fn chunk_text(&self, chunk_id: i64) -> Result<Option<(i64, String)>>;
    fn chunks_with_cosines(&self, content_id: i64, query: &[f32], fingerprint: &str) -> Result<Vec<(ChunkRow, Option<Cosine>)>>;
    fn chunks(&self, content_id: i64) -> Result<Vec<ChunkRow>>;
    fn card(&self, content_id: i64) -> Result<Option<Card>>;
    fn coverage(&self, chunk_fp: &str, card_fp: &str) -> Result<(Coverage, Coverage)>;
    fn stale_contents(&self, chunk_fp: &str, card_fp: &str) -> Result<Vec<StaleContent>>;
    fn counts(&self) -> Result<[i64; 6]>;
    fn document_count(&self) -> Result<i64>;
    fn density(&self) -> Result<Vec<Density>>;
    fn stamp(&self, source: &str) -> Result<Option<SourceStamp>>;
    fn list(&self, chunk_fp: Option<&str>, card_fp: Option<&str>) -> Result<Vec<DocumentRow>>;
    fn document(&self, id: i64, chunk_fp: Option<&str>, card_fp: Option<&str>) -> Result<DocumentRow>;
    fn document_content(&self, id: i64) -> Result<Option<i64>>;
    fn foreign_source_records(&self) -> Result<Vec<(String, String)>>;
    fn foreign_source_record(&self, name: &str) -> Result<Option<String>>;
    fn put_foreign_source_record(&self, name: &str, record: &str) -> Result<()>;
    fn remove_foreign_source_record(&self, name: &str) -> Result<bool>;
    fn identity(&self) -> Result<Identity>;
    fn set_identity(&self, identity: &Identity) -> Result<()>;
    fn add_read_token(&self, token: &ReadToken, label: &str) -> Result<TokenInfo>;
    fn read_tokens(&self) -> Result<Vec<TokenInfo>>;
    fn grants(&self, digest: &TokenDigest) -> Result<bool>;
    fn revoke_read_token(&self, id: i64) -> Result<bool>;
    fn vocabulary(&self, text: &str) -> Result<Vocabulary>;
    fn phrase_chunks(&self, line: &str, k: usize) -> Result<Vec<i64>>;
    fn languages(&self) -> Result<Vec<Language>>;
    fn prune_log(&self, keep: Retention, now: i64) -> Result<usize>;
    fn read_log(&self, limit: usize) -> Result<Vec<LogEntry>>;
    fn vec_version(&self) -> Result<String>;
    fn held_by(&self) -> Result<Option<String>>;
    fn orphans(&self) -> Result<Vec<(&'static str, i64)>>;
    fn data_version(&self) -> Result<i64>;
    fn integrity_check(&self) -> Result<String>;
    fn add_watch(&self, w: &NewWatch) -> Result<(i64, bool)>;
    fn watches(&self) -> Result<Vec<Watch>>;
    fn record_sync(&self, id: i64, error: Option<&str>) -> Result<()>;
    fn documents_of_watch(&self, id: i64) -> Result<Vec<(i64, String, Option<i64>)>>;
    fn document_watch(&self, id: i64) -> Result<Option<i64>>;
    }
    writing {
    fn defer_search_indexes(&mut self) -> Result<()>;
    fn build_search_indexes(&mut self) -> Result<()>;
    fn import_content(&mut self, c: &StoredContent) -> Result<i64>;
    fn import_document(&mut self, d: &StoredDocument, content: Option<i64>, watch: Option<i64>) -> Result<()>;
    fn import_watch(&mut self, w: &Watch) -> Result<i64>;
    fn import_token(&mut self, t: &StoredToken) -> Result<()>;
    fn import_turn(&mut self, t: &StoredTurn) -> Result<()>;
    fn write_document(&mut self, doc: &NewDocument<'_>, holding: Holding<'_>, fp: &Fingerprints) -> Result<Written>;
    fn remove_document(&mut self, id: i64) -> Result<()>;
    fn append_log(&mut self, rows: &[LogEntry]) -> Result<()>;
    fn remove_watch(&mut self, id: i64) -> Result<()>;
    fn move_document(&mut self, keep: i64, fresh: i64) -> Result<()>;
    fn write_reembedded(&mut self, r: Reembedded<'_>, fp: &Fingerprints) -> Result<()>;
    }
}
