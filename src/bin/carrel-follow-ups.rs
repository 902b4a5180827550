//! `carrel-follow-ups`: whether a follow-up question finds its document
//! when the lanes read the conversation, and when they read only its own
//! words (`make follow-ups`, tools/follow-ups/). For each two-turn
//! conversation it builds the follow-up's context as the chat does, at the
//! built-in model's budget, three ways (its own words; with the earlier
//! question when it leans on it, as the chat asks; always with the earlier
//! question), and prints whether a relevant
//! document is in the context and whether it is the first passage, per
//! kind of follow-up and per half of the set (the split is the SHA-256 of
//! the conversation's id: the tuning half, and the half held out).

use std::path::{Path, PathBuf};

use clap::Parser;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use carrel::Library;
use carrel::answer::{self, Corpus, Earlier, LOCAL_CONTEXT_CHARS, Passage, follow_up};

#[derive(Parser)]
struct Args {
    /// The calibration set (tools/calibration/build.sh OUT_DIR)
    set: PathBuf,
    /// The two-turn conversations (JSON lines)
    conversations: PathBuf,
    /// The library of the set's documents: made and filled when empty
    #[arg(long)]
    library: PathBuf,
    /// Models folder (default: where `make models` puts them)
    #[arg(long, env = "CARREL_MODELS")]
    models: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Conversation {
    id: String,
    kind: String,
    first: String,
    first_relevant: Vec<String>,
    follow_up: String,
    relevant: Vec<String>,
}

/// Where the relevant document landed in one context.
#[derive(Clone, Copy, Default)]
struct Found {
    in_context: bool,
    first: bool,
}

/// Counts of [`Found`] over some conversations.
#[derive(Default)]
struct Tally {
    n: usize,
    in_context: usize,
    first: usize,
}

impl Tally {
    fn add(&mut self, f: Found) {
        self.n += 1;
        self.in_context += f.in_context as usize;
        self.first += f.first as usize;
    }

    fn line(&self) -> String {
        let pct = |k: usize| 100.0 * k as f64 / self.n.max(1) as f64;
        format!(
            "in context {:>2}/{:<2} ({:>5.1}%)  first {:>2}/{:<2} ({:>5.1}%)",
            self.in_context,
            self.n,
            pct(self.in_context),
            self.first,
            self.n,
            pct(self.first)
        )
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    carrel::extract::worker::serve_if_asked();
    let args = Args::parse();
    let (mut lib, corpus) = carrel::eval::set_library(&args.set, &args.library, args.models)?;
    let conversations: Vec<Conversation> = std::fs::read_to_string(&args.conversations)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    // (half, kind, way) → tally; ways: the first turn, the follow-up alone,
    // the follow-up with the conversation.
    let mut tallies: std::collections::BTreeMap<(&str, String, &str), Tally> = Default::default();
    for c in &conversations {
        let half = if Sha256::digest(c.id.as_bytes())[0] % 2 == 0 {
            "tuning"
        } else {
            "held out"
        };
        let first = found(&mut lib, &c.first, None, &c.first_relevant, &corpus)?;
        let earlier = Earlier {
            message: c.first.clone(),
            question: c.first.clone(),
            answer: String::new(),
        };
        let alone = found(&mut lib, &c.follow_up, None, &c.relevant, &corpus)?;
        let always = found(&mut lib, &c.follow_up, Some(&earlier), &c.relevant, &corpus)?;
        // As the chat asks it: with the conversation when it leans on it.
        let leans = follow_up::following(&c.follow_up, Some(&earlier)).is_some();
        let carrel = if leans { always } else { alone };
        println!(
            "{} {:<5} {:<8} leans {:<3} first {}  alone {}  always {}  | {}",
            c.id,
            c.kind,
            half,
            if leans { "yes" } else { "no" },
            mark(first),
            mark(alone),
            mark(always),
            c.follow_up
        );
        for kind in [c.kind.clone(), "all".to_string()] {
            for (way, f) in [
                ("first turn", first),
                ("alone", alone),
                ("as Carrel asks", carrel),
                ("always with", always),
            ] {
                tallies.entry((half, kind.clone(), way)).or_default().add(f);
            }
        }
    }
    println!();
    for ((half, kind, way), t) in &tallies {
        println!("{half:<8} {kind:<5} {way:<18} {}", t.line());
    }
    Ok(())
}

fn mark(f: Found) -> &'static str {
    match (f.in_context, f.first) {
        (_, true) => "1st",
        (true, false) => "ctx",
        (false, _) => " - ",
    }
}

/// Builds the context of `question` (after `earlier`) as the chat does, and
/// finds where a relevant document is in it.
fn found(
    lib: &mut Library,
    question: &str,
    earlier: Option<&Earlier>,
    relevant: &[String],
    corpus: &Path,
) -> Result<Found, Box<dyn std::error::Error>> {
    let prepared = answer::prepare(
        &mut [lib as &mut dyn Corpus],
        Vec::new(),
        question,
        earlier,
        LOCAL_CONTEXT_CHARS,
    )?;
    let is_relevant = |p: &Passage| {
        let doc = Path::new(&p.source)
            .strip_prefix(corpus)
            .unwrap_or(Path::new(&p.source))
            .display()
            .to_string();
        relevant.contains(&doc)
    };
    let context = prepared.context();
    Ok(Found {
        in_context: context.iter().any(is_relevant),
        first: context.first().is_some_and(is_relevant),
    })
}
