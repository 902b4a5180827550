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
mod contents;
mod copy;
mod documents;
mod meta;
mod watches;
mod words;
mod write;

use std::sync::Mutex;

use postgres::{Client, NoTls};

use crate::error::{Error, Result};

pub use candidates::{HNSW_EF_SEARCH_CARDS, HNSW_EF_SEARCH_CHUNKS};

/// The schema this build writes and understands.
pub const PG_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The version whose passages' words are made in Rust after its statements
/// ([`words::refill`]).
const WORDS_BY_FTS5: usize = 4;

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
        words tsvector GENERATED ALWAYS AS (to_tsvector('english', heading_path || ' ' || text)) STORED
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
     CREATE INDEX documents_content ON documents (content_id);
     CREATE INDEX documents_watch ON documents (watch_id);
     CREATE TABLE watches (
        id bigserial PRIMARY KEY,
        target text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('folder', 'url')),
        interval_s bigint NOT NULL,
        include text NOT NULL,
        exclude text NOT NULL,
        allow_private boolean NOT NULL,
        created_at bigint NOT NULL,
        synced_at bigint,
        last_error text,
        written_by text NOT NULL,
        machine text NOT NULL,
        UNIQUE (machine, target)
     );
     CREATE TABLE identity (
        id integer PRIMARY KEY CHECK (id = 1),
        kb text NOT NULL,
        title text NOT NULL,
        owner text,
        description text NOT NULL DEFAULT ''
     );
     INSERT INTO identity (id, kb, title) VALUES (1, 'default', 'Default library');
     CREATE TABLE read_tokens (
        id bigserial PRIMARY KEY,
        sha256 text NOT NULL UNIQUE,
        label text NOT NULL,
        created bigint NOT NULL
     );
     CREATE TABLE chat_turns (
        id bigserial PRIMARY KEY,
        asked_at bigint NOT NULL,
        message text NOT NULL,
        answer text,
        error text,
        written_by text NOT NULL,
        CHECK ((answer IS NULL) <> (error IS NULL))
     );
     CREATE TABLE retrieval_log (
        id bigserial PRIMARY KEY,
        at bigint NOT NULL,
        query text NOT NULL,
        lane text NOT NULL CHECK (lane IN ('subject', 'topic')),
        doc bigint NOT NULL,
        score double precision NOT NULL,
        scale text NOT NULL CHECK (scale IN ('cosine', 'rerank_logit')),
        scorer text NOT NULL,
        calibrated boolean NOT NULL,
        admitted boolean NOT NULL,
        decision text NOT NULL,
        unjudged text
     );
     CREATE TABLE foreign_sources (name text PRIMARY KEY, source text NOT NULL);
     -- Every change to the library's documents or passages moves this
     -- sequence, so a reader's caches know when to read again (SQLite's
     -- data_version); a sequence takes no lock, so writers never wait on it
     -- (replaced by rows in schema 3).
     CREATE SEQUENCE carrel_generation;
     CREATE FUNCTION carrel_bump() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM nextval('carrel_generation');
            RETURN NULL;
        END $$;
     CREATE TRIGGER documents_changed AFTER INSERT OR UPDATE OR DELETE ON documents
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_bump();
     CREATE TRIGGER chunks_changed AFTER INSERT OR DELETE ON chunks
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_bump();
     CREATE TRIGGER cards_changed AFTER INSERT OR UPDATE OR DELETE ON cards
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_bump();",
    // 2: what BM25 reads as FTS5 does: each passage's length in tokens
    // (FTS5's unicode61 splits on spaces, punctuation and symbols, Latin-1's
    // and the general punctuation block's too, and drops no word; a
    // `tsvector` keeps distinct stems without stop words), and the
    // library's passages and tokens in all, kept by the writers' own
    // statements as rows of what each added or removed, so a reader's
    // snapshot holds the totals of exactly the passages it sees. A writer
    // that finds more than 64 rows folds them into one, unless another is
    // folding (an advisory lock tried, never waited for).
    "ALTER TABLE chunks ADD COLUMN tokens integer
        GENERATED ALWAYS AS (regexp_count(heading_path || ' ' || text,
            '[^[:space:][:punct:]\\u00a0-\\u00bf\\u00d7\\u00f7\\u2000-\\u206f]+')) STORED;
     CREATE TABLE chunk_totals (passages bigint NOT NULL, tokens bigint NOT NULL);
     INSERT INTO chunk_totals SELECT count(*), coalesce(sum(tokens), 0) FROM chunks;
     CREATE FUNCTION carrel_count_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO chunk_totals
                SELECT way * count(*), way * coalesce(sum(tokens), 0)
                FROM changed, (SELECT CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END AS way) w
                GROUP BY way;
            IF (SELECT count(*) FROM chunk_totals) > 64 AND pg_try_advisory_xact_lock(7294511, 2) THEN
                WITH gone AS (DELETE FROM chunk_totals RETURNING passages, tokens)
                INSERT INTO chunk_totals SELECT sum(passages), sum(tokens) FROM gone;
            END IF;
            RETURN NULL;
        END $$;
     CREATE TRIGGER chunks_added AFTER INSERT ON chunks REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_count_chunks();
     CREATE TRIGGER chunks_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_count_chunks();",
    // 3: the library's generation is counted in rows its writers' own
    // statements add, not a sequence: `nextval` is seen by every reader
    // before the writer commits, so a reader could cache what it read under
    // a generation whose rows it did not see yet, and keep it. A reader's
    // sum moves only when a commit it can see added to it; rows are folded
    // as `chunk_totals`' are.
    "CREATE TABLE carrel_changes (n bigint NOT NULL);
     INSERT INTO carrel_changes SELECT last_value FROM carrel_generation;
     CREATE OR REPLACE FUNCTION carrel_bump() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO carrel_changes VALUES (1);
            IF (SELECT count(*) FROM carrel_changes) > 64 AND pg_try_advisory_xact_lock(7294511, 3) THEN
                WITH gone AS (DELETE FROM carrel_changes RETURNING n)
                INSERT INTO carrel_changes SELECT sum(n) FROM gone;
            END IF;
            RETURN NULL;
        END $$;
     DROP SEQUENCE carrel_generation;",
    // 4: a passage's words and length are FTS5's tokens, written by Carrel
    // (`words`): PostgreSQL's English configuration stems by Snowball, not
    // Porter, and drops stop words, so the keyword side counted other words
    // than SQLite's. Filled for every passage after these statements; the
    // indexes they drop are made again when the library is opened, faster
    // than kept up row by row.
    "ALTER TABLE chunks ALTER COLUMN words DROP EXPRESSION IF EXISTS;
     ALTER TABLE chunks ALTER COLUMN tokens DROP EXPRESSION IF EXISTS;
     DROP INDEX IF EXISTS chunks_words, chunks_embedding;",
    // 5: what a question asks of the whole library before its lanes, kept
    // cheap as the library grows. The languages its passages are in, most
    // text first, are kept by the writers' statements as rows of what each
    // added or removed, folded as `chunk_totals`' are (counting them from
    // the passages read every passage's text: 1.0 s at a million). A
    // passage's language and text are written with it and never changed
    // here, so inserts and deletes are all there is to count. And the
    // passages' fingerprints are indexed, so the coverage finds the stale
    // ones (none, mostly) without reading every passage (0.8 s at a million).
    "CREATE TABLE language_totals (language text NOT NULL, passages bigint NOT NULL, chars bigint NOT NULL);
     INSERT INTO language_totals SELECT language, count(*), sum(length(text))
        FROM chunks WHERE language IS NOT NULL GROUP BY language;
     CREATE FUNCTION carrel_count_languages() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO language_totals
                SELECT language, way * count(*), way * sum(length(text))
                FROM changed, (SELECT CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END AS way) w
                WHERE language IS NOT NULL
                GROUP BY language, way;
            IF (SELECT count(*) FROM language_totals) > 64 AND pg_try_advisory_xact_lock(7294511, 5) THEN
                WITH gone AS (DELETE FROM language_totals RETURNING language, passages, chars)
                INSERT INTO language_totals
                    SELECT language, sum(passages), sum(chars) FROM gone
                    GROUP BY language HAVING sum(passages) <> 0;
            END IF;
            RETURN NULL;
        END $$;
     CREATE TRIGGER chunks_languages_added AFTER INSERT ON chunks REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_count_languages();
     CREATE TRIGGER chunks_languages_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION carrel_count_languages();
     CREATE INDEX chunks_fingerprint ON chunks (fingerprint);",
    // 6: the passages' HNSW graph is made wider (`copy::SEARCH_INDEXES`):
    // dropped here and made again when the library is opened, as schema 4's
    // indexes were.
    "DROP INDEX IF EXISTS chunks_embedding;",
];

