//! What the shell holds: the open library, the settings it was opened with,
//! and when the process started (for the cold-start figure).
//!
//! Queries and reads share one [`Library`] behind a mutex. Ingest opens its
//! own [`Library`] on the same database (SQLite WAL), so a long import never
//! blocks the list or the match panel.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use carrel::answer::{Answerer, AnswererChoice, LlmConfig};
use carrel::models::ModelConfig;
use carrel::{Library, LibraryConfig, LibraryDirFrom};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, ErrorKind, Result};

/// The user's choices, kept in `settings.json` in the data folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(default)]
pub struct Settings {
    /// The library folder; none means the default location.
    pub library_dir: Option<String>,
    /// ONNX Runtime intra-op threads for both models.
    pub threads: u32,
    /// Embedding workers for imports; none means every core but one.
    pub jobs: Option<u32>,
    /// Resident memory the embedding workers may take together (MB).
    pub worker_memory_mb: u32,
    /// Who writes answers (the environment wins: `CARREL_ANSWERER`,
    /// `CARREL_LLM_URL` with `CARREL_LLM_MODEL`).
    pub answerer: AnswererChoice,
    /// The OpenAI-compatible server, for `answerer: server`: its base URL
    /// (up to the API version), model name, and key when it needs one.
    pub llm_url: Option<String>,
    pub llm_model: Option<String>,
    pub llm_api_key: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            library_dir: None,
            threads: carrel::models::DEFAULT_THREADS as u32,
            jobs: None,
            worker_memory_mb: carrel::models::pool::DEFAULT_WORKER_MEMORY_MB as u32,
            answerer: AnswererChoice::Auto,
            llm_url: None,
            llm_model: None,
            llm_api_key: None,
        }
    }
}

impl Settings {
    fn path() -> Result<PathBuf> {
        Ok(carrel::default_data_dir()?.join("settings.json"))
    }

    /// The saved settings, or the defaults: when there are none, and when
    /// the file cannot be used, with the [`SettingsProblem`] the user is
    /// shown. Fails only when there is no data folder at all.
    pub fn load() -> Result<(Settings, Option<SettingsProblem>)> {
        Ok(Settings::load_from(&Settings::path()?))
    }

    /// [`Settings::load`] from `path`. A file that does not parse is never
    /// replaced: it is renamed aside (see [`set_aside`]) before anything
    /// could save over it.
    pub fn load_from(path: &Path) -> (Settings, Option<SettingsProblem>) {
        let problem = |error: String, kept_at: Option<PathBuf>| SettingsProblem {
            path: path.display().to_string(),
            error,
            kept_at: kept_at.map(|p| p.display().to_string()),
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Settings::default(), None);
            }
            // Unreadable, not bad: it stays where it is.
            Err(e) => return (Settings::default(), Some(problem(e.to_string(), None))),
        };
        match serde_json::from_slice(&bytes) {
            Ok(settings) => (settings, None),
            Err(e) => {
                let p = match set_aside(path) {
                    Ok(bad) => problem(e.to_string(), Some(bad)),
                    Err(moving) => {
                        problem(format!("{e}; it could not be moved aside: {moving}"), None)
                    }
                };
                tracing::error!(path = %p.path, kept_at = ?p.kept_at, "settings are not valid: {}; using defaults", p.error);
                (Settings::default(), Some(p))
            }
        }
    }

    pub fn save(&self) -> Result<()> {
        let path = Settings::path()?;
        let json = serde_json::to_vec_pretty(self).expect("settings serialise");
        Ok(carrel::paths::write_whole(&path, &json)?)
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
        let mut models = ModelConfig::located()?;
        models.threads = self.threads.max(1) as usize;
        if let Some(jobs) = self.jobs {
            models.jobs = jobs.max(1) as usize;
        }
        models.worker_memory_mb = u64::from(self.worker_memory_mb.max(1));
        Ok(LibraryConfig::new(dir, models))
    }

    /// Who answers, as chosen here with the environment over it, and a
    /// note when it is not the one chosen (no model installed); an error
    /// when the server is chosen without its URL and model.
    pub fn answerer(&self, models: &ModelConfig) -> Result<(Answerer, Option<String>)> {
        fn filled(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty())
        }
        let server = match (filled(&self.llm_url), filled(&self.llm_model)) {
            (Some(url), Some(model)) => {
                let mut cfg = LlmConfig::new(url, model);
                cfg.api_key = filled(&self.llm_api_key).map(str::to_string);
                Some(cfg)
            }
            _ => None,
        };
        Answerer::from_env_or(models, self.answerer, server)
            .map_err(|e| AppError::new(ErrorKind::BadInput, format!("{e}; see Settings → Answers")))
    }
}

