//! `carrel list`: the documents with their state.

use std::process::ExitCode;

use super::{Cli, Output, ago, open};
use crate::Error;

/// The arguments of `carrel list`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    output: Output,
}

/// Lists every document, with why it is broken or truncated when it is.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { output } = args;
    let docs = open(cli)?.list()?;
    if output.json(&docs) {
        return Ok(ExitCode::SUCCESS);
    }
    if docs.is_empty() {
        println!("The library is empty. Add documents with `carrel add PATH_OR_FOLDER`.");
    } else {
        println!(
            "{:>5}  {:<8} {:<8} {:<13} {:<4} {:>9} {:>6}  {:<15} TITLE",
            "ID", "STATE", "KIND", "READER", "LANG", "BYTES", "CHUNKS", "SYNCED"
        );
        for d in &docs {
            let synced = if d.source_missing {
                "source missing".to_string()
            } else {
                ago(d.synced_at)
            };
            println!(
                "{:>5}  {:<8} {:<8} {:<13} {:<4} {:>9} {:>6}  {:<15} {}",
                d.id,
                d.state,
                d.kind.as_deref().unwrap_or("-"),
                d.reader.as_deref().unwrap_or("-"),
                d.language.as_deref().unwrap_or("-"),
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
