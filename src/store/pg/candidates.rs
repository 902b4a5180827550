//! What the lanes read from a PostgreSQL library, the same reads as on
//! SQLite (`store/candidates.rs`, `signs.rs`, `keywords.rs`) with the same
//! types: the nearest chunks by pgvector's HNSW index, a passage's words by
//! its `tsvector`, the nearest cards, a passage with its card, and a
//! content's documents. Distances are pgvector's cosine distance, the
//! number sqlite-vec gives: `Cosine::from_distance` reads both.

use pgvector::Vector;
use postgres::Client;

use super::PgStore;
use super::words::query_lexemes;
use crate::error::Result;
use crate::language::Language;
use crate::score::Cosine;
use crate::store::candidates::PassageRow;
use crate::store::keywords::COMMON_WORD_PASSAGES;
use crate::store::signs::Search;
use crate::store::{
    ById, KeywordMatch, Location, NearCard, NearChunk, Passage, TopicAsk, TopicCandidates,
};

/// BM25 over the chunks' words ([`PgStore::keyword_chunks`]) as FTS5's
/// `bm25()` scores them: $1 the query's words as FTS5 reads them (a
/// repeated one scored as often as it comes), $2 the most passages a
/// telling word may be in, $3 how many to return, $4 see
/// [`COMMON_BY_STATISTICS`]; each found with its content, and its cosine
/// distance to the vector $6 where its own is of fingerprint $5.
///
/// The rule is FTS5's: k1 1.2, b 0.75; IDF `ln((N - n + 0.5) / (n + 0.5))`,
/// 1e-6 where that is not positive; a word's frequency its places in the
/// heading and text together, a passage's length their tokens and the
/// average over the whole library (`chunk_totals`, schema 2), N the
/// library's passages; the words are FTS5's own (`words`, schema 4).
///
/// Each word's passage count is counted exactly (up to $2 + 1), except a
/// word the planner's statistics of `words` (ANALYZE's sample) put in over
/// [`COMMON_BY_STATISTICS`] × $2 passages: that one is common without
/// counting, which at a million passages is most of the query's time (a
/// GIN index reads every passage of a word to count any). A sample's share
/// is never off by that factor for a word that common, so the telling words
/// and their counts are those an exact count gives; a library never
/// analysed is counted as before. A count reads no column (`SELECT FROM`),
/// so the server answers it from the index wherever the visibility map
/// lets it skip the passage's page.
///
/// A matching passage's frequencies are read from its `words` marked down
/// to the telling words (`setweight` to C, then `ts_filter`: the heading's
/// and text's are B and A) rather than from every word it has: at a
/// million passages that took a question with rare words from 151 ms to
/// 41 ms, the order the same.
const BM25: &str = "
    WITH q AS (SELECT lexeme, count(*)::float8 AS times FROM unnest($1::text[]) AS w (lexeme)
           GROUP BY lexeme),
    totals AS MATERIALIZED (SELECT greatest(sum(passages), 1)::float8 AS n,
                                   greatest(sum(tokens)::float8 / greatest(sum(passages), 1), 1) AS avgdl
           FROM chunk_totals),
    sampled AS MATERIALIZED (SELECT e.lexeme, e.share * (SELECT n FROM totals) AS passages
           FROM pg_stats s,
                unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, share)
           WHERE s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'words'
             AND e.lexeme IN (SELECT lexeme FROM q)),
    df AS MATERIALIZED (SELECT q.lexeme, CASE
             WHEN (SELECT passages FROM sampled WHERE sampled.lexeme = q.lexeme) > $4::float8 * $2::bigint
             THEN $2::bigint + 1
             ELSE (SELECT count(*) FROM (SELECT FROM chunks
                   WHERE words @@ quote_literal(q.lexeme)::tsquery LIMIT $2::bigint + 1) AS s) END::float8 AS df
           FROM q),
    telling AS (SELECT lexeme, times, CASE WHEN totals.n > 2 * df THEN ln((totals.n - df + 0.5) / (df + 0.5))
                                    ELSE 1e-6 END AS idf
           FROM df JOIN q USING (lexeme), totals WHERE df > 0 AND df <= $2::bigint),
    hits AS MATERIALIZED (SELECT c.id, c.tokens::float8 AS len, u.lexeme,
                    array_length(u.positions, 1)::float8 AS tf
             FROM chunks c,
                  unnest(ts_filter(setweight(c.words, 'C', (SELECT array_agg(lexeme) FROM telling)), '{c}')) AS u
             WHERE c.words @@ (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery FROM telling)),
    ranked AS (SELECT h.id,
                    sum(t.times * t.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.len / totals.avgdl))) AS score
           FROM hits h JOIN telling t USING (lexeme), totals
           GROUP BY h.id ORDER BY score DESC, h.id LIMIT $3::bigint)
    SELECT r.id, c.content_id, CASE WHEN c.fingerprint = $5::text THEN (c.embedding <=> $6::vector)::real END
    FROM ranked r JOIN chunks c ON c.id = r.id
    ORDER BY r.score DESC, r.id";

