//! Watched folders: a sync reflects creates, edits, renames and deletes (a
//! rename keeps its document id and embeds nothing), patterns and default
//! junk are left out, a missing folder removes nothing, and `carrel watch
//! run` picks up a new file and stops cleanly on SIGTERM.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use carrel::models::onnx::TEXTS_EMBEDDED;
use carrel::watch::{self, new_watch};
use common::*;

fn labelled(name: &str) -> std::path::PathBuf {
    fixtures().join("labelled/corpus").join(name)
}

fn source_of(lib: &carrel::Library, id: i64) -> String {
    lib.document(id).unwrap().source
}

fn id_of(lib: &carrel::Library, path: &Path) -> Option<i64> {
    let p = s(path);
    lib.list()
        .unwrap()
        .into_iter()
        .find(|d| d.source == p)
        .map(|d| d.id)
}

#[test]
fn a_sync_reflects_edits_renames_and_deletes_and_a_rename_embeds_nothing() {
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    for name in [
        "bicycle-chain.md",
        "chess-openings.md",
        "composting.md",
        "tax-return.md",
    ] {
        std::fs::copy(labelled(name), f.join(name)).unwrap();
    }
    std::fs::create_dir(f.join("node_modules")).unwrap();
    std::fs::copy(labelled("git-branching.md"), f.join("node_modules/git.md")).unwrap();
    std::fs::copy(labelled("marathon-training.md"), f.join("draft.md")).unwrap();

    let mut lib = open(lib_dir.path());
    let w = new_watch(&s(f), 3600, vec![], vec!["draft.md".into()], false).unwrap();
    let (id, created) = lib.add_watch(&w).unwrap();
    assert!(created);
    let w = lib
        .watches()
        .unwrap()
        .into_iter()
        .find(|w| w.id == id)
        .unwrap();
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!((r.added, r.removed, r.renamed), (4, 0, 0), "{r:?}");
    assert!(
        id_of(&lib, &f.join("node_modules/git.md")).is_none(),
        "junk left out"
    );
    assert!(
        id_of(&lib, &f.join("draft.md")).is_none(),
        "--exclude honoured"
    );

    // Rename and move into a subfolder: same id, no model call.
    let chain = id_of(&lib, &f.join("bicycle-chain.md")).unwrap();
    std::fs::create_dir(f.join("bikes")).unwrap();
    std::fs::rename(f.join("bicycle-chain.md"), f.join("bikes/chain.md")).unwrap();
    let embedded = TEXTS_EMBEDDED.load(Ordering::SeqCst);
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!((r.renamed, r.added, r.removed), (1, 0, 0), "{r:?}");
    assert_eq!(source_of(&lib, chain), s(f.join("bikes/chain.md")));
    assert_eq!(
        TEXTS_EMBEDDED.load(Ordering::SeqCst),
        embedded,
        "a rename embeds nothing"
    );

    // An edit re-indexes that file under the same id.
    let compost = id_of(&lib, &f.join("composting.md")).unwrap();
    let mut text = std::fs::read_to_string(f.join("composting.md")).unwrap();
    text.push_str("\n\n## Bokashi\n\nBokashi bran ferments kitchen scraps in a sealed bucket before they go on the heap.\n");
    std::fs::write(f.join("composting.md"), text).unwrap();
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!(r.added, 1, "{r:?}");
    assert_eq!(id_of(&lib, &f.join("composting.md")), Some(compost));
    let body: String = lib
        .chunks(compost)
        .unwrap()
        .iter()
        .map(|c| c.text.clone())
        .collect();
    assert!(body.contains("Bokashi bran"));

    // A delete removes the document, and its content once nothing points at it.
    let [_, contents_before, ..] = lib.store().counts().unwrap();
    std::fs::remove_file(f.join("chess-openings.md")).unwrap();
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!(r.removed, 1, "{r:?}");
    let [docs, contents_after, ..] = lib.store().counts().unwrap();
    assert_eq!((docs, contents_after), (3, contents_before - 1));

    // The folder itself gone (an unmounted drive): nothing is removed.
    let moved = tempfile::tempdir().unwrap();
    std::fs::rename(f, moved.path().join("away")).unwrap();
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert!(
        r.error.as_deref().unwrap().contains("source missing"),
        "{r:?}"
    );
    let kept = lib.list().unwrap();
    assert_eq!(kept.len(), 3);
    assert!(
        kept.iter().all(|d| d.source_missing),
        "shown as missing, not hidden"
    );
    let w = lib.watches().unwrap().pop().unwrap();
    assert!(w.last_error.unwrap().contains("source missing"));
    std::fs::rename(moved.path().join("away"), f).unwrap();
}

