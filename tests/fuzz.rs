//! Fuzzing on the stable toolchain, with proptest: every extractor (HTML,
//! Markdown, text decoding, PDF) in process for throughput and through the
//! extraction worker as ingest runs it, and the `@doc:` mention parser.
//!
//! Each `fuzz_*` test is one target. Under `cargo test` it is a smoke run of a
//! few dozen cases (a few worker spawns); `make fuzz` sets `FUZZ_SECONDS` and
//! each target then runs for that long and prints its executions and what
//! they came to. A failing input is shrunk, written under
//! `$CARGO_TARGET_TMPDIR/fuzz-crashes/` and named in the failure; committed
//! to `fixtures/fuzz/`, it is replayed by
//! [`every_committed_fuzz_finding_is_answered`] on every run.
//!
//! Inputs are arbitrary bytes plus structure-aware generators: nested tags of
//! random depth for HTML, nested quotes and lists for Markdown, text in random
//! encodings, and mutated copies of the committed PDFs and documents.

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use carrel::extract::worker::Isolation;
use carrel::extract::{self, BrokenReason, Extracted, Kind};
use carrel::mention;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use wait_timeout::ChildExt;

use common::fixtures;

// ---------------------------------------------------------------- the harness

/// Seconds per target under `make fuzz`; unset, each target is a smoke run.
const BUDGET_VAR: &str = "FUZZ_SECONDS";
/// Replays a run: the seed a failing run printed.
const SEED_VAR: &str = "FUZZ_SEED";
/// Set in the child process that runs an in-process target for its
/// supervisor (see [`supervise`]); names the file it reports to.
const CHILD_REPORT_VAR: &str = "FUZZ_CHILD_REPORT";
/// Cases left for a child restarted in a smoke run.
const CHILD_CASES_VAR: &str = "FUZZ_CHILD_CASES";
/// The slowest case so far, in ms: a restarted child keeps a slower one.
const CHILD_SLOWEST_VAR: &str = "FUZZ_CHILD_SLOWEST_MS";

/// Smoke-run cases of an in-process target: about a second each on 2 cores.
const SMOKE_IN_PROCESS: u64 = 64;
/// Smoke-run cases of a worker target: one process spawn each (5–20 ms).
const SMOKE_WORKER: u64 = 12;
/// Smoke-run cases of the mention parser (microseconds each).
const SMOKE_MENTION: u64 = 512;

/// The stack of the thread a target runs on: the worker's main thread has
/// the platform's 8 MiB, a test thread only 2 MiB. The same stack makes the
/// in-process result comparable with the worker's.
const TARGET_STACK: usize = 8 << 20;

/// One fuzz target: its name (the prefix of its crash files), its case
/// counts, and the file extension its fixtures take.
struct Target {
    name: &'static str,
    smoke_cases: u64,
    /// Cases per proptest run in a timed run; the deadline is checked between.
    batch: u64,
    ext: &'static str,
    /// The extractor it runs in this process, if any: such a target runs in
    /// a child process, since a case can kill the process it runs in.
    in_process: Option<Kind>,
}

/// What a case came to, tallied per target for the summary line.
type Tally = RefCell<BTreeMap<String, u64>>;

fn count(tally: &Tally, outcome: &str) {
    *tally.borrow_mut().entry(outcome.to_string()).or_default() += 1;
}

/// What a run did: its executions, their outcomes and its slowest case.
#[derive(Default)]
struct Report {
    execs: u64,
    slowest_ms: u64,
    tally: BTreeMap<String, u64>,
}

impl Report {
    fn write(&self, path: &Path) {
        let mut s = format!("{}\n{}\n", self.execs, self.slowest_ms);
        for (k, n) in &self.tally {
            s.push_str(&format!("{n}\t{k}\n"));
        }
        std::fs::write(path, s).expect("the child's report");
    }

    /// A child's last report; none if it died before its first batch ended.
    fn read(path: &Path) -> Report {
        let Ok(s) = std::fs::read_to_string(path) else {
            return Report::default();
        };
        let mut lines = s.lines();
        let mut num = || lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
        let (execs, slowest_ms) = (num(), num());
        let tally = s
            .lines()
            .skip(2)
            .filter_map(|l| l.split_once('\t'))
            .map(|(n, k)| (k.to_string(), n.parse().unwrap_or(0)))
            .collect();
        Report {
            execs,
            slowest_ms,
            tally,
        }
    }

    fn merge(&mut self, other: Report) {
        self.execs += other.execs;
        self.slowest_ms = self.slowest_ms.max(other.slowest_ms);
        for (k, n) in other.tally {
            *self.tally.entry(k).or_default() += n;
        }
    }

    fn print(&self, target: &Target, secs: f64, seed: &str) {
        let outcomes = self
            .tally
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        eprintln!(
            "fuzz {}: {} execs in {secs:.1} s ({:.0}/s){seed}; {outcomes}; slowest {} ms ({})",
            target.name,
            self.execs,
            self.execs as f64 / secs.max(1e-9),
            self.slowest_ms,
            slowest_path(target).display(),
        );
    }
}

fn quiet_extractor_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !extract::in_extractor() {
                default(info);
            }
        }));
    });
}

fn budget() -> Option<Duration> {
    std::env::var(BUDGET_VAR)
        .ok()
        .map(|s| {
            s.parse::<f64>()
                .expect("FUZZ_SECONDS is a number of seconds")
        })
        .map(Duration::from_secs_f64)
}

/// Runs `test` on values of `strategy`: a smoke run, or batches until
/// `FUZZ_SECONDS` have passed. Panics with the shrunk input's path on failure.
fn fuzz<S: Strategy + 'static>(
    target: Target,
    strategy: fn() -> S,
    to_bytes: fn(&S::Value) -> Vec<u8>,
    test: fn(&S::Value, &Tally) -> Result<(), TestCaseError>,
) {
    quiet_extractor_panics();
    let child_report = std::env::var_os(CHILD_REPORT_VAR).map(PathBuf::from);
    if let (Some(kind), None) = (target.in_process, &child_report) {
        return supervise(&target, kind);
    }
    if child_report.is_some() {
        // The worker's memory limit: a case that allocates without bound
        // ends this child (an abort), not the machine (the OOM killer).
        limit_address_space(extract::worker::DEFAULT_MEMORY_BYTES);
    }
    let thread = std::thread::Builder::new()
        .name(target.name.into())
        .stack_size(TARGET_STACK)
        .spawn(move || run_target(&target, strategy(), to_bytes, test, child_report))
        .expect("a thread for the target");
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}

fn limit_address_space(bytes: u64) {
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct passed to it.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
}

