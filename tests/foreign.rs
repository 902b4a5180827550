//! Foreign sources against a real Chroma server (`chroma run` from PyPI
//! `chromadb`, pinned; `make test` installs it and names it in
//! CARREL_CHROMA), driven through the `carrel` CLI. Every request to the
//! server passes through a counting proxy, so "not asked" is proven by the
//! server's side, not by what Carrel says about itself.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A Chroma server on a loopback port, from a temporary folder; stopped
/// when dropped.
struct Chroma {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Chroma {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_chroma() -> Chroma {
    let bin = std::env::var("CARREL_CHROMA").expect(
        "CARREL_CHROMA must name a `chroma` command: `make test` sets it (tools/setup-chroma.sh installs PyPI chromadb)",
    );
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let child = Command::new(&bin)
        .args([
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--path",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {bin}: {e}"));
    let url = format!("http://127.0.0.1:{port}");
    let chroma = Chroma {
        child,
        url,
        _dir: dir,
    };
    // Wait for the server's heartbeat: the event, not a time.
    let deadline = Instant::now() + Duration::from_secs(120);
    while reqwest::blocking::get(format!("{}/api/v2/heartbeat", chroma.url))
        .map(|r| !r.status().is_success())
        .unwrap_or(true)
    {
        assert!(
            Instant::now() < deadline,
            "chroma never answered its heartbeat"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    chroma
}

/// Forwards every connection on its own port to `to`, counting them: each
/// `carrel` run opens its own, so a count that does not move means the
/// server was not asked.
fn counting_proxy(to: String) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let upstream = to.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16384];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            };
            pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
            pipe(server, client);
        }
    });
    (url, count)
}

