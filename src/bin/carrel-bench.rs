//! `carrel-bench`: the figures in the README, measured in one run on real
//! documents (`make bench` fetches them). Prints a markdown table and writes
//! the same figures as JSON. Not a test: timings on a shared machine drift,
//! so compare the ratios, which are taken in the same run.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use clap::Parser;
use serde::Serialize;

use carrel::models::onnx::TEXTS_EMBEDDED;
use carrel::models::{Embedder, ModelConfig, OnnxEmbedder};
use carrel::{Library, LibraryConfig};

#[derive(Parser)]
struct Args {
    /// Corpus folder with one subfolder per format (html, markdown, pdf,
    /// text, docx, odt, epub, pptx, rtf, image); `ocr-truth/NAME.txt` is the
    /// text an `image/NAME.png` should read as
    corpus: PathBuf,
    /// At most this many files per format
    #[arg(long, default_value_t = usize::MAX)]
    limit: usize,
    /// Texts used for the embedding-throughput comparison
    #[arg(long, default_value_t = 2000)]
    embed_sample: usize,
    #[arg(long, env = "CARREL_MODELS")]
    models: PathBuf,
    /// Also write the figures here as JSON
    #[arg(long)]
    json: Option<PathBuf>,
    /// Only these formats (comma-separated, e.g. `image`); default: all
    #[arg(long, value_delimiter = ',')]
    formats: Vec<String>,
    /// Documents in the workers' scaling run (taken in turn from html, pdf,
    /// markdown and text); 0 skips it
    #[arg(long, default_value_t = 60)]
    scaling_docs: usize,
    /// The largest worker count in the scaling run [default: every core]
    #[arg(long)]
    max_jobs: Option<usize>,
}

/// One worker count of the scaling run: the same documents into a fresh
/// library each time.
#[derive(Serialize)]
struct ScalingRow {
    workers: usize,
    docs: usize,
    chunks: u64,
    ingest_s: f64,
    docs_per_s: f64,
    chunks_per_s: f64,
    /// docs/s ÷ the one-worker docs/s of this run.
    speedup: f64,
    /// Texts embedded per second ÷ (workers × raw forward texts/s on one
    /// thread, over exactly the texts ingest embedded: chunks and cards).
    efficiency: f64,
    per_worker_mb: f64,
}

#[derive(Serialize)]
struct FormatFigures {
    format: String,
    files: usize,
    indexed: usize,
    broken: usize,
    chunks: u64,
    avg_chunk_chars: f64,
    ingest_s: f64,
    docs_per_s: f64,
    chunks_per_s: f64,
    rescan_s: f64,
    rescan_model_calls: u64,
    /// Raw forward passes over exactly this format's chunk texts.
    raw_forward_s: f64,
    /// End-to-end ingest throughput ÷ raw forward throughput, same chunks.
    ingest_vs_raw: f64,
    /// Extracting these files in this process, and in worker processes as
    /// ingest does: the difference is what isolation costs.
    extract_in_process_s: f64,
    extract_isolated_s: f64,
}

/// OCR against each page's own text layer.
#[derive(Serialize)]
struct OcrFigures {
    pages: usize,
    pages_per_s: f64,
    /// Character error rate: edit distance ÷ the text layer's length, with
    /// whitespace runs folded to one space on both sides.
    cer: f64,
}

#[derive(Serialize)]
struct Figures {
    formats: Vec<FormatFigures>,
    ocr: Option<OcrFigures>,
    embed_texts: usize,
    raw_forward_texts_per_s: f64,
    pipeline_embed_texts_per_s: f64,
    embed_ratio: f64,
    ingest_ratio: f64,
    /// The same ratio with isolation's cost taken out of the ingest time.
    ingest_ratio_in_process: f64,
    isolation_ms_per_file: f64,
    rescan_s_per_1000_files: f64,
    peak_rss_mb: f64,
    threads: usize,
    scaling: Vec<ScalingRow>,
    cores: usize,
}