fn run_target<S: Strategy>(
    target: &Target,
    strategy: S,
    to_bytes: fn(&S::Value) -> Vec<u8>,
    test: fn(&S::Value, &Tally) -> Result<(), TestCaseError>,
    child_report: Option<PathBuf>,
) {
    let budget = budget();
    let cases: u64 = std::env::var(CHILD_CASES_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(target.smoke_cases);
    let seed = std::env::var(SEED_VAR)
        .ok()
        .map(|s| s.parse::<u64>().expect("FUZZ_SEED is a u64"))
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            nanos ^ (std::process::id() as u64).rotate_left(32)
        });
    let config = |cases: u64| Config {
        cases: cases as u32,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        // A worker case is a process spawn: keep shrinking to minutes.
        max_shrink_time: 120_000,
        ..Config::default()
    };
    let tally: Tally = RefCell::new(BTreeMap::new());
    let execs = std::cell::Cell::new(0u64);
    // The slowest case is kept: a parser that is quadratic on some shape
    // shows up here long before it hangs.
    let slowest_before: u64 = std::env::var(CHILD_SLOWEST_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let slowest = RefCell::new((Duration::from_millis(slowest_before), None::<Vec<u8>>));
    // A case that kills the process leaves no proptest report: a child
    // writes each input here first, after its execution count and length.
    let last = child_report
        .as_ref()
        .map(|_| std::fs::File::create(last_input_path(target)).expect("the last-input file"));
    let counted = |v: S::Value| {
        execs.set(execs.get() + 1);
        if let Some(file) = &last {
            use std::os::unix::fs::FileExt;
            // One write, no truncation: the length says where it ends.
            let input = to_bytes(&v);
            let record = [
                &execs.get().to_le_bytes()[..],
                &(input.len() as u64).to_le_bytes(),
                &input,
            ]
            .concat();
            file.write_all_at(&record, 0).expect("the last input");
        }
        let t = Instant::now();
        let result = test(&v, &tally);
        let took = t.elapsed();
        if took > slowest.borrow().0 {
            *slowest.borrow_mut() = (took, Some(to_bytes(&v)));
        }
        result
    };
    let report = || {
        let mut slowest = slowest.borrow_mut();
        if let Some(input) = slowest.1.take() {
            std::fs::write(slowest_path(target), input).expect("the slowest input");
        }
        Report {
            execs: execs.get(),
            slowest_ms: slowest.0.as_millis() as u64,
            tally: tally.borrow().clone(),
        }
    };
    let started = Instant::now();
    let mut master = TestRunner::new(config(target.batch));
    let result = loop {
        let n = match budget {
            Some(_) => target.batch,
            None => target.batch.min(cases.saturating_sub(execs.get())),
        };
        if n == 0 {
            break Ok(());
        }
        let rng = master.new_rng();
        let batch = TestRunner::new_with_rng(config(n), rng).run(&strategy, counted);
        if let Some(path) = &child_report {
            report().write(path);
        }
        if batch.is_err() || budget.is_some_and(|b| started.elapsed() >= b) {
            break batch;
        }
    };
    let report = report();
    if let Some(path) = &child_report {
        report.write(path);
    } else {
        report.print(
            target,
            started.elapsed().as_secs_f64(),
            &format!(", seed {seed}"),
        );
    }
    match result {
        Ok(()) => {}
        Err(TestError::Abort(why)) => panic!("fuzz {} aborted: {why}", target.name),
        Err(TestError::Fail(why, value)) => {
            let bytes = to_bytes(&value);
            let path = save_crash(target.name, target.ext, &bytes);
            panic!(
                "fuzz {} failed: {why}\nshrunk input ({} bytes) saved to {}; commit it to \
                 fixtures/fuzz/ named after what broke (FUZZ_SEED={seed} replays the run)",
                target.name,
                bytes.len(),
                path.display()
            );
        }
    }
}

/// Runs an in-process target in a child process (this test binary, this
/// test only) and restarts it when a case kills it, as libFuzzer's fork mode
/// does. A case that kills the process is saved; it is allowed only where the
/// worker contains it (PDF: pdf-extract recurses without bound on some
/// damaged files, which the worker answers as `extractor_crashed`). Anywhere
/// else it fails the target.
fn supervise(target: &Target, kind: Kind) {
    let test_name = std::thread::current()
        .name()
        .expect("libtest names the test's thread")
        .to_string();
    let budget = budget();
    let started = Instant::now();
    let report_path = crash_dir().join(format!("{}-child-report.txt", target.name));
    let stderr_path = crash_dir().join(format!("{}-child-stderr.txt", target.name));
    let mut total = Report::default();
    loop {
        let _ = std::fs::remove_file(&report_path);
        let _ = std::fs::remove_file(last_input_path(target));
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([&test_name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_REPORT_VAR, &report_path)
            .env(CHILD_SLOWEST_VAR, total.slowest_ms.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).expect("the child's stderr file"));
        match budget {
            Some(b) => {
                let left = b
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1));
                child.env(BUDGET_VAR, left.as_secs_f64().to_string())
            }
            None => child.env(
                CHILD_CASES_VAR,
                target.smoke_cases.saturating_sub(total.execs).to_string(),
            ),
        };
        let mut child = child.spawn().expect("the fuzz child starts");
        // Past its budget by a minute, a child is stuck on one case: a hang.
        let limit = budget.unwrap_or(Duration::from_secs(60)) + Duration::from_secs(60);
        let status = match child
            .wait_timeout(limit)
            .expect("waiting for the fuzz child")
        {
            Some(status) => status,
            None => {
                let _ = child.kill();
                child.wait().expect("reaping the fuzz child")
            }
        };
        let report = Report::read(&report_path);
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        if status.success() {
            total.merge(report);
            break;
        }
        use std::os::unix::process::ExitStatusExt;
        if status.signal().is_none() {
            // A property failed; the child said which and saved the input.
            panic!(
                "fuzz {} failed in its child process:\n{stderr}",
                target.name
            );
        }
        let record = std::fs::read(last_input_path(target)).expect("the killed child's last input");
        let word = |at: usize| {
            record
                .get(at..at + 8)
                .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap()))
        };
        let (done, len) = (word(0), word(8) as usize);
        let input = record
            .get(16..16 + len)
            .expect("the killed child's last input, whole");
        let saved = save_crash(&format!("{}-killed", target.name), target.ext, input);
        let how = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let worker = extract::isolated(
            fixture_name(kind),
            input,
            kind,
            &worker_limits(),
            &mut |_, _| {},
        );
        let contained = kind == Kind::Pdf
            && matches!(
                worker,
                Ok(Err(BrokenReason::ExtractorCrashed(_)
                    | BrokenReason::ExtractorOutOfMemory { .. }
                    | BrokenReason::ExtractorTimedOut { .. }))
            );
        assert!(
            contained,
            "fuzz {}: an input killed the test process ({how}; {status}); saved to {}. \
             Through the worker: {worker:?}",
            target.name,
            saved.display()
        );
        let worker_said = match &worker {
            Ok(Err(reason)) => reason.code(),
            _ => "?",
        };
        total.merge(Report {
            execs: done.max(report.execs),
            ..report
        });
        count_into(
            &mut total,
            &format!("killed_in_process_worker_{worker_said}"),
        );
        eprintln!(
            "fuzz {}: a case killed the process in process ({how}); the worker answers \
             {worker_said}; saved to {}",
            target.name,
            saved.display()
        );
        let over = match budget {
            Some(b) => started.elapsed() >= b,
            None => total.execs >= target.smoke_cases,
        };
        if over {
            break;
        }
    }
    assert!(
        total.execs > 0,
        "fuzz {}: the child ran no case (was test {test_name} found?)",
        target.name
    );
    total.print(target, started.elapsed().as_secs_f64(), "");
}

