//! The chunk decision on real fixture files, without models: document mode
//! against memory mode on the same long, bullet-heavy plan.

mod common;

use carrel::chunk::{self, DOCUMENT_CEILING, Mode};
use carrel::extract::{self, Kind};

#[test]
fn document_mode_is_at_least_three_times_sparser_than_fact_chunks() {
    let path = common::fixtures().join("long/renovation-plan.md");
    let bytes = std::fs::read(&path).unwrap();
    let doc = extract::extract("renovation-plan.md", &bytes, Kind::Markdown).unwrap();
    assert!(
        doc.char_count() >= 10_000,
        "fixture must be long: {}",
        doc.char_count()
    );

    let document = chunk::plan(&doc, Mode::Document);
    let memory = chunk::plan(&doc, Mode::Memory);
    let (n_doc, avg_doc) = chunk::summary(&doc, &document);
    let (n_mem, _) = chunk::summary(&doc, &memory);
    assert!(n_mem >= 3 * n_doc, "memory {n_mem} vs document {n_doc}");
    let ceiling = DOCUMENT_CEILING as f64;
    assert!(
        (0.6 * ceiling..=ceiling).contains(&avg_doc),
        "average document chunk {avg_doc:.0} chars"
    );
}

#[test]
fn byte_flipped_pdfs_never_panic_past_the_boundary() {
    let good = std::fs::read(common::fixtures().join("docs/pond-ecology.pdf")).unwrap();
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut broken = 0;
    for _ in 0..300 {
        let mut bytes = good.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed % bytes.len() as u64) as usize;
            bytes[at] = (seed >> 32) as u8;
        }
        // A panic here would fail the test: the boundary must hold.
        if extract::extract("flipped.pdf", &bytes, Kind::Pdf).is_err() {
            broken += 1;
        }
    }
    assert!(broken > 0, "flipping bytes should break some PDFs");
}