/// How many times the most passages a telling word may be in
/// ([`COMMON_WORD_PASSAGES`]) the planner's statistics must put a word in
/// for [`BM25`] to take it as common without counting.
const COMMON_BY_STATISTICS: f64 = 2.0;

/// The passages' HNSW search's candidate list per query (pgvector's
/// `ef_search`, default 40, at most 1000), set per query. At a million
/// synthetic passages (`make bench-scale-postgresql`) 100 found 0.78 of the
/// exact top 10 for the scaling bench's questions, 400 0.966, 1000 0.983:
/// the 0.98 only at pgvector's most, which the topic lane affords
/// since its keyword side was made quicker (docs/team-library.md). At
/// three million, 1000 found 0.939 on pgvector's default graph and 0.995
/// on the wider one schema 6 builds.
pub const HNSW_EF_SEARCH_CHUNKS: usize = 1000;

/// The cards' HNSW search's candidate list per query: at 100k cards, 400
/// finds every exact nearest card the subject lane takes, in 4.9 ms at the
/// server where 1000 takes 22.7 ms (both on the bench's server, warming).
pub const HNSW_EF_SEARCH_CARDS: usize = 400;

/// What the veto reads of a passage ([`passage_of`]), from [`PASSAGE_CARD`].
const PASSAGE: &str = "c.id, c.content_id, c.heading_path, c.text, c.page, d.key_terms, d.what,
    (SELECT count(*) FROM chunks o WHERE o.content_id = c.content_id), c.language";

/// A passage with its document's card, for [`PASSAGE`].
const PASSAGE_CARD: &str = "chunks c LEFT JOIN cards d ON d.content_id = c.content_id";

/// A passage from a row whose first columns are [`PASSAGE`]'s.
fn passage_of(r: &postgres::Row) -> Result<Passage> {
    let chunk: i64 = r.get(0);
    PassageRow {
        content: r.get(1),
        heading_path: r.get(2),
        text: r.get(3),
        page: r.get::<_, Option<i32>>(4).map(|p| p as u32),
        key_terms: r.get(5),
        what: r.get(6),
        chunks: r.get(7),
        language: r.get(8),
    }
    .read(chunk)
}

/// The nearest chunks as (chunk id, cosine distance).
fn pairs(found: Vec<NearChunk>) -> Vec<(i64, f32)> {
    found.iter().map(|n| (n.chunk, n.distance)).collect()
}

