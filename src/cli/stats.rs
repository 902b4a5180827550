//! `carrel stats`: library statistics.

use std::process::ExitCode;

use super::{Cli, Output, open};
use crate::Error;

/// The arguments of `carrel stats`.
#[derive(clap::Args)]
pub struct Args {
    /// Chunks and average chunk size per document
    #[arg(long, required = true)]
    density: bool,
    #[command(flatten)]
    output: Output,
}

/// Prints the chunk density of every document (the one statistic so far).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { density: _, output } = args;
    let rows = open(cli)?.density()?;
    if !output.json(&rows) {
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
