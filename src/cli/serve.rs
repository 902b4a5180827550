//! `carrel serve`: the hub. Serves libraries over MCP's streamable HTTP
//! transport, each read only and only to holders of its read tokens.

use std::io::Write;
use std::process::ExitCode;

use super::Cli;
use crate::Error;
use crate::library::hub::{Availability, Grant};
use crate::serve::{DEFAULT_ADDR, MCP_PATH};

/// The arguments of `carrel serve`.
#[derive(clap::Args)]
pub struct Args {
    /// The libraries to serve, by name [default: every library on the
    /// shelf; with --library or --kb, that one only]
    kbs: Vec<String>,
    /// Where to listen; port 0 picks a free one. 127.0.0.1 is this machine
    /// only: serve others with 0.0.0.0:PORT (and --host)
    #[arg(long, default_value = DEFAULT_ADDR)]
    addr: std::net::SocketAddr,
    /// Host names clients may use to reach the hub, besides localhost and
    /// the address it listens on (checked against DNS rebinding)
    #[arg(long = "host")]
    hosts: Vec<String>,
}

/// Serves until the process is stopped. The first line on stdout is the
/// URL, once the hub listens.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let hub = super::mcp::hub(cli, &args.kbs)?;
    let listener = std::net::TcpListener::bind(args.addr)
        .map_err(|e| Error::io(format!("listening on {}", args.addr), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("the listening socket", e))?;
    let mut hosts = args.hosts.clone();
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    let libraries = hub.libraries(&Grant::All);
    println!("http://{addr}{MCP_PATH}");
    let _ = std::io::stdout().flush();
    for l in &libraries {
        let kb =
            l.kb.as_ref()
                .map_or_else(|| "?".to_string(), |k| k.to_string());
        match &l.state {
            Availability::Ready { documents } => {
                eprintln!("serving        {kb} ({documents} documents)")
            }
            Availability::Unavailable { reason } => eprintln!("unavailable    {kb}: {reason}"),
        }
    }
    eprintln!(
        "each client needs a read token (`carrel kb token NAME`), sent as `Authorization: Bearer TOKEN`; Ctrl-C stops"
    );
    crate::serve::serve_http(hub, listener, hosts)?;
    Ok(ExitCode::SUCCESS)
}
