//! Extraction in a child process that may die. Untrusted bytes go to a worker
//! (a Carrel binary re-executed with [`WORKER_ARG`]) that has a wall-clock
//! limit, an address-space limit and its own stack. A stack overflow, an
//! abort, a hang or an out-of-memory kills only the worker, and becomes a
//! listed [`BrokenReason`]; the batch and the app go on.
//!
//! Protocol: the file's bytes on the worker's stdin; its answer, a JSON
//! `Result<Extracted, BrokenReason>`, on its stdout.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wait_timeout::ChildExt;

use super::{BrokenReason, Extracted, Kind};

/// The first argument that turns a Carrel binary into an extraction worker.
pub const WORKER_ARG: &str = "__extract-worker";

/// Wall-clock limit per file. The slowest real file measured, a 2,415-page
/// pdfTeX manual, took 15 s in pdf-extract on this 2-core machine.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Address-space limit of a worker. The same 2,415-page manual peaked at
/// 217 MB RSS; the rest is headroom for the mapped binary and allocator
/// arenas (the app's binary maps WebKitGTK, about 300 MB of address space).
pub const DEFAULT_MEMORY_BYTES: u64 = 2 << 30;

/// Most of a crashed worker's stderr kept to say what happened.
const STDERR_KEEP: u64 = 64 * 1024;

/// The limits a worker runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Isolation {
    /// Per worker: per file, and per page read by OCR.
    pub timeout: Duration,
    pub memory_bytes: u64,
    /// Whether a PDF without a text layer is read by OCR (when Tesseract is
    /// installed). Off, it stays `no_text`.
    pub ocr: bool,
}

impl Default for Isolation {
    fn default() -> Self {
        Isolation {
            timeout: DEFAULT_TIMEOUT,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            ocr: true,
        }
    }
}

/// Why no worker could be asked at all: a fault of this installation, not of
/// the file, so it fails the add instead of marking files broken.
#[derive(Debug, thiserror::Error)]
#[error(
    "the extraction worker could not run ({0}); reinstall Carrel or set CARREL_EXTRACT_WORKER to the `carrel` binary"
)]
pub struct WorkerUnavailable(String);

