//! `carrel eval`: score both lanes and an FTS5 BM25 baseline on labelled
//! data (BEIR layout), in a scratch library removed afterwards, or kept in
//! `--keep-library DIR`, where a second run re-scans instead of embedding.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Cli, Output, models, progress_bar};
use crate::eval::EvalReport;
use crate::models::EmbedderKind;
use crate::sweep::{At, NOISE_TARGET};
use crate::{Error, LibraryConfig};

/// The arguments of `carrel eval`.
#[derive(clap::Args)]
pub struct Args {
    dir: PathBuf,
    /// Build the evaluation library in DIR and keep it: a later run on the
    /// same set finds every document unchanged and only asks the queries
    #[arg(long, value_name = "DIR")]
    keep_library: Option<PathBuf>,
    /// Write each floor's sweep (relevant and noise admitted as the floor
    /// moves, the floor in use and the operating point marked) as an SVG
    /// into DIR
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Embed the evaluation library with this embedder (a kept library
    /// keeps the one it was built with unless told)
    #[arg(long, value_name = "NAME")]
    embedder: Option<EmbedderKind>,
    #[command(flatten)]
    output: Output,
}

/// Runs the evaluation and prints its metrics as a Markdown table.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let report = evaluate(cli, args)?;
    if let Some(out) = &args.plot {
        plot_floors(&report, &args.dir, out)?;
    }
    if !args.output.json(&report) {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds the evaluation library (in a scratch folder unless one is kept)
/// and scores it, with progress.
fn evaluate(cli: &Cli, args: &Args) -> Result<EvalReport, Error> {
    let scratch = match &args.keep_library {
        Some(kept) => kept.clone(),
        None => crate::eval::scratch_dir()?,
    };
    if let Some(kind) = args.embedder {
        choose_embedder(&scratch, kind, models(cli)?)?;
    }
    let bar = progress_bar();
    let result = crate::eval::run(
        &args.dir,
        LibraryConfig::new(scratch.clone(), models(cli)?),
        &mut |p| {
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
            bar.set_message(p.current.rsplit('/').next().unwrap_or("").to_string());
        },
    );
    bar.finish_and_clear();
    if args.keep_library.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result
}

/// The report for people: the set, the lanes' table, then where the topic
/// lane lost what it lost, the floors, states and latency.
fn print_report(report: &EvalReport) {
    println!(
        "{} ({}): {} documents ({} broken), {} queries ({} with qrels, {} noise)",
        report.dataset,
        report.embedder,
        report.documents,
        report.broken_documents,
        report.queries,
        report.relevant_queries,
        report.noise_queries
    );
    print_lanes(report);
    print_by_kind(report);
    print_losses(report);
    print_floors(report);
    println!("subject states: {:?}", report.subject_states);
    println!("topic states:   {:?}", report.topic_states);
    print_latency(report);
}

/// Each lane and its baselines, one row each.
fn print_lanes(report: &EvalReport) {
    println!(
        "| lane | nDCG@10 | Recall@10 | MRR@10 | P@1 | fires on | first hit right when it fires | noise admitted |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, m) in [
        ("subject", &report.subject),
        ("subject, cosine order only", &report.subject_cosine),
        ("topic", &report.topic),
        ("topic, best passage by cosine only", &report.topic_dense),
        ("bm25 (FTS5)", &report.bm25),
    ] {
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0}% | {:.0}% | {} of {} |",
            m.ndcg_at_10,
            m.recall_at_10,
            m.mrr_at_10,
            m.p_at_1,
            100.0 * m.fires_on,
            100.0 * m.right_when_fired,
            m.noise_leaks,
            report.noise_queries
        );
    }
}

/// Per kind of query, where the set has more than one (the calibration
/// set's index terms and titles).
fn print_by_kind(report: &EvalReport) {
    if report.by_kind.len() <= 1 {
        return;
    }
    println!(
        "| lane, by kind of query | queries | nDCG@10 | fires on | first hit right when it fires |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (kind, k) in &report.by_kind {
        for (lane, m) in [("subject", &k.subject), ("topic", &k.topic)] {
            println!(
                "| {lane}, {kind} | {} | {:.3} | {:.0}% | {:.1}% |",
                k.queries,
                m.ndcg_at_10,
                100.0 * m.fires_on,
                100.0 * m.right_when_fired
            );
        }
    }
}

