//! The chunks' keyword index (FTS5, schema v11): the topic lane's second way
//! into its candidate pool. It finds passages that share the query's words
//! but sit outside the nearest vectors; every passage it finds is scored on
//! the lane's one scale, passage cosine ([`SqliteStore::chunk_distances`]), before
//! the lane judges it.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{SqliteStore, vector_blob};
use crate::error::Result;

/// The FTS5 query for a text: each content word quoted (so no word is read
/// as FTS5 syntax), any of them matching; none for a text with no content
/// words. Function words are left out: they match nearly every passage and
/// BM25 gives them almost no weight. One owner for the keyword lane's query
/// and the evaluation's BM25 baseline, so the two read a query alike.
pub fn match_expression(text: &str) -> Option<String> {
    any_of(&match_terms(text))
}

/// Each content word of a text, quoted for FTS5, in order.
pub(crate) fn match_terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() > 1)
        .map(str::to_lowercase)
        .filter(|t| !crate::words::is_function_word(t))
        .map(|t| format!("\"{t}\""))
        .collect()
}

/// A line's words, lowercased, in order, every one kept: what a phrase
/// search looks for ([`SqliteStore::phrase_chunks`]).
pub(crate) fn phrase_words(line: &str) -> Vec<String> {
    line.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn any_of(terms: &[String]) -> Option<String> {
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// A word found in more passages than this is too common to pick passages
/// by, and the keyword search leaves it out: BM25 gives it little weight,
/// and ranking its passages is most of the search's cost, which grows with
/// the passages it matches (each needs its length read). On Cranfield's text
/// repeated into libraries of 10,000, 100,000 and 1,000,000 passages (40
/// queries, 2026-12-02, this machine), ranking every matching passage took
/// 14, 181 and 1,737 ms p50; leaving out the words over this limit, counted
/// with a bounded scan, 12, 28 and 9 ms (p95 22, 66 and 35 ms), keeping all
/// 386 query words, 191 and 35. No word is left out in a library of fewer
/// passages than this.
pub const COMMON_WORD_PASSAGES: usize = 5_000;

/// A letter of a script whose words the index cannot tell apart: Thai,
/// Hangul, kana and CJK ideographs.
pub(crate) fn unsegmented(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0E7F}'
        | '\u{1100}'..='\u{11FF}'
        | '\u{3040}'..='\u{30FF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{AC00}'..='\u{D7AF}'
        | '\u{F900}'..='\u{FAFF}')
}

/// How much a library uses a word: in no passage, in some, or in more than
/// [`COMMON_WORD_PASSAGES`] (too common to pick passages by).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WordUse {
    Unused,
    Used,
    Common,
}

/// How each word asked so far is used ([`WordUse`]), held for one
/// generation of the library's chunks (their count changes only when the
/// chunks do), so a word is counted once, not on every query.
#[derive(Default)]
pub(crate) struct WordUses(Mutex<Option<(i64, HashMap<String, WordUse>)>>);

/// Words held at most; past it the held words are forgotten and counted
/// again as they are asked.
const COMMON_WORDS_HELD: usize = 100_000;

/// A query's content words against the library's passages: how many it has
/// and those no passage uses (lower-cased, in the order typed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vocabulary {
    pub words: usize,
    pub unused: Vec<String>,
}

