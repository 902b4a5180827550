//! Watched folders: a sync reflects creates, edits, renames and deletes (a
//! rename keeps its document id and embeds nothing), patterns and default
//! junk are left out, a missing, empty or unreadable folder removes nothing,
//! a watch removes only what it added (never a hand-added document or
//! another watch's), and `carrel watch run` picks up a new file and stops
//! cleanly on SIGTERM.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use carrel::models::onnx::TEXTS_EMBEDDED;
use carrel::watch::{self, new_watch};
use common::*;

/// The embed counter is process-wide. A test that reads it holds this lock
/// alone; every other test here that embeds in this process holds it shared,
/// so none of them embeds inside the window the counter is read over.
static EMBEDDING: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn embeds() -> std::sync::RwLockReadGuard<'static, ()> {
    EMBEDDING.read().unwrap_or_else(|p| p.into_inner())
}

fn counts_embeddings() -> std::sync::RwLockWriteGuard<'static, ()> {
    EMBEDDING.write().unwrap_or_else(|p| p.into_inner())
}

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
    let _embedding = counts_embeddings();
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
    // Both are listed as skipped, the junk folder once.
    let skipped: Vec<(String, &str)> = r
        .skipped
        .iter()
        .map(|k| (k.source.replace(&s(f), ""), k.reason.as_str()))
        .collect();
    assert_eq!(
        skipped,
        [
            ("/draft.md".to_string(), "excluded by pattern"),
            ("/node_modules".to_string(), "excluded by pattern"),
        ]
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
    let _embedding = embeds();
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
    let _embedding = embeds();
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
    let _embedding = embeds();
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

// Ownership (issue 13): a sync removes only documents its own watch added,
// only when their file is not found, and only when the folder can be
// trusted to say so.

/// Puts labelled fixtures into `folder` under new names (`to` may have
/// subfolders, which are made).
fn place(folder: &Path, files: &[(&str, &str)]) {
    for (from, to) in files {
        let to = folder.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(labelled(from), to).unwrap();
    }
}

/// A folder watch, added and synced once the way `carrel watch add` does it.
fn watched(
    lib: &mut carrel::Library,
    folder: &Path,
    exclude: &[&str],
) -> (carrel::store::Watch, watch::SyncReport) {
    let exclude = exclude.iter().map(|p| p.to_string()).collect();
    let w = new_watch(&s(folder), 3600, vec![], exclude, false).unwrap();
    let added = watch::add(lib, &w, &mut |_| {}).unwrap();
    (added.watch, added.sync)
}

fn sync(lib: &mut carrel::Library, w: &carrel::store::Watch) -> watch::SyncReport {
    watch::sync(lib, w, &mut |_| {}).unwrap()
}

fn last_error(lib: &carrel::Library, id: i64) -> Option<String> {
    let w = lib.watches().unwrap().into_iter().find(|w| w.id == id);
    w.unwrap().last_error
}

/// The issue's own steps: `carrel add D/notes.md`, then `carrel watch add D
/// --exclude '*.md'` reported `1 removed` and deleted notes.md. And a watch
/// that syncs a hand-added file does not make it its own, so a later change
/// of its filters cannot delete it either.
#[test]
fn a_hand_added_document_survives_a_watch_with_an_exclude_filter() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    place(
        f,
        &[("composting.md", "notes.md"), ("tax-return.md", "tax.txt")],
    );
    let mut lib = open(lib_dir.path());
    let notes = f.join("notes.md");
    assert_eq!(lib.add(&[s(&notes)], &mut |_| {}).unwrap().added, 1);

    let (w, r) = watched(&mut lib, f, &["*.md"]);
    assert_eq!((r.added, r.removed, r.error.clone()), (1, 0, None), "{r:?}");
    assert!(
        id_of(&lib, &notes).is_some(),
        "the hand-added notes.md was deleted"
    );

    // A watch without filters meets notes.md (unchanged), then its filters
    // change to leave .md out: notes.md was never the watch's to remove.
    lib.remove_watch(w.id).unwrap();
    let (w, r) = watched(&mut lib, f, &[]);
    assert_eq!((r.added, r.unchanged, r.removed), (0, 2, 0), "{r:?}");
    let mut changed = w.clone();
    changed.exclude = vec!["*.md".into()];
    let r = sync(&mut lib, &changed);
    assert_eq!(r.removed, 0, "{r:?}");
    assert!(
        id_of(&lib, &notes).is_some(),
        "a filter change deleted notes.md"
    );
    assert_eq!(lib.list().unwrap().len(), 2);
}