/// Where the topic lane lost relevant documents, and which scorer put the
/// subject lane's relevant card first.
fn print_losses(report: &EvalReport) {
    let t = &report.topic_losses;
    println!(
        "topic lane, relevant (query, document) pairs: {} in all, {} found in the first 10; \
         lost to: the candidate pool {}, the veto alone {}, veto and floor {}, the floor {}, \
         words the library never uses {}, rank past 10 {}",
        t.pairs,
        t.found,
        t.outside_pool,
        t.vetoed,
        t.vetoed_below_floor,
        t.below_floor,
        t.unfamiliar,
        t.ranked_out
    );
    let o = &report.subject_order;
    println!(
        "subject lane, cards the cross-encoder scored: on {} queries with a relevant one among them, \
         the cross-encoder put it first {} times, cosine {}",
        o.queries, o.cross_encoder_first, o.cosine_first
    );
}

fn print_latency(report: &EvalReport) {
    let l = &report.latency;
    println!(
        "latency: cold first query {:.0} ms; warm p50/p95 embed {:.1}/{:.1} ms, subject {:.1}/{:.1} ms, topic {:.1}/{:.1} ms, bm25 {:.1}/{:.1} ms",
        l.cold_first_query_ms,
        l.embed_p50_ms,
        l.embed_p95_ms,
        l.subject_p50_ms,
        l.subject_p95_ms,
        l.topic_p50_ms,
        l.topic_p95_ms,
        l.bm25_p50_ms,
        l.bm25_p95_ms
    );
}

/// Records the evaluation library's embedder before it is filled; a kept
/// library built with another is re-embedded, with a line that says so.
fn choose_embedder(
    dir: &std::path::Path,
    kind: EmbedderKind,
    models: crate::models::ModelConfig,
) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut lib = crate::Library::open(LibraryConfig::new(dir.to_path_buf(), models))?;
    if lib.embedder() != kind && !lib.list()?.is_empty() {
        eprintln!("re-embedding   {} with {kind}", dir.display());
    }
    lib.set_embedder(kind)?;
    Ok(())
}

/// Each floor in use and at its operating point (at most
/// [`NOISE_TARGET`] of the noise queries admitted): the share of relevant
/// queries it admits on a right candidate, and of noise it leaks.
fn print_floors(report: &crate::eval::EvalReport) {
    if report.noise_queries == 0 {
        return;
    }
    println!(
        "floors on {} relevant and {} noise queries (operating point: at most {:.0}% of noise admitted):",
        report.relevant_queries,
        report.noise_queries,
        100.0 * NOISE_TARGET
    );
    let show = |a: &At| {
        format!(
            "{:.3}: relevant admitted {:.0}% (right {:.0}%), noise admitted {:.1}%",
            a.value,
            100.0 * a.relevant_fired,
            100.0 * a.relevant_right,
            100.0 * a.noise
        )
    };
    for s in &report.floors {
        let point = s
            .operating_point(NOISE_TARGET)
            .map(|a| show(&a))
            .unwrap_or_else(|| "none".into());
        println!(
            "- {}: in use {}; operating point {}",
            s.floor,
            show(&s.at(s.current)),
            point
        );
    }
}

/// Writes `OUT/<set>-<floor>.svg` for each floor that judged anything.
fn plot_floors(
    report: &crate::eval::EvalReport,
    dir: &std::path::Path,
    out: &std::path::Path,
) -> Result<(), Error> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let set = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "set".into());
    for s in &report.floors {
        let name = crate::mention::slug(s.floor.split('(').next().unwrap_or(&s.floor));
        let path = out.join(format!("{set}-{name}.svg"));
        if s.plot(&path, &set)? {
            eprintln!("wrote {}", path.display());
        } else {
            eprintln!("{}: no query was judged, so no curve was drawn", s.floor);
        }
    }
    Ok(())
}
