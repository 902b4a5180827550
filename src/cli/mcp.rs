//! `carrel mcp`: serve the library to agents over MCP (stdio), read only.
//! It takes no arguments of its own, so its variant carries none.

use std::process::ExitCode;

use super::{Cli, open};
use crate::Error;

/// Serves until the client closes stdin.
pub fn exec(cli: &Cli) -> Result<ExitCode, Error> {
    crate::mcp::serve_stdio(open(cli)?)?;
    Ok(ExitCode::SUCCESS)
}
