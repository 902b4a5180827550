//! A PostgreSQL table with a pgvector column as a foreign source, against a
//! real PostgreSQL server with pgvector (PyPI `pgserver`, pinned; `make
//! test` installs it and names its folder in CARREL_PGVECTOR), driven through
//! the `carrel` CLI: discovery reads the index's metric, the scope is a
//! column, the inner product reads higher-is-closer, and a server that is
//! down or an index changed under the declaration is `unavailable`.

mod common;
#[path = "common/postgres.rs"]
mod pg_server;

use pg_server::{Postgres, start_postgres};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// The notes, embedded by Carrel's own embedder (the model the source
/// declares), in `crm.notes` with a vector index for `opclass`.
fn fill(url: &str, opclass: &str, lib: &Path) {
    let mut library = common::open(lib);
    let mut db = postgres::Client::connect(url, postgres::NoTls).unwrap();
    db.batch_execute(&format!(
        "CREATE EXTENSION IF NOT EXISTS vector;
         CREATE SCHEMA crm;
         CREATE TABLE crm.notes (id text PRIMARY KEY, body text, client text, embedding vector(384));
         CREATE INDEX notes_embedding ON crm.notes USING hnsw (embedding {opclass});"
    ))
    .unwrap();
    for (id, client, body) in common::NOTES {
        let v = library.embed_query(body).unwrap();
        let literal = format!(
            "[{}]",
            v.iter().map(f32::to_string).collect::<Vec<_>>().join(",")
        );
        db.execute(
            "INSERT INTO crm.notes VALUES ($1, $2, $3, $4::text::vector)",
            &[id, body, client, &literal],
        )
        .unwrap();
    }
}

fn library_beside_a_table(opclass: &str) -> (Postgres, tempfile::TempDir, PathBuf) {
    let pg = start_postgres();
    let home = tempfile::tempdir().unwrap();
    let lib = home.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    drop(common::open(&lib));
    fill(&pg.url, opclass, &lib);
    (pg, home, lib)
}

fn carrel(lib: &Path, args: &[&str]) -> (bool, String, String) {
    let out = common::carrel_process(lib).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn row(lib: &Path) -> Value {
    let (ok, out, err) = carrel(lib, &["source", "list", "--json"]);
    assert!(ok, "{out}{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    rows[0].clone()
}

fn ask(lib: &Path, query: &str) -> Value {
    let (_, out, err) = carrel(lib, &["match", query, "--json"]);
    serde_json::from_str::<Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))["elsewhere"]
        .clone()
}

fn add(lib: &Path, url: &str, extra: &[&str]) {
    let mut args = vec![
        "source",
        "add",
        "crm",
        "--pgvector",
        url,
        "--table",
        "crm.notes",
        "--vector-column",
        "embedding",
    ];
    args.extend(extra);
    let (ok, out, err) = carrel(lib, &args);
    assert!(ok, "{out}{err}");
}

