//! The `carrel` command line: a thin shell over [`crate::Library`]. Its
//! command names and JSON fields are a contract (see README.md).
//!
//! One file per subcommand, as cargo's `src/bin/cargo/commands/`: each
//! holds its clap arguments, its `exec`, and its human and `--json` output,
//! so `carrel add` is in `add.rs`. This file holds the global flags, the
//! list of subcommands, the dispatch, and the helpers they share.

mod add;
mod ask;
mod completions;
mod doctor;
mod eval;
mod kb;
mod list;
mod log;
mod matching;
mod mcp;
mod probe;
mod read;
mod rm;
mod serve;
mod source;
mod stats;
mod verify;
mod watch;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::models::ModelConfig;
use crate::{Error, Library, LibraryConfig, Limits};

/// The whole command line: the global flags and one subcommand.
#[derive(Parser)]
#[command(
    name = "carrel",
    version,
    about = "A local-first document library",
    propagate_version = true,
    // The flags every command takes come after each command's own, under
    // their own heading: `carrel source add --help` shows its options first.
    next_help_heading = "Global options"
)]
pub struct Cli {
    /// Library folder [default: $CARREL_LIBRARY, else the platform data dir,
    /// shared with the app]
    #[arg(long, global = true)]
    library: Option<PathBuf>,
    /// The library on the shelf with this name (`carrel kb list`), instead
    /// of --library; `match` and `ask` take several, each asked on its own
    /// as `@kb:NAME` in the question is
    #[arg(long, global = true, conflicts_with = "library")]
    kb: Vec<String>,
    /// A team library on PostgreSQL, named by its server instead of a
    /// folder: postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE (a password
    /// here is used and written nowhere; else PGPASSWORD or ~/.pgpass)
    #[arg(long, global = true, conflicts_with_all = ["library", "kb"])]
    database_url: Option<String>,
    /// Folder with the ONNX Runtime library and the models [default: those
    /// installed with the package, else $CARREL_MODELS, else models/ in the
    /// platform data dir, which `make models` fills]
    #[arg(long, global = true)]
    models: Option<PathBuf>,
    /// Cross-encoder folder for the subject lane (model.onnx + tokenizer
    /// files) [default: Carrel's own, in the models folder]
    #[arg(long, env = "CARREL_RERANKER", global = true)]
    reranker: Option<PathBuf>,
    /// ONNX intra-op threads per embedding worker
    #[arg(long, env = "CARREL_THREADS", global = true, default_value_t = crate::models::DEFAULT_THREADS)]
    threads: usize,
    /// Embedding workers, each its own ONNX session [default: every core but
    /// one, at least 1]
    #[arg(long, short = 'j', env = "CARREL_JOBS", global = true)]
    jobs: Option<usize>,
    /// Resident memory the embedding workers may take together, in MB; fewer
    /// workers start when they would not fit
    #[arg(long, env = "CARREL_WORKER_MEMORY_MB", global = true, default_value_t = crate::models::pool::DEFAULT_WORKER_MEMORY_MB)]
    worker_memory_mb: u64,
    /// Seconds one file may take to extract before it is listed as broken
    #[arg(long, env = "CARREL_EXTRACT_TIMEOUT", global = true, default_value_t = crate::extract::worker::DEFAULT_TIMEOUT.as_secs())]
    extract_timeout: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Add files, folders (recursively) or URLs
    Add(add::Args),
    /// List documents with their state
    List(list::Args),
    /// Print a document's text (or its card)
    Read(read::Args),
    /// Predict the chunks of a file, with the same planner the writer uses
    Probe(probe::Args),
    /// Library statistics
    Stats(stats::Args),
    /// Remove a document (its content goes when no other document shares it)
    Rm(rm::Args),
    /// Ask both lanes: what is this ABOUT (subject) and what DISCUSSES it (topic)
    Match(matching::Args),
    /// Answer a question from the library, every statement cited and checked.
    /// Mention documents with @doc:ID or @doc:name; without a mention the
    /// lanes pick the passages
    Ask(ask::Args),
    /// Is this line in the library, word for word? Where, or the closest
    /// passage (exit 1 when it is not)
    Verify(verify::Args),
    /// Watched folders and URLs, kept in sync
    Watch(watch::Args),
    /// Score both lanes and an FTS5 BM25 baseline on labelled data (BEIR layout)
    Eval(eval::Args),
    /// The retrieval log: every lane decision with the scorer that produced it
    Log(log::Args),
    /// Serve libraries to agents over MCP (stdio), read only
    Mcp(mcp::Args),
    /// Share libraries over MCP's streamable HTTP transport, each read only
    /// and only with a read token (`carrel kb token`)
    Serve(serve::Args),
    /// Check the runtime, models, fingerprints and library
    Doctor(doctor::Args),
    /// The libraries on this machine's shelf: list, create, rename, describe, forget
    Kb(kb::Args),
    /// Foreign sources: someone else's vector collection (Chroma), asked
    /// beside the library behind six gates and admitted only on the
    /// cross-encoder's scale
    Source(source::Args),
    /// Print the completion script for a shell (bash, zsh, fish, ...)
    Completions(completions::Args),
    /// Print the man page, carrel(1), in roff
    #[command(hide = true)]
    Manpage,
}

