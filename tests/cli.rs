//! The `carrel` CLI contract: command names, JSON fields and exit codes, run
//! as a real process against a real library.

mod common;

use assert_cmd::Command;
use common::*;
use serde_json::Value;

fn carrel(lib: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("carrel").unwrap();
    c.env("CARREL_LIBRARY", lib)
        .env("CARREL_MODELS", models_dir())
        .env_remove("CARREL_LOG");
    c
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

/// Runs `c`, which must succeed, and reads its stdout as JSON.
fn json_of(c: &mut Command) -> Value {
    json(&c.assert().success().get_output().stdout)
}

#[test]
fn add_reports_json_and_exits_1_when_any_input_failed() {
    let lib = tempfile::tempdir().unwrap();
    let out = carrel(lib.path())
        .args(["add", "--json"])
        .arg(fixtures().join("docs"))
        .arg(fixtures().join("bad/zero.txt"))
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["added"], 6);
    assert_eq!(v["unchanged"], 0);
    assert_eq!(v["failed"][0]["reason"], "empty file: it has no bytes");
    assert!(
        v["failed"][0]["source"]
            .as_str()
            .unwrap()
            .ends_with("zero.txt")
    );
    let doc = &v["documents"][0];
    assert!(doc["id"].is_i64() && doc["title"].is_string() && doc["chunks"].is_u64());

    let ok = carrel(lib.path())
        .args(["add", "--json"])
        .arg(fixtures().join("docs"))
        .assert()
        .code(0);
    let v = json(&ok.get_output().stdout);
    assert_eq!(
        (v["added"].as_u64(), v["unchanged"].as_u64()),
        (Some(0), Some(6))
    );
}

#[test]
fn a_folder_scan_names_every_file_it_did_not_take() {
    let lib = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let copy = |from: &str, to: &str| std::fs::copy(fixtures().join(from), d.join(to)).unwrap();
    // Taken: a known extension, and a text file with none (a README).
    copy("docs/sourdough-starter.md", "starter.md");
    copy("docs/getting-started.txt", "README");
    // Not taken, each for a reason.
    std::fs::write(d.join("ls.1.gz"), b"\x1f\x8b\x08\x00 man page").unwrap();
    std::fs::write(d.join("data.xyz"), b"whatever").unwrap();
    copy("formats/scan-page-11.jpg", "photo.jpg");
    std::fs::write(d.join("program"), b"\x7fELF\x02\x01\x01\x00\x00\x00\x00").unwrap();
    std::fs::write(d.join(".hidden.md"), b"# Hidden").unwrap();
    std::fs::create_dir(d.join(".git")).unwrap();
    std::fs::write(d.join(".git/notes.md"), b"# Inside a hidden folder").unwrap();
    std::os::unix::fs::symlink(d.join("starter.md"), d.join("link.md")).unwrap();

    let out = carrel(lib.path())
        .args(["add", "--json"])
        .arg(d)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["added"], 2, "{v:#}");
    let skipped: Vec<(String, String)> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let source = s["source"].as_str().unwrap();
            let name = source.rsplit('/').next().unwrap().to_string();
            (name, s["reason"].as_str().unwrap().to_string())
        })
        .collect();
    let reason_of = |name: &str| {
        skipped
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.as_str())
            .unwrap_or_else(|| panic!("{name} is not listed: {skipped:?}"))
    };
    assert!(reason_of(".git").starts_with("hidden"));
    assert!(reason_of(".hidden.md").starts_with("hidden"));
    assert!(reason_of("ls.1.gz").starts_with("compressed (.gz)"));
    assert_eq!(reason_of("data.xyz"), "unsupported type .xyz");
    assert!(reason_of("program").starts_with("no extension"));
    assert!(reason_of("link.md").starts_with("a symbolic link"));
    assert!(reason_of("photo.jpg").contains("read by OCR only when added by themselves"));
    assert_eq!(skipped.len(), 7, "one entry per folder, not per file in it");

    // People read the same, with the count in the last line.
    let text = carrel(lib.path()).arg("add").arg(d).assert().code(0);
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(text.contains("skipped        ") && text.contains("unsupported type .xyz"));
    assert!(
        text.trim_end()
            .ends_with("0 added, 2 unchanged, 0 failed, 7 skipped"),
        "{text}"
    );
}

