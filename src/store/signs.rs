//! The topic lane's candidate fetch in a large library: one sign bit per
//! dimension of every chunk vector (sqlite-vec's `vec_quantize_binary`,
//! stored in `chunk_signs` as each vector is written), held in memory and
//! scanned by Hamming distance; of the nearest, the [`OVERSAMPLE`]× the
//! candidates asked for whose signs agree best with the query's own floats
//! are then rescored with sqlite-vec's own cosine on their stored float
//! vectors. The scores the lane sees are therefore exact; only which chunks
//! reach rescoring is approximate. Below [`SIGNS_FROM_CHUNKS`] chunks
//! the exact KNN is fast enough and is used instead (one owner:
//! [`SqliteStore::nearest_chunks`]).
//!
//! The bits in memory are read again when the library's chunks change: a
//! trigger on `chunks` (schema v8) bumps `meta.chunks_generation` on every
//! insert and delete, whichever process writes, and each search compares it
//! with the generation the bits were read at, inside one read transaction.

use std::sync::Mutex;

use rusqlite::OptionalExtension;

use super::{SqliteStore, vector_blob};
use crate::error::Result;

/// From this many chunks on, candidates come from the sign bits. Measured
/// (`make bench-scale`, release, 2 cores, 2026-12-01, vec0 chunks of 64):
/// the exact KNN of 100 chunks took 19.5 ms p50 at 10k chunks and 222 ms at
/// 100k, so about 44 ms at 20k; the sign bits' fetch (then rescoring 1,000)
/// took 9.4 ms at 100k (recall@10 of the exact KNN's chunks 1.000) and
/// 45 ms at 1M (0.976).
pub const SIGNS_FROM_CHUNKS: usize = 20_000;

/// Chunks rescored by exact cosine per candidate asked for. Measured at 1M
/// chunks (`make bench-scale`, release, 2 vCPUs, 2026-12-02, 40 Cranfield
/// queries; recall of the exact KNN's top 10 / top 100, lane fetch p50):
/// 10: 0.976 / 0.926, 42 ms; 12: 0.978 / 0.941, 51 ms; 15: 0.983 / 0.957,
/// 56 ms; 20: 0.993 / 0.971. With most of the file in the memory map
/// ([`MMAP_SIZE`](super::MMAP_SIZE)) 10, 15 and 20 fetched in 20, 28 and
/// 34 ms in one series (15 read 39–43 ms in later runs). 15 is the least
/// that reaches the goal of 0.98.
pub const OVERSAMPLE: usize = 15;

/// Chunks the Hamming pass keeps per chunk rescored; the query's floats
/// against their signs choose which of them are rescored. Against Hamming
/// distance alone (1,000 chunks straight to rescoring) this raised recall
/// of the exact top 10 from 0.976 to 1.000 at 100k chunks, and of the top
/// 100 from 0.877 to 0.979, at the same rescoring cost; 50 instead of 10
/// gained nothing at 1M (0.973 and 0.931 against 0.976 and 0.926).
pub const WIDEN: usize = 10;

/// How the topic lane found its nearest chunks: shown in the debug pane and
/// by `carrel match --explain`, and reported by the scaling bench. Either
/// way the cosines shown are sqlite-vec's exact ones; only which chunks were
/// compared differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, specta::Type)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Search {
    /// sqlite-vec's exact KNN over every vector.
    Exact,
    /// The sign bits of `of` chunk vectors compared in memory, then the
    /// `rescored` nearest of them scored by exact cosine.
    Signs { rescored: usize, of: usize },
    /// PostgreSQL's HNSW index (pgvector), walked with `ef_search`
    /// candidates; each chunk's cosine is pgvector's exact one.
    Hnsw { ef_search: usize },
}

impl Search {
    /// The sentence `carrel match --explain` shows (the debug pane renders
    /// the same value in the same words, `DebugPane.svelte`).
    pub fn describe(&self) -> String {
        match self {
            Search::Exact => "exact: every chunk vector compared".into(),
            Search::Signs { rescored, of } => format!(
                "sign bits of {of} chunk vectors compared, the nearest {rescored} scored by exact cosine"
            ),
            Search::Hnsw { ef_search } => {
                format!(
                    "HNSW index (pgvector), {ef_search} candidates walked, each scored by exact cosine"
                )
            }
        }
    }
}

