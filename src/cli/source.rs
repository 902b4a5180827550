//! `carrel source`: foreign sources (someone else's vector collection),
//! asked beside the library behind six gates. Every line that says whether
//! retrieval reads a source comes from [`crate::foreign::skip_reason`].

use std::process::ExitCode;

use super::{Cli, ago, open, print_json};
use crate::Error;
use crate::foreign::{
    self, Acknowledgement, CrossEncoder, Declared, Kind, Metric, Scope, SkipReason, Source,
    SourceView,
};

/// The arguments of `carrel source`: one of its subcommands.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Declare a source (or change one): a Chroma collection; its schema is
    /// read at once when the server answers
    Add(AddArgs),
    /// Check that the server answers and holds the collection
    Test { name: String },
    /// Read the collection's real metric, dimensions and payload keys
    Discover { name: String },
    /// Take what discovery read as the declaration (metric, dimensions, and
    /// Chroma's document text as the text key when none is named)
    Adopt { name: String },
    /// Accept that a source with no scope may return any of its points
    Acknowledge {
        name: String,
        /// Who accepts it (kept with the time and the sentence)
        #[arg(long)]
        by: String,
    },
    /// Ask the source on every query, if its gates let it be read
    Enable { name: String },
    /// Stop asking the source
    Disable { name: String },
    /// Every source and whether retrieval reads it, or why not
    List {
        #[arg(long)]
        json: bool,
    },
    /// Forget a source (its collection is not touched)
    Rm { name: String },
}

/// The arguments of `carrel source add`.
#[derive(clap::Args)]
struct AddArgs {
    name: String,
    /// The Chroma server's URL, e.g. http://127.0.0.1:8000
    #[arg(long)]
    chroma: String,
    /// The collection's name
    #[arg(long)]
    collection: String,
    #[arg(long, default_value = "default_tenant")]
    tenant: String,
    #[arg(long, default_value = "default_database")]
    database: String,
    /// The collection's distance: cosine, l2 or ip
    #[arg(long, default_value = "cosine", value_parser = parse_metric)]
    metric: Metric,
    /// The dimensions of its vectors
    #[arg(long, default_value_t = foreign::EMBEDDER_DIMENSIONS as u32)]
    dimensions: u32,
    /// The model that made its vectors (the query vector must come from it)
    #[arg(long, default_value = foreign::EMBEDDER)]
    embedder: String,
    /// The payload key holding each point's text (`#document`: Chroma's own
    /// documents)
    #[arg(long)]
    text_key: Option<String>,
    /// Only points whose payload KEY equals VALUE
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_scope)]
    scope: Option<Scope>,
    /// Gate 5, on the collection's own scale: a maximum distance for
    /// Chroma (lower is closer)
    #[arg(long)]
    limit: Option<f32>,
}

fn parse_metric(s: &str) -> Result<Metric, String> {
    Metric::parse(s).ok_or_else(|| format!("{s} is not a metric (cosine, l2, ip)"))
}

fn parse_scope(s: &str) -> Result<Scope, String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s} is not KEY=VALUE"))?;
    Ok(Scope {
        key: key.to_string(),
        value: value.to_string(),
    })
}

