//! What the lanes read besides the chunk search ([`super::signs`]) and the
//! keyword index ([`super::keywords`]): the cards nearest a query, a passage
//! with its document's card, and the documents that hold a content. The
//! lanes decide; this file only fetches, so no lane names a backend.

use std::collections::HashMap;

use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};

use super::keywords::Vocabulary;
use super::signs::Search;
use super::{SqliteStore, vector_blob};
use crate::error::{Error, Result};
use crate::language::Language;
use crate::score::Cosine;

/// A document that holds a hit. Documents sharing one content are one hit
/// with several locations.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Location {
    pub doc: i64,
    pub title: String,
    pub source: String,
}

/// A card near the query, with what the subject lane reads of it.
pub struct NearCard {
    pub content: i64,
    pub cosine: Cosine,
    pub text: String,
    pub what: String,
    pub hash: String,
    pub language: Option<Language>,
}

/// What the heading veto reads of a passage: its headings, text, page and
/// language, and what its document's card says (key terms and `what:` line).
pub struct Passage {
    pub content: i64,
    pub heading_path: Vec<String>,
    pub text: String,
    pub page: Option<u32>,
    pub key_terms: Vec<String>,
    pub what: Option<String>,
    /// The passage is its document's only chunk.
    pub only_chunk: bool,
    /// The passage's language, none when its text does not tell.
    pub language: Option<Language>,
}

/// What the topic lane asks the store for its candidates: the query's
/// vector (made by `fingerprint`) and its text, and how many of each side.
pub struct TopicAsk<'a> {
    pub vector: &'a [f32],
    pub text: &'a str,
    pub k: usize,
    pub fingerprint: &'a str,
}

/// The topic lane's candidates as fetched, before it decides anything: the
/// `k` nearest chunks, nearest first, and how they were searched; the `k`
/// best keyword matches, best first; each with its content and distance,
/// so the lane pools them without reading again; and the query's words the
/// library never uses.
pub struct TopicCandidates {
    pub nearest: Vec<NearChunk>,
    pub search: Search,
    pub keyword: Vec<KeywordMatch>,
    pub vocabulary: Vocabulary,
}

/// A chunk the nearest-vector search found: its id, its content, and its
/// cosine distance to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearChunk {
    pub chunk: i64,
    pub content: i64,
    pub distance: f32,
}

/// A chunk the keyword search found: its id, its content, and its cosine
/// distance to the query, none while it has no vector of the asked
/// fingerprint (the lane cannot score it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeywordMatch {
    pub chunk: i64,
    pub content: i64,
    pub distance: Option<f32>,
}

/// A batch of reads by id: each id found, with what was read of it; an id
/// not found (deleted since the search) is absent.
pub type ById<T> = HashMap<i64, T>;

impl SqliteStore {
    /// The topic lane's candidates, one read after the other (SQLite's reads
    /// share the one connection).
    pub fn topic_candidates(&self, ask: &TopicAsk<'_>) -> Result<TopicCandidates> {
        let (nearest, search) = self.nearest_chunks(ask.vector, ask.k, ask.fingerprint)?;
        let keyword = self.keyword_chunks(ask.text, ask.k)?;
        let found: Vec<i64> = nearest
            .iter()
            .map(|&(chunk, _)| chunk)
            .chain(keyword.iter().copied())
            .collect();
        let contents = self.chunk_contents(&found)?;
        let distances: ById<f32> = self
            .chunk_distances(&keyword, ask.vector, ask.fingerprint)?
            .into_iter()
            .collect();
        Ok(TopicCandidates {
            nearest: nearest
                .into_iter()
                .filter_map(|(chunk, distance)| {
                    Some(NearChunk {
                        chunk,
                        content: *contents.get(&chunk)?,
                        distance,
                    })
                })
                .collect(),
            search,
            keyword: keyword
                .into_iter()
                .filter_map(|chunk| {
                    Some(KeywordMatch {
                        chunk,
                        content: *contents.get(&chunk)?,
                        distance: distances.get(&chunk).copied(),
                    })
                })
                .collect(),
            vocabulary: self.vocabulary(ask.text)?,
        })
    }

    /// Each passage with what its document's card says and the documents
    /// that hold it, oldest first; a chunk deleted since the search, or one
    /// no document holds any more, is absent.
    pub fn passages_with_locations(
        &self,
        chunks: &[i64],
    ) -> Result<ById<(Passage, Vec<Location>)>> {
        let passages = self.passages(chunks)?;
        let contents: Vec<i64> = passages.values().map(|p| p.content).collect();
        let locations = self.locations_of(&contents)?;
        Ok(passages
            .into_iter()
            .filter_map(|(chunk, p)| {
                let held = locations.get(&p.content)?.clone();
                Some((chunk, (p, held)))
            })
            .collect())
    }

