//! Extraction: bytes of one file in, one shape out. Every format becomes an
//! [`Extracted`] (a title plus sections, each with its heading path and, for
//! PDF, its page). A file that cannot be read becomes a [`BrokenReason`], never
//! a panic and never a silent empty document.

mod html;
mod markdown;
mod pdf;
mod text;
pub mod worker;

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

/// The formats Carrel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Pdf,
    Html,
    Markdown,
    Text,
}

/// Every file extension Carrel reads (lowercase), with the kind it
/// promises: the one list behind folder scans, [`Kind::from_extension`] and
/// the app's file dialog.
pub const EXTENSIONS: &[(&str, Kind)] = &[
    ("pdf", Kind::Pdf),
    ("html", Kind::Html),
    ("htm", Kind::Html),
    ("xhtml", Kind::Html),
    ("md", Kind::Markdown),
    ("markdown", Kind::Markdown),
    ("mdx", Kind::Markdown),
    ("txt", Kind::Text),
    ("text", Kind::Text),
    ("rst", Kind::Text),
    ("org", Kind::Text),
    ("adoc", Kind::Text),
];

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Pdf => "pdf",
            Kind::Html => "html",
            Kind::Markdown => "markdown",
            Kind::Text => "text",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "pdf" => Kind::Pdf,
            "html" => Kind::Html,
            "markdown" => Kind::Markdown,
            "text" => Kind::Text,
            _ => return None,
        })
    }

    /// The kind a file name promises, if its extension is one Carrel reads
    /// ([`EXTENSIONS`]). Folder scans take only these files.
    pub fn from_extension(path: &Path) -> Option<Kind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        EXTENSIONS
            .iter()
            .find(|(e, _)| *e == ext)
            .map(|&(_, kind)| kind)
    }

    /// The kind a Content-Type header names, if Carrel reads it.
    pub fn from_mime(mime: &str) -> Option<Kind> {
        let essence = mime
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        Some(match essence.as_str() {
            "application/pdf" => Kind::Pdf,
            "text/html" | "application/xhtml+xml" => Kind::Html,
            "text/markdown" | "text/x-markdown" => Kind::Markdown,
            "text/plain" => Kind::Text,
            _ => return None,
        })
    }

    /// The kind of an explicitly named file: its extension when known, else a
    /// sniff of its first bytes. Anything that is not PDF or HTML is tried as text
    /// (and refused there if it is binary).
    pub fn detect(path: &Path, bytes: &[u8]) -> Kind {
        if let Some(kind) = Kind::from_extension(path) {
            return kind;
        }
        if bytes.starts_with(b"%PDF-") {
            return Kind::Pdf;
        }
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
        if head.trim_start().starts_with("<!doctype html") || head.contains("<html") {
            return Kind::Html;
        }
        Kind::Text
    }
}

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

/// A whole document, extracted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extracted {
    pub title: String,
    pub sections: Vec<Section>,
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

/// Why a document could not be indexed. Each is shown to the user next to the
/// document, so each `Display` says what happened and what to try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BrokenReason {
    Empty,
    Binary,
    Undecodable,
    TooLarge {
        bytes: u64,
        cap: u64,
    },
    CorruptPdf(String),
    IncompletePdf {
        read: usize,
        pages: usize,
    },
    Encrypted,
    NoText,
    Vanished,
    Unreadable(String),
    ExtractorPanicked(String),
    /// The extraction worker died: a stack overflow, an abort, a signal.
    ExtractorCrashed(String),
    ExtractorTimedOut {
        seconds: u64,
    },
    ExtractorOutOfMemory {
        limit_mb: u64,
    },
    /// A compressed stream inflates past its cap.
    DecompressionBomb {
        limit_mb: u64,
    },
    /// A FIFO, socket or device: reading it could block forever.
    NotAFile(String),
    InvalidUrl(String),
    PrivateAddress(String),
    Unreachable(String),
    HttpStatus(u16),
}

