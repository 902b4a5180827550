//! `carrel-scale`: how the lanes behave as a library grows. Builds (or
//! reuses) a synthetic library of N chunks from a real one (see
//! `carrel::store::synthetic` for how the vectors are made), then asks real
//! queries through `Library::match_query`, as the match panel does, and
//! reports each lane's latency, the peak memory while asking, and the size of
//! the database file. Not a test: `make bench-scale` runs it per size.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use serde::Serialize;

use carrel::lanes::TOPIC_CANDIDATES;
use carrel::models::{Fingerprints, ModelConfig};
use carrel::paths::DATABASE_FILE;
use carrel::store::copy::CopyStep;
use carrel::store::signs::Search;
use carrel::store::synthetic::{self, Seed};
use carrel::store::{SqliteStore, Store};
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
    /// Also append the figures here as one JSON line
    #[arg(long)]
    json: Option<PathBuf>,
    /// Ask the same library on PostgreSQL instead: copied (`carrel kb
    /// copy`'s copy) into this empty database, or reused when it holds it
    /// (a read replica of the database it was copied into is asked as it
    /// is)
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
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
    /// A whole question as `carrel match` asks it: the query's embedding,
    /// its language, both lanes and the retrieval log.
    question_p50_ms: f64,
    question_p95_ms: f64,
    /// Peak resident memory while asking (the build is not counted). It
    /// counts the library file's pages read through the memory map, which
    /// the exact KNN compared against reads whole.
    peak_rss_mb: f64,
    /// Resident memory of the process's own (anonymous) pages after
    /// asking: the part not backed by a file.
    private_rss_mb: f64,
    /// How the topic lane fetched its nearest chunks at this size.
    search: Search,
    /// The first fetch, which builds the sign bits when they are used.
    first_fetch_ms: f64,
    /// The nearest-chunk fetch alone, as the lane does it, against
    /// sqlite-vec's exact KNN, on the same queries.
    fetch_p50_ms: f64,
    exact_p50_ms: f64,
    /// Of the exact KNN's top 10 (top 100) chunks, the share the lane's
    /// fetch found.
    recall_at_10: f64,
    recall_at_100: f64,
    /// Of the exact nearest cards (as many as the subject lane takes), the
    /// share its fetch found.
    card_recall: f64,
    /// Which store answered: "sqlite", "postgresql" or "postgresql
    /// replica" (a hot standby of the database the library was copied
    /// into).
    store: &'static str,
}

