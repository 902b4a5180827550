//! Watched folders and URLs, kept in sync. One sync reconciles a watch with
//! the library: new and changed files go through the ingest pipeline (which
//! skips unchanged files by size and mtime, then by content hash), a file
//! whose content reappears under another name keeps its document id without
//! being embedded again, and documents whose files are gone are removed
//! (their content is collected once nothing points at it).
//!
//! Each document remembers the watch that added it (none: added by hand). A
//! watch that meets a file already in the library leaves its owner as it
//! is, and a removed watch leaves its documents to no one. A sync removes a
//! document only when all of these hold:
//!
//! - this watch added it;
//! - its file answers "not found" (a file that is still there but no longer
//!   taken by the filters stays, and so does one that cannot be checked);
//! - the folder is there, readable and not empty (an unmounted drive's mount
//!   point is empty), before and after the scan;
//! - every subfolder could be listed.
//!
//! When the folder cannot be trusted, the sync removes nothing and the watch's
//! `last_error` says why and how many documents were kept.
//!
//! [`run`] keeps every watch in sync until told to stop: file events (via
//! notify-debouncer-full) trigger a folder's sync, and each watch is synced
//! again after its interval (URLs are re-fetched then).

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::ingest::{Failure, FolderScan, Skipped, Source, scan_folder};
use crate::store::{NewWatch, Watch, WatchKind};
use crate::{AddReport, Library, Progress};

/// Default seconds between syncs of a watch without events (URL re-fetch).
pub const DEFAULT_INTERVAL_S: u64 = 3600;

/// Left out of every folder watch, on top of hidden files: build output,
/// dependency caches and editor droppings.
pub const DEFAULT_EXCLUDE: &[&str] = &[
    "node_modules/",
    "target/",
    "__pycache__/",
    "*.tmp",
    "*.swp",
    "*~",
    "~$*",
];

/// What one sync did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    pub watch: i64,
    pub target: String,
    pub added: usize,
    pub unchanged: usize,
    pub renamed: usize,
    pub removed: usize,
    pub failed: Vec<Failure>,
    /// What the folder's scan did not take, with why.
    pub skipped: Vec<Skipped>,
    /// Why the watch itself could not be synced (folder missing, ...).
    pub error: Option<String>,
    /// Stopped by a cancel before every file was read: nothing was removed.
    pub cancelled: bool,
}

/// A watch as the user names it: a folder (made absolute) or an http(s) URL.
pub fn new_watch(
    target: &str,
    interval_s: u64,
    include: Vec<String>,
    exclude: Vec<String>,
    allow_private: bool,
) -> Result<NewWatch> {
    let (target, kind) = if crate::ingest::is_url(target) {
        (target.to_string(), WatchKind::Url)
    } else {
        let path = std::path::absolute(target).map_err(|e| Error::io(target, e))?;
        if !path.is_dir() {
            return Err(Error::NotAFolder(path));
        }
        (path.display().to_string(), WatchKind::Folder)
    };
    // Patterns are checked now, so a typo fails at `watch add`, not later.
    if kind == WatchKind::Folder {
        overrides(Path::new(&target), &include, &exclude)?;
    }
    Ok(NewWatch {
        target,
        kind,
        interval_s,
        include,
        exclude,
        allow_private,
    })
}

fn overrides(
    folder: &Path,
    include: &[String],
    exclude: &[String],
) -> Result<ignore::overrides::Override> {
    let mut b = ignore::overrides::OverrideBuilder::new(folder);
    let bad = |p: &str, e: ignore::Error| Error::BadPattern(p.to_string(), e.to_string());
    for p in include {
        b.add(p).map_err(|e| bad(p, e))?;
    }
    for p in exclude
        .iter()
        .map(String::as_str)
        .chain(DEFAULT_EXCLUDE.iter().copied())
    {
        b.add(&format!("!{p}")).map_err(|e| bad(p, e))?;
    }
    b.build()
        .map_err(|e| Error::BadPattern(String::new(), e.to_string()))
}

/// What a folder watch's scan takes and skips ([`crate::ingest::scan_folder`]
/// under the watch's patterns).
pub fn folder_files(w: &Watch) -> Result<FolderScan> {
    let folder = Path::new(&w.target);
    Ok(scan_folder(
        folder,
        Some(&overrides(folder, &w.include, &w.exclude)?),
    ))
}

