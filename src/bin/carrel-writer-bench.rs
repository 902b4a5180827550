//! `carrel-writer-bench`: the built-in model as a user waits for it
//! (`make bench-writer`, release build). For contexts of about 1, 2 and 4
//! passages of the calibration set's library it asks index-term questions
//! and measures, from the moment the question is sent: the first checked
//! passage on screen (the context is shown before anyone writes), the
//! first written word (the model loaded, the prompt read), and the writing
//! speed. Then the match panel's latency, idle and while the model writes,
//! from a second handle on the same library, as the app's panel asks. Peak
//! RSS is the process's high-water mark with everything loaded.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Parser;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use carrel::answer::{self, Answerer, AnswererChoice, Corpus, Progress};
use carrel::{Library, LibraryConfig};

#[derive(Parser)]
struct Args {
    /// The calibration set (tools/calibration/build.sh OUT_DIR)
    set: PathBuf,
    /// The library of the set's documents: made and filled when empty
    #[arg(long)]
    library: PathBuf,
    /// Questions asked at each context size
    #[arg(long, default_value_t = 10)]
    questions: usize,
    /// Sentences written per answer before it is stopped
    #[arg(long, default_value_t = 2)]
    sentences: usize,
    /// Write the figures here as JSON too
    #[arg(long)]
    json: Option<PathBuf>,
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

/// Passes over the questions the idle panel is timed on.
const PANEL_PASSES: usize = 5;

/// One context size's medians.
#[derive(Serialize)]
struct Row {
    budget_chars: usize,
    answers: usize,
    passages: f64,
    prompt_tokens: f64,
    first_quote_ms: f64,
    first_word_ms: f64,
    write_tokens_per_s: f64,
}

#[derive(Serialize)]
struct Figures {
    rows: Vec<Row>,
    panel_idle_p50_ms: f64,
    panel_writing_p50_ms: f64,
    panel_asks_while_writing: usize,
    /// None where the kernel does not say (no /proc/self/status).
    peak_rss_mb: Option<f64>,
}

/// One answer as the user waited for it.
struct Timed {
    passages: usize,
    prompt_tokens: u32,
    first_quote_ms: f64,
    first_word_ms: f64,
    tokens_per_s: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    carrel::extract::worker::serve_if_asked();
    let args = Args::parse();
    let (mut lib, _) = carrel::eval::set_library(&args.set, &args.library, args.models.clone())?;
    let (answerer, note) = Answerer::choose(AnswererChoice::Local, lib.models(), None)?;
    if let Some(note) = note {
        return Err(note.into());
    }
    let config = LibraryConfig::new(args.library.clone(), lib.models().clone());
    let questions = questions(&args.set, args.questions)?;
    let mut rows = Vec::new();
    // About 1, 2 and 4 of the library's ~470-character passages; the last
    // is the built-in model's budget.
    for budget in [500, 950, answer::LOCAL_CONTEXT_CHARS] {
        let mut timed = Vec::new();
        for q in &questions {
            if let Some(t) = timed_answer(&mut lib, &answerer, q, budget, args.sentences)? {
                timed.push(t);
            }
        }
        let med = |f: fn(&Timed) -> f64| median(timed.iter().map(f).collect());
        rows.push(Row {
            budget_chars: budget,
            answers: timed.len(),
            passages: med(|t| t.passages as f64),
            prompt_tokens: med(|t| t.prompt_tokens as f64),
            first_quote_ms: med(|t| t.first_quote_ms),
            first_word_ms: med(|t| t.first_word_ms),
            write_tokens_per_s: med(|t| t.tokens_per_s),
        });
        eprintln!("context of {budget} characters: {} answers", timed.len());
    }
    let panel = Library::open(config)?;
    let (idle, writing) = panel_latency(&mut lib, panel, &answerer, &questions, args.sentences)?;
    let figures = Figures {
        rows,
        panel_idle_p50_ms: median(idle),
        panel_asks_while_writing: writing.len(),
        panel_writing_p50_ms: median(writing),
        peak_rss_mb: peak_rss_mb(),
    };
    print_table(&figures);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&figures)?)?;
    }
    Ok(())
}

/// Index-term questions in the order of their id's SHA-256, asked as the
/// answer calibration asks them.
fn questions(set: &std::path::Path, n: usize) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut all: Vec<Query> = std::fs::read_to_string(set.join("queries.jsonl"))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    all.retain(|q| q.kind == "index-term");
    all.sort_by_key(|q| Sha256::digest(q.id.as_bytes()).to_vec());
    Ok(all
        .into_iter()
        .take(n)
        .map(|q| format!("Explain {}.", q.text.trim_end_matches('.')))
        .collect())
}

