//! Migrations, one SQL batch per version. Append; never edit a shipped one.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Error, Result};

pub(super) const MIGRATIONS: &[&str] = &[
    // 1: documents point at content-addressed bodies; chunks, cards and vectors
    //    hang off the content, so identical bodies are stored and embedded once.
    r#"
    CREATE TABLE contents (
        id               INTEGER PRIMARY KEY,
        hash             TEXT NOT NULL UNIQUE,
        extracted        TEXT NOT NULL,
        chars            INTEGER NOT NULL,
        truncated_at_chunk INTEGER
    );
    CREATE TABLE documents (
        id            INTEGER PRIMARY KEY,
        source        TEXT NOT NULL UNIQUE,
        kind          TEXT,
        title         TEXT NOT NULL,
        bytes         INTEGER NOT NULL,
        mtime_ns      INTEGER,
        content_id    INTEGER REFERENCES contents(id),
        state         TEXT NOT NULL CHECK (state IN ('indexed', 'broken')),
        broken_code   TEXT,
        broken_reason TEXT,
        added_at      INTEGER NOT NULL,
        synced_at     INTEGER NOT NULL,
        CHECK ((state = 'indexed') = (content_id IS NOT NULL))
    );
    CREATE INDEX documents_content ON documents(content_id);
    CREATE TABLE chunks (
        id           INTEGER PRIMARY KEY,
        content_id   INTEGER NOT NULL REFERENCES contents(id),
        seq          INTEGER NOT NULL,
        heading_path TEXT NOT NULL,
        section      INTEGER NOT NULL,
        start        INTEGER NOT NULL,
        end          INTEGER NOT NULL,
        page         INTEGER,
        text         TEXT NOT NULL,
        embedded_with TEXT,
        UNIQUE (content_id, seq)
    );
    CREATE TABLE cards (
        content_id INTEGER PRIMARY KEY REFERENCES contents(id),
        title      TEXT NOT NULL,
        what       TEXT NOT NULL,
        outline    TEXT NOT NULL,
        key_terms  TEXT NOT NULL,
        text       TEXT NOT NULL,
        embedded_with TEXT
    );
    CREATE VIRTUAL TABLE chunk_vectors USING vec0(
        chunk_id INTEGER PRIMARY KEY,
        embedding float[384] distance_metric=cosine,
        fingerprint text
    );
    CREATE VIRTUAL TABLE card_vectors USING vec0(
        content_id INTEGER PRIMARY KEY,
        embedding float[384] distance_metric=cosine,
        fingerprint text
    );
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    "#,
    // 2: the retrieval log, one row per lane decision.
    r#"
    CREATE TABLE retrieval_log (
        id         INTEGER PRIMARY KEY,
        at         INTEGER NOT NULL,
        query      TEXT NOT NULL,
        lane       TEXT NOT NULL CHECK (lane IN ('subject', 'topic')),
        doc        INTEGER NOT NULL,
        score      REAL NOT NULL,
        scale      TEXT NOT NULL CHECK (scale IN ('cosine', 'rerank_logit')),
        scorer     TEXT NOT NULL,
        calibrated INTEGER NOT NULL,
        admitted   INTEGER NOT NULL,
        decision   TEXT NOT NULL
    );
    "#,
    // 3: watched folders and URLs, kept in sync by `carrel watch run` and the app.
    r#"
    CREATE TABLE watches (
        id            INTEGER PRIMARY KEY,
        target        TEXT NOT NULL UNIQUE,
        kind          TEXT NOT NULL CHECK (kind IN ('folder', 'url')),
        interval_s    INTEGER NOT NULL,
        include       TEXT NOT NULL,
        exclude       TEXT NOT NULL,
        allow_private INTEGER NOT NULL,
        created_at    INTEGER NOT NULL,
        synced_at     INTEGER,
        last_error    TEXT
    );
    "#,
    // 4: HTTP validators per URL document, for conditional re-fetch.
    r#"
    ALTER TABLE documents ADD COLUMN etag TEXT;
    ALTER TABLE documents ADD COLUMN last_modified TEXT;
    "#,
    // 5: the app's chat, kept with the library it asks about.
    r#"
    CREATE TABLE chat_turns (
        id       INTEGER PRIMARY KEY,
        asked_at INTEGER NOT NULL,
        message  TEXT NOT NULL,
        answer   TEXT,
        error    TEXT,
        CHECK ((answer IS NULL) <> (error IS NULL))
    );
    "#,
    // 6: which watch added each document; NULL is "added by hand". A sync
    //    removes only what its own watch added, so a hand-added file or one
    //    another (overlapping) watch added is never deleted by a filter.
    //    Libraries from before v6 never recorded this: a document is given to
    //    the innermost folder watch that covers it and existed when it was
    //    first added (a document added before any watch on its folder was
    //    added by hand), and a URL watch owns its own URL.
    r#"
    ALTER TABLE documents ADD COLUMN watch_id INTEGER REFERENCES watches(id) ON DELETE SET NULL;
    CREATE INDEX documents_watch ON documents(watch_id);
    UPDATE documents SET watch_id = (
        SELECT w.id FROM watches w
        WHERE w.created_at <= documents.added_at
          AND ((w.kind = 'url' AND documents.source = w.target)
            OR (w.kind = 'folder'
                AND substr(documents.source, 1, length(rtrim(w.target, '/')) + 1) = rtrim(w.target, '/') || '/'))
        ORDER BY length(w.target) DESC, w.id
        LIMIT 1
    );
    "#,
    // 7: which reader produced each content's text (`extract::Reader`), shown
    //    beside its documents. Before v7 every PDF was read by pdf-extract and
    //    everything else by Carrel's own readers.
    r#"
    ALTER TABLE contents ADD COLUMN reader TEXT;
    UPDATE contents SET reader = CASE
        WHEN EXISTS (SELECT 1 FROM documents d WHERE d.content_id = contents.id AND d.kind = 'pdf')
        THEN 'pdf-extract' ELSE 'native' END;
    "#,
    // 8: the topic lane's candidate fetch in a large library (`store::signs`).
    //    `chunk_signs` holds sqlite-vec's binary quantization (one bit per
    //    dimension) of every chunk vector, written with it and deleted with
    //    its chunk. `meta.chunks_generation` counts every change to `chunks`,
    //    whichever process makes it, so a process holding the bits in memory
    //    knows when to read them again. A build before v8 would write chunks
    //    without either, so it must refuse this library: the version does.
    //    `chunk_vectors` is made again in chunks of 64 vectors (vec0's
    //    default is 1,024): the sign bits' candidates are rescored one point
    //    lookup each, and vec0 reads a vector by walking its chunk's blob
    //    from the start, so a lookup cost grew with the chunk (1,000 lookups
    //    took 287 ms at 1M chunks in 1,024s). vec0 cannot be renamed, so the
    //    vectors pass through a temporary table.
    r#"
    CREATE TEMP TABLE chunk_vectors_moved AS
        SELECT chunk_id, embedding, fingerprint FROM chunk_vectors ORDER BY chunk_id;
    DROP TABLE chunk_vectors;
    CREATE VIRTUAL TABLE chunk_vectors USING vec0(
        chunk_id INTEGER PRIMARY KEY,
        embedding float[384] distance_metric=cosine,
        fingerprint text,
        chunk_size=64
    );
    INSERT INTO chunk_vectors (chunk_id, embedding, fingerprint)
        SELECT chunk_id, embedding, fingerprint FROM chunk_vectors_moved ORDER BY chunk_id;
    DROP TABLE chunk_vectors_moved;
    CREATE TABLE chunk_signs (
        chunk_id    INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        fingerprint TEXT NOT NULL,
        bits        BLOB NOT NULL
    );
    INSERT INTO chunk_signs (chunk_id, fingerprint, bits)
        SELECT chunk_id, fingerprint, vec_quantize_binary(embedding) FROM chunk_vectors;
    INSERT OR IGNORE INTO meta (key, value) VALUES ('chunks_generation', 0);
    CREATE TRIGGER chunks_counted_insert AFTER INSERT ON chunks BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_generation';
    END;
    CREATE TRIGGER chunks_counted_delete AFTER DELETE ON chunks BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_generation';
    END;
    "#,
    // 9: the library's identity (`crate::kb`): one row, the slug it is
    //    addressed by, a title, who keeps it, and what it holds. A library
    //    from before v9 (and every new one, until `carrel kb create` names
    //    it) is `default`, its owner unknown until someone sets it.
    r#"
    CREATE TABLE identity (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        kb          TEXT NOT NULL,
        title       TEXT NOT NULL,
        owner       TEXT,
        description TEXT NOT NULL DEFAULT ''
    );
    INSERT INTO identity (id, kb, title) VALUES (1, 'default', 'Default library');
    "#,
    // 10: read tokens (`carrel kb token`): who may read this library through
    //    `carrel serve`. Only each token's SHA-256 is kept, so the file never
    //    holds a secret; the label says whom it was made for.
    r#"
    CREATE TABLE read_tokens (
        id      INTEGER PRIMARY KEY,
        sha256  TEXT NOT NULL UNIQUE,
        label   TEXT NOT NULL,
        created INTEGER NOT NULL
    );
    "#,
    // 11: a keyword index over the chunks (`store::keywords`), kept by
    //    triggers, so the topic lane's candidates are the nearest vectors and
    //    the best BM25 matches together. External content: the text lives
    //    once, in `chunks`.
    r#"
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, heading_path, content = 'chunks', content_rowid = 'id',
        tokenize = 'porter unicode61'
    );
    INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild');
    CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts (rowid, text, heading_path)
            VALUES (new.id, new.text, new.heading_path);
    END;
    CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, text, heading_path)
            VALUES ('delete', old.id, old.text, old.heading_path);
    END;
    CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text, heading_path ON chunks BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, text, heading_path)
            VALUES ('delete', old.id, old.text, old.heading_path);
        INSERT INTO chunks_fts (rowid, text, heading_path)
            VALUES (new.id, new.text, new.heading_path);
    END;
    "#,
    // 12: foreign sources (`crate::foreign`): someone else's vector
    //    collections, asked beside this library. One JSON record each: what
    //    was declared, what discovery read, who acknowledged an unscoped
    //    source and when, and the last use.
    r#"
    CREATE TABLE foreign_sources (
        name   TEXT PRIMARY KEY,
        source TEXT NOT NULL
    );
    "#,
    // 13: each passage's language and its content's (`crate::language`):
    //    an ISO code, 'und' where the text does not tell, NULL until looked
    //    at ([`crate::store::SqliteStore::detect_languages`] fills the rows written
    //    before this version); and in the retrieval log, why the lexical
    //    checks could not judge a candidate (another language than the
    //    query's).
    r#"
    ALTER TABLE chunks ADD COLUMN language TEXT;
    ALTER TABLE contents ADD COLUMN language TEXT;
    ALTER TABLE retrieval_log ADD COLUMN unjudged TEXT;
    "#,
    // 14: what a question asks of the whole library before its lanes, kept
    //    cheap as the library grows. The languages its passages are in, with
    //    how much text each, kept by triggers as passages are written,
    //    removed or given a language (counting them from the passages read
    //    every passage's text on every change). And the passages'
    //    fingerprints indexed, so the coverage finds the stale ones (none,
    //    mostly) without reading every passage.
    r#"
    CREATE TABLE language_totals (
        language TEXT PRIMARY KEY,
        passages INTEGER NOT NULL,
        chars    INTEGER NOT NULL
    );
    INSERT INTO language_totals
        SELECT language, COUNT(*), SUM(length(text)) FROM chunks
        WHERE language IS NOT NULL GROUP BY language;
    CREATE TRIGGER chunks_language_insert AFTER INSERT ON chunks
        WHEN new.language IS NOT NULL BEGIN
        INSERT INTO language_totals VALUES (new.language, 1, length(new.text))
            ON CONFLICT (language) DO UPDATE
            SET passages = passages + 1, chars = chars + excluded.chars;
    END;
    CREATE TRIGGER chunks_language_delete AFTER DELETE ON chunks
        WHEN old.language IS NOT NULL BEGIN
        UPDATE language_totals SET passages = passages - 1, chars = chars - length(old.text)
            WHERE language = old.language;
    END;
    CREATE TRIGGER chunks_language_update AFTER UPDATE OF language, text ON chunks BEGIN
        UPDATE language_totals SET passages = passages - 1, chars = chars - length(old.text)
            WHERE language = old.language;
        INSERT INTO language_totals SELECT new.language, 1, length(new.text)
            WHERE new.language IS NOT NULL
            ON CONFLICT (language) DO UPDATE
            SET passages = passages + 1, chars = chars + excluded.chars;
    END;
    CREATE INDEX chunks_embedded_with ON chunks(embedded_with);
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tracing::info!(version = i + 1, "migrating library schema");
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;

    #[test]
    fn fresh_database_gets_current_schema_and_sqlite_vec() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("l.sqlite3")).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert!(store.vec_version().unwrap().starts_with('v'));
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn reopening_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        drop(SqliteStore::open(&p).unwrap());
        assert_eq!(
            SqliteStore::open(&p).unwrap().schema_version().unwrap(),
            SCHEMA_VERSION
        );
    }

    #[test]
    fn a_version_1_library_upgrades_and_keeps_its_documents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        {
            crate::store::register_sqlite_vec();
            let c = Connection::open(&p).unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.execute_batch(
                "INSERT INTO documents (source, title, bytes, state, broken_code, broken_reason, added_at, synced_at)
                 VALUES ('/x.txt', 'x', 0, 'broken', 'empty', 'empty file', 1, 1);
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let store = SqliteStore::open(&p).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.list(None, None).unwrap()[0].source, "/x.txt");
        let n: i64 = store
            .conn
            .query_row("SELECT count(*) FROM retrieval_log", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        // Named `default`, owner unknown, until someone names it (v9).
        let identity = store.identity().unwrap();
        assert_eq!(
            (identity.kb.as_str(), identity.owner),
            (crate::kb::DEFAULT_KB, None)
        );
    }

    /// A v5 library never recorded which watch added what: the upgrade
    /// gives a document to the innermost watch that covered it when it was
    /// first added, and leaves one added before any watch unowned.
    #[test]
    fn a_version_5_library_gives_each_document_to_the_watch_that_added_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        {
            crate::store::register_sqlite_vec();
            let c = Connection::open(&p).unwrap();
            for sql in &MIGRATIONS[..5] {
                c.execute_batch(sql).unwrap();
            }
            c.execute_batch(
                "INSERT INTO watches (id, target, kind, interval_s, include, exclude, allow_private, created_at)
                 VALUES (1, '/d', 'folder', 3600, '[]', '[\"*.md\"]', 0, 100),
                        (2, '/d/sub/', 'folder', 3600, '[]', '[]', 0, 200),
                        (3, 'https://example.org/rota', 'url', 3600, '[]', '[]', 0, 100);
                 INSERT INTO documents (source, title, bytes, state, broken_code, broken_reason, added_at, synced_at) VALUES
                    ('/d/notes.md', 'hand, before the watch', 0, 'broken', 'empty', 'empty file', 50, 300),
                    ('/d/a.txt', 'outer watch', 0, 'broken', 'empty', 'empty file', 100, 300),
                    ('/d/sub/b.txt', 'outer watch, before the inner one', 0, 'broken', 'empty', 'empty file', 150, 300),
                    ('/d/sub/c.txt', 'inner watch', 0, 'broken', 'empty', 'empty file', 250, 300),
                    ('/dd/e.txt', 'beside /d, not in it', 0, 'broken', 'empty', 'empty file', 250, 300),
                    ('https://example.org/rota', 'the URL watch', 0, 'broken', 'empty', 'empty file', 100, 300);
                 PRAGMA user_version = 5;",
            )
            .unwrap();
        }
        let store = SqliteStore::open(&p).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let owners: Vec<(String, Option<i64>)> = store
            .list(None, None)
            .unwrap()
            .into_iter()
            .map(|d| (d.source, store.document_watch(d.id).unwrap()))
            .collect();
        let want = [
            ("/d/notes.md", None),
            ("/d/a.txt", Some(1)),
            ("/d/sub/b.txt", Some(1)),
            ("/d/sub/c.txt", Some(2)),
            ("/dd/e.txt", None),
            ("https://example.org/rota", Some(3)),
        ];
        let want: Vec<(String, Option<i64>)> =
            want.iter().map(|(s, w)| (s.to_string(), *w)).collect();
        assert_eq!(owners, want);
    }

    /// A v7 library gets sign bits for every vector it already has, so the
    /// topic lane's fast fetch sees its old chunks as well as new ones.
    #[test]
    fn a_version_7_library_keeps_its_vectors_in_small_chunks_with_sign_bits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        {
            crate::store::register_sqlite_vec();
            let c = Connection::open(&p).unwrap();
            for sql in &MIGRATIONS[..7] {
                c.execute_batch(sql).unwrap();
            }
            let v: Vec<String> = (0..384)
                .map(|d| if d % 3 == 0 { "0.5" } else { "-0.5" }.into())
                .collect();
            c.execute_batch(&format!(
                "INSERT INTO contents (id, hash, extracted, chars) VALUES (1, 'h', '{{}}', 1);
                 INSERT INTO chunks (id, content_id, seq, heading_path, section, start, end, text)
                    VALUES (5, 1, 0, '[]', 0, 0, 1, 'x');
                 INSERT INTO chunk_vectors (chunk_id, embedding, fingerprint) VALUES (5, '[{}]', 'fp');
                 PRAGMA user_version = 7;",
                v.join(",")
            ))
            .unwrap();
        }
        let store = SqliteStore::open(&p).unwrap();
        let (id, fp, bits): (i64, String, Vec<u8>) = store
            .conn
            .query_row(
                "SELECT chunk_id, fingerprint, bits FROM chunk_signs",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((id, fp.as_str(), bits.len()), (5, "fp", 48));
        assert_eq!(bits[0], 0b0100_1001, "dimensions 0, 3 and 6 are positive");
        // The vector came through the move whole, keyed and filterable as
        // before, now in a table of 64-vector chunks.
        let v: Vec<f32> = (0..384)
            .map(|d| if d % 3 == 0 { 0.5 } else { -0.5 })
            .collect();
        let (near, distance): (i64, f32) = store
            .conn
            .query_row(
                "SELECT chunk_id, distance FROM chunk_vectors
                 WHERE embedding MATCH ?1 AND k = 1 AND fingerprint = 'fp'",
                [crate::store::vector_blob(&v)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(near, 5);
        assert!(distance.abs() < 1e-6, "{distance}");
        let size: i64 = store
            .conn
            .query_row("SELECT size FROM chunk_vectors_chunks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(size, 64);
        let orphans: Vec<_> = store
            .orphans()
            .unwrap()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect();
        // (The fixture's content has no document; that is not the move's.)
        assert!(
            orphans
                .iter()
                .all(|(what, _)| !what.contains("sign") && !what.contains("vector")),
            "{orphans:?}"
        );
    }

    #[test]
    fn newer_schema_is_refused_not_clobbered() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite3");
        {
            let c = Connection::open(&p).unwrap();
            c.execute_batch("CREATE TABLE future(x); PRAGMA user_version = 99;")
                .unwrap();
        }
        let err = SqliteStore::open(&p).err().expect("must refuse");
        assert!(err.to_string().contains("newer than this build"), "{err}");
        let c = Connection::open(&p).unwrap();
        let v: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 99, "the newer database must be left untouched");
    }
}
