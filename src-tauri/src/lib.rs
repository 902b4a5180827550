//! Carrel's desktop shell: Tauri wiring over the `carrel` engine and nothing
//! more. [`commands`] are thin calls into the engine, [`events`] are the
//! typed events the UI listens to, [`state`] holds the open library.
//!
//! One specta [`builder`] feeds both the app and the `bindings_are_fresh`
//! test that keeps `ui/src/bindings.ts` in step with these types.

pub mod commands;
pub mod error;
pub mod events;
pub mod state;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tauri::{DragDropEvent, Manager, WindowEvent};
use tauri_specta::{Event, collect_commands, collect_events};

use crate::events::{DropHover, FilesDropped, LibraryChanged, WatcherStopped};
use crate::state::{AppState, Settings};

/// Where the generated bindings live, relative to this crate.
pub const BINDINGS: &str = "../ui/src/bindings.ts";

pub fn builder() -> tauri_specta::Builder<tauri::Wry> {
    tauri_specta::Builder::<tauri::Wry>::new()
        // Ids are SQLite rowids and sizes are file bytes: far below 2^53, so
        // a TypeScript `number` holds them exactly.
        .dangerously_cast_bigints_to_number()
        // One TypeScript type per Rust type: the UI only reads what the engine
        // serialises (settings are the one input, and share the shape).
        .disable_serde_phases()
        .commands(collect_commands![
            commands::list_documents,
            commands::read_document,
            commands::remove_document,
            commands::add_sources,
            commands::cancel_import,
            commands::embedder_choice,
            commands::switch_embedder,
            commands::list_watches,
            commands::list_libraries,
            commands::add_remote_library,
            commands::remove_watch,
            commands::match_query,
            commands::explain_across,
            commands::complete_mention,
            commands::check_mentions,
            commands::ask,
            commands::stop_answer,
            commands::chat_history,
            commands::clear_chat,
            commands::doctor,
            commands::about,
            commands::readable_kinds,
            commands::pick_files,
            commands::pick_folder,
            commands::open_original,
            commands::get_settings,
            commands::set_settings,
            commands::first_paint,
            commands::settings_problem,
            commands::watcher_health,
            commands::restart_watcher,
            commands::ask_elsewhere,
            commands::list_foreign_sources,
            commands::declare_foreign_source,
            commands::test_foreign_source,
            commands::discover_foreign_source,
            commands::adopt_foreign_source,
            commands::acknowledge_foreign_source,
            commands::set_foreign_source_enabled,
            commands::remove_foreign_source,
        ])
        .events(collect_events![
            LibraryChanged,
            DropHover,
            FilesDropped,
            WatcherStopped
        ])
}

/// Starts the app. `started` is taken first thing in `main`, for the
/// cold-start figure.
pub fn run(context: tauri::Context<tauri::Wry>, started: Instant) {
    init_logging();
    let builder = builder();
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            // A settings file that cannot be used is set aside and shown to
            // the user (see `settings_problem`); the app starts on defaults.
            let (settings, problem) = Settings::load()?;
            app.manage(AppState::open(settings, problem, started)?);
            spawn_watcher(app.handle());
            Ok(())
        })
        .on_window_event(|window, event| {
            let app = window.app_handle();
            let sent = match event {
                WindowEvent::DragDrop(DragDropEvent::Enter { .. }) => {
                    DropHover { active: true }.emit(app)
                }
                WindowEvent::DragDrop(DragDropEvent::Leave) => {
                    DropHover { active: false }.emit(app)
                }
                WindowEvent::DragDrop(DragDropEvent::Drop { paths, .. }) => {
                    let _ = DropHover { active: false }.emit(app);
                    FilesDropped {
                        paths: paths.iter().map(|p| p.display().to_string()).collect(),
                    }
                    .emit(app)
                }
                _ => Ok(()),
            };
            if let Err(e) = sent {
                tracing::error!("could not send a drag-and-drop event: {e}");
            }
        })
        .run(context)
        .expect("the Tauri application failed to start");
}

/// The log file in the data folder: what a desktop app's user can find and
/// send, since nobody reads its stderr. Past `LOG_KEEP_BYTES` the old file
/// becomes `carrel.log.1` (one generation kept).
pub fn log_path() -> carrel::Result<std::path::PathBuf> {
    Ok(carrel::default_data_dir()?.join("carrel.log"))
}

const LOG_KEEP_BYTES: u64 = 5_000_000;

/// Logs to stderr and to [`log_path`]; `RUST_LOG` filters (default info).
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, fmt};

    let file = log_path().ok().and_then(|path| {
        std::fs::create_dir_all(path.parent()?).ok()?;
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > LOG_KEEP_BYTES) {
            let _ = std::fs::rename(&path, path.with_extension("log.1"));
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .ok()
    });
    let file_layer = file.map(|f| fmt::layer().with_ansi(false).with_writer(Mutex::new(f)));
    tracing_subscriber::registry()
        .with(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with(fmt::layer().with_writer(std::io::stderr))
        .with(file_layer)
        .init();
}

