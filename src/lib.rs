//! Carrel's engine: a local document library in one SQLite file.
//!
//! Whole files go in ([`Library::add`]); each is extracted ([`extract`]),
//! chunked in document mode ([`chunk::plan`], the one owner of boundaries),
//! given a card ([`card`]), embedded locally ([`models`]) and written by
//! content hash ([`store`]). No Tauri and no UI here: everything is testable
//! headless, and the CLI, the app and the MCP server are thin over it.
//!
//! Data flows one way; a module imports only those before it here (the
//! order `tests/architecture.rs` checks): the leaves [`score`], [`mention`],
//! [`words`], `fault`, [`extract`], [`error`], [`paths`] → [`chunk`] →
//! [`card`] → [`models`] (embed) → [`store`] → [`ingest`] → [`lanes`] →
//! [`foreign`] → [`answer`] → [`library`] (the facade) → [`watch`], [`eval`], [`mcp`],
//! [`serve`] → [`cli`]; the app is a crate of its own over all of it.

pub mod answer;
pub mod card;
pub mod chunk;
pub mod cli;
pub mod error;
pub mod eval;
pub mod extract;
pub mod fault;
pub mod foreign;
pub mod ingest;
pub mod kb;
pub mod lanes;
pub mod language;
pub mod library;
pub mod mcp;
pub mod mention;
pub mod models;
pub mod paths;
pub mod provenance;
pub mod score;
pub mod serve;
pub mod store;
pub mod sweep;
pub mod watch;
pub mod words;

pub use error::{Error, Result};
pub use ingest::{AddReport, Limits, Progress};
pub use library::{Doctor, DocumentText, HealthCheck, Library, LibraryConfig, Probe, probe};
pub use paths::{APP_IDENTIFIER, DATABASE_FILE, LibraryDirFrom, default_data_dir, library_dir};
pub use store::{Density, DocumentRow};