/// A sync stopped by a cancel, as its watch shows it until the next one.
const CANCELLED: &str =
    "the sync was cancelled before it finished; nothing was removed, and the next sync goes on";

/// Reconciles one watch with the library; records how it went on the watch.
pub fn sync(
    lib: &mut Library,
    w: &Watch,
    progress: &mut dyn FnMut(&Progress),
) -> Result<SyncReport> {
    let mut report = SyncReport {
        watch: w.id,
        target: w.target.clone(),
        ..SyncReport::default()
    };
    match w.kind {
        WatchKind::Folder => sync_folder(lib, w, &mut report, progress)?,
        WatchKind::Url => {
            let add =
                lib.add_for_watch(w, &[Source::Url(w.target.clone())], Vec::new(), progress)?;
            report.added = add.added;
            report.unchanged = add.unchanged;
            report.failed = add.failed;
            report.error = report.failed.first().map(|f| f.reason.clone());
        }
    }
    fail::fail_point!("watch::before_record_sync", |_| crate::fault::die());
    lib.store().record_sync(w.id, report.error.as_deref())?;
    Ok(report)
}

/// Why a watched folder cannot say which files are gone, if it cannot:
/// missing, unreadable, or empty while its watch still owns documents (the
/// mount point of a drive that is not mounted). `owned` is how many
/// documents the watch holds, all of which are kept.
fn untrusted_root(folder: &Path, owned: usize) -> Option<String> {
    let kept = crate::words::count(owned, "document");
    match std::fs::read_dir(folder) {
        Err(e) if e.kind() == ErrorKind::NotFound || !folder.is_dir() => Some(format!(
            "source missing: the folder is not there ({kept} kept)"
        )),
        Err(e) => Some(format!("the folder cannot be read ({e}): {kept} kept")),
        Ok(mut entries) => match entries.next() {
            Some(Ok(_)) => None,
            Some(Err(e)) => Some(format!("the folder cannot be read ({e}): {kept} kept")),
            None if owned > 0 => Some(format!(
                "the folder is empty: {kept} kept; is the drive mounted?"
            )),
            None => None,
        },
    }
}

fn sync_folder(
    lib: &mut Library,
    w: &Watch,
    report: &mut SyncReport,
    progress: &mut dyn FnMut(&Progress),
) -> Result<()> {
    let folder = Path::new(&w.target);
    let owned = lib.store().documents_of_watch(w.id)?;
    if let Some(why) = untrusted_root(folder, owned.len()) {
        report.error = Some(why);
        return Ok(());
    }
    let FolderScan {
        files,
        skipped,
        failed: unlisted,
    } = folder_files(w)?;
    report.skipped = skipped;
    let unlisted_error = unlisted_error(&unlisted);
    let sources: Vec<Source> = files.iter().cloned().map(Source::File).collect();
    let add = lib.add_for_watch(w, &sources, unlisted, progress)?;
    report.added = add.added;
    report.unchanged = add.unchanged;
    report.failed = add.failed;
    if add.cancelled.is_some() {
        // Files not read yet may be where a vanished one went: nothing is
        // removed on a partial read.
        report.error = Some(CANCELLED.into());
        report.cancelled = true;
        return Ok(());
    }

    let fresh = fresh_by_content(lib, w, &owned)?;
    let gone = vanished(owned, &files, report);
    let removable = follow_renames(lib, gone, fresh, report)?;
    // The folder is looked at again: a drive unmounted during the scan
    // makes every file answer "not found".
    let owned_now = lib.store().documents_of_watch(w.id)?.len();
    report.error = unlisted_error.or_else(|| untrusted_root(folder, owned_now));
    if report.error.is_some() {
        return Ok(());
    }
    for id in removable {
        lib.remove(id)?;
        report.removed += 1;
    }
    Ok(())
}

