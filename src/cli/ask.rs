//! `carrel ask`: answer a question from the library, every statement cited
//! and checked.

use std::process::ExitCode;

use super::{Cli, config, print_json};
use crate::answer::{Answerer, Check, Found, Outcome};
use crate::lanes::merge::RouteState;
use crate::{Error, Limits};

/// The arguments of `carrel ask`.
#[derive(clap::Args)]
pub struct Args {
    message: String,
    /// An OpenAI-compatible server (Ollama, llama.cpp, LM Studio), e.g.
    /// http://localhost:11434/v1 [default: the extractive answerer, no LLM]
    #[arg(long, env = "CARREL_LLM_URL", requires = "llm_model")]
    llm_url: Option<String>,
    /// The model name that server should use
    #[arg(long, env = "CARREL_LLM_MODEL")]
    llm_model: Option<String>,
    #[arg(long)]
    json: bool,
}

/// Answers with the LLM the flags name, else extractively; fails only when
/// the answerer failed (no context is an answer, not a failure).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args {
        message,
        llm_url,
        llm_model,
        json,
    } = args;
    let answerer = match (llm_url, llm_model) {
        (Some(url), Some(model)) => Answerer::llm(url, model),
        _ => Answerer::Extractive,
    };
    // `@kb:` tokens name the libraries to read; without one, the library
    // in use (or --library / --kb) answers.
    let answer = crate::library::ask_from(config(cli, Limits::default())?, message, &answerer)?;
    if *json {
        print_json(&answer);
    } else {
        print_answer(&answer);
    }
    Ok(match answer.outcome {
        Outcome::Failed { .. } => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

fn print_answer(a: &crate::answer::Answer) {
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
            print_sources(a, statements);
            println!(
                "Check: of {}, {} verified (quoted verbatim), {} supported (their words are in the passage), \
                 {} only cited, {} unsupported, {} uncited, {} with invalid citations.",
                crate::words::count(check.statements, "statement"),
                check.verified,
                check.supported,
                check.cited,
                check.unsupported,
                check.uncited,
                check.invalid
            );
        }
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
            "   <- UNSUPPORTED: only {overlap_pct}% of its words are in the passage it cites"
        ),
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
        // The outermost heading is usually the title itself.
        let path = match p.heading_path.split_first() {
            Some((first, rest)) if *first == p.title => rest,
            _ => &p.heading_path[..],
        };
        let place: String = path.iter().map(|h| format!(" › {h}")).collect();
        let page = p.page.map(|n| format!(", page {n}")).unwrap_or_default();
        let by = match &p.found {
            Found::Mention { token } => format!("mentioned as {token}"),
            Found::SubjectLane => "found by the subject lane".into(),
            Found::TopicLane => "found by the topic lane".into(),
        };
        let from = match (&p.kb, &p.owner) {
            (Some(kb), owner) if a.route.len() > 1 => {
                format!("in {kb}, owner {}; ", owner.as_deref().unwrap_or("not set"))
            }
            _ => String::new(),
        };
        println!(
            "  [{}] {}{place} ({from}doc {}, chunk {}{page}; {by}) {}",
            p.n, p.title, p.doc, p.chunk, p.source
        );
    }
}
