//! `carrel-scale`: how the lanes behave as a library grows. Builds (or
//! reuses) a synthetic library of N chunks from a real one (see
//! `carrel::store::synthetic` for how the vectors are made), then asks real
//! queries through `Library::match_query`, as the match panel does, and
//! reports each lane's latency, the peak memory while asking, and the size of
//! the database file. Not a test: `make bench-scale` runs it per size.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use serde::Serialize;

use carrel::lanes::knn;
use carrel::models::{Fingerprints, ModelConfig};
use carrel::paths::DATABASE_FILE;
use carrel::store::Store;
use carrel::store::synthetic::{self, Seed};
use carrel::{Library, LibraryConfig};

#[derive(Parser)]
struct Args {
    /// A library to take real chunks and cards from, e.g. one kept by
    /// `carrel eval --keep-library DIR` on Cranfield
    seed: PathBuf,
    /// The queries to ask (BEIR `queries.jsonl`)
    queries: PathBuf,
    /// Chunks in the synthetic library
    #[arg(long)]
    chunks: usize,
    /// Chunks per synthetic document (each document has one card)
    #[arg(long, default_value_t = 10)]
    per_doc: usize,
    /// Noise on every copied vector (per dimension, before normalising)
    #[arg(long, default_value_t = 0.05)]
    sigma: f32,
    /// Queries asked (the first is a warm-up and not counted)
    #[arg(long, default_value_t = 101)]
    asks: usize,
    /// Where the synthetic library is built; kept, and reused by a later run
    /// asking for the same size
    #[arg(long)]
    work: PathBuf,
    #[arg(long, env = "CARREL_MODELS")]
    models: PathBuf,
    /// Oversampling of the quantized search in the recall comparison
    /// [default: the lane's own]
    #[arg(long)]
    oversample: Option<usize>,
    /// Also append the figures here as one JSON line
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Serialize)]
struct Figures {
    chunks: usize,
    cards: usize,
    build_s: Option<f64>,
    db_mb: f64,
    queries: usize,
    topic_p50_ms: f64,
    topic_p95_ms: f64,
    subject_p50_ms: f64,
    subject_p95_ms: f64,
    /// Peak resident memory while asking (the build is not counted).
    peak_rss_mb: f64,
    /// How the topic lane searched at this size.
    topic_search: String,
    /// The nearest 100 chunks (the lane's pool) by the exact scan and by
    /// bits rescored, per query: their latency, and how many of the exact
    /// scan's first 10 and 100 the quantized search found.
    oversample: usize,
    exact_knn_p50_ms: f64,
    quantized_knn_p50_ms: f64,
    recall_at_10: f64,
    recall_at_100: f64,
}

