//! `carrel ask`: answer a question from the library, every statement cited
//! and checked. The passages it reads are printed at once; a model's answer
//! follows as it is written, each sentence's citation (or "not found in
//! your documents") as the sentence ends. Ctrl-C stops the writing and
//! keeps what was written.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::{Cli, Output, stop_on_signals, with_kbs};
use crate::Error;
use crate::answer::{Answer, Answerer, AnswererChoice, Check, Found, LlmConfig, Outcome, Progress};
use crate::lanes::merge::RouteState;

/// The arguments of `carrel ask`.
#[derive(clap::Args)]
pub struct Args {
    message: String,
    /// Who writes the answer: the built-in model (auto: when installed,
    /// else quotes), quotes only, or the server --llm-url names
    #[arg(long, value_enum, env = "CARREL_ANSWERER", default_value_t = AnswererChoice::Auto)]
    answerer: AnswererChoice,
    /// An OpenAI-compatible server (Ollama, llama.cpp, LM Studio), e.g.
    /// http://localhost:11434/v1; implies --answerer server
    #[arg(long, env = "CARREL_LLM_URL", requires = "llm_model")]
    llm_url: Option<String>,
    /// The model name that server should use
    #[arg(long, env = "CARREL_LLM_MODEL")]
    llm_model: Option<String>,
    #[command(flatten)]
    output: Output,
}

