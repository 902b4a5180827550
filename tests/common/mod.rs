//! Shared helpers for the engine's integration tests. They use the real
//! models (`make models` installs them; `make test` runs it first).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use carrel::models::ModelConfig;
use carrel::{Library, LibraryConfig};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixtures() -> PathBuf {
    repo().join("fixtures")
}

/// Where `make models` put the models: the CLI's own default.
pub fn models_dir() -> PathBuf {
    ModelConfig::default_dir().expect("a data dir for the models")
}

pub fn models() -> ModelConfig {
    ModelConfig::new(models_dir())
}

pub fn open(dir: &Path) -> Library {
    Library::open(LibraryConfig::new(dir.to_path_buf(), models())).expect("library opens")
}

pub fn s(p: impl AsRef<Path>) -> String {
    p.as_ref().display().to_string()
}

/// Copies fixture files into a fresh folder so tests can change them.
pub fn copy_fixtures(into: &Path, names: &[&str]) {
    for name in names {
        let from = fixtures().join(name);
        let to = into.join(Path::new(name).file_name().unwrap());
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}

/// The built `carrel` binary on library `lib` with the test models, for
/// tests that run it as a child process (to kill it, or alongside another).
pub fn carrel_process(lib: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("carrel"));
    c.env("CARREL_LIBRARY", lib)
        .env("CARREL_MODELS", models_dir())
        .env_remove("CARREL_LOG");
    c
}

/// A free loopback port (for a server a test starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Four notes of two clients, (id, client, text): what the foreign-source
/// tests put in another system's collection.
pub const NOTES: &[(&str, &str, &str)] = &[
    (
        "acme-1",
        "acme",
        "Feeding a sourdough starter: discard half of it, then feed it equal weights of flour and water, once a day at room temperature or once a week in the fridge.",
    ),
    (
        "acme-2",
        "acme",
        "Acme asked for the invoice for the March delivery of spelt flour to be sent to their accounts team.",
    ),
    (
        "zen-1",
        "zen",
        "Servicing a bicycle chain: clean it with degreaser, dry it, and put one drop of chain lubricant on each roller, then wipe off the excess.",
    ),
    (
        "zen-2",
        "zen",
        "Zen Cycles reported a late payment on the wheel truing order; a reminder went out on Friday.",
    ),
];