/// Each file of a corpus folder, named one by one (as added by hand: a
/// folder scan leaves images out).
fn files_of(dir: &Path, limit: usize) -> Vec<carrel::ingest::Source> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file());
    files.sort();
    files.truncate(limit);
    files
        .into_iter()
        .map(carrel::ingest::Source::File)
        .collect()
}

fn peak_rss_mb() -> f64 {
    carrel::models::pool::memory_mb("VmHWM").unwrap_or(f64::NAN)
}

/// Totals over every format, for the whole-run ratios.
struct Totals {
    raw_s: f64,
    ingest_s: f64,
    files: usize,
    rescan_s: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    carrel::extract::worker::serve_if_asked();
    let args = Args::parse();
    let models = ModelConfig::new(args.models.clone());
    let work = tempfile_dir()?;
    let mut raw = OnnxEmbedder::load(&models)?;
    let mut sample: Vec<String> = Vec::new();
    let (formats, totals) = bench_formats(&args, &models, &work, &mut raw, &mut sample)?;
    let mut figures = summarise(formats, &sample, &totals, &mut raw, &models)?;
    if args.scaling_docs > 0 {
        figures.scaling = bench_scaling(&args, &models, &work, &mut raw)?;
    }
    if args.formats.is_empty() || args.formats.iter().any(|f| f == "image") {
        figures.ocr = ocr_quality(&args.corpus)?;
    }
    print_table(&figures);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&figures)?)?;
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Benchmarks every format folder the corpus has, adding to the sample of
/// chunk texts; returns each format's figures and the run's totals.
fn bench_formats(
    args: &Args,
    models: &ModelConfig,
    work: &Path,
    raw: &mut OnnxEmbedder,
    sample: &mut Vec<String>,
) -> Result<(Vec<FormatFigures>, Totals), Box<dyn std::error::Error>> {
    let mut formats = Vec::new();
    let (mut total_raw_s, mut total_ingest_s, mut total_files, mut total_rescan_s) =
        (0.0, 0.0, 0usize, 0.0);
    for format in [
        "html", "markdown", "pdf", "text", "docx", "odt", "epub", "pptx", "rtf", "image",
    ] {
        let dir = args.corpus.join(format);
        if !dir.is_dir() || !(args.formats.is_empty() || args.formats.iter().any(|f| f == format)) {
            continue;
        }
        let figures = bench_format(args, format, &dir, models, work, raw, sample)?;
        total_raw_s += figures.raw_forward_s;
        total_ingest_s += figures.ingest_s;
        total_files += figures.files;
        total_rescan_s += figures.rescan_s;
        formats.push(figures);
    }
    let totals = Totals {
        raw_s: total_raw_s,
        ingest_s: total_ingest_s,
        files: total_files,
        rescan_s: total_rescan_s,
    };
    Ok((formats, totals))
}