/// Answers with the answerer asked for; fails only when the answerer failed
/// (no context is an answer, not a failure).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    // `@kb:` tokens (or several --kb) name the libraries to read; without
    // one, the library in use (or --library / --kb) answers.
    let (config, message) = with_kbs(cli, &args.message)?;
    let server = match (&args.llm_url, &args.llm_model) {
        (Some(url), Some(model)) => Some(LlmConfig::keyed(url, model)),
        _ => None,
    };
    let choice = match (&server, args.answerer) {
        (Some(_), AnswererChoice::Auto) => AnswererChoice::Server,
        (_, choice) => choice,
    };
    let (answerer, note) =
        Answerer::choose(choice, &config.models, server).map_err(Error::Unavailable)?;
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_signals(&stop)?;
    let mut answer = if args.output.json {
        crate::library::ask_from(config, &message, &answerer, &stop, &mut |_| {})?
    } else {
        let mut out = Streamed {
            // Quotes are printed whole, with their passages, at the end.
            shows_context: !matches!(answerer, Answerer::Extractive),
            writing: false,
        };
        crate::library::ask_from(config, &message, &answerer, &stop, &mut |p| out.progress(p))?
    };
    answer.notes.extend(note);
    if !args.output.json(&answer) {
        print_end(&answer);
    }
    Ok(match answer.outcome {
        Outcome::Failed { .. } => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// What the terminal has shown of an answer being written.
struct Streamed {
    /// The passages are listed as soon as they are known.
    shows_context: bool,
    /// Written text has begun.
    writing: bool,
}

impl Streamed {
    fn progress(&mut self, p: Progress) {
        let mut o = std::io::stdout().lock();
        match p {
            Progress::Quote(q) => {
                let _ = writeln!(o, "{}", super::verify::describe(&q.line, &q.check));
            }
            Progress::Context(passages) if self.shows_context => {
                let _ = writeln!(
                    o,
                    "Reading {}:",
                    crate::words::count(passages.len(), "passage")
                );
                for p in passages {
                    let _ = writeln!(o, "  [{}] {}", p.n, place(p));
                    let _ = writeln!(o, "      \"{}\"", excerpt(&p.text, 160));
                }
            }
            Progress::Context(_) => {}
            Progress::Text(t) => {
                let t = if self.writing {
                    t
                } else {
                    let _ = write!(o, "Answer:\n  ");
                    self.writing = true;
                    t.trim_start()
                };
                let _ = write!(o, "{}", t.replace('\n', "\n  "));
            }
            Progress::Statement(s) => {
                let _ = write!(o, "{}", inline_mark(s));
            }
        }
        let _ = o.flush();
    }
}

/// A statement's mark where it ends, in the written text.
fn inline_mark(s: &crate::answer::Statement) -> String {
    let cited: String = s.citations.iter().map(|n| format!("[{n}]")).collect();
    match &s.check {
        Check::Verified | Check::Supported { .. } => format!(" {cited}"),
        Check::Unsupported { .. } if s.citations.is_empty() => {
            " (not found in your documents)".into()
        }
        Check::NoClaim => String::new(),
        other => format!(" {cited}{}", flag(other)),
    }
}

fn excerpt(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// After the streamed text: how the writing ended, then the answer's
/// sources and check (a quoted or failed answer is printed whole here).
fn print_end(a: &Answer) {
    if let Some(w) = &a.writing {
        println!();
        let how = match w.ended {
            crate::models::writer::Ended::Finished => "",
            crate::models::writer::Ended::Stopped => " STOPPED: what was written is kept",
            crate::models::writer::Ended::Length => " (it reached the longest answer allowed)",
        };
        println!(
            "({}: first word after {:.1} s, {} tokens in {:.1} s){how}",
            a.answerer,
            w.first_token_ms / 1000.0,
            w.tokens,
            w.total_ms / 1000.0
        );
    }
    print_answer(a, a.writing.is_none());
}

/// The answer's notes, route, statements (when `whole`: they were not
/// streamed), sources and check.
fn print_answer(a: &Answer, whole: bool) {
    for note in &a.notes {
        println!("note: {note}");
    }
    if a.route.len() > 1 {
        let asked: Vec<String> = a
            .route
            .iter()
            .map(|r| {
                let kb = r.kb.as_ref().map_or("?".to_string(), |k| k.to_string());
                match &r.state {
                    RouteState::Answered => format!("{kb} ({:.0} ms)", r.ms),
                    RouteState::Unavailable { reason } | RouteState::Failed { reason } => {
                        format!("{kb} (FAILED: {reason})")
                    }
                }
            })
            .collect();
        println!("Asked: {}", asked.join(", "));
    }
    match &a.outcome {
        Outcome::NoContext { reason } => println!("No answer: {reason}."),
        Outcome::Failed { reason } => println!("FAILED ({}): {reason}", a.answerer),
        Outcome::Answered { statements, check } => {
            if whole {
                print_statements(a, statements);
            }
            print_sources(a, statements);
            println!(
                "Check: of {}, {} verified (verbatim in their passage), {} supported (their words, pair by pair, are in the passage cited), \
                 {} not found in your documents, {} with no claim to check, {} with invalid citations.",
                crate::words::count(check.statements, "statement"),
                check.verified,
                check.supported,
                check.unsupported,
                check.no_claim,
                check.invalid
            );
        }
    }
}

fn print_statements(a: &Answer, statements: &[crate::answer::Statement]) {
    println!(
        "Answer ({}, from {}):",
        a.answerer,
        crate::words::count(a.context.len(), "passage")
    );
    // Across libraries, each run of statements under the library
    // its first citation is from: whose idea it is stays with it.
    let across = a.route.len() > 1;
    let mut last = None;
    for s in statements {
        let from = if across { a.cited_library(s) } else { None };
        if let Some((kb, owner)) = from
            && from != last
        {
            println!("From {kb} (owner: {}):", owner.unwrap_or("not set"));
        }
        last = from;
        let marks: String = s.citations.iter().map(|n| format!("[{n}]")).collect();
        let flag = flag(&s.check);
        println!("  {} {marks}{flag}", s.text.replace('\n', "\n    "));
    }
}

/// What the check made of a statement, after its citation marks.
fn flag(check: &Check) -> String {
    match check {
        Check::Verified => String::new(),
        Check::Supported { overlap_pct } => {
            format!("   (supported: {overlap_pct}% of its words are in the passage)")
        }
        Check::Cited => "   (cited; nothing in it to check against the passage)".into(),
        Check::Unsupported { overlap_pct } => format!(
            "   <- NOT FOUND in your documents: no passage holds more than {overlap_pct}% of its words"
        ),
        Check::NoClaim => String::new(),
        Check::Uncited => "   <- UNCITED".into(),
        Check::Invalid { problems } => {
            format!("   <- INVALID: {}", problems.join("; "))
        }
    }
}

/// The passages the statements cite, each with where it is and what found it.
fn print_sources(a: &crate::answer::Answer, statements: &[crate::answer::Statement]) {
    println!("Sources:");
    let cited: std::collections::BTreeSet<usize> = statements
        .iter()
        .flat_map(|s| s.citations.iter().copied())
        .collect();
    for p in a.context.iter().filter(|p| cited.contains(&p.n)) {
        let from = match (&p.kb, &p.owner) {
            (Some(kb), owner) if a.route.len() > 1 => {
                format!("in {kb}, owner {}; ", owner.as_deref().unwrap_or("not set"))
            }
            _ => String::new(),
        };
        println!(
            "  [{}] {}",
            p.n,
            place(p).replacen(" (", &format!(" ({from}"), 1)
        );
    }
}

/// A passage's document, heading path, ids and what found it.
fn place(p: &crate::answer::Passage) -> String {
    let headings = super::verify::trail(&p.title, &p.heading_path);
    let page = p.page.map(|n| format!(", page {n}")).unwrap_or_default();
    let by = match &p.found {
        Found::Mention { token } => format!("mentioned as {token}"),
        Found::SubjectLane => "found by the subject lane".into(),
        Found::TopicLane => "found by the topic lane".into(),
    };
    format!(
        "{}{headings} (doc {}, chunk {}{page}; {by}) {}",
        p.title, p.doc, p.chunk, p.source
    )
}
