//! `carrel watch`: watched folders and URLs, kept in sync. Its own
//! subcommands (`add`, `list`, `rm`, `run`) are here too.

use std::process::ExitCode;
use std::sync::Mutex;

use super::{Cli, Output, ago, create, open, progress_bar, show_progress};
use crate::{Error, Limits};

/// The arguments of `carrel watch`: one of its subcommands.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Watch a folder (recursively) or an http(s) URL; syncs it once now
    Add(AddArgs),
    /// List watches with when they last synced and how
    List {
        #[command(flatten)]
        output: Output,
    },
    /// Stop watching (the documents stay in the library)
    Rm { id: i64 },
    /// Keep every watch in sync until interrupted (Ctrl-C or SIGTERM)
    Run,
}

/// The arguments of `carrel watch add`.
#[derive(clap::Args)]
struct AddArgs {
    #[arg(value_name = "DIR_OR_URL")]
    target: String,
    /// Seconds between full syncs (URL re-fetch; folders also sync on file events)
    #[arg(long, default_value_t = crate::watch::DEFAULT_INTERVAL_S)]
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
}

/// Runs the `carrel watch` subcommand `args` names.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    match &args.command {
        Command::Add(args) => add(cli, args),
        Command::List { output } => list(cli, *output),
        Command::Rm { id } => {
            open(cli)?.remove_watch(*id)?;
            println!("stopped watching {id} (its documents stay; `carrel rm` removes them)");
            Ok(ExitCode::SUCCESS)
        }
        Command::Run => run(cli),
    }
}

/// `carrel watch add`: adds the watch and syncs it once; fails when that
/// sync did.
fn add(cli: &Cli, args: &AddArgs) -> Result<ExitCode, Error> {
    let AddArgs {
        target,
        interval,
        include,
        exclude,
        allow_private,
    } = args;
    let w = crate::watch::new_watch(
        target,
        *interval,
        include.clone(),
        exclude.clone(),
        *allow_private,
    )?;
    let mut lib = create(cli, Limits::default())?;
    let bar = progress_bar();
    let added = crate::watch::add(&mut lib, &w, &mut |p| show_progress(&bar, p))?;
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

/// `carrel watch list`.
fn list(cli: &Cli, output: Output) -> Result<ExitCode, Error> {
    let watches = open(cli)?.watches()?;
    if output.json(&watches) {
        return Ok(ExitCode::SUCCESS);
    }
    if watches.is_empty() {
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
                crate::store::WatchKind::Folder => "folder",
                crate::store::WatchKind::Url => "url",
            };
            let elsewhere = match &w.machine {
                Some(m) if !w.runs_here() => format!("  (on {m}; its watcher syncs it)"),
                _ => String::new(),
            };
            println!(
                "{:>4}  {:<6} {:>7}s  {:<22} {}{elsewhere}",
                w.id, kind, w.interval_s, synced, w.target
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `carrel watch run`: syncs every watch until SIGINT or SIGTERM.
fn run(cli: &Cli) -> Result<ExitCode, Error> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    super::stop_on_signals(&stop)?;
    let mut lib = open(cli)?;
    if lib.watches()?.is_empty() {
        eprintln!(
            "No watches yet; `carrel watch add DIR_OR_URL` adds one (picked up while this runs)."
        );
    }
    eprintln!("watching; Ctrl-C stops");
    // Nothing else in this process syncs: the gate is never contended.
    crate::watch::run(&mut lib, &stop, &Mutex::new(()), &mut print_sync)?;
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// One sync's counts on stderr, then each failed file.
fn print_sync(r: &crate::watch::SyncReport) {
    let mut line = format!(
        "synced {}: {} added, {} unchanged, {} renamed, {} removed, {} failed, {} skipped",
        r.target,
        r.added,
        r.unchanged,
        r.renamed,
        r.removed,
        r.failed.len(),
        r.skipped.len()
    );
    if let Some(e) = &r.error {
        line.push_str(&format!(" ({e})"));
    }
    eprintln!("{line}");
    for f in &r.failed {
        eprintln!("  failed: {}: {}", f.source, f.reason);
    }
    for line in super::skipped_lines(&r.skipped) {
        eprintln!("  {line}");
    }
}
