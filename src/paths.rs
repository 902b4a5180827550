//! Where Carrel keeps things: the per-user data folder and the one order
//! in which the CLI and the app choose a library folder. A leaf: models and
//! the app ask it, and it asks nobody.

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

/// Writes `bytes` to `path` whole: into `<name>.tmp` beside it, then a
/// rename over it, so a crash leaves the old file or the new one, never
/// half of one. The folder is made if it is missing.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}
