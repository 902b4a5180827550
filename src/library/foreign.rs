//! The library's foreign sources: kept in its file, asked beside its lanes
//! ([`crate::foreign`]).

use super::Library;
use crate::error::{Error, Result};
use crate::foreign::{self, CrossEncoder, Discovery, LastUse, Source, ask::Elsewhere, saved};

impl Library {
    /// Every foreign source, by name.
    pub fn foreign_sources(&self) -> Result<Vec<Source>> {
        saved::list(&self.store)
    }

    /// The source called `name`.
    pub fn foreign_source(&self, name: &str) -> Result<Source> {
        saved::get(&self.store, name)?.ok_or_else(|| Error::UnknownSource(name.to_string()))
    }

    /// Saves `source` (new or changed). Discovery runs again first when the
    /// collection answers, so a corrected source loses its stale schema
    /// error; when it does not, the last reading is kept and its failure
    /// returned beside the save.
    pub fn save_foreign_source(&mut self, mut source: Source) -> Result<Option<String>> {
        let failure = match source.at.collection().discover(foreign::DEFAULT_BUDGET * 4) {
            Ok(found) => {
                source.discovery = Some(found);
                None
            }
            Err(e) => Some(e),
        };
        saved::put(&self.store, &source)?;
        Ok(failure)
    }

    /// Reads the collection again and keeps what it read.
    pub fn discover_foreign_source(&mut self, name: &str) -> Result<Discovery> {
        let mut source = self.foreign_source(name)?;
        let found = source
            .at
            .collection()
            .discover(foreign::DEFAULT_BUDGET * 4)
            .map_err(|reason| Error::SourceUnavailable {
                name: name.to_string(),
                reason,
            })?;
        source.discovery = Some(found.clone());
        saved::put(&self.store, &source)?;
        Ok(found)
    }

    /// Forgets the source called `name`.
    pub fn remove_foreign_source(&mut self, name: &str) -> Result<()> {
        if saved::remove(&self.store, name)? {
            Ok(())
        } else {
            Err(Error::UnknownSource(name.to_string()))
        }
    }

    /// The cross-encoder as gate 2 sees it (a file check, no load).
    pub fn cross_encoder(&self) -> CrossEncoder {
        CrossEncoder::of(&self.config.models)
    }

    /// Asks the foreign sources for `query`; records each source's outcome
    /// as its last use. A library with no sources asks nothing and embeds
    /// nothing.
    pub fn ask_elsewhere(&mut self, query: &str) -> Result<Elsewhere> {
        let sources = self.foreign_sources()?;
        if sources.is_empty() {
            return Ok(Elsewhere::default());
        }
        let vector = self.embed_query(query)?;
        let cross_encoder = self.cross_encoder();
        let models = &self.config.models;
        let reranker = &mut self.reranker;
        let elsewhere = foreign::ask::ask(
            &sources,
            &cross_encoder,
            query,
            &vector,
            foreign::DEFAULT_BUDGET,
            || reranker.get(models),
        );
        let at = crate::store::now();
        for report in &elsewhere.sources {
            saved::record_use(
                &self.store,
                &report.source,
                LastUse {
                    at,
                    outcome: report.outcome.clone(),
                },
            )?;
        }
        Ok(elsewhere)
    }

    /// The cross-encoder's logit for `query` against each of the `k`
    /// passages nearest it in this library, with the document each belongs
    /// to: the (query, passage) pairs a foreign collection of the same
    /// passages would bring, scored as the foreign lane scores them. How
    /// `carrel eval` calibrates [`foreign::PASSAGE_FLOOR`].
    pub fn passage_logits(&mut self, query: &str, k: usize) -> Result<Vec<(i64, f32)>> {
        let fp = crate::models::Fingerprints::of(&self.config.models)?;
        let vector = self.embed_query(query)?;
        let (nearest, _) = self.store.nearest_chunks(&vector, k, &fp.chunk)?;
        let mut passages = Vec::new();
        for (chunk, _) in nearest {
            let row: Option<(i64, String)> =
                rusqlite::OptionalExtension::optional(self.store.conn.query_row(
                    "SELECT content_id, text FROM chunks WHERE id = ?1",
                    [chunk],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                ))?;
            let Some((content, text)) = row else { continue };
            if let Some(first) = crate::lanes::locations(&self.store, content)?.first() {
                passages.push((first.doc, text));
            }
        }
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = passages.iter().map(|(_, t)| t.as_str()).collect();
        let reranker = self
            .reranker
            .get(&self.config.models)
            .map_err(Error::Unavailable)?;
        let logits = reranker.rerank(query, &texts)?;
        Ok(passages.iter().map(|(d, _)| *d).zip(logits).collect())
    }
}
