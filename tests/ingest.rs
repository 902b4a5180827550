//! The ingest pipeline end to end, on the real SQLite file, sqlite-vec and the
//! real ONNX embedder.

mod common;

use std::sync::atomic::Ordering;

use carrel::ingest::Source;
use carrel::library::DocState;
use carrel::models::ModelConfig;
use carrel::models::onnx::TEXTS_EMBEDDED;
use carrel::{Library, LibraryConfig, Limits};
use common::*;

fn no_progress() -> impl FnMut(&carrel::Progress) {
    |_| {}
}

// The embed counter is process-wide: every test here that embeds in this
// process holds this lock, so none embeds while another reads the counter.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn bad_inputs_are_listed_broken_and_the_rest_lands() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    let report = lib
        .add(
            &[
                s(fixtures().join("docs")),
                s(fixtures().join("bad")),
                "/no/such/place".into(),
            ],
            &mut no_progress(),
        )
        .unwrap();
    let failed: Vec<&str> = report
        .failed
        .iter()
        .map(|f| f.source.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "place",
            "binary.pdf",
            "binary.txt",
            "encrypted.pdf",
            "scanned.pdf",
            "truncated.pdf",
            "zero.txt"
        ],
        "{:#?}",
        report.failed
    );
    assert_eq!(report.added, 6, "every good document still lands");

    let listed = lib.list().unwrap();
    let code = |name: &str| {
        listed
            .iter()
            .find(|d| d.source.ends_with(name))
            .and_then(|d| d.broken_code.clone())
            .unwrap_or_else(|| panic!("{name} not listed as broken"))
    };
    assert_eq!(code("bad/binary.pdf"), "corrupt_pdf");
    assert_eq!(code("bad/binary.txt"), "binary");
    assert_eq!(code("bad/encrypted.pdf"), "encrypted");
    assert_eq!(code("bad/scanned.pdf"), "no_text");
    assert_eq!(code("bad/truncated.pdf"), "corrupt_pdf");
    assert_eq!(code("bad/zero.txt"), "empty");
    for d in listed.iter().filter(|d| d.state == "broken") {
        assert!(
            d.broken_reason.as_ref().is_some_and(|r| r.len() > 20),
            "reason must be a sentence: {d:?}"
        );
        assert_eq!(d.chunks, 0);
        assert_eq!(d.card_state, "none");
    }
    let pond = listed
        .iter()
        .find(|d| d.source.ends_with("pond-ecology.pdf"))
        .unwrap();
    assert_eq!(pond.state, "indexed");
    let chunks = lib.chunks(pond.id).unwrap();
    assert_eq!(chunks[0].page, Some(1));
    assert_eq!(
        chunks.last().unwrap().heading_path,
        ["Water Quality"],
        "outline gives PDF heading paths"
    );
    let latin = listed
        .iter()
        .find(|d| d.source.ends_with("notes-latin1.txt"))
        .unwrap();
    assert!(
        lib.read(latin.id).unwrap().sections[0]
            .text
            .contains("crème brûlée")
    );
}

#[test]
fn identical_bodies_are_embedded_once_and_unchanged_rescans_cost_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    let before = TEXTS_EMBEDDED.load(Ordering::Relaxed);
    let report = lib
        .add(&[s(fixtures().join("docs"))], &mut no_progress())
        .unwrap();
    assert_eq!(report.added, 6);
    let embedded = TEXTS_EMBEDDED.load(Ordering::Relaxed) - before;
    let [docs, contents, chunks, chunk_vectors, cards, card_vectors] =
        lib.store().counts().unwrap();
    assert_eq!(
        (docs, contents),
        (6, 5),
        "the copy shares its original's content"
    );
    assert_eq!(chunks, chunk_vectors);
    assert_eq!((cards, card_vectors), (5, 5));
    assert_eq!(
        embedded as i64,
        chunks + cards,
        "each distinct body embedded exactly once"
    );

    let listed = lib.list().unwrap();
    let copies: Vec<_> = listed
        .iter()
        .filter(|d| d.source.contains("sourdough-starter"))
        .collect();
    assert_eq!(copies.len(), 2);
    assert_eq!(copies[0].content_hash, copies[1].content_hash);
    assert_eq!(copies[0].chunks, copies[1].chunks);

    let before = TEXTS_EMBEDDED.load(Ordering::Relaxed);
    let again = lib
        .add(&[s(fixtures().join("docs"))], &mut no_progress())
        .unwrap();
    assert_eq!(
        (again.added, again.unchanged, again.failed.len()),
        (0, 6, 0)
    );
    assert_eq!(
        TEXTS_EMBEDDED.load(Ordering::Relaxed),
        before,
        "zero model calls for unchanged files"
    );
}

