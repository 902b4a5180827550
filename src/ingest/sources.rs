//! Turns what the user named (files, folders, URLs) into the list of sources
//! to ingest. Folders are walked recursively; hidden entries are skipped and
//! only files whose extension Carrel reads are taken.

use std::path::PathBuf;

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

use super::Failure;
use crate::extract::Kind;

/// Whether a folder walk takes an entry: anything but folders and links,
/// when Carrel reads its extension. FIFOs, sockets and devices are taken
/// too, so that they are listed as broken with a reason rather than skipped
/// unseen. The one rule for `carrel add` and for watched folders.
pub fn takes(file_type: std::fs::FileType, path: &std::path::Path) -> bool {
    !file_type.is_dir() && !file_type.is_symlink() && Kind::from_extension(path).is_some()
}

/// Whether what the user named is a URL (http or https) rather than a path:
/// the one rule for `carrel add`, watches, the library's "source missing"
/// check and the app's "open original".
pub fn is_url(input: &str) -> bool {
    input.starts_with("http://") || input.starts_with("https://")
}

/// Expands inputs into sources (absolute paths, URLs), in a stable order.
/// Inputs that cannot be taken at all become failures; the rest go on.
pub fn expand(inputs: &[String]) -> (Vec<Source>, Vec<Failure>) {
    let mut files = Vec::new();
    let mut failed = Vec::new();
    for input in inputs {
        if is_url(input) {
            files.push(Source::Url(input.clone()));
            continue;
        }
        let path = match std::path::absolute(input) {
            Ok(p) => p,
            Err(e) => {
                failed.push(Failure {
                    source: input.clone(),
                    reason: format!("not a usable path: {e}"),
                });
                continue;
            }
        };
        if path.is_dir() {
            let walker = walkdir::WalkDir::new(&path)
                .follow_links(false)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| {
                    e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                });
            for entry in walker {
                match entry {
                    Ok(e) if takes(e.file_type(), e.path()) => {
                        files.push(Source::File(e.into_path()))
                    }
                    Ok(_) => {}
                    Err(e) => failed.push(Failure {
                        source: e
                            .path()
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|| input.clone()),
                        reason: format!("could not be listed: {e}"),
                    }),
                }
            }
        } else if path.exists() {
            files.push(Source::File(path));
        } else {
            failed.push(Failure {
                source: input.clone(),
                reason: "no such file or folder".into(),
            });
        }
    }
    files.dedup();
    (files, failed)
}