#[test]
fn watch_run_picks_up_a_new_file_and_stops_on_sigterm() {
    let lib = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    std::fs::copy(
        labelled("composting.md"),
        folder.path().join("composting.md"),
    )
    .unwrap();
    let carrel = || carrel_process(lib.path());
    let out = carrel()
        .args(["watch", "add"])
        .arg(folder.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(
        &carrel()
            .args(["watch", "list", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(listed[0]["kind"], "folder");
    assert!(listed[0]["synced_at"].is_i64() && listed[0]["last_error"].is_null());

    let child = carrel()
        .args(["watch", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2)); // the watcher is up
    let saved = Instant::now();
    std::fs::copy(
        labelled("tax-return.md"),
        folder.path().join("tax-return.md"),
    )
    .unwrap();
    let mut found = false;
    while saved.elapsed() < Duration::from_secs(90) {
        let out = carrel().args(["list", "--json"]).output().unwrap();
        let docs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if docs.as_array().is_some_and(|d| {
            d.iter().any(|d| {
                d["source"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with("tax-return.md")
            })
        }) {
            found = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("saved to listed: {:.2} s", saved.elapsed().as_secs_f64());
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(found, "the new file was not indexed: {err}");
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stopped"), "{err}");
}

/// Serves `/page` from `body` with an ETag, answering 304 to a matching
/// If-None-Match. Counts (200s, 304s).
/// A watch added (and synced) by another process between two reloads of a
/// running watcher: a file saved before the watcher starts following the
/// folder must still be picked up, not left until the interval (an hour).
#[test]
fn a_file_saved_before_the_watcher_follows_a_new_watch_is_still_picked_up() {
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let dir = lib_dir.path().to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let watcher = std::thread::spawn(move || {
        let mut lib = open(&dir);
        watch::run(&mut lib, &flag, &std::sync::Mutex::new(()), &mut |_| {}).unwrap();
    });
    // The watcher's first reload finds no watch; the next is 2 s later.
    std::thread::sleep(Duration::from_millis(300));
    let mut lib = open(lib_dir.path());
    let w = new_watch(&s(folder.path()), 3600, vec![], vec![], false).unwrap();
    let added = watch::add(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!(added.sync.added, 0, "the folder starts empty");
    let saved = folder.path().join("composting.md");
    std::fs::copy(labelled("composting.md"), &saved).unwrap();

    let deadline = Instant::now() + Duration::from_secs(20);
    while id_of(&lib, &saved).is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert!(
        id_of(&lib, &saved).is_some(),
        "a file saved before the watcher followed the folder was never synced"
    );
}

fn etag_server(
    body: std::sync::Arc<std::sync::Mutex<String>>,
) -> (String, std::sync::Arc<std::sync::Mutex<(usize, usize)>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
    let seen = counts.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
            let page = body.lock().unwrap().clone();
            let etag = format!(
                "\"{:x}\"",
                page.len() * 31 + page.bytes().map(|b| b as usize).sum::<usize>()
            );
            if head.contains(&format!("if-none-match: {etag}")) {
                seen.lock().unwrap().1 += 1;
                let _ = write!(
                    stream,
                    "HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\nConnection: close\r\n\r\n"
                );
            } else {
                seen.lock().unwrap().0 += 1;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: {etag}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                );
            }
        }
    });
    (format!("http://{addr}/page"), counts)
}

fn page(words: &str) -> String {
    format!(
        "<html><head><title>Allotment Rota</title></head><body><main><h1>Allotment Rota</h1>\
         <p>Who waters the allotment beds this week: {words}.</p></main></body></html>"
    )
}

#[test]
fn a_url_watch_refetches_conditionally_and_reindexes_on_change() {
    let lib_dir = tempfile::tempdir().unwrap();
    let body = std::sync::Arc::new(std::sync::Mutex::new(page("Ann on Monday, Bo on Friday")));
    let (url, counts) = etag_server(body.clone());
    let mut lib = open(lib_dir.path());

    // Loopback is refused unless the watch allows it, and the refusal is listed.
    let w = new_watch(&url, 1, vec![], vec![], false).unwrap();
    let (id, _) = lib.add_watch(&w).unwrap();
    let w = lib
        .watches()
        .unwrap()
        .into_iter()
        .find(|w| w.id == id)
        .unwrap();
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert!(
        r.error.as_deref().unwrap_or("").contains("private"),
        "{r:?}"
    );
    lib.remove_watch(id).unwrap();
    let doc = lib.list().unwrap()[0].id;
    lib.remove(doc).unwrap();

    let w = new_watch(&url, 1, vec![], vec![], true).unwrap();
    let (id, _) = lib.add_watch(&w).unwrap();
    let w = lib
        .watches()
        .unwrap()
        .into_iter()
        .find(|w| w.id == id)
        .unwrap();
    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!((r.added, r.error.clone()), (1, None), "{r:?}");
    let doc = lib.list().unwrap()[0].id;

    let r = watch::sync(&mut lib, &w, &mut |_| {}).unwrap();
    assert_eq!(r.unchanged, 1, "{r:?}");
    assert_eq!(
        *counts.lock().unwrap(),
        (1, 1),
        "the second fetch was a 304"
    );

    // The page changes: `watch run` re-fetches it on its 1 s interval.
    drop(lib);
    let carrel = || carrel_process(lib_dir.path());
    let child = carrel()
        .args(["watch", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let changed = Instant::now();
    *body.lock().unwrap() = page("Cy on Tuesday, Di on Saturday");
    let mut reindexed = false;
    while changed.elapsed() < Duration::from_secs(60) {
        let out = carrel().args(["read", &doc.to_string()]).output().unwrap();
        if String::from_utf8_lossy(&out.stdout).contains("Cy on Tuesday") {
            reindexed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "URL changed to re-indexed: {:.2} s",
        changed.elapsed().as_secs_f64()
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(reindexed, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
}

/// Puts labelled fixtures into `folder` under new names (`to` may have
/// subfolders, which are made).
fn place(folder: &Path, files: &[(&str, &str)]) {
    for (from, to) in files {
        let to = folder.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(labelled(from), to).unwrap();
    }
}

/// The watcher and `carrel add` ingesting the same new file at once: the
/// one that wrote second failed on `UNIQUE constraint failed:
/// contents.hash`. Here a second connection adds the file after the sync
/// has read it and before it writes it (the sync's progress callback runs
/// between files).
#[test]
fn a_file_added_by_hand_while_a_watch_syncs_it_is_unchanged_for_the_watch() {
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    place(
        f,
        &[("composting.md", "a.md"), ("chess-openings.md", "b.md")],
    );
    let mut lib = open(lib_dir.path());
    let mut by_hand = open(lib_dir.path());
    let w = new_watch(&s(f), 3600, vec![], vec![], false).unwrap();
    let (id, _) = lib.add_watch(&w).unwrap();
    let w = lib
        .watches()
        .unwrap()
        .into_iter()
        .find(|w| w.id == id)
        .unwrap();
    let a = s(f.join("a.md"));
    let mut raced = false;
    let r = watch::sync(&mut lib, &w, &mut |p| {
        if p.current.ends_with("b.md") && !raced {
            raced = true;
            assert_eq!(by_hand.add(&[a.clone()], &mut |_| {}).unwrap().added, 1);
        }
    })
    .expect("the second writer of a.md must not fail");
    assert!(raced);
    assert_eq!((r.added, r.unchanged, r.failed.len()), (1, 1, 0), "{r:?}");
    assert_eq!(lib.list().unwrap().len(), 2);
    for (what, n) in lib.store().orphans().unwrap() {
        assert_eq!(n, 0, "{what}");
    }
}
