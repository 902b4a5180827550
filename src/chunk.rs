//! The one owner of chunk boundaries. [`plan`] is called by the writer (ingest)
//! and by the probe (`carrel probe`), so the count a probe predicts is the count
//! the library stores.
//!
//! *Document mode* packs paragraphs and list items of one section together up
//! to [`DOCUMENT_CEILING`] characters, splitting an over-long paragraph at
//! sentence boundaries. It never makes one chunk per bullet. *Memory mode* is
//! the fact chunker of memory systems (one line, one chunk); it exists so the
//! difference can be measured, as in `004_c58a719d7463d7eb.txt`.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use text_splitter::{ChunkConfig, TextSplitter};

use crate::extract::Extracted;

/// Bumped whenever [`plan`] would cut the same text differently. It is part
/// of the embedding fingerprint, so a new chunker re-chunks and re-embeds.
pub const CHUNKER_VERSION: u32 = 1;

/// Document-mode ceiling in characters: a passage of a few paragraphs, which
/// all-MiniLM-L6-v2 (256 tokens) sees whole. The background document's store
/// was 4× denser than it should have been with fact chunks; 600 is its ceiling.
pub const DOCUMENT_CEILING: usize = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Document,
    Memory,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "document" => Ok(Mode::Document),
            "memory" => Ok(Mode::Memory),
            other => Err(format!(
                "unknown chunk mode `{other}`: use `document` or `memory`"
            )),
        }
    }
}

/// One chunk: a byte range of one section's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkSpan {
    pub section: usize,
    pub start: usize,
    pub end: usize,
}

impl ChunkSpan {
    pub fn text<'a>(&self, doc: &'a Extracted) -> &'a str {
        &doc.sections[self.section].text[self.start..self.end]
    }
}

/// Where the chunks of `doc` begin and end, in the given mode.
pub fn plan(doc: &Extracted, mode: Mode) -> Vec<ChunkSpan> {
    let mut out = Vec::new();
    for (i, section) in doc.sections.iter().enumerate() {
        let ranges = match mode {
            Mode::Document => pack(&section.text, &units(&section.text), DOCUMENT_CEILING),
            Mode::Memory => lines(&section.text),
        };
        out.extend(ranges.into_iter().map(|r| ChunkSpan {
            section: i,
            start: r.start,
            end: r.end,
        }));
    }
    out
}

/// Count and mean size of a plan, as `carrel probe` reports them.
pub fn summary(doc: &Extracted, spans: &[ChunkSpan]) -> (usize, f64) {
    if spans.is_empty() {
        return (0, 0.0);
    }
    let chars: usize = spans.iter().map(|s| s.text(doc).chars().count()).sum();
    (spans.len(), chars as f64 / spans.len() as f64)
}

/// The non-empty lines of `text` (memory mode: one fact per chunk).
fn lines(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if !trimmed.trim().is_empty() {
            let lead = trimmed.len() - trimmed.trim_start().len();
            out.push(pos + lead..pos + trimmed.len());
        }
        pos += line.len();
    }
    out
}

/// Packing units: paragraphs; a paragraph over the ceiling falls apart into
/// its lines (list items), and a line over the ceiling into sentence runs.
fn units(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut pos = 0;
    for para in text.split("\n\n") {
        let range = pos..pos + para.len();
        pos += para.len() + 2;
        if para.trim().is_empty() {
            continue;
        }
        if para.chars().count() <= DOCUMENT_CEILING {
            out.push(range);
            continue;
        }
        for line in lines(para) {
            let line = range.start + line.start..range.start + line.end;
            if text[line.clone()].chars().count() <= DOCUMENT_CEILING {
                out.push(line);
            } else {
                out.extend(sentences(text, line));
            }
        }
    }
    out
}

/// Splits an over-long line at sentence boundaries (then words) into runs of
/// at most the ceiling.
fn sentences(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let splitter = TextSplitter::new(ChunkConfig::new(DOCUMENT_CEILING));
    splitter
        .chunk_indices(&text[range.clone()])
        .map(|(offset, piece)| range.start + offset..range.start + offset + piece.len())
        .collect()
}

/// Greedy packing towards an even size: a section of `L` characters becomes
/// `ceil(L / ceiling)` chunks of about `L / n` each, none over the ceiling
/// (unless a single unit is), so no section ends in a 20-character stub.
fn pack(text: &str, units: &[Range<usize>], ceiling: usize) -> Vec<Range<usize>> {
    let len = |r: &Range<usize>| text[r.clone()].chars().count();
    let total: usize = units.iter().map(len).sum::<usize>() + 2 * units.len().saturating_sub(1);
    if total == 0 {
        return Vec::new();
    }
    let n = total.div_ceil(ceiling);
    let target = total / n;
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut current: Option<Range<usize>> = None;
    for unit in units {
        current = Some(match current {
            None => unit.clone(),
            Some(cur) => {
                let cur_len = len(&cur);
                let joined = cur.start..unit.end;
                if cur_len >= target || len(&joined) > ceiling {
                    out.push(cur);
                    unit.clone()
                } else {
                    joined
                }
            }
        });
    }
    out.extend(current);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Section;

    fn doc(sections: &[(&str, &str)]) -> Extracted {
        Extracted {
            title: "t".into(),
            sections: sections
                .iter()
                .map(|(h, t)| Section {
                    heading_path: vec![h.to_string()],
                    text: t.to_string(),
                    page: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    fn bullets(n: usize) -> String {
        (0..n)
            .map(|i| format!("- Step {i}: check the valve pressure and write the reading down"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn document_mode_never_makes_one_chunk_per_bullet() {
        let d = doc(&[("Checklist", &bullets(40))]);
        let spans = plan(&d, Mode::Document);
        assert!(spans.len() <= 6, "{} chunks for 40 bullets", spans.len());
        assert_eq!(plan(&d, Mode::Memory).len(), 40);
    }

    #[test]
    fn no_chunk_exceeds_the_ceiling_and_spans_cover_all_words() {
        let long_para = "This sentence is about pumps and valves. ".repeat(60);
        let text = format!("{long_para}\n\n{}\n\nShort closing paragraph.", bullets(15));
        let d = doc(&[("A", &text)]);
        let spans = plan(&d, Mode::Document);
        for s in &spans {
            assert!(
                s.text(&d).chars().count() <= DOCUMENT_CEILING,
                "{}",
                s.text(&d).len()
            );
        }
        let words: usize = spans
            .iter()
            .map(|s| s.text(&d).split_whitespace().count())
            .sum();
        assert_eq!(words, text.split_whitespace().count());
    }

    #[test]
    fn chunks_stay_inside_their_section() {
        let d = doc(&[("One", "Alpha paragraph."), ("Two", "Beta paragraph.")]);
        let spans = plan(&d, Mode::Document);
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[1].text(&d), "Beta paragraph.");
    }

    #[test]
    fn sections_split_evenly_without_stubs() {
        let text = (0..11)
            .map(|i| format!("Paragraph {i} has some words in it for packing."))
            .collect::<Vec<_>>()
            .join("\n\n");
        let d = doc(&[("A", &text)]);
        let sizes: Vec<usize> = plan(&d, Mode::Document)
            .iter()
            .map(|s| s.text(&d).chars().count())
            .collect();
        let min = *sizes.iter().min().unwrap();
        assert!(min >= 150, "stub chunk: {sizes:?}");
    }
}
