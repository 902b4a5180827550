//! PDF via lopdf + pdf-extract, page by page. pdf-extract's own by-pages call
//! stops silently at the first bad page, so pages are driven here and counted
//! against the document's page tree. Heading paths come from the PDF outline
//! (bookmarks) when it has one. When pdf-extract cannot read a file, or reads
//! far less text than its pages hold, poppler's `pdftotext` reads it
//! ([`read`]). This runs inside the panic boundary in [`super::extract`].

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;

use lopdf::{Document, Object};
use pdf_extract::{OutputError, PlainTextOutput, output_doc_page};

use super::{BrokenReason, Extracted, Reader, Section, program};

/// Characters per page under which pdf-extract's text is thin enough to ask
/// poppler too. A page of prose holds 2,000–3,000; a slide or a figure page
/// a few dozen, and then poppler finds no more and pdf-extract's text stays.
const THIN_CHARS_PER_PAGE: usize = 200;

/// The PDF reader: pdf-extract first; poppler's `pdftotext` when it fails
/// on a file that may still be valid, or yields thin text and poppler
/// yields at least twice as much. A decompression bomb or an encrypted file
/// is never handed on.
pub fn read(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    let first = catch_unwind(AssertUnwindSafe(|| extract(bytes)))
        .unwrap_or_else(|p| Err(super::panicked(p)));
    let ask_poppler = match &first {
        Ok(doc) => doc.char_count() < THIN_CHARS_PER_PAGE * doc.sections.len(),
        Err(
            BrokenReason::CorruptPdf(_)
            | BrokenReason::IncompletePdf { .. }
            | BrokenReason::ExtractorPanicked(_)
            | BrokenReason::NoText { .. },
        ) => bytes.starts_with(b"%PDF-"),
        Err(_) => false,
    };
    if !ask_poppler {
        return first;
    }
    let Some(second) = poppler(bytes) else {
        return first;
    };
    match &first {
        Ok(doc) if second.char_count() < 2 * doc.char_count() => first,
        _ => Ok(second),
    }
}

