//! The kinds of file Carrel reads: the one list of them and their
//! extensions, and how a file's kind is told (extension, Content-Type, a
//! sniff of its first bytes).

use super::*;

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
