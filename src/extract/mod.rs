//! Extraction: bytes of one file in, one shape out. Every format becomes an
//! [`Extracted`] (a title plus sections, each with its heading path and, for
//! PDF, its page). A file that cannot be read becomes a [`BrokenReason`], never
//! a panic and never a silent empty document.

mod archive;
mod docx;
mod epub;
mod flow;
mod html;
mod markdown;
mod markup;
pub mod ocr;
mod odt;
mod pdf;
mod pptx;
mod program;
mod rtf;
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
    Docx,
    Odt,
    Epub,
    Pptx,
    Rtf,
    Rst,
    Org,
    Asciidoc,
    /// A PNG, JPEG or TIFF image, read by OCR.
    Image,
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
    ("rst", Kind::Rst),
    ("org", Kind::Org),
    ("adoc", Kind::Asciidoc),
    ("asciidoc", Kind::Asciidoc),
    ("docx", Kind::Docx),
    ("odt", Kind::Odt),
    ("epub", Kind::Epub),
    ("pptx", Kind::Pptx),
    ("rtf", Kind::Rtf),
    ("png", Kind::Image),
    ("jpg", Kind::Image),
    ("jpeg", Kind::Image),
    ("tif", Kind::Image),
    ("tiff", Kind::Image),
];

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Pdf => "pdf",
            Kind::Html => "html",
            Kind::Markdown => "markdown",
            Kind::Text => "text",
            Kind::Docx => "docx",
            Kind::Odt => "odt",
            Kind::Epub => "epub",
            Kind::Pptx => "pptx",
            Kind::Rtf => "rtf",
            Kind::Rst => "rst",
            Kind::Org => "org",
            Kind::Asciidoc => "asciidoc",
            Kind::Image => "image",
        }
    }

    /// The kind [`Kind::as_str`] names.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Every kind, in the order people are told them.
    pub const ALL: [Kind; 13] = [
        Kind::Pdf,
        Kind::Html,
        Kind::Markdown,
        Kind::Text,
        Kind::Docx,
        Kind::Odt,
        Kind::Epub,
        Kind::Pptx,
        Kind::Rtf,
        Kind::Rst,
        Kind::Org,
        Kind::Asciidoc,
        Kind::Image,
    ];

    /// Its name for people.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Pdf => "PDF",
            Kind::Html => "HTML",
            Kind::Markdown => "Markdown",
            Kind::Text => "plain text",
            Kind::Docx => "Word (.docx)",
            Kind::Odt => "OpenDocument text",
            Kind::Epub => "EPUB",
            Kind::Pptx => "PowerPoint (.pptx)",
            Kind::Rtf => "RTF",
            Kind::Rst => "reStructuredText",
            Kind::Org => "Org",
            Kind::Asciidoc => "AsciiDoc",
            Kind::Image => "scans and photos of text (PNG, JPEG, TIFF), read by OCR",
        }
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
            "text/x-rst" => Kind::Rst,
            "text/org" => Kind::Org,
            "text/asciidoc" => Kind::Asciidoc,
            "image/png" | "image/jpeg" | "image/tiff" => Kind::Image,
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => Kind::Docx,
            "application/vnd.oasis.opendocument.text" => Kind::Odt,
            "application/epub+zip" => Kind::Epub,
            "application/vnd.openxmlformats-officedocument.presentationml.presentation" => {
                Kind::Pptx
            }
            "application/rtf" | "text/rtf" => Kind::Rtf,
            _ => return None,
        })
    }

    /// The kind of an explicitly named file: its extension when known, else a
    /// sniff of its first bytes. Anything else is tried as text (and refused
    /// there if it is binary).
    pub fn detect(path: &Path, bytes: &[u8]) -> Kind {
        Kind::from_extension(path)
            .or_else(|| Kind::sniff(bytes))
            .unwrap_or(Kind::Text)
    }

    /// The kind a file's first [`SNIFF_BYTES`] show, if Carrel reads it:
    /// PDF by its magic, HTML by its doctype or `<html>`, text when the text
    /// decoder takes them ([`text::decode`]: no NULs, few control
    /// characters). Longer input is cut to that head, so a whole file is
    /// never decoded just to be sniffed.
    pub fn sniff(bytes: &[u8]) -> Option<Kind> {
        let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
        if head.starts_with(b"%PDF-") {
            return Some(Kind::Pdf);
        }
        let start = String::from_utf8_lossy(&head[..head.len().min(512)]).to_ascii_lowercase();
        if start.trim_start().starts_with("<!doctype html") || start.contains("<html") {
            return Some(Kind::Html);
        }
        (!head.is_empty() && text::decode(head).is_ok()).then_some(Kind::Text)
    }
}

