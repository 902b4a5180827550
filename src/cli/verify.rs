//! `carrel verify "LINE"`: is this line in the library, word for word? The
//! documents and passages that hold it, or "not in this library" with the
//! passage that comes closest. Exits 0 when found and 1 when not, as grep
//! does, so a script can ask.

use std::process::ExitCode;

use super::{Cli, Output, open};
use crate::Error;
use crate::answer::verify::{LineCheck, LinePlace};

/// The arguments of `carrel verify`.
#[derive(clap::Args)]
pub struct Args {
    /// The line to look for (whitespace and case do not matter)
    line: String,
    #[command(flatten)]
    output: Output,
}

pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let check = open(cli)?.verify_line(&args.line)?;
    if !args.output.json(&check) {
        println!("{}", describe(&args.line, &check));
    }
    Ok(match check {
        LineCheck::Found { .. } => ExitCode::SUCCESS,
        LineCheck::NotInLibrary { .. } => ExitCode::FAILURE,
    })
}

/// What the library says of `line`, for a person.
pub fn describe(line: &str, check: &LineCheck) -> String {
    match check {
        LineCheck::Found { places } => {
            let mut out = format!("\"{line}\" is in this library, verbatim:");
            for p in places {
                out.push_str(&format!("\n  {}", place(p)));
            }
            out
        }
        LineCheck::NotInLibrary { nearest } => {
            let mut out = format!("\"{line}\" is not in this library.");
            if let Some(p) = nearest {
                out.push_str(&format!("\n  Closest passage: {}", place(p)));
                let excerpt: String = p.passage.split_whitespace().collect::<Vec<_>>().join(" ");
                let excerpt: String = excerpt.chars().take(200).collect();
                out.push_str(&format!("\n    \"{excerpt}…\""));
            }
            out
        }
    }
}

fn place(p: &LinePlace) -> String {
    let headings = trail(&p.title, &p.heading_path);
    let page = p.page.map(|n| format!(", page {n}")).unwrap_or_default();
    format!(
        "{}{headings} (doc {}, chunk {}{page}) {}",
        p.title, p.doc, p.chunk, p.source
    )
}

/// A passage's headings after its document's title, as " › A › B": the
/// outermost heading is usually the title itself.
pub(super) fn trail(title: &str, heading_path: &[String]) -> String {
    let path = match heading_path.split_first() {
        Some((first, rest)) if first == title => rest,
        _ => heading_path,
    };
    path.iter().map(|h| format!(" › {h}")).collect()
}
