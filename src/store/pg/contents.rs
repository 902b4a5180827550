//! Contents, passages and cards of a PostgreSQL library, read as on SQLite
//! (`store/contents.rs`), and what the lanes' coverage and re-embedding
//! read. A vector lives on its row here, so "made by another model" is the
//! row's fingerprint.

use pgvector::Vector;

use super::PgStore;
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::Extracted;
use crate::score::Cosine;
use crate::store::{ChunkRow, Coverage, StaleContent};

fn json<T: serde::de::DeserializeOwned>(text: &str, what: impl std::fmt::Display) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("{what}: {e}")))
}

impl PgStore {
    pub fn content_by_hash(&self, hash: &str) -> Result<Option<i64>> {
        Ok(self
            .row("SELECT id FROM contents WHERE hash = $1", &[&hash])?
            .map(|r| r.get(0)))
    }

    pub fn content_hash(&self, content_id: i64) -> Result<String> {
        self.one("SELECT hash FROM contents WHERE id = $1", &[&content_id])
    }

    pub fn extracted(&self, content_id: i64) -> Result<Extracted> {
        let text: String = self.one(
            "SELECT extracted FROM contents WHERE id = $1",
            &[&content_id],
        )?;
        json(&text, format_args!("content {content_id}"))
    }

    pub fn chunk_count(&self, content_id: i64) -> Result<usize> {
        let n: i64 = self.one(
            "SELECT count(*) FROM chunks WHERE content_id = $1",
            &[&content_id],
        )?;
        Ok(n as usize)
    }

    /// A chunk's content and text, if the chunk exists.
    pub fn chunk_text(&self, chunk_id: i64) -> Result<Option<(i64, String)>> {
        Ok(self
            .row(
                "SELECT content_id, text FROM chunks WHERE id = $1",
                &[&chunk_id],
            )?
            .map(|r| (r.get(0), r.get(1))))
    }

    /// Every chunk of a content, in order, each with its cosine to `query`;
    /// `None` where the chunk's vector was made by another fingerprint.
    pub fn chunks_with_cosines(
        &self,
        content_id: i64,
        query: &[f32],
        fingerprint: &str,
    ) -> Result<Vec<(ChunkRow, Option<Cosine>)>> {
        let rows = self.rows(
            "SELECT id, seq, heading_path, page, text,
                    CASE WHEN fingerprint = $3 THEN (embedding <=> $2)::real END
             FROM chunks WHERE content_id = $1 ORDER BY seq",
            &[&content_id, &Vector::from(query.to_vec()), &fingerprint],
        )?;
        rows.iter()
            .map(|r| {
                let d: Option<f32> = r.get(5);
                Ok((chunk_row(r)?, d.map(Cosine::from_distance)))
            })
            .collect()
    }

    pub fn chunks(&self, content_id: i64) -> Result<Vec<ChunkRow>> {
        self.rows(
            "SELECT id, seq, heading_path, page, text FROM chunks WHERE content_id = $1 ORDER BY seq",
            &[&content_id],
        )?
        .iter()
        .map(chunk_row)
        .collect()
    }

    pub fn card(&self, content_id: i64) -> Result<Option<Card>> {
        let Some(r) = self.row(
            "SELECT title, what, outline, key_terms FROM cards WHERE content_id = $1",
            &[&content_id],
        )?
        else {
            return Ok(None);
        };
        let what = format_args!("card of content {content_id}");
        Ok(Some(Card {
            title: r.get(0),
            what: r.get(1),
            outline: json(r.get(2), what)?,
            key_terms: json(r.get(3), what)?,
        }))
    }

