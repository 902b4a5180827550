//! The ingest pipeline: source → read → extract → hash → dedup → chunk →
//! card → embed → write. Prepared documents are embedded in cross-document
//! batches (small files would otherwise run the model on one or two texts at
//! a time), then each document is written in its own transaction.

mod fetch;
mod pipeline;
mod report;
mod sources;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use fetch::{FETCH_TIMEOUT, FetchPolicy, HostResolver, SystemResolver};
use pipeline::NewContent;
pub use pipeline::Pipeline;
use report::Meter;
pub use report::{AddReport, AddedDocument, Failure, Progress};
pub use sources::{Expanded, FolderScan, SkipReason, Skipped, Source, expand, is_url, scan_folder};

use crate::card::{self, Card};
use crate::chunk::{self, ChunkSpan, Mode};
use crate::error::Result;
use crate::extract::worker::Isolation;
use crate::extract::{self, BrokenReason, Extracted, Kind};
use crate::models::{Embedder, Fingerprints, Ticket, hex};
use crate::store::{ContentToWrite, Holding, NewChunk, NewDocument, Reembedded, Store, Validators};

/// Files over this size are refused unread (a listed `too_large` reason).
/// The largest real document in the measured corpora, a 2,415-page PDF
/// manual, is about 14 MB.
pub const MAX_FILE_BYTES: u64 = 40_000_000;

/// Chunks kept per document; the rest is cut and the cut is recorded as
/// `truncated_at_chunk`. 5,000 × 600 chars is about 3 MB of text.
pub const MAX_CHUNKS_PER_DOCUMENT: usize = 5_000;

/// A request to stop an ingest: set from another thread (Ctrl-C, the app's
/// Cancel button), read by the pipeline between documents. Every document
/// already written stays, and a rerun of the same add reads only the rest.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for a signal handler to set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_chunks: usize,
    /// Whether URLs on loopback, private and link-local addresses may be fetched.
    pub allow_private_urls: bool,
    /// The limits of the extraction worker each file is read in.
    pub isolation: Isolation,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: MAX_FILE_BYTES,
            max_chunks: MAX_CHUNKS_PER_DOCUMENT,
            allow_private_urls: false,
            isolation: Isolation::default(),
        }
    }
}

/// The one place the per-document chunk cap is applied: the writer and the
/// probe both call it. Returns the kept spans and where the cut fell.
pub fn plan_capped(
    doc: &Extracted,
    mode: Mode,
    limits: &Limits,
) -> (Vec<ChunkSpan>, Option<usize>) {
    let mut spans = chunk::plan(doc, mode);
    if spans.len() > limits.max_chunks {
        spans.truncate(limits.max_chunks);
        return (spans, Some(limits.max_chunks));
    }
    (spans, None)
}

/// The content hash: over the normalised sections (heading paths, pages and
/// text), not the title, so the same body under two names is stored once.
pub fn content_hash(doc: &Extracted) -> String {
    let mut h = Sha256::new();
    for s in &doc.sections {
        h.update(s.heading_path.join("\u{1f}").as_bytes());
        h.update(b"\x1e");
        h.update(s.page.map(|p| p.to_string()).unwrap_or_default().as_bytes());
        h.update(b"\x1e");
        h.update(s.text.as_bytes());
        h.update(b"\x1d");
    }
    hex(&h.finalize())
}

/// The text embedded for a chunk: its heading path, then the passage.
pub fn chunk_embed_text(heading_path: &[String], text: &str) -> String {
    if heading_path.is_empty() {
        text.to_string()
    } else {
        format!("{}\n{text}", heading_path.join(" > "))
    }
}

/// What a path is when it is neither a regular file nor a folder: opening a
/// FIFO blocks until a writer comes, and a device never ends.
pub(crate) fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_block_device() || t.is_char_device() {
            return Some("a device");
        }
    }
    (!meta.is_file()).then_some("not a regular file")
}

/// Re-embeds every content whose vectors were made by another fingerprint
/// (another model, max length, chunker or card builder). Returns how many
/// contents were refreshed.
pub fn refresh_stale(
    store: &mut Store,
    embedder: &mut dyn Embedder,
    fp: &Fingerprints,
    limits: &Limits,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&Progress),
) -> Result<usize> {
    let stale = store.stale_contents(&fp.chunk, &fp.card)?;
    if stale.is_empty() {
        return Ok(0); // nothing to do, and the model is never loaded
    }
    let mut meter = Meter::start(stale.len(), 0);
    meter.p.current = "re-embedding".into();
    for s in &stale {
        if cancel.is_cancelled() {
            break;
        }
        progress(meter.now());
        let hash = store.content_hash(s.id)?;
        let content = NewContent::build(hash, s.extracted.clone(), limits);
        let texts = content.texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut vectors = embedder.embed(&refs)?;
        let card_vec = vectors.pop();
        let card = match (s.card_stale, card_vec.as_deref()) {
            (true, Some(v)) => Some((&content.card, v)),
            (true, None) => {
                return Err(crate::Error::Embedding(
                    "no vector came back for the card".into(),
                ));
            }
            (false, _) => None,
        };
        let rechunk = s.chunks_stale || content.truncated_at_chunk != s.truncated_at_chunk;
        let chunks = rechunk.then_some((
            content.chunks.as_slice(),
            vectors.as_slice(),
            content.truncated_at_chunk,
        ));
        store.write_reembedded(
            Reembedded {
                content_id: s.id,
                chunks,
                card,
            },
            fp,
        )?;
        meter.settled(content.chunks.len(), 0);
    }
    meter.p.current.clear();
    progress(meter.now());
    Ok(meter.p.done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Section;

    fn doc(title: &str, text: &str) -> Extracted {
        Extracted {
            title: title.into(),
            sections: vec![Section {
                heading_path: vec!["H".into()],
                text: text.into(),
                page: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn hash_ignores_title_but_not_text_or_headings() {
        let a = doc("One", "same body");
        assert_eq!(content_hash(&a), content_hash(&doc("Two", "same body")));
        assert_ne!(content_hash(&a), content_hash(&doc("One", "other body")));
        let mut moved = a.clone();
        moved.sections[0].heading_path = vec!["Other".into()];
        assert_ne!(content_hash(&a), content_hash(&moved));
    }

    #[test]
    fn cap_records_where_it_cut() {
        let text = (0..50)
            .map(|i| format!("Paragraph {i}. ").repeat(30))
            .collect::<Vec<_>>()
            .join("\n\n");
        let d = doc("t", &text);
        let limits = Limits {
            max_chunks: 7,
            ..Limits::default()
        };
        let (spans, cut) = plan_capped(&d, Mode::Document, &limits);
        assert_eq!(spans.len(), 7);
        assert_eq!(cut, Some(7));
        assert_eq!(plan_capped(&d, Mode::Document, &Limits::default()).1, None);
    }
}