impl Cli {
    /// Parses this process's command line. `--version` prints the version,
    /// the commit and the fingerprints of the model files found by default
    /// (hashed only when asked for).
    pub fn from_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches};

        let mut command = Cli::command();
        if std::env::args().any(|a| a == "--version") {
            let models = ModelConfig::located()
                .map(|m| crate::provenance::Provenance::of(&m).describe())
                .unwrap_or_else(|e| {
                    format!(
                        "{} (commit {})
models  {e}",
                        crate::provenance::VERSION,
                        crate::provenance::COMMIT
                    )
                });
            command = command.long_version(Box::leak(models.into_boxed_str()) as &'static str);
        }
        Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
    }
}

/// Runs the subcommand `cli` names; the exit code says whether it did what
/// was asked (a failed file in `add`, a broken document in `read`, ...).
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match &cli.command {
        Command::Add(args) => add::exec(&cli, args),
        Command::List(args) => list::exec(&cli, args),
        Command::Read(args) => read::exec(&cli, args),
        Command::Probe(args) => probe::exec(&cli, args),
        Command::Stats(args) => stats::exec(&cli, args),
        Command::Rm(args) => rm::exec(&cli, args),
        Command::Watch(args) => watch::exec(&cli, args),
        Command::Ask(args) => ask::exec(&cli, args),
        Command::Verify(args) => verify::exec(&cli, args),
        Command::Match(args) => matching::exec(&cli, args),
        Command::Eval(args) => eval::exec(&cli, args),
        Command::Log(args) => log::exec(&cli, args),
        Command::Mcp(args) => mcp::exec(&cli, args),
        Command::Serve(args) => serve::exec(&cli, args),
        Command::Doctor(args) => doctor::exec(&cli, args),
        Command::Kb(args) => kb::exec(&cli, args),
        Command::Source(args) => source::exec(&cli, args),
        Command::Completions(args) => completions::exec(args),
        Command::Manpage => completions::manpage(),
    }
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
    config_of(cli, one_kb(cli)?, limits)
}

/// The config of the library `kb` names on the shelf, else of the library
/// in use (or --library).
fn config_of(cli: &Cli, kb: Option<&str>, limits: Limits) -> Result<LibraryConfig, Error> {
    let (mut dir, _) = crate::library_dir(library_flag(cli)?.as_deref(), None)?;
    if let Some(kb) = kb {
        dir = crate::library::shelf::Shelf::load(&crate::library::shelf::shelf_path()?)?
            .survey(&dir)
            .find(kb)?;
    }
    let mut config = LibraryConfig::new(dir, models(cli)?);
    config.limits = Limits {
        isolation: isolation(cli),
        ..limits
    };
    Ok(config)
}

/// The library folder the flags name: --library's, or the one Carrel
/// keeps for the server --database-url names; none when neither is given.
fn library_flag(cli: &Cli) -> Result<Option<PathBuf>, Error> {
    match &cli.database_url {
        Some(url) => Ok(Some(crate::store::Store::dir_for_url(url)?)),
        None => Ok(cli.library.clone()),
    }
}

/// The one library `--kb` names, if any; several is an error for every
/// command but those that take them as `@kb:` tokens ([`with_kbs`]).
fn one_kb(cli: &Cli) -> Result<Option<&str>, Error> {
    match cli.kb.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        several => Err(Error::SeveralKbs(several.len())),
    }
}

/// For `match` and `ask`: several `--kb` become the question's `@kb:`
/// tokens, so the engine's one grammar reads them, and the library in use
/// is the home the named libraries are opened from. One `--kb`, or none,
/// leaves both as they are.
fn with_kbs(cli: &Cli, message: &str) -> Result<(LibraryConfig, String), Error> {
    if cli.kb.len() < 2 {
        return Ok((config(cli, Limits::default())?, message.to_string()));
    }
    let config = config_of(cli, None, Limits::default())?;
    let tokens: Vec<String> = cli.kb.iter().map(|kb| format!("@kb:{kb}")).collect();
    Ok((config, format!("{} {message}", tokens.join(" "))))
}