/// Declared wrong, read, corrected by adoption, scoped by a column, then
/// read: only the scope's rows come back, ids from the primary key, each
/// admitted past the passage floor; the index changed under it fails the
/// query rather than reading distances the wrong way; the server gone is
/// `unavailable`.
#[test]
fn a_pgvector_table_is_discovered_adopted_scoped_and_read() {
    let (pg, _home, lib) = library_beside_a_table("vector_cosine_ops");
    add(&lib, &pg.url, &["--metric", "l2"]);
    let r = row(&lib);
    assert_eq!(
        r["discovery"]["metric"], "cosine",
        "read from the index: {r}"
    );
    assert_eq!(r["discovery"]["dimensions"], 384);
    let keys: Vec<&str> = r["discovery"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(keys, ["body", "client", "id"], "the vector is no key");
    assert_eq!(r["skip_reason"]["gate"], "not_enabled");
    let (ok, out, err) = carrel(&lib, &["source", "enable", "crm"]);
    assert!(!ok && err.contains("no text key"), "{out}{err}");
    let (ok, out, err) = carrel(&lib, &["source", "adopt", "crm"]);
    assert!(ok, "{out}{err}");
    assert_eq!(row(&lib)["declared"]["metric"], "cosine");

    add(
        &lib,
        &pg.url,
        &["--text-key", "body", "--scope", "client=zen"],
    );
    let (ok, out, err) = carrel(&lib, &["source", "enable", "crm"]);
    assert!(ok, "{out}{err}");
    let r = row(&lib);
    assert_eq!(r["status"], "read by retrieval", "{r}");
    assert_eq!(r["limit_label"], "Maximum distance");
    let e = ask(&lib, "how to clean and lubricate a bicycle chain");
    let hits = e["hits"].as_array().unwrap();
    assert_eq!(
        hits.first().map(|h| &h["point"]),
        Some(&"zen-1".into()),
        "{e}"
    );
    assert!(
        hits.iter()
            .all(|h| h["point"].as_str().unwrap().starts_with("zen-")),
        "the scope is a column: {hits:?}"
    );
    assert_eq!(hits[0]["direction"], "lower_is_closer");
    assert_eq!(e["sources"][0]["outcome"]["returned"], 2, "{e}");
    let (ok, out, _) = carrel(&lib, &["source", "list"]);
    assert!(
        ok && out.contains("pgvector postgresql://postgres@127.0.0.1"),
        "{out}"
    );

    // The index changed to another metric under the declaration.
    let mut db = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    db.batch_execute(
        "DROP INDEX crm.notes_embedding;
         CREATE INDEX notes_embedding ON crm.notes USING hnsw (embedding vector_l2_ops);",
    )
    .unwrap();
    let e = ask(&lib, "how to clean and lubricate a bicycle chain");
    assert_eq!(e["sources"][0]["outcome"]["state"], "unavailable", "{e}");
    assert!(
        e["sources"][0]["status"]
            .as_str()
            .unwrap()
            .contains("now measures l2"),
        "{e}"
    );
    // The periodic sweep (`carrel watch run`, the app's watcher) reads it
    // again, and the source says what changed without anyone asking.
    assert_eq!(row(&lib)["status"], "read by retrieval", "not read yet");
    let swept = common::open(&lib)
        .rediscover_foreign_sources(Duration::ZERO)
        .unwrap();
    assert_eq!(swept, [("crm".to_string(), Ok(()))]);
    assert_eq!(row(&lib)["skip_reason"]["error"]["found"], "l2");

    let (ok, _, _) = carrel(&lib, &["source", "adopt", "crm"]);
    assert!(ok);
    assert_eq!(row(&lib)["status"], "read by retrieval");

    drop(db);
    drop(pg);
    let e = ask(&lib, "how to clean and lubricate a bicycle chain");
    assert_eq!(e["sources"][0]["outcome"]["state"], "unavailable", "{e}");
    assert!(
        e["sources"][0]["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{e}"
    );
}

/// Under the inner product, the collection's own score is a similarity:
/// higher is closer, the limit is a minimum score, and gate 5 keeps the
/// points above it, on a real server's numbers.
#[test]
fn the_inner_product_reads_higher_is_closer_and_its_limit_is_a_minimum() {
    let (pg, _home, lib) = library_beside_a_table("vector_ip_ops");
    add(
        &lib,
        &pg.url,
        &[
            "--metric",
            "ip",
            "--text-key",
            "body",
            "--scope",
            "client=acme",
        ],
    );
    let (ok, out, err) = carrel(&lib, &["source", "enable", "crm"]);
    assert!(ok, "{out}{err}");
    let r = row(&lib);
    assert_eq!(r["status"], "read by retrieval", "{r}");
    assert_eq!(r["limit_label"], "Minimum score");
    let e = ask(&lib, "how do I feed my sourdough starter");
    let hits = e["hits"].as_array().unwrap();
    assert_eq!(
        hits.first().map(|h| &h["point"]),
        Some(&"acme-1".into()),
        "{e}"
    );
    assert_eq!(hits[0]["direction"], "higher_is_closer");
    let own = hits[0]["own_score"].as_f64().unwrap();
    assert!(
        own > 0.3 && own <= 1.0001,
        "an inner product of unit vectors: {own}"
    );

    // A minimum just above the best point's own score: nothing within.
    let limit = format!("{}", own + 0.01);
    add(
        &lib,
        &pg.url,
        &[
            "--metric",
            "ip",
            "--text-key",
            "body",
            "--scope",
            "client=acme",
            "--limit",
            &limit,
        ],
    );
    let e = ask(&lib, "how do I feed my sourdough starter");
    let outcome = &e["sources"][0]["outcome"];
    assert_eq!(outcome["state"], "read", "{e}");
    assert_eq!(outcome["returned"], 2);
    assert_eq!(outcome["within_limit"], 0, "{e}");
    assert!(e["hits"].as_array().unwrap().is_empty());
}
