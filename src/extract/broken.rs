//! Why a file could not be read: one reason per way it fails, each said as
//! one sentence that tells the user what happened and what to do.

use super::*;

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
