//! `carrel-answers`: the population the support rule is calibrated on
//! (`make answers`, tools/answer-calibration/). Asks the built-in model the
//! calibration set's index-term questions, in a library of its documents,
//! and writes one JSON line per question: the context passages, the
//! sentences the model wrote, Carrel's mark on each, and every candidate
//! measure of each sentence against every passage, so that a rule and its
//! line can be chosen afterwards without asking the model again.
//!
//! Greedy decoding makes an answer's first sentences the same whether or
//! not it is stopped after them, so writing stops after `--sentences`
//! sentences: the population is the sentences a reader sees first. The
//! run is resumable: questions already in `--out` are skipped.
//!
//! Each question is put to every answerer of `--answerers` in the same
//! run (the built-in model and the extractive one by default), so that
//! their figures come from one library, one build and one set of
//! questions.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use carrel::Library;
use carrel::answer::{Answerer, AnswererChoice, Check, Corpus, Outcome, Progress, cite, marks};
use carrel::lanes::terms::stems;

#[derive(Parser)]
struct Args {
    /// The calibration set (tools/calibration/build.sh OUT_DIR)
    set: PathBuf,
    /// The library of the set's documents: made and filled when empty
    #[arg(long)]
    library: PathBuf,
    /// Write JSON lines here (appended; questions already there are skipped)
    #[arg(long)]
    out: PathBuf,
    /// How many index-term questions, taken in the order of their id's SHA-256
    #[arg(long, default_value_t = 300)]
    questions: usize,
    /// How many noise questions (none has a relevant document)
    #[arg(long, default_value_t = 40)]
    noise: usize,
    /// Sentences kept per answer
    #[arg(long, default_value_t = 3)]
    sentences: usize,
    /// The answerers asked, each in its own record
    #[arg(long, value_delimiter = ',', default_values = ["local", "extractive"])]
    answerers: Vec<AnswererChoice>,
    /// Models folder (default: where `make models` puts them)
    #[arg(long, env = "CARREL_MODELS")]
    models: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Query {
    #[serde(rename = "_id")]
    id: String,
    text: String,
    kind: String,
}

#[derive(Serialize)]
struct Record {
    id: String,
    /// The answerer's name (`Answerer::name`).
    answerer: String,
    kind: String,
    question: String,
    /// The set's relevant documents (ids under corpus/).
    relevant: Vec<String>,
    /// answered, no_context or failed.
    outcome: &'static str,
    reason: Option<String>,
    /// Whether the model was asked at all.
    asked_model: bool,
    prompt_tokens: Option<u32>,
    tokens: Option<u32>,
    first_token_ms: Option<f64>,
    total_ms: Option<f64>,
    context: Vec<ContextPassage>,
    sentences: Vec<Sentence>,
}

#[derive(Serialize)]
struct ContextPassage {
    n: usize,
    doc: String,
    title: String,
    heading: String,
    text: String,
}

#[derive(Serialize)]
struct Sentence {
    text: String,
    /// The `[n]` the model wrote.
    hint: Vec<usize>,
    /// Carrel's citation and mark, by the rule in force.
    citations: Vec<usize>,
    check: Check,
    /// Per passage, in context order: the candidate measures.
    against: Vec<Measures>,
}

#[derive(Serialize)]
struct Measures {
    n: usize,
    verbatim: bool,
    /// Share of the sentence's content stems found in the passage, %.
    stem_pct: u32,
    /// Share of the sentence's word trigrams found in the passage, %.
    trigram_pct: u32,
    /// Share of its content bigrams found in the passage, %.
    bigram_pct: u32,
    /// Content stems of the sentence that are not in the passage.
    missing: Vec<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    carrel::extract::worker::serve_if_asked();
    let args = Args::parse();
    let (mut lib, corpus) =
        carrel::eval::set_library(&args.set, &args.library, args.models.clone())?;
    let answerers = args
        .answerers
        .iter()
        .map(
            |&choice| match Answerer::choose(choice, lib.models(), None)? {
                (_, Some(note)) => Err(note),
                (answerer, None) => Ok(answerer),
            },
        )
        .collect::<Result<Vec<_>, _>>()?;
    let done = already_done(&args.out)?;
    let relevant = read_qrels(&args.set.join("qrels.tsv"))?;
    let asked = chosen(&args.set, args.questions, args.noise)?;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)?;
    let total = asked.len();
    for (i, q) in asked.into_iter().enumerate() {
        for answerer in &answerers {
            if done.contains(&(q.id.clone(), answerer.name())) {
                continue;
            }
            let question = format!("Explain {}.", q.text.trim_end_matches('.'));
            let rel = relevant.get(&q.id).cloned().unwrap_or_default();
            let record = ask(
                &mut lib,
                answerer,
                &q,
                question,
                rel,
                &corpus,
                args.sentences,
            )?;
            eprintln!(
                "{}/{total} {} {} {}: {} sentences, first token {:.1} s",
                i + 1,
                q.id,
                record.answerer,
                record.outcome,
                record.sentences.len(),
                record.first_token_ms.unwrap_or(0.0) / 1000.0
            );
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
            out.flush()?;
        }
    }
    Ok(())
}