static SERVES: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main` of every Carrel binary. In a worker it extracts
/// one file and exits; otherwise it records that this binary can serve as its
/// own worker.
pub fn serve_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(OsStr::new(WORKER_ARG)) {
        let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        std::process::exit(serve(&args));
    }
    SERVES.store(true, Ordering::Relaxed);
}

/// What a worker is asked to do with the bytes it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Read a file of this kind.
    Extract(Kind),
    /// Render one page of a PDF and read it by OCR.
    OcrPage(u32),
}

impl Job {
    fn arg(self) -> String {
        match self {
            Job::Extract(kind) => kind.as_str().to_string(),
            Job::OcrPage(page) => format!("ocr-page:{page}"),
        }
    }

    fn parse(arg: &str) -> Option<Job> {
        match arg.strip_prefix("ocr-page:") {
            Some(page) => page.parse().ok().map(Job::OcrPage),
            None => Kind::parse(arg).map(Job::Extract),
        }
    }
}

/// The worker side: `JOB NAME MEMORY_BYTES`, bytes on stdin.
fn serve(args: &[String]) -> i32 {
    let [job, name, memory] = args else {
        eprintln!("usage: carrel {WORKER_ARG} JOB NAME MEMORY_BYTES < FILE");
        return 2;
    };
    let (Some(job), Ok(memory)) = (Job::parse(job), memory.parse::<u64>()) else {
        eprintln!("bad worker arguments: {args:?}");
        return 2;
    };
    die_with_parent();
    limit_address_space(memory);
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        eprintln!("reading the file from the parent failed: {e}");
        return 3;
    }
    let reply: Reply = match job {
        Job::Extract(kind) => super::extract(name, &bytes, kind),
        Job::OcrPage(page) => super::ocr::pdf_page(&bytes, page).map(|text| Extracted {
            sections: vec![super::Section {
                heading_path: Vec::new(),
                text,
                page: Some(page),
            }],
            reader: super::Reader::Tesseract,
            ..Extracted::default()
        }),
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &reply).map(|_| out.flush()) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("writing the answer failed: {e}");
            3
        }
    }
}

type Reply = Result<Extracted, BrokenReason>;

/// A worker outlives no parent: when the process that asked (a `carrel add`
/// stopped by Ctrl-C, say) dies, so does the worker, and with it the
/// programs it runs (`pdftotext`, `tesseract`), which do the same.
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
}

#[cfg(unix)]
fn limit_address_space(bytes: u64) {
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we pass; failure only leaves the
    // limit unset, which the wall-clock limit still bounds.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) } != 0 {
        eprintln!(
            "could not set the memory limit: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(unix))]
fn limit_address_space(_bytes: u64) {}

/// The binary that serves as the worker: `CARREL_EXTRACT_WORKER` if set,
/// else the `carrel` binary beside this one (test harnesses live in `deps/`,
/// one folder below), else this binary if it called [`serve_if_asked`].
///
/// The CLI comes first because it starts fast: re-executing the app maps
/// WebKitGTK, 78 ms a file against 4.5 ms for `carrel` (debug builds, 1 KB
/// Markdown file, 100 runs).
fn program() -> Result<PathBuf, WorkerUnavailable> {
    if let Some(p) = std::env::var_os("CARREL_EXTRACT_WORKER") {
        return Ok(p.into());
    }
    let exe = std::env::current_exe()
        .map_err(|e| WorkerUnavailable(format!("cannot find this program: {e}")))?;
    let name = format!("carrel{}", std::env::consts::EXE_SUFFIX);
    if let Some(cli) = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
    {
        return Ok(cli);
    }
    if SERVES.load(Ordering::Relaxed) {
        return Ok(exe);
    }
    Err(WorkerUnavailable(format!(
        "no `{name}` beside {}",
        exe.display()
    )))
}

/// Extracts one file in a worker process. `Ok(Err(reason))` is a file that
/// could not be read, the worker's death included; `Err` means no worker
/// could be started.
pub fn extract(
    name: &str,
    bytes: &[u8],
    job: Job,
    limits: &Isolation,
) -> Result<Reply, WorkerUnavailable> {
    if bytes.is_empty() {
        return Ok(Err(BrokenReason::Empty)); // nothing to isolate
    }
    run(&program()?, name, bytes, job, limits)
}

/// Runs `program` as the worker for one job.
fn run(
    program: &Path,
    name: &str,
    bytes: &[u8],
    job: Job,
    limits: &Isolation,
) -> Result<Reply, WorkerUnavailable> {
    let mut command = Command::new(program);
    // Its own process group, so that a kill reaches anything it started.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .arg(WORKER_ARG)
        .arg(job.arg())
        .arg(name)
        .arg(limits.memory_bytes.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| WorkerUnavailable(format!("{}: {e}", program.display())))?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let mut stdout = child.stdout.take().expect("stdout was piped");
    let stderr = child.stderr.take().expect("stderr was piped");
    let (answer, errors, status) = std::thread::scope(|s| {
        // A worker that dies early closes its stdin: a broken pipe here is
        // answered by its exit status below.
        s.spawn(move || {
            let _ = stdin.write_all(bytes);
        });
        let answer = s.spawn(move || {
            let mut buf = Vec::new();
            stdout.read_to_end(&mut buf).map(|_| buf)
        });
        let errors = s.spawn(move || {
            let mut buf = String::new();
            let _ = stderr.take(STDERR_KEEP).read_to_string(&mut buf);
            buf
        });
        let status = match child.wait_timeout(limits.timeout) {
            Ok(Some(status)) => Ok(status),
            Ok(None) => {
                kill_group(&mut child);
                Err(None)
            }
            Err(e) => {
                kill_group(&mut child);
                Err(Some(e))
            }
        };
        (
            answer.join().expect("reader thread"),
            errors.join().expect("reader thread"),
            status,
        )
    });
    let status = match status {
        Ok(status) => status,
        Err(None) => {
            return Ok(Err(BrokenReason::ExtractorTimedOut {
                seconds: limits.timeout.as_secs(),
            }));
        }
        Err(Some(e)) => return Err(WorkerUnavailable(format!("waiting for it failed: {e}"))),
    };
    if status.success()
        && let Ok(buf) = answer
        && let Ok(reply) = serde_json::from_slice::<Reply>(&buf)
    {
        return Ok(reply);
    }
    Ok(Err(death(&status, &errors, limits)))
}

/// Kills the worker and everything in its process group, then reaps it.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    // SAFETY: a signal to the group this worker leads (see `process_group`).
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// What a worker's death means, from its exit status and what it said last.
fn death(status: &std::process::ExitStatus, stderr: &str, limits: &Isolation) -> BrokenReason {
    if stderr.contains("has overflowed its stack") {
        return BrokenReason::ExtractorCrashed("stack overflow".into());
    }
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return BrokenReason::ExtractorOutOfMemory {
            limit_mb: limits.memory_bytes >> 20,
        };
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return BrokenReason::ExtractorCrashed(format!("killed by signal {signal}"));
        }
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    BrokenReason::ExtractorCrashed(match (status.code(), last) {
        (Some(code), Some(line)) => format!("exit status {code}: {}", line.trim()),
        (Some(code), None) => format!("exit status {code}"),
        (None, _) => "it stopped without an answer".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in worker: a shell script that dies the way a real one might.
    fn fake(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(format!("worker-{}", body.len()));
        std::fs::write(&p, format!("#!/bin/sh\ncat > /dev/null\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn death_of(body: &str, limits: Isolation) -> BrokenReason {
        let dir = tempfile::tempdir().unwrap();
        let program = fake(dir.path(), body);
        run(
            &program,
            "f.html",
            b"<p>x</p>",
            Job::Extract(Kind::Html),
            &limits,
        )
        .unwrap()
        .unwrap_err()
    }

    #[test]
    fn each_way_a_worker_dies_is_a_reason_that_names_it() {
        let limits = Isolation::default();
        assert_eq!(
            death_of(
                "echo \"thread 'main' has overflowed its stack\" >&2; kill -ABRT $$",
                limits
            ),
            BrokenReason::ExtractorCrashed("stack overflow".into())
        );
        assert_eq!(
            death_of(
                "echo 'memory allocation of 4294967296 bytes failed' >&2; kill -ABRT $$",
                limits
            ),
            BrokenReason::ExtractorOutOfMemory { limit_mb: 2048 }
        );
        assert_eq!(
            death_of("kill -SEGV $$", limits),
            BrokenReason::ExtractorCrashed("killed by signal 11".into())
        );
        assert_eq!(
            death_of("echo 'bad things' >&2; exit 7", limits),
            BrokenReason::ExtractorCrashed("exit status 7: bad things".into())
        );
        assert_eq!(
            death_of("echo 'not json'", limits),
            BrokenReason::ExtractorCrashed("exit status 0".into())
        );
    }

    #[test]
    fn a_hung_worker_is_stopped_at_its_limit() {
        let limits = Isolation {
            timeout: Duration::from_millis(300),
            ..Isolation::default()
        };
        // Had it been waited for, `sleep` would end with no answer: "crashed".
        assert_eq!(
            death_of("sleep 30", limits),
            BrokenReason::ExtractorTimedOut { seconds: 0 }
        );
    }

    #[test]
    fn a_missing_worker_is_an_error_not_a_broken_file() {
        let e = run(
            Path::new("/nonexistent/carrel"),
            "f.md",
            b"# x",
            Job::Extract(Kind::Markdown),
            &Isolation::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("could not run"), "{e}");
    }
}