/// The sign bits of one fingerprint's chunk vectors.
pub(crate) struct SignIndex {
    ids: Vec<i64>,
    /// `words` u64s per chunk, bit `d` set when dimension `d` is positive.
    bits: Vec<u64>,
    words: usize,
}

/// The index slot of a [`SqliteStore`]: what the library held at a generation of
/// its chunks, for one fingerprint. `None` until the first search.
#[derive(Default)]
pub(crate) struct Slot(Mutex<Option<Held>>);

struct Held {
    generation: i64,
    fingerprint: String,
    /// `None` while the library is smaller than the threshold the bits were
    /// judged against.
    index: Option<SignIndex>,
    signs_from: usize,
}

/// `vec_quantize_binary`'s bytes (bit `d % 8` of byte `d / 8` set when
/// dimension `d` is positive) as little-endian words, so that bit `d` is bit
/// `d % 64` of word `d / 64`. Short of a whole word, the rest is zero.
fn words(bytes: &[u8], out: &mut Vec<u64>) {
    for block in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..block.len()].copy_from_slice(block);
        out.push(u64::from_le_bytes(w));
    }
}

/// A vector's sign bits as `vec_quantize_binary` writes them into
/// `chunk_signs` (a test holds the two equal), for the query, which is
/// never stored.
fn sign_bytes(v: &[f32]) -> Vec<u8> {
    v.chunks(8)
        .map(|block| {
            block
                .iter()
                .enumerate()
                .fold(0u8, |b, (i, x)| if *x > 0.0 { b | 1 << i } else { b })
        })
        .collect()
}

impl SignIndex {
    fn read(store: &SqliteStore, fingerprint: &str) -> Result<SignIndex> {
        let mut stmt = store.conn.prepare(
            "SELECT chunk_id, bits FROM chunk_signs WHERE fingerprint = ?1 ORDER BY chunk_id",
        )?;
        let mut rows = stmt.query([fingerprint])?;
        let (mut ids, mut bits, mut width) = (Vec::new(), Vec::new(), None);
        while let Some(r) = rows.next()? {
            let b = r.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
            let w = b.len().div_ceil(8);
            if *width.get_or_insert(w) != w {
                return Err(crate::Error::Corrupt(format!(
                    "chunk_signs: {} bytes where others have {}",
                    b.len(),
                    width.unwrap_or(0) * 8
                )));
            }
            ids.push(r.get(0)?);
            words(b, &mut bits);
        }
        Ok(SignIndex {
            ids,
            bits,
            words: width.unwrap_or(0),
        })
    }

    /// The positions of the `n` chunks nearest `q` in Hamming distance
    /// (ties at the cut broken by position), in position order.
    fn hamming(&self, q: &[u64], n: usize) -> Vec<usize> {
        if self.words == 0 || q.len() != self.words {
            return Vec::new();
        }
        let dims = self.words * 64;
        let mut histogram = vec![0usize; dims + 1];
        let distances: Vec<u16> = self
            .bits
            .chunks_exact(self.words)
            .map(|b| {
                let d: u32 = b.iter().zip(q).map(|(a, b)| (a ^ b).count_ones()).sum();
                histogram[d as usize] += 1;
                d as u16
            })
            .collect();
        // The smallest distance `cut` with at least `n` chunks at or under it.
        let (mut cut, mut total) = (0, 0);
        while cut < dims && total + histogram[cut] < n {
            total += histogram[cut];
            cut += 1;
        }
        let mut at_cut = n.saturating_sub(total);
        let mut out = Vec::with_capacity(n);
        for (i, d) in distances.iter().enumerate() {
            let d = *d as usize;
            if d < cut || (d == cut && at_cut > 0) {
                if d == cut {
                    at_cut -= 1;
                }
                out.push(i);
            }
        }
        out
    }