/// Asks one question, stopping the model after `keep` sentences.
fn ask(
    lib: &mut Library,
    answerer: &Answerer,
    q: &Query,
    question: String,
    relevant: Vec<String>,
    corpus: &Path,
    keep: usize,
) -> Result<Record, Box<dyn std::error::Error>> {
    let stop = AtomicBool::new(false);
    let mut ended = 0;
    let answer = lib.ask_streaming(&question, answerer, &stop, &mut |p| {
        if let Progress::Statement(_) = p {
            ended += 1;
            if ended >= keep {
                stop.store(true, Ordering::Relaxed);
            }
        }
    })?;
    let context: Vec<ContextPassage> = answer
        .context
        .iter()
        .map(|p| ContextPassage {
            n: p.n,
            doc: Path::new(&p.source)
                .strip_prefix(corpus)
                .unwrap_or(Path::new(&p.source))
                .display()
                .to_string(),
            title: p.title.clone(),
            heading: p.heading_path.join(" > "),
            text: p.text.clone(),
        })
        .collect();
    let (outcome, reason, statements) = match answer.outcome {
        Outcome::Answered { statements, .. } => ("answered", None, statements),
        Outcome::NoContext { reason } => ("no_context", Some(reason), vec![]),
        Outcome::Failed { reason } => ("failed", Some(reason), vec![]),
    };
    let sentences = statements
        .into_iter()
        .take(keep)
        .map(|s| Sentence {
            against: context
                .iter()
                .map(|p| measures(&s.text, p.n, &p.text))
                .collect(),
            text: s.text,
            hint: s.hint,
            citations: s.citations,
            check: s.check,
        })
        .collect();
    let w = answer.writing.as_ref();
    Ok(Record {
        id: q.id.clone(),
        answerer: answerer.name(),
        kind: q.kind.clone(),
        question,
        relevant,
        outcome,
        reason,
        asked_model: w.is_some(),
        prompt_tokens: w.map(|w| w.prompt_tokens),
        tokens: w.map(|w| w.tokens),
        first_token_ms: w.map(|w| w.first_token_ms),
        total_ms: w.map(|w| w.total_ms),
        context,
        sentences,
    })
}

fn measures(sentence: &str, n: usize, passage: &str) -> Measures {
    let words: BTreeSet<String> = marks::content_sequence(sentence).into_iter().collect();
    let there = stems(passage);
    let missing: Vec<String> = words
        .iter()
        .filter(|w| !there.contains(*w))
        .cloned()
        .collect();
    let share = |k: usize, of: fn(&str) -> Vec<String>| {
        marks::share_pct(
            &marks::grams(&of(sentence), k),
            &marks::grams(&of(passage), k),
        )
    };
    Measures {
        n,
        verbatim: cite::occurs(sentence, passage),
        stem_pct: match words.len() {
            0 => 0,
            all => ((all - missing.len()) * 100 / all) as u32,
        },
        trigram_pct: share(3, plain_words),
        bigram_pct: share(2, marks::content_sequence),
        missing,
    }
}

/// A text's words in order, lowercase, function words kept.
fn plain_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The questions asked: index terms then noise, each in the order of the
/// SHA-256 of its id (spread over the manuals, the same on every run).
fn chosen(
    set: &Path,
    terms: usize,
    noise: usize,
) -> Result<Vec<Query>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(set.join("queries.jsonl"))?;
    let mut all: Vec<Query> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    all.sort_by_key(|q| Sha256::digest(q.id.as_bytes()).to_vec());
    let (mut out, rest): (Vec<Query>, Vec<Query>) =
        all.into_iter().partition(|q| q.kind == "index-term");
    out.truncate(terms);
    out.extend(rest.into_iter().filter(|q| q.kind == "noise").take(noise));
    Ok(out)
}

fn read_qrels(path: &Path) -> Result<HashMap<String, Vec<String>>, Box<dyn std::error::Error>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for line in std::fs::read_to_string(path)?.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if let [q, d, score, ..] = cols[..]
            && score.trim() != "0"
        {
            out.entry(q.to_string()).or_default().push(d.to_string());
        }
    }
    Ok(out)
}

/// The (question, answerer) pairs already in `out`. A record written
/// before answerers were named is the built-in model's.
fn already_done(out: &Path) -> Result<HashSet<(String, String)>, Box<dyn std::error::Error>> {
    #[derive(Deserialize)]
    struct Id {
        id: String,
        #[serde(default = "built_in")]
        answerer: String,
    }
    fn built_in() -> String {
        format!("local:{}", carrel::models::writer::WRITER_NAME)
    }
    if !out.exists() {
        return Ok(HashSet::new());
    }
    Ok(std::fs::read_to_string(out)?
        .lines()
        // A line cut off by an interrupted run names no question: that
        // question is asked again.
        .filter_map(|l| serde_json::from_str::<Id>(l).ok())
        .map(|r| (r.id, r.answerer))
        .collect())
}
