//! The `carrel` command line: a thin shell over [`carrel::Library`]. Its
//! command names and JSON fields are a contract (see README.md).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use carrel::answer::{Answerer, Check, Found, Outcome};
use carrel::chunk::Mode;
use carrel::lanes::Detail;
use carrel::models::ModelConfig;
use carrel::{Error, Library, LibraryConfig, Limits};

#[derive(Parser)]
#[command(
    name = "carrel",
    version,
    about = "A local-first document library",
    propagate_version = true
)]
struct Cli {
    /// Library folder [default: $CARREL_LIBRARY, else the platform data dir,
    /// shared with the app]
    #[arg(long, global = true)]
    library: Option<PathBuf>,
    /// Folder with the ONNX Runtime library and the models (`make models` fills it)
    #[arg(long, env = "CARREL_MODELS", global = true)]
    models: Option<PathBuf>,
    /// Cross-encoder folder for the subject lane (model.onnx + tokenizer
    /// files) [default: Carrel's own, in the models folder]
    #[arg(long, env = "CARREL_RERANKER", global = true)]
    reranker: Option<PathBuf>,
    /// ONNX intra-op threads for embedding
    #[arg(long, env = "CARREL_THREADS", global = true, default_value_t = carrel::models::DEFAULT_THREADS)]
    threads: usize,
    /// Seconds one file may take to extract before it is listed as broken
    #[arg(long, env = "CARREL_EXTRACT_TIMEOUT", global = true, default_value_t = carrel::extract::worker::DEFAULT_TIMEOUT.as_secs())]
    extract_timeout: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum WatchCommand {
    /// Watch a folder (recursively) or an http(s) URL; syncs it once now
    Add {
        #[arg(value_name = "DIR_OR_URL")]
        target: String,
        /// Seconds between full syncs (URL re-fetch; folders also sync on file events)
        #[arg(long, default_value_t = carrel::watch::DEFAULT_INTERVAL_S)]
        interval: u64,
        /// Only files matching these gitignore-style patterns (repeatable)
        #[arg(long)]
        include: Vec<String>,
        /// Leave out files matching these gitignore-style patterns (repeatable)
        #[arg(long)]
        exclude: Vec<String>,
        /// Allow a URL on a loopback, private or link-local address
        #[arg(long)]
        allow_private: bool,
    },
    /// List watches with when they last synced and how
    List {
        #[arg(long)]
        json: bool,
    },
    /// Stop watching (the documents stay in the library)
    Rm { id: i64 },
    /// Keep every watch in sync until interrupted (Ctrl-C or SIGTERM)
    Run,
}

#[derive(Subcommand)]
enum Command {
    /// Add files, folders (recursively) or URLs
    Add {
        #[arg(required = true, value_name = "PATH_OR_URL")]
        inputs: Vec<String>,
        /// Allow URLs on loopback, private and link-local addresses
        #[arg(long)]
        allow_private: bool,
        #[arg(long)]
        json: bool,
    },
    /// List documents with their state
    List {
        #[arg(long)]
        json: bool,
    },
    /// Print a document's text (or its card)
    Read {
        id: i64,
        #[arg(long)]
        card: bool,
        #[arg(long)]
        json: bool,
    },
    /// Predict the chunks of a file, with the same planner the writer uses
    Probe {
        file: PathBuf,
        #[arg(long, default_value = "document")]
        mode: Mode,
        #[arg(long)]
        json: bool,
    },
    /// Library statistics
    Stats {
        /// Chunks and average chunk size per document
        #[arg(long, required = true)]
        density: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove a document (its content goes when no other document shares it)
    Rm { id: i64 },
    /// Ask both lanes: what is this ABOUT (subject) and what DISCUSSES it (topic)
    Match {
        query: String,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        /// Show every candidate with its scores, scorer and decision
        #[arg(long)]
        explain: bool,
        #[arg(long)]
        json: bool,
    },
    /// Answer a question from the library, every statement cited and checked.
    /// Mention documents with @doc:ID or @doc:name; without a mention the
    /// lanes pick the passages
    Ask {
        message: String,
        /// An OpenAI-compatible server (Ollama, llama.cpp, LM Studio), e.g.
        /// http://localhost:11434/v1 [default: the extractive answerer, no LLM]
        #[arg(long, env = "CARREL_LLM_URL", requires = "llm_model")]
        llm_url: Option<String>,
        /// The model name that server should use
        #[arg(long, env = "CARREL_LLM_MODEL")]
        llm_model: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Watched folders and URLs, kept in sync
    Watch {
        #[command(subcommand)]
        command: WatchCommand,
    },
    /// Score both lanes and an FTS5 BM25 baseline on labelled data (BEIR layout)
    Eval {
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// The retrieval log: every lane decision with the scorer that produced it
    Log {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// Serve the library to agents over MCP (stdio), read only
    Mcp,
    /// Check the runtime, models, fingerprints and library
    Doctor {
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // Extraction runs in this binary re-executed as a worker process.
    carrel::extract::worker::serve_if_asked();
    // Named fault points (`FAILPOINTS=ingest::after_commit=2*off->return`),
    // used by the crash test; inert when the variable is unset.
    let _faults = fail::FailScenario::setup();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CARREL_LOG")
                .unwrap_or_else(|_| "warn,lopdf=error,pdf_extract=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    quiet_extractor_panics();
    // `carrel list | head` should stop quietly, as other Unix tools do.
    // SAFETY: restoring the default disposition of SIGPIPE before any I/O.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Panics inside third-party extractors are caught and listed as a broken
/// reason; they should not also spray a backtrace over the terminal. Any
/// other panic is still reported.
fn quiet_extractor_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if carrel::extract::in_extractor() {
            tracing::debug!(%info, "extractor panicked (caught)");
        } else {
            default(info);
        }
    }));
}

/// Opens the library that is there: a folder that holds none is an error, so
/// a mistyped `--library` never reads as an empty library.
fn open(cli: &Cli) -> Result<Library, Error> {
    Library::open_existing(config(cli, Limits::default())?)
}

/// Opens the library, creating it if needed: only `add` and `watch add`.
fn create(cli: &Cli, limits: Limits) -> Result<Library, Error> {
    Library::open(config(cli, limits)?)
}

fn config(cli: &Cli, limits: Limits) -> Result<LibraryConfig, Error> {
    let (dir, _) = carrel::library_dir(cli.library.as_deref(), None)?;
    let mut config = LibraryConfig::new(dir, models(cli)?);
    config.limits = Limits {
        isolation: isolation(cli),
        ..limits
    };
    Ok(config)
}

/// The extraction worker's limits the flags and environment ask for.
fn isolation(cli: &Cli) -> carrel::extract::worker::Isolation {
    carrel::extract::worker::Isolation {
        timeout: std::time::Duration::from_secs(cli.extract_timeout.max(1)),
        ..Default::default()
    }
}

/// The models folder and thread count the flags and environment ask for.
fn models(cli: &Cli) -> Result<ModelConfig, Error> {
    let mut models = ModelConfig::new(match &cli.models {
        Some(d) => d.clone(),
        None => ModelConfig::default_dir()?,
    });
    models.threads = cli.threads;
    models.reranker = cli.reranker.clone();
    Ok(models)
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} {pos}/{len}, eta {eta}  {msg}",
            )
            .expect("valid template")
            .progress_chars("█▉ "),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}

/// Ingest progress on the bar: files done of total, failures, current file.
fn show_progress(bar: &ProgressBar, p: &carrel::Progress) {
    bar.set_length(p.total as u64);
    bar.set_position(p.done as u64);
    let name = p.current.rsplit('/').next().unwrap_or("");
    bar.set_message(if p.failed > 0 {
        format!("{} failed  {name}", p.failed)
    } else {
        name.to_string()
    });
}

fn print_json<T: Serialize>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("serialisable")
    );
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    match &cli.command {
        Command::Add {
            inputs,
            allow_private,
            json,
        } => {
            let limits = Limits {
                allow_private_urls: *allow_private,
                ..Limits::default()
            };
            let mut lib = create(&cli, limits)?;
            let bar = progress_bar();
            let report = lib.add(inputs, &mut |p| show_progress(&bar, p))?;
            bar.finish_and_clear();
            if *json {
                print_json(&report);
            } else {
                for d in &report.documents {
                    println!("added   {:>5}  {}  ({} chunks)", d.id, d.title, d.chunks);
                }
                for f in &report.failed {
                    println!("failed         {}: {}", f.source, f.reason);
                }
                println!(
                    "{} added, {} unchanged, {} failed",
                    report.added,
                    report.unchanged,
                    report.failed.len()
                );
            }
            Ok(if report.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::List { json } => {
            let docs = open(&cli)?.list()?;
            if *json {
                print_json(&docs);
            } else if docs.is_empty() {
                println!("The library is empty. Add documents with `carrel add PATH_OR_FOLDER`.");
            } else {
                println!(
                    "{:>5}  {:<8} {:<8} {:>9} {:>6}  {:<15} TITLE",
                    "ID", "STATE", "KIND", "BYTES", "CHUNKS", "SYNCED"
                );
                for d in &docs {
                    let synced = if d.source_missing {
                        "source missing".to_string()
                    } else {
                        ago(d.synced_at)
                    };
                    println!(
                        "{:>5}  {:<8} {:<8} {:>9} {:>6}  {:<15} {}",
                        d.id,
                        d.state,
                        d.kind.as_deref().unwrap_or("-"),
                        d.bytes,
                        d.chunks,
                        synced,
                        d.title
                    );
                    if let Some(reason) = &d.broken_reason {
                        println!("{:>7}{} — {}", "", d.source, reason);
                    }
                    if let Some(t) = d.truncated_at_chunk {
                        println!("{:>7}truncated at chunk {t}", "");
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Read { id, card, json } => {
            let doc = open(&cli)?.read(*id)?;
            if *card {
                let Some(c) = &doc.card else {
                    return Err(Error::Corrupt(format!(
                        "document {id} has no card: {}",
                        doc.document
                            .broken_reason
                            .as_deref()
                            .unwrap_or("it is not indexed")
                    )));
                };
                if *json {
                    print_json(c);
                } else {
                    println!("{}", c.text());
                }
            } else if *json {
                print_json(&doc);
            } else {
                if let Some(reason) = &doc.document.broken_reason {
                    eprintln!("error: document {id} is broken: {reason}");
                    return Ok(ExitCode::FAILURE);
                }
                println!("# {}\n", doc.document.title);
                let mut last: Option<&Vec<String>> = None;
                for s in &doc.sections {
                    if last != Some(&s.heading_path) && !s.heading_path.is_empty() {
                        println!(
                            "{} {}\n",
                            "#".repeat(s.heading_path.len().min(5) + 1),
                            s.heading_path.join(" > ")
                        );
                    }
                    if let Some(p) = s.page {
                        println!("[page {p}]");
                    }
                    println!("{}\n", s.text);
                    last = Some(&s.heading_path);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Probe { file, mode, json } => {
            let limits = Limits {
                isolation: isolation(&cli),
                ..Limits::default()
            };
            match carrel::probe(file, *mode, &limits)? {
                Ok(p) => {
                    if *json {
                        print_json(&p);
                    } else {
                        println!(
                            "{} chunks, {:.0} chars on average ({} mode, {} chars in all)",
                            p.chunks,
                            p.avg_chars,
                            match p.mode {
                                Mode::Document => "document",
                                Mode::Memory => "memory",
                            },
                            p.chars
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(reason) => {
                    eprintln!("error: {}: {reason}", file.display());
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Command::Stats { density: _, json } => {
            let rows = open(&cli)?.density()?;
            if *json {
                print_json(&rows);
            } else {
                println!(
                    "{:>5} {:>7} {:>9} {:>9}  TITLE",
                    "ID", "CHUNKS", "CHARS", "AVG"
                );
                for r in &rows {
                    println!(
                        "{:>5} {:>7} {:>9} {:>9.0}  {}",
                        r.id, r.chunks, r.chars, r.avg_chunk, r.title
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Rm { id } => {
            let mut lib = open(&cli)?;
            let title = lib.document(*id)?.title;
            lib.remove(*id)?;
            println!("removed {id}  {title}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Watch { command } => watch(&cli, command),
        Command::Ask {
            message,
            llm_url,
            llm_model,
            json,
        } => {
            let answerer = match (llm_url, llm_model) {
                (Some(url), Some(model)) => Answerer::llm(url, model),
                _ => Answerer::Extractive,
            };
            let answer = open(&cli)?.ask(message, &answerer)?;
            if *json {
                print_json(&answer);
            } else {
                print_answer(&answer);
            }
            Ok(match answer.outcome {
                Outcome::Failed { .. } => ExitCode::FAILURE,
                _ => ExitCode::SUCCESS,
            })
        }
        Command::Match {
            query,
            top_k,
            explain,
            json,
        } => {
            let response = open(&cli)?.match_query(query, *top_k)?;
            if *json {
                let detail = if *explain {
                    Detail::Explain
                } else {
                    Detail::Hits
                };
                print_json(&response.view(detail));
            } else {
                print_match(&response, *explain);
            }
            let looked = |state: &str| state == "ready" || state == "weak";
            Ok(
                if looked(response.subject.state()) || looked(response.topic.state()) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                },
            )
        }
        Command::Eval { dir, json } => {
            let scratch = carrel::eval::scratch_dir()?;
            let bar = progress_bar();
            let result = carrel::eval::run(
                dir,
                LibraryConfig::new(scratch.clone(), models(&cli)?),
                &mut |p| {
                    bar.set_length(p.total as u64);
                    bar.set_position(p.done as u64);
                    bar.set_message(p.current.rsplit('/').next().unwrap_or("").to_string());
                },
            );
            bar.finish_and_clear();
            let _ = std::fs::remove_dir_all(&scratch);
            let report = result?;
            if *json {
                print_json(&report);
            } else {
                println!(
                    "{}: {} documents ({} broken), {} queries ({} with qrels, {} noise)",
                    report.dataset,
                    report.documents,
                    report.broken_documents,
                    report.queries,
                    report.relevant_queries,
                    report.noise_queries
                );
                println!("| lane | nDCG@10 | Recall@10 | MRR@10 | P@1 | noise leaks |");
                println!("|---|---:|---:|---:|---:|---:|");
                for (name, m) in [
                    ("subject", &report.subject),
                    ("subject, cosine order only", &report.subject_cosine),
                    ("topic", &report.topic),
                    ("bm25 (FTS5)", &report.bm25),
                ] {
                    println!(
                        "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
                        m.ndcg_at_10, m.recall_at_10, m.mrr_at_10, m.p_at_1, m.noise_leaks
                    );
                }
                println!("subject states: {:?}", report.subject_states);
                println!("topic states:   {:?}", report.topic_states);
                let l = &report.latency;
                println!(
                    "latency: cold first query {:.0} ms; warm p50/p95 embed {:.1}/{:.1} ms, subject {:.1}/{:.1} ms, topic {:.1}/{:.1} ms, bm25 {:.1}/{:.1} ms",
                    l.cold_first_query_ms,
                    l.embed_p50_ms,
                    l.embed_p95_ms,
                    l.subject_p50_ms,
                    l.subject_p95_ms,
                    l.topic_p50_ms,
                    l.topic_p95_ms,
                    l.bm25_p50_ms,
                    l.bm25_p95_ms
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Log { limit, json } => {
            let entries = open(&cli)?.log(*limit)?;
            if *json {
                print_json(&entries);
            } else if entries.is_empty() {
                println!("The retrieval log is empty. Run `carrel match \"…\"` first.");
            } else {
                println!(
                    "{:<8} {:>5} {:>8} {:<13} {:<20} {:<50}  QUERY",
                    "LANE", "DOC", "SCORE", "SCALE", "DECISION", "SCORER"
                );
                for e in &entries {
                    println!(
                        "{:<8} {:>5} {:>8.3} {:<13} {:<20} {:<50}  {}",
                        e.lane,
                        e.doc,
                        e.score.get(),
                        e.score.scale(),
                        e.decision,
                        e.scorer,
                        e.query
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp => {
            carrel::mcp::serve_stdio(open(&cli)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor { json } => {
            // The doctor examines the library where it would be, and makes
            // an empty one there if there is none, to check the schema.
            let d = create(&cli, Limits::default())?.doctor()?;
            let sound = d.integrity == "ok" && d.orphans.iter().all(|(_, n)| *n == 0);
            let healthy = d.runtime.is_ok() && d.embedder.is_ok() && d.reranker.is_ok() && sound;
            if *json {
                print_json(&d);
            } else {
                let show = |c: &carrel::Check| match c {
                    carrel::Check::Ok { detail } => format!("ok      {detail}"),
                    carrel::Check::Failed { error } => format!("FAILED  {error}"),
                };
                println!("library       {}", d.library.display());
                println!(
                    "schema        v{}   sqlite-vec {}",
                    d.schema_version, d.sqlite_vec
                );
                println!("models dir    {}", d.models_dir.display());
                println!("runtime       {}", show(&d.runtime));
                println!("embedder      {}", show(&d.embedder));
                println!("reranker      {}", show(&d.reranker));
                if let Some(f) = &d.fingerprints {
                    println!("fingerprints  {}  {}", f.chunk, f.card);
                }
                println!(
                    "contents      {} documents, {} bodies, {} chunks, {} chunk vectors",
                    d.documents, d.contents, d.chunks, d.chunk_vectors
                );
                let orphans: Vec<String> = d
                    .orphans
                    .iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(what, n)| format!("{n} {what}"))
                    .collect();
                if sound {
                    println!("database      ok      integrity check passed, no orphan rows");
                } else {
                    println!(
                        "database      FAILED  integrity: {}; orphans: {}",
                        d.integrity,
                        if orphans.is_empty() {
                            "none".into()
                        } else {
                            orphans.join(", ")
                        }
                    );
                }
            }
            Ok(if healthy {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

fn ago(t: i64) -> String {
    let s = (carrel::store::now() - t).max(0);
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..86400 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86400),
    }
}

fn print_sync(r: &carrel::watch::SyncReport) {
    let mut line = format!(
        "synced {}: {} added, {} unchanged, {} renamed, {} removed, {} failed",
        r.target,
        r.added,
        r.unchanged,
        r.renamed,
        r.removed,
        r.failed.len()
    );
    if let Some(e) = &r.error {
        line.push_str(&format!(" ({e})"));
    }
    eprintln!("{line}");
    for f in &r.failed {
        eprintln!("  failed: {}: {}", f.source, f.reason);
    }
}

fn watch(cli: &Cli, command: &WatchCommand) -> Result<ExitCode, Error> {
    match command {
        WatchCommand::Add {
            target,
            interval,
            include,
            exclude,
            allow_private,
        } => {
            let w = carrel::watch::new_watch(
                target,
                *interval,
                include.clone(),
                exclude.clone(),
                *allow_private,
            )?;
            let mut lib = create(cli, Limits::default())?;
            let bar = progress_bar();
            let added = carrel::watch::add(&mut lib, &w, &mut |p| show_progress(&bar, p))?;
            bar.finish_and_clear();
            println!(
                "{} watch {}: {}",
                if added.created {
                    "added"
                } else {
                    "already there:"
                },
                added.watch.id,
                added.watch.target
            );
            let r = added.sync;
            print_sync(&r);
            Ok(if r.error.is_some() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        WatchCommand::List { json } => {
            let watches = open(cli)?.watches()?;
            if *json {
                print_json(&watches);
            } else if watches.is_empty() {
                println!("No watches. Add one with `carrel watch add DIR_OR_URL`.");
            } else {
                println!(
                    "{:>4}  {:<6} {:>8}  {:<22} TARGET",
                    "ID", "KIND", "INTERVAL", "SYNCED"
                );
                for w in &watches {
                    let synced = match (&w.synced_at, &w.last_error) {
                        (None, _) => "never".to_string(),
                        (Some(t), None) => ago(*t),
                        (Some(t), Some(e)) => format!("{}, FAILED: {e}", ago(*t)),
                    };
                    let kind = match w.kind {
                        carrel::store::WatchKind::Folder => "folder",
                        carrel::store::WatchKind::Url => "url",
                    };
                    println!(
                        "{:>4}  {:<6} {:>7}s  {:<22} {}",
                        w.id, kind, w.interval_s, synced, w.target
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        WatchCommand::Rm { id } => {
            open(cli)?.remove_watch(*id)?;
            println!("stopped watching {id} (its documents stay; `carrel rm` removes them)");
            Ok(ExitCode::SUCCESS)
        }
        WatchCommand::Run => {
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())
                    .map_err(|e| Error::Watch(format!("cannot handle signals: {e}")))?;
            }
            let mut lib = open(cli)?;
            if lib.watches()?.is_empty() {
                eprintln!(
                    "No watches yet; `carrel watch add DIR_OR_URL` adds one (picked up while this runs)."
                );
            }
            eprintln!("watching; Ctrl-C stops");
            // Nothing else in this process syncs: the gate is never contended.
            carrel::watch::run(&mut lib, &stop, &Mutex::new(()), &mut print_sync)?;
            eprintln!("stopped");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_answer(a: &carrel::answer::Answer) {
    for note in &a.notes {
        println!("note: {note}");
    }
    match &a.outcome {
        Outcome::NoContext { reason } => println!("No answer: {reason}."),
        Outcome::Failed { reason } => println!("FAILED ({}): {reason}", a.answerer),
        Outcome::Answered { statements, check } => {
            println!(
                "Answer ({}, from {} passage{}):",
                a.answerer,
                a.context.len(),
                if a.context.len() == 1 { "" } else { "s" }
            );
            for s in statements {
                let marks: String = s.citations.iter().map(|n| format!("[{n}]")).collect();
                let flag = match &s.check {
                    Check::Verified => String::new(),
                    Check::Supported { overlap_pct } => {
                        format!("   (supported: {overlap_pct}% of its words are in the passage)")
                    }
                    Check::Cited => "   (cited; nothing in it to check against the passage)".into(),
                    Check::Unsupported { overlap_pct } => format!(
                        "   <- UNSUPPORTED: only {overlap_pct}% of its words are in the passage it cites"
                    ),
                    Check::Uncited => "   <- UNCITED".into(),
                    Check::Invalid { problems } => {
                        format!("   <- INVALID: {}", problems.join("; "))
                    }
                };
                println!("  {} {marks}{flag}", s.text.replace('\n', "\n    "));
            }
            println!("Sources:");
            let cited: std::collections::BTreeSet<usize> = statements
                .iter()
                .flat_map(|s| s.citations.iter().copied())
                .collect();
            for p in a.context.iter().filter(|p| cited.contains(&p.n)) {
                // The outermost heading is usually the title itself.
                let path = match p.heading_path.split_first() {
                    Some((first, rest)) if *first == p.title => rest,
                    _ => &p.heading_path[..],
                };
                let place: String = path.iter().map(|h| format!(" › {h}")).collect();
                let page = p.page.map(|n| format!(", page {n}")).unwrap_or_default();
                let by = match &p.found {
                    Found::Mention { token } => format!("mentioned as {token}"),
                    Found::SubjectLane => "found by the subject lane".into(),
                    Found::TopicLane => "found by the topic lane".into(),
                };
                println!(
                    "  [{}] {}{place} (doc {}, chunk {}{page}; {by}) {}",
                    p.n, p.title, p.doc, p.chunk, p.source
                );
            }
            println!(
                "Check: of {} statements, {} verified (quoted verbatim), {} supported (their words are in the passage), \
                 {} only cited, {} unsupported, {} uncited, {} with invalid citations.",
                check.statements,
                check.verified,
                check.supported,
                check.cited,
                check.unsupported,
                check.uncited,
                check.invalid
            );
        }
    }
}

fn print_match(r: &carrel::lanes::MatchResponse, explain: bool) {
    println!(
        "SUBJECT: is a document what \"{}\" is ABOUT?  [{}]",
        r.query,
        r.subject.state()
    );
    if let Some(reason) = r.subject.reason() {
        println!("  {reason}");
    }
    for h in r.subject.hits() {
        let rerank = h
            .rerank
            .map(|l| format!("  rerank {:.2}", l.get()))
            .unwrap_or_default();
        println!(
            "  {:>5}  cosine {:.3}{rerank}  {}  [{}]",
            h.doc,
            h.cosine.get(),
            h.title,
            h.scorer
        );
        if !h.why.is_empty() {
            println!("         {}", h.why);
        }
    }
    if r.subject.reason().is_none() && r.subject.hits().is_empty() {
        println!("  no document is about this");
    }
    println!();
    println!(
        "TOPIC: which documents DISCUSS it?  [{}]  ({} vetoed by headings)",
        r.topic.state(),
        r.explain.vetoed
    );
    if let Some(reason) = r.topic.reason() {
        println!("  {reason}");
    }
    for h in r.topic.hits() {
        let page = h.page.map(|p| format!(" p.{p}")).unwrap_or_default();
        let mut place = h.heading_path.clone();
        if place.first() != Some(&h.title) {
            place.insert(0, h.title.clone());
        }
        println!(
            "  {:>5}  cosine {:.3}  {}{page}",
            h.doc,
            h.cosine.get(),
            place.join(" > ")
        );
        let passage: String = h.passage.chars().take(160).collect();
        println!("         {}", passage.replace('\n', " "));
    }
    if r.topic.reason().is_none() && r.topic.hits().is_empty() {
        println!("  no passage discusses this");
    }
    if explain {
        let e = &r.explain;
        println!();
        println!(
            "EXPLAIN  embed {:.1} ms, subject {:.1} ms, topic {:.1} ms; cross-encoder {}",
            e.embed_ms,
            e.subject_ms,
            e.topic_ms,
            if e.reranker_skipped_by_gate {
                "skipped: no card reached the cosine floor"
            } else {
                "needed for eligible cards"
            }
        );
        for (lane, cands) in [("subject", &e.subject), ("topic", &e.topic)] {
            for c in cands.iter() {
                let rerank = c
                    .rerank
                    .map(|l| format!("{:.2}", l.get()))
                    .unwrap_or_else(|| "-".into());
                let path = c
                    .heading_path
                    .as_ref()
                    .map(|p| p.join(" > "))
                    .unwrap_or_default();
                println!(
                    "  {lane:<8} {:>5} cosine {:.3} rerank {rerank:>6}  {:<22} {} {path}",
                    c.doc,
                    c.cosine.get(),
                    c.decision.as_str(),
                    c.title
                );
            }
        }
    }
}
