//! `carrel rm`: remove a document.

use std::process::ExitCode;

use super::{Cli, open};
use crate::Error;

/// The arguments of `carrel rm`.
#[derive(clap::Args)]
pub struct Args {
    id: i64,
}

/// Removes the document; its content goes when no other document shares it.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { id } = args;
    let mut lib = open(cli)?;
    let title = lib.document(*id)?.title;
    lib.remove(*id)?;
    println!("removed {id}  {title}");
    Ok(ExitCode::SUCCESS)
}