/// An unmounted drive leaves an empty mount point: every file answers "not
/// found", and the next sync used to remove every document of the watch.
#[test]
fn an_emptied_folder_removes_nothing_and_says_how_many_documents_it_kept() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    place(
        f,
        &[
            ("composting.md", "composting.md"),
            ("tax-return.md", "taxes/2025.md"),
            ("chess-openings.md", "chess.md"),
        ],
    );
    let mut lib = open(lib_dir.path());
    let (w, r) = watched(&mut lib, f, &[]);
    assert_eq!(r.added, 3, "{r:?}");

    let unmounted = tempfile::tempdir().unwrap();
    for name in ["composting.md", "taxes", "chess.md"] {
        std::fs::rename(f.join(name), unmounted.path().join(name)).unwrap();
    }
    let r = sync(&mut lib, &w);
    let said = "the folder is empty: 3 documents kept; is the drive mounted?";
    assert_eq!((r.removed, r.error.as_deref()), (0, Some(said)), "{r:?}");
    assert_eq!(last_error(&lib, w.id).as_deref(), Some(said));
    assert_eq!(lib.list().unwrap().len(), 3);

    // The drive is back: the error clears and nothing was lost.
    for name in ["composting.md", "taxes", "chess.md"] {
        std::fs::rename(unmounted.path().join(name), f.join(name)).unwrap();
    }
    let r = sync(&mut lib, &w);
    assert_eq!(
        (r.unchanged, r.removed, r.error.clone()),
        (3, 0, None),
        "{r:?}"
    );
    assert_eq!(last_error(&lib, w.id), None);
}

/// Takes away this thread's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH until
/// dropped, so that a folder with mode 000 stops root as it stops anyone.
/// Capabilities belong to a thread on Linux: other tests keep theirs.
struct NoPermissionBypass(Option<[CapData; 2]>);

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_DAC_OVERRIDE: u32 = 1;
const CAP_DAC_READ_SEARCH: u32 = 2;

impl NoPermissionBypass {
    fn new() -> Self {
        let mut header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData::default(); 2];
        // SAFETY: capget/capset read and write a v3 header and two data words.
        let got = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
        if got != 0 {
            return NoPermissionBypass(None);
        }
        let mut lowered = data;
        lowered[0].effective &= !((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH));
        // SAFETY: as above; pid 0 is this thread alone.
        let set = unsafe { libc::syscall(libc::SYS_capset, &mut header, lowered.as_ptr()) };
        NoPermissionBypass((set == 0).then_some(data))
    }
}

impl Drop for NoPermissionBypass {
    fn drop(&mut self) {
        if let Some(data) = self.0 {
            let mut header = CapHeader {
                version: LINUX_CAPABILITY_VERSION_3,
                pid: 0,
            };
            // SAFETY: the header and data capget filled in, given back.
            unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
        }
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A subfolder that cannot be listed hid its files from the scan, and their
/// documents were removed; a root that cannot be read lost everything.
/// Tests run as root here, where mode 000 stops nothing: this thread gives
/// up root's permission bypass while it syncs (see [`NoPermissionBypass`]).
#[test]
fn a_subfolder_that_cannot_be_listed_removes_nothing() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    place(
        f,
        &[
            ("composting.md", "composting.md"),
            ("tax-return.md", "private/taxes.md"),
        ],
    );
    let mut lib = open(lib_dir.path());
    let (w, r) = watched(&mut lib, f, &[]);
    assert_eq!(r.added, 2, "{r:?}");

    // composting.md is really deleted; private/ cannot be listed.
    std::fs::remove_file(f.join("composting.md")).unwrap();
    set_mode(&f.join("private"), 0o000);
    let r = {
        let _bypass_off = NoPermissionBypass::new();
        if std::fs::read_dir(f.join("private")).is_ok() {
            set_mode(&f.join("private"), 0o755);
            eprintln!("SKIPPED: this thread can still read a mode-000 folder (capset refused)");
            return;
        }
        sync(&mut lib, &w)
    };
    set_mode(&f.join("private"), 0o755);
    assert_eq!(r.removed, 0, "{r:?}");
    let error = r.error.expect("the sync says why it removed nothing");
    assert!(
        error.contains("could not be listed") && error.contains("private"),
        "{error}"
    );
    assert!(error.contains("nothing is removed"), "{error}");
    assert_eq!(last_error(&lib, w.id), Some(error));
    assert_eq!(lib.list().unwrap().len(), 2);

    // Listed again: the deleted file goes now, and only it.
    let r = sync(&mut lib, &w);
    assert_eq!((r.removed, r.error.clone()), (1, None), "{r:?}");
    assert!(id_of(&lib, &f.join("private/taxes.md")).is_some());

    // The watched folder itself unreadable: nothing goes either.
    std::fs::remove_file(f.join("private/taxes.md")).unwrap();
    set_mode(f, 0o000);
    let r = {
        let _bypass_off = NoPermissionBypass::new();
        sync(&mut lib, &w)
    };
    set_mode(f, 0o755);
    assert_eq!(r.removed, 0, "{r:?}");
    let error = r.error.expect("the sync says why it removed nothing");
    assert!(
        error.contains("cannot be read") && error.contains("1 document kept"),
        "{error}"
    );
    assert_eq!(lib.list().unwrap().len(), 1);
}

/// A folder watched as a whole and a subfolder watched on its own: each
/// sync saw the other's documents as "not matched" and removed them.
#[test]
fn overlapping_watches_never_remove_each_others_documents() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());

    // The outer watch leaves the subfolder out; the inner one takes it.
    let one = tempfile::tempdir().unwrap();
    let d = one.path();
    place(
        d,
        &[
            ("composting.md", "composting.md"),
            ("tax-return.md", "sub/taxes.md"),
        ],
    );
    let (outer, r) = watched(&mut lib, d, &["sub/"]);
    assert_eq!(r.added, 1, "{r:?}");
    let (_inner, r) = watched(&mut lib, &d.join("sub"), &[]);
    assert_eq!(r.added, 1, "{r:?}");
    let r = sync(&mut lib, &outer);
    assert_eq!(r.removed, 0, "{r:?}");
    assert!(id_of(&lib, &d.join("sub/taxes.md")).is_some());

    // The outer watch takes everything first; the inner one leaves .md out.
    let two = tempfile::tempdir().unwrap();
    let e = two.path();
    place(
        e,
        &[
            ("chess-openings.md", "chess.md"),
            ("marathon-training.md", "sub/marathon.md"),
        ],
    );
    let (outer, r) = watched(&mut lib, e, &[]);
    assert_eq!(r.added, 2, "{r:?}");
    let (inner, r) = watched(&mut lib, &e.join("sub"), &["*.md"]);
    assert_eq!(r.removed, 0, "{r:?}");
    assert!(id_of(&lib, &e.join("sub/marathon.md")).is_some());

    // Deleted, the file goes once, by the watch that added it.
    std::fs::remove_file(e.join("sub/marathon.md")).unwrap();
    assert_eq!(sync(&mut lib, &inner).removed, 0);
    assert_eq!(sync(&mut lib, &outer).removed, 1);
    assert!(id_of(&lib, &e.join("sub/marathon.md")).is_none());
    assert_eq!(lib.list().unwrap().len(), 3);
}