/// Why nothing may be removed when some subfolders could not be listed.
fn unlisted_error(unlisted: &[Failure]) -> Option<String> {
    let f = unlisted.first()?;
    let more = match unlisted.len() - 1 {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    Some(format!(
        "{}{more}; nothing is removed until every subfolder can be listed",
        f.reason
    ))
}

/// The rows this sync created (a new row is its watch's), by content:
/// where a vanished file's content went.
fn fresh_by_content(
    lib: &Library,
    w: &Watch,
    owned: &[(i64, String, Option<i64>)],
) -> Result<HashMap<i64, Vec<i64>>> {
    let owned_before: HashSet<i64> = owned.iter().map(|(id, _, _)| *id).collect();
    let mut fresh: HashMap<i64, Vec<i64>> = HashMap::new();
    for (id, _, content) in lib.store().documents_of_watch(w.id)? {
        if let (false, Some(c)) = (owned_before.contains(&id), content) {
            fresh.entry(c).or_default().push(id);
        }
    }
    Ok(fresh)
}

/// The watch's documents whose file is gone (id and content). A file that
/// is there but no longer taken keeps its document; one that cannot be
/// checked is a failure, and its document is kept.
fn vanished(
    owned: Vec<(i64, String, Option<i64>)>,
    files: &[std::path::PathBuf],
    report: &mut SyncReport,
) -> Vec<(i64, Option<i64>)> {
    let present: HashSet<String> = files.iter().map(|p| p.display().to_string()).collect();
    let mut gone = Vec::new();
    for (id, source, content) in owned {
        if present.contains(&source) {
            continue;
        }
        match std::fs::metadata(&source) {
            Err(e) if e.kind() == ErrorKind::NotFound => gone.push((id, content)),
            // The file is there but the filters no longer take it (or it is
            // hidden now): the document stays, and goes if the file does.
            Ok(_) => {}
            Err(e) => report.failed.push(Failure {
                source,
                reason: format!("could not be checked ({e}); its document is kept"),
            }),
        }
    }
    gone
}

/// Moves each vanished document whose content came back under a new name
/// onto its new row (a rename keeps the document whatever else went wrong:
/// nothing is lost); returns the rest, to be removed.
fn follow_renames(
    lib: &mut Library,
    gone: Vec<(i64, Option<i64>)>,
    mut fresh: HashMap<i64, Vec<i64>>,
    report: &mut SyncReport,
) -> Result<Vec<i64>> {
    let mut removable = Vec::new();
    for (id, content) in gone {
        match content.and_then(|c| fresh.get_mut(&c).and_then(|v| v.pop())) {
            Some(new_row) => {
                lib.move_document(id, new_row)?;
                report.renamed += 1;
                report.added = report.added.saturating_sub(1);
            }
            None => removable.push(id),
        }
    }
    Ok(removable)
}

/// What adding a watch did: the watch, whether it is new (false: one on
/// the same target was there already), and its first sync.
#[derive(Debug, Clone)]
pub struct Watched {
    pub watch: Watch,
    pub created: bool,
    pub sync: SyncReport,
}

/// Adds a watch (or finds the one on the same target) and syncs it once
/// now, so what it covers is in the library when this returns.
pub fn add(
    lib: &mut Library,
    w: &NewWatch,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Watched> {
    let (id, created) = lib.add_watch(w)?;
    let watch = lib
        .watches()?
        .into_iter()
        .find(|w| w.id == id)
        .ok_or(Error::UnknownWatch(id))?;
    let sync = sync(lib, &watch, progress)?;
    Ok(Watched {
        watch,
        created,
        sync,
    })
}

/// Adds what the user dropped, as the app's Library page does: with
/// `keep_in_sync`, each folder or URL becomes a watch and is synced once
/// under `gate` (see [`run`]); everything else is added once. One report
/// for all of it, in which a URL's fetch error is that URL's one failure.
pub fn add_inputs(
    lib: &mut Library,
    inputs: &[String],
    keep_in_sync: bool,
    gate: &Mutex<()>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<AddReport> {
    let (mut watches, mut once) = (Vec::new(), Vec::new());
    for input in inputs {
        // Only what a watch can follow (a folder, a URL) becomes one.
        let watch = keep_in_sync
            .then(|| new_watch(input, DEFAULT_INTERVAL_S, Vec::new(), Vec::new(), false));
        match watch {
            Some(Ok(w)) => watches.push(w),
            _ => once.push(input.clone()),
        }
    }
    let mut report = lib.add(&once, progress)?;
    let cancel = lib.cancel_handle();
    for (i, w) in watches.iter().enumerate() {
        if cancel.is_cancelled() {
            // Folders and URLs not started are not watched either.
            let not_started = watches.len() - i;
            report.cancelled = Some(report.cancelled.unwrap_or(0) + not_started);
            break;
        }
        let sync = {
            let _held = crate::fault::lock(gate);
            add(lib, w, progress)?.sync
        };
        report.added += sync.added;
        report.unchanged += sync.unchanged;
        report.skipped.extend(sync.skipped);
        // A URL's error is its one failure; a folder's is not a file's.
        if sync.cancelled {
            report.cancelled.get_or_insert(0);
            continue;
        }
        match (sync.error, sync.failed.is_empty()) {
            (Some(reason), true) => report.failed.push(Failure {
                source: w.target.clone(),
                reason,
            }),
            _ => report.failed.extend(sync.failed),
        }
    }
    Ok(report)
}

/// Keeps every watch in sync until `stop` is set: an initial sync of each,
/// then file events and intervals. New watches (added by another process)
/// are picked up within a few seconds. Each finished sync is reported.
///
/// Each sync holds `gate`: a process that also syncs watches itself (the
/// app adding one) holds it too, so the two never embed the same files at
/// once on a 2-core machine.
pub fn run(
    lib: &mut Library,
    stop: &AtomicBool,
    gate: &Mutex<()>,
    report: &mut dyn FnMut(&SyncReport),
) -> Result<()> {
    let mut watcher = Watcher::new()?;
    refresh_other_models(lib, gate);
    let mut sources_read: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        if watcher.reloaded.elapsed() >= Duration::from_secs(2) {
            watcher.reload(lib);
        }
        if sources_read.is_none_or(|at| at.elapsed() >= SOURCES_READ_EVERY) {
            read_sources_again(lib);
            sources_read = Some(Instant::now());
        }
        watcher.sync_dirty(lib, stop, gate, report);
        watcher.take_events()?;
    }
    Ok(())
}

/// How often [`run`] reads the foreign sources' schemas again (at its start,
/// then at this interval): a source's schema error follows its server
/// without anyone pressing Read schema.
pub const SOURCES_READ_EVERY: Duration = Duration::from_secs(600);

/// The foreign sources' periodic schema sweep; a source that does not
/// answer keeps its last reading, and says why in the log.
fn read_sources_again(lib: &mut Library) {
    match lib.rediscover_foreign_sources(SOURCES_READ_EVERY) {
        Ok(outcomes) => {
            for (name, outcome) in outcomes {
                match outcome {
                    Ok(()) => tracing::info!(source = %name, "read the source's schema again"),
                    Err(reason) => {
                        tracing::warn!(source = %name, %reason, "could not read the source's schema again")
                    }
                }
            }
        }
        Err(e) => tracing::warn!("could not read the foreign sources: {e}"),
    }
}

/// Documents embedded by another model are invisible to the lanes (which
/// say "re-embedding N of M" meanwhile) until re-embedded: [`run`] does that
/// first, under `gate`, and logs what it did.
fn refresh_other_models(lib: &mut Library, gate: &Mutex<()>) {
    let refreshed = {
        let _held = crate::fault::lock(gate);
        lib.refresh(&mut |_| {})
    };
    match refreshed {
        Ok(0) => {}
        Ok(n) => tracing::info!("re-embedded {n} documents made with another model"),
        Err(e) => tracing::warn!("could not re-embed documents made with another model: {e}"),
    }
}

/// What [`run`] keeps between turns: the file watcher and its events, the
/// watches, and which of them are due a sync.
struct Watcher {
    debouncer: notify_debouncer_full::Debouncer<
        notify::RecommendedWatcher,
        notify_debouncer_full::RecommendedCache,
    >,
    rx: std::sync::mpsc::Receiver<notify_debouncer_full::DebounceEventResult>,
    watched: HashSet<String>,
    dirty: HashSet<i64>,
    /// Syncs that failed on a busy database: tried again at the next reload.
    retry: HashSet<i64>,
    watches: Vec<Watch>,
    reloaded: Instant,
    first: bool,
}

impl Watcher {
    /// Starts the file watcher, following nothing yet; the first reload is due.
    fn new() -> Result<Watcher> {
        use notify_debouncer_full::new_debouncer;

        let (tx, rx) = std::sync::mpsc::channel();
        let debouncer = new_debouncer(Duration::from_millis(300), None, tx)
            .map_err(|e| Error::Watch(e.to_string()))?;
        Ok(Watcher {
            debouncer,
            rx,
            watched: HashSet::new(),
            dirty: HashSet::new(),
            retry: HashSet::new(),
            watches: Vec::new(),
            reloaded: Instant::now() - Duration::from_secs(60),
            first: true,
        })
    }

    /// Reloads the watches, follows folders not followed yet, and marks due
    /// the watches whose interval is up (all of them the first time) and
    /// those to retry.
    fn reload(&mut self, lib: &Library) {
        use notify::RecursiveMode;

        let Watcher {
            debouncer,
            watched,
            dirty,
            retry,
            watches,
            first,
            ..
        } = self;
        match lib.watches() {
            // Another machine's watches are its watcher's (a team library).
            Ok(w) => *watches = w.into_iter().filter(Watch::runs_here).collect(),
            // A busy or briefly unreadable database: keep the list, retry.
            Err(e) => tracing::warn!("could not reload the watches: {e}"),
        }
        for w in watches.iter() {
            if w.kind == WatchKind::Folder && !watched.contains(&w.target) {
                match debouncer.watch(Path::new(&w.target), RecursiveMode::Recursive) {
                    Ok(()) => {
                        watched.insert(w.target.clone());
                        // What changed before notify followed the folder
                        // raised no event (a watch added and synced by
                        // another process since the last reload): sync once.
                        dirty.insert(w.id);
                    }
                    Err(e) => {
                        // Not followed: the next reload tries again
                        // (and records it again; only a failure is logged).
                        let error = format!("cannot watch: {e}");
                        if let Err(e) = lib.store().record_sync(w.id, Some(&error)) {
                            tracing::warn!(target = %w.target, "could not record \"{error}\": {e}");
                        }
                    }
                }
            }
            let due = match w.synced_at {
                None => true,
                Some(t) => crate::store::now() - t >= w.interval_s as i64,
            };
            if *first || due {
                dirty.insert(w.id);
            }
        }
        dirty.extend(retry.drain());
        *first = false;
        self.reloaded = Instant::now();
    }

    /// Syncs each watch marked due, under `gate`, and reports it; a failed
    /// sync is reported as that watch's error. Leaves none marked.
    fn sync_dirty(
        &mut self,
        lib: &mut Library,
        stop: &AtomicBool,
        gate: &Mutex<()>,
        report: &mut dyn FnMut(&SyncReport),
    ) {
        let Watcher {
            dirty,
            retry,
            watches,
            ..
        } = self;
        for w in watches.iter().filter(|w| dirty.contains(&w.id)) {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let result = {
                let _held = crate::fault::lock(gate);
                sync(lib, w, &mut |_| {})
            };
            // A failed sync is that watch's error, shown on it, and the next
            // event or interval tries again (the next reload, when another
            // process held the database): watching goes on.
            let r = result.unwrap_or_else(|e| {
                if e.is_busy() {
                    retry.insert(w.id);
                }
                let error = format!("sync failed: {e}");
                tracing::warn!(target = %w.target, "{error}");
                if let Err(e) = lib.store().record_sync(w.id, Some(&error)) {
                    tracing::warn!("could not record the failed sync: {e}");
                }
                SyncReport {
                    watch: w.id,
                    target: w.target.clone(),
                    error: Some(error),
                    ..SyncReport::default()
                }
            });
            report(&r);
        }
        dirty.clear();
    }

    /// Waits briefly for file events and marks due the folder watches they
    /// touch; an error once the file watcher has stopped.
    fn take_events(&mut self) -> Result<()> {
        let Watcher {
            rx, dirty, watches, ..
        } = self;
        // notify's own thread dying shows here as a closed channel; a test
        // stands in for that at this fault point.
        fail::fail_point!("watch::events_lost", |_| Err(Error::Watch(
            "the file watcher stopped".into()
        )));
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(events)) => {
                for ev in events {
                    if ev.kind.is_access() {
                        continue;
                    }
                    for path in &ev.paths {
                        for w in watches.iter().filter(|w| w.kind == WatchKind::Folder) {
                            if path.starts_with(&w.target) {
                                dirty.insert(w.id);
                            }
                        }
                    }
                }
            }
            Ok(Err(errors)) => {
                for e in errors {
                    tracing::warn!("file watcher: {e}");
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Watch("the file watcher stopped".into()));
            }
        }
        Ok(())
    }
}
