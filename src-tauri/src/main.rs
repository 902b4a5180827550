//! Carrel's desktop app. Everything but the context lives in the library
//! crate, so `cargo test` does not need the built UI.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // A file's extraction runs in this binary re-executed as a worker.
    carrel::extract::worker::serve_if_asked();
    let started = std::time::Instant::now();
    // Named fault points (`FAILPOINTS=watch::events_lost=return`), as the
    // CLI reads them: how the e2e makes the watcher die. Inert when unset.
    let _faults = fail::FailScenario::setup();
    carrel_app::run(tauri::generate_context!(), started);
}
