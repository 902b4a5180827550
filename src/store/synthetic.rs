//! Synthetic libraries for the scaling bench (`carrel-bench scale`): a real
//! library's chunks and cards, repeated with noise on their vectors until the
//! library holds the number of chunks asked for. Written through the same
//! functions the ingest writer uses, so the lanes read exactly the rows they
//! read in use.
//!
//! Each copy of a vector is `normalise(v + σ·g)` with `g` standard normal
//! per dimension. With σ = 0.05 on 384 dimensions the noise has norm ~0.98,
//! so a copy sits at cosine ~0.7 from its original: copies spread around the
//! real vectors like passages on nearby subjects, rather than stacking on them
//! as duplicates (which would make every neighbour a tie) or spreading
//! uniformly (random unit vectors, all near-orthogonal).

use rusqlite::params;

use super::{DocumentState, NewChunk, NewDocument, SqliteStore, Validators, floats};
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::Extracted;
use crate::models::Fingerprints;

/// A real library's chunks and cards with their vectors, to be repeated.
pub struct Seed {
    pub chunks: Vec<(NewChunk, Vec<f32>)>,
    pub cards: Vec<(Card, Vec<f32>)>,
}

impl Seed {
    /// Every chunk and card of `store` whose vectors were made by `fp`.
    pub fn read(store: &SqliteStore, fp: &Fingerprints) -> Result<Seed> {
        let mut stmt = store.conn.prepare(
            "SELECT c.heading_path, c.section, c.start, c.end, c.page, c.text, v.embedding
             FROM chunks c JOIN chunk_vectors v ON v.chunk_id = c.id WHERE v.fingerprint = ?1
             ORDER BY c.id",
        )?;
        let chunks = stmt
            .query_map([&fp.chunk], |r| {
                let path: String = r.get(0)?;
                Ok((
                    (
                        path,
                        NewChunk {
                            heading_path: Vec::new(),
                            section: r.get::<_, i64>(1)? as usize,
                            start: r.get::<_, i64>(2)? as usize,
                            end: r.get::<_, i64>(3)? as usize,
                            page: r.get(4)?,
                            text: r.get(5)?,
                        },
                    ),
                    floats(&r.get::<_, Vec<u8>>(6)?),
                ))
            })?
            .map(|row| {
                let ((path, mut chunk), v) = row?;
                chunk.heading_path = list(&path)?;
                Ok((chunk, v))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut stmt = store.conn.prepare(
            "SELECT c.title, c.what, c.outline, c.key_terms, v.embedding
             FROM cards c JOIN card_vectors v ON v.content_id = c.content_id WHERE v.fingerprint = ?1
             ORDER BY c.content_id",
        )?;
        let cards = stmt
            .query_map([&fp.card], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    floats(&r.get::<_, Vec<u8>>(4)?),
                ))
            })?
            .map(|row| {
                let (title, what, outline, key_terms, v) = row?;
                let card = Card {
                    title,
                    what,
                    outline: list(&outline)?,
                    key_terms: list(&key_terms)?,
                };
                Ok((card, v))
            })
            .collect::<Result<Vec<_>>>()?;
        if chunks.is_empty() || cards.is_empty() {
            return Err(Error::Eval(
                "the seed library has no chunks or cards embedded with these models".into(),
            ));
        }
        Ok(Seed { chunks, cards })
    }
}

/// Adds documents of `per_doc` chunks each to `store` until it holds
/// `chunks` chunks (one card per document), copying the seed's rows in turn
/// with noise `sigma` on every vector. `progress(done)` after each commit.
pub fn grow(
    store: &mut SqliteStore,
    seed: &Seed,
    chunks: usize,
    per_doc: usize,
    sigma: f32,
    fp: &Fingerprints,
    progress: &mut dyn FnMut(usize),
) -> Result<()> {
    let per_doc = per_doc.max(1);
    let mut rng = Noise(0x5eed_u64);
    let docs = chunks.div_ceil(per_doc);
    let mut next_chunk = 0usize;
    const DOCS_PER_TX: usize = 500;
    for first in (0..docs).step_by(DOCS_PER_TX) {
        let tx = store.conn.transaction()?;
        for d in first..(first + DOCS_PER_TX).min(docs) {
            let n = per_doc.min(chunks - d * per_doc);
            let mut doc_chunks = Vec::with_capacity(n);
            let mut vectors = Vec::with_capacity(n);
            for _ in 0..n {
                let (c, v) = &seed.chunks[next_chunk % seed.chunks.len()];
                next_chunk += 1;
                doc_chunks.push(NewChunk {
                    heading_path: c.heading_path.clone(),
                    section: 0,
                    start: 0,
                    end: c.text.len(),
                    page: c.page,
                    text: c.text.clone(),
                });
                vectors.push(rng.perturb(v, sigma));
            }
            let (card, card_vec) = &seed.cards[d % seed.cards.len()];
            let card = Card {
                title: format!("{} ({d})", card.title),
                ..card.clone()
            };
            let extracted = Extracted {
                title: card.title.clone(),
                ..Extracted::default()
            };
            let content =
                SqliteStore::insert_content(&tx, &format!("synthetic-{d}"), &extracted, None)?;
            SqliteStore::write_chunks(&tx, content, &doc_chunks, &vectors, &fp.chunk)?;
            SqliteStore::write_card(&tx, content, &card, &rng.perturb(card_vec, sigma), &fp.card)?;
            SqliteStore::upsert_document(
                &tx,
                &NewDocument {
                    source: &format!("synthetic://{d}"),
                    kind: Some("text"),
                    title: &card.title,
                    bytes: 0,
                    mtime_ns: None,
                    validators: &Validators::default(),
                    watch: None,
                },
                &DocumentState::Indexed {
                    content_id: content,
                },
            )?;
        }
        tx.commit()?;
        progress(((first + DOCS_PER_TX).min(docs) * per_doc).min(chunks));
    }
    store.conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('synthetic', ?1)",
        params![describe(chunks, per_doc, sigma)],
    )?;
    Ok(())
}

/// What [`grow`] built in `store`, as it wrote it; none for a real library.
pub fn built(store: &SqliteStore) -> Result<Option<String>> {
    use rusqlite::OptionalExtension;
    Ok(store
        .conn
        .query_row("SELECT value FROM meta WHERE key = 'synthetic'", [], |r| {
            r.get(0)
        })
        .optional()?)
}

/// The description [`grow`] records, and [`built`] compares with.
pub fn describe(chunks: usize, per_doc: usize, sigma: f32) -> String {
    format!("{chunks} chunks, {per_doc} per document, sigma {sigma}")
}

fn list(json: &str) -> Result<Vec<String>> {
    serde_json::from_str(json).map_err(|e| Error::Corrupt(e.to_string()))
}

/// SplitMix64 with Box–Muller: reproducible normal noise, no dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }

    /// `v + σ·g`, normalised.
    fn perturb(&mut self, v: &[f32], sigma: f32) -> Vec<f32> {
        let mut out: Vec<f32> = v.iter().map(|x| x + sigma * self.normal()).collect();
        let norm = out
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::EPSILON);
        out.iter_mut().for_each(|x| *x /= norm);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_keeps_unit_length_and_lands_near_cosine_point_seven() {
        let mut rng = Noise(1);
        let mut v = vec![0.0f32; 384];
        v[0] = 1.0;
        let mut cos = 0.0;
        for _ in 0..200 {
            let p = rng.perturb(&v, 0.05);
            let norm: f32 = p.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4);
            cos += p[0] / 200.0;
        }
        assert!((0.65..0.77).contains(&cos), "mean cosine {cos}");
    }
}