/// Reads a PDF with `pdftotext` (Debian `poppler-utils`): pages split at its
/// form feeds, heading paths from the outline when lopdf can read one. It runs
/// as a child of the extraction worker, dies with it, and inherits its
/// memory limit. `None`: not installed, failed, or no text either; the
/// first reader's answer stands.
fn poppler(bytes: &[u8]) -> Option<Extracted> {
    let (status, out) = program::run(
        Command::new("pdftotext").args(["-q", "-enc", "UTF-8", "-eol", "unix", "-", "-"]),
        bytes,
    )
    .ok()?;
    if !status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out);
    let outline = catch_unwind(|| Document::load_mem(bytes).map(|d| outline(&d)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    // pdftotext ends every page with a form feed.
    let pages: Vec<&str> = text
        .strip_suffix('\u{c}')
        .unwrap_or(&text)
        .split('\u{c}')
        .collect();
    let sections: Vec<Section> = pages
        .iter()
        .enumerate()
        .map(|(i, page)| Section {
            heading_path: heading_path_at(&outline, i + 1),
            text: dehyphenate(page),
            page: Some(i as u32 + 1),
        })
        .collect();
    if sections.iter().all(|s| s.text.trim().is_empty()) {
        return None;
    }
    Some(Extracted {
        title: first_line_title(&sections),
        sections,
        reader: Reader::Pdftotext,
        ..Default::default()
    })
}

/// A PDF's title: its first non-empty line, if short enough to be one.
fn first_line_title(sections: &[Section]) -> String {
    sections
        .iter()
        .flat_map(|s| s.text.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .filter(|l| l.chars().count() <= 100)
        .unwrap_or("")
        .to_string()
}

/// Most bytes one page's content stream may inflate to. A page of dense text
/// is tens of KB; a stream past this is a decompression bomb (or damage), and
/// pdf-extract would hold all of it in memory and then parse it.
pub const MAX_INFLATED_STREAM_BYTES: u64 = 64 << 20;

/// Most objects a PDF may hold. The 2,415-page manual measured in DESIGN.md
/// has about 40k; past this, every page lookup walks a huge table.
pub const MAX_OBJECTS: usize = 2_000_000;

pub fn extract(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    if !bytes.starts_with(b"%PDF-")
        && !bytes[..bytes.len().min(1024)]
            .windows(5)
            .any(|w| w == b"%PDF-")
    {
        return Err(BrokenReason::CorruptPdf("no PDF header".into()));
    }
    let mut doc =
        Document::load_mem(bytes).map_err(|e| BrokenReason::CorruptPdf(short(&e.to_string())))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(BrokenReason::Encrypted);
    }
    let encrypted = doc.is_encrypted();
    if doc.objects.len() > MAX_OBJECTS {
        return Err(BrokenReason::CorruptPdf(format!(
            "{} objects, over the cap of {MAX_OBJECTS}",
            doc.objects.len()
        )));
    }
    let page_ids = doc.get_pages();
    let pages = page_ids.len();
    if pages == 0 {
        return Err(BrokenReason::CorruptPdf("no pages".into()));
    }
    for id in page_ids.values() {
        check_inflation(&doc, *id)?;
    }
    let outline = outline(&doc);
    let mut sections = Vec::with_capacity(pages);
    for page in 1..=pages as u32 {
        let mut text = String::new();
        let result: Result<(), OutputError> =
            output_doc_page(&doc, &mut PlainTextOutput::new(&mut text), page);
        if let Err(e) = result {
            if sections.is_empty() && page == 1 {
                return Err(BrokenReason::CorruptPdf(short(&e.to_string())));
            }
            return Err(BrokenReason::IncompletePdf {
                read: page as usize - 1,
                pages,
            });
        }
        sections.push(Section {
            heading_path: heading_path_at(&outline, page as usize),
            text: dehyphenate(&text),
            page: Some(page),
        });
    }
    if sections.iter().all(|s| s.text.trim().is_empty()) {
        return Err(if encrypted {
            BrokenReason::Encrypted
        } else {
            BrokenReason::NoText { pages }
        });
    }
    Ok(Extracted {
        title: first_line_title(&sections),
        sections,
        reader: Reader::PdfExtract,
        ..Default::default()
    })
}

/// Inflates each Flate-compressed content stream of a page into nothing, up
/// to [`MAX_INFLATED_STREAM_BYTES`], before pdf-extract inflates it for real.
fn check_inflation(doc: &Document, page: lopdf::ObjectId) -> Result<(), BrokenReason> {
    for id in doc.get_page_contents(page) {
        let Ok(Object::Stream(s)) = doc.get_object(id) else {
            continue;
        };
        if !s
            .filters()
            .is_ok_and(|f| f.first() == Some(&&b"FlateDecode"[..]))
        {
            continue;
        }
        let mut inflated =
            flate2::read::ZlibDecoder::new(&s.content[..]).take(MAX_INFLATED_STREAM_BYTES + 1);
        // A damaged stream is pdf-extract's to report; only size is judged here.
        let n = std::io::copy(&mut inflated, &mut std::io::sink()).unwrap_or(0);
        if n > MAX_INFLATED_STREAM_BYTES {
            return Err(BrokenReason::DecompressionBomb {
                limit_mb: MAX_INFLATED_STREAM_BYTES >> 20,
            });
        }
    }
    Ok(())
}

fn short(s: &str) -> String {
    s.chars().take(120).collect()
}

/// `(level, title, first page)` for each outline entry, in document order.
fn outline(doc: &Document) -> Vec<(usize, String, usize)> {
    match doc.get_toc() {
        Ok(toc) => toc
            .toc
            .into_iter()
            .map(|t| (t.level, t.title, t.page))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The outline path in force on `page`: the entries that started on or before
/// it, in outline order. An entry that points past `page` is passed over, not
/// an end: outlines are not always in page order (lopdf reads the Debian
/// Developer's Reference's "Documentation" entry as page 87 between two on
/// page 24 and 25), and stopping there labelled chapters 5–9 with chapter
/// 4's "IRC channels".
fn heading_path_at(outline: &[(usize, String, usize)], page: usize) -> Vec<String> {
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for (level, title, start) in outline {
        if *start > page {
            continue;
        }
        while stack.last().is_some_and(|(l, _)| l >= level) {
            stack.pop();
        }
        stack.push((*level, title));
    }
    stack.into_iter().map(|(_, t)| t.to_string()).collect()
}

/// Joins words hyphenated across a line end ("extrac-\ntion" → "extraction").
fn dehyphenate(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '-'
            && i > 0
            && chars[i - 1].is_lowercase()
            && chars.get(i + 1) == Some(&'\n')
            && chars.get(i + 2).is_some_and(|c| c.is_lowercase())
        {
            i += 2;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dehyphenates_line_end_breaks_only() {
        assert_eq!(
            dehyphenate("extrac-\ntion of well-known\nX-\nRay"),
            "extraction of well-known\nX-\nRay"
        );
    }

    #[test]
    fn outline_path_follows_pages() {
        let o = vec![
            (1, "Intro".to_string(), 1),
            (1, "Usage".into(), 3),
            (2, "Flags".into(), 4),
        ];
        assert_eq!(heading_path_at(&o, 2), ["Intro"]);
        assert_eq!(heading_path_at(&o, 4), ["Usage", "Flags"]);
        assert!(heading_path_at(&[], 1).is_empty());
        // An entry out of page order does not hide the ones after it.
        let o = vec![
            (1, "Resources".to_string(), 23),
            (2, "IRC channels".into(), 24),
            (3, "Documentation".into(), 87),
            (2, "Debian machines".into(), 25),
            (1, "Managing Packages".into(), 37),
        ];
        assert_eq!(heading_path_at(&o, 26), ["Resources", "Debian machines"]);
        assert_eq!(heading_path_at(&o, 37), ["Managing Packages"]);
    }

    #[test]
    fn garbage_is_corrupt_not_panic() {
        assert!(matches!(
            extract(b"%PDF-1.4 garbage"),
            Err(BrokenReason::CorruptPdf(_))
        ));
        assert!(matches!(
            extract(b"hello"),
            Err(BrokenReason::CorruptPdf(_))
        ));
    }
}