#[test]
fn without_ocr_a_scan_says_what_to_install_and_doctor_notes_it() {
    let lib = tempfile::tempdir().unwrap();
    // No PATH: neither poppler nor Tesseract can be found.
    let out = carrel(lib.path())
        .env("PATH", "")
        .args(["add", "--json"])
        .arg(fixtures().join("formats/scanned-pages-11-12.pdf"))
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    let reason = v["failed"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("OCR is not installed") && reason.contains("apt install tesseract-ocr"),
        "{reason}"
    );
    let doctor = carrel(lib.path()).env("PATH", "").arg("doctor").assert();
    let text = String::from_utf8_lossy(&doctor.get_output().stdout).into_owned();
    assert!(text.contains("ocr           missing"), "{text}");
    assert!(text.contains("pdftotext     missing"), "{text}");
    // Installed (as `make test` installs them), both are reported ready.
    let doctor = carrel(lib.path()).arg("doctor").assert();
    let text = String::from_utf8_lossy(&doctor.get_output().stdout).into_owned();
    assert!(text.contains("ocr           ok      tesseract 5"), "{text}");
    let ocr_line = text.lines().find(|l| l.starts_with("ocr ")).unwrap();
    assert!(
        ocr_line.contains("languages:") && ocr_line.contains("eng"),
        "{text}"
    );
}

#[test]
fn list_read_stats_and_rm_speak_the_contract() {
    let lib = tempfile::tempdir().unwrap();
    carrel(lib.path())
        .arg("add")
        .arg(fixtures().join("docs/sourdough-starter.md"))
        .arg(fixtures().join("bad/scanned.pdf"))
        .assert()
        .code(1);

    let v = json_of(&mut carrel(lib.path()).args(["list", "--json"]));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for field in [
        "id",
        "title",
        "kind",
        "reader",
        "source",
        "bytes",
        "chunks",
        "content_hash",
        "state",
        "broken_reason",
        "truncated_at_chunk",
        "card_state",
    ] {
        assert!(rows[0].get(field).is_some(), "list --json lacks {field}");
    }
    let good = rows.iter().find(|r| r["state"] == "indexed").unwrap();
    let broken = rows.iter().find(|r| r["state"] == "broken").unwrap();
    assert!(
        broken["broken_reason"]
            .as_str()
            .unwrap()
            .contains("neither the PDF's text layer nor OCR found any")
    );
    assert_eq!(good["reader"], "native");
    let id = good["id"].as_i64().unwrap().to_string();

    let text = stdout(&mut carrel(lib.path()).args(["read", &id]));
    assert!(
        text.contains("## Sourdough Starter > Troubleshooting") && text.contains("hooch"),
        "{text}"
    );
    let card = json_of(&mut carrel(lib.path()).args(["read", &id, "--card", "--json"]));
    assert!(
        card["what"]
            .as_str()
            .unwrap()
            .starts_with("A sourdough starter")
    );

    let stats = json_of(&mut carrel(lib.path()).args(["stats", "--density", "--json"]));
    assert_eq!(stats[0]["chunks"], good["chunks"]);
    assert!(stats[0]["avg_chunk"].as_f64().unwrap() > 100.0);

    carrel(lib.path()).args(["rm", &id]).assert().success();
    let v = json_of(&mut carrel(lib.path()).args(["list", "--json"]));
    assert_eq!(v.as_array().unwrap().len(), 1);
}

#[test]
fn unknown_ids_fail_with_a_sentence() {
    let lib = tempfile::tempdir().unwrap();
    carrel(lib.path())
        .arg("add")
        .arg(fixtures().join("docs/getting-started.txt"))
        .assert()
        .success();
    for args in [
        vec!["read", "999"],
        vec!["read", "999", "--card"],
        vec!["rm", "999"],
    ] {
        let out = carrel(lib.path())
            .args(&args)
            .assert()
            .failure()
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no document with id 999") && err.contains("carrel list"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "nothing on stdout for a failure");
    }
}

#[test]
fn probe_reports_both_modes_from_the_shared_planner() {
    let plan = fixtures().join("long/renovation-plan.md");
    let lib = tempfile::tempdir().unwrap();
    let doc = json_of(&mut carrel(lib.path()).args(["probe", "--json"]).arg(&plan));
    let mem = json_of(
        &mut carrel(lib.path())
            .args(["probe", "--json", "--mode", "memory"])
            .arg(&plan),
    );
    let (d, m) = (
        doc["chunks"].as_u64().unwrap(),
        mem["chunks"].as_u64().unwrap(),
    );
    assert!(m >= 3 * d, "memory {m} vs document {d}");
    assert!(doc["avg_chars"].as_f64().unwrap() > 360.0);
    carrel(lib.path())
        .args(["probe", "--mode", "sentence"])
        .arg(&plan)
        .assert()
        .code(2);
    let out = carrel(lib.path())
        .arg("probe")
        .arg(fixtures().join("bad/encrypted.pdf"))
        .assert()
        .failure()
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("encrypted PDF"));
}