impl BrokenReason {
    /// A stable machine-readable code, stored beside the sentence.
    pub fn code(&self) -> &'static str {
        match self {
            BrokenReason::Empty => "empty",
            BrokenReason::Binary => "binary",
            BrokenReason::Undecodable => "undecodable",
            BrokenReason::TooLarge { .. } => "too_large",
            BrokenReason::CorruptPdf(_) => "corrupt_pdf",
            BrokenReason::IncompletePdf { .. } => "incomplete_pdf",
            BrokenReason::Encrypted => "encrypted",
            BrokenReason::NoText => "no_text",
            BrokenReason::Vanished => "vanished",
            BrokenReason::Unreadable(_) => "unreadable",
            BrokenReason::ExtractorPanicked(_) => "extractor_panicked",
            BrokenReason::ExtractorCrashed(_) => "extractor_crashed",
            BrokenReason::ExtractorTimedOut { .. } => "extractor_timed_out",
            BrokenReason::ExtractorOutOfMemory { .. } => "extractor_out_of_memory",
            BrokenReason::DecompressionBomb { .. } => "decompression_bomb",
            BrokenReason::NotAFile(_) => "not_a_file",
            BrokenReason::InvalidUrl(_) => "invalid_url",
            BrokenReason::PrivateAddress(_) => "private_address",
            BrokenReason::Unreachable(_) => "unreachable",
            BrokenReason::HttpStatus(_) => "http_status",
        }
    }
}

impl std::fmt::Display for BrokenReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BrokenReason::Empty => write!(f, "empty file: it has no bytes"),
            BrokenReason::Binary => {
                write!(
                    f,
                    "binary data, not text: the file's name promises text but its bytes are not"
                )
            }
            BrokenReason::Undecodable => {
                write!(
                    f,
                    "text in an unknown encoding that could not be decoded; save it as UTF-8 and add it again"
                )
            }
            BrokenReason::TooLarge { bytes, cap } => write!(
                f,
                "too large: {:.1} MB is over the {:.0} MB cap per file; split the file or raise the cap",
                *bytes as f64 / 1e6,
                *cap as f64 / 1e6
            ),
            BrokenReason::CorruptPdf(detail) => write!(
                f,
                "not a readable PDF ({detail}); the file may be truncated or damaged"
            ),
            BrokenReason::IncompletePdf { read, pages } => write!(
                f,
                "PDF text stopped at page {read} of {pages}; the rest of the file is damaged"
            ),
            BrokenReason::Encrypted => write!(
                f,
                "encrypted PDF: remove the password protection and add it again"
            ),
            BrokenReason::NoText => write!(
                f,
                "no extractable text: the PDF is probably scanned images or protected; run OCR on it first"
            ),
            BrokenReason::Vanished => write!(f, "the file disappeared before it could be read"),
            BrokenReason::Unreadable(e) => write!(f, "could not be read: {e}"),
            BrokenReason::ExtractorPanicked(e) => {
                write!(
                    f,
                    "the extractor crashed on this file ({e}); the file is probably damaged"
                )
            }
            BrokenReason::ExtractorCrashed(e) => write!(
                f,
                "extractor crashed: {e}; the file is damaged or built to break parsers"
            ),
            BrokenReason::ExtractorTimedOut { seconds } => write!(
                f,
                "extraction stopped after {seconds} s; the file is damaged, built to hang parsers, or needs a longer limit (--extract-timeout)"
            ),
            BrokenReason::ExtractorOutOfMemory { limit_mb } => write!(
                f,
                "the extractor ran out of memory (its limit is {limit_mb} MB); the file is damaged or a decompression bomb"
            ),
            BrokenReason::DecompressionBomb { limit_mb } => write!(
                f,
                "a compressed page expands past {limit_mb} MB: a decompression bomb or a damaged PDF"
            ),
            BrokenReason::NotAFile(what) => {
                write!(f, "not a regular file but {what}; Carrel reads files only")
            }
            BrokenReason::InvalidUrl(e) => write!(f, "not a usable URL: {e}"),
            BrokenReason::PrivateAddress(e) => write!(
                f,
                "refused: {e}, a private or local address; pass --allow-private to fetch from your own network"
            ),
            BrokenReason::Unreachable(e) => {
                write!(f, "unreachable: {e}; check the address and your connection")
            }
            BrokenReason::HttpStatus(code) => {
                write!(f, "fetch failed: the server answered HTTP {code}")
            }
        }
    }
}

thread_local! {
    static IN_EXTRACTOR: Cell<bool> = const { Cell::new(false) };
}

