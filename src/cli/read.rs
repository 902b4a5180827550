//! `carrel read`: a document's text, or its card.

use std::process::ExitCode;

use super::{Cli, Output, open};
use crate::Error;

/// The arguments of `carrel read`.
#[derive(clap::Args)]
pub struct Args {
    id: i64,
    #[arg(long)]
    card: bool,
    #[command(flatten)]
    output: Output,
}

/// Prints the document (or its card); a broken document fails.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let Args { id, card, output } = args;
    let doc = open(cli)?.read(*id)?;
    if *card {
        let Some(c) = &doc.card else {
            return Err(Error::Corrupt(format!(
                "document {id} has no card: {}",
                doc.document
                    .broken_reason
                    .as_deref()
                    .unwrap_or("it is not indexed")
            )));
        };
        if !output.json(c) {
            println!("{}", c.text());
        }
    } else if !output.json(&doc) {
        if let Some(reason) = &doc.document.broken_reason {
            eprintln!("error: document {id} is broken: {reason}");
            return Ok(ExitCode::FAILURE);
        }
        println!("# {}\n", doc.document.title);
        let mut last: Option<&Vec<String>> = None;
        for s in &doc.sections {
            if last != Some(&s.heading_path) && !s.heading_path.is_empty() {
                println!(
                    "{} {}\n",
                    "#".repeat(s.heading_path.len().min(5) + 1),
                    s.heading_path.join(" > ")
                );
            }
            if let Some(p) = s.page {
                println!("[page {p}]");
            }
            println!("{}\n", s.text);
            last = Some(&s.heading_path);
        }
    }
    Ok(ExitCode::SUCCESS)
}
