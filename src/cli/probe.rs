//! `carrel probe`: predict a file's chunks with the planner the writer uses.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Cli, Output, isolation};
use crate::chunk::Mode;
use crate::{Error, Limits};

/// The arguments of `carrel probe`.
#[derive(clap::Args)]
pub struct Args {
    file: PathBuf,
    #[arg(long, default_value = "document")]
    mode: Mode,
    #[command(flatten)]
    output: Output,
}

/// Extracts and plans the file without a library; a file that cannot be
/// extracted fails with its reason.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { file, mode, output } = args;
    let limits = Limits {
        isolation: isolation(cli),
        ..Limits::default()
    };
    match crate::probe(file, *mode, &limits)? {
        Ok(p) => {
            if !output.json(&p) {
                println!(
                    "{} chunks, {:.0} chars on average ({} mode, {} chars in all, read by {})",
                    p.chunks,
                    p.avg_chars,
                    match p.mode {
                        Mode::Document => "document",
                        Mode::Memory => "memory",
                    },
                    p.chars,
                    p.reader.as_str()
                );
                for w in &p.warnings {
                    println!("warning: {w}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(reason) => {
            eprintln!("error: {}: {reason}", file.display());
            Ok(ExitCode::FAILURE)
        }
    }
}