/// What a watch added goes when its file is deleted; what was added by hand
/// stays (shown as missing). A file the watch added that its filters no
/// longer take stays too, until the file itself is deleted.
#[test]
fn a_deleted_file_the_watch_added_is_removed_and_a_hand_added_one_is_kept() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    place(
        f,
        &[
            ("composting.md", "composting.md"),
            ("chess-openings.md", "chess.md"),
            ("tax-return.md", "notes.md"),
        ],
    );
    let mut lib = open(lib_dir.path());
    let notes = f.join("notes.md");
    lib.add(&[s(&notes)], &mut |_| {}).unwrap();
    let (w, r) = watched(&mut lib, f, &[]);
    assert_eq!((r.added, r.unchanged), (2, 1), "{r:?}");

    std::fs::remove_file(f.join("composting.md")).unwrap();
    std::fs::remove_file(&notes).unwrap();
    let r = sync(&mut lib, &w);
    assert_eq!((r.removed, r.error.clone()), (1, None), "{r:?}");
    assert!(id_of(&lib, &f.join("composting.md")).is_none());
    let kept = lib.document(id_of(&lib, &notes).unwrap()).unwrap();
    assert!(kept.source_missing, "{kept:?}");

    // The filters change to leave chess.md out: its file is still there.
    let mut changed = w.clone();
    changed.exclude = vec!["chess.md".into()];
    let r = sync(&mut lib, &changed);
    assert_eq!(r.removed, 0, "{r:?}");
    assert!(id_of(&lib, &f.join("chess.md")).is_some());
    std::fs::write(f.join("keep-the-folder-non-empty.txt"), "x").unwrap();
    std::fs::remove_file(f.join("chess.md")).unwrap();
    let r = sync(&mut lib, &changed);
    assert_eq!(r.removed, 1, "{r:?}");
    assert!(id_of(&lib, &f.join("chess.md")).is_none());
}