    /// The ids of the `n` chunks nearest `query`: the [`WIDEN`]× `n`
    /// nearest in Hamming distance, then of those the `n` whose signs agree
    /// best with the query's own floats (the query is not quantized, so
    /// this orders them far closer to cosine than Hamming distance does).
    /// Ids in ascending order, which is the order the rescoring reads best.
    fn nearest(&self, query: &[f32], n: usize) -> Vec<i64> {
        let mut q = Vec::with_capacity(self.words);
        words(&sign_bytes(query), &mut q);
        let wide = self.hamming(&q, n.saturating_mul(WIDEN));
        // tables[j][b]: the sum of the query's floats at the set bits of
        // byte value b in byte j, so a chunk's agreement is one lookup a byte.
        let mut tables = vec![[0f32; 256]; self.words * 8];
        for (j, table) in tables.iter_mut().enumerate() {
            for b in 1..256usize {
                let low = b.trailing_zeros() as usize;
                table[b] = table[b & (b - 1)] + query.get(j * 8 + low).copied().unwrap_or(0.0);
            }
        }
        let mut scored: Vec<(f32, usize)> = wide
            .into_iter()
            .map(|i| {
                let chunk = &self.bits[i * self.words..(i + 1) * self.words];
                let agreement: f32 = chunk
                    .iter()
                    .enumerate()
                    .map(|(w, word)| {
                        (0..8)
                            .map(|k| tables[w * 8 + k][((word >> (8 * k)) & 0xff) as usize])
                            .sum::<f32>()
                    })
                    .sum();
                (agreement, i)
            })
            .collect();
        if scored.len() > n {
            scored.select_nth_unstable_by(n, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored.truncate(n);
        }
        let mut ids: Vec<i64> = scored.into_iter().map(|(_, i)| self.ids[i]).collect();
        ids.sort_unstable();
        ids
    }
}

impl SqliteStore {
    /// How many times the library's chunks have changed (schema v8's
    /// trigger); what is held in memory about them (the sign bits, the
    /// keyword search's common words) is read again when it moves.
    pub(super) fn chunks_generation(&self) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'chunks_generation'",
            )?
            .query_row([], |r| r.get(0))
            .optional()?
            .unwrap_or(0))
    }

    /// The `k` chunks (made by `fingerprint`) nearest `query`, nearest
    /// first, as (chunk id, sqlite-vec cosine distance); exact below
    /// [`SIGNS_FROM_CHUNKS`] chunks, through the sign bits from there on.
    pub fn nearest_chunks(
        &self,
        query: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<(Vec<(i64, f32)>, Search)> {
        self.nearest_chunks_from(query, k, fingerprint, SIGNS_FROM_CHUNKS)
    }

    fn nearest_chunks_from(
        &self,
        query: &[f32],
        k: usize,
        fingerprint: &str,
        signs_from: usize,
    ) -> Result<(Vec<(i64, f32)>, Search)> {
        // One snapshot: the generation, the bits read at it, and the
        // vectors rescored all belong to the same state of the library.
        let snapshot = self.conn.unchecked_transaction()?;
        let generation = self.chunks_generation()?;
        let mut slot = crate::fault::lock(&self.signs.0);
        let fresh = slot.as_ref().is_some_and(|h| {
            h.generation == generation && h.fingerprint == fingerprint && h.signs_from == signs_from
        });
        if !fresh {
            // Every chunk counts, whatever made its vector: cheap, and it
            // errs towards the bits, which are right at any size.
            let chunks: i64 = self
                .conn
                .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
            let index = if chunks as usize >= signs_from {
                let started = std::time::Instant::now();
                let index = SignIndex::read(self, fingerprint)?;
                tracing::debug!(
                    chunks = index.ids.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "read the chunk sign bits"
                );
                Some(index)
            } else {
                None
            };
            *slot = Some(Held {
                generation,
                fingerprint: fingerprint.to_string(),
                index,
                signs_from,
            });
        }
        let Some(index) = slot.as_ref().and_then(|h| h.index.as_ref()) else {
            drop(slot);
            return Ok((
                self.nearest_chunks_exact(query, k, fingerprint)?,
                Search::Exact,
            ));
        };
        let candidates = index.nearest(query, k * OVERSAMPLE);
        let search = Search::Signs {
            rescored: candidates.len(),
            of: index.ids.len(),
        };
        drop(slot);
        // Every id came from `chunk_signs` of this fingerprint at this
        // generation, so its vector is this fingerprint's.
        let mut point = self.conn.prepare_cached(
            "SELECT vec_distance_cosine(embedding, ?2) FROM chunk_vectors WHERE chunk_id = ?1",
        )?;
        let mut scored = Vec::with_capacity(candidates.len());
        for id in candidates {
            let d: Option<f32> = point
                .query_row(rusqlite::params![id, vector_blob(query)], |r| r.get(0))
                .optional()?;
            if let Some(d) = d {
                scored.push((id, d));
            }
        }
        snapshot.finish()?;
        scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        Ok((scored, search))
    }

    /// sqlite-vec's exact KNN: every vector of `fingerprint` compared.
    pub fn nearest_chunks_exact(
        &self,
        query: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<(i64, f32)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT chunk_id, distance FROM chunk_vectors
             WHERE embedding MATCH ?1 AND k = ?2 AND fingerprint = ?3 ORDER BY distance",
        )?;
        let rows = stmt.query_map(
            rusqlite::params![vector_blob(query), k as i64, fingerprint],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::Card;
    use crate::extract::Extracted;
    use crate::models::Fingerprints;
    use crate::store::NewChunk;
    use crate::store::synthetic::{self, Seed};

    /// A pseudo-random unit vector of 384 dimensions.
    fn unit(state: &mut u64) -> Vec<f32> {
        let v: Vec<f32> = (0..384)
            .map(|_| {
                *state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((*state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    fn chunk(text: &str) -> NewChunk {
        NewChunk {
            heading_path: vec![],
            section: 0,
            start: 0,
            end: text.len(),
            page: None,
            text: text.into(),
        }
    }

    /// 3,000 chunks around 40 centres, written by the ingest writer.
    fn library(dir: &std::path::Path, fp: &Fingerprints) -> (SqliteStore, Vec<Vec<f32>>) {
        let mut state = 7;
        let centres: Vec<Vec<f32>> = (0..40).map(|_| unit(&mut state)).collect();
        let seed = Seed {
            chunks: centres
                .iter()
                .map(|v| (chunk("a passage"), v.clone()))
                .collect(),
            cards: vec![(
                Card {
                    title: "t".into(),
                    what: "w".into(),
                    outline: vec![],
                    key_terms: vec![],
                },
                centres[0].clone(),
            )],
        };
        let mut store = SqliteStore::open(&dir.join("library.sqlite3")).unwrap();
        synthetic::grow(&mut store, &seed, 3_000, 10, 0.05, fp, &mut |_| {}).unwrap();
        (store, centres)
    }

    fn fingerprints() -> Fingerprints {
        Fingerprints {
            model: "m".into(),
            chunk: "chunk-fp".into(),
            card: "card-fp".into(),
        }
    }

    /// The bits choose which chunks are rescored; the scores are sqlite-vec's
    /// own, so where both fetches return a chunk they give it the same
    /// distance, and the exact top 10 is found.
    #[test]
    fn the_bits_find_the_exact_nearest_and_score_them_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let fp = fingerprints();
        let (store, centres) = library(dir.path(), &fp);
        let (mut found, mut asked) = (0, 0);
        for centre in &centres {
            let (fast, search) = store.nearest_chunks_from(centre, 10, &fp.chunk, 0).unwrap();
            assert!(matches!(search, Search::Signs { .. }), "{search:?}");
            let exact = store.nearest_chunks_exact(centre, 10, &fp.chunk).unwrap();
            assert_eq!(fast.len(), 10);
            for (id, d) in &exact {
                asked += 1;
                if let Some((_, fd)) = fast.iter().find(|(f, _)| f == id) {
                    found += 1;
                    assert_eq!(fd, d, "chunk {id} scored differently");
                }
            }
        }
        assert!(found * 100 >= asked * 95, "recall@10 {found}/{asked}");
        // A library under the threshold takes the exact path.
        let (_, search) = store
            .nearest_chunks_from(&centres[0], 10, &fp.chunk, 3_001)
            .unwrap();
        assert_eq!(search, Search::Exact);
    }

    /// The bits follow the library, whichever connection writes: a chunk
    /// written after they were built is found at once, and one removed is
    /// gone.
    #[test]
    fn a_chunk_written_later_is_found_at_once_and_a_removed_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let fp = fingerprints();
        let (store, _) = library(dir.path(), &fp);
        let lonely = unit(&mut 99);
        let (before, _) = store
            .nearest_chunks_from(&lonely, 10, &fp.chunk, 0)
            .unwrap();
        let mut writer = SqliteStore::open(&dir.path().join("library.sqlite3")).unwrap();
        let tx = writer.conn.transaction().unwrap();
        let content =
            SqliteStore::insert_content(&tx, "late", &Extracted::default(), None).unwrap();
        SqliteStore::write_chunks(
            &tx,
            content,
            &[chunk("late")],
            std::slice::from_ref(&lonely),
            &fp.chunk,
        )
        .unwrap();
        tx.commit().unwrap();
        let (after, search) = store
            .nearest_chunks_from(&lonely, 10, &fp.chunk, 0)
            .unwrap();
        assert!(matches!(search, Search::Signs { .. }), "{search:?}");
        let late = after[0].0;
        assert!(!before.iter().any(|(id, _)| *id == late));
        assert!(after[0].1 < 1e-5, "{after:?}");
        let tx = writer.conn.transaction().unwrap();
        SqliteStore::write_chunks(&tx, content, &[], &[], &fp.chunk).unwrap();
        tx.commit().unwrap();
        let (gone, _) = store
            .nearest_chunks_from(&lonely, 10, &fp.chunk, 0)
            .unwrap();
        assert!(!gone.iter().any(|(id, _)| *id == late), "{gone:?}");
    }

    /// sqlite-vec's bytes become words with dimension d at bit d % 64 of
    /// word d / 64, which is what the query's bits are compared in.
    #[test]
    fn sqlite_vec_bits_become_words_dimension_by_dimension() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        let mut v = vec![-1.0f32; 128];
        v[0] = 0.5;
        v[9] = 0.5;
        v[65] = 0.1;
        let bytes: Vec<u8> = store
            .conn
            .query_row("SELECT vec_quantize_binary(?1)", [vector_blob(&v)], |r| {
                r.get(0)
            })
            .unwrap();
        let mut out = Vec::new();
        words(&bytes, &mut out);
        assert_eq!(out, vec![1 | 1 << 9, 1 << 1]);
    }

    #[test]
    fn hamming_keeps_exactly_n_in_hamming_order() {
        let vectors: Vec<Vec<f32>> = (0..8)
            .map(|i| {
                (0..64)
                    .map(|d| if d < i * 8 { 1.0 } else { -1.0 })
                    .collect()
            })
            .collect();
        let sign_word = |v: &[f32]| {
            let mut w = Vec::new();
            words(&sign_bytes(v), &mut w);
            w
        };
        let index = SignIndex {
            ids: (10..18).collect(),
            bits: vectors.iter().flat_map(|v| sign_word(v)).collect(),
            words: 1,
        };
        assert_eq!(index.hamming(&sign_word(&vectors[3]), 3), vec![2, 3, 4]);
        assert_eq!(index.hamming(&sign_word(&vectors[0]), 20).len(), 8);
        // Of chunks at one Hamming distance, the query's floats prefer the
        // one whose differing sign is on the query's smallest dimension.
        let mut query = vec![-1.0f32; 64];
        query[0] = 0.9;
        query[1] = 0.1;
        let first = {
            let mut v = vec![-1.0f32; 64];
            v[0] = 1.0;
            v
        };
        let second = {
            let mut v = vec![-1.0f32; 64];
            v[1] = 1.0;
            v
        };
        let index = SignIndex {
            ids: vec![1, 2],
            bits: [second, first].iter().flat_map(|v| sign_word(v)).collect(),
            words: 1,
        };
        assert_eq!(index.nearest(&query, 1), vec![2]);
    }

    /// The query's signs are taken in Rust, the stored ones by sqlite-vec:
    /// the two agree bit for bit, zeros and negative zeros included.
    #[test]
    fn the_querys_sign_bits_are_sqlite_vecs() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        let mut state = 3;
        for round in 0..20 {
            let mut v = unit(&mut state);
            v[round] = 0.0;
            v[round + 1] = -0.0;
            let stored: Vec<u8> = store
                .conn
                .query_row("SELECT vec_quantize_binary(?1)", [vector_blob(&v)], |r| {
                    r.get(0)
                })
                .unwrap();
            assert_eq!(sign_bytes(&v), stored, "round {round}");
        }
    }
}
