//! Hostile input: files built to break parsers (`fixtures/hostile/`), a FIFO
//! and a file that vanishes while it is read. Every one ends up listed,
//! indexed or broken with a reason that says what happened, and no process
//! dies: extraction runs in a worker process that may.

mod common;

use std::process::Stdio;

use common::*;

fn listed(lib: &std::path::Path) -> Vec<serde_json::Value> {
    let out = carrel_process(lib)
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let docs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    docs.as_array().unwrap().clone()
}

fn by_name<'a>(docs: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    docs.iter()
        .find(|d| d["source"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("{name} is not listed: {docs:#?}"))
}

/// A folder of copies of `fixtures/hostile/` and a FIFO, `named-pipe.md`.
fn hostile_folder() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixtures().join("hostile")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, folder.path().join(p.file_name().unwrap())).unwrap();
    }
    let fifo = folder.path().join("named-pipe.md");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    folder
}

#[test]
fn every_hostile_file_is_listed_and_the_batch_survives() {
    let lib = tempfile::tempdir().unwrap();
    let folder = hostile_folder();

    let out = carrel_process(lib.path())
        .args(["add", "--json"])
        .arg(folder.path())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    // Some inputs failed (exit 1); the process was not killed by any of them.
    assert_eq!(out.status.code(), Some(1), "{:?}", out.status);
    let docs = listed(lib.path());
    assert_eq!(docs.len(), 5, "every file is listed: {docs:#?}");
    for d in &docs {
        match d["state"].as_str().unwrap() {
            "indexed" => {}
            "broken" => assert!(!d["broken_reason"].as_str().unwrap().is_empty()),
            other => panic!("{other}: {d}"),
        }
    }
    assert_eq!(by_name(&docs, "ordinary.md")["state"], "indexed");
    assert_eq!(by_name(&docs, "deep-nesting.html")["state"], "indexed");
    let bomb = by_name(&docs, "decompression-bomb.pdf");
    assert!(
        bomb["broken_reason"]
            .as_str()
            .unwrap()
            .contains("decompression bomb"),
        "{bomb}"
    );
    let pipe = by_name(&docs, "named-pipe.md");
    assert!(
        pipe["broken_reason"].as_str().unwrap().contains("FIFO"),
        "{pipe}"
    );
}

/// A watched folder takes what `carrel add` takes. Its own walk took
/// regular files only, so the FIFO was skipped unseen, and the app (which
/// adds folders as watches) never listed it.
#[test]
fn a_watched_folder_lists_its_fifo_as_broken_too() {
    let lib = tempfile::tempdir().unwrap();
    let folder = hostile_folder();
    let out = carrel_process(lib.path())
        .args(["watch", "add"])
        .arg(folder.path())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "killed: {:?}", out.status);
    let docs = listed(lib.path());
    assert_eq!(docs.len(), 5, "every file is listed: {docs:#?}");
    let pipe = by_name(&docs, "named-pipe.md");
    assert_eq!(pipe["state"], "broken");
    assert!(
        pipe["broken_reason"].as_str().unwrap().contains("FIFO"),
        "{pipe}"
    );
}

/// A file deleted between the folder scan and its read is listed as
/// vanished, and the files after it are still indexed.
#[test]
fn a_file_that_vanishes_mid_batch_is_listed_as_vanished() {
    let scenario = fail::FailScenario::setup();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    copy_fixtures(
        folder.path(),
        &["docs/getting-started.txt", "docs/sourdough-starter.md"],
    );
    let doomed = folder.path().join("getting-started.txt");
    let gone = doomed.clone();
    fail::cfg_callback("ingest::before_read", move || {
        let _ = std::fs::remove_file(&gone);
    })
    .unwrap();
    let mut lib = open(lib_dir.path());
    let report = lib.add(&[s(folder.path())], &mut |_| {}).unwrap();
    scenario.teardown();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(report.failed[0].source, s(&doomed));
    assert!(
        report.failed[0].reason.contains("disappeared"),
        "{report:?}"
    );
    let docs = lib.list().unwrap();
    assert_eq!(docs.len(), 2);
}