fn count_into(report: &mut Report, outcome: &str) {
    *report.tally.entry(outcome.to_string()).or_default() += 1;
}

fn crash_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
    std::fs::create_dir_all(&dir).expect("the crash folder");
    dir
}

fn last_input_path(target: &Target) -> PathBuf {
    crash_dir().join(format!("{}-last-input", target.name))
}

fn slowest_path(target: &Target) -> PathBuf {
    crash_dir().join(format!("{}-slowest.{}", target.name, target.ext))
}

fn save_crash(target: &str, ext: &str, bytes: &[u8]) -> PathBuf {
    let hash = bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    });
    let path = crash_dir().join(format!("{target}-{hash:016x}.{ext}"));
    std::fs::write(&path, bytes).expect("the crash file");
    path
}

// The signature `fuzz` takes for a target whose values are byte vectors.
#[allow(clippy::ptr_arg)]
fn bytes_of(v: &Vec<u8>) -> Vec<u8> {
    v.clone()
}

/// A case's outcome for the tally: its reason's code, or with `FUZZ_DETAIL`
/// set the reason itself (which of lopdf's errors, which panic).
fn outcome(answer: &Result<Extracted, BrokenReason>) -> String {
    match answer {
        Ok(_) => "ok".into(),
        Err(reason) if std::env::var_os("FUZZ_DETAIL").is_some() => {
            format!("{reason:?}").chars().take(80).collect()
        }
        Err(reason) => reason.code().into(),
    }
}

// ------------------------------------------------------------- the properties

/// The reasons a file's bytes can earn from its extractor. Anything else
/// (a FIFO, a URL's reasons) is not about bytes and would be a wrong answer.
fn reason_is_listed_for(kind: Kind, reason: &BrokenReason, isolated: bool) -> bool {
    use BrokenReason::*;
    let text_reasons = matches!(reason, Binary | Undecodable | Empty | Blank);
    let pdf_reasons = matches!(
        reason,
        Empty
            | CorruptPdf(_)
            | IncompletePdf { .. }
            | Encrypted
            | NoText { .. }
            | DecompressionBomb { .. }
            // pdf-extract and lopdf panic on damaged files (DESIGN.md: 40–54%
            // of byte-flipped PDFs); the boundary turns that into a reason.
            | ExtractorPanicked(_)
    );
    let worker_reasons = matches!(
        reason,
        ExtractorCrashed(_) | ExtractorTimedOut { .. } | ExtractorOutOfMemory { .. }
    );
    let archive_reasons = matches!(
        reason,
        Empty
            | Blank
            | CorruptDocument { .. }
            | PasswordProtected { .. }
            | LegacyOffice
            | DecompressionBomb { .. }
    );
    match kind {
        Kind::Pdf => pdf_reasons || (isolated && worker_reasons),
        Kind::Docx | Kind::Odt | Kind::Epub | Kind::Pptx => archive_reasons,
        Kind::Rtf => matches!(reason, Empty | Blank | CorruptDocument { .. }),
        // A panic or a crash on text formats is a bug in Carrel or its
        // parsers: it is listed (the batch survives) but the fuzzer reports it.
        _ => text_reasons,
    }
}

/// What every extracted document promises: sections with text, canonical
/// text and headings, a title, pages in order for PDFs only.
fn check_extracted(kind: Kind, input: &[u8], doc: &Extracted) -> Result<(), TestCaseError> {
    prop_assert!(!doc.title.is_empty(), "an empty title");
    // A text format's markup only shrinks or reshapes its text: no file may
    // extract to much more than it holds (PDF streams and ZIP parts inflate,
    // under caps).
    if !matches!(
        kind,
        Kind::Pdf | Kind::Docx | Kind::Odt | Kind::Epub | Kind::Pptx
    ) {
        let most = MAX_TEXT_GROWTH * input.len() + 1024;
        prop_assert!(
            doc.char_count() <= most,
            "{} bytes extracted to {} characters",
            input.len(),
            doc.char_count()
        );
    }
    prop_assert_eq!(&extract::normalize_line(&doc.title), &doc.title);
    prop_assert!(!doc.sections.is_empty(), "Ok with no sections");
    let mut last_page = 0;
    for s in &doc.sections {
        prop_assert!(!s.text.is_empty(), "an empty section");
        prop_assert_eq!(
            &extract::normalize_text(&s.text),
            &s.text,
            "section text is not canonical"
        );
        for h in &s.heading_path {
            prop_assert!(!h.is_empty(), "an empty heading");
            prop_assert_eq!(&extract::normalize_line(h), h);
        }
        match (kind, s.page) {
            (Kind::Pdf, Some(p)) => {
                prop_assert!(
                    p > last_page,
                    "pages out of order: {} after {}",
                    p,
                    last_page
                );
                last_page = p;
            }
            (Kind::Pdf, None) => return Err(TestCaseError::fail("a PDF section without a page")),
            (_, page) => prop_assert_eq!(page, None),
        }
    }
    Ok(())
}

/// Most characters a text format may extract to per byte of input. NFKC
/// turns one 3-byte character into up to 18 (U+FDFA), and a nested list item
/// costs its marker and indentation: 16 leaves room for both.
const MAX_TEXT_GROWTH: usize = 16;

/// In process: no panic escapes `extract`, and its answer is a document that
/// keeps its promises or a reason listed for the kind.
fn check_in_process(kind: Kind, bytes: &[u8], tally: &Tally) -> Result<(), TestCaseError> {
    let name = fixture_name(kind);
    let answer = extract::extract(name, bytes, kind);
    count(tally, &outcome(&answer));
    match &answer {
        Ok(doc) => check_extracted(kind, bytes, doc),
        Err(reason) => {
            prop_assert!(
                reason_is_listed_for(kind, reason, false),
                "{:?} extractor answered {:?}",
                kind,
                reason
            );
            Ok(())
        }
    }
}

/// Through the worker: always an answer, never `WorkerUnavailable`; a listed
/// reason or a sound document; and, unless the worker died (which the test
/// process cannot survive in process), the very answer `extract` gives.
fn check_through_worker(kind: Kind, bytes: &[u8], tally: &Tally) -> Result<(), TestCaseError> {
    let name = fixture_name(kind);
    let answer = match extract::isolated(name, bytes, kind, &worker_limits(), &mut |_, _| {}) {
        Ok(answer) => answer,
        Err(e) => return Err(TestCaseError::fail(format!("no answer: {e}"))),
    };
    count(tally, &outcome(&answer));
    match &answer {
        Ok(doc) => check_extracted(kind, bytes, doc)?,
        Err(reason) => prop_assert!(
            reason_is_listed_for(kind, reason, true),
            "{:?} worker answered {:?}",
            kind,
            reason
        ),
    }
    let died = matches!(
        answer,
        Err(BrokenReason::ExtractorCrashed(_)
            | BrokenReason::ExtractorTimedOut { .. }
            | BrokenReason::ExtractorOutOfMemory { .. })
    );
    if !died {
        prop_assert_eq!(
            &answer,
            &extract::extract(name, bytes, kind),
            "the worker and the in-process extractor disagree"
        );
    }
    Ok(())
}