#[test]
fn doctor_and_add_say_what_to_do_when_models_are_missing() {
    let lib = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = carrel(lib.path())
        .env("CARREL_MODELS", empty.path())
        .arg("doctor")
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("FAILED") && out.contains("make models"),
        "{out}"
    );

    let out = carrel(lib.path())
        .env("CARREL_MODELS", empty.path())
        .arg("add")
        .arg(fixtures().join("docs"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("make models"));

    let ok = json_of(&mut carrel(lib.path()).args(["doctor", "--json"]));
    assert_eq!(ok["runtime"]["status"], "ok");
    assert_eq!(ok["embedder"]["status"], "ok");
    // The shipped cross-encoder is the default, named by its fingerprint.
    assert_eq!(ok["reranker"]["status"], "ok");
    assert!(
        ok["reranker"]["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "{}@{}",
                carrel::models::RERANKER_NAME,
                carrel::lanes::subject::RERANK_FLOOR_MODEL
            )),
        "{}",
        ok["reranker"]
    );
    assert!(
        ok["fingerprints"]["chunk"]
            .as_str()
            .unwrap()
            .starts_with("all-MiniLM-L6-v2@")
    );
}

#[test]
fn match_keeps_the_lanes_apart_in_its_json_and_logs_its_decisions() {
    let lib = tempfile::tempdir().unwrap();
    carrel(lib.path())
        .arg("add")
        .arg(fixtures().join("labelled/corpus"))
        .assert()
        .success();
    let out = carrel(lib.path())
        .args([
            "match",
            "how to lubricate a bike chain",
            "--json",
            "--explain",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["query"], "how to lubricate a bike chain");
    // The shipped cross-encoder admits the chain page, on its own scale.
    assert_eq!(v["subject"]["state"], "ready");
    let subject = &v["subject"]["hits"][0];
    assert_eq!(subject["title"], "Bicycle Chain Maintenance");
    let floor = carrel::lanes::subject::RERANK_FLOOR.value().get() as f64;
    assert!(subject["rerank"].as_f64().unwrap() >= floor);
    assert_eq!(subject["calibrated"], true);
    assert!(
        subject["scorer"]
            .as_str()
            .unwrap()
            .starts_with(&format!("cross-encoder:{}@", carrel::models::RERANKER_NAME))
    );
    assert_eq!(v["topic"]["state"], "ready");
    assert!(v["topic_vetoed"].is_u64());
    let hit = &v["topic"]["hits"][0];
    for field in [
        "doc",
        "title",
        "chunk",
        "heading_path",
        "passage",
        "cosine",
        "scorer",
    ] {
        assert!(hit.get(field).is_some(), "topic hit lacks {field}");
    }
    assert_eq!(hit["title"], "Bicycle Chain Maintenance");
    assert!(
        hit["scorer"]
            .as_str()
            .unwrap()
            .starts_with("cosine:all-MiniLM-L6-v2@")
    );
    assert!(
        v["explain"]["subject"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["decision"] == "admitted" && c["rerank"].is_number())
    );

    let log = json_of(&mut carrel(lib.path()).args(["log", "--json"]));
    let entries = log.as_array().unwrap();
    assert!(!entries.is_empty());
    assert!(
        entries
            .iter()
            .all(|e| e["query"] == "how to lubricate a bike chain" && e["scorer"].is_string())
    );
    // Each number with the scale it is on, as two fields.
    assert!(
        entries
            .iter()
            .all(|e| e["score"].is_number()
                && (e["scale"] == "cosine" || e["scale"] == "rerank_logit")),
        "{log}"
    );
    assert!(
        entries.iter().any(|e| e["scale"] == "rerank_logit"),
        "{log}"
    );

    let text = stdout(&mut carrel(lib.path()).args(["match", "how to lubricate a bike chain"]));
    assert!(
        text.contains("SUBJECT")
            && text.contains("TOPIC")
            && text.contains("Bicycle Chain Maintenance"),
        "{text}"
    );
}

/// A lane with real hits also shows what it judged under its floor, labelled
/// and apart: "starter home mortgage" finds the mortgage page, and the
/// sourdough starter it collides with sits below the topic lane's floor.
#[test]
fn match_shows_each_lanes_tail_below_the_floor_apart_from_its_hits() {
    let lib = tempfile::tempdir().unwrap();
    carrel(lib.path())
        .arg("add")
        .arg(fixtures().join("labelled/corpus"))
        .assert()
        .success();
    let v = json_of(&mut carrel(lib.path()).args(["match", "starter home mortgage", "--json"]));
    let titles = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap_or_else(|| panic!("not a list: {list}"))
            .iter()
            .map(|h| h["title"].as_str().unwrap().to_string())
            .collect()
    };
    for lane in ["subject", "topic"] {
        let hits = titles(&v[lane]["hits"]);
        let tail = titles(&v[lane]["below_floor"]);
        assert!(
            tail.iter().all(|t| !hits.contains(t)),
            "{lane}: a hit repeated in the tail: {v}"
        );
    }
    assert_eq!(v["topic"]["state"], "ready");
    assert_eq!(
        titles(&v["topic"]["hits"]),
        ["Starter Home Mortgage Rates Explained"]
    );
    assert!(
        titles(&v["topic"]["below_floor"]).contains(&"Sourdough Starter".to_string()),
        "{v}"
    );

    let text = stdout(&mut carrel(lib.path()).args(["match", "starter home mortgage"]));
    let topic = &text[text.find("TOPIC").unwrap()..];
    let tail = topic
        .lines()
        .find(|l| l.trim_start().starts_with("below the floor ("))
        .unwrap_or_else(|| panic!("no tail under the topic lane:\n{text}"));
    assert!(tail.contains("Sourdough Starter (0."), "{tail}");
}

