//! Typed events from the shell to the UI. Ingest progress does not go here:
//! it travels on the `add_sources` command's own Channel.

use serde::Serialize;

/// The library changed behind the UI's back (a watched folder or URL was
/// synced); the list should be read again.
#[derive(Debug, Clone, Serialize, specta::Type, tauri_specta::Event)]
pub struct LibraryChanged {
    pub added: u32,
    pub removed: u32,
    /// A watch that could not be read, in a sentence.
    pub error: Option<String>,
}

/// The watcher stopped on its own: folders and URLs are no longer kept in
/// sync until it is started again (`restart_watcher`, or a restart).
#[derive(Debug, Clone, Serialize, specta::Type, tauri_specta::Event)]
pub struct WatcherStopped {
    /// Why, in a sentence.
    pub reason: String,
}

/// Files or folders are being dragged over the window (`active`), or the
/// drag left it.
#[derive(Debug, Clone, Serialize, specta::Type, tauri_specta::Event)]
pub struct DropHover {
    pub active: bool,
}

/// Files or folders were dropped on the window.
#[derive(Debug, Clone, Serialize, specta::Type, tauri_specta::Event)]
pub struct FilesDropped {
    pub paths: Vec<String>,
}
