//! Crash safety: `carrel add` and `carrel watch run` killed at named fault
//! points (the `fail` crate's `FAILPOINTS`) leave a library that passes
//! `PRAGMA integrity_check` with no orphan rows, holding exactly the
//! documents committed before the kill, and the next run completes the
//! pending work. The kill points depend on progress, never on the clock.
//! The same rounds run on a SQLite library and on a PostgreSQL one.

mod common;
#[path = "common/postgres.rs"]
mod pg_server;

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use carrel::store::Store;
use common::*;
use wait_timeout::ChildExt;

fn check(lib: &std::path::Path, when: &str) {
    let store = Store::open_dir(lib).unwrap();
    let integrity = store.integrity_check().unwrap();
    assert!(integrity.starts_with("ok"), "{when}: {integrity}");
    for (what, n) in store.orphans().unwrap() {
        assert_eq!(n, 0, "{what} after {when}");
    }
}

/// Each document's content hash, by id.
fn snapshot(lib: &std::path::Path) -> HashMap<i64, String> {
    if !Store::held_in(lib) {
        return HashMap::new(); // killed before the library was first written
    }
    let out = carrel_process(lib)
        .args(["list", "--json"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let docs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    docs.as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_i64().unwrap(),
                d["content_hash"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// `FAILPOINTS` that kills the process on its `pass`-th arrival at `point`.
fn aim(point: &str, pass: usize) -> String {
    match pass {
        1 => format!("{point}=return"),
        n => format!("{point}={}*off->return", n - 1),
    }
}

#[test]
fn sigkill_at_named_points_leaves_a_sound_library_and_the_next_run_finishes() {
    let lib = tempfile::tempdir().unwrap();
    killed_and_finished(lib.path());
}

#[test]
fn on_postgresql_too() {
    let server = pg_server::start_postgres();
    let lib = tempfile::tempdir().unwrap();
    Store::create_postgres(lib.path(), &server.url).unwrap();
    killed_and_finished(lib.path());
}

/// Twenty rounds of edits, each writer killed at a named point, on the
/// library whose folder is `lib`; then a run that finishes.
fn killed_and_finished(lib: &std::path::Path) {
    let folder = tempfile::tempdir().unwrap();
    // 13 labelled documents plus the long plan.
    for e in std::fs::read_dir(fixtures().join("labelled/corpus")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, folder.path().join(p.file_name().unwrap())).unwrap();
    }
    std::fs::copy(
        fixtures().join("long/renovation-plan.md"),
        folder.path().join("plan.md"),
    )
    .unwrap();
    let carrel = || {
        let mut c = carrel_process(lib);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    };
    // Only text files are edited: text appended to a PDF after its `%%EOF`
    // changes its bytes but not its extracted content.
    let mut names: Vec<_> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md" || e == "txt"))
        .collect();
    names.sort();
    let mut watching = false;
    for round in 0..20usize {
        // Every fourth round kills the watcher instead of `add`.
        let watch_round = round % 4 == 3;
        if watch_round && !watching {
            let ok = carrel()
                .args(["watch", "add"])
                .arg(folder.path())
                .status()
                .unwrap();
            assert!(ok.success());
            watching = true;
        }
        // Every round edits three files, so there are at least three
        // documents to write, and so to be killed between.
        for k in 0..3 {
            let f = &names[(round * 3 + k) % names.len()];
            let mut text = std::fs::read_to_string(f).unwrap();
            text.push_str(&format!(
                "\n\n## Round {round}\n\nNote {round} for the crash test.\n"
            ));
            std::fs::write(f, text).unwrap();
        }
        // Alternate the two sides of a document's commit; vary the pass.
        let (point, pass) = match round {
            15 => ("watch::before_record_sync", 1),
            _ if round % 2 == 0 => ("ingest::after_commit", 1 + (round / 2) % 3),
            _ => ("ingest::before_commit", 1 + (round / 2) % 3),
        };
        let before = snapshot(lib);
        let mut cmd = carrel();
        if watch_round {
            cmd.args(["watch", "run"]);
        } else {
            cmd.arg("add").arg(folder.path());
        }
        let mut child = cmd.env("FAILPOINTS", aim(point, pass)).spawn().unwrap();
        let status = match child.wait_timeout(Duration::from_secs(300)).unwrap() {
            Some(s) => s,
            None => {
                child.kill().unwrap();
                panic!("round {round}: {point} (pass {pass}) was never reached");
            }
        };
        let when = format!("round {round}, killed at {point} on pass {pass}");
        let doc_count = before.len();
        assert_eq!(status.signal(), Some(9), "{when}: {status:?}");
        check(lib, &when);
        // The kill landed where it was aimed: after a commit, that many
        // documents changed; before one, the open transaction rolled back.
        let after = snapshot(lib);
        let changed = after
            .iter()
            .filter(|(id, hash)| before.get(id) != Some(hash))
            .count();
        let when = format!(
            "{when} ({doc_count} documents before, {} after)",
            after.len()
        );
        match point {
            "ingest::after_commit" => assert_eq!(changed, pass, "{when}"),
            "ingest::before_commit" => assert_eq!(changed, pass - 1, "{when}"),
            _ => assert!(changed >= 3, "{when}: only {changed} changed"),
        }
    }

    // The next run completes: every file indexed, nothing left half done.
    let out = carrel()
        .args(["add", "--json"])
        .arg(folder.path())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    check(lib, "the final run");
    let listed = carrel()
        .args(["list", "--json"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let docs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let docs = docs.as_array().unwrap();
    assert_eq!(docs.len(), 14);
    assert!(docs.iter().all(|d| d["state"] == "indexed"), "{docs:?}");
}
