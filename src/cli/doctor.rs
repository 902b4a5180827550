//! `carrel doctor`: check the runtime, models, fingerprints and library.

use std::process::ExitCode;

use super::{Cli, Output, create};
use crate::{Error, Limits};

/// The arguments of `carrel doctor`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    output: Output,
}

/// Prints every check; fails when any check failed or the database is not
/// sound.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { output } = args;
    // The doctor examines the library where it would be, and makes
    // an empty one there if there is none, to check the schema.
    let d = create(cli, Limits::default())?.doctor()?;
    let sound = d.integrity == "ok" && d.orphans.iter().all(|(_, n)| *n == 0);
    let healthy = d.runtime.is_ok() && d.embedder.is_ok() && d.reranker.is_ok() && sound;
    if !output.json(&d) {
        let show = |c: &crate::HealthCheck| match c {
            crate::HealthCheck::Ok { detail } => format!("ok      {detail}"),
            crate::HealthCheck::Failed { error } => format!("FAILED  {error}"),
        };
        println!("library       {}", d.library.display());
        match (&d.server, &d.pgvector, &d.sqlite_vec) {
            (Some(server), Some(v), _) => {
                println!("server        {server}");
                println!("schema        v{}   pgvector {v}", d.schema_version);
            }
            (_, _, v) => println!(
                "schema        v{}   sqlite-vec {}",
                d.schema_version,
                v.as_deref().unwrap_or("?")
            ),
        }
        println!(
            "models dir    {}   ({})",
            d.models_dir.display(),
            d.models_from.describe()
        );
        println!("runtime       {}", show(&d.runtime));
        println!("embedder      {}", show(&d.embedder));
        println!("reranker      {}", show(&d.reranker));
        // Optional: missing is a note, not a failure of the installation.
        let optional = |c: &crate::HealthCheck| match c {
            crate::HealthCheck::Ok { detail } => format!("ok      {detail}"),
            crate::HealthCheck::Failed { error } => format!("missing {error}"),
        };
        println!("pdftotext     {}", optional(&d.pdftotext));
        println!("ocr           {}", optional(&d.ocr));
        if let Some(f) = &d.fingerprints {
            println!("fingerprints  {}  {}", f.chunk, f.card);
        }
        println!(
            "contents      {} documents, {} bodies, {} chunks, {} chunk vectors",
            d.documents, d.contents, d.chunks, d.chunk_vectors
        );
        let orphans: Vec<String> = d
            .orphans
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        if sound {
            println!("database      ok      integrity check passed, no orphan rows");
        } else {
            println!(
                "database      FAILED  integrity: {}; orphans: {}",
                d.integrity,
                if orphans.is_empty() {
                    "none".into()
                } else {
                    orphans.join(", ")
                }
            );
        }
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
