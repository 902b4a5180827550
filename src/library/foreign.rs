//! The library's foreign sources: kept in its file, asked beside its lanes
//! ([`crate::foreign`]).

use super::Library;
use crate::error::{Error, Result};
use crate::foreign::{
    self, Acknowledgement, CrossEncoder, Declared, Discovery, Kind, LastUse, Source, SourceView,
    ask::Elsewhere, saved,
};

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

    /// Every foreign source as every surface shows it: with whether
    /// retrieval reads it, or why not.
    pub fn foreign_source_views(&self) -> Result<Vec<SourceView>> {
        let cross_encoder = self.cross_encoder();
        Ok(self
            .foreign_sources()?
            .iter()
            .map(|s| SourceView::of(s, &cross_encoder))
            .collect())
    }

    /// One source as every surface shows it.
    pub fn foreign_source_view(&self, name: &str) -> Result<SourceView> {
        Ok(SourceView::of(
            &self.foreign_source(name)?,
            &self.cross_encoder(),
        ))
    }

    /// Declares a source, or changes one: a change keeps what was recorded
    /// (enabled, the last use, and the acknowledgement while the source
    /// stays unscoped; a scope makes it moot). Saving reads the schema
    /// again; its failure, if any, comes back beside the save.
    pub fn declare_foreign_source(
        &mut self,
        name: &str,
        at: Kind,
        declared: Declared,
    ) -> Result<Option<String>> {
        let source = match saved::get(&self.store, name)? {
            Some(mut old) => {
                // An acknowledgement accepted this collection unscoped: a
                // scope, or another collection, ends it.
                if declared.scope.is_some() || old.at != at {
                    old.acknowledgement = None;
                }
                old.at = at;
                old.declared = declared;
                old
            }
            None => Source {
                name: name.to_string(),
                at,
                declared,
                enabled: false,
                discovery: None,
                acknowledgement: None,
                last_used: None,
            },
        };
        self.save_foreign_source(source)
    }

    /// Takes what discovery last read as the declaration; false when it has
    /// never read anything.
    pub fn adopt_foreign_source(&mut self, name: &str) -> Result<bool> {
        let mut source = self.foreign_source(name)?;
        if !foreign::adopt(&mut source) {
            return Ok(false);
        }
        self.save_foreign_source(source)?;
        Ok(true)
    }

    /// Records that `by` accepts that the unscoped source `name` may return
    /// any of its points: who, when, and the sentence.
    pub fn acknowledge_foreign_source(&mut self, name: &str, by: &str) -> Result<Acknowledgement> {
        let mut source = self.foreign_source(name)?;
        let ack = Acknowledgement {
            by: by.trim().to_string(),
            at: crate::store::now(),
            sentence: foreign::unscoped_sentence(name),
        };
        if ack.by.is_empty() {
            return Err(Error::SourceRefused {
                name: name.to_string(),
                sentence: "an acknowledgement needs the name of who accepts it".into(),
                change: "give your name".into(),
            });
        }
        source.acknowledgement = Some(ack.clone());
        self.save_foreign_source(source)?;
        Ok(ack)
    }

    /// Turns the source on or off; on is refused, with the reason, when it
    /// has no text key or no scope and no acknowledgement.
    pub fn set_foreign_source_enabled(&mut self, name: &str, enabled: bool) -> Result<()> {
        let mut source = self.foreign_source(name)?;
        if enabled {
            foreign::enable(&mut source).map_err(|reason| Error::SourceRefused {
                name: name.to_string(),
                sentence: reason.sentence(),
                change: reason.where_to_change(name),
            })?;
        } else {
            source.enabled = false;
        }
        self.save_foreign_source(source)?;
        Ok(())
    }

    /// Whether the source's server answers and holds its collection: the
    /// reason when not.
    pub fn test_foreign_source(&self, name: &str) -> Result<std::result::Result<(), String>> {
        let source = self.foreign_source(name)?;
        Ok(source.at.collection().test(foreign::DEFAULT_BUDGET * 4))
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

    /// Reads again the schema of every source last read over `older_than`
    /// ago (or never): the periodic sweep that lets a source corrected on
    /// its server lose its stale schema error, and one changed under its
    /// declaration gain one, without anyone pressing Read schema. Each
    /// source's outcome, by name; a source that does not answer keeps its
    /// last reading.
    pub fn rediscover_foreign_sources(
        &mut self,
        older_than: std::time::Duration,
    ) -> Result<Vec<(String, std::result::Result<(), String>)>> {
        let due: Vec<Source> = self
            .foreign_sources()?
            .into_iter()
            .filter(|s| {
                s.discovery
                    .as_ref()
                    .is_none_or(|d| crate::store::now() - d.read_at >= older_than.as_secs() as i64)
            })
            .collect();
        let mut outcomes = Vec::new();
        for source in due {
            let read = source.at.collection().discover(foreign::DEFAULT_BUDGET * 4);
            let outcome = match read {
                Ok(found) => {
                    // Read again: only the reading changes, and only while
                    // the source still names the collection that was read.
                    if let Some(mut now) = saved::get(&self.store, &source.name)?
                        && now.at == source.at
                    {
                        now.discovery = Some(found);
                        saved::put(&self.store, &now)?;
                    }
                    Ok(())
                }
                Err(reason) => Err(reason),
            };
            outcomes.push((source.name, outcome));
        }
        Ok(outcomes)
    }

    /// Forgets the source called `name`.
    pub fn remove_foreign_source(&mut self, name: &str) -> Result<()> {
        if saved::remove(&self.store, name)? {
            Ok(())
        } else {
            Err(Error::UnknownSource(name.to_string()))
        }
    }

    /// The cross-encoder as gate 2 sees it: the loaded one's id, else a
    /// file check (never a load).
    pub fn cross_encoder(&self) -> CrossEncoder {
        match &self.reranker {
            super::retrieval::RerankerSlot::Loaded(r) => {
                CrossEncoder::loaded(r.model_id().to_string())
            }
            _ => CrossEncoder::of(&self.config.models),
        }
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
            let row = self.store.chunk_text(chunk)?;
            let Some((content, text)) = row else { continue };
            if let Some(first) = self.store.locations(content)?.first() {
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
