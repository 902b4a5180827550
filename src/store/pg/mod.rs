//! A library on PostgreSQL + pgvector: the team library many people,
//! machines and watchers write into at once. The same rows as the SQLite
//! store, shaped for a server: a chunk's and a card's vector live on their
//! rows (`vector(384)`, an HNSW index each, cosine), the keyword side is a
//! `tsvector` with a GIN index, and every row a person or a watch writes
//! records who wrote it. Migrations are versioned as on SQLite, in
//! `carrel_meta`; a database newer than this build is refused with a
//! sentence.
//!
//! Only fetching and row access live here; the lanes' decisions stay in
//! `lanes/`, once, for both stores.

mod candidates;
mod write;

use std::sync::Mutex;

use postgres::{Client, NoTls};

use crate::error::{Error, Result};

pub use candidates::HNSW_EF_SEARCH;

/// The schema this build writes and understands.
pub const PG_SCHEMA_VERSION: i64 = 1;

/// Each version's statements, in order; version N is `MIGRATIONS[N - 1]`.
const MIGRATIONS: &[&str] = &[
    // 1: contents, chunks with their vectors and words, cards with theirs,
    // documents; who wrote each row.
    "CREATE TABLE contents (
        id bigserial PRIMARY KEY,
        hash text NOT NULL UNIQUE,
        extracted text NOT NULL,
        chars bigint NOT NULL,
        truncated_at_chunk bigint,
        reader text NOT NULL,
        language text,
        written_by text NOT NULL
     );
     CREATE TABLE chunks (
        id bigserial PRIMARY KEY,
        content_id bigint NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        heading_path text NOT NULL,
        section integer NOT NULL,
        start_at integer NOT NULL,
        end_at integer NOT NULL,
        page integer,
        text text NOT NULL,
        language text,
        embedding vector(384) NOT NULL,
        fingerprint text NOT NULL,
        words tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
     );
     CREATE INDEX chunks_content ON chunks (content_id);
     CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops);
     CREATE INDEX chunks_words ON chunks USING gin (words);
     CREATE TABLE cards (
        content_id bigint PRIMARY KEY REFERENCES contents (id) ON DELETE CASCADE,
        title text NOT NULL,
        what text NOT NULL,
        outline text NOT NULL,
        key_terms text NOT NULL,
        text text NOT NULL,
        embedding vector(384) NOT NULL,
        fingerprint text NOT NULL
     );
     CREATE INDEX cards_embedding ON cards USING hnsw (embedding vector_cosine_ops);
     CREATE TABLE documents (
        id bigserial PRIMARY KEY,
        source text NOT NULL UNIQUE,
        kind text,
        title text NOT NULL,
        bytes bigint NOT NULL,
        mtime_ns bigint,
        content_id bigint REFERENCES contents (id),
        state text NOT NULL,
        broken_code text,
        broken_reason text,
        added_at bigint NOT NULL,
        synced_at bigint NOT NULL,
        etag text,
        last_modified text,
        watch_id bigint,
        written_by text NOT NULL
     );
     CREATE INDEX documents_content ON documents (content_id);",
];

/// A library on a PostgreSQL server.
pub struct PgStore {
    client: Mutex<Client>,
    /// The server as a person names it (host, port, database; never the
    /// password), for every sentence about it.
    server: String,
    /// Who this process writes as: the library's owner or a writer's name.
    writer: String,
}

/// The server a URL names, without its password.
pub fn server_of(url: &str) -> String {
    match url.parse::<postgres::Config>() {
        Ok(c) => {
            let host = c
                .get_hosts()
                .first()
                .map(|h| match h {
                    postgres::config::Host::Tcp(h) => h.clone(),
                    postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .unwrap_or_else(|| "localhost".into());
            let port = c.get_ports().first().copied().unwrap_or(5432);
            let db = c.get_dbname().or(c.get_user()).unwrap_or("postgres");
            format!("{host}:{port}/{db}")
        }
        Err(_) => "a malformed PostgreSQL URL".into(),
    }
}

impl PgStore {
    /// Connects to the library at `url`, creating its tables on first use
    /// and migrating an older one; `writer` is recorded on every row this
    /// process writes.
    pub fn open(url: &str, writer: &str) -> Result<PgStore> {
        let server = server_of(url);
        let failed = |err| Error::Postgres {
            server: server.clone(),
            err,
        };
        let mut client = Client::connect(url, NoTls).map_err(failed)?;
        migrate(&mut client, &server).map_err(|e| match e {
            Migration::TooNew(found) => Error::PgSchemaTooNew {
                server: server.clone(),
                found,
                supported: PG_SCHEMA_VERSION,
            },
            Migration::Failed(err) => failed(err),
        })?;
        Ok(PgStore {
            client: Mutex::new(client),
            server,
            writer: writer.to_string(),
        })
    }

    /// The server, as every sentence about this library names it.
    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn schema_version(&self) -> Result<i64> {
        let mut c = self.client();
        let row = c
            .query_one(
                "SELECT value::bigint FROM carrel_meta WHERE key = 'schema_version'",
                &[],
            )
            .map_err(|e| self.failed(e))?;
        Ok(row.get(0))
    }

    /// What this store cannot do yet, as the error every surface shows.
    pub(crate) fn not_yet(&self, what: &'static str) -> Error {
        Error::NotOnPostgresYet {
            server: self.server.clone(),
            what,
        }
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        crate::fault::lock(&self.client)
    }

    fn failed(&self, err: postgres::Error) -> Error {
        Error::Postgres {
            server: self.server.clone(),
            err,
        }
    }
}

enum Migration {
    TooNew(i64),
    Failed(postgres::Error),
}

impl From<postgres::Error> for Migration {
    fn from(e: postgres::Error) -> Self {
        Migration::Failed(e)
    }
}

/// Brings the database to [`PG_SCHEMA_VERSION`], each step in one
/// transaction that first takes an advisory lock, so two writers starting
/// at once migrate once.
fn migrate(client: &mut Client, server: &str) -> std::result::Result<(), Migration> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock(7294511)", &[])?;
    tx.batch_execute(
        "CREATE EXTENSION IF NOT EXISTS vector;
         CREATE TABLE IF NOT EXISTS carrel_meta (key text PRIMARY KEY, value text NOT NULL);",
    )?;
    let found: i64 = tx
        .query_opt(
            "SELECT value::bigint FROM carrel_meta WHERE key = 'schema_version'",
            &[],
        )?
        .map_or(0, |r| r.get(0));
    if found > PG_SCHEMA_VERSION {
        return Err(Migration::TooNew(found));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tracing::info!(%server, version = i + 1, "migrating the PostgreSQL library");
        tx.batch_execute(step)?;
    }
    tx.execute(
        "INSERT INTO carrel_meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&PG_SCHEMA_VERSION.to_string()],
    )?;
    tx.commit()?;
    Ok(())
}