/// Asks `question` with a context of `budget` characters, stopping after
/// `keep` sentences; none when the lanes gave no context (the model is not
/// asked then).
fn timed_answer(
    lib: &mut Library,
    answerer: &Answerer,
    question: &str,
    budget: usize,
    keep: usize,
) -> Result<Option<Timed>, Box<dyn std::error::Error>> {
    let sent = Instant::now();
    let prepared = answer::prepare(
        &mut [lib as &mut dyn Corpus],
        Vec::new(),
        question,
        None,
        budget,
    )?;
    let stop = AtomicBool::new(false);
    let (mut first_quote, mut first_word, mut ended) = (None, None, 0);
    let drafted = answer::draft(&prepared, answerer, &stop, &mut |p| match p {
        Progress::Context(_) => {
            first_quote.get_or_insert_with(|| ms(sent));
        }
        Progress::Text(t) if !t.trim().is_empty() => {
            first_word.get_or_insert_with(|| ms(sent));
        }
        Progress::Statement(_) => {
            ended += 1;
            if ended >= keep {
                stop.store(true, Ordering::Relaxed);
            }
        }
        _ => {}
    });
    let Some(Ok(drafts)) = drafted else {
        return Ok(None);
    };
    let (Some(w), Some(first_quote_ms), Some(first_word_ms)) =
        (drafts.writing, first_quote, first_word)
    else {
        return Ok(None);
    };
    let writing_s = (w.total_ms - w.first_token_ms) / 1000.0;
    Ok(Some(Timed {
        passages: prepared.context().len(),
        prompt_tokens: w.prompt_tokens,
        first_quote_ms,
        first_word_ms,
        tokens_per_s: if writing_s > 0.0 {
            w.tokens.saturating_sub(1) as f64 / writing_s
        } else {
            0.0
        },
    }))
}

/// The match panel's latency (the lanes for what is typed), idle and while
/// the model writes answers, each asked on `panel`, a second handle on the
/// library as the app's panel is.
fn panel_latency(
    lib: &mut Library,
    mut panel: Library,
    answerer: &Answerer,
    questions: &[String],
    keep: usize,
) -> Result<(Vec<f64>, Vec<f64>), Box<dyn std::error::Error>> {
    // Warm, as the panel is after the first question: one pass unmeasured,
    // then the same questions in the same turn as while the model writes.
    for q in questions {
        panel.match_query(q, 10)?;
    }
    let mut idle = Vec::new();
    for q in questions
        .iter()
        .cycle()
        .take(questions.len() * PANEL_PASSES)
    {
        let t = Instant::now();
        panel.match_query(q, 10)?;
        idle.push(ms(t));
    }
    let writing = AtomicBool::new(true);
    let while_writing = std::thread::scope(|s| {
        let asker = s.spawn(|| {
            let mut out = Vec::new();
            let mut i = 0;
            while writing.load(Ordering::Relaxed) {
                let t = Instant::now();
                if panel
                    .match_query(&questions[i % questions.len()], 10)
                    .is_ok()
                {
                    out.push(ms(t));
                }
                i += 1;
            }
            out
        });
        for q in questions {
            timed_answer(lib, answerer, q, answer::LOCAL_CONTEXT_CHARS, keep)
                .map_err(|e| e.to_string())?;
        }
        writing.store(false, Ordering::Relaxed);
        asker
            .join()
            .map_err(|_| "the panel's thread panicked".to_string())
    })?;
    Ok((idle, while_writing))
}

fn print_table(f: &Figures) {
    println!(
        "| context (chars) | answers | passages | prompt tokens | first passage on screen, ms | first written word, ms | writing, tokens/s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for r in &f.rows {
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} |",
            r.budget_chars,
            r.answers,
            r.passages,
            r.prompt_tokens,
            r.first_quote_ms,
            r.first_word_ms,
            r.write_tokens_per_s
        );
    }
    println!(
        "match panel p50: {:.1} ms idle, {:.1} ms while the model writes ({:.2}×, {} asks); peak RSS {}",
        f.panel_idle_p50_ms,
        f.panel_writing_p50_ms,
        f.panel_writing_p50_ms / f.panel_idle_p50_ms.max(1e-9),
        f.panel_asks_while_writing,
        f.peak_rss_mb
            .map_or("unknown (no /proc/self/status)".into(), |mb| format!(
                "{mb:.0} MB"
            ))
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// The process's resident high-water mark (VmHWM), MB.
fn peak_rss_mb() -> Option<f64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
}
