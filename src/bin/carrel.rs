//! The `carrel` binary: sets the process up, then hands the command line to
//! [`carrel::cli::run`], where each subcommand has its own module.

use std::process::ExitCode;

use carrel::cli::{Cli, run};

fn main() -> ExitCode {
    // Extraction runs in this binary re-executed as a worker process.
    carrel::extract::worker::serve_if_asked();
    // Named fault points (`FAILPOINTS=ingest::after_commit=2*off->return`),
    // used by the crash test; inert when the variable is unset.
    let _faults = fail::FailScenario::setup();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CARREL_LOG").unwrap_or_else(|_| {
                "warn,lopdf=error,pdf_extract=error,rmcp::transport::worker=off".into()
            }),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person: a log file (`carrel serve 2>log`)
        // gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    quiet_extractor_panics();
    // `carrel list | head` should stop quietly, as other Unix tools do.
    // SAFETY: restoring the default disposition of SIGPIPE before any I/O.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::from_args();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Panics inside third-party extractors are caught and listed as a broken
/// reason; they should not also spray a backtrace over the terminal. Any
/// other panic is still reported.
fn quiet_extractor_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if carrel::extract::in_extractor() {
            tracing::debug!(%info, "extractor panicked (caught)");
        } else {
            default(info);
        }
    }));
}
