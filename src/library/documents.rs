//! The library's documents as a user sees them: listed with their state,
//! read whole with their card, their passages, removed, moved on a rename.

use std::path::Path;

use serde::Serialize;

use super::Library;
use crate::card::Card;
use crate::error::{Error, Result};
use crate::extract::Section;
use crate::ingest;
use crate::lanes;
use crate::models::Fingerprints;
use crate::store::{self, Density, DocumentRow};

/// A document with everything `carrel read` shows.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct DocumentText {
    pub document: DocumentRow,
    pub card: Option<Card>,
    pub sections: Vec<Section>,
}

impl Library {
    /// Every document, with its state judged against the current models.
    pub fn list(&self) -> Result<Vec<DocumentRow>> {
        let fp = Fingerprints::of(&self.config.models).ok();
        let mut docs = self.store.list(
            fp.as_ref().map(|f| f.chunk.as_str()),
            fp.as_ref().map(|f| f.card.as_str()),
        )?;
        docs.iter_mut().for_each(look_for_source);
        Ok(docs)
    }

    pub fn document(&self, id: i64) -> Result<DocumentRow> {
        let fp = Fingerprints::of(&self.config.models).ok();
        let mut doc = self.store.document(
            id,
            fp.as_ref().map(|f| f.chunk.as_str()),
            fp.as_ref().map(|f| f.card.as_str()),
        )?;
        look_for_source(&mut doc);
        Ok(doc)
    }

    pub fn read(&self, id: i64) -> Result<DocumentText> {
        let document = self.document(id)?;
        let (card, sections) = match self.store.document_content(id)? {
            Some(c) => (self.store.card(c)?, self.store.extracted(c)?.sections),
            None => (None, Vec::new()),
        };
        Ok(DocumentText {
            document,
            card,
            sections,
        })
    }

    /// A document's passages. A broken document has none to give: that is
    /// an error naming its reason, never an empty list.
    pub fn chunks(&self, id: i64) -> Result<Vec<store::ChunkRow>> {
        match self.store.document_content(id)? {
            Some(c) => self.store.chunks(c),
            None => Err(Error::BrokenDocument {
                id,
                reason: self
                    .document(id)?
                    .broken_reason
                    .unwrap_or_else(|| "it has no indexed text".into()),
            }),
        }
    }

    pub fn remove(&mut self, id: i64) -> Result<()> {
        self.cache = lanes::Cache::default();
        self.store.remove_document(id)
    }

    /// Gives document `keep` the source of the fresh row `fresh` (a rename).
    pub fn move_document(&mut self, keep: i64, fresh: i64) -> Result<()> {
        self.cache = lanes::Cache::default();
        self.store.move_document(keep, fresh)
    }

    /// Chunk density per document, densest first: the check from
    /// `004_c58a719d7463d7eb.txt` (a 600 ceiling should show 400–600).
    pub fn density(&self) -> Result<Vec<Density>> {
        self.store.density()
    }
}

/// Sets `source_missing` for a file document whose file is gone.
fn look_for_source(doc: &mut DocumentRow) {
    doc.source_missing = !ingest::is_url(&doc.source) && !Path::new(&doc.source).exists();
}
