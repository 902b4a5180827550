//! Where Carrel keeps things: the per-user data folder and the one order
//! in which the CLI and the app choose a library folder. A leaf: models and
//! the app ask it, and it asks nobody.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The application identifier; the desktop app's data dir is named after it,
/// so the CLI and the app find the same default library.
pub const APP_IDENTIFIER: &str = "app.carrel";

/// The database file inside a library folder.
pub const DATABASE_FILE: &str = "library.sqlite3";

/// The per-user data folder shared by the app and the CLI.
pub fn default_data_dir() -> Result<PathBuf> {
    Ok(dirs::data_dir()
        .ok_or(Error::NoDataDir)?
        .join(APP_IDENTIFIER))
}

/// Who chose the library folder in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryDirFrom {
    /// The CLI's `--library`: said for this one command.
    Flag,
    /// `CARREL_LIBRARY`: beats a saved choice, so a script or a test can
    /// point the app anywhere without touching the user's settings.
    Env,
    /// The app's saved setting.
    Saved,
    /// `library/` in the per-user data folder.
    Default,
}

/// The library folder, in the one order the CLI and the app share:
/// a flag, then `CARREL_LIBRARY`, then the saved setting, then `library/`
/// in the data folder.
pub fn library_dir(flag: Option<&Path>, saved: Option<&Path>) -> Result<(PathBuf, LibraryDirFrom)> {
    if let Some(dir) = flag {
        return Ok((dir.to_path_buf(), LibraryDirFrom::Flag));
    }
    if let Some(dir) = std::env::var_os("CARREL_LIBRARY") {
        return Ok((PathBuf::from(dir), LibraryDirFrom::Env));
    }
    match saved {
        Some(dir) => Ok((dir.to_path_buf(), LibraryDirFrom::Saved)),
        None => Ok((default_data_dir()?.join("library"), LibraryDirFrom::Default)),
    }
}

/// Writes `bytes` to `path` whole: into a temporary file of this writer's
/// own beside it, then a rename over it, so a crash leaves the old file or
/// the new one, never half of one, and a reader in another process (or a
/// second writer) never sees the file empty. The folder is made if it is
/// missing.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two writers rewriting one file while a reader reads it: the reader
    /// sees one writer's bytes whole every time, never an empty or mixed
    /// file (one shared `<name>.tmp` let a writer truncate what the other
    /// was about to rename).
    #[test]
    fn a_file_written_whole_is_never_read_half_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("postgres.json");
        let texts = ["a".repeat(4096), "b".repeat(8192)];
        write_whole(&path, texts[0].as_bytes()).unwrap();
        std::thread::scope(|s| {
            for t in &texts {
                let path = &path;
                s.spawn(move || {
                    for _ in 0..300 {
                        write_whole(path, t.as_bytes()).unwrap();
                    }
                });
            }
            for _ in 0..600 {
                let read = std::fs::read_to_string(&path).unwrap();
                assert!(texts.contains(&read), "read {} bytes", read.len());
            }
        });
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }
}