#[test]
fn probe_predicts_what_the_writer_stores() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    lib.add(
        &[s(fixtures().join("docs")), s(fixtures().join("long"))],
        &mut no_progress(),
    )
    .unwrap();
    let mut checked = 0;
    for d in lib.list().unwrap() {
        let probe = carrel::probe(
            std::path::Path::new(&d.source),
            carrel::chunk::Mode::Document,
            &Limits::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(probe.chunks as u64, d.chunks, "{}", d.source);
        checked += 1;
    }
    assert_eq!(checked, 7);
    let density = lib.density().unwrap();
    let plan = density
        .iter()
        .find(|r| r.title.starts_with("Renovation Plan"))
        .unwrap();
    assert!(plan.avg_chunk > 360.0, "document-mode density: {plan:?}");
}

#[test]
fn changed_and_removed_documents_release_their_old_content() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    copy_fixtures(
        src.path(),
        &[
            "docs/sourdough-starter.md",
            "docs/sourdough-starter-copy.md",
            "docs/getting-started.txt",
        ],
    );
    let mut lib = open(lib_dir.path());
    lib.add(&[s(src.path())], &mut no_progress()).unwrap();
    assert_eq!(lib.store().counts().unwrap()[..2], [3, 2]);

    let lathe = src.path().join("getting-started.txt");
    std::fs::write(&lathe, "Getting Started with the Bandsaw\n\nA different body entirely, about tensioning the blade before every cut.\n").unwrap();
    let r = lib.add(&[s(&lathe)], &mut no_progress()).unwrap();
    assert_eq!((r.added, r.unchanged), (1, 0));
    let doc = lib
        .list()
        .unwrap()
        .into_iter()
        .find(|d| d.source.ends_with("getting-started.txt"))
        .unwrap();
    assert_eq!(doc.title, "Getting Started with the Bandsaw");
    assert_eq!(
        lib.store().counts().unwrap()[..2],
        [3, 2],
        "old lathe body collected"
    );

    let ids: Vec<i64> = lib
        .list()
        .unwrap()
        .iter()
        .filter(|d| d.source.contains("sourdough"))
        .map(|d| d.id)
        .collect();
    lib.remove(ids[0]).unwrap();
    let [docs, contents, chunks, chunk_vecs, cards, card_vecs] = lib.store().counts().unwrap();
    assert_eq!(
        (docs, contents),
        (2, 2),
        "the shared body stays while a document points at it"
    );
    lib.remove(ids[1]).unwrap();
    let [docs2, contents2, chunks2, chunk_vecs2, cards2, card_vecs2] =
        lib.store().counts().unwrap();
    assert_eq!((docs2, contents2, cards2, card_vecs2), (1, 1, 1, 1));
    assert!(chunks2 < chunks && chunk_vecs2 < chunk_vecs && chunks2 == chunk_vecs2);
    assert_eq!((cards, card_vecs), (2, 2));
    assert!(matches!(
        lib.remove(ids[1]),
        Err(carrel::Error::UnknownDocument(_))
    ));
    assert_eq!(lib.store().integrity_check().unwrap(), "ok");
}

#[test]
fn a_model_change_marks_vectors_stale_and_the_next_run_reembeds_them() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    lib.add(
        &[s(fixtures().join("docs/getting-started.txt"))],
        &mut no_progress(),
    )
    .unwrap();
    let old = carrel::models::Fingerprints::of(&models()).unwrap();
    drop(lib);

    let mut shorter = ModelConfig::new(models_dir());
    shorter.max_length = 128;
    let new = carrel::models::Fingerprints::of(&shorter).unwrap();
    assert_ne!(
        old.chunk, new.chunk,
        "max length is part of the fingerprint"
    );
    let config = LibraryConfig::new(lib_dir.path().to_path_buf(), shorter);
    let mut lib = Library::open(config.clone()).unwrap();
    let doc = &lib.list().unwrap()[0];
    assert_eq!(
        (doc.state.as_str(), doc.card_state.as_str()),
        ("stale", "stale")
    );
    // What the app's list shows, read through a second library on the same
    // folder as the app does while its ingest job runs: "stale" until the
    // re-embed starts, "re-embedding" while it runs, then "indexed".
    let app_list = Library::open(config).unwrap();
    let shown = || app_list.listed().unwrap()[0].shown.state;
    assert_eq!(shown(), DocState::Stale);

    let mut seen = Vec::new();
    let refreshed = lib
        .refresh(&mut |p: &carrel::Progress| seen.push((p.done, p.total, shown())))
        .unwrap();
    assert_eq!(refreshed, 1);
    assert_eq!(
        seen.last().map(|s| (s.0, s.1)),
        Some((1, 1)),
        "progress reported"
    );
    assert_eq!(seen[0].2, DocState::ReEmbedding, "{seen:?}");
    assert_eq!(shown(), DocState::Indexed);
    let doc = &lib.list().unwrap()[0];
    assert_eq!(
        (doc.state.as_str(), doc.card_state.as_str()),
        ("indexed", "ready")
    );
    let stale_vectors: i64 = lib
        .store()
        .stale_contents(&new.chunk, &new.card)
        .unwrap()
        .len() as i64;
    assert_eq!(stale_vectors, 0);
}