/// True while the current thread is inside a third-party extractor. A panic hook
/// uses this to keep an extractor's expected panics out of the user's terminal.
pub fn in_extractor() -> bool {
    IN_EXTRACTOR.with(|c| c.get())
}

/// Extracts one file. `name` (usually the file name) is the title of last resort.
///
/// This is the panic boundary: a panic inside pdf-extract, lopdf, scraper or
/// pulldown-cmark is caught here and becomes [`BrokenReason::ExtractorPanicked`].
pub fn extract(name: &str, bytes: &[u8], kind: Kind) -> Result<Extracted, BrokenReason> {
    if bytes.is_empty() {
        return Err(BrokenReason::Empty);
    }
    IN_EXTRACTOR.with(|c| c.set(true));
    let caught = catch_unwind(AssertUnwindSafe(|| match kind {
        Kind::Pdf => pdf::extract(bytes),
        Kind::Html => text::decode(bytes).map(|s| html::extract(&s)),
        Kind::Markdown => text::decode(bytes).map(|s| markdown::extract(&s)),
        Kind::Text => text::decode(bytes).map(|s| text::extract(&s)),
    }));
    IN_EXTRACTOR.with(|c| c.set(false));
    let raw = match caught {
        Ok(result) => result?,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            return Err(BrokenReason::ExtractorPanicked(first_line(&msg, 160)));
        }
    };
    let doc = finish(raw, name);
    if doc.sections.is_empty() {
        return Err(match kind {
            Kind::Pdf => BrokenReason::NoText,
            _ => BrokenReason::Empty,
        });
    }
    Ok(doc)
}

/// Extracts one file in a worker process under `limits` (see [`worker`]): what
/// ingest and the probe call, so no file can take the caller down. `Err` is a
/// worker that could not be started at all.
pub fn isolated(
    name: &str,
    bytes: &[u8],
    kind: Kind,
    limits: &worker::Isolation,
) -> Result<Result<Extracted, BrokenReason>, worker::WorkerUnavailable> {
    worker::extract(name, bytes, kind, limits)
}

/// Normalises every section, drops empty ones and settles the title.
fn finish(raw: Extracted, name: &str) -> Extracted {
    let sections: Vec<Section> = raw
        .sections
        .into_iter()
        .map(|s| Section {
            heading_path: s
                .heading_path
                .iter()
                .map(|h| normalize_line(h))
                .filter(|h| !h.is_empty())
                .collect(),
            text: normalize_text(&s.text),
            page: s.page,
        })
        .filter(|s| !s.text.is_empty())
        .collect();
    let mut title = normalize_line(&raw.title);
    if title.is_empty() {
        title = Path::new(name)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(name)
            .replace(['_', '-'], " ");
    }
    Extracted { title, sections }
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

fn first_line(s: &str, max: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_ligatures_blank_runs_and_crlf() {
        assert_eq!(
            normalize_text("e\u{FB03}cient  \r\n\r\n\r\n\nnext\x07"),
            "efficient\n\nnext"
        );
    }

    #[test]
    fn zero_byte_file_is_broken_not_empty_document() {
        for kind in [Kind::Pdf, Kind::Html, Kind::Markdown, Kind::Text] {
            assert_eq!(extract("x", b"", kind), Err(BrokenReason::Empty));
        }
    }

    #[test]
    fn whitespace_only_text_is_broken() {
        assert_eq!(
            extract("x.txt", b" \n\n \t\n", Kind::Text),
            Err(BrokenReason::Empty)
        );
    }

    #[test]
    fn sniffing_finds_pdf_and_html_without_extension() {
        assert_eq!(Kind::detect(Path::new("a"), b"%PDF-1.4 ..."), Kind::Pdf);
        assert_eq!(
            Kind::detect(Path::new("a"), b"<!DOCTYPE html><html>"),
            Kind::Html
        );
        assert_eq!(Kind::detect(Path::new("a.md"), b"%PDF-"), Kind::Markdown);
    }

    #[test]
    fn title_falls_back_to_file_name() {
        let doc = extract(
            "notes/my_plan-v2.txt",
            b"Some words here that are a sentence.\nMore.",
            Kind::Text,
        )
        .unwrap();
        assert!(!doc.title.is_empty());
    }
}
