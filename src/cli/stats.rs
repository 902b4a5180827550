//! `carrel stats`: library statistics.

use std::process::ExitCode;

use super::{Cli, open, print_json};
use crate::Error;

/// The arguments of `carrel stats`.
#[derive(clap::Args)]
pub struct Args {
    /// Chunks and average chunk size per document
    #[arg(long, required = true)]
    density: bool,
    #[arg(long)]
    json: bool,
}

/// Prints the chunk density of every document (the one statistic so far).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { density: _, json } = args;
    let rows = open(cli)?.density()?;
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