/// The watcher and `carrel add` ingesting the same new file at once: the
/// one that wrote second failed on `UNIQUE constraint failed:
/// contents.hash`. Here a second connection adds the file after the sync
/// has read it and before it writes it (the sync's progress callback runs
/// between files).
#[test]
fn a_file_added_by_hand_while_a_watch_syncs_it_is_unchanged_for_the_watch() {
    let _embedding = embeds();
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
            assert_eq!(
                by_hand
                    .add(std::slice::from_ref(&a), &mut |_| {})
                    .unwrap()
                    .added,
                1
            );
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

/// What a thread logs (through `tracing`), for a test to wait on.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// `watch run` exited when recording a sync met a database another process
/// held past the busy timeout (10 s). It must log, try again, and go on.
#[test]
fn watch_run_survives_a_busy_database_when_recording_a_sync() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let gone = folder.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let mut lib = open(lib_dir.path());
    let (w, _) = watched(&mut lib, &gone, &[]);
    drop(lib);
    // The folder goes: following it fails, and that is recorded.
    std::fs::remove_dir(&gone).unwrap();

    let dir = lib_dir.path().to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let log = Captured::default();
    let writer = log.clone();
    let (opened_tx, opened) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let watcher = std::thread::spawn(move || {
        let logger = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _logging = tracing::subscriber::set_default(logger);
        let mut lib = open(&dir);
        opened_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        watch::run(&mut lib, &flag, &std::sync::Mutex::new(()), &mut |_| {})
    });
    opened.recv().unwrap();
    // Another process holds the write lock until the watcher has given up
    // on recording (its busy timeout), or has stopped.
    let db = rusqlite::Connection::open(lib_dir.path().join(carrel::DATABASE_FILE)).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    go.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !log.text().contains("could not record")
        && !watcher.is_finished()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    db.execute_batch("ROLLBACK").unwrap();

    let lib = open(lib_dir.path());
    let mut recorded = None;
    while recorded.is_none() && !watcher.is_finished() && Instant::now() < deadline {
        recorded = last_error(&lib, w.id).filter(|e| e.contains("cannot watch"));
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let ran = watcher.join().unwrap();
    assert!(ran.is_ok(), "watch run exited: {ran:?}");
    assert!(log.text().contains("database is locked"), "{}", log.text());
    assert!(
        recorded.is_some(),
        "the failure to follow the folder was never recorded once the database was free"
    );
}

/// What the Library page does with a drop (the engine owns it; the app's
/// command is one line over it): a folder becomes a watch and is synced, a
/// file beside it is added once and belongs to no watch, and one report
/// counts both. Without "keep in sync" the folder is added once instead.
#[test]
fn a_drop_makes_the_folder_a_watch_and_adds_the_file_once() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let loose = tempfile::tempdir().unwrap();
    place(
        folder.path(),
        &[
            ("composting.md", "composting.md"),
            ("chess-openings.md", "chess.md"),
        ],
    );
    place(loose.path(), &[("tax-return.md", "notes.md")]);
    let notes = loose.path().join("notes.md");
    let mut lib = open(lib_dir.path());
    let gate = std::sync::Mutex::new(());
    let inputs = [s(folder.path()), s(&notes)];

    let r = watch::add_inputs(&mut lib, &inputs, true, &gate, &mut |_| {}).unwrap();
    assert_eq!((r.added, r.unchanged, r.failed.len()), (3, 0, 0), "{r:?}");
    let watches = lib.watches().unwrap();
    assert_eq!(watches.len(), 1, "only the folder is watched: {watches:?}");
    assert_eq!(watches[0].target, s(folder.path()));
    assert!(id_of(&lib, &notes).is_some());

    // A sync of the watch leaves the loose file alone: it is not the watch's.
    let r = sync(&mut lib, &watches[0]);
    assert_eq!((r.removed, r.unchanged), (0, 2), "{r:?}");
    assert!(id_of(&lib, &notes).is_some());

    let other = tempfile::tempdir().unwrap();
    let again = tempfile::tempdir().unwrap();
    place(again.path(), &[("composting.md", "c.md")]);
    let mut lib = open(other.path());
    let r = watch::add_inputs(&mut lib, &[s(again.path())], false, &gate, &mut |_| {}).unwrap();
    assert_eq!(r.added, 1, "{r:?}");
    assert!(
        lib.watches().unwrap().is_empty(),
        "not kept in sync: no watch"
    );
}

/// A sync stopped by a cancel removes nothing: a file it did not read yet
/// may be where a vanished one went. The watch says it was cancelled, and
/// the next sync finishes the job.
#[test]
fn a_cancelled_sync_removes_nothing() {
    let _embedding = embeds();
    let lib_dir = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    place(
        f,
        &[("composting.md", "a.md"), ("chess-openings.md", "b.md")],
    );
    let mut lib = open(lib_dir.path());
    let (w, first) = watched(&mut lib, f, &[]);
    assert_eq!(first.added, 2);
    std::fs::remove_file(f.join("a.md")).unwrap();
    lib.cancel_handle().cancel();
    let r = sync(&mut lib, &w);
    assert!(r.cancelled);
    assert_eq!(r.removed, 0);
    assert_eq!(lib.list().unwrap().len(), 2, "nothing removed");
    assert!(last_error(&lib, w.id).unwrap().contains("cancelled"));
    drop(lib);
    let mut lib = open(lib_dir.path());
    let r = sync(&mut lib, &w);
    assert_eq!((r.removed, r.cancelled), (1, false));
}