/// Ingests one format's files into a fresh library, then times raw forward
/// passes, extraction and a re-scan over the same files.
fn bench_format(
    args: &Args,
    format: &str,
    dir: &Path,
    models: &ModelConfig,
    work: &Path,
    raw: &mut OnnxEmbedder,
    sample: &mut Vec<String>,
) -> Result<FormatFigures, Box<dyn std::error::Error>> {
    let files = files_of(dir, args.limit);
    let mut lib = Library::open(LibraryConfig::new(work.join(format), models.clone()))?;
    // Load the model before timing, so ingest figures are warm.
    lib.add_sources(&[], Vec::new(), &mut |_| {})?;
    let t = Instant::now();
    let report = lib.add_sources(&files, Vec::new(), &mut |_| {})?;
    let ingest_s = t.elapsed().as_secs_f64();
    let density = lib.density()?;
    let chunks: u64 = density.iter().map(|d| d.chunks).sum();
    let chars: u64 = density.iter().map(|d| d.chars).sum();
    let mut texts = Vec::new();
    for d in &density {
        for c in lib.chunks(d.id)? {
            texts.push(carrel::ingest::chunk_embed_text(&c.heading_path, &c.text));
        }
    }
    sample.extend(texts.iter().take(args.embed_sample / 4).cloned());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    raw.forward_only(&refs)?;
    let raw_forward_s = t.elapsed().as_secs_f64();
    let calls = TEXTS_EMBEDDED.load(Ordering::Relaxed);
    let (extract_in_process_s, extract_isolated_s) = time_extraction(&files)?;
    let t = Instant::now();
    let again = lib.add_sources(&files, Vec::new(), &mut |_| {})?;
    let rescan_s = t.elapsed().as_secs_f64();
    assert_eq!(again.added, 0, "nothing changed between the two runs");
    Ok(FormatFigures {
        format: format.into(),
        files: files.len(),
        indexed: report.added,
        broken: report.failed.len(),
        chunks,
        avg_chunk_chars: if chunks == 0 {
            0.0
        } else {
            chars as f64 / chunks as f64
        },
        ingest_s,
        docs_per_s: files.len() as f64 / ingest_s,
        chunks_per_s: chunks as f64 / ingest_s,
        rescan_s,
        rescan_model_calls: TEXTS_EMBEDDED.load(Ordering::Relaxed) - calls,
        raw_forward_s,
        ingest_vs_raw: raw_forward_s / ingest_s,
        extract_in_process_s,
        extract_isolated_s,
    })
}