/// The kinds Carrel reads, as one phrase for people ("PDF, HTML, … and
/// scans …"): the empty Library page says it, from the same list as
/// [`Kind::parse`].
pub fn readable_kinds() -> String {
    let labels: Vec<&str> = Kind::ALL.iter().map(|k| k.label()).collect();
    match labels.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// How much of a file [`Kind::sniff`] reads.
pub const SNIFF_BYTES: usize = 4096;

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
    /// A DOCX, ODT, EPUB, PPTX or RTF file that does not parse.
    CorruptDocument {
        format: String,
        detail: String,
    },
    /// A password-protected Office or ZIP-based document.
    PasswordProtected {
        format: String,
    },
    /// A `.doc`, `.xls` or `.ppt` (the compound-file formats before 2007).
    LegacyOffice,
    IncompletePdf {
        read: usize,
        pages: usize,
    },
    Encrypted,
    /// A PDF with no text layer on any of its `pages`, and none found by OCR.
    NoText {
        pages: usize,
    },
    /// An image in which OCR found no text.
    NoTextInImage,
    /// A file with bytes that parsed and holds no words to index: only
    /// whitespace or markup, headings with nothing under them, or (DOCX,
    /// EPUB, RTF, …) only layout and images.
    Blank,
    /// Text in images, and this program, needed to read it, is missing.
    OcrUnavailable(String),
    OcrFailed(String),
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
            BrokenReason::CorruptDocument { .. } => "corrupt_document",
            BrokenReason::PasswordProtected { .. } => "encrypted",
            BrokenReason::LegacyOffice => "legacy_office",
            BrokenReason::IncompletePdf { .. } => "incomplete_pdf",
            BrokenReason::Encrypted => "encrypted",
            BrokenReason::NoText { .. } => "no_text",
            BrokenReason::NoTextInImage => "no_text",
            BrokenReason::Blank => "no_text",
            BrokenReason::OcrUnavailable(_) => "ocr_unavailable",
            BrokenReason::OcrFailed(_) => "ocr_failed",
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
            BrokenReason::CorruptDocument { format, detail } => write!(
                f,
                "not a readable {format} ({detail}); the file may be truncated or damaged"
            ),
            BrokenReason::PasswordProtected { format } => write!(
                f,
                "password-protected {format}: remove the password and add it again"
            ),
            BrokenReason::LegacyOffice => write!(
                f,
                "a legacy Office file (.doc, .xls or .ppt), which Carrel does not read; save it as .docx, .pptx or .odt and add it again"
            ),
            BrokenReason::IncompletePdf { read, pages } => write!(
                f,
                "PDF text stopped at page {read} of {pages}; the rest of the file is damaged"
            ),
            BrokenReason::Encrypted => write!(
                f,
                "encrypted PDF: remove the password protection and add it again"
            ),
            BrokenReason::NoText { pages } => write!(
                f,
                "no text: neither the PDF's text layer nor OCR found any on its {pages} page(s); it may be blank, pictures only, or protected"
            ),
            BrokenReason::NoTextInImage => write!(f, "OCR found no text in this image"),
            BrokenReason::Blank => write!(
                f,
                "no text: it holds no words to index (only whitespace, markup, headings with nothing under them, layout or images)"
            ),
            BrokenReason::OcrUnavailable(program) => write!(
                f,
                "its text is in images and OCR is not installed ({program} is missing); install it (apt install tesseract-ocr poppler-utils) and add the file again"
            ),
            BrokenReason::OcrFailed(e) => write!(f, "OCR failed: {e}"),
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
                "a compressed part expands past {limit_mb} MB: a decompression bomb or a damaged file"
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
        Kind::Pdf => pdf::read(bytes),
        Kind::Html => text::decode(bytes).map(|s| html::extract(&s)),
        Kind::Markdown => text::decode(bytes).map(|s| markdown::extract(&s)),
        Kind::Text => text::decode(bytes).map(|s| text::extract(&s)),
        Kind::Docx => docx::extract(bytes),
        Kind::Odt => odt::extract(bytes),
        Kind::Epub => epub::extract(bytes),
        Kind::Pptx => pptx::extract(bytes),
        Kind::Rtf => rtf::extract(bytes),
        Kind::Rst => text::decode(bytes).map(|s| markup::extract(&s, markup::Markup::Rst)),
        Kind::Org => text::decode(bytes).map(|s| markup::extract(&s, markup::Markup::Org)),
        Kind::Asciidoc => {
            text::decode(bytes).map(|s| markup::extract(&s, markup::Markup::Asciidoc))
        }
        Kind::Image => ocr::image(bytes),
    }));
    IN_EXTRACTOR.with(|c| c.set(false));
    let raw = match caught {
        Ok(result) => result?,
        Err(payload) => return Err(panicked(payload)),
    };
    let pages = raw.sections.len();
    let doc = finish(raw, name);
    if doc.sections.is_empty() {
        return Err(match kind {
            Kind::Pdf => BrokenReason::NoText { pages },
            Kind::Image => BrokenReason::NoTextInImage,
            // It has bytes (checked above): never "empty file".
            _ => BrokenReason::Blank,
        });
    }
    Ok(doc)
}

