//! Crash safety: `carrel add` and `carrel watch run` killed with SIGKILL at
//! many points leave a library that passes `PRAGMA integrity_check` with no
//! orphan rows, and the next run completes the pending work.

mod common;

use std::process::Stdio;
use std::time::Duration;

use carrel::store::Store;
use common::*;

fn check(lib: &std::path::Path, when: &str) {
    let store = Store::open(&lib.join("library.sqlite3")).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok", "{when}");
    for (what, n) in store.orphans().unwrap() {
        assert_eq!(n, 0, "{what} after {when}");
    }
}

/// A small xorshift, so the kill points are spread but the same every run.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn sigkill_at_any_point_leaves_a_sound_library_and_the_next_run_finishes() {
    let lib = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    // 13 labelled documents plus the long plan: a few seconds of ingest.
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
        let mut c = carrel_process(lib.path());
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    };
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut kills = 0;
    let names: Vec<_> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for round in 0..30usize {
        // Every round edits three files, so there is work to be killed in.
        for k in 0..3 {
            let f = &names[(round * 3 + k) % names.len()];
            let mut text = std::fs::read_to_string(f).unwrap();
            text.push_str(&format!(
                "\n\n## Round {round}\n\nNote {round} for the crash test.\n"
            ));
            std::fs::write(f, text).unwrap();
        }
        // Every fourth round kills the watcher mid-sync instead of `add`.
        let mut child = if round % 4 == 3 {
            if round == 3 {
                let ok = carrel()
                    .args(["watch", "add"])
                    .arg(folder.path())
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
            carrel().args(["watch", "run"]).spawn().unwrap()
        } else {
            carrel().arg("add").arg(folder.path()).spawn().unwrap()
        };
        let delay = Duration::from_millis(next(&mut rng) % 1500);
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
        check(
            lib.path(),
            &format!("round {round}, killed after {delay:?}"),
        );
    }
    assert!(kills >= 20, "only {kills} kills landed mid-run");

    // The next run completes: every file indexed, nothing left half done.
    let out = carrel()
        .args(["add", "--json"])
        .arg(folder.path())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    check(lib.path(), "the final run");
    let listed = carrel()
        .args(["list", "--json"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let docs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let docs = docs.as_array().unwrap();
    assert_eq!(docs.len(), 14);
    assert!(docs.iter().all(|d| d["state"] == "indexed"), "{docs:?}");
    eprintln!("{kills} SIGKILLs, library sound after each");
}