/// A library on a PostgreSQL server.
pub struct PgStore {
    client: Mutex<Client>,
    /// A second connection, made when first needed, for a read that runs
    /// beside one on `client` ([`PgStore::topic_candidates`]).
    beside: Mutex<Option<Client>>,
    /// How both connections were made (the password included, never shown).
    config: postgres::Config,
    /// The server as a person names it (host, port, database; never the
    /// password), for every sentence about it.
    server: String,
    /// Who this process writes as: the library's owner or a writer's name.
    writer: String,
    /// The server is a read replica (a hot standby): it is read, and its
    /// primary is written.
    replica: bool,
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
        let mut config: postgres::Config = url.parse().map_err(failed)?;
        if config.get_password().is_none()
            && let Some(password) = password_for(&config)
        {
            config.password(password);
        }
        let mut client = config.connect(NoTls).map_err(failed)?;
        // A read replica (a hot standby) is read as it is: its primary
        // migrates it and makes its indexes.
        let replica: bool = client
            .query_one("SELECT pg_is_in_recovery()", &[])
            .map_err(failed)?
            .get(0);
        let schema = match replica {
            true => check_version(&mut client),
            false => migrate(&mut client, &server),
        };
        schema.map_err(|e| match e {
            Migration::TooNew(found) => Error::PgSchemaTooNew {
                server: server.clone(),
                found,
                supported: PG_SCHEMA_VERSION,
            },
            Migration::ReplicaBehind(found) => Error::PgReplicaBehind {
                server: server.clone(),
                found,
                supported: PG_SCHEMA_VERSION,
            },
            Migration::Failed(err) => failed(err),
            Migration::Carrel(err) => err,
        })?;
        let store = PgStore {
            client: Mutex::new(client),
            beside: Mutex::new(None),
            config,
            server,
            writer: writer.to_string(),
            replica,
        };
        if !replica {
            store.make_search_indexes()?;
        }
        Ok(store)
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

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        crate::fault::lock(&self.client)
    }

    /// Runs `read` on the second connection, made on first use and again
    /// when the server closed it.
    fn beside<T>(&self, read: impl FnOnce(&mut Client) -> Result<T>) -> Result<T> {
        let mut slot = crate::fault::lock(&self.beside);
        let client = match slot.take() {
            Some(c) if !c.is_closed() => c,
            _ => self.config.connect(NoTls).map_err(|e| self.failed(e))?,
        };
        read(slot.insert(client))
    }

    fn failed(&self, err: postgres::Error) -> Error {
        if self.replica && err.code() == Some(&postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION)
        {
            return Error::PgReadReplica {
                server: self.server.clone(),
            };
        }
        Error::Postgres {
            server: self.server.clone(),
            err,
        }
    }
}

