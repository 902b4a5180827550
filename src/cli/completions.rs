//! `carrel completions SHELL` and `carrel manpage`: the shell completions
//! (clap's generator) and the man page (`clap_mangen`) of this command line,
//! printed for a package to install (or a user to source).

use std::process::ExitCode;

use clap::CommandFactory;

use super::Cli;
use crate::Error;

/// The arguments of `carrel completions`.
#[derive(clap::Args)]
pub struct Args {
    /// bash, zsh, fish, elvish or powershell
    shell: clap_complete::Shell,
}

/// Prints the completion script for the shell `args` names.
pub fn exec(args: &Args) -> Result<ExitCode, Error> {
    clap_complete::generate(
        args.shell,
        &mut Cli::command(),
        "carrel",
        &mut std::io::stdout(),
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints the man page, carrel(1), in roff.
pub fn manpage() -> Result<ExitCode, Error> {
    clap_mangen::Man::new(Cli::command())
        .render(&mut std::io::stdout())
        .map_err(|e| Error::io("stdout", e))?;
    Ok(ExitCode::SUCCESS)
}