#[test]
fn oversized_files_are_refused_and_long_ones_truncated_with_the_cut_recorded() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let huge = src.path().join("huge.txt");
    let line = "All work and no play makes a very large file.\n";
    std::fs::write(&huge, line.repeat(50_000_000 / line.len() + 1)).unwrap();
    copy_fixtures(src.path(), &["long/renovation-plan.md"]);

    let mut config = LibraryConfig::new(lib_dir.path().to_path_buf(), models());
    config.limits.max_chunks = 5;
    let mut lib = Library::open(config).unwrap();
    let report = lib.add(&[s(src.path())], &mut no_progress()).unwrap();
    assert_eq!(report.failed.len(), 1);
    assert!(
        report.failed[0].reason.contains("too large: 50.0 MB"),
        "{}",
        report.failed[0].reason
    );
    let plan = lib
        .list()
        .unwrap()
        .into_iter()
        .find(|d| d.source.ends_with("renovation-plan.md"))
        .unwrap();
    assert_eq!((plan.chunks, plan.truncated_at_chunk), (5, Some(5)));
    let huge_row = lib
        .list()
        .unwrap()
        .into_iter()
        .find(|d| d.source.ends_with("huge.txt"))
        .unwrap();
    assert_eq!(huge_row.broken_code.as_deref(), Some("too_large"));
}

#[test]
fn a_file_that_vanishes_between_listing_and_reading_is_listed_broken() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    let gone = lib_dir.path().join("was-here.md");
    let good = fixtures().join("docs/getting-started.txt");
    let sources = [Source::File(gone.clone()), Source::File(good)];
    let report = lib
        .add_sources(&sources, Vec::new(), &mut no_progress())
        .unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.failed.len(), 1);
    let row = lib
        .list()
        .unwrap()
        .into_iter()
        .find(|d| d.source == s(&gone))
        .unwrap();
    assert_eq!(row.broken_code.as_deref(), Some("vanished"));
}

/// Regression: `Library::chunks` of a broken document was `Ok(vec![])`, so
/// MCP `cite` answered "not_found" instead of saying why there is no text.
#[test]
fn a_broken_documents_chunks_are_an_error_naming_its_reason() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    let bad = fixtures().join("bad/encrypted.pdf");
    lib.add_sources(&[Source::File(bad)], Vec::new(), &mut no_progress())
        .unwrap();
    let id = lib.list().unwrap()[0].id;
    let err = lib.chunks(id).unwrap_err().to_string();
    assert!(
        err.contains("is broken") && err.contains("encrypted PDF"),
        "{err}"
    );
}

/// Regression: after a model change the stale vectors dropped out of both
/// lanes' KNN, the lanes answered `ready` with nothing, and nothing was
/// re-embedded until the next `add`.
#[test]
fn stale_vectors_make_the_lanes_say_so_until_the_watcher_reembeds_them() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    lib.add(
        &[
            s(fixtures().join("docs/getting-started.txt")),
            s(fixtures().join("docs/sourdough-starter.md")),
        ],
        &mut no_progress(),
    )
    .unwrap();
    drop(lib);

    let mut shorter = ModelConfig::new(models_dir());
    shorter.max_length = 128;
    let mut lib = Library::open(LibraryConfig::new(lib_dir.path().to_path_buf(), shorter)).unwrap();
    let r = lib.match_query("feeding a sourdough starter", 5).unwrap();
    for (lane, state, reason) in [
        ("subject", r.subject.state(), r.subject.reason()),
        ("topic", r.topic.state(), r.topic.reason()),
    ] {
        assert_eq!(state, "unavailable", "{lane}");
        assert!(
            reason.is_some_and(|r| r.starts_with("re-embedding 2 of 2 documents")),
            "{lane}: {reason:?}"
        );
    }

    // The watcher (the app runs the same loop) re-embeds before it watches.
    let stop = std::sync::atomic::AtomicBool::new(true);
    carrel::watch::run(&mut lib, &stop, &std::sync::Mutex::new(()), &mut |_| {}).unwrap();
    let r = lib.match_query("feeding a sourdough starter", 5).unwrap();
    assert_eq!(r.topic.state(), "ready", "{:?}", r.topic.reason());
    assert!(!r.topic.hits().is_empty());

    // Another process re-embeds with the other model: this library's lanes
    // see it at once (the coverage they cache follows the database).
    let mut other = open(lib_dir.path());
    assert_eq!(other.refresh(&mut no_progress()).unwrap(), 2);
    let r = lib.match_query("feeding a sourdough starter", 5).unwrap();
    assert_eq!(r.topic.state(), "unavailable", "{:?}", r.topic.reason());
}