/// The limits ingest uses, with a shorter clock: a hang still ends as an
/// answer (`extractor_timed_out`) without stalling the run for a minute.
/// No OCR: the worker's answer is compared with the in-process extractor's,
/// which has none.
fn worker_limits() -> Isolation {
    Isolation {
        timeout: Duration::from_secs(15),
        ocr: false,
        ..Isolation::default()
    }
}

fn fixture_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Pdf => "fuzz.pdf",
        Kind::Html => "fuzz.html",
        Kind::Markdown => "fuzz.md",
        Kind::Text => "fuzz.txt",
        Kind::Docx => "fuzz.docx",
        Kind::Odt => "fuzz.odt",
        Kind::Epub => "fuzz.epub",
        Kind::Pptx => "fuzz.pptx",
        Kind::Rtf => "fuzz.rtf",
        Kind::Rst => "fuzz.rst",
        Kind::Org => "fuzz.org",
        Kind::Asciidoc => "fuzz.adoc",
        Kind::Image => "fuzz.png",
    }
}

// ------------------------------------------------------------- the generators

/// One edit to a seed file. Positions are taken modulo the length, so every
/// mutation applies to every seed and shrinks to a simpler one.
#[derive(Debug, Clone)]
enum Mutation {
    SetByte(usize, u8),
    FlipBit(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    /// Copies a run of the file to another place (repeated objects, tags).
    Duplicate(usize, usize, usize),
    /// Inserts a token of the format (`endobj`, `<div>`, `> `).
    Token(usize, usize),
    /// Replaces the n-th run of digits with a hostile number.
    Number(usize, usize),
    /// Writes a token over the bytes at a place: the length stays, and so do
    /// a PDF's cross-reference offsets.
    Overwrite(usize, usize),
    /// Rewrites the n-th run of digits in place with digits of one kind
    /// (`0`, `9`, or the given one): object numbers, lengths and offsets
    /// change while the file keeps its length.
    Digits(usize, u8),
}

const HOSTILE_NUMBERS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1",
    b"65535",
    b"2147483647",
    b"4294967296",
    b"99999999999999999999999",
    b"1e308",
    b"-0.0",
    b"00000000000000000001",
];

/// Edits that keep every byte where it was (so a PDF's xref still points at
/// its objects, and lopdf gets past the trailer to the pages).
fn in_place_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::SetByte(a, b)),
        2 => (any::<usize>(), 0u8..8).prop_map(|(a, b)| Mutation::FlipBit(a, b)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Mutation::Overwrite(a, t)),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(n, d)| Mutation::Digits(n, d)),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => in_place_mutation(),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::SetByte(a, b)),
        2 => (any::<usize>(), 0u8..8).prop_map(|(a, b)| Mutation::FlipBit(a, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), vec(any::<u8>(), 1..16)).prop_map(|(a, b)| Mutation::Insert(a, b)),
        1 => (any::<usize>(), 1usize..64).prop_map(|(a, n)| Mutation::Delete(a, n)),
        1 => (any::<usize>(), 1usize..256, any::<usize>())
            .prop_map(|(a, n, to)| Mutation::Duplicate(a, n, to)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Mutation::Token(a, t)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(n, v)| Mutation::Number(n, v)),
    ]
}

fn apply(seed: &[u8], mutations: &[Mutation], tokens: &[&[u8]]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in mutations {
        let len = b.len().max(1);
        match m {
            Mutation::SetByte(at, v) if !b.is_empty() => b[at % len] = *v,
            Mutation::FlipBit(at, bit) if !b.is_empty() => b[at % len] ^= 1 << bit,
            Mutation::Truncate(at) => b.truncate(at % len),
            Mutation::Insert(at, bytes) => {
                let at = at % (b.len() + 1);
                b.splice(at..at, bytes.iter().copied());
            }
            Mutation::Delete(at, n) => {
                let at = at % len;
                let end = (at + n).min(b.len());
                if at < end {
                    b.drain(at..end);
                }
            }
            Mutation::Duplicate(at, n, to) if !b.is_empty() => {
                let at = at % len;
                let run: Vec<u8> = b[at..(at + n).min(b.len())].to_vec();
                let to = to % (b.len() + 1);
                b.splice(to..to, run);
            }
            Mutation::Token(at, t) => {
                let at = at % (b.len() + 1);
                b.splice(at..at, tokens[t % tokens.len()].iter().copied());
            }
            Mutation::Number(nth, v) => {
                let runs = digit_runs(&b);
                if !runs.is_empty() {
                    let (s, e) = runs[nth % runs.len()];
                    b.splice(
                        s..e,
                        HOSTILE_NUMBERS[v % HOSTILE_NUMBERS.len()].iter().copied(),
                    );
                }
            }
            Mutation::Overwrite(at, t) if !b.is_empty() => {
                let at = at % len;
                let token = tokens[t % tokens.len()];
                let n = token.len().min(b.len() - at);
                b[at..at + n].copy_from_slice(&token[..n]);
            }
            Mutation::Digits(nth, d) => {
                let runs = digit_runs(&b);
                if !runs.is_empty() {
                    let (s, e) = runs[nth % runs.len()];
                    let digit = match d % 4 {
                        0 => b'0',
                        1 => b'9',
                        _ => b'0' + d % 10,
                    };
                    b[s..e].fill(digit);
                }
            }
            _ => {}
        }
    }
    b
}

fn digit_runs(b: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((s, i));
        } else {
            i += 1;
        }
    }
    runs
}

/// Mutated copies of committed files: 1–8 edits of one seed.
fn mutated(seeds: &[&str], tokens: &'static [&'static [u8]]) -> BoxedStrategy<Vec<u8>> {
    mutated_by(seeds, tokens, mutation().boxed(), 8)
}

fn mutated_by(
    seeds: &[&str],
    tokens: &'static [&'static [u8]],
    edit: BoxedStrategy<Mutation>,
    most: usize,
) -> BoxedStrategy<Vec<u8>> {
    let seeds: Arc<Vec<Vec<u8>>> = Arc::new(
        seeds
            .iter()
            .map(|p| {
                let path = fixtures().join(p);
                std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            })
            .collect(),
    );
    let n = seeds.len();
    (0..n, vec(edit, 1..most))
        .prop_map(move |(i, ms)| apply(&seeds[i], &ms, tokens))
        .boxed()
}

fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 1..2048)
}

