//! `carrel mcp`: serve libraries to agents over MCP (stdio), read only. It
//! also owns which libraries a server holds, for `carrel serve` too.

use std::process::ExitCode;

use super::{Cli, models};
use crate::Error;
use crate::library::hub::Hub;
use crate::library::shelf::{Shelf, shelf_path};

/// The arguments of `carrel mcp`.
#[derive(clap::Args)]
pub struct Args {
    /// The libraries to serve, by name [default: every library on the
    /// shelf, the one in use first; with --library, --database-url or --kb,
    /// that one only]
    kbs: Vec<String>,
}

/// Serves until the client closes stdin.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    crate::mcp::serve_stdio(hub(cli, &args.kbs)?)?;
    Ok(ExitCode::SUCCESS)
}

/// The libraries a server holds: the one `--library`, `--database-url` or
/// `--kb` names (a folder without a library is an error before serving),
/// else those named on the shelf, else the whole shelf with the library in
/// use first. Every name must be on the shelf; a library on it that cannot
/// be opened is served as unavailable, with the reason.
pub(super) fn hub(cli: &Cli, kbs: &[String]) -> Result<Hub, Error> {
    let flag = super::library_flag(cli)?;
    let (in_use, _) = crate::library_dir(flag.as_deref(), None)?;
    let survey = Shelf::load(&shelf_path()?)?.survey(&in_use);
    let models = models(cli)?;
    let one = |dir: std::path::PathBuf| -> Result<Hub, Error> {
        if !crate::store::Store::held_in(&dir) {
            return Err(Error::NoLibrary(dir));
        }
        let chosen: Vec<_> = survey
            .libraries
            .iter()
            .filter(|s| s.dir() == Some(&dir))
            .cloned()
            .collect();
        Ok(Hub::open(&chosen, &models))
    };
    if let Some(kb) = super::one_kb(cli)? {
        return one(survey.find(kb)?);
    }
    if flag.is_some() {
        return one(in_use);
    }
    if kbs.is_empty() {
        if survey.libraries.len() == 1 && !crate::store::Store::held_in(&in_use) {
            return Err(Error::NoLibrary(in_use));
        }
        return Ok(Hub::open(&survey.libraries, &models));
    }
    let mut chosen: Vec<crate::library::shelf::Shelved> = Vec::new();
    for kb in kbs {
        let entry = survey.entry(kb)?;
        if !chosen.contains(entry) {
            chosen.push(entry.clone());
        }
    }
    Ok(Hub::open(&chosen, &models))
}