/// `settings.json` could not be used at startup: the app runs on the
/// defaults, and says so until the user has seen it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct SettingsProblem {
    /// The settings file that was read.
    pub path: String,
    /// Why it could not be used, in the parser's or the file system's words.
    pub error: String,
    /// Where the unusable file was moved, so that nothing written in it is
    /// lost; none when it was not moved (it could not be read, or moved).
    pub kept_at: Option<String>,
}

/// Renames `path` to `<name>.bad`, or `<name>.bad.1`, `.bad.2`… when an
/// earlier bad copy is there: a bad copy is never overwritten or deleted.
fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let free = (0..1000)
        .map(|n| match n {
            0 => path.with_file_name(format!("{name}.bad")),
            n => path.with_file_name(format!("{name}.bad.{n}")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .ok_or_else(|| std::io::Error::other("a thousand bad copies are already there"))?;
    std::fs::rename(path, &free)?;
    Ok(free)
}

/// Whether the watcher that keeps folders and URLs in sync is running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum WatcherHealth {
    Running,
    /// It stopped on its own (an error or a crash), not because it was
    /// replaced: nothing is kept in sync until it is started again.
    Stopped {
        reason: String,
    },
}

/// The running watcher: its stop flag, and why it stopped if it did.
struct Watcher {
    stop: Arc<AtomicBool>,
    stopped: Option<String>,
}

pub struct AppState {
    library: Arc<Mutex<Library>>,
    settings: Mutex<Settings>,
    /// The running watcher (see `spawn_watcher`).
    watcher: Mutex<Option<Watcher>>,
    /// Why `settings.json` was not used at startup, if it was not.
    settings_problem: Option<SettingsProblem>,
    /// Held by every watch sync, the watcher's and a new watch's first one.
    sync_gate: Arc<Mutex<()>>,
    /// The running import's stop request, while one runs.
    import: Mutex<Option<carrel::ingest::Cancel>>,
    /// The stop flag of the answer a model is writing, while one is.
    answering: Mutex<Option<Arc<std::sync::atomic::AtomicBool>>>,
    pub started: Instant,
}

impl AppState {
    pub fn open(
        settings: Settings,
        settings_problem: Option<SettingsProblem>,
        started: Instant,
    ) -> Result<AppState> {
        let library = Library::open(settings.library_config()?)?;
        Ok(AppState {
            library: Arc::new(Mutex::new(library)),
            settings: Mutex::new(settings),
            watcher: Mutex::new(None),
            settings_problem,
            sync_gate: Arc::default(),
            import: Mutex::new(None),
            answering: Mutex::new(None),
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

    /// Opens the library in use again, so that it reads what another
    /// connection recorded in its file (its embedder).
    pub fn reopen_library(&self) -> Result<()> {
        let library = Library::open(self.settings().library_config()?)?;
        *lock(&self.library) = library;
        Ok(())
    }

    /// Keeps the stop request of the import that starts now.
    pub fn import_started(&self, cancel: carrel::ingest::Cancel) {
        *lock(&self.import) = Some(cancel);
    }

    pub fn import_finished(&self) {
        *lock(&self.import) = None;
    }

    /// Asks the running import to stop after the document it is writing;
    /// false when none runs.
    pub fn cancel_import(&self) -> bool {
        match lock(&self.import).as_ref() {
            Some(c) => {
                c.cancel();
                true
            }
            None => false,
        }
    }

    /// A stop flag for the answer that starts now (the newest question's:
    /// Stop stops the one being written).
    pub fn answer_started(&self) -> Arc<std::sync::atomic::AtomicBool> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        *lock(&self.answering) = Some(stop.clone());
        stop
    }

    pub fn answer_finished(&self) {
        *lock(&self.answering) = None;
    }

    /// Stops the answer being written; false when none is.
    pub fn stop_answer(&self) -> bool {
        match lock(&self.answering).as_ref() {
            Some(stop) => {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    pub fn sync_gate(&self) -> Arc<Mutex<()>> {
        self.sync_gate.clone()
    }

    pub fn settings_problem(&self) -> Option<SettingsProblem> {
        self.settings_problem.clone()
    }

    /// Stops the running watcher, if any, and keeps the new one's stop flag.
    pub fn replace_watcher(&self, stop: Arc<AtomicBool>) {
        let new = Watcher {
            stop,
            stopped: None,
        };
        if let Some(old) = lock(&self.watcher).replace(new) {
            old.stop.store(true, Ordering::SeqCst);
        }
    }

    /// The watcher with this stop flag ended on its own, for `reason`.
    /// Recorded only if it is still the current one (a replaced watcher
    /// ending is no news); returns whether it was.
    pub fn watcher_stopped(&self, stop: &Arc<AtomicBool>, reason: String) -> bool {
        match lock(&self.watcher).as_mut() {
            Some(w) if Arc::ptr_eq(&w.stop, stop) && !stop.load(Ordering::SeqCst) => {
                w.stopped = Some(reason);
                true
            }
            _ => false,
        }
    }

    pub fn watcher_health(&self) -> WatcherHealth {
        match lock(&self.watcher).as_ref().and_then(|w| w.stopped.clone()) {
            Some(reason) => WatcherHealth::Stopped { reason },
            None => WatcherHealth::Running,
        }
    }
}

pub use carrel::fault::lock;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_watcher_stops_the_one_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            library_dir: Some(dir.path().display().to_string()),
            threads: 1,
            ..Settings::default()
        };
        let state = AppState::open(settings, None, Instant::now()).unwrap();
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

    #[test]
    fn a_corrupt_settings_file_is_kept_aside_as_settings_json_bad() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, b"{\"threads\": 2,").unwrap();
        let (settings, problem) = Settings::load_from(&path);
        assert_eq!(settings, Settings::default());
        let problem = problem.expect("the user is told");
        let bad = dir.path().join("settings.json.bad");
        assert_eq!(problem.kept_at.as_deref(), Some(bad.to_str().unwrap()));
        assert!(problem.error.contains("line 1"), "{}", problem.error);
        assert_eq!(std::fs::read(&bad).unwrap(), b"{\"threads\": 2,");
        assert!(!path.exists(), "the next save must not meet the bad file");

        // A second bad file never replaces the first bad copy.
        std::fs::write(&path, b"threads = 2").unwrap();
        let (_, problem) = Settings::load_from(&path);
        let second = dir.path().join("settings.json.bad.1");
        assert_eq!(
            problem.unwrap().kept_at.as_deref(),
            Some(second.to_str().unwrap())
        );
        assert_eq!(std::fs::read(&bad).unwrap(), b"{\"threads\": 2,");
        assert_eq!(std::fs::read(&second).unwrap(), b"threads = 2");
    }

    #[test]
    fn settings_that_parse_or_are_absent_are_no_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        assert_eq!(Settings::load_from(&path), (Settings::default(), None));
        let mine = Settings {
            library_dir: Some("/somewhere".into()),
            threads: 3,
            ..Settings::default()
        };
        std::fs::write(&path, serde_json::to_vec(&mine).unwrap()).unwrap();
        assert_eq!(Settings::load_from(&path), (mine, None));
        // A file saved before the workers' settings existed keeps its
        // choices and takes the defaults for the rest.
        std::fs::write(&path, r#"{"library_dir": "/there", "threads": 2}"#).unwrap();
        let (older, problem) = Settings::load_from(&path);
        assert_eq!(problem, None);
        assert_eq!(older.library_dir.as_deref(), Some("/there"));
        assert_eq!((older.threads, older.jobs), (2, None));
        assert_eq!(older.worker_memory_mb, Settings::default().worker_memory_mb);
    }

    #[test]
    fn only_the_current_watcher_stopping_is_news() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            library_dir: Some(dir.path().display().to_string()),
            threads: 1,
            ..Settings::default()
        };
        let state = AppState::open(settings, None, Instant::now()).unwrap();
        let (old, new) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        state.replace_watcher(old.clone());
        state.replace_watcher(new.clone());
        assert!(!state.watcher_stopped(&old, "replaced, then failed".into()));
        assert_eq!(state.watcher_health(), WatcherHealth::Running);
        assert!(state.watcher_stopped(&new, "the file watcher stopped".into()));
        assert_eq!(
            state.watcher_health(),
            WatcherHealth::Stopped {
                reason: "the file watcher stopped".into()
            }
        );
        // Started again: running, until it says otherwise.
        state.replace_watcher(Arc::new(AtomicBool::new(false)));
        assert_eq!(state.watcher_health(), WatcherHealth::Running);
    }
}