    /// Every document whose content is `content_id`, oldest first.
    pub fn locations(&self, content_id: i64) -> Result<Vec<Location>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, title, source FROM documents WHERE content_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([content_id], |r| {
            Ok(Location {
                doc: r.get(0)?,
                title: r.get(1)?,
                source: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The `k` cards nearest the query by cosine, nearest first, among those
    /// whose vectors `fingerprint` made.
    pub fn nearest_cards(
        &self,
        query_vec: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<NearCard>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT v.content_id, v.distance, c.text, c.what, t.hash, t.language
             FROM card_vectors v JOIN cards c ON c.content_id = v.content_id JOIN contents t ON t.id = v.content_id
             WHERE v.embedding MATCH ?1 AND k = ?2 AND v.fingerprint = ?3
             ORDER BY v.distance",
        )?;
        let rows = stmt.query_map(
            rusqlite::params![vector_blob(query_vec), k as i64, fingerprint],
            |r| {
                Ok(NearCard {
                    content: r.get(0)?,
                    cosine: Cosine::from_distance(r.get::<_, f32>(1)?),
                    text: r.get(2)?,
                    what: r.get(3)?,
                    hash: r.get(4)?,
                    language: r
                        .get::<_, Option<String>>(5)?
                        .as_deref()
                        .and_then(Language::from_code),
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The same as [`SqliteStore::nearest_cards`]: sqlite-vec's KNN is
    /// exact.
    pub fn nearest_cards_exact(
        &self,
        query_vec: &[f32],
        k: usize,
        fingerprint: &str,
    ) -> Result<Vec<NearCard>> {
        self.nearest_cards(query_vec, k, fingerprint)
    }

    /// Each content's documents, oldest first ([`Self::locations`]); a
    /// content no document holds is absent.
    pub fn locations_of(&self, contents: &[i64]) -> Result<ById<Vec<Location>>> {
        each_found(contents, |c| {
            Ok(Some(self.locations(c)?).filter(|l| !l.is_empty()))
        })
    }

    /// Each chunk's content; a chunk deleted since the search is absent.
    pub fn chunk_contents(&self, chunks: &[i64]) -> Result<ById<i64>> {
        each_found(chunks, |c| self.chunk_content(c))
    }

    /// Each passage with what its document's card says ([`Self::passage`]).
    pub fn passages(&self, chunks: &[i64]) -> Result<ById<Passage>> {
        each_found(chunks, |c| self.passage(c))
    }

    /// A passage and what its document's card says; none for a chunk
    /// deleted since the search.
    pub fn passage(&self, chunk: i64) -> Result<Option<Passage>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.content_id, c.heading_path, c.text, c.page, d.key_terms, d.what,
                    (SELECT COUNT(*) FROM chunks o WHERE o.content_id = c.content_id), c.language
             FROM chunks c LEFT JOIN cards d ON d.content_id = c.content_id WHERE c.id = ?1",
        )?;
        let Some(row) = stmt
            .query_row([chunk], |r| {
                Ok(PassageRow {
                    content: r.get(0)?,
                    heading_path: r.get(1)?,
                    text: r.get(2)?,
                    page: r.get(3)?,
                    key_terms: r.get(4)?,
                    what: r.get(5)?,
                    chunks: r.get(6)?,
                    language: r.get(7)?,
                })
            })
            .optional()?
        else {
            return Ok(None);
        };
        row.read(chunk).map(Some)
    }
}

/// A batch read one id at a time, as SQLite in the same process reads it
/// as fast as a batch: each id `read` finds.
fn each_found<T>(ids: &[i64], read: impl Fn(i64) -> Result<Option<T>>) -> Result<ById<T>> {
    let mut found = ById::new();
    for &id in ids {
        if let Some(t) = read(id)? {
            found.insert(id, t);
        }
    }
    Ok(found)
}

/// A passage's row as both stores read it, its JSON columns not yet read.
pub(super) struct PassageRow {
    pub content: i64,
    pub heading_path: String,
    pub text: String,
    pub page: Option<u32>,
    pub key_terms: Option<String>,
    pub what: Option<String>,
    pub chunks: i64,
    pub language: Option<String>,
}

impl PassageRow {
    /// The passage, its headings and its card's key terms read from JSON.
    pub fn read(self, chunk: i64) -> Result<Passage> {
        let heading_path: Vec<String> = serde_json::from_str(&self.heading_path)
            .map_err(|e| Error::Corrupt(format!("chunk {chunk}: {e}")))?;
        let key_terms: Vec<String> = match self.key_terms {
            Some(j) => serde_json::from_str(&j)
                .map_err(|e| Error::Corrupt(format!("card of content {}: {e}", self.content)))?,
            None => Vec::new(),
        };
        Ok(Passage {
            content: self.content,
            heading_path,
            text: self.text,
            page: self.page,
            key_terms,
            what: self.what,
            only_chunk: self.chunks == 1,
            language: self.language.as_deref().and_then(Language::from_code),
        })
    }
}