/// poppler's `pdftotext` version line, if it is installed (the second PDF
/// reader; `pdftoppm` for OCR comes in the same package).
pub fn poppler_version() -> Option<String> {
    let out = std::process::Command::new("pdftotext")
        .arg("-v")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines().next().map(|l| l.trim().to_string())
}

/// A caught panic as the reason a file is broken.
fn panicked(payload: Box<dyn std::any::Any + Send>) -> BrokenReason {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    BrokenReason::ExtractorPanicked(first_line(&msg, 160))
}

/// Most pages of one scanned PDF read by OCR. At a few seconds a page,
/// this is hours; a longer scan is read up to here and says so.
pub const MAX_OCR_PAGES: usize = 2_000;

/// Extracts one file in a worker process under `limits` (see [`worker`]): what
/// ingest and the probe call, so no file can take the caller down. `Err` is a
/// worker that could not be started at all.
///
/// A PDF without a text layer is then read by OCR (if `limits.ocr`) page by
/// page, one worker a page under the same limits: `on_page(n, of)` before
/// each. A page that
/// fails is a warning on the document; the rest of it still lands.
pub fn isolated(
    name: &str,
    bytes: &[u8],
    kind: Kind,
    limits: &worker::Isolation,
    on_page: &mut dyn FnMut(usize, usize),
) -> Result<Result<Extracted, BrokenReason>, worker::WorkerUnavailable> {
    match worker::extract(name, bytes, worker::Job::Extract(kind), limits)? {
        Err(BrokenReason::NoText { pages }) if kind == Kind::Pdf && pages > 0 && limits.ocr => {
            ocr_pdf(name, bytes, pages, limits, on_page)
        }
        reply => Ok(reply),
    }
}

fn ocr_pdf(
    name: &str,
    bytes: &[u8],
    pages: usize,
    limits: &worker::Isolation,
    on_page: &mut dyn FnMut(usize, usize),
) -> Result<Result<Extracted, BrokenReason>, worker::WorkerUnavailable> {
    let mut doc = Extracted {
        reader: Reader::Tesseract,
        ..Extracted::default()
    };
    let read = pages.min(MAX_OCR_PAGES);
    for page in 1..=read {
        on_page(page, read);
        match worker::extract(name, bytes, worker::Job::OcrPage(page as u32), limits)? {
            Ok(x) => doc.sections.extend(x.sections),
            // Not installed: no page will read, and the file says why.
            Err(missing @ BrokenReason::OcrUnavailable(_)) => return Ok(Err(missing)),
            Err(reason) => doc
                .warnings
                .push(format!("page {page} could not be read by OCR: {reason}")),
        }
    }
    if read < pages {
        doc.warnings.push(format!(
            "only the first {read} of {pages} pages were read by OCR"
        ));
    }
    let doc = finish(doc, name);
    if doc.sections.is_empty() {
        return Ok(Err(match doc.warnings.first() {
            // Every page failed: say how, not "no text".
            Some(first) if doc.warnings.len() >= read => BrokenReason::OcrFailed(first.clone()),
            _ => BrokenReason::NoText { pages },
        }));
    }
    Ok(Ok(doc))
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
    Extracted {
        title,
        sections,
        reader: raw.reader,
        warnings: raw.warnings,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_once_and_read_back_from_its_name() {
        for (_, kind) in EXTENSIONS {
            assert!(Kind::ALL.contains(kind), "{kind:?} is not in Kind::ALL");
        }
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
            let serde_name = serde_json::to_value(kind).unwrap();
            assert_eq!(serde_name, kind.as_str(), "the stored name is the CLI's");
            assert!(readable_kinds().contains(kind.label()));
        }
        assert_eq!(Kind::parse("exe"), None);
        assert!(readable_kinds().starts_with("PDF, HTML, Markdown, plain text, "));
    }

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
    fn files_with_bytes_and_no_words_are_blank_not_empty() {
        assert_eq!(
            extract("x.txt", b" \n\n \t\n", Kind::Text),
            Err(BrokenReason::Blank)
        );
        // A heading with nothing under it: 4 bytes, so not "no bytes".
        assert_eq!(
            extract("x.md", b"# T\n", Kind::Markdown),
            Err(BrokenReason::Blank)
        );
        assert_eq!(
            extract("x.html", b"<html><body>  </body></html>", Kind::Html),
            Err(BrokenReason::Blank)
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