#[test]
fn ask_answers_with_checked_citations_and_refuses_unknown_mentions() {
    let lib = tempfile::tempdir().unwrap();
    carrel(lib.path())
        .arg("add")
        .arg(fixtures().join("docs"))
        .assert()
        .success();
    let out = json_of(
        &mut carrel(lib.path())
            .args([
                "ask",
                "how do I begin a sourdough starter? @doc:sourdough-starter-copy",
                "--answerer",
                "extractive",
                "--json",
            ])
            .env_remove("CARREL_LLM_URL"),
    );
    assert_eq!(out["answerer"], "extractive");
    assert_eq!(out["outcome"]["state"], "answered");
    assert_eq!(out["outcome"]["check"]["uncited"], 0);
    assert!(out["outcome"]["check"]["verified"].as_u64().unwrap() >= 1);
    let cited = out["outcome"]["statements"][0]["citations"][0]
        .as_u64()
        .unwrap() as usize;
    let passage = &out["context"][cited - 1];
    assert!(
        passage["source"]
            .as_str()
            .unwrap()
            .ends_with("sourdough-starter-copy.md")
    );
    assert_eq!(passage["found"]["by"], "mention");

    let out = carrel(lib.path())
        .args(["ask", "tell me about @doc:sourdogh"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did you mean") && err.contains("Sourdough Starter"),
        "{err}"
    );
}

/// Regression: `carrel list` on a mistyped CARREL_LIBRARY created an empty
/// library there and said "The library is empty".
#[test]
fn read_commands_on_a_folder_without_a_library_fail_and_create_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let typo = parent.path().join("libary");
    for args in [
        vec!["list"],
        vec!["read", "1"],
        vec!["match", "sourdough"],
        vec!["ask", "what is a starter?"],
        vec!["watch", "list"],
    ] {
        let out = carrel(&typo)
            .args(&args)
            .assert()
            .code(1)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(out).unwrap();
        assert!(err.contains("no library at"), "{args:?}: {err}");
    }
    assert!(!typo.exists(), "nothing was created at the mistyped path");
}

/// Ctrl-C during `carrel add` stops between documents: the command says how
/// many it did not reach and exits 1, every document it wrote is whole, and
/// the same command afterwards finds those unchanged and adds the rest.
/// Each commit is slowed by a fault point (not a clock race): the signal is
/// sent once the first document is in the library, and there is time left
/// for the rest.
#[test]
fn ctrl_c_stops_add_between_documents_and_the_same_add_goes_on() {
    let lib = tempfile::tempdir().unwrap();
    let docs = fixtures().join("labelled").join("corpus");
    let total = std::fs::read_dir(&docs).unwrap().count();
    let child = carrel_process(lib.path())
        .args(["add", "--jobs", "2"])
        .arg(&docs)
        .env("FAILPOINTS", "ingest::after_commit=sleep(400)")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let written = || {
        carrel::Library::open_existing(carrel::LibraryConfig::new(lib.path().into(), models()))
            .ok()
            .and_then(|l| l.list().ok())
            .map_or(0, |d| d.len())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while written() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no document was written"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let kept = written();
    assert!(kept < total, "the run went on to the end: {stdout}");
    assert!(
        stdout.contains(&format!("cancelled: {} not reached", total - kept)),
        "{stdout}"
    );
    let lib_now =
        carrel::Library::open_existing(carrel::LibraryConfig::new(lib.path().into(), models()))
            .unwrap();
    for d in lib_now.list().unwrap() {
        assert!(d.chunks > 0, "{} was written without its chunks", d.title);
    }
    drop(lib_now);
    let again = carrel_process(lib.path())
        .args(["add", "--json"])
        .arg(&docs)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["unchanged"], kept as u64, "{report}");
    assert_eq!(report["added"], (total - kept) as u64, "{report}");
    assert_eq!(report["cancelled"], Value::Null);
}