/// A step that failed: on the server, or in Carrel's own checks.
pub(super) enum Failed {
    Server(postgres::Error),
    Carrel(Error),
}

impl From<postgres::Error> for Failed {
    fn from(e: postgres::Error) -> Self {
        Failed::Server(e)
    }
}

/// The small calls every read and write of this store is made of, each
/// failure named with the server.
impl PgStore {
    fn one<T: for<'a> postgres::types::FromSql<'a>>(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<T> {
        let row = self
            .client()
            .query_one(sql, params)
            .map_err(|e| self.failed(e))?;
        Ok(row.get(0))
    }

    fn row(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Option<postgres::Row>> {
        self.client()
            .query_opt(sql, params)
            .map_err(|e| self.failed(e))
    }

    fn rows(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>> {
        self.client().query(sql, params).map_err(|e| self.failed(e))
    }

    fn execute(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> Result<u64> {
        self.client()
            .execute(sql, params)
            .map_err(|e| self.failed(e))
    }

    /// Runs `step` in one transaction: committed when it returns `Ok`,
    /// rolled back otherwise.
    fn in_transaction<T>(
        &self,
        step: impl FnOnce(&mut postgres::Transaction<'_>) -> std::result::Result<T, Failed>,
    ) -> Result<T> {
        let mut client = self.client();
        let mut tx = client.transaction().map_err(|e| self.failed(e))?;
        let out = step(&mut tx).map_err(|e| self.failed_or(e))?;
        tx.commit().map_err(|e| self.failed(e))?;
        Ok(out)
    }

    /// The server's failure as the library's error, or Carrel's own.
    fn failed_or(&self, e: Failed) -> Error {
        match e {
            Failed::Server(err) => self.failed(err),
            Failed::Carrel(err) => err,
        }
    }
}

/// The password `psql` would use for this server, user and database:
/// Passwords this process was given in a URL (`carrel --database-url`), by
/// the `.pgpass` fields they answer: read before any other, written
/// nowhere.
static GIVEN: Mutex<Vec<([String; 4], String)>> = Mutex::new(Vec::new());

/// Keeps the password `url` holds, if any, for this process's connections
/// to its server, database and user.
pub(crate) fn remember_password(url: &str) {
    let Ok(config) = url.parse::<postgres::Config>() else {
        return;
    };
    if let Some(p) = config.get_password() {
        let password = String::from_utf8_lossy(p).into_owned();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        given.push((pgpass_key(&config), password));
    }
}

/// The password given to this process for `config`'s server, else
/// `PGPASSWORD`, else the first matching line of `~/.pgpass` (or
/// `PGPASSFILE`), `host:port:database:user:password`, where `*` matches
/// anything and `\:` is a colon.
fn password_for(config: &postgres::Config) -> Option<String> {
    let key = pgpass_key(config);
    let given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = given.iter().rev().find(|(k, _)| *k == key) {
        return Some(p.clone());
    }
    drop(given);
    if let Ok(p) = std::env::var("PGPASSWORD") {
        return Some(p);
    }
    let text = std::fs::read_to_string(crate::store::home::pgpass_file()?).ok()?;
    let [host, port, db, user] = &key;
    pgpass_lookup(&text, [host, port, db, user])
}

/// The host, port, database and user a password is looked up by.
fn pgpass_key(config: &postgres::Config) -> [String; 4] {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or(user);
    [host, port.to_string(), db.to_string(), user.to_string()]
}

/// The password of the first `.pgpass` line whose four fields match.
fn pgpass_lookup(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(pgpass_fields)
        .find(|f| {
            f.len() == 5
                && f[..4]
                    .iter()
                    .zip(wanted)
                    .all(|(have, want)| have == "*" || have == want)
        })
        .map(|mut f| f.swap_remove(4))
}

/// A `.pgpass` line's fields, `\:` and `\\` read as themselves.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

enum Migration {
    TooNew(i64),
    /// A replica whose primary has not migrated it to this Carrel's schema.
    ReplicaBehind(i64),
    Failed(postgres::Error),
    /// Carrel's own part of a step failed.
    Carrel(Error),
}

impl From<postgres::Error> for Migration {
    fn from(e: postgres::Error) -> Self {
        Migration::Failed(e)
    }
}

impl From<Failed> for Migration {
    fn from(e: Failed) -> Self {
        match e {
            Failed::Server(e) => Migration::Failed(e),
            Failed::Carrel(e) => Migration::Carrel(e),
        }
    }
}

/// The schema version the database holds, none before the first migration.
fn stored_version(
    client: &mut impl postgres::GenericClient,
) -> std::result::Result<i64, postgres::Error> {
    let held: bool = client
        .query_one("SELECT to_regclass('carrel_meta') IS NOT NULL", &[])?
        .get(0);
    if !held {
        return Ok(0);
    }
    Ok(client
        .query_opt(
            "SELECT value::bigint FROM carrel_meta WHERE key = 'schema_version'",
            &[],
        )?
        .map_or(0, |r| r.get(0)))
}

/// A replica's schema, which this Carrel reads only at its own version.
fn check_version(client: &mut Client) -> std::result::Result<(), Migration> {
    match stored_version(client)? {
        PG_SCHEMA_VERSION => Ok(()),
        found if found > PG_SCHEMA_VERSION => Err(Migration::TooNew(found)),
        found => Err(Migration::ReplicaBehind(found)),
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
    let found = stored_version(&mut tx)?;
    if found > PG_SCHEMA_VERSION {
        return Err(Migration::TooNew(found));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tracing::info!(%server, version = i + 1, "migrating the PostgreSQL library");
        tx.batch_execute(step)?;
        if i + 1 == WORDS_BY_FTS5 {
            words::refill(&mut tx)?;
        }
    }
    tx.execute(
        "INSERT INTO carrel_meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&PG_SCHEMA_VERSION.to_string()],
    )?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_finds_the_first_matching_line() {
        let text = "# team\ndb:5432:other:ana:no\ndb:*:team:ana:pa\\:ss\n*:*:*:*:any\n";
        assert_eq!(
            pgpass_lookup(text, ["db", "5432", "team", "ana"]).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(
            pgpass_lookup(text, ["elsewhere", "1", "x", "y"]).as_deref(),
            Some("any")
        );
        assert_eq!(
            pgpass_lookup("db:5432:team:ana\n", ["db", "5432", "team", "ana"]),
            None
        );
    }

    #[test]
    fn a_server_is_named_without_its_password() {
        assert_eq!(
            server_of("postgresql://ana:s3cret@db.example:5433/team"),
            "db.example:5433/team"
        );
    }
}
