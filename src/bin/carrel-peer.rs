//! `carrel-peer`: Carrel's side of `make bench-peer` (bench/peer/), the
//! side-by-side benchmark against a chromadb pipeline. Each subcommand runs
//! in its own process, so the driver can read its peak RSS, and prints one
//! JSON object.
//!
//! - `embed-store CHUNKS`: Carrel's embedding pool (`--jobs` workers, by
//!   default every core but one, as `carrel add`) over the exported chunk
//!   texts, then the vectors written to the library's own `chunk_vectors`
//!   table (sqlite-vec), one transaction: the work chromadb's `add` does.
//! - `export-chunks LIBRARY OUT`: every chunk text of a library exactly as
//!   Carrel embedded it, so both systems embed the same texts.
//! - `score-run DATASET RUN`: scores another system's ranking with the same
//!   metrics code `carrel eval` uses, so every nDCG in the table has one owner.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, Subcommand};
use rusqlite::params;
use serde::{Deserialize, Serialize};

use carrel::models::pool::EmbedPool;
use carrel::models::{Embedder, ModelConfig};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Embed chunk texts (JSONL of {"text"}) and store the vectors
    EmbedStore {
        chunks: PathBuf,
        #[arg(long, env = "CARREL_MODELS")]
        models: PathBuf,
        /// ONNX intra-op threads per worker
        #[arg(long, default_value_t = carrel::models::DEFAULT_THREADS)]
        threads: usize,
        /// Embedding workers [default: every core but one, as `carrel add`]
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Write every chunk of LIBRARY as Carrel embeds it (JSONL of {"doc", "text"})
    ExportChunks {
        library: PathBuf,
        out: PathBuf,
        #[arg(long, env = "CARREL_MODELS")]
        models: PathBuf,
    },
    /// Score a ranking ({"query id": ["doc id", ...]}) against DATASET's qrels
    ScoreRun { dataset: PathBuf, run: PathBuf },
}

#[derive(Deserialize)]
struct Chunk {
    text: String,
}

#[derive(Serialize)]
struct Timing {
    system: &'static str,
    texts: usize,
    load_s: f64,
    embed_s: f64,
    store_s: f64,
    seconds: f64,
    texts_per_s: f64,
    threads: usize,
    /// Workers that ran (the memory cap may start fewer than asked).
    jobs: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    carrel::extract::worker::serve_if_asked();
    match Cli::parse().command {
        Command::EmbedStore {
            chunks,
            models,
            threads,
            jobs,
        } => embed_store(chunks, models, threads, jobs)?,
        Command::ExportChunks {
            library,
            out,
            models,
        } => export_chunks(library, out, models)?,
        Command::ScoreRun { dataset, run } => score_run(dataset, run)?,
    }
    Ok(())
}

/// `embed-store`: embeds the chunk texts, stores the vectors in one
/// transaction, and prints the timing as JSON.
fn embed_store(
    chunks: PathBuf,
    models: PathBuf,
    threads: usize,
    jobs: Option<usize>,
) -> Result<(), Box<dyn std::error::Error>> {
    let texts = read_chunk_texts(&chunks)?;
    let (mut embedder, load_s) = load_pool(models, threads, jobs)?;
    let jobs = embedder.size().map_or(1, |s| s.running);
    let (dir, mut conn) = open_scratch_store()?;

    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let vectors = embedder.embed(&refs)?;
    let embed_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    store_vectors(&mut conn, &vectors)?;
    let store_s = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    let seconds = embed_s + store_s;
    println!(
        "{}",
        serde_json::to_string(&Timing {
            system: "carrel",
            texts: texts.len(),
            load_s,
            embed_s,
            store_s,
            seconds,
            texts_per_s: texts.len() as f64 / seconds,
            threads,
            jobs,
        })?
    );
    Ok(())
}

/// Reads the chunk texts from a JSONL file of `{"text"}`, skipping blank lines.
fn read_chunk_texts(chunks: &Path) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let texts: Vec<String> = std::fs::read_to_string(chunks)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Chunk>(l).map(|c| c.text))
        .collect::<Result<_, _>>()?;
    Ok(texts)
}

/// Starts the embedding pool and warms it up; returns it with the seconds
/// that took, which are not counted as embedding.
fn load_pool(
    models: PathBuf,
    threads: usize,
    jobs: Option<usize>,
) -> Result<(EmbedPool, f64), Box<dyn std::error::Error>> {
    let mut config = ModelConfig::new(models);
    config.threads = threads;
    if let Some(jobs) = jobs {
        config.jobs = jobs;
    }
    let t = Instant::now();
    let mut pool = EmbedPool::new(config);
    // The first text loads the first worker; the others load while it
    // embeds 32 texts per worker (a session loads in about 0.4 s here, a
    // text takes about 30 ms), so the timed part starts with every session
    // warm.
    pool.embed(&["warm up"])?;
    let running = pool.size().map_or(1, |s| s.running);
    pool.embed(&vec!["warm up"; 32 * running])?;
    let load_s = t.elapsed().as_secs_f64();
    Ok((pool, load_s))
}

/// Creates a scratch folder holding a database with the real schema, and
/// opens a connection to it.
fn open_scratch_store() -> Result<(PathBuf, rusqlite::Connection), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("carrel-peer-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join(carrel::DATABASE_FILE);
    // The real schema (and sqlite-vec registered for this process).
    drop(carrel::store::Store::open(&db)?);
    let conn = rusqlite::Connection::open(&db)?;
    Ok((dir, conn))
}

/// Writes the vectors to `chunk_vectors` in one transaction.
fn store_vectors(
    conn: &mut rusqlite::Connection,
    vectors: &[Vec<f32>],
) -> Result<(), Box<dyn std::error::Error>> {
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO chunk_vectors (chunk_id, embedding, fingerprint) VALUES (?1, ?2, 'bench')",
        )?;
        for (i, v) in vectors.iter().enumerate() {
            insert.execute(params![
                i as i64 + 1,
                zerocopy::IntoBytes::as_bytes(v.as_slice())
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// `export-chunks`: writes every chunk of the library as Carrel embeds it,
/// once per distinct body, and prints the count as JSON.
fn export_chunks(
    library: PathBuf,
    out: PathBuf,
    models: PathBuf,
) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    let lib = carrel::Library::open(carrel::LibraryConfig::new(
        library,
        ModelConfig::new(models),
    ))?;
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out)?);
    let mut n = 0;
    let mut seen = std::collections::HashSet::new();
    for doc in lib.list()? {
        // Identical bodies are stored and embedded once.
        if !doc
            .content_hash
            .as_ref()
            .is_some_and(|h| seen.insert(h.clone()))
        {
            continue;
        }
        for c in lib.chunks(doc.id)? {
            let text = carrel::ingest::chunk_embed_text(&c.heading_path, &c.text);
            serde_json::to_writer(&mut w, &serde_json::json!({"doc": doc.id, "text": text}))?;
            w.write_all(b"\n")?;
            n += 1;
        }
    }
    w.flush()?;
    println!("{}", serde_json::json!({"chunks": n}));
    Ok(())
}

/// `score-run`: scores another system's ranking against the dataset's qrels
/// and prints the scores as JSON.
fn score_run(dataset: PathBuf, run: PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    let run: HashMap<String, Vec<String>> = serde_json::from_str(&std::fs::read_to_string(run)?)?;
    let scores = carrel::eval::score_run(&dataset, &run)?;
    println!("{}", serde_json::to_string(&scores)?);
    Ok(())
}