/// A collection named `name` with `space`, holding the notes embedded by
/// Carrel's own embedder (the model the source declares).
fn fill(chroma: &str, name: &str, space: &str, lib: &Path) {
    let mut library = common::open(lib);
    let http = reqwest::blocking::Client::new();
    let base =
        format!("{chroma}/api/v2/tenants/default_tenant/databases/default_database/collections");
    let made: Value = http
        .post(&base)
        .json(&json!({"name": name, "configuration": {"hnsw": {"space": space}}}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = made["id"].as_str().expect("a collection id").to_string();
    let embeddings: Vec<Vec<f32>> = common::NOTES
        .iter()
        .map(|(_, _, text)| library.embed_query(text).unwrap())
        .collect();
    let r = http
        .post(format!("{base}/{id}/add"))
        .json(&json!({
            "ids": common::NOTES.iter().map(|n| n.0).collect::<Vec<_>>(),
            "embeddings": embeddings,
            "documents": common::NOTES.iter().map(|n| n.2).collect::<Vec<_>>(),
            "metadatas": common::NOTES.iter().map(|n| json!({"client": n.1})).collect::<Vec<_>>(),
        }))
        .send()
        .unwrap();
    assert!(r.status().is_success(), "add: {}", r.text().unwrap());
}

/// A Chroma server holding the notes in `crm`, and an empty library in a
/// temporary home.
fn library_beside_a_collection() -> (Chroma, tempfile::TempDir, std::path::PathBuf) {
    let chroma = start_chroma();
    let home = tempfile::tempdir().unwrap();
    let lib = home.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    drop(common::open(&lib));
    fill(&chroma.url, "crm", "cosine", &lib);
    (chroma, home, lib)
}

fn carrel(lib: &Path) -> Command {
    common::carrel_process(lib)
}

/// Runs `cmd`: whether it succeeded, and its stdout and stderr together.
fn run(cmd: &mut Command) -> (bool, String) {
    let (ok, stdout, stderr) = output(cmd);
    (ok, format!("{stdout}{stderr}"))
}

fn output(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `carrel match --json`'s answer (the lanes of this empty library say so;
/// the foreign sources answer beside them).
fn ask(cmd: &mut Command, query: &str) -> Value {
    let (_, stdout, stderr) = output(cmd.args(["match", query, "--json"]));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"))
}

fn list(lib: &Path) -> Vec<Value> {
    let (ok, out, err) = output(carrel(lib).args(["source", "list", "--json"]));
    assert!(ok, "{out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn gate(row: &Value) -> Option<&str> {
    row["skip_reason"]["gate"].as_str()
}

/// The background's defect, reproduced: a source created, tested,
/// schema-read, corrected, acknowledged and enabled, with the cross-encoder
/// missing. Every step succeeds; the list says it is skipped and why, and a
/// query does not reach the server. Then the cross-encoder is back, and the
/// same source is read, its points admitted only past the passage floor.
#[test]
fn a_source_that_passes_every_step_is_still_skipped_without_the_cross_encoder() {
    let (chroma, home, lib) = library_beside_a_collection();
    let (proxy, requests) = counting_proxy(chroma.url.clone());

    // Created with a wrong metric and no text key: saved, read, and skipped
    // for the schema (read at once on save).
    let (ok, out) = run(carrel(&lib).args([
        "source",
        "add",
        "crm",
        "--chroma",
        &proxy,
        "--collection",
        "crm",
        "--metric",
        "l2",
    ]));
    assert!(ok, "{out}");
    let row = &list(&lib)[0];
    assert_eq!(gate(row), Some("not_enabled"), "{row}");
    assert_eq!(
        row["discovery"]["metric"], "cosine",
        "discovery read the real metric"
    );
    assert_eq!(row["discovery"]["dimensions"], 384);
    assert_eq!(row["limit_label"], "Maximum distance");

    // Enabling is refused with no text key; the refusal says what to do.
    let (ok, out) = run(carrel(&lib).args(["source", "enable", "crm"]));
    assert!(!ok, "enabled with no text key: {out}");
    assert!(
        out.contains("no text key") && out.contains("--text-key"),
        "{out}"
    );

    let (ok, out) = run(carrel(&lib).args(["source", "test", "crm"]));
    assert!(ok, "{out}");
    // Corrected by adopting what discovery read (metric, and Chroma's
    // documents as the text), never retyped.
    let (ok, out) = run(carrel(&lib).args(["source", "adopt", "crm"]));
    assert!(ok, "{out}");
    let row = &list(&lib)[0];
    assert_eq!(row["declared"]["metric"], "cosine");
    assert_eq!(row["declared"]["text_key"], "#document");

    // Unscoped: refused until someone accepts it, recorded with who and when.
    let (ok, out) = run(carrel(&lib).args(["source", "enable", "crm"]));
    assert!(!ok && out.contains("no scope"), "{out}");
    let (ok, out) = run(carrel(&lib).args(["source", "acknowledge", "crm", "--by", "ana"]));
    assert!(ok, "{out}");
    let (ok, out) = run(carrel(&lib).args(["source", "enable", "crm"]));
    assert!(ok, "{out}");
    let row = &list(&lib)[0];
    assert_eq!(row["acknowledgement"]["by"], "ana");
    assert!(
        row["acknowledgement"]["sentence"]
            .as_str()
            .unwrap()
            .contains("no scope")
    );

    // The cross-encoder missing: every step above succeeded, and still the
    // source is skipped, the list says so, and no query reaches the server.
    let no_ce = home.path().join("no-cross-encoder");
    std::fs::create_dir_all(&no_ce).unwrap();
    let rows: Vec<Value> = {
        let (ok, out, err) = output(
            carrel(&lib)
                .env("CARREL_RERANKER", &no_ce)
                .args(["source", "list", "--json"]),
        );
        assert!(ok, "{out}{err}");
        serde_json::from_str(&out).unwrap()
    };
    assert_eq!(gate(&rows[0]), Some("no_cross_encoder"), "{}", rows[0]);
    assert!(
        rows[0]["status"]
            .as_str()
            .unwrap()
            .contains("never admitted unranked")
    );
    let before = requests.load(Ordering::SeqCst);
    let m = ask(
        carrel(&lib).env("CARREL_RERANKER", &no_ce),
        "how to feed a sourdough starter",
    );
    assert_eq!(m["elsewhere"]["sources"][0]["outcome"]["state"], "skipped");
    assert_eq!(m["elsewhere"]["hits"].as_array().unwrap().len(), 0);
    assert_eq!(
        requests.load(Ordering::SeqCst),
        before,
        "a skipped source was asked"
    );

    // With the cross-encoder: asked, and only what clears the passage floor
    // is admitted, labelled with its source and its own score's direction.
    let m = ask(&mut carrel(&lib), "how to feed a sourdough starter");
    assert!(
        requests.load(Ordering::SeqCst) > before,
        "the source was not asked"
    );
    let source = &m["elsewhere"]["sources"][0];
    assert_eq!(source["outcome"]["state"], "read", "{source}");
    let hits = m["elsewhere"]["hits"].as_array().unwrap();
    assert_eq!(hits[0]["point"], "acme-1", "{hits:?}");
    assert_eq!(hits[0]["direction"], "lower_is_closer");
    assert!(
        hits[0]["scorer"]
            .as_str()
            .unwrap()
            .starts_with("cross-encoder:carrel-ce-v2@")
    );
    let floor = m["elsewhere"]["floor"].as_f64().unwrap();
    assert!(hits.iter().all(|h| h["rerank"].as_f64().unwrap() >= floor));
    assert!(
        hits.iter().all(|h| h["point"] != "zen-2"),
        "a payment reminder is not about sourdough: {hits:?}"
    );
    let row = &list(&lib)[0];
    assert_eq!(row["last_used"]["outcome"]["state"], "read");
}

/// A source whose cross-encoder fails at run time, or whose server is
/// down, is `unavailable` for that query, with the reason; a scoped source
/// returns only its scope's points.
#[test]
fn a_source_that_is_down_is_unavailable_and_a_scope_is_kept() {
    let (chroma, home, lib) = library_beside_a_collection();
    let (ok, out) = run(carrel(&lib).args([
        "source",
        "add",
        "zen",
        "--chroma",
        &chroma.url,
        "--collection",
        "crm",
        "--text-key",
        "#document",
        "--scope",
        "client=zen",
    ]));
    assert!(ok, "{out}");
    let (ok, out) = run(carrel(&lib).args(["source", "enable", "zen"]));
    assert!(ok, "{out}");
    assert_eq!(gate(&list(&lib)[0]), None, "read by retrieval");
    let m = ask(
        &mut carrel(&lib),
        "how to clean and lubricate a bicycle chain",
    );
    let hits = m["elsewhere"]["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{m}");
    assert!(
        hits.iter()
            .all(|h| h["point"].as_str().unwrap().starts_with("zen-")),
        "{hits:?}"
    );
    assert_eq!(hits[0]["scope"]["value"], "zen");

    // The one case the gates cannot see: a calibrated cross-encoder file
    // that fails to load (its tokenizer is missing). The source still reads
    // as read by retrieval, so each query says it is unavailable, and why.
    let broken = home.path().join("carrel-ce-v2");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::copy(
        common::models_dir().join("carrel-ce-v2/model.onnx"),
        broken.join("model.onnx"),
    )
    .unwrap();
    let (_, out, _) = output(
        carrel(&lib)
            .env("CARREL_RERANKER", &broken)
            .args(["source", "list", "--json"]),
    );
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["status"], "read by retrieval", "{out}");
    let m = ask(
        carrel(&lib).env("CARREL_RERANKER", &broken),
        "how to clean and lubricate a bicycle chain",
    );
    let source = &m["elsewhere"]["sources"][0];
    assert_eq!(source["outcome"]["state"], "unavailable", "{source}");
    assert!(
        source["status"].as_str().unwrap().contains("cross-encoder"),
        "{source}"
    );
    assert!(m["elsewhere"]["hits"].as_array().unwrap().is_empty());

    drop(chroma);
    let m = ask(
        &mut carrel(&lib),
        "how to clean and lubricate a bicycle chain",
    );
    let source = &m["elsewhere"]["sources"][0];
    assert_eq!(source["outcome"]["state"], "unavailable", "{source}");
    assert!(
        source["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("could not be reached")
    );
    let (_, text) = run(carrel(&lib).args(["source", "list"]));
    assert!(
        text.contains("last used") && text.contains("unavailable"),
        "{text}"
    );
}