/// Short text with the characters that trouble parsers: entities, markup
/// punctuation, combining marks, wide and right-to-left letters, controls.
fn inline_text() -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            4 => "[a-zA-Z ]{1,12}",
            1 => Just("&amp;".to_string()),
            1 => Just("&#0;&#xD800;&#x110000;&#99999999999;".to_string()),
            1 => Just("&nbsp;&lt;&gt;&quot".to_string()),
            1 => Just("e\u{301}\u{FB03}\u{200F}\u{FEFF}\u{1F600}".to_string()),
            1 => Just("\u{1}\u{7f}\u{85}\r\t\x0c".to_string()),
            1 => Just("  \n".to_string()),
            1 => any::<char>().prop_map(String::from),
        ],
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

const HTML_TAGS: &[&str] = &[
    "div",
    "p",
    "span",
    "h1",
    "h2",
    "h3",
    "h6",
    "ul",
    "ol",
    "li",
    "main",
    "article",
    "section",
    "nav",
    "header",
    "footer",
    "script",
    "style",
    "pre",
    "code",
    "table",
    "tr",
    "td",
    "th",
    "a",
    "b",
    "blockquote",
    "template",
    "svg",
    "math",
    "noscript",
    "form",
    "select",
    "option",
    "dl",
    "dt",
    "dd",
    "details",
    "summary",
    "body",
    "html",
    "head",
    "title",
    "textarea",
    "iframe",
    "frameset",
    "plaintext",
    "xmp",
    "br",
    "hr",
    "img",
    "input",
];

const HTML_ATTRS: &[&str] = &[
    "",
    " role=main",
    " role=navigation",
    " hidden",
    " aria-hidden=true",
    " class=headerlink",
    " class='a b'",
    " id=x",
    " title=\"\u{0}\"",
    " a=<",
    " =",
    " style=\"x\"",
];

const HTML_TOKENS: &[&[u8]] = &[
    b"<div>",
    b"</div>",
    b"<p>",
    b"<h1>",
    b"</h1>",
    b"<!--",
    b"-->",
    b"<script>",
    b"</script>",
    b"<![CDATA[",
    b"<!DOCTYPE html>",
    b"&#x0;",
    b"&",
    b"<table>",
    b"<template>",
    b"<svg>",
    b"<math>",
    b"<main>",
    b"<li>",
    b"<pre>",
    b"\0",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
];

/// A tree of random elements, attributes and text, some left unclosed.
fn html_tree() -> impl Strategy<Value = String> {
    let leaf = inline_text();
    leaf.prop_recursive(8, 96, 6, |inner| {
        (
            0..HTML_TAGS.len(),
            0..HTML_ATTRS.len(),
            vec(inner, 0..6),
            prop::bool::weighted(0.85),
            prop::bool::weighted(0.1),
        )
            .prop_map(|(t, a, children, close, upper)| {
                let mut tag = HTML_TAGS[t].to_string();
                if upper {
                    tag = tag.to_uppercase();
                }
                let mut s = format!("<{tag}{}>", HTML_ATTRS[a]);
                s.push_str(&children.concat());
                if close {
                    s.push_str(&format!("</{tag}>"));
                }
                s
            })
    })
}

/// One chain of tags nested to a random depth, optionally closed. Up to
/// 3,000: html5ever's tree builder is quadratic in depth (20,000 levels take
/// 2 s), and the 20,000-deep case that once overflowed a recursive walk is a
/// committed fixture and a unit test already.
fn html_deep() -> impl Strategy<Value = String> {
    (
        vec(0..HTML_TAGS.len(), 1..4),
        0usize..3_000,
        any::<bool>(),
        inline_text(),
    )
        .prop_map(|(tags, depth, close, text)| {
            let mut s = String::from("<!doctype html><html><body>");
            for i in 0..depth {
                s.push('<');
                s.push_str(HTML_TAGS[tags[i % tags.len()]]);
                s.push('>');
            }
            s.push_str(&text);
            if close {
                for i in (0..depth).rev() {
                    s.push_str("</");
                    s.push_str(HTML_TAGS[tags[i % tags.len()]]);
                    s.push('>');
                }
            }
            s
        })
}

fn html_input() -> BoxedStrategy<Vec<u8>> {
    let doc = (prop::bool::ANY, inline_text(), html_tree()).prop_map(|(wrap, title, body)| {
        if wrap {
            format!(
                "<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
            )
        } else {
            body
        }
    });
    prop_oneof![
        1 => arbitrary_bytes(),
        4 => doc.prop_map(String::into_bytes),
        1 => html_deep().prop_map(String::into_bytes),
        2 => mutated(
            &["docs/mortgage-rates.html", "xss/script-in-title-and-body.html"],
            HTML_TOKENS,
        ),
    ]
    .boxed()
}

const MD_TOKENS: &[&[u8]] = &[
    b"> ", b"- ", b"1. ", b"* ", b"```", b"~~~", b"|", b"|---|", b"---\n", b"+++\n", b"# ",
    b"###### ", b"[", b"](", b"![", b"*", b"**", b"_", b"$", b"$$", b"\\", b"<div>", b"\n",
    b"    ", b"[^1]: ", b"<!--",
];

/// One Markdown line: quotes, list markers, a heading, inline markup.
fn md_line() -> impl Strategy<Value = String> {
    let inline = vec(
        prop_oneof![
            4 => inline_text(),
            1 => Just("*".to_string()),
            1 => Just("**".to_string()),
            1 => Just("_".to_string()),
            1 => Just("`".to_string()),
            1 => Just("[a](b)".to_string()),
            1 => Just("[".to_string()),
            1 => Just("<b>".to_string()),
            1 => Just("$m$".to_string()),
            1 => Just("\\".to_string()),
            1 => Just(" | ".to_string()),
        ],
        0..6,
    )
    .prop_map(|p| p.concat());
    (
        0usize..6,
        0usize..6,
        prop_oneof![Just(""), Just("- "), Just("* "), Just("1. "), Just("+ ")],
        0usize..8,
        inline,
        prop_oneof![
            8 => Just(""),
            1 => Just("```"),
            1 => Just("~~~"),
            1 => Just("---"),
            1 => Just("+++"),
            1 => Just("|---|---|"),
            1 => Just("    code"),
        ],
    )
        .prop_map(|(quotes, indent, marker, hashes, text, special)| {
            if !special.is_empty() {
                return format!("{}{special}", "> ".repeat(quotes));
            }
            let heading = if hashes == 0 {
                String::new()
            } else {
                format!("{} ", "#".repeat(hashes))
            };
            format!(
                "{}{}{marker}{heading}{text}",
                "> ".repeat(quotes),
                "  ".repeat(indent)
            )
        })
}

/// Quotes, lists, brackets or emphasis nested to a random depth.
fn md_deep() -> impl Strategy<Value = String> {
    (0usize..6, 0usize..10_000, inline_text()).prop_map(|(shape, depth, text)| match shape {
        0 => format!("{}{text}\n", "> ".repeat(depth)),
        // Each line one level deeper: O(depth²) bytes, so fewer levels.
        1 => (0..depth.min(600))
            .map(|i| format!("{}- {text}\n", "  ".repeat(i)))
            .collect(),
        2 => (0..depth.min(600))
            .map(|i| format!("{}1. {text}\n", "   ".repeat(i)))
            .collect(),
        3 => format!("{}{text}{}", "[".repeat(depth), "](x)".repeat(depth)),
        4 => format!("{}{text}{}", "*".repeat(depth), "_".repeat(depth)),
        _ => format!("{}{text}\n", "> - ".repeat(depth)),
    })
}

