//! The engine's error type. Every message says what failed and, where there is
//! one, what the user can do about it.

use std::path::PathBuf;

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can fail with. Document-level problems (a corrupt PDF,
/// a zero-byte file) are not errors: they become a listed
/// [`crate::extract::BrokenReason`] on the document. These are failures of the
/// library itself or of a request made to it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no document with id {0}; run `carrel list` to see the ids in this library")]
    UnknownDocument(i64),

    #[error(
        "no library at {0}: the folder holds no library.sqlite3; check --library or CARREL_LIBRARY for a typo, or run `carrel add` to start a library there"
    )]
    NoLibrary(PathBuf),

    #[error("document {id} is broken and has no text: {reason}")]
    BrokenDocument { id: i64, reason: String },

    #[error("no watch with id {0}; run `carrel watch list` to see the ids")]
    UnknownWatch(i64),

    #[error("{0} is not a folder; watch a folder or an http(s) URL")]
    NotAFolder(std::path::PathBuf),

    #[error("bad pattern `{0}`: {1}")]
    BadPattern(String, String),

    #[error("watching failed: {0}")]
    Watch(String),

    #[error("cannot handle Ctrl-C and SIGTERM: {0}")]
    Signals(String),

    #[error("`{0}` does not exist")]
    MissingSource(PathBuf),

    #[error("the library database at {path} failed: {err}")]
    Database {
        path: PathBuf,
        #[source]
        err: rusqlite::Error,
    },

    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),

    #[error(
        "the library at {path} has schema version {found}, newer than this build of Carrel understands ({supported}); \
         upgrade Carrel, or open another library with --library"
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("the PostgreSQL library at {server} failed: {}", pg_said(err))]
    Postgres {
        server: String,
        #[source]
        err: postgres::Error,
    },

    #[error(
        "the PostgreSQL database at {server} holds the library `{held}`, not `{asked}`; join it with `carrel kb create {held} --postgres URL`, or use another database"
    )]
    DatabaseHoldsAnother {
        server: String,
        held: String,
        asked: String,
    },

    #[error(
        "a library is copied only into an empty one, and this one holds documents or watches; copy into a new name"
    )]
    CopyTargetNotEmpty,

    #[error("not a PostgreSQL URL Carrel can use: {0}")]
    BadPostgresUrl(String),

    #[error(
        "the PostgreSQL library at {server} has schema version {found}, newer than this build of Carrel understands ({supported}); \
         upgrade Carrel on this machine"
    )]
    PgSchemaTooNew {
        server: String,
        found: i64,
        supported: i64,
    },

    #[error(
        "the PostgreSQL library at {server} is a read replica at schema version {found}, older than this build of Carrel's ({supported}); \
         open it once on its primary, which migrates it, and the replica follows"
    )]
    PgReplicaBehind {
        server: String,
        found: i64,
        supported: i64,
    },

    #[error(
        "the PostgreSQL library at {server} is a read replica, which answers questions but takes no writes; \
         add to this library through its primary server"
    )]
    PgReadReplica { server: String },

    #[error("sqlite-vec did not load into SQLite: {0}")]
    VectorExtension(String),

    #[error(
        "{what} not found at {path}; run `make models` (or set CARREL_MODELS to the folder that has them)"
    )]
    ModelMissing { what: &'static str, path: PathBuf },

    #[error(
        "{what} at {path} failed its checksum (expected sha256 {expected}, found {found}); run `make models` again"
    )]
    ModelChecksum {
        what: &'static str,
        path: PathBuf,
        expected: &'static str,
        found: String,
    },

    #[error(
        "the ONNX Runtime library at {path} could not be loaded: {reason}. Carrel needs ONNX Runtime 1.24 or newer; run `make models`"
    )]
    Runtime { path: PathBuf, reason: String },

    #[error("the embedding model failed: {0}")]
    Embedding(String),

    #[error("{path}: {err}")]
    Io {
        path: PathBuf,
        #[source]
        err: std::io::Error,
    },

    #[error(
        "could not decide where the library lives: no data directory for this user; pass --library DIR"
    )]
    NoDataDir,

    #[error(transparent)]
    Mention(#[from] crate::mention::MentionError),

    #[error(transparent)]
    Worker(#[from] crate::extract::worker::WorkerUnavailable),

    #[error("MCP server: {0}")]
    Mcp(String),

    #[error("evaluation data: {0}")]
    Eval(String),

    #[error("stored data is malformed ({0}); this is a bug, please report it")]
    Corrupt(String),

    #[error(transparent)]
    BadKb(#[from] crate::kb::BadKb),

    #[error("the shelf at {path} could not be read: {reason}")]
    Shelf { path: PathBuf, reason: String },

    #[error("no library `{kb}` here; the libraries you can ask are: {known}")]
    UnknownKb { kb: String, known: String },

    #[error(
        "name the library to ask with `kb`: a list of names, or \"*\" for every one; the libraries you can ask are: {known}"
    )]
    KbNeeded { known: String },

    #[error("library `{kb}` has no read token {id}; `carrel kb tokens {kb}` lists them")]
    UnknownToken { kb: String, id: i64 },

    #[error("not authorised: {0}")]
    Unauthorized(String),

    #[error(
        "{token} mentions a document, but every library asked is on another machine; mention a document of a library here, or ask without @doc:"
    )]
    MentionNowhere { token: String },

    #[error("{token} names a document in several libraries; write {choices}")]
    MentionInSeveralLibraries { token: String, choices: String },

    #[error("no library could be asked: {0}")]
    NothingAnswered(String),

    #[error(
        "the library at {0} is gone: its folder was deleted or moved while it was being served; put it back, or restart the server without it"
    )]
    LibraryGone(PathBuf),

    #[error(
        "`{url}` is not a hub's address ({reason}); give the URL `carrel serve` printed, e.g. http://their-machine:7311/mcp"
    )]
    BadHubUrl { url: String, reason: String },

    #[error("the hub at {url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },

    #[error("the hub at {url} answered: {reason}")]
    Remote { url: String, reason: String },

    #[error(
        "`{kb}` is a library on another machine ({url}): it can be searched (MCP `search`), not changed or read as a folder here"
    )]
    RemoteLibrary { kb: String, url: String },

    #[error("the library is unavailable: {0}")]
    Unavailable(String),

    #[error(
        "--kb names {0} libraries; only `carrel match` and `carrel ask` read several together (as `@kb:NAME` in the question does): name one"
    )]
    SeveralKbs(usize),

    #[error("a library named `{kb}` is already on the shelf, at {at}; choose another name")]
    KbTaken { kb: String, at: String },

    #[error(
        "{0} is not on the shelf (the library in use always is); `carrel kb list` shows the shelf"
    )]
    NotOnShelf(PathBuf),

    #[error("the library at {0} is already on the shelf; `carrel kb list` shows it")]
    LibraryOnShelf(PathBuf),

    #[error("{0} already holds a library; choose an empty folder with --dir")]
    LibraryExists(PathBuf),

    #[error("no foreign source is called `{0}`; `carrel source list` shows them")]
    UnknownSource(String),

    #[error("source `{name}` cannot be enabled: {sentence}. To change it: {change}")]
    SourceRefused {
        name: String,
        sentence: String,
        change: String,
    },

    #[error("source `{name}`: {reason}")]
    SourceUnavailable { name: String, reason: String },
}

impl Error {
    /// The database was busy or locked past the busy timeout (another
    /// process held the write lock): worth trying again, unlike most errors.
    pub fn is_busy(&self) -> bool {
        let (Error::Sql(err) | Error::Database { err, .. }) = self else {
            return false;
        };
        matches!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }

    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            err,
        }
    }
}

/// What a PostgreSQL client error says in full, for people: the server's
/// own message when it answered, else the failure and its cause (the
/// client's own text names only the kind: "db error", "invalid
/// configuration"), and where a password goes when one was missing or
/// wrong.
fn pg_said(err: &postgres::Error) -> String {
    const WHERE: &str = "give it in PGPASSWORD or ~/.pgpass (or in the URL of --database-url)";
    if let Some(db) = err.as_db_error() {
        return match *db.code() == postgres::error::SqlState::INVALID_PASSWORD {
            true => format!("{}; {WHERE}", db.message()),
            false => db.message().to_string(),
        };
    }
    match std::error::Error::source(err).map(|c| c.to_string()) {
        Some(cause) if cause == "password missing" => {
            format!("the server asks for a password; {WHERE}")
        }
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}