/// Times raw forward passes against Carrel's embed path on the sample, and
/// gathers the whole run's figures.
fn summarise(
    formats: Vec<FormatFigures>,
    sample: &[String],
    totals: &Totals,
    embedder: &mut OnnxEmbedder,
    models: &ModelConfig,
) -> Result<Figures, Box<dyn std::error::Error>> {
    // Raw forward passes vs Carrel's embed path on the same texts, same
    // model and thread count, alternated twice to even out machine noise.
    let refs: Vec<&str> = sample.iter().map(String::as_str).collect();
    let (mut raw_s, mut ours_s) = (0.0, 0.0);
    for _ in 0..2 {
        let t = Instant::now();
        embedder.forward_only(&refs)?;
        raw_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        embedder.embed(&refs)?;
        ours_s += t.elapsed().as_secs_f64();
    }
    let raw_rate = 2.0 * refs.len() as f64 / raw_s;
    let isolation_s: f64 = formats
        .iter()
        .map(|f| f.extract_isolated_s - f.extract_in_process_s)
        .sum();
    let ours = 2.0 * refs.len() as f64 / ours_s;
    Ok(Figures {
        formats,
        ocr: None,
        embed_texts: refs.len(),
        raw_forward_texts_per_s: raw_rate,
        pipeline_embed_texts_per_s: ours,
        embed_ratio: ours / raw_rate,
        ingest_ratio: totals.raw_s / totals.ingest_s,
        ingest_ratio_in_process: totals.raw_s / (totals.ingest_s - isolation_s),
        isolation_ms_per_file: isolation_s * 1000.0 / totals.files.max(1) as f64,
        rescan_s_per_1000_files: totals.rescan_s / totals.files.max(1) as f64 * 1000.0,
        peak_rss_mb: peak_rss_mb(),
        threads: models.threads,
        scaling: Vec::new(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// The same documents ingested with 1, 2, … workers, each into a fresh
/// library, against raw forward passes over the texts ingest embedded.
fn bench_scaling(
    args: &Args,
    models: &ModelConfig,
    work: &Path,
    raw: &mut OnnxEmbedder,
) -> Result<Vec<ScalingRow>, Box<dyn std::error::Error>> {
    let folders: Vec<Vec<carrel::ingest::Source>> = ["html", "pdf", "markdown", "text"]
        .iter()
        .map(|f| files_of(&args.corpus.join(f), usize::MAX))
        .collect();
    let mut files = Vec::new();
    for i in 0.. {
        if files.len() >= args.scaling_docs || folders.iter().all(|f| i >= f.len()) {
            break;
        }
        files.extend(folders.iter().filter_map(|f| f.get(i).cloned()));
    }
    files.truncate(args.scaling_docs);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max_jobs = args.max_jobs.unwrap_or(cores).max(2);
    let mut rows: Vec<ScalingRow> = Vec::new();
    let mut raw_rate = 0.0;
    for workers in 1..=max_jobs {
        let mut cfg = models.clone();
        cfg.jobs = workers;
        let dir = work.join(format!("scaling-{workers}"));
        let mut lib = Library::open(LibraryConfig::new(dir.clone(), cfg))?;
        // Load every worker's session before timing: the query embeds one
        // text, which starts the pool.
        lib.embed_query("warm up")?;
        let t = Instant::now();
        let report = lib.add_sources(&files, Vec::new(), &mut |_| {})?;
        let ingest_s = t.elapsed().as_secs_f64();
        let density = lib.density()?;
        let chunks: u64 = density.iter().map(|d| d.chunks).sum();
        let mut texts = Vec::new();
        for d in &density {
            for c in lib.chunks(d.id)? {
                texts.push(carrel::ingest::chunk_embed_text(&c.heading_path, &c.text));
            }
            if let Some(card) = lib.read(d.id)?.card {
                texts.push(card.text());
            }
        }
        if workers == 1 {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let t = Instant::now();
            raw.forward_only(&refs)?;
            raw_rate = refs.len() as f64 / t.elapsed().as_secs_f64();
        }
        let docs_per_s = files.len() as f64 / ingest_s;
        let base = rows.first().map_or(docs_per_s, |r| r.docs_per_s);
        eprintln!(
            "scaling: {workers} worker(s), {} docs ({} added), {ingest_s:.1} s",
            files.len(),
            report.added
        );
        rows.push(ScalingRow {
            workers,
            docs: files.len(),
            chunks,
            ingest_s,
            docs_per_s,
            chunks_per_s: chunks as f64 / ingest_s,
            speedup: docs_per_s / base,
            efficiency: texts.len() as f64 / ingest_s / (workers as f64 * raw_rate),
            per_worker_mb: lib
                .embedding_workers()
                .map_or(f64::NAN, |w| w.per_worker_mb),
        });
        drop(lib);
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(rows)
}

/// Seconds to extract every file in this process, then in worker processes.
fn time_extraction(
    files: &[carrel::ingest::Source],
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    use carrel::extract::{self, Kind, worker::Isolation};
    let mut read = Vec::new();
    for f in files {
        if let carrel::ingest::Source::File(p) = f {
            let bytes = std::fs::read(p)?;
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let kind = Kind::detect(p, &bytes);
            read.push((name, bytes, kind));
        }
    }
    // Alternated over two rounds, so neither way always runs on a colder cache.
    let (mut in_process, mut isolated) = (0.0, 0.0);
    for _ in 0..2 {
        let t = Instant::now();
        for (name, bytes, kind) in &read {
            let _ = extract::extract(name, bytes, *kind);
        }
        in_process += t.elapsed().as_secs_f64() / 2.0;
        let t = Instant::now();
        for (name, bytes, kind) in &read {
            let _ = extract::isolated(name, bytes, *kind, &Isolation::default(), &mut |_, _| {})?;
        }
        isolated += t.elapsed().as_secs_f64() / 2.0;
    }
    Ok((in_process, isolated))
}

/// OCR of each `image/NAME.png` that has an `ocr-truth/NAME.txt`, timed, and
/// its character error rate against that text.
fn ocr_quality(corpus: &Path) -> Result<Option<OcrFigures>, Box<dyn std::error::Error>> {
    use carrel::extract::{self, Kind};
    let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut pages, mut errors, mut truth_chars, mut seconds) = (0, 0usize, 0usize, 0.0);
    let Ok(entries) = std::fs::read_dir(corpus.join("ocr-truth")) else {
        return Ok(None);
    };
    let mut truths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    truths.sort();
    for truth in truths {
        let stem = truth.file_stem().unwrap_or_default().to_string_lossy();
        let image = corpus.join("image").join(format!("{stem}.png"));
        let Ok(bytes) = std::fs::read(&image) else {
            continue;
        };
        let expected = fold(&std::fs::read_to_string(&truth)?);
        let t = Instant::now();
        // A page OCR cannot read stops the measurement: an error rate over
        // the pages that did read would hide it.
        let read = extract::extract(&stem, &bytes, Kind::Image)
            .map(|d| fold(&d.body()))
            .map_err(|reason| format!("OCR of {}: {reason}", image.display()))?;
        seconds += t.elapsed().as_secs_f64();
        errors += strsim::levenshtein(&read, &expected);
        truth_chars += expected.chars().count();
        pages += 1;
    }
    Ok((pages > 0).then(|| OcrFigures {
        pages,
        pages_per_s: pages as f64 / seconds,
        cer: errors as f64 / truth_chars.max(1) as f64,
    }))
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("carrel-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn print_table(f: &Figures) {
    print_formats(f);
    print_figures(f);
    print_scaling(f);
}

/// One row per format.
fn print_formats(f: &Figures) {
    println!(
        "| format | files | indexed | broken | chunks | avg chunk chars | ingest docs/s | chunks/s | ingest ÷ raw forward | re-scan s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &f.formats {
        println!(
            "| {} | {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.2} | {:.3} |",
            r.format,
            r.files,
            r.indexed,
            r.broken,
            r.chunks,
            r.avg_chunk_chars,
            r.docs_per_s,
            r.chunks_per_s,
            r.ingest_vs_raw,
            r.rescan_s
        );
    }
}

/// The single figures: the embed path against the raw forward pass, the
/// re-scan, memory, OCR.
fn print_figures(f: &Figures) {
    println!();
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| raw ORT forward (tokenise + run), texts/s | {:.1} |",
        f.raw_forward_texts_per_s
    );
    println!(
        "| Carrel embed path (sorted batches, pooled), texts/s | {:.1} |",
        f.pipeline_embed_texts_per_s
    );
    println!(
        "| embed path ÷ raw forward ({} texts) | {:.2} |",
        f.embed_texts, f.embed_ratio
    );
    println!(
        "| end-to-end ingest ÷ raw forward, on the same chunks | {:.2} |",
        f.ingest_ratio
    );
    println!(
        "| the same with isolation's cost taken out (as if extracted in process) | {:.2} |",
        f.ingest_ratio_in_process
    );
    println!(
        "| isolation's cost per file, ms | {:.1} |",
        f.isolation_ms_per_file
    );
    println!(
        "| re-scan of unchanged files, s per 1,000 files | {:.3} |",
        f.rescan_s_per_1000_files
    );
    println!(
        "| model calls during re-scan | {} |",
        f.formats.iter().map(|r| r.rescan_model_calls).sum::<u64>()
    );
    println!("| peak RSS, MB | {:.0} |", f.peak_rss_mb);
    println!("| ONNX intra-op threads | {} |", f.threads);
    if let Some(o) = &f.ocr {
        println!(
            "| OCR, pages/s (300 dpi, one Tesseract thread) | {:.2} |",
            o.pages_per_s
        );
        println!(
            "| OCR character error rate against the text layer ({} pages) | {:.4} |",
            o.pages, o.cer
        );
    }
}

/// Ingest by number of workers, when it was measured.
fn print_scaling(f: &Figures) {
    if f.scaling.is_empty() {
        return;
    }
    println!();
    println!(
        "| workers ({} cores) | docs | chunks | ingest s | docs/s | chunks/s | speed-up | ingest ÷ (workers × raw forward) | MB per worker |",
        f.cores
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &f.scaling {
        println!(
            "| {} | {} | {} | {:.1} | {:.2} | {:.1} | {:.2}× | {:.2} | {:.0} |",
            r.workers,
            r.docs,
            r.chunks,
            r.ingest_s,
            r.docs_per_s,
            r.chunks_per_s,
            r.speedup,
            r.efficiency,
            r.per_worker_mb
        );
    }
}
