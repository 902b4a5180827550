//! The readers Carrel runs as programs (`pdftotext`, `pdftoppm`,
//! `tesseract`): each a child of the extraction worker, in its process group
//! and under its memory limit, fed on stdin, read from stdout, and killed if
//! the worker dies first.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};

/// The program could not be started: it is not installed.
#[derive(Debug)]
pub struct Missing;

/// Runs `cmd` with `input` on its stdin: its exit status and its stdout.
pub fn run(cmd: &mut Command, input: &[u8]) -> Result<(ExitStatus, Vec<u8>), Missing> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    die_with_parent(cmd);
    let mut child = cmd.spawn().map_err(|_| Missing)?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let mut stdout = child.stdout.take().expect("stdout was piped");
    let (out, status) = std::thread::scope(|s| {
        // Written from a thread: the program may answer before it has read
        // all of its input, or stop reading it (a broken pipe is its answer).
        s.spawn(move || {
            let _ = stdin.write_all(input);
        });
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        (out, child.wait())
    });
    status.map(|st| (st, out)).map_err(|_| Missing)
}

/// Kills the child when the extraction worker dies (a timeout, a crash), so
/// no reader outlives the file it was reading.
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}