/// `carrel` on a per-user data folder of its own (no CARREL_LIBRARY), so
/// the shelf and the default library are the test's.
fn carrel_home(data: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("carrel").unwrap();
    c.env("XDG_DATA_HOME", data)
        .env_remove("CARREL_LIBRARY")
        .env("CARREL_MODELS", models_dir())
        .env_remove("CARREL_LOG");
    c
}

/// A data folder whose shelf holds two libraries on the same books by two
/// owners (fixtures/attribution): `admirers`, kept by Ada Moreau, and
/// `skeptics`, kept by Ben Okafor.
fn two_owners_libraries() -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    for (kb, owner) in [("admirers", "Ada Moreau"), ("skeptics", "Ben Okafor")] {
        carrel_home(data.path())
            .args(["kb", "create", kb, "--owner", owner])
            .assert()
            .success();
        carrel_home(data.path())
            .args(["--kb", kb, "add"])
            .arg(fixtures().join("attribution").join(kb))
            .assert()
            .success();
    }
    data
}

/// Runs `c`, which must succeed, and takes its stdout.
fn stdout(c: &mut Command) -> String {
    let out = c.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

fn stderr_of_failure(c: &mut Command) -> String {
    let out = c.assert().code(1).get_output().stderr.clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn libraries_on_the_shelf_are_named_owned_and_addressed_by_kb() {
    let data = tempfile::tempdir().unwrap();
    // Before anything: the default library, not created yet.
    let v = json(stdout(carrel_home(data.path()).args(["kb", "list", "--json"])).as_bytes());
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        (v[0]["state"].as_str(), v[0]["in_use"].as_bool()),
        (Some("not_created"), Some(true))
    );

    let out = stdout(carrel_home(data.path()).args([
        "kb",
        "create",
        "research",
        "--title",
        "Research notes",
        "--owner",
        "Ada",
    ]));
    assert!(out.contains("carrel --kb research add"), "{out}");
    // A taken name, and a name that cannot follow `@kb:`, are refused.
    let err = stderr_of_failure(carrel_home(data.path()).args(["kb", "create", "research"]));
    assert!(err.contains("already on the shelf"), "{err}");
    let err = stderr_of_failure(carrel_home(data.path()).args(["kb", "create", "Team Notes"]));
    assert!(err.contains("is not a library name"), "{err}");

    // --kb puts documents into that library and reads them from it; the
    // library in use stays empty.
    carrel_home(data.path())
        .args(["--kb", "research", "add"])
        .arg(fixtures().join("docs/getting-started.txt"))
        .assert()
        .success();
    let listed = json(
        stdout(carrel_home(data.path()).args(["--kb", "research", "list", "--json"])).as_bytes(),
    );
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let v = json(stdout(carrel_home(data.path()).args(["kb", "list", "--json"])).as_bytes());
    let research = v
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["identity"]["kb"] == "research")
        .unwrap();
    assert_eq!(research["documents"], 1);
    assert_eq!(research["identity"]["owner"], "Ada");
    assert_eq!(v[0]["state"], "not_created", "{v}");

    // An unknown name lists the known ones.
    let err = stderr_of_failure(carrel_home(data.path()).args(["--kb", "nope", "list"]));
    assert!(
        err.contains("no library `nope`") && err.contains("`research`"),
        "{err}"
    );

    // Renamed, it answers to the new name only; describe sets and clears.
    carrel_home(data.path())
        .args(["kb", "rename", "research", "papers"])
        .assert()
        .success();
    let err = stderr_of_failure(carrel_home(data.path()).args(["--kb", "research", "list"]));
    assert!(err.contains("`papers`"), "{err}");
    let d = json(
        stdout(carrel_home(data.path()).args([
            "kb",
            "describe",
            "papers",
            "--description",
            "Read in 2026",
            "--owner",
            "",
            "--json",
        ]))
        .as_bytes(),
    );
    assert_eq!(
        (
            d["kb"].as_str(),
            d["owner"].as_str(),
            d["description"].as_str()
        ),
        (Some("papers"), None, Some("Read in 2026"))
    );
    assert_eq!(d["documents"], 1);
    assert_eq!(d["scorers"]["embedder"]["state"], "known", "{d}");
    assert!(
        d["scorers"]["cross_encoder"]["id"]
            .as_str()
            .unwrap()
            .contains('@'),
        "{d}"
    );

    // A library folder deleted behind the shelf's back is unavailable, with
    // the reason, never an empty library.
    std::fs::remove_dir_all(d["dir"].as_str().unwrap()).unwrap();
    let v = json(stdout(carrel_home(data.path()).args(["kb", "list", "--json"])).as_bytes());
    assert_eq!(v[1]["state"], "unavailable", "{v}");
    assert!(
        v[1]["reason"]
            .as_str()
            .unwrap()
            .contains("moved or deleted"),
        "{v}"
    );
    let err = stderr_of_failure(carrel_home(data.path()).args(["--kb", "papers", "list"]));
    assert!(err.contains("no library `papers`"), "{err}");
    // Forgotten by its folder, it leaves the shelf.
    carrel_home(data.path())
        .args(["kb", "forget", d["dir"].as_str().unwrap()])
        .assert()
        .success();
    let v = json(stdout(carrel_home(data.path()).args(["kb", "list", "--json"])).as_bytes());
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn a_read_token_is_shown_once_listed_without_its_secret_and_revoked_per_library() {
    let data = tempfile::tempdir().unwrap();
    for kb in ["research", "notes"] {
        carrel_home(data.path())
            .args(["kb", "create", kb])
            .assert()
            .success();
    }
    let out = carrel_home(data.path())
        .args([
            "kb",
            "token",
            "research",
            "notes",
            "--label",
            "ada's laptop",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let secret = String::from_utf8(out.stdout).unwrap();
    let secret = secret.trim();
    assert!(
        secret.starts_with("carrel_") && !secret.contains(' '),
        "{secret:?}"
    );
    let told = String::from_utf8(out.stderr).unwrap();
    assert!(
        told.contains("shown only now") && told.contains("carrel kb revoke research 1"),
        "{told}"
    );

    for kb in ["research", "notes"] {
        let listed = stdout(carrel_home(data.path()).args(["kb", "tokens", kb, "--json"]));
        assert!(!listed.contains(secret), "a listing shows the secret");
        let v = json(listed.as_bytes());
        assert_eq!(
            (v[0]["id"].as_i64(), v[0]["label"].as_str()),
            (Some(1), Some("ada's laptop"))
        );
    }
    // Revoked in one library, it stays in the other.
    carrel_home(data.path())
        .args(["kb", "revoke", "research", "1"])
        .assert()
        .success();
    let left = json(
        stdout(carrel_home(data.path()).args(["kb", "tokens", "research", "--json"])).as_bytes(),
    );
    assert_eq!(left.as_array().unwrap().len(), 0);
    let kept =
        json(stdout(carrel_home(data.path()).args(["kb", "tokens", "notes", "--json"])).as_bytes());
    assert_eq!(kept.as_array().unwrap().len(), 1);
    let err = stderr_of_failure(carrel_home(data.path()).args(["kb", "revoke", "research", "1"]));
    assert!(err.contains("has no read token 1"), "{err}");
    // A token for a library not on the shelf makes none.
    let err = stderr_of_failure(carrel_home(data.path()).args(["kb", "token", "notes", "nope"]));
    assert!(err.contains("no library `nope`"), "{err}");
    let kept =
        json(stdout(carrel_home(data.path()).args(["kb", "tokens", "notes", "--json"])).as_bytes());
    assert_eq!(
        kept.as_array().unwrap().len(),
        1,
        "a token was made before the unknown name was found"
    );
}

#[test]
fn ask_with_kb_mentions_reads_those_libraries_and_groups_the_answer_by_owner() {
    let data = two_owners_libraries();
    let q = "@kb:admirers @kb:skeptics who is responsible for the murders in Frankenstein";
    // The library in use was never created: a scoped question does not need it.
    let v = json(
        stdout(carrel_home(data.path()).args(["ask", "--answerer", "extractive", "--json", q]))
            .as_bytes(),
    );
    let route: Vec<(&str, &str)> = v["route"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["kb"].as_str().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(route, [("admirers", "answered"), ("skeptics", "answered")]);
    for p in v["context"].as_array().unwrap() {
        let kb = p["kb"].as_str().unwrap();
        assert!(
            p["source"]
                .as_str()
                .unwrap()
                .contains(&format!("attribution/{kb}/")),
            "{p}"
        );
        let owner = if kb == "admirers" {
            "Ada Moreau"
        } else {
            "Ben Okafor"
        };
        assert_eq!(p["owner"], owner);
    }
    let text = stdout(carrel_home(data.path()).args(["ask", "--answerer", "extractive", q]));
    assert!(text.contains("Asked: admirers ("), "{text}");
    assert!(
        text.contains("From admirers (owner: Ada Moreau):"),
        "{text}"
    );
    assert!(
        text.contains("From skeptics (owner: Ben Okafor):"),
        "{text}"
    );
    let err = stderr_of_failure(carrel_home(data.path()).args(["ask", "@kb:nope what"]));
    assert!(
        err.contains("no library `nope`") && err.contains("`skeptics`"),
        "{err}"
    );
}

/// `carrel match --kb a --kb b --explain`: each library its own route and
/// its own two lanes, never merged; the same through `@kb:` tokens; several
/// `--kb` anywhere else is a sentence, not the first of them.
#[test]
fn match_across_libraries_explains_each_library_apart() {
    let data = two_owners_libraries();
    let q = "Mill's harm principle and free speech";
    let text = stdout(carrel_home(data.path()).args([
        "match",
        "--kb",
        "admirers",
        "--kb",
        "skeptics",
        "--explain",
        q,
    ]));
    let admirers = text.find("LIBRARY `admirers` (Ada Moreau): answered, ");
    let skeptics = text.find("LIBRARY `skeptics` (Ben Okafor): answered, ");
    let (Some(a), Some(b)) = (admirers, skeptics) else {
        panic!("a library's route is missing:\n{text}");
    };
    // Each library's own lanes, and its own explanation, under its route.
    for part in [&text[a..b], &text[b..]] {
        for heading in ["SUBJECT:", "TOPIC:", "EXPLAIN"] {
            assert_eq!(part.matches(heading).count(), 1, "{heading}:\n{part}");
        }
    }
    assert!(text[a..b].contains("the harm principle still protects us"));
    assert!(text[b..].contains("the harm principle is too vague"));

    let v = json_of(carrel_home(data.path()).args([
        "match",
        "--json",
        &format!("@kb:skeptics @kb:admirers {q}"),
    ]));
    assert_eq!(v["query"], q);
    let libraries = v["libraries"].as_array().unwrap();
    let routes: Vec<(&str, &str, &str)> = libraries
        .iter()
        .map(|l| {
            let r = &l["route"];
            (
                r["kb"].as_str().unwrap(),
                r["owner"].as_str().unwrap(),
                r["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("skeptics", "Ben Okafor", "answered"),
            ("admirers", "Ada Moreau", "answered")
        ]
    );
    for l in libraries {
        assert_eq!(l["lanes"]["at"], "here", "{l}");
        assert_eq!(l["lanes"]["view"]["topic"]["state"], "ready", "{l}");
        assert!(l["route"]["ms"].is_number());
    }

    let err = stderr_of_failure(
        carrel_home(data.path()).args(["match", "--kb", "admirers", "--kb", "nope", q]),
    );
    assert!(
        err.contains("no library `nope`") && err.contains("`skeptics`"),
        "{err}"
    );
    let err = stderr_of_failure(
        carrel_home(data.path()).args(["--kb", "admirers", "--kb", "skeptics", "list"]),
    );
    assert!(err.contains("--kb names 2 libraries"), "{err}");
}

#[test]
fn a_library_folder_from_elsewhere_is_put_on_the_shelf_under_its_name_or_a_new_one() {
    let data = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // A library someone else made and named, copied here as a folder.
    let theirs = elsewhere.path().join("theirs");
    carrel(&theirs)
        .args(["add"])
        .arg(fixtures().join("docs/getting-started.txt"))
        .assert()
        .success();
    carrel_home(data.path())
        .args(["kb", "create", "notes"])
        .assert()
        .success();
    let err = stderr_of_failure(
        carrel_home(data.path())
            .args(["kb", "add"])
            .arg(elsewhere.path()),
    );
    assert!(err.contains("no library at"), "{err}");
    // Its name (`default`) is the library in use's: refused until renamed.
    let err = stderr_of_failure(carrel_home(data.path()).args(["kb", "add"]).arg(&theirs));
    assert!(err.contains("already on the shelf"), "{err}");
    let out = stdout(
        carrel_home(data.path())
            .args(["kb", "add"])
            .arg(&theirs)
            .args(["--as", "theirs"]),
    );
    assert!(
        out.contains("added          theirs") && out.contains("1 documents"),
        "{out}"
    );
    let listed = json(
        stdout(carrel_home(data.path()).args(["--kb", "theirs", "list", "--json"])).as_bytes(),
    );
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let err = stderr_of_failure(carrel_home(data.path()).args(["kb", "add"]).arg(&theirs));
    assert!(err.contains("is already on the shelf"), "{err}");
}

/// `carrel --version` names the commit and each model file's fingerprint;
/// installed by a package (`lib/Carrel/models` above its `bin/`), the
/// models there are found first, before CARREL_MODELS, and `doctor` says so.
/// Completions and the man page are printed for a package to install.
#[test]
fn version_names_the_commit_and_models_and_a_package_finds_its_own_models() {
    let out = carrel(std::path::Path::new("/nonexistent"))
        .arg("--version")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with(&format!("carrel {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(text.contains("named by CARREL_MODELS"), "{text}");
    let (embedder, _) = carrel::models::EmbedderKind::MiniLm.pins();
    assert!(
        text.contains(&format!("sha256 {}", &embedder[..12])),
        "the embedder's fingerprint: {text}"
    );

    // A package's layout: bin/carrel beside lib/Carrel/models.
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    let installed = root.path().join(carrel::models::INSTALLED_MODELS);
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(models_dir(), &installed).unwrap();
    let exe = bin.join("carrel");
    std::fs::copy(assert_cmd::cargo::cargo_bin("carrel"), &exe).unwrap();
    let lib = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&exe)
        .args(["doctor", "--json"])
        .env("CARREL_LIBRARY", lib.path())
        .env("CARREL_MODELS", "/nonexistent")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out.stdout);
    assert_eq!(v["models_from"], "installed");
    assert_eq!(v["models_dir"], installed.to_str().unwrap());

    let bash = carrel(lib.path())
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bash.stdout).contains("complete -F _carrel"));
    let man = carrel(lib.path()).arg("manpage").output().unwrap();
    assert!(String::from_utf8_lossy(&man.stdout).contains(".TH carrel 1"));
}

#[test]
fn a_library_is_created_with_its_embedder_and_switched_with_progress() {
    let data = tempfile::tempdir().unwrap();
    let out = stdout(carrel_home(data.path()).args([
        "kb",
        "create",
        "notes",
        "--embedder",
        "multilingual-e5-small",
    ]));
    assert!(out.contains("embedded with multilingual-e5-small"), "{out}");
    carrel_home(data.path())
        .args(["--kb", "notes", "add"])
        .arg(fixtures().join("multilingual"))
        .assert()
        .success();
    let described = |data: &std::path::Path| {
        json(stdout(carrel_home(data).args(["kb", "describe", "notes", "--json"])).as_bytes())
    };
    let v = described(data.path());
    let embedder = v["scorers"]["embedder"]["id"].as_str().unwrap_or_default();
    assert!(embedder.starts_with("multilingual-e5-small@"), "{v}");
    // The shelf lists it apart from the default library, by its embedder.
    let v = json(stdout(carrel_home(data.path()).args(["kb", "list", "--json"])).as_bytes());
    let notes = v
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["identity"]["kb"] == "notes")
        .unwrap();
    assert_eq!(notes["embedder"], "multilingual-e5-small", "{v}");

    let out = stdout(carrel_home(data.path()).args([
        "kb",
        "set",
        "notes",
        "--embedder",
        "all-MiniLM-L6-v2",
    ]));
    assert!(
        out.contains("re-embedded    3 documents of notes with all-MiniLM-L6-v2"),
        "{out}"
    );
    let v = described(data.path());
    let embedder = v["scorers"]["embedder"]["id"].as_str().unwrap_or_default();
    assert!(embedder.starts_with("all-MiniLM-L6-v2@"), "{v}");
    let out = stdout(carrel_home(data.path()).args([
        "kb",
        "set",
        "notes",
        "--embedder",
        "all-MiniLM-L6-v2",
    ]));
    assert!(
        out.contains("already embedded with all-MiniLM-L6-v2"),
        "{out}"
    );
    // An embedder Carrel does not ship is a usage error that lists those it does.
    let out = carrel_home(data.path())
        .args(["kb", "create", "other", "--embedder", "bge-m3"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(
        err.contains("all-MiniLM-L6-v2") && err.contains("multilingual-e5-small"),
        "{err}"
    );
}
