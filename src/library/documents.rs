//! The library's documents as a user sees them: listed with their state,
//! read whole with their card, their passages, removed, moved on a rename.
//! [`shown`] is the one owner of the state word a user sees.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// The one word a user sees for a document's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum DocState {
    Indexed,
    /// No text: the reason is the detail.
    Broken,
    /// The source is gone from where the document says.
    Missing,
    /// Vectors from another model or chunker, and this library is being
    /// re-embedded in this process right now.
    ReEmbedding,
    /// Vectors from another model or chunker, waiting for the next add.
    Stale,
    /// Cut at the size cap.
    Truncated,
}

/// A document's state as a user sees it: the word and what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Shown {
    pub state: DocState,
    pub detail: String,
}

/// A document with the state to show for it (the app's list).
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Listed {
    #[serde(flatten)]
    pub document: DocumentRow,
    pub shown: Shown,
}

/// Library folders with a re-embed under way in this process. The app lists
/// documents through one [`Library`] while another ingests into the same
/// folder, so the mark sits beside both, keyed by the folder.
static RE_EMBEDDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Marks `dir` as being re-embedded until dropped.
pub(super) struct ReEmbedding(PathBuf);

impl ReEmbedding {
    pub(super) fn start(dir: &Path) -> ReEmbedding {
        marks().push(dir.to_path_buf());
        ReEmbedding(dir.to_path_buf())
    }
}

impl Drop for ReEmbedding {
    fn drop(&mut self) {
        let mut marks = marks();
        if let Some(i) = marks.iter().position(|d| *d == self.0) {
            marks.swap_remove(i);
        }
    }
}

fn marks() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    crate::fault::lock(&RE_EMBEDDING)
}

impl Library {
    /// Whether this library's stale vectors are being replaced right now,
    /// by any [`Library`] on its folder in this process.
    pub fn re_embedding(&self) -> bool {
        marks().contains(&self.config.dir)
    }

    /// Every document with the state to show for it ([`shown`]).
    pub fn listed(&self) -> Result<Vec<Listed>> {
        let re_embedding = self.re_embedding();
        Ok(self
            .list()?
            .into_iter()
            .map(|document| Listed {
                shown: shown(&document, re_embedding),
                document,
            })
            .collect())
    }

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

/// What a user sees for `doc`: broken, then missing, then stale (or
/// re-embedding, while that runs), then truncated, else indexed. The one
/// owner of the rule; the app shows it and never derives it.
pub fn shown(doc: &DocumentRow, re_embedding: bool) -> Shown {
    let (state, detail) = if doc.state == "broken" {
        let reason = doc.broken_reason.clone();
        (DocState::Broken, reason.unwrap_or_else(|| "broken".into()))
    } else if doc.source_missing {
        (DocState::Missing, "the source file is gone".into())
    } else if doc.state == "stale" && re_embedding {
        let detail = "vectors from another model are being replaced";
        (DocState::ReEmbedding, detail.into())
    } else if doc.state == "stale" {
        let detail = "vectors from another model; re-embedded on the next add";
        (DocState::Stale, detail.into())
    } else if let Some(n) = doc.truncated_at_chunk {
        (DocState::Truncated, format!("cut at chunk {n} (size cap)"))
    } else {
        (DocState::Indexed, String::new())
    };
    Shown { state, detail }
}