#[derive(serde::Deserialize)]
struct Query {
    text: String,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Fallible<()> {
    let args = Args::parse();
    let models = ModelConfig::new(args.models.clone());
    let fp = Fingerprints::of(&models)?;
    let (dir, build_s) = match &args.postgres {
        Some(url) => on_postgres(&args, &fp, url)?,
        None => build(&args, &fp)?,
    };
    let queries: Vec<String> = std::fs::read_to_string(&args.queries)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Query>(l).map(|q| q.text))
        .collect::<Result<_, _>>()?;
    let mut lib = Library::open(LibraryConfig::new(dir.clone(), models))?;
    let cards = lib.store().coverage(&fp.chunk, &fp.card)?.1.indexed;
    let mut fetch = fetch(&mut lib, &queries, args.asks, &fp)?;
    reset_peak_rss();
    let (mut topic, mut subject, mut question) = (Vec::new(), Vec::new(), Vec::new());
    for (i, q) in queries.iter().cycle().take(args.asks).enumerate() {
        let started = Instant::now();
        let r = lib.match_query(q, 10)?;
        if i > 0 {
            question.push(ms(started));
            topic.push(r.explain.topic_ms);
            subject.push(r.explain.subject_ms);
        }
    }
    let figures = Figures {
        chunks: args.chunks,
        cards,
        build_s,
        db_mb: database_mb(&dir, args.postgres.as_deref())?,
        queries: topic.len(),
        topic_p50_ms: percentile(&mut topic, 0.50),
        topic_p95_ms: percentile(&mut topic, 0.95),
        subject_p50_ms: percentile(&mut subject, 0.50),
        subject_p95_ms: percentile(&mut subject, 0.95),
        question_p50_ms: percentile(&mut question, 0.50),
        question_p95_ms: percentile(&mut question, 0.95),
        peak_rss_mb: peak_rss_mb(),
        private_rss_mb: carrel::models::pool::memory_mb("RssAnon").unwrap_or(f64::NAN),
        search: fetch.search,
        first_fetch_ms: fetch.first_ms,
        fetch_p50_ms: percentile(&mut fetch.fast_ms, 0.50),
        exact_p50_ms: percentile(&mut fetch.exact_ms, 0.50),
        recall_at_10: fetch.hits10 as f64 / fetch.asked10.max(1) as f64,
        recall_at_100: fetch.hits100 as f64 / fetch.asked100.max(1) as f64,
        card_recall: fetch.card_hits as f64 / fetch.card_asked.max(1) as f64,
        store: store_name(args.postgres.as_deref())?,
    };
    print_row(&figures);
    eprintln!(
        "a whole question (its embedding and language, both lanes, the log): p50 {:.1} ms, p95 {:.1} ms",
        figures.question_p50_ms, figures.question_p95_ms
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

/// The synthetic library of `args.chunks` chunks, built from the seed
/// unless the one in the work folder was built the same way: its folder,
/// and the seconds the build took (none when it was kept).
fn build(args: &Args, fp: &Fingerprints) -> Fallible<(PathBuf, Option<f64>)> {
    let dir = args.work.join(format!("{}-chunks", args.chunks));
    std::fs::create_dir_all(&dir)?;
    let marker = synthetic::describe(args.chunks, args.per_doc, args.sigma);
    let built = synthetic::built(&SqliteStore::open(&dir.join(DATABASE_FILE))?)?.as_deref()
        == Some(marker.as_str());
    if built {
        return Ok((dir, None));
    }
    std::fs::remove_dir_all(&dir)?;
    std::fs::create_dir_all(&dir)?;
    let seed = Seed::read(&SqliteStore::open(&args.seed.join(DATABASE_FILE))?, fp)?;
    eprintln!(
        "building {} chunks from {} real chunks and {} cards",
        args.chunks,
        seed.chunks.len(),
        seed.cards.len()
    );
    let started = Instant::now();
    let mut store = SqliteStore::open(&dir.join(DATABASE_FILE))?;
    let mut last = Instant::now();
    synthetic::grow(
        &mut store,
        &seed,
        args.chunks,
        args.per_doc,
        args.sigma,
        fp,
        &mut |done| {
            if last.elapsed().as_secs() >= 10 {
                last = Instant::now();
                eprintln!("  {done} of {} chunks", args.chunks);
            }
        },
    )?;
    Ok((dir, Some(started.elapsed().as_secs_f64())))
}

/// The synthetic library copied into the PostgreSQL database at `url`
/// (kept there: a later run reuses it when it holds as many chunks, and
/// then neither builds nor copies): the folder naming it, and the seconds
/// the copy took (the SQLite build before it not counted).
fn on_postgres(args: &Args, fp: &Fingerprints, url: &str) -> Fallible<(PathBuf, Option<f64>)> {
    let dir = args.work.join(format!("{}-chunks-postgresql", args.chunks));
    std::fs::create_dir_all(&dir)?;
    let _ = std::fs::remove_file(dir.join(carrel::store::POSTGRES_FILE));
    let (mut to, _) = Store::create_postgres(&dir, url)?;
    let chunks = to.counts()?[2];
    if chunks == args.chunks as i64 {
        return Ok((dir, None));
    }
    if chunks > 0 {
        return Err(format!(
            "{url} holds another library ({chunks} chunks); give an empty database"
        )
        .into());
    }
    let (sqlite, _) = build(args, fp)?;
    eprintln!("copying {} chunks into {url}", args.chunks);
    let started = Instant::now();
    let mut last = Instant::now();
    Store::open_dir(&sqlite)?.copy_into(&mut to, &mut |step| match step {
        CopyStep::Bodies { done, of } if last.elapsed().as_secs() >= 30 => {
            last = Instant::now();
            eprintln!("  {done} of {of} bodies");
        }
        CopyStep::Indexing => eprintln!(
            "  building the search indexes ({:.0} s in)",
            started.elapsed().as_secs_f64()
        ),
        _ => {}
    })?;
    Ok((dir, Some(started.elapsed().as_secs_f64())))
}

/// Which store answers at `postgres` (SQLite when none).
fn store_name(postgres: Option<&str>) -> Fallible<&'static str> {
    let Some(url) = postgres else {
        return Ok("sqlite");
    };
    let replica: bool = postgres::Client::connect(url, postgres::NoTls)?
        .query_one("SELECT pg_is_in_recovery()", &[])?
        .get(0);
    Ok(if replica {
        "postgresql replica"
    } else {
        "postgresql"
    })
}

/// The library's size on disk: its SQLite file, or its PostgreSQL
/// database with indexes.
fn database_mb(dir: &std::path::Path, postgres: Option<&str>) -> Fallible<f64> {
    let bytes = match postgres {
        None => std::fs::metadata(dir.join(DATABASE_FILE))?.len() as i64,
        Some(url) => postgres::Client::connect(url, postgres::NoTls)?
            .query_one("SELECT pg_database_size(current_database())", &[])?
            .get(0),
    };
    Ok(bytes as f64 / 1e6)
}

/// How the topic lane's fetch of its nearest chunks did against
/// sqlite-vec's exact KNN on the same query vectors.
struct Fetch {
    search: Search,
    first_ms: f64,
    fast_ms: Vec<f64>,
    exact_ms: Vec<f64>,
    hits10: usize,
    asked10: usize,
    hits100: usize,
    asked100: usize,
    card_hits: usize,
    card_asked: usize,
}

/// The topic lane's nearest chunks, fetched the way the lane fetches them
/// and exactly, for the first `asks` queries: recall of the exact top 10
/// and top 100, and each one's time. The first fetch also builds the sign
/// bits (when the library is large enough to use them).
fn fetch(lib: &mut Library, queries: &[String], asks: usize, fp: &Fingerprints) -> Fallible<Fetch> {
    let vectors = queries
        .iter()
        .take(asks)
        .map(|q| lib.embed_query(q))
        .collect::<carrel::Result<Vec<_>>>()?;
    let first = vectors
        .first()
        .ok_or("no queries to ask: the queries file is empty or --asks is 0")?;
    let started = Instant::now();
    let (_, search) = lib
        .store()
        .nearest_chunks(first, TOPIC_CANDIDATES, &fp.chunk)?;
    let mut f = Fetch {
        search,
        first_ms: ms(started),
        fast_ms: Vec::new(),
        exact_ms: Vec::new(),
        hits10: 0,
        asked10: 0,
        hits100: 0,
        asked100: 0,
        card_hits: 0,
        card_asked: 0,
    };
    for v in &vectors {
        let started = Instant::now();
        let (fast, _) = lib.store().nearest_chunks(v, TOPIC_CANDIDATES, &fp.chunk)?;
        f.fast_ms.push(ms(started));
        let started = Instant::now();
        let exact = lib
            .store()
            .nearest_chunks_exact(v, TOPIC_CANDIDATES, &fp.chunk)?;
        f.exact_ms.push(ms(started));
        let fast: HashSet<i64> = fast.iter().map(|(id, _)| *id).collect();
        for (rank, (id, _)) in exact.iter().enumerate() {
            let found = fast.contains(id) as usize;
            if rank < 10 {
                (f.hits10, f.asked10) = (f.hits10 + found, f.asked10 + 1);
            }
            (f.hits100, f.asked100) = (f.hits100 + found, f.asked100 + 1);
        }
        let k = carrel::lanes::SUBJECT_CANDIDATES;
        let cards: HashSet<i64> = lib
            .store()
            .nearest_cards(v, k, &fp.card)?
            .iter()
            .map(|c| c.content)
            .collect();
        for c in lib.store().nearest_cards_exact(v, k, &fp.card)? {
            f.card_hits += cards.contains(&c.content) as usize;
            f.card_asked += 1;
        }
    }
    Ok(f)
}

/// One row of the README's table, its columns in its order.
fn print_row(figures: &Figures) {
    println!(
        "| {} | {} | {} | {:.0} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {}: {:.1} ({:.1}) | {:.3} / {:.3} | {:.3} | {:.0} ({:.0}) |",
        figures.store,
        figures.chunks,
        figures.cards,
        figures.db_mb,
        figures
            .build_s
            .map_or("kept".to_string(), |s| format!("{s:.0}")),
        figures.topic_p50_ms,
        figures.topic_p95_ms,
        figures.subject_p50_ms,
        figures.subject_p95_ms,
        match figures.search {
            Search::Exact => "exact",
            Search::Signs { .. } => "sign bits",
            Search::Hnsw { .. } => "HNSW",
        },
        figures.fetch_p50_ms,
        figures.exact_p50_ms,
        figures.recall_at_10,
        figures.recall_at_100,
        figures.card_recall,
        figures.peak_rss_mb,
        figures.private_rss_mb,
    );
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
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