#[derive(serde::Deserialize)]
struct Query {
    text: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let models = ModelConfig::new(args.models.clone());
    let fp = Fingerprints::of(&models)?;
    let dir = args.work.join(format!("{}-chunks", args.chunks));
    std::fs::create_dir_all(&dir)?;
    let marker = synthetic::describe(args.chunks, args.per_doc, args.sigma);
    let built = synthetic::built(&Store::open(&dir.join(DATABASE_FILE))?)?.as_deref()
        == Some(marker.as_str());
    let mut build_s = None;
    if !built {
        std::fs::remove_dir_all(&dir)?;
        std::fs::create_dir_all(&dir)?;
        let seed = Seed::read(&Store::open(&args.seed.join(DATABASE_FILE))?, &fp)?;
        eprintln!(
            "building {} chunks from {} real chunks and {} cards",
            args.chunks,
            seed.chunks.len(),
            seed.cards.len()
        );
        let started = Instant::now();
        let mut store = Store::open(&dir.join(DATABASE_FILE))?;
        let mut last = Instant::now();
        synthetic::grow(
            &mut store,
            &seed,
            args.chunks,
            args.per_doc,
            args.sigma,
            &fp,
            &mut |done| {
                if last.elapsed().as_secs() >= 10 {
                    last = Instant::now();
                    eprintln!("  {done} of {} chunks", args.chunks);
                }
            },
        )?;
        build_s = Some(started.elapsed().as_secs_f64());
    }
    let queries: Vec<String> = std::fs::read_to_string(&args.queries)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Query>(l).map(|q| q.text))
        .collect::<Result<_, _>>()?;
    let mut lib = Library::open(LibraryConfig::new(dir.clone(), models))?;
    let cards = lib.store().coverage(&fp.chunk, &fp.card)?.1.indexed;
    reset_peak_rss();
    let (mut topic, mut subject) = (Vec::new(), Vec::new());
    let mut search = None;
    for (i, q) in queries.iter().cycle().take(args.asks).enumerate() {
        let r = lib.match_query(q, 10)?;
        search = Some(r.explain.topic_search);
        if i > 0 {
            topic.push(r.explain.topic_ms);
            subject.push(r.explain.subject_ms);
        }
    }
    let peak_rss_mb = peak_rss_mb();
    let (mut exact_ms, mut quantized_ms, mut r10, mut r100) = (Vec::new(), Vec::new(), 0.0, 0.0);
    let asked: Vec<&String> = queries.iter().cycle().take(args.asks).skip(1).collect();
    for q in &asked {
        let v = lib.embed_query(q)?;
        let t = Instant::now();
        let exact = knn::exact(lib.store(), &v, 100, &fp.chunk)?;
        exact_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let oversample = args.oversample.unwrap_or(knn::OVERSAMPLE);
        let quantized = knn::quantized(lib.store(), &v, 100, oversample, &fp.chunk)?;
        quantized_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let found = |n: usize| {
            let approx: std::collections::HashSet<i64> =
                quantized.iter().take(n).map(|(id, _)| *id).collect();
            let truth = &exact[..n.min(exact.len())];
            truth.iter().filter(|(id, _)| approx.contains(id)).count() as f64
                / truth.len().max(1) as f64
        };
        r10 += found(10) / asked.len() as f64;
        r100 += found(100) / asked.len() as f64;
    }
    let db_mb = std::fs::metadata(dir.join(DATABASE_FILE))?.len() as f64 / 1e6;
    let figures = Figures {
        chunks: args.chunks,
        cards,
        build_s,
        db_mb,
        queries: topic.len(),
        topic_p50_ms: percentile(&mut topic, 0.50),
        topic_p95_ms: percentile(&mut topic, 0.95),
        subject_p50_ms: percentile(&mut subject, 0.50),
        subject_p95_ms: percentile(&mut subject, 0.95),
        peak_rss_mb,
        topic_search: match search {
            Some(knn::Search::Exact) | None => "exact".into(),
            Some(knn::Search::Quantized { oversample }) => format!("bits, {oversample}× rescored"),
        },
        oversample: args.oversample.unwrap_or(knn::OVERSAMPLE),
        exact_knn_p50_ms: percentile(&mut exact_ms, 0.50),
        quantized_knn_p50_ms: percentile(&mut quantized_ms, 0.50),
        recall_at_10: r10,
        recall_at_100: r100,
    };
    println!(
        "| {} | {} | {:.0} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {:.0} | {:.1} / {:.1} | {:.3} / {:.3} |",
        figures.chunks,
        figures.cards,
        figures.db_mb,
        figures.topic_search,
        figures.topic_p50_ms,
        figures.topic_p95_ms,
        figures.subject_p50_ms,
        figures.subject_p95_ms,
        figures.peak_rss_mb,
        figures.exact_knn_p50_ms,
        figures.quantized_knn_p50_ms,
        figures.recall_at_10,
        figures.recall_at_100,
    );
    if let Some(path) = &args.json {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(f, "{}", serde_json::to_string(&figures)?)?;
    }
    Ok(())
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// Resets the kernel's peak-RSS mark, so that the peak read later is the
/// asking's, not the build's.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_mb() -> f64 {
    carrel::models::pool::memory_mb("VmHWM").unwrap_or(f64::NAN)
}