fn markdown_input() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => arbitrary_bytes(),
        4 => vec(md_line(), 1..40).prop_map(|lines| lines.join("\n").into_bytes()),
        1 => md_deep().prop_map(String::into_bytes),
        2 => mutated(
            &["docs/sourdough-starter.md", "long/renovation-plan.md", "hostile/ordinary.md"],
            MD_TOKENS,
        ),
    ]
    .boxed()
}

/// How a text is put into bytes.
#[derive(Debug, Clone, Copy)]
enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16LeBom,
    Utf16BeBom,
    /// UTF-16 with no BOM: NUL bytes, refused as binary unless it is all
    /// wide characters.
    Utf16LeBare,
    /// A legacy encoding through encoding_rs (unmappable characters become
    /// numeric references); chardetng has to guess it back.
    Legacy(&'static encoding_rs::Encoding),
}

const LEGACY: &[&encoding_rs::Encoding] = &[
    encoding_rs::WINDOWS_1252,
    encoding_rs::WINDOWS_1251,
    encoding_rs::ISO_8859_2,
    encoding_rs::ISO_8859_7,
    encoding_rs::KOI8_R,
    encoding_rs::SHIFT_JIS,
    encoding_rs::EUC_JP,
    encoding_rs::ISO_2022_JP,
    encoding_rs::GBK,
    encoding_rs::GB18030,
    encoding_rs::BIG5,
    encoding_rs::EUC_KR,
    encoding_rs::WINDOWS_874,
    encoding_rs::IBM866,
];

fn encoding() -> impl Strategy<Value = Encoding> {
    prop_oneof![
        2 => Just(Encoding::Utf8),
        1 => Just(Encoding::Utf8Bom),
        1 => Just(Encoding::Utf16LeBom),
        1 => Just(Encoding::Utf16BeBom),
        1 => Just(Encoding::Utf16LeBare),
        4 => (0..LEGACY.len()).prop_map(|i| Encoding::Legacy(LEGACY[i])),
    ]
}

fn encode(s: &str, enc: Encoding) -> Vec<u8> {
    let utf16 = |big: bool| -> Vec<u8> {
        s.encode_utf16()
            .flat_map(|u| {
                if big {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                }
            })
            .collect()
    };
    match enc {
        Encoding::Utf8 => s.as_bytes().to_vec(),
        Encoding::Utf8Bom => [&b"\xEF\xBB\xBF"[..], s.as_bytes()].concat(),
        Encoding::Utf16LeBom => [vec![0xFF, 0xFE], utf16(false)].concat(),
        Encoding::Utf16BeBom => [vec![0xFE, 0xFF], utf16(true)].concat(),
        Encoding::Utf16LeBare => utf16(false),
        Encoding::Legacy(e) => e.encode(s).0.into_owned(),
    }
}

/// Text in the scripts the legacy encodings carry, with whitespace.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[\\PC\n\r\t ]{0,300}",
        "[a-zA-Zàéèçœß€ ,.\n]{0,300}",
        "[а-яА-ЯёЁ ,.\n]{0,300}",
        "[ぁ-んァ-ン一-龯 、。\n]{0,200}",
        "[가-힣 \n]{0,200}",
        "[α-ωΑ-Ω ,.\n]{0,300}",
        "[ก-๛ \n]{0,200}",
    ]
}

/// A text in a random encoding, sometimes cut mid-character.
fn encoded_text() -> impl Strategy<Value = (String, Encoding, Option<usize>)> {
    (
        any_text(),
        encoding(),
        prop::option::weighted(0.2, any::<usize>()),
    )
}

fn encoded_bytes(v: &(String, Encoding, Option<usize>)) -> Vec<u8> {
    let (s, enc, cut) = v;
    let mut b = encode(s, *enc);
    if let Some(at) = cut {
        b.truncate(at % (b.len() + 1));
    }
    b
}

const TEXT_TOKENS: &[&[u8]] = &[
    b"\xEF\xBB\xBF",
    b"\xFF\xFE",
    b"\xFE\xFF",
    b"\x00",
    b"\x1b$B",
    b"\r\n",
    b"\xC3",
    b"\xF0\x9F",
    b"\xED\xA0\x80",
];

/// Values of the text target: an encoded text, or raw bytes (arbitrary or
/// mutated fixtures), kept apart so a failure names the encoding.
#[derive(Debug, Clone)]
enum TextCase {
    Encoded(String, Encoding, Option<usize>),
    Raw(Vec<u8>),
}

fn text_input() -> BoxedStrategy<TextCase> {
    prop_oneof![
        4 => encoded_text().prop_map(|(s, e, c)| TextCase::Encoded(s, e, c)),
        1 => arbitrary_bytes().prop_map(TextCase::Raw),
        1 => mutated(
            &["docs/getting-started.txt", "docs/notes-latin1.txt", "bad/binary.txt"],
            TEXT_TOKENS,
        )
        .prop_map(TextCase::Raw),
    ]
    .boxed()
}

fn text_bytes(v: &TextCase) -> Vec<u8> {
    match v {
        TextCase::Encoded(s, e, c) => encoded_bytes(&(s.clone(), *e, *c)),
        TextCase::Raw(b) => b.clone(),
    }
}

/// The text decoder's own promise, past "no crash": UTF-8 and UTF-16 with a
/// BOM come back exactly, as the canonical text of what was encoded.
fn check_text_round_trip(case: &TextCase) -> Result<(), TestCaseError> {
    let TextCase::Encoded(s, enc, None) = case else {
        return Ok(());
    };
    if !matches!(
        enc,
        Encoding::Utf8 | Encoding::Utf8Bom | Encoding::Utf16LeBom | Encoding::Utf16BeBom
    ) {
        return Ok(());
    }
    let want = extract::normalize_text(s);
    let bytes = encoded_bytes(&(s.clone(), *enc, None));
    match extract::extract("fuzz.txt", &bytes, Kind::Text) {
        Ok(doc) => prop_assert_eq!(doc.body(), want, "{:?} did not round-trip", enc),
        // "No bytes" only for no bytes; a BOM or whitespace is blank.
        Err(BrokenReason::Empty) => {
            prop_assert!(bytes.is_empty(), "{} bytes called empty", bytes.len())
        }
        Err(BrokenReason::Blank) => prop_assert!(want.is_empty(), "refused as blank: {:?}", want),
        Err(other) => {
            return Err(TestCaseError::fail(format!(
                "{enc:?} text refused: {other:?}"
            )));
        }
    }
    Ok(())
}

