//! Turns what the user named (files, folders, URLs) into the list of sources
//! to ingest. Folders are walked recursively by one scan ([`scan_folder`]);
//! every entry it does not take is listed with a [`SkipReason`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Failure;
use crate::extract::Kind;

/// One thing to ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    Url(String),
}

impl Source {
    /// How the source is stored and shown: the absolute path or the URL.
    pub fn key(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Url(u) => u.clone(),
        }
    }
}

/// Extensions of compressed files. Carrel does not unpack them: a `.gz` man
/// page is troff, not text, and an archive is many documents. Each is listed
/// as skipped, with what to do.
const COMPRESSED: &[&str] = &["gz", "bz2", "xz", "zst", "zip", "tgz", "7z", "rar", "tar"];

/// Why a folder scan did not take an entry. Every one is listed to the user;
/// nothing in a folder is passed over in silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// Its name starts with a dot (for a folder: nothing inside is read).
    Hidden,
    /// A watch's exclude patterns (or the defaults) leave it out.
    Excluded,
    /// A symbolic link: scans do not follow links.
    Link,
    Compressed(String),
    Unsupported(String),
    /// No extension, and its first bytes are not text, PDF or HTML.
    NotText,
    /// An image: read by OCR only when added by itself. A folder of photos
    /// would cost seconds of OCR each and list every one as "no text".
    Image(String),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::Hidden => write!(f, "hidden (its name starts with a dot)"),
            SkipReason::Excluded => write!(f, "excluded by pattern"),
            SkipReason::Link => write!(
                f,
                "a symbolic link; folder scans do not follow links, add its target instead"
            ),
            SkipReason::Compressed(ext) => write!(
                f,
                "compressed (.{ext}); Carrel does not unpack files, unpack it and add what is inside"
            ),
            SkipReason::Unsupported(ext) => write!(f, "unsupported type .{ext}"),
            SkipReason::NotText => write!(
                f,
                "no extension, and its first bytes are not text, PDF or HTML"
            ),
            SkipReason::Image(ext) => write!(
                f,
                "an image (.{ext}); images are read by OCR only when added by themselves"
            ),
        }
    }
}

/// An entry a folder scan saw and did not take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Skipped {
    pub source: String,
    pub reason: String,
}

/// What a folder scan found: the files to ingest, in a stable order; what it
/// did not take, with why; and what could not be listed.
#[derive(Debug, Default)]
pub struct FolderScan {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<Skipped>,
    pub failed: Vec<Failure>,
}

/// Whether a folder scan takes a file, and if not, why: files whose
/// extension Carrel reads ([`crate::extract::EXTENSIONS`]) except images,
/// and files with no extension whose first bytes are text, PDF or HTML.
/// FIFOs, sockets and devices are taken too, so that they are listed as
/// broken with a reason.
fn admit(file_type: std::fs::FileType, path: &Path) -> Result<(), SkipReason> {
    if file_type.is_symlink() {
        return Err(SkipReason::Link);
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match Kind::from_extension(path) {
        Some(Kind::Image) => return Err(SkipReason::Image(ext.unwrap_or_default())),
        Some(_) => return Ok(()),
        None if !file_type.is_file() => return Ok(()),
        None => {}
    }
    match ext {
        Some(ext) if COMPRESSED.contains(&ext.as_str()) => Err(SkipReason::Compressed(ext)),
        Some(ext) => Err(SkipReason::Unsupported(ext)),
        None => {
            use std::io::Read;
            let mut head = Vec::new();
            match std::fs::File::open(path).and_then(|f| {
                f.take(crate::extract::SNIFF_BYTES as u64)
                    .read_to_end(&mut head)
            }) {
                // The pipeline reads it again and lists why it failed.
                Err(_) => Ok(()),
                Ok(_) if Kind::sniff(&head).is_some() => Ok(()),
                Ok(_) => Err(SkipReason::NotText),
            }
        }
    }
}

/// Walks a folder (recursively, links not followed, sorted by name): the one
/// scan behind `carrel add` and folder watches. `exclude` is a watch's
/// patterns; an excluded or hidden folder is listed once and not entered.
pub fn scan_folder(root: &Path, exclude: Option<&ignore::overrides::Override>) -> FolderScan {
    let mut scan = FolderScan::default();
    let skip = |scan: &mut FolderScan, path: &Path, reason: SkipReason| {
        scan.skipped.push(Skipped {
            source: path.display().to_string(),
            reason: reason.to_string(),
        })
    };
    let mut walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = walker.next() {
        let e = match entry {
            Ok(e) => e,
            Err(e) => {
                scan.failed.push(Failure {
                    source: e
                        .path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| root.display().to_string()),
                    reason: format!("could not be listed: {e}"),
                });
                continue;
            }
        };
        if e.depth() == 0 {
            continue;
        }
        let is_dir = e.file_type().is_dir();
        let hidden = e.file_name().to_string_lossy().starts_with('.');
        let excluded = exclude.is_some_and(|o| o.matched(e.path(), is_dir).is_ignore());
        let verdict = match (hidden, excluded, is_dir) {
            (true, _, _) => Err(SkipReason::Hidden),
            (_, true, _) => Err(SkipReason::Excluded),
            (_, _, true) => continue,
            _ => admit(e.file_type(), e.path()),
        };
        match verdict {
            Ok(()) => scan.files.push(e.into_path()),
            Err(reason) => {
                if is_dir {
                    walker.skip_current_dir();
                }
                skip(&mut scan, e.path(), reason);
            }
        }
    }
    scan
}

/// Whether what the user named is a URL (http or https) rather than a path:
/// the one rule for `carrel add`, watches, the library's "source missing"
/// check and the app's "open original".
pub fn is_url(input: &str) -> bool {
    input.starts_with("http://") || input.starts_with("https://")
}

/// What the user's inputs expand to: the sources to ingest, in a stable
/// order; the entries of their folders that were not taken, with why; and
/// the inputs that could not be taken at all.
#[derive(Debug, Default)]
pub struct Expanded {
    pub sources: Vec<Source>,
    pub skipped: Vec<Skipped>,
    pub failed: Vec<Failure>,
}

/// Expands inputs into sources (absolute paths, URLs). A file named
/// directly is always taken (its kind is sniffed if its name does not say);
/// a folder is scanned by [`scan_folder`].
pub fn expand(inputs: &[String]) -> Expanded {
    let mut out = Expanded::default();
    for input in inputs {
        if is_url(input) {
            out.sources.push(Source::Url(input.clone()));
            continue;
        }
        let path = match std::path::absolute(input) {
            Ok(p) => p,
            Err(e) => {
                out.failed.push(Failure {
                    source: input.clone(),
                    reason: format!("not a usable path: {e}"),
                });
                continue;
            }
        };
        if path.is_dir() {
            let scan = scan_folder(&path, None);
            out.sources.extend(scan.files.into_iter().map(Source::File));
            out.skipped.extend(scan.skipped);
            out.failed.extend(scan.failed);
        } else if path.exists() {
            out.sources.push(Source::File(path));
        } else {
            out.failed.push(Failure {
                source: input.clone(),
                reason: "no such file or folder".into(),
            });
        }
    }
    out.sources.dedup();
    out
}