    /// The lanes' coverage of the indexed documents: (subject lane, by card
    /// vectors; topic lane, by chunk vectors). The stale passages are found
    /// through their fingerprints' index, as two ranges either side of the
    /// current one (`<>` would read every passage).
    pub fn coverage(&self, chunk_fp: &str, card_fp: &str) -> Result<(Coverage, Coverage)> {
        let r = self
            .row(
                "SELECT count(*),
                    count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM cards d
                        WHERE d.content_id = o.content_id AND d.fingerprint = $2)),
                    count(*) FILTER (WHERE o.content_id IN (SELECT content_id FROM chunks
                        WHERE fingerprint < $1 OR fingerprint > $1))
                 FROM documents o WHERE o.content_id IS NOT NULL",
                &[&chunk_fp, &card_fp],
            )?
            .expect("an aggregate returns a row");
        let indexed = r.get::<_, i64>(0) as usize;
        let of = |stale: i64| Coverage {
            indexed,
            stale: stale as usize,
        };
        Ok((of(r.get(1)), of(r.get(2))))
    }

    /// Contents with any chunk or card not embedded under the given
    /// fingerprints.
    pub fn stale_contents(&self, chunk_fp: &str, card_fp: &str) -> Result<Vec<StaleContent>> {
        let rows = self.rows(
            "SELECT c.id, c.extracted, c.truncated_at_chunk,
                    EXISTS (SELECT 1 FROM chunks k WHERE k.content_id = c.id AND k.fingerprint <> $1),
                    NOT EXISTS (SELECT 1 FROM cards d WHERE d.content_id = c.id AND d.fingerprint = $2)
             FROM contents c ORDER BY c.id",
            &[&chunk_fp, &card_fp],
        )?;
        let mut out = Vec::new();
        for r in rows {
            let (id, chunks_stale, card_stale): (i64, bool, bool) = (r.get(0), r.get(3), r.get(4));
            if !chunks_stale && !card_stale {
                continue;
            }
            out.push(StaleContent {
                id,
                extracted: json(r.get(1), format_args!("content {id}"))?,
                truncated_at_chunk: r.get::<_, Option<i64>>(2).map(|t| t as usize),
                chunks_stale,
                card_stale,
            });
        }
        Ok(out)
    }

    /// Row counts, as SQLite's: (documents, contents, chunks, chunk
    /// vectors, cards, card vectors); a vector is on its row here.
    pub fn counts(&self) -> Result<[i64; 6]> {
        let r = self
            .row(
                "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM contents),
                        (SELECT count(*) FROM chunks), (SELECT count(*) FROM cards)",
                &[],
            )?
            .expect("a select of counts returns a row");
        let (chunks, cards): (i64, i64) = (r.get(2), r.get(3));
        Ok([r.get(0), r.get(1), chunks, chunks, cards, cards])
    }

    /// Rows that point at nothing (or that nothing points at), by kind: a
    /// healthy library, crashed or not, has none.
    pub fn orphans(&self) -> Result<Vec<(&'static str, i64)>> {
        const CHECKS: &[(&str, &str)] = &[
            (
                "contents no document points at",
                "SELECT count(*) FROM contents t WHERE NOT EXISTS
                    (SELECT 1 FROM documents d WHERE d.content_id = t.id)",
            ),
            (
                "contents without a card",
                "SELECT count(*) FROM contents t WHERE NOT EXISTS
                    (SELECT 1 FROM cards c WHERE c.content_id = t.id)",
            ),
            (
                "passages and tokens the keyword totals miscount",
                "SELECT (abs(t.passages - c.passages) + abs(t.tokens - c.tokens))::bigint
                 FROM (SELECT coalesce(sum(passages), 0) AS passages,
                              coalesce(sum(tokens), 0) AS tokens FROM chunk_totals) t,
                      (SELECT count(*) AS passages, coalesce(sum(tokens), 0) AS tokens FROM chunks) c",
            ),
        ];
        CHECKS
            .iter()
            .map(|(what, sql)| Ok((*what, self.one(sql, &[])?)))
            .collect()
    }
}

fn chunk_row(r: &postgres::Row) -> Result<ChunkRow> {
    let id: i64 = r.get(0);
    Ok(ChunkRow {
        id,
        seq: r.get::<_, i32>(1) as i64,
        heading_path: json(r.get(2), format_args!("chunk {id}"))?,
        page: r.get::<_, Option<i32>>(3).map(|p| p as u32),
        text: r.get(4),
    })
}