impl SqliteStore {
    /// How the library's passages use `term` (quoted for FTS5), counted with
    /// a bounded scan once per generation of the chunks.
    fn word_use(&self, generation: i64, term: &str) -> Result<WordUse> {
        let mut held = crate::fault::lock(&self.word_uses.0);
        if held
            .as_ref()
            .is_some_and(|(g, words)| *g != generation || words.len() >= COMMON_WORDS_HELD)
        {
            *held = None;
        }
        let (_, words) = held.get_or_insert_with(|| (generation, HashMap::new()));
        if let Some(&used) = words.get(term) {
            return Ok(used);
        }
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2)",
            )?
            .query_row(
                rusqlite::params![term, COMMON_WORD_PASSAGES as i64 + 1],
                |r| r.get(0),
            )?;
        let used = match n as usize {
            0 => WordUse::Unused,
            n if n > COMMON_WORD_PASSAGES => WordUse::Common,
            _ => WordUse::Used,
        };
        words.insert(term.to_string(), used);
        Ok(used)
    }

    /// The query's content words (those its keyword search reads) that no
    /// passage of the library uses, in any inflection the index stems alike.
    /// A run of a script written without spaces between words (Chinese,
    /// Japanese, Thai; Korean, whose particles join its words) is one token
    /// to the index, so its absence says nothing of the library's
    /// vocabulary: such runs are not counted.
    pub fn vocabulary(&self, text: &str) -> Result<Vocabulary> {
        let generation = self.chunks_generation()?;
        let terms: Vec<String> = match_terms(text)
            .into_iter()
            .filter(|t| !t.chars().any(unsegmented))
            .collect();
        let mut unused = Vec::new();
        for term in &terms {
            if self.word_use(generation, term)? == WordUse::Unused {
                unused.push(term.trim_matches('"').to_string());
            }
        }
        Ok(Vocabulary {
            words: terms.len(),
            unused,
        })
    }

    /// The `k` passages whose words best match `text` by BM25, best first.
    /// Words found in more than [`COMMON_WORD_PASSAGES`] passages are left
    /// out.
    pub fn keyword_chunks(&self, text: &str, k: usize) -> Result<Vec<i64>> {
        // The generation is read before any count, so a change during the
        // counts leaves them held under an older generation, read again next
        // time.
        let generation = self.chunks_generation()?;
        let mut telling = Vec::new();
        for term in match_terms(text) {
            if self.word_use(generation, &term)? != WordUse::Common {
                telling.push(term);
            }
        }
        let Some(expression) = any_of(&telling) else {
            return Ok(Vec::new());
        };
        let mut matched = self.conn.prepare_cached(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY rank LIMIT ?2",
        )?;
        let ids = matched
            .query_map(rusqlite::params![expression, k as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        Ok(ids)
    }

    /// Up to `k` passages holding `line`'s words as one phrase, in order:
    /// the candidates a verbatim check then reads. A line with no words
    /// matches nothing.
    pub fn phrase_chunks(&self, line: &str, k: usize) -> Result<Vec<i64>> {
        let words = phrase_words(line);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let expression = format!("text : \"{}\"", words.join(" "));
        let mut matched = self
            .conn
            .prepare_cached("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 LIMIT ?2")?;
        let ids = matched
            .query_map(rusqlite::params![expression, k as i64], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        Ok(ids)
    }

    /// Each chunk's cosine distance to `query` under `fingerprint`, the same
    /// distance the nearest-vector search gives; a chunk with no vector under
    /// that fingerprint yet is left out, as the lane cannot score it.
    pub fn chunk_distances(
        &self,
        chunks: &[i64],
        query: &[f32],
        fingerprint: &str,
    ) -> Result<Vec<(i64, f32)>> {
        let mut distance = self.conn.prepare_cached(
            "SELECT vec_distance_cosine(embedding, ?1) FROM chunk_vectors
             WHERE chunk_id = ?2 AND fingerprint = ?3",
        )?;
        let blob = vector_blob(query);
        let mut found = Vec::with_capacity(chunks.len());
        for &id in chunks {
            let d: Option<f32> = rusqlite::OptionalExtension::optional(
                distance.query_row(rusqlite::params![blob, id, fingerprint], |r| r.get(0)),
            )?;
            if let Some(d) = d {
                found.push((id, d));
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn vector(seed: usize) -> Vec<f32> {
        (0..384)
            .map(|d| (((d * 7 + seed * 13) % 11) as f32) - 5.0)
            .collect()
    }

    fn insert_chunk(conn: &Connection, id: i64, text: &str, v: &[f32]) {
        conn.execute(
            "INSERT INTO chunks (id, content_id, seq, heading_path, section, start, end, text)
             VALUES (?1, 1, ?1, '[\"Starters\"]', 0, 0, 1, ?2)",
            rusqlite::params![id, text],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO chunk_vectors (chunk_id, embedding, fingerprint) VALUES (?1, ?2, 'fp')",
            rusqlite::params![id, vector_blob(v)],
        )
        .unwrap();
    }

    /// A library from before v11 gets its chunks indexed by the upgrade; the
    /// index then follows every insert, edit and delete; each match carries
    /// the distance the nearest-vector search gives the same chunk.
    #[test]
    fn the_keyword_index_covers_old_chunks_and_follows_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        {
            crate::store::register_sqlite_vec();
            let c = Connection::open(&p).unwrap();
            for sql in &super::super::schema::MIGRATIONS[..10] {
                c.execute_batch(sql).unwrap();
            }
            c.execute_batch(
                "INSERT INTO contents (id, hash, extracted, chars) VALUES (1, 'h', '{}', 1);
                 PRAGMA user_version = 10;",
            )
            .unwrap();
            insert_chunk(&c, 1, "Feed the sourdough starter twice a day.", &vector(1));
        }
        let store = SqliteStore::open(&p).unwrap();
        let q = vector(2);
        let found = store.keyword_chunks("feeding sourdough", 10).unwrap();
        assert_eq!(found, [1], "the chunk from before the upgrade is indexed");
        let scored = store.chunk_distances(&found, &q, "fp").unwrap();
        let near = store.nearest_chunks_exact(&q, 1, "fp").unwrap();
        assert_eq!(scored[0].0, 1);
        assert!(
            (scored[0].1 - near[0].1).abs() < 1e-5,
            "{scored:?} {near:?}"
        );
        assert!(
            store
                .chunk_distances(&found, &q, "other")
                .unwrap()
                .is_empty()
        );

        insert_chunk(&store.conn, 2, "Rye flour makes a sourer loaf.", &vector(3));
        assert_eq!(store.keyword_chunks("rye", 10).unwrap(), [2]);
        store
            .conn
            .execute("UPDATE chunks SET text = 'Spelt flour' WHERE id = 2", [])
            .unwrap();
        assert!(store.keyword_chunks("rye", 10).unwrap().is_empty());
        assert_eq!(store.keyword_chunks("spelt", 10).unwrap(), [2]);
        store
            .conn
            .execute("DELETE FROM chunks WHERE id = 1", [])
            .unwrap();
        assert!(store.keyword_chunks("sourdough", 10).unwrap().is_empty());
        // The heading path is read as words too.
        assert_eq!(store.keyword_chunks("starters", 10).unwrap(), [2]);
    }

    #[test]
    fn a_query_becomes_its_quoted_content_words() {
        assert_eq!(
            match_expression("How do I feed a sourdough starter?").as_deref(),
            Some("\"feed\" OR \"sourdough\" OR \"starter\"")
        );
        // FTS5 syntax in a query is read as words, never as operators.
        assert_eq!(
            match_expression("NEAR(x AND \"y\") -z").as_deref(),
            Some("\"near\"")
        );
        assert_eq!(match_expression("how is the"), None);
        assert_eq!(match_expression("?!"), None);
    }

    /// A word in more passages than the limit picks nothing; the query's
    /// other words still do.
    #[test]
    fn a_word_in_too_many_passages_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        let tx = store.conn.unchecked_transaction().unwrap();
        tx.execute(
            "INSERT INTO contents (id, hash, extracted, chars) VALUES (1, 'h', '{}', 1)",
            [],
        )
        .unwrap();
        let n = COMMON_WORD_PASSAGES as i64 + 1;
        for id in 1..=n {
            let text = if id == n { "flour and water" } else { "water" };
            tx.execute(
                "INSERT INTO chunks (id, content_id, seq, heading_path, section, start, end, text)
                 VALUES (?1, 1, ?1, '[]', 0, 0, 1, ?2)",
                rusqlite::params![id, text],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        assert!(store.keyword_chunks("water", 10).unwrap().is_empty());
        assert_eq!(store.keyword_chunks("water flour", 10).unwrap(), [n]);
        // One passage fewer, and the word counts again.
        store
            .conn
            .execute("DELETE FROM chunks WHERE id = 1", [])
            .unwrap();
        assert_eq!(store.keyword_chunks("water", 3).unwrap().len(), 3);
    }

    /// The words of a query no passage uses, in any inflection the index
    /// stems alike; function words are not counted; a passage added that
    /// uses one makes it used.
    #[test]
    fn a_query_word_no_passage_uses_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        store
            .conn
            .execute(
                "INSERT INTO contents (id, hash, extracted, chars) VALUES (1, 'h', '{}', 1)",
                [],
            )
            .unwrap();
        insert_chunk(
            &store.conn,
            1,
            "Feed the sourdough starter twice a day.",
            &vector(1),
        );
        let v = store
            .vocabulary("feeding the Sourdough for basketball")
            .unwrap();
        assert_eq!(v.words, 3);
        assert_eq!(v.unused, ["basketball"]);
        insert_chunk(
            &store.conn,
            2,
            "Basketball courts are 28 m long.",
            &vector(2),
        );
        let v = store
            .vocabulary("feeding the Sourdough for basketball")
            .unwrap();
        assert_eq!((v.words, v.unused.len()), (3, 0));
        // A run of Chinese is one token to the index: not judged.
        let v = store.vocabulary("如何喂养酸面团 sourdough").unwrap();
        assert_eq!((v.words, v.unused.len()), (1, 0));
    }
}