/// Runs the `carrel source` subcommand `args` names.
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let mut library = open(cli)?;
    match &args.command {
        Command::Add(a) => {
            let at = Kind::Chroma {
                url: a.chroma.clone(),
                tenant: a.tenant.clone(),
                database: a.database.clone(),
                collection: a.collection.clone(),
            };
            let declared = Declared {
                metric: a.metric,
                dimensions: a.dimensions,
                text_key: a.text_key.clone(),
                scope: a.scope.clone(),
                limit: a.limit,
                embedder: a.embedder.clone(),
            };
            // A change keeps what was recorded: enabled, the acknowledgement
            // (only while the source stays unscoped) and the last use.
            let source = match library.foreign_source(&a.name) {
                Ok(mut old) => {
                    old.at = at;
                    if declared.scope.is_some() {
                        old.acknowledgement = None;
                    }
                    old.declared = declared;
                    old
                }
                Err(Error::UnknownSource(_)) => Source {
                    name: a.name.clone(),
                    at,
                    declared,
                    enabled: false,
                    discovery: None,
                    acknowledgement: None,
                    last_used: None,
                },
                Err(e) => return Err(e),
            };
            let failure = library.save_foreign_source(source)?;
            println!("saved source {}", a.name);
            if let Some(reason) = failure {
                println!("  its schema could not be read: {reason}");
            }
            print_status(&library.foreign_source(&a.name)?, &library.cross_encoder());
            Ok(ExitCode::SUCCESS)
        }
        Command::Test { name } => {
            let source = library.foreign_source(name)?;
            match source.at.collection().test(foreign::DEFAULT_BUDGET * 4) {
                Ok(()) => {
                    println!("{name}: the server answers and holds the collection");
                    Ok(ExitCode::SUCCESS)
                }
                Err(reason) => {
                    println!("{name}: {reason}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Command::Discover { name } => {
            let found = library.discover_foreign_source(name)?;
            println!(
                "{name}: metric {}, {} dimensions, keys {} ({} points read)",
                found.metric.as_str(),
                found
                    .dimensions
                    .map_or("no vectors yet".into(), |d| d.to_string()),
                found.keys.join(", "),
                found.points
            );
            print_status(&library.foreign_source(name)?, &library.cross_encoder());
            Ok(ExitCode::SUCCESS)
        }
        Command::Adopt { name } => {
            let mut source = library.foreign_source(name)?;
            if !foreign::adopt(&mut source) {
                println!("{name}: nothing read to adopt; `carrel source discover {name}` reads it");
                return Ok(ExitCode::FAILURE);
            }
            library.save_foreign_source(source)?;
            println!("{name}: adopted what discovery read");
            print_status(&library.foreign_source(name)?, &library.cross_encoder());
            Ok(ExitCode::SUCCESS)
        }
        Command::Acknowledge { name, by } => {
            let mut source = library.foreign_source(name)?;
            let sentence = foreign::unscoped_sentence(name);
            source.acknowledgement = Some(Acknowledgement {
                by: by.clone(),
                at: crate::store::now(),
                sentence: sentence.clone(),
            });
            library.save_foreign_source(source)?;
            println!("{by} accepted: {sentence}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Enable { name } => {
            let mut source = library.foreign_source(name)?;
            foreign::enable(&mut source).map_err(|reason| refused(name, &reason))?;
            library.save_foreign_source(source)?;
            print_status(&library.foreign_source(name)?, &library.cross_encoder());
            Ok(ExitCode::SUCCESS)
        }
        Command::Disable { name } => {
            let mut source = library.foreign_source(name)?;
            source.enabled = false;
            library.save_foreign_source(source)?;
            println!("{name}: disabled");
            Ok(ExitCode::SUCCESS)
        }
        Command::List { json } => {
            let cross_encoder = library.cross_encoder();
            let sources = library.foreign_sources()?;
            if *json {
                let rows: Vec<SourceView> = sources
                    .iter()
                    .map(|s| SourceView::of(s, &cross_encoder))
                    .collect();
                print_json(&rows);
            } else if sources.is_empty() {
                println!(
                    "no foreign sources; `carrel source add NAME --chroma URL --collection C` declares one"
                );
            }
            for s in sources.iter().filter(|_| !json) {
                print_status(s, &cross_encoder);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Rm { name } => {
            library.remove_foreign_source(name)?;
            println!("forgot source {name} (its collection is untouched)");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn refused(name: &str, reason: &SkipReason) -> Error {
    Error::SourceRefused {
        name: name.to_string(),
        sentence: reason.sentence(),
        change: reason.where_to_change(name),
    }
}

fn print_status(source: &Source, cross_encoder: &CrossEncoder) {
    let SourceView {
        status,
        change,
        limit_label,
        ..
    } = SourceView::of(source, cross_encoder);
    let d = &source.declared;
    println!(
        "{}  {}  {}",
        source.name,
        source.at.describe(),
        if source.enabled {
            "enabled"
        } else {
            "disabled"
        }
    );
    println!("  {status}");
    if let Some(change) = change {
        println!("  to change it: {change}");
    }
    println!(
        "  declared: {}, {} dimensions, by {}; text key {}; scope {}; {}: {}",
        d.metric.as_str(),
        d.dimensions,
        d.embedder,
        d.text_key.as_deref().unwrap_or("none"),
        d.scope
            .as_ref()
            .map_or("none".into(), |s| format!("{}={}", s.key, s.value)),
        limit_label,
        d.limit.map_or("none".into(), |l| l.to_string()),
    );
    if let Some(a) = &source.acknowledgement {
        println!("  unscoped, accepted by {} {}", a.by, ago(a.at));
    }
    if let Some(last) = &source.last_used {
        println!("  last used {}: {}", ago(last.at), last.outcome.describe());
    }
}