impl PgStore {
    /// The `k` chunks (made by `fingerprint`) nearest `query`, nearest
    /// first, as (chunk id, cosine distance), through the HNSW index.
    pub fn nearest_chunks(
        &self,
        query: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<(Vec<(i64, f32)>, Search)> {
        let (found, search) = self.nearest_chunks_on(&mut self.client(), query, k, fingerprint)?;
        Ok((pairs(found), search))
    }

    fn nearest_chunks_on(
        &self,
        client: &mut Client,
        query: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<(Vec<NearChunk>, Search)> {
        let ef = HNSW_EF_SEARCH_CHUNKS.max(k);
        let found = self.ordered_by_vector(
            client,
            &format!("SET LOCAL hnsw.ef_search = {ef}"),
            "SELECT id, (embedding <=> $1)::real, content_id FROM chunks WHERE fingerprint = $2
             ORDER BY embedding <=> $1 LIMIT $3",
            query,
            k,
            fingerprint,
        )?;
        Ok((found, Search::Hnsw { ef_search: ef }))
    }

    /// The topic lane's candidates: the nearest chunks are searched on a
    /// second connection while this one ranks the keyword matches and
    /// reads the vocabulary, so the server walks the HNSW graph and the
    /// words' index at once.
    pub fn topic_candidates(&self, ask: &TopicAsk<'_>) -> Result<TopicCandidates> {
        std::thread::scope(|s| {
            let nearest = s.spawn(|| {
                self.beside(|c| self.nearest_chunks_on(c, ask.vector, ask.k, ask.fingerprint))
            });
            let keyword =
                self.keyword_matches(ask.text, ask.k, Some((ask.vector, ask.fingerprint)));
            let vocabulary = self.vocabulary(ask.text);
            let (nearest, search) = nearest
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            Ok(TopicCandidates {
                nearest,
                search,
                keyword: keyword?,
                vocabulary: vocabulary?,
            })
        })
    }

    /// Every chunk vector of `fingerprint` compared (the index off): what
    /// the HNSW search's recall is measured against.
    pub fn nearest_chunks_exact(
        &self,
        query: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<(i64, f32)>> {
        Ok(pairs(self.ordered_by_vector(
            &mut self.client(),
            "SET LOCAL enable_indexscan = off",
            "SELECT id, (embedding <=> $1)::real, content_id FROM chunks WHERE fingerprint = $2
             ORDER BY embedding <=> $1, id LIMIT $3",
            query,
            k,
            fingerprint,
        )?))
    }

    fn ordered_by_vector(
        &self,
        client: &mut Client,
        setting: &str,
        sql: &str,
        query: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<NearChunk>> {
        let run = |client: &mut Client| -> std::result::Result<_, postgres::Error> {
            let mut tx = client.transaction()?;
            tx.batch_execute(setting)?;
            let rows = tx.query(
                sql,
                &[&Vector::from(query.to_vec()), &fingerprint, &(k as i64)],
            )?;
            tx.commit()?;
            Ok(rows
                .iter()
                .map(|r| NearChunk {
                    chunk: r.get(0),
                    distance: r.get(1),
                    content: r.get(2),
                })
                .collect())
        };
        run(client).map_err(|e| self.failed(e))
    }

    /// The `k` passages whose words best match `text`, best first, ranked
    /// by BM25 as SQLite's FTS5 ranks them ([`BM25`]): the same content
    /// words, read by FTS5's tokenizer; a word in more than
    /// [`COMMON_WORD_PASSAGES`] passages is left out, as there.
    pub fn keyword_chunks(&self, text: &str, k: usize) -> Result<Vec<i64>> {
        let found = self.keyword_matches(text, k, None)?;
        Ok(found.iter().map(|m| m.chunk).collect())
    }

    /// [`Self::keyword_chunks`], each with its content and, given the
    /// query's vector and its fingerprint, its distance to the query.
    fn keyword_matches(
        &self,
        text: &str,
        k: usize,
        query: Option<(&[f32], &str)>,
    ) -> Result<Vec<KeywordMatch>> {
        let words = query_lexemes(text)?;
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let (vector, fingerprint) = match query {
            Some((v, fp)) => (Some(Vector::from(v.to_vec())), Some(fp)),
            None => (None, None),
        };
        let rows = self.rows(
            BM25,
            &[
                &words,
                &(COMMON_WORD_PASSAGES as i64),
                &(k as i64),
                &COMMON_BY_STATISTICS,
                &fingerprint,
                &vector,
            ],
        )?;
        Ok(rows
            .iter()
            .map(|r| KeywordMatch {
                chunk: r.get(0),
                content: r.get(1),
                distance: r.get(2),
            })
            .collect())
    }

    /// The content a chunk belongs to; none for a chunk deleted since.
    pub fn chunk_content(&self, chunk: i64) -> Result<Option<i64>> {
        Ok(self.chunk_contents(&[chunk])?.remove(&chunk))
    }

    /// Each chunk's content, in one round trip; a chunk deleted since the
    /// search is absent.
    pub fn chunk_contents(&self, chunks: &[i64]) -> Result<ById<i64>> {
        let rows = self.rows(
            "SELECT id, content_id FROM chunks WHERE id = ANY($1)",
            &[&chunks],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Every document whose content is `content_id`, oldest first.
    pub fn locations(&self, content_id: i64) -> Result<Vec<Location>> {
        Ok(self
            .locations_of(&[content_id])?
            .remove(&content_id)
            .unwrap_or_default())
    }

    /// Each content's documents, oldest first, in one round trip; a content
    /// no document holds is absent.
    pub fn locations_of(&self, contents: &[i64]) -> Result<ById<Vec<Location>>> {
        let rows = self.rows(
            "SELECT content_id, id, title, source FROM documents
             WHERE content_id = ANY($1) ORDER BY id",
            &[&contents],
        )?;
        let mut found = ById::<Vec<Location>>::new();
        for r in &rows {
            found.entry(r.get(0)).or_default().push(Location {
                doc: r.get(1),
                title: r.get(2),
                source: r.get(3),
            });
        }
        Ok(found)
    }

    /// The `k` cards nearest the query by cosine, nearest first, among those
    /// whose vectors `fingerprint` made, through the HNSW index.
    pub fn nearest_cards(
        &self,
        query_vec: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<NearCard>> {
        let ef = format!("SET LOCAL hnsw.ef_search = {}", HNSW_EF_SEARCH_CARDS.max(k));
        self.cards_by_vector(&ef, query_vec, k, fingerprint)
    }

    /// Every card vector of `fingerprint` compared (the index off): what
    /// the HNSW search's recall is measured against.
    pub fn nearest_cards_exact(
        &self,
        query_vec: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<NearCard>> {
        self.cards_by_vector(
            "SET LOCAL enable_indexscan = off",
            query_vec,
            k,
            fingerprint,
        )
    }

    fn cards_by_vector(
        &self,
        setting: &str,
        query_vec: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<NearCard>> {
        let run = |client: &mut Client| -> std::result::Result<_, postgres::Error> {
            let mut tx = client.transaction()?;
            tx.batch_execute(setting)?;
            let rows = tx.query(
                "SELECT c.content_id, (c.embedding <=> $1)::real, c.text, c.what, t.hash, t.language
                 FROM cards c JOIN contents t ON t.id = c.content_id
                 WHERE c.fingerprint = $2 ORDER BY c.embedding <=> $1 LIMIT $3",
                &[&Vector::from(query_vec.to_vec()), &fingerprint, &(k as i64)],
            )?;
            tx.commit()?;
            Ok(rows)
        };
        let rows = run(&mut self.client()).map_err(|e| self.failed(e))?;
        Ok(rows
            .iter()
            .map(|r| NearCard {
                content: r.get(0),
                cosine: Cosine::from_distance(r.get::<_, f32>(1)),
                text: r.get(2),
                what: r.get(3),
                hash: r.get(4),
                language: r
                    .get::<_, Option<String>>(5)
                    .as_deref()
                    .and_then(Language::from_code),
            })
            .collect())
    }

    /// A passage and what its document's card says; none for a chunk
    /// deleted since the search.
    pub fn passage(&self, chunk: i64) -> Result<Option<Passage>> {
        Ok(self.passages(&[chunk])?.remove(&chunk))
    }

    /// Each passage with what its document's card says, in one round trip;
    /// a chunk deleted since the search is absent.
    pub fn passages(&self, chunks: &[i64]) -> Result<ById<Passage>> {
        let rows = self.rows(
            &format!("SELECT {PASSAGE} FROM {PASSAGE_CARD} WHERE c.id = ANY($1)"),
            &[&chunks],
        )?;
        let mut found = ById::new();
        for r in &rows {
            found.insert(r.get(0), passage_of(r)?);
        }
        Ok(found)
    }

    /// Each passage with what its document's card says and the documents
    /// that hold it, oldest first, in one round trip; a chunk deleted since
    /// the search, or one no document holds any more, is absent.
    pub fn passages_with_locations(
        &self,
        chunks: &[i64],
    ) -> Result<ById<(Passage, Vec<Location>)>> {
        let rows = self.rows(
            &format!(
                "SELECT {PASSAGE}, l.ids, l.titles, l.sources
                 FROM {PASSAGE_CARD},
                      LATERAL (SELECT array_agg(x.id ORDER BY x.id) AS ids,
                                      array_agg(x.title ORDER BY x.id) AS titles,
                                      array_agg(x.source ORDER BY x.id) AS sources
                               FROM documents x WHERE x.content_id = c.content_id) l
                 WHERE c.id = ANY($1) AND l.ids IS NOT NULL"
            ),
            &[&chunks],
        )?;
        let mut found = ById::new();
        for r in &rows {
            let (ids, titles, sources): (Vec<i64>, Vec<String>, Vec<String>) =
                (r.get(9), r.get(10), r.get(11));
            let held = ids
                .into_iter()
                .zip(titles)
                .zip(sources)
                .map(|((doc, title), source)| Location { doc, title, source })
                .collect();
            found.insert(r.get(0), (passage_of(r)?, held));
        }
        Ok(found)
    }
}
