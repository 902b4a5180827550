//! One shape for every format: the extracted document, its sections under
//! their heading paths, the program that read it, and the text rules all
//! extractors share (normalisation, the section builder).

use super::*;

/// One run of text under one heading path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct Section {
    /// Headings from the outermost in, e.g. `["Library", "os — Misc", "Files"]`.
    pub heading_path: Vec<String>,
    pub text: String,
    /// 1-based page number, for PDFs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub page: Option<u32>,
}

/// The program that read a document's text: shown beside it (`carrel list`,
/// the Library), because a document read by a fallback or by OCR may read
/// differently from the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum Reader {
    /// Carrel's own reader of the format (scraper, pulldown-cmark, text).
    #[default]
    Native,
    /// lopdf + pdf-extract: the first PDF reader.
    PdfExtract,
    /// poppler's `pdftotext`: the second PDF reader, for what pdf-extract
    /// cannot read.
    Pdftotext,
    /// Tesseract OCR, on an image or on the rendered pages of a scanned PDF.
    Tesseract,
}

impl Reader {
    pub fn as_str(self) -> &'static str {
        match self {
            Reader::Native => "native",
            Reader::PdfExtract => "pdf-extract",
            Reader::Pdftotext => "pdftotext",
            Reader::Tesseract => "tesseract-ocr",
        }
    }
}

/// A whole document, extracted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extracted {
    pub title: String,
    pub sections: Vec<Section>,
    /// Which reader produced it (not part of the content hash).
    #[serde(default)]
    pub reader: Reader,
    /// What did not read although the document did: pages OCR failed on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Extracted {
    /// The document's text as one string, sections separated by blank lines.
    pub fn body(&self) -> String {
        let mut out = String::new();
        for s in &self.sections {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&s.text);
        }
        out
    }

    pub fn char_count(&self) -> usize {
        self.sections.iter().map(|s| s.text.chars().count()).sum()
    }
}

/// Canonical text: NFKC (ligatures, full-width forms), `\n` line ends, no
/// trailing spaces, no control characters, at most one blank line in a row.
pub fn normalize_text(s: &str) -> String {
    let nfkc: String = s.nfkc().collect();
    let mut out = String::with_capacity(nfkc.len());
    let mut blank_run = 0;
    for line in nfkc.replace("\r\n", "\n").replace('\r', "\n").split('\n') {
        let line: String = line
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect::<String>()
            .trim_end()
            .to_string();
        if line.trim().is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(&line);
    }
    out
}

/// A heading or title: one line, inner whitespace collapsed.
pub fn normalize_line(s: &str) -> String {
    let nfkc: String = s.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn first_line(s: &str, max: usize) -> String {
    s.lines().next().unwrap_or("").chars().take(max).collect()
}

/// Builds sections from a stream of (heading level, heading text) and text
/// pieces; shared by the HTML and Markdown extractors so that both nest
/// headings the same way.
#[derive(Default)]
pub(crate) struct SectionBuilder {
    stack: Vec<(u8, String)>,
    current: String,
    sections: Vec<Section>,
}

impl SectionBuilder {
    pub fn heading(&mut self, level: u8, text: String) {
        self.flush();
        while self.stack.last().is_some_and(|(l, _)| *l >= level) {
            self.stack.pop();
        }
        let text = normalize_line(&text);
        if !text.is_empty() {
            self.stack.push((level, text));
        }
    }

    pub fn push(&mut self, s: &str) {
        self.current.push_str(s);
    }

    /// One space between words: none at the start of a line or after
    /// another space (markup's whitespace between elements).
    pub fn space(&mut self) {
        if !self.current.is_empty() && !self.current.ends_with([' ', '\n']) {
            self.current.push(' ');
        }
    }

    /// ` | ` between two cells of a table row, whatever space came before.
    pub fn cell_separator(&mut self) {
        self.current
            .truncate(self.current.trim_end_matches(' ').len());
        self.current.push_str(" | ");
    }

    /// Ends the current paragraph-like block.
    pub fn block_break(&mut self) {
        if !self.current.ends_with("\n\n") && !self.current.is_empty() {
            if self.current.ends_with('\n') {
                self.current.push('\n');
            } else {
                self.current.push_str("\n\n");
            }
        }
    }

    pub fn line_break(&mut self) {
        if !self.current.is_empty() && !self.current.ends_with('\n') {
            self.current.push('\n');
        }
    }

    fn flush(&mut self) {
        let text = std::mem::take(&mut self.current);
        if !text.trim().is_empty() {
            self.sections.push(Section {
                heading_path: self.stack.iter().map(|(_, h)| h.clone()).collect(),
                text,
                page: None,
            });
        }
    }

    pub fn finish(mut self) -> Vec<Section> {
        self.flush();
        self.sections
    }
}
