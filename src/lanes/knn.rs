//! The topic lane's nearest chunks: one owner of how they are found.
//!
//! sqlite-vec's KNN is an exact scan, and its cost grows with the library:
//! 103 ms p50 at 100k chunks on this project's 2-core machine (`carrel-scale`).
//! Past [`QUANTIZED_FROM`] chunks the lane scans the chunks' sign bits
//! instead (`chunk_bits`: 48 bytes a chunk, compared by Hamming distance),
//! takes [`OVERSAMPLE`] times the chunks it needs, and rescores those on
//! their float vectors with the same cosine as the exact scan. What the lane
//! shows is always the exact cosine; only which chunks reach it can differ,
//! and `carrel-scale` reports how often, as recall@10 against the exact scan.

use serde::Serialize;

use crate::error::Result;
use crate::store::{Store, vector_blob};

/// Libraries with at least this many chunks (by the largest chunk id, which
/// is free to read) are searched by bits. The exact scan costs about 1 ms per
/// 1,000 chunks here, so this is where it would pass 50 ms.
pub const QUANTIZED_FROM: i64 = 50_000;

/// Chunks taken by Hamming distance per chunk kept.
pub const OVERSAMPLE: usize = 8;

/// How the nearest chunks were found, for the debug pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(tag = "search", rename_all = "snake_case")]
pub enum Search {
    /// Every chunk vector compared with the query.
    Exact,
    /// The nearest `oversample × k` by their bits, rescored exactly.
    Quantized { oversample: u32 },
}

/// The `k` chunks nearest `query` among vectors made by `fingerprint`, as
/// (chunk id, cosine distance), nearest first; and how they were found.
pub fn nearest(
    store: &Store,
    query: &[f32],
    k: usize,
    fingerprint: &str,
) -> Result<(Vec<(i64, f32)>, Search)> {
    let size: i64 = store
        .conn
        .query_row("SELECT COALESCE(MAX(id), 0) FROM chunks", [], |r| r.get(0))?;
    if size < QUANTIZED_FROM {
        return Ok((exact(store, query, k, fingerprint)?, Search::Exact));
    }
    let found = quantized(store, query, k, OVERSAMPLE, fingerprint)?;
    Ok((
        found,
        Search::Quantized {
            oversample: OVERSAMPLE as u32,
        },
    ))
}

/// Every vector compared: the reference the quantized search is measured by.
pub fn exact(store: &Store, query: &[f32], k: usize, fingerprint: &str) -> Result<Vec<(i64, f32)>> {
    let mut stmt = store.conn.prepare_cached(
        "SELECT chunk_id, distance FROM chunk_vectors
         WHERE embedding MATCH ?1 AND k = ?2 AND fingerprint = ?3 ORDER BY distance",
    )?;
    let rows = stmt.query_map(
        rusqlite::params![vector_blob(query), k as i64, fingerprint],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The `oversample × k` nearest by bits, rescored on their float vectors.
pub fn quantized(
    store: &Store,
    query: &[f32],
    k: usize,
    oversample: usize,
    fingerprint: &str,
) -> Result<Vec<(i64, f32)>> {
    let blob = vector_blob(query);
    let mut coarse = store.conn.prepare_cached(
        "SELECT chunk_id FROM chunk_bits
         WHERE embedding MATCH vec_quantize_binary(?1) AND k = ?2 AND fingerprint = ?3",
    )?;
    let ids: Vec<i64> = coarse
        .query_map(
            rusqlite::params![blob, (k * oversample) as i64, fingerprint],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut rescore = store.conn.prepare_cached(
        "SELECT vec_distance_cosine(embedding, ?2) FROM chunk_vectors WHERE chunk_id = ?1",
    )?;
    let mut found = Vec::with_capacity(ids.len());
    for id in ids {
        let d: f32 = rescore.query_row(rusqlite::params![id, blob], |r| r.get(0))?;
        found.push((id, d));
    }
    found.sort_by(|a, b| a.1.total_cmp(&b.1));
    found.truncate(k);
    Ok(found)
}