const PDF_TOKENS: &[&[u8]] = &[
    b"obj",
    b"endobj",
    b" 0 R",
    b"stream\n",
    b"endstream",
    b"/Length 999999",
    b"/Filter /FlateDecode",
    b"<<",
    b">>",
    b"[",
    b"]",
    b"(",
    b")",
    b"\\",
    b"xref",
    b"trailer",
    b"startxref",
    b"%%EOF",
    b"/Type /Pages",
    b"/Kids [1 0 R]",
    b"/Count -1",
    b"/Parent 1 0 R",
    b"/Encrypt",
    b"/Font",
    b"/Contents",
    b"BT",
    b"ET",
    b"Tj",
    b"TJ",
    b"/F1 12 Tf",
    b"<FEFF>",
    b"/ToUnicode",
    b"/Outlines",
];

const PDF_SEEDS: &[&str] = &[
    "docs/pond-ecology.pdf",
    "bad/encrypted.pdf",
    "bad/scanned.pdf",
    "bad/truncated.pdf",
];

/// The committed PDFs (the bomb aside: slow by design, and the hostile test
/// covers it), mutated; plus arbitrary bytes behind a PDF header.
fn pdf_input() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => arbitrary_bytes().prop_map(|b| [&b"%PDF-1.4\n"[..], &b].concat()),
        2 => mutated(PDF_SEEDS, PDF_TOKENS),
        // Most cases keep the offsets, so they reach the page contents and
        // fonts instead of stopping at a broken cross-reference table.
        8 => mutated_by(PDF_SEEDS, PDF_TOKENS, in_place_mutation().boxed(), 4),
    ]
    .boxed()
}

/// RTF's control words, groups and escapes.
const RTF_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"\\par ",
    b"\\pard",
    b"{\\*\\x ",
    b"\\u-4000?",
    b"\\uc9 ",
    b"\\'e9",
    b"\\'",
    b"\\outlinelevel2 ",
    b"{\\stylesheet{\\s1 heading 1;}}",
    b"\\s1 ",
    b"\\intbl ",
    b"\\cell ",
    b"\\row ",
    b"{\\info{\\title T}}",
    b"\\ansicpg1251 ",
    b"\\",
];

/// The committed RTF, mutated, and arbitrary bytes behind an RTF header.
fn rtf_input() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        1 => arbitrary_bytes().prop_map(|b| [&b"{\\rtf1 "[..], &b].concat()),
        4 => mutated(&["formats/intl.rtf"], RTF_TOKENS),
    ]
    .boxed()
}

/// ZIP and OOXML markers.
const DOCX_TOKENS: &[&[u8]] = &[
    b"PK\x03\x04",
    b"PK\x01\x02",
    b"PK\x05\x06",
    b"word/document.xml",
    b"<w:p>",
    b"<w:tbl>",
    b"<!DOCTYPE x [<!ENTITY a \"b\">]>",
    b"\xff\xff\xff\xff",
];

/// The committed DOCX files, mutated (mostly in place, so the archive's
/// offsets hold and the XML parts are reached); and arbitrary bytes.
fn docx_input() -> BoxedStrategy<Vec<u8>> {
    const SEEDS: &[&str] = &[
        "formats/intl.docx",
        "formats/webcrypto.docx",
        "formats/intl-password.docx",
    ];
    prop_oneof![
        1 => arbitrary_bytes(),
        2 => mutated(SEEDS, DOCX_TOKENS),
        6 => mutated_by(SEEDS, DOCX_TOKENS, in_place_mutation().boxed(), 4),
    ]
    .boxed()
}

// ------------------------------------------------------------ the targets

fn in_process(name: &'static str, kind: Kind, ext: &'static str) -> Target {
    Target {
        name,
        smoke_cases: SMOKE_IN_PROCESS,
        batch: 256,
        ext,
        in_process: Some(kind),
    }
}

fn through_worker(name: &'static str, ext: &'static str) -> Target {
    Target {
        name,
        smoke_cases: SMOKE_WORKER,
        batch: 16,
        ext,
        in_process: None,
    }
}

#[test]
fn fuzz_html_in_process() {
    fuzz(
        in_process("html", Kind::Html, "html"),
        html_input,
        bytes_of,
        |b, t| check_in_process(Kind::Html, b, t),
    );
}

#[test]
fn fuzz_markdown_in_process() {
    fuzz(
        in_process("markdown", Kind::Markdown, "md"),
        markdown_input,
        bytes_of,
        |b, t| check_in_process(Kind::Markdown, b, t),
    );
}

#[test]
fn fuzz_text_in_process() {
    fuzz(
        in_process("text", Kind::Text, "txt"),
        text_input,
        text_bytes,
        |case, t| {
            check_in_process(Kind::Text, &text_bytes(case), t)?;
            check_text_round_trip(case)
        },
    );
}

#[test]
fn fuzz_pdf_in_process() {
    fuzz(
        in_process("pdf", Kind::Pdf, "pdf"),
        pdf_input,
        bytes_of,
        |b, t| check_in_process(Kind::Pdf, b, t),
    );
}

#[test]
fn fuzz_rtf_in_process() {
    fuzz(
        in_process("rtf", Kind::Rtf, "rtf"),
        rtf_input,
        bytes_of,
        |b, t| check_in_process(Kind::Rtf, b, t),
    );
}

#[test]
fn fuzz_docx_in_process() {
    fuzz(
        in_process("docx", Kind::Docx, "docx"),
        docx_input,
        bytes_of,
        |b, t| check_in_process(Kind::Docx, b, t),
    );
}

#[test]
fn fuzz_html_through_worker() {
    fuzz(
        through_worker("html-worker", "html"),
        html_input,
        bytes_of,
        |b, t| check_through_worker(Kind::Html, b, t),
    );
}

#[test]
fn fuzz_markdown_through_worker() {
    fuzz(
        through_worker("markdown-worker", "md"),
        markdown_input,
        bytes_of,
        |b, t| check_through_worker(Kind::Markdown, b, t),
    );
}

#[test]
fn fuzz_text_through_worker() {
    fuzz(
        through_worker("text-worker", "txt"),
        text_input,
        text_bytes,
        |case, t| check_through_worker(Kind::Text, &text_bytes(case), t),
    );
}

#[test]
fn fuzz_pdf_through_worker() {
    fuzz(
        through_worker("pdf-worker", "pdf"),
        pdf_input,
        bytes_of,
        |b, t| check_through_worker(Kind::Pdf, b, t),
    );
}

// ---------------------------------------------------------- the mention parser

/// Messages built from the pieces the grammar turns on: the prefix and its
/// fragments, key characters (Unicode letters and digits among them), dots,
/// separators and anything else.
fn message() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => any::<String>(),
        4 => vec(
            prop_oneof![
                3 => Just("@doc:".to_string()),
                1 => Just("@".to_string()),
                1 => Just("doc:".to_string()),
                1 => Just("@doc".to_string()),
                1 => Just("@DOC:".to_string()),
                2 => Just(".".to_string()),
                1 => Just("-_".to_string()),
                3 => "[a-z0-9]{1,8}",
                1 => Just("éßİ٣𝟙ǅ\u{301}".to_string()),
                1 => Just(" ".to_string()),
                1 => Just(",;!?()".to_string()),
                1 => any::<char>().prop_map(String::from),
            ],
            0..24,
        )
        .prop_map(|p| p.concat()),
    ]
}