/// Two embedding workers store exactly what one stores: the same documents,
/// chunks and cards, each with its own vector (not a neighbour's, as a
/// mix-up between workers' answers would give).
#[test]
fn two_workers_store_what_one_worker_stores() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let corpus = s(fixtures().join("labelled").join("corpus"));
    let mut stored = Vec::new();
    for jobs in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = models();
        cfg.jobs = jobs;
        let mut lib = Library::open(LibraryConfig::new(dir.path().to_path_buf(), cfg)).unwrap();
        let report = lib
            .add(std::slice::from_ref(&corpus), &mut no_progress())
            .unwrap();
        assert!(report.added >= 10, "{report:#?}");
        assert_eq!(lib.embedding_workers().unwrap().running, jobs);
        let fp = carrel::models::Fingerprints::of(&models()).unwrap();
        let file =
            carrel::store::SqliteStore::open(&dir.path().join(carrel::DATABASE_FILE)).unwrap();
        let seed = carrel::store::synthetic::Seed::read(&file, &fp).unwrap();
        let titles: Vec<(String, String)> = lib
            .list()
            .unwrap()
            .into_iter()
            .map(|d| (d.source, d.title))
            .collect();
        stored.push((titles, seed));
    }
    let ((titles1, one), (titles2, two)) = (&stored[0], &stored[1]);
    assert_eq!(titles1, titles2);
    assert_eq!(one.chunks.len(), two.chunks.len());
    assert_eq!(one.cards.len(), two.cards.len());
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5);
    for ((c1, v1), (c2, v2)) in one.chunks.iter().zip(&two.chunks) {
        assert_eq!(c1.text, c2.text);
        assert!(close(v1, v2), "chunk {:?} has another vector", c1.text);
    }
    for ((c1, v1), (c2, v2)) in one.cards.iter().zip(&two.cards) {
        assert_eq!(c1.title, c2.title);
        assert!(close(v1, v2), "card {:?} has another vector", c1.title);
    }
}

/// Workers that would not fit under the memory cap do not start; one always
/// does, and the report says how many were asked for.
#[test]
fn the_memory_cap_starts_fewer_workers_never_none() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = models();
    cfg.jobs = 4;
    cfg.worker_memory_mb = 1;
    let mut lib = Library::open(LibraryConfig::new(dir.path().to_path_buf(), cfg)).unwrap();
    let report = lib
        .add(
            &[s(fixtures().join("docs/getting-started.txt"))],
            &mut no_progress(),
        )
        .unwrap();
    assert_eq!(report.added, 1);
    let w = lib.embedding_workers().unwrap();
    assert_eq!((w.asked, w.running, w.cap_mb), (4, 1, 1));
    assert!(
        w.per_worker_mb > 1.0,
        "a session's memory was measured: {w:?}"
    );
}

/// A cancel stops the run before the next source; what it did not reach is
/// counted, and a later add reads it.
#[test]
fn a_cancelled_add_counts_what_it_did_not_reach_and_the_next_add_goes_on() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let docs = s(fixtures().join("docs"));
    let mut lib = open(dir.path());
    lib.cancel_handle().cancel();
    let report = lib
        .add(std::slice::from_ref(&docs), &mut no_progress())
        .unwrap();
    assert_eq!((report.added, report.cancelled), (0, Some(6)));
    drop(lib);
    let mut lib = open(dir.path());
    let report = lib.add(&[docs], &mut no_progress()).unwrap();
    assert_eq!((report.added, report.cancelled), (6, None));
}
