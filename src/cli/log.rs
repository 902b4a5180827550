//! `carrel log`: the retrieval log, every lane decision with the scorer
//! that produced it.

use std::process::ExitCode;

use super::{Cli, Output, open};
use crate::Error;

/// The arguments of `carrel log`.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value_t = 50)]
    limit: usize,
    #[command(flatten)]
    output: Output,
}

/// Prints the newest `--limit` entries.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { limit, output } = args;
    let entries = open(cli)?.log(*limit)?;
    if output.json(&entries) {
        return Ok(ExitCode::SUCCESS);
    }
    if entries.is_empty() {
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
            if let Some(why) = &e.unjudged {
                println!("{:>15}veto and hold-back skipped: {why}", "");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