/// What a mention is, said without the parser's code: at each `@doc:`, the
/// longest run of key characters after it, less trailing dots.
fn mentions_by_definition(message: &str) -> Vec<(usize, String)> {
    message
        .match_indices(mention::PREFIX)
        .filter_map(|(at, _)| {
            let rest = &message[at + mention::PREFIX.len()..];
            let key: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
                .collect();
            let key = key.trim_end_matches(['.', '/']);
            (!key.is_empty()).then(|| (at, key.to_string()))
        })
        .collect()
}

fn check_mentions(message: &str) -> Result<(), TestCaseError> {
    let found = mention::parse(message);
    let mut last_end = 0;
    for m in &found {
        prop_assert!(m.start >= last_end, "spans overlap or go back: {:?}", found);
        prop_assert!(
            m.start < m.end && m.end <= message.len(),
            "{:?} out of bounds",
            m
        );
        prop_assert!(message.is_char_boundary(m.start) && message.is_char_boundary(m.end));
        prop_assert_eq!(&message[m.start..m.end], m.token.as_str());
        let full = match &m.kb {
            Some(kb) => format!("{kb}/{}", m.key),
            None => m.key.clone(),
        };
        prop_assert_eq!(&m.token, &format!("{}{}", mention::PREFIX, full));
        prop_assert!(
            !m.key.ends_with(['.', '/']),
            "trailing punctuation kept: {:?}",
            m
        );
        last_end = m.end;
    }
    let spans: Vec<(usize, String)> = found
        .iter()
        .map(|m| match &m.kb {
            Some(kb) => (m.start, format!("{kb}/{}", m.key)),
            None => (m.start, m.key.clone()),
        })
        .collect();
    prop_assert_eq!(spans, mentions_by_definition(message));
    let stripped = mention::strip(message);
    prop_assert_eq!(stripped.trim(), stripped.as_str());
    Ok(())
}

fn check_round_trip(id: i64, before: &str, after: &str) -> Result<(), TestCaseError> {
    let token = mention::token(id);
    prop_assert_eq!(
        mention::parse(&token),
        vec![mention::Mention {
            token: token.clone(),
            kb: None,
            key: id.to_string(),
            start: 0,
            end: token.len(),
        }]
    );
    // In a sentence, after a space and before punctuation, it is still found
    // where it was put.
    let message = format!("{before} {token}, {after}");
    let start = before.len() + 1;
    prop_assert!(
        mention::parse(&message)
            .iter()
            .any(|m| m.start == start && m.key == id.to_string()),
        "{} lost in {:?}",
        token,
        message
    );
    Ok(())
}

/// Resolving and suggesting a fuzzed key against a few documents answers
/// with those documents only, and never more suggestions than asked.
fn check_resolution(key: &str) -> Result<(), TestCaseError> {
    let docs = [
        doc(1, "Sourdough Starter", "/d/sourdough-starter.md"),
        doc(2, "Sourdough Starter", "/d/sourdough-copy.md"),
        doc(3, "İstanbul notları", "/d/İstanbul.txt"),
        doc(4, "", ""),
    ];
    let ids = [1, 2, 3, 4];
    match mention::resolve(key, &docs) {
        mention::Resolution::Resolved { doc, .. } => prop_assert!(ids.contains(&doc)),
        mention::Resolution::Ambiguous { candidates } => {
            prop_assert!(candidates.len() >= 2);
            prop_assert!(candidates.iter().all(|c| ids.contains(&c.doc)));
        }
        mention::Resolution::Unknown { did_you_mean } => {
            prop_assert!(did_you_mean.len() <= 3);
        }
    }
    prop_assert!(mention::suggest(key, &docs, 2).len() <= 2);
    Ok(())
}

fn doc(id: i64, title: &str, source: &str) -> carrel::DocumentRow {
    carrel::DocumentRow {
        id,
        title: title.into(),
        kind: Some("markdown".into()),
        reader: None,
        language: Some("en".into()),
        source: source.into(),
        bytes: 1,
        chunks: 1,
        content_hash: None,
        state: "indexed".into(),
        broken_reason: None,
        broken_code: None,
        truncated_at_chunk: None,
        card_state: "ready".into(),
        added_at: 0,
        synced_at: 0,
        source_missing: false,
    }
}

#[derive(Debug, Clone)]
enum MentionCase {
    Message(String),
    RoundTrip(i64, String, String),
}

fn mention_cases() -> impl Strategy<Value = MentionCase> {
    prop_oneof![
        3 => message().prop_map(MentionCase::Message),
        1 => (any::<i64>(), message(), message())
            .prop_map(|(id, a, b)| MentionCase::RoundTrip(id, a, b)),
    ]
}

fn mention_bytes(case: &MentionCase) -> Vec<u8> {
    match case {
        MentionCase::Message(m) => m.clone().into_bytes(),
        MentionCase::RoundTrip(id, a, b) => {
            format!("{a} {}, {b}", mention::token(*id)).into_bytes()
        }
    }
}

#[test]
fn fuzz_mention_parser() {
    let target = Target {
        name: "mention",
        smoke_cases: SMOKE_MENTION,
        batch: 4096,
        ext: "msg",
        in_process: None,
    };
    fuzz(
        target,
        mention_cases,
        mention_bytes,
        |case, tally| match case {
            MentionCase::Message(m) => {
                count(
                    tally,
                    if mention::parse(m).is_empty() {
                        "none"
                    } else {
                        "mentions"
                    },
                );
                check_mentions(m)?;
                for found in mention::parse(m) {
                    check_resolution(&found.key)?;
                }
                check_resolution(m)
            }
            MentionCase::RoundTrip(id, a, b) => {
                count(tally, "round_trip");
                check_round_trip(*id, a, b)
            }
        },
    );
}

// ----------------------------------------------------- committed findings

/// Every input a fuzz run ever failed on, named after what broke, still gets
/// an answer that keeps the properties: through the worker, and in process
/// too unless the worker died on it (then it would take this process down);
/// `.msg` files are mention messages, checked against the parser's invariants.
#[test]
fn every_committed_fuzz_finding_is_answered() {
    quiet_extractor_panics();
    let dir = fixtures().join("fuzz");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("README.md"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no findings in {}", dir.display());
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.display().to_string();
        if path.extension().is_some_and(|e| e == "msg") {
            let message = String::from_utf8(bytes).expect("a mention finding is UTF-8");
            check_mentions(&message).unwrap_or_else(|e| panic!("{name}: {e}"));
            continue;
        }
        let kind = Kind::from_extension(&path).unwrap_or_else(|| panic!("{name}: unknown kind"));
        // The stack of the targets and of the worker's main thread.
        std::thread::Builder::new()
            .stack_size(TARGET_STACK)
            .spawn(move || check_through_worker(kind, &bytes, &Tally::default()))
            .unwrap()
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
