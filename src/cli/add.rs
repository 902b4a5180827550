//! `carrel add`: add files, folders (recursively) or URLs.

use std::process::ExitCode;

use super::{Cli, Output, create, progress_bar, show_progress, skipped_lines, stop_on_signals};
use crate::models::PoolSize;
use crate::{Error, Limits};

/// The arguments of `carrel add`.
#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true, value_name = "PATH_OR_URL")]
    inputs: Vec<String>,
    /// Allow URLs on loopback, private and link-local addresses
    #[arg(long)]
    allow_private: bool,
    #[command(flatten)]
    output: Output,
}

/// Adds the inputs; fails when any file failed (the rest are still added).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args {
        inputs,
        allow_private,
        output,
    } = args;
    let limits = Limits {
        allow_private_urls: *allow_private,
        ..Limits::default()
    };
    let mut lib = create(cli, limits)?;
    // Ctrl-C stops between documents and keeps what was written; a second
    // one ends the process at once.
    stop_on_signals(&lib.cancel_handle().flag())?;
    let bar = progress_bar();
    let report = lib.add(inputs, &mut |p| show_progress(&bar, p))?;
    bar.finish_and_clear();
    if let Some(w) = lib.embedding_workers() {
        eprintln!("{}", workers_line(&w));
    }
    if !output.json(&report) {
        for d in &report.documents {
            println!("added   {:>5}  {}  ({} chunks)", d.id, d.title, d.chunks);
            for w in &d.warnings {
                println!("warning        {}: {w}", d.title);
            }
        }
        for f in &report.failed {
            println!("failed         {}: {}", f.source, f.reason);
        }
        for line in skipped_lines(&report.skipped) {
            println!("{line}");
        }
        println!(
            "{} added, {} unchanged, {} failed, {} skipped",
            report.added,
            report.unchanged,
            report.failed.len(),
            report.skipped.len()
        );
        if let Some(left) = report.cancelled {
            println!(
                "cancelled: {left} not reached; what was added stays, and the same command goes on from there"
            );
        }
    }
    Ok(if report.failed.is_empty() && report.cancelled.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// How many embedding workers ran, for stderr: and why fewer than asked.
fn workers_line(w: &PoolSize) -> String {
    let each = format!("about {:.0} MB each", w.per_worker_mb);
    if w.running < w.asked {
        format!(
            "embedded on {} of {} workers ({each}; --worker-memory-mb {} admits {})",
            w.running, w.asked, w.cap_mb, w.running
        )
    } else {
        format!(
            "embedded on {} ({each})",
            crate::words::count(w.running, "worker")
        )
    }
}
