//! The library file: one SQLite database with sqlite-vec. [`SqliteStore::open`]
//! registers sqlite-vec once, checks `vec_version()`, enables WAL, migrates by
//! `PRAGMA user_version` inside an IMMEDIATE transaction, and refuses a
//! database newer than this build.

mod candidates;
mod chat;
mod contents;
pub mod copy;
mod documents;
mod foreign;
pub(crate) mod fts5_words;
pub(crate) mod home;
pub(crate) mod identity;
pub mod keywords;
pub(crate) mod languages;
mod log;
pub mod pg;
mod schema;
mod seam;
pub mod signs;
pub mod synthetic;
mod watches;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Once;

use rusqlite::Connection;

pub use candidates::{
    ById, KeywordMatch, Location, NearCard, NearChunk, Passage, TopicAsk, TopicCandidates,
};
pub use chat::StoredTurn;
pub use contents::Coverage;
pub use contents::{ChunkRow, NewChunk, StaleContent};
pub use documents::{Density, DocumentRow, DocumentState, NewDocument, SourceStamp, Validators};
pub use home::{POSTGRES_FILE, ServerNote, machine, writer};
pub use log::{LogEntry, Retention};
pub use schema::SCHEMA_VERSION;
pub use seam::Store;
pub use watches::{NewWatch, Watch, WatchKind};
pub use write::{ContentToWrite, Holding, Reembedded, Written};

use crate::error::{Error, Result};

/// How much of the library file SQLite reads through a memory map: the most
/// this SQLite build allows (`SQLITE_MAX_MMAP_SIZE`, just under 2 GiB). The
/// topic lane's rescoring reads scattered vectors, each by walking its vec0
/// chunk's blob; through the map that costs no system call a page. At 1M
/// chunks (2.7 GB file; `make bench-scale`, 2026-12-02, four runs taken in
/// turn) the fetch took 68 and 85 ms p50 with 256 MB mapped, 39 and 39 ms
/// with this; the topic lane 98 and 92 ms, 51 and 38 ms. The mapped pages are the file's own, clean and shared with
/// the kernel's page cache, so they count in resident memory once read but
/// are given back under pressure like any cached file page; the scaling
/// bench reports the private part beside the peak.
pub(crate) const MMAP_SIZE: i64 = 2_147_418_112;

pub struct SqliteStore {
    pub(crate) conn: Connection,
    path: PathBuf,
    signs: signs::Slot,
    word_uses: keywords::WordUses,
}

static VEC_INIT: Once = Once::new();

pub(crate) fn register_sqlite_vec() {
    VEC_INIT.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature SQLite expects of an
        // extension entry point; auto_extension only stores the pointer.
        unsafe {
            #[allow(clippy::missing_transmute_annotations)]
            rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
        }
    });
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        register_sqlite_vec();
        let wrap = |err| Error::Database {
            path: path.to_path_buf(),
            err,
        };
        let conn = Connection::open(path).map_err(wrap)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(wrap)?;
        let vec_version: String = conn
            .query_row("SELECT vec_version()", [], |r| r.get(0))
            .map_err(|e| Error::VectorExtension(e.to_string()))?;
        tracing::debug!(%vec_version, "sqlite-vec loaded");
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(wrap)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(wrap)?;
        conn.pragma_update(None, "mmap_size", MMAP_SIZE)
            .map_err(wrap)?;
        conn.pragma_update(None, "cache_size", -65_536i64)
            .map_err(wrap)?;
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
            signs: signs::Slot::default(),
            word_uses: keywords::WordUses::default(),
        };
        schema::migrate(&mut store.conn, path)?;
        store.detect_languages()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// None: a SQLite library is its file ([`super::Store::open_dir`]).
    pub fn held_by(&self) -> Result<Option<String>> {
        Ok(None)
    }

    pub fn vec_version(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("SELECT vec_version()", [], |r| r.get(0))?)
    }

    /// Rows that point at nothing (or that nothing points at), by kind. A
    /// healthy library, crashed or not, has none: every document is written
    /// in one transaction with its content, chunks, card and vectors.
    pub fn orphans(&self) -> Result<Vec<(&'static str, i64)>> {
        const CHECKS: &[(&str, &str)] = &[
            (
                "chunks without content",
                "SELECT count(*) FROM chunks WHERE content_id NOT IN (SELECT id FROM contents)",
            ),
            (
                "chunk vectors without chunk",
                "SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)",
            ),
            (
                "cards without content",
                "SELECT count(*) FROM cards WHERE content_id NOT IN (SELECT id FROM contents)",
            ),
            (
                "card vectors without content",
                "SELECT count(*) FROM card_vectors WHERE content_id NOT IN (SELECT id FROM contents)",
            ),
            (
                "contents no document points at",
                "SELECT count(*) FROM contents WHERE id NOT IN (SELECT content_id FROM documents WHERE content_id IS NOT NULL)",
            ),
            (
                "indexed documents without content",
                "SELECT count(*) FROM documents WHERE state = 'indexed' AND content_id NOT IN (SELECT id FROM contents)",
            ),
            (
                "chunk vectors without sign bits",
                "SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT chunk_id FROM chunk_signs)",
            ),
            (
                "chunks without a vector",
                "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT chunk_id FROM chunk_vectors)",
            ),
        ];
        CHECKS
            .iter()
            .map(|(what, sql)| Ok((*what, self.conn.query_row(sql, [], |r| r.get(0))?)))
            .collect()
    }

    /// Changes whenever another connection commits (this connection's own
    /// commits leave it as it is).
    pub fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    pub fn integrity_check(&self) -> Result<String> {
        Ok(self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

/// Little-endian f32 bytes, as sqlite-vec reads a float vector.
pub(crate) fn vector_blob(v: &[f32]) -> &[u8] {
    zerocopy::IntoBytes::as_bytes(v)
}

/// A vector back from its stored blob (little-endian f32s, as sqlite-vec
/// stores them and [`vector_blob`] writes them).
pub(crate) fn floats(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Seconds since the Unix epoch, as every timestamp in the library.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
