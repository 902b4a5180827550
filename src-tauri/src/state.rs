//! What the shell holds: the open library, the settings it was opened with,
//! and when the process started (for the cold-start figure).
//!
//! Queries and reads share one [`Library`] behind a mutex. Ingest opens its
//! own [`Library`] on the same database (SQLite WAL), so a long import never
//! blocks the list or the match panel.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use carrel::models::ModelConfig;
use carrel::{Library, LibraryConfig, LibraryDirFrom};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, ErrorKind, Result};

/// The user's choices, kept in `settings.json` in the data folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
pub struct Settings {
    /// The library folder; none means the default location.
    pub library_dir: Option<String>,
    /// ONNX Runtime intra-op threads for both models.
    pub threads: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            library_dir: None,
            threads: carrel::models::DEFAULT_THREADS as u32,
        }
    }
}

impl Settings {
    fn path() -> Result<PathBuf> {
        Ok(carrel::default_data_dir()?.join("settings.json"))
    }

    /// The saved settings; defaults when there are none. A file that does
    /// not parse is an error, never silently replaced.
    pub fn load() -> Result<Settings> {
        let path = Settings::path()?;
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                AppError::new(
                    ErrorKind::BadInput,
                    format!(
                        "{} is not valid settings ({e}); fix or delete it",
                        path.display()
                    ),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(carrel::Error::io(&path, e).into()),
        }
    }

    pub fn save(&self) -> Result<()> {
        let path = Settings::path()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| carrel::Error::io(dir, e))?;
        }
        let tmp = path.with_extension("json.tmp");
        let json = serde_json::to_vec_pretty(self).expect("settings serialise");
        std::fs::write(&tmp, json).map_err(|e| carrel::Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| carrel::Error::io(&path, e))?;
        Ok(())
    }

    /// The library this app opens: `CARREL_LIBRARY`, then the saved choice,
    /// then the default location (the order is `carrel::library_dir`'s).
    pub fn library_in_use(&self) -> Result<(PathBuf, LibraryDirFrom)> {
        Ok(carrel::library_dir(
            None,
            self.library_dir.as_deref().map(Path::new),
        )?)
    }

    pub fn library_config(&self) -> Result<LibraryConfig> {
        let (dir, _) = self.library_in_use()?;
        let mut models = ModelConfig::new(ModelConfig::default_dir()?);
        models.threads = self.threads.max(1) as usize;
        Ok(LibraryConfig::new(dir, models))
    }
}

pub struct AppState {
    library: Arc<Mutex<Library>>,
    settings: Mutex<Settings>,
    /// Stops the running watcher (see `spawn_watcher`).
    watcher: Mutex<Option<Arc<AtomicBool>>>,
    /// Held by every watch sync, the watcher's and a new watch's first one.
    sync_gate: Arc<Mutex<()>>,
    pub started: Instant,
}

impl AppState {
    pub fn open(settings: Settings, started: Instant) -> Result<AppState> {
        let library = Library::open(settings.library_config()?)?;
        Ok(AppState {
            library: Arc::new(Mutex::new(library)),
            settings: Mutex::new(settings),
            watcher: Mutex::new(None),
            sync_gate: Arc::default(),
            started,
        })
    }

    /// The shared library, for work run off the UI thread.
    pub fn library(&self) -> Arc<Mutex<Library>> {
        self.library.clone()
    }

    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Saves new settings and reopens the library with them. The old library
    /// stays open if the new one cannot be opened.
    pub fn apply(&self, settings: Settings) -> Result<()> {
        let library = Library::open(settings.library_config()?)?;
        settings.save()?;
        *lock(&self.library) = library;
        *lock(&self.settings) = settings;
        Ok(())
    }

    pub fn sync_gate(&self) -> Arc<Mutex<()>> {
        self.sync_gate.clone()
    }

    /// Stops the running watcher, if any, and keeps the new one's stop flag.
    pub fn replace_watcher(&self, stop: Arc<AtomicBool>) {
        if let Some(old) = lock(&self.watcher).replace(stop) {
            old.store(true, Ordering::SeqCst);
        }
    }
}

/// A poisoned lock means a command panicked mid-way; the library's own
/// transactions keep the data sound, so carry on with it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_watcher_stops_the_one_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            library_dir: Some(dir.path().display().to_string()),
            threads: 1,
        };
        let state = AppState::open(settings, Instant::now()).unwrap();
        let (first, second) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        state.replace_watcher(first.clone());
        assert!(!first.load(Ordering::SeqCst));
        state.replace_watcher(second.clone());
        assert!(
            first.load(Ordering::SeqCst),
            "the old library's watcher still runs"
        );
        assert!(!second.load(Ordering::SeqCst));
    }
}