/// The extraction worker's limits the flags and environment ask for.
fn isolation(cli: &Cli) -> crate::extract::worker::Isolation {
    crate::extract::worker::Isolation {
        timeout: std::time::Duration::from_secs(cli.extract_timeout.max(1)),
        ..Default::default()
    }
}

/// The models folder and thread count the flags and environment ask for.
fn models(cli: &Cli) -> Result<ModelConfig, Error> {
    let mut models = match &cli.models {
        Some(d) => ModelConfig::new(d.clone()),
        None => ModelConfig::located()?,
    };
    models.threads = cli.threads;
    models.jobs = cli.jobs.unwrap_or(models.jobs).max(1);
    models.worker_memory_mb = cli.worker_memory_mb;
    models.reranker = cli.reranker.clone();
    Ok(models)
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len}  {msg}")
                .expect("valid template")
                .progress_chars("█▉ "),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}

/// Ingest progress on the bar: files done of total, the rates and time
/// left the engine measured, failures, and the current file.
fn show_progress(bar: &ProgressBar, p: &crate::Progress) {
    bar.set_length(p.total as u64);
    bar.set_position(p.done as u64);
    let name = p.current.rsplit('/').next().unwrap_or("");
    let mut msg = String::new();
    if p.done > 0 {
        msg.push_str(&format!(
            "{:.1} docs/s, {:.0} chunks/s",
            p.docs_per_s, p.chunks_per_s
        ));
    }
    if let Some(eta) = p.eta_s.filter(|_| p.done < p.total) {
        msg.push_str(&format!(", {} left", duration(eta)));
    }
    if p.failed > 0 {
        msg.push_str(&format!("  {} failed", p.failed));
    }
    msg.push_str("  ");
    msg.push_str(name);
    bar.set_message(msg.trim_start().to_string());
}

/// Seconds as people read them: `42 s`, `3 min 5 s`, `1 h 12 min`.
fn duration(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// What a folder scan did not take, for people: each entry while there are
/// few, else the first few and a count by reason. Every skipped entry is
/// in `--json`.
fn skipped_lines(skipped: &[crate::ingest::Skipped]) -> Vec<String> {
    const LISTED: usize = 10;
    let each = |s: &crate::ingest::Skipped| format!("skipped        {}: {}", s.source, s.reason);
    if skipped.len() <= LISTED {
        return skipped.iter().map(each).collect();
    }
    let mut lines: Vec<String> = skipped[..LISTED / 2].iter().map(each).collect();
    let mut by_reason: Vec<(&str, usize)> = Vec::new();
    for s in skipped {
        match by_reason.iter_mut().find(|(r, _)| *r == s.reason) {
            Some((_, n)) => *n += 1,
            None => by_reason.push((&s.reason, 1)),
        }
    }
    by_reason.sort_by_key(|r| std::cmp::Reverse(r.1));
    lines.push(format!(
        "skipped        … {} in all (every one is in --json), by reason:",
        skipped.len()
    ));
    lines.extend(by_reason.iter().map(|(r, n)| format!("{n:>14}  {r}")));
    lines
}

/// The first Ctrl-C (or SIGTERM) sets `flag`, for the command to stop at
/// its next safe point; a second one ends the process at once (exit 130).
fn stop_on_signals(flag: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> Result<(), Error> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())
            .and_then(|_| signal_hook::flag::register(sig, flag.clone()))
            .map_err(|e| Error::Signals(e.to_string()))?;
    }
    Ok(())
}

fn print_json<T: Serialize>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("serialisable")
    );
}

/// `--json`, declared once: every command that prints takes it with
/// `#[command(flatten)]`.
#[derive(clap::Args, Clone, Copy)]
pub struct Output {
    /// Print JSON instead of lines for people: the whole result once it is
    /// done, its fields a contract (docs/cli.md)
    #[arg(long)]
    pub json: bool,
}

impl Output {
    /// Prints `value` as JSON when `--json` was given, and says so; the
    /// caller prints for people otherwise.
    pub fn json<T: Serialize>(self, value: &T) -> bool {
        if self.json {
            print_json(value);
        }
        self.json
    }
}

/// How long ago a unix time was, for the `SYNCED` columns of `list` and
/// `watch list`.
fn ago(t: i64) -> String {
    let s = (crate::store::now() - t).max(0);
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..86400 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86400),
    }
}