/// Keeps watched folders and URLs in sync while the app runs (the same
/// `watch::run` as `carrel watch run`), on its own thread and connection,
/// and tells the UI when something changed. It replaces (stops) the watcher
/// before it: a change of library in Settings starts one on the new library.
/// A watcher that stops on its own, by an error or a panic, is recorded as
/// [`WatcherHealth::Stopped`](state::WatcherHealth) and announced with
/// [`WatcherStopped`]: the UI says that nothing is kept in sync any more.
pub(crate) fn spawn_watcher(app: &tauri::AppHandle) {
    let app = app.clone();
    let state = app.state::<AppState>();
    let (settings, gate) = (state.settings(), state.sync_gate());
    let stop = Arc::new(AtomicBool::new(false));
    // Registered before it runs, so that even an immediate death is its own.
    state.replace_watcher(stop.clone());
    let spawned = std::thread::Builder::new()
        .name("carrel-watcher".into())
        .spawn({
            let app = app.clone();
            let stop = stop.clone();
            move || {
                let ended = keep_in_sync(&settings, &stop, &gate, &mut |r| {
                    if r.added + r.removed + r.renamed > 0 || r.error.is_some() {
                        let _ = LibraryChanged {
                            added: r.added as u32,
                            removed: r.removed as u32,
                            error: r.error.clone(),
                        }
                        .emit(&app);
                    }
                });
                if let Err(reason) = ended {
                    watcher_died(&app, &stop, reason);
                }
            }
        });
    if let Err(e) = spawned {
        watcher_died(&app, &stop, format!("its thread could not start: {e}"));
    }
}

fn watcher_died(app: &tauri::AppHandle, stop: &Arc<AtomicBool>, reason: String) {
    tracing::error!("watched folders are not kept in sync: {reason}");
    let recorded = app
        .state::<AppState>()
        .watcher_stopped(stop, reason.clone());
    if recorded && let Err(e) = (WatcherStopped { reason }).emit(app) {
        tracing::error!("could not tell the UI that the watcher stopped: {e}");
    }
}

/// The watcher's whole life: returns only when `stop` is set (`Ok`) or when
/// it cannot go on, with why in a sentence, a panic included.
pub(crate) fn keep_in_sync(
    settings: &Settings,
    stop: &AtomicBool,
    gate: &Mutex<()>,
    on_sync: &mut dyn FnMut(&carrel::watch::SyncReport),
) -> std::result::Result<(), String> {
    let run = std::panic::AssertUnwindSafe(|| {
        let mut lib = carrel::Library::open(settings.library_config().map_err(|e| e.message)?)
            .map_err(|e| e.to_string())?;
        carrel::watch::run(&mut lib, stop, gate, on_sync).map_err(|e| e.to_string())
    });
    std::panic::catch_unwind(run).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(format!("the watcher crashed: {what}"))
    })
}

#[cfg(test)]
mod tests {
    /// The TypeScript bindings as `make bindings` writes them.
    fn bindings() -> String {
        let ts = specta_typescript::Typescript::default().header("// Generated by src-tauri (tauri-specta) from the engine's types. Do not edit: run `make bindings`.\n");
        let dir = std::env::temp_dir().join(format!("carrel-bindings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bindings.ts");
        super::builder().export(ts, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        text
    }

    /// `ui/src/bindings.ts` is generated; CI fails when it is stale.
    /// `CARREL_WRITE_BINDINGS=1` (as `make bindings` sets) rewrites it.
    #[test]
    fn bindings_are_fresh() {
        let fresh = bindings();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(super::BINDINGS);
        if std::env::var_os("CARREL_WRITE_BINDINGS").is_some() {
            std::fs::write(&path, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{} is stale: run `make bindings` and commit it",
            path.display()
        );
    }

    /// The watcher's thread ends with a sentence, never silently, whether
    /// `watch::run` fails or panics; `watcher_died` takes it from there.
    #[test]
    fn a_dead_watcher_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::state::Settings {
            library_dir: Some(dir.path().display().to_string()),
            threads: 1,
            ..crate::state::Settings::default()
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let gate = std::sync::Mutex::new(());
        let scenario = fail::FailScenario::setup();
        fail::cfg("watch::events_lost", "return").unwrap();
        let ended = super::keep_in_sync(&settings, &stop, &gate, &mut |_| {});
        assert_eq!(
            ended,
            Err("watching failed: the file watcher stopped".to_string())
        );
        fail::cfg("watch::events_lost", "panic(inotify went away)").unwrap();
        let ended = super::keep_in_sync(&settings, &stop, &gate, &mut |_| {});
        assert_eq!(
            ended,
            Err("the watcher crashed: inotify went away".to_string())
        );
        scenario.teardown();
        // Asked to stop, it stops quietly.
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            super::keep_in_sync(&settings, &stop, &gate, &mut |_| {}),
            Ok(())
        );
    }
}
