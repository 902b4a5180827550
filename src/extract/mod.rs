//! Extraction: bytes of one file in, one shape out. Every format becomes an
//! [`Extracted`] (a title plus sections, each with its heading path and, for
//! PDF, its page). A file that cannot be read becomes a [`BrokenReason`], never
//! a panic and never a silent empty document.

mod archive;
mod broken;
mod docx;
mod epub;
mod flow;
mod html;
mod kind;
mod markdown;
mod markup;
pub mod ocr;
mod odt;
mod pdf;
mod pptx;
mod program;
mod rtf;
mod sections;
mod text;
pub mod worker;

pub use broken::*;
pub use kind::*;
pub use sections::*;

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

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
