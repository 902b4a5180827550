//! `carrel add`: add files, folders (recursively) or URLs.

use std::process::ExitCode;

use super::{Cli, create, print_json, progress_bar, show_progress, skipped_lines};
use crate::{Error, Limits};

/// The arguments of `carrel add`.
#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true, value_name = "PATH_OR_URL")]
    inputs: Vec<String>,
    /// Allow URLs on loopback, private and link-local addresses
    #[arg(long)]
    allow_private: bool,
    #[arg(long)]
    json: bool,
}

/// Adds the inputs; fails when any file failed (the rest are still added).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args {
        inputs,
        allow_private,
        json,
    } = args;
    let limits = Limits {
        allow_private_urls: *allow_private,
        ..Limits::default()
    };
    let mut lib = create(cli, limits)?;
    let bar = progress_bar();
    let report = lib.add(inputs, &mut |p| show_progress(&bar, p))?;
    bar.finish_and_clear();
    if *json {
        print_json(&report);
    } else {
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
    }
    Ok(if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
