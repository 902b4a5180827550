//! Turns what the user named (files, folders, URLs) into the list of files to
//! ingest. Folders are walked recursively; hidden entries are skipped and only
//! files whose extension Carrel reads are taken.

use std::path::PathBuf;

use super::Failure;
use crate::extract::Kind;

/// Expands inputs into absolute file paths, in a stable order. Inputs that
/// cannot be taken at all become failures; the rest go on.
pub fn expand(inputs: &[String]) -> (Vec<PathBuf>, Vec<Failure>) {
    let mut files = Vec::new();
    let mut failed = Vec::new();
    for input in inputs {
        if input.starts_with("http://") || input.starts_with("https://") {
            failed.push(Failure {
                source: input.clone(),
                reason: "URL sources are not supported by this build yet; save the page and add the file".into(),
            });
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
                    Ok(e)
                        if e.file_type().is_file() && Kind::from_extension(e.path()).is_some() =>
                    {
                        files.push(e.into_path())
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
            files.push(path);
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
