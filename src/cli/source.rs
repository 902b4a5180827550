//! `carrel source`: foreign sources (someone else's vector collection),
//! asked beside the library behind six gates. Every line that says whether
//! retrieval reads a source comes from [`crate::foreign::skip_reason`].

use std::process::ExitCode;

use super::{Cli, Output, ago, open};
use crate::foreign::{self, CollectionScore, Declared, Kind, Metric, Scope, SourceView};
use crate::{Error, Library};

/// The arguments of `carrel source`: one of its subcommands.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Declare a source (or change one): a Chroma collection, or a
    /// PostgreSQL table's pgvector column; its schema is read at once when
    /// the server answers
    Add(Box<AddArgs>),
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
        #[command(flatten)]
        output: Output,
    },
    /// Forget a source (its collection is not touched)
    Rm { name: String },
}

/// The arguments of `carrel source add`.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("store").required(true).args(["chroma", "pgvector"]))]
struct AddArgs {
    name: String,
    /// A Chroma server's URL, e.g. http://127.0.0.1:8000
    #[arg(long, requires = "collection")]
    chroma: Option<String>,
    /// The Chroma collection's name
    #[arg(long, requires = "chroma")]
    collection: Option<String>,
    #[arg(long, default_value = "default_tenant")]
    tenant: String,
    #[arg(long, default_value = "default_database")]
    database: String,
    /// A PostgreSQL URL, e.g. postgresql://reader@127.0.0.1:5432/crm (no TLS)
    #[arg(long, requires_all = ["table", "vector_column"])]
    pgvector: Option<String>,
    /// The PostgreSQL table (`schema.table` or `table`)
    #[arg(long, requires = "pgvector")]
    table: Option<String>,
    /// The table's pgvector column
    #[arg(long, requires = "pgvector")]
    vector_column: Option<String>,
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
    /// documents; for pgvector, a column)
    #[arg(long)]
    text_key: Option<String>,
    /// Only points whose payload KEY (for pgvector, a column) equals VALUE
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_scope)]
    scope: Option<Scope>,
    /// Gate 5, on the collection's own scale: a maximum distance (Chroma;
    /// pgvector cosine and l2), or a minimum inner product (pgvector ip)
    #[arg(long, value_parser = parse_limit)]
    limit: Option<CollectionScore>,
}

fn parse_metric(s: &str) -> Result<Metric, String> {
    Metric::parse(s).ok_or_else(|| format!("{s} is not a metric (cosine, l2, ip)"))
}

fn parse_limit(s: &str) -> Result<CollectionScore, String> {
    s.parse::<f32>()
        .map(CollectionScore::new)
        .map_err(|e| format!("{s} is not a number: {e}"))
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
    let library = &mut library;
    match &args.command {
        Command::Add(a) => add(library, a),
        Command::Test { name } => test(library, name),
        Command::Discover { name } => discover(library, name),
        Command::Adopt { name } => adopt(library, name),
        Command::Acknowledge { name, by } => {
            let ack = library.acknowledge_foreign_source(name, by)?;
            println!("{} accepted: {}", ack.by, ack.sentence);
            Ok(ExitCode::SUCCESS)
        }
        Command::Enable { name } => {
            library.set_foreign_source_enabled(name, true)?;
            print_status(&library.foreign_source_view(name)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Disable { name } => {
            library.set_foreign_source_enabled(name, false)?;
            println!("{name}: disabled");
            Ok(ExitCode::SUCCESS)
        }
        Command::List { output } => list(library, *output),
        Command::Rm { name } => {
            library.remove_foreign_source(name)?;
            println!("forgot source {name} (its collection is untouched)");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `carrel source add`: declares the source, and reads its schema when the
/// server answers.
fn add(library: &mut Library, a: &AddArgs) -> Result<ExitCode, Error> {
    let failure = library.declare_foreign_source(&a.name, a.kind(), a.declared())?;
    println!("saved source {}", a.name);
    if let Some(reason) = failure {
        println!("  its schema could not be read: {reason}");
    }
    print_status(&library.foreign_source_view(&a.name)?);
    Ok(ExitCode::SUCCESS)
}

impl AddArgs {
    /// Where the collection is: Chroma's or PostgreSQL's.
    fn kind(&self) -> Kind {
        match (&self.chroma, &self.pgvector) {
            (Some(url), _) => Kind::Chroma {
                url: url.clone(),
                tenant: self.tenant.clone(),
                database: self.database.clone(),
                collection: self.collection.clone().unwrap_or_default(),
            },
            (None, Some(url)) => Kind::Pgvector {
                url: url.clone(),
                table: self.table.clone().unwrap_or_default(),
                vector_column: self.vector_column.clone().unwrap_or_default(),
            },
            (None, None) => unreachable!("clap requires --chroma or --pgvector"),
        }
    }

    /// What the user says of the collection, to be checked against it.
    fn declared(&self) -> Declared {
        Declared {
            metric: self.metric,
            dimensions: self.dimensions,
            text_key: self.text_key.clone(),
            scope: self.scope.clone(),
            limit: self.limit,
            embedder: self.embedder.clone(),
        }
    }
}

/// `carrel source test`: exits 1 with the reason when it does not answer.
fn test(library: &mut Library, name: &str) -> Result<ExitCode, Error> {
    match library.test_foreign_source(name)? {
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

/// `carrel source discover`: what the collection really is.
fn discover(library: &mut Library, name: &str) -> Result<ExitCode, Error> {
    let found = library.discover_foreign_source(name)?;
    println!(
        "{name}: metric {}, {} dimensions, keys {} ({} points read)",
        found.metric_label(),
        found
            .dimensions
            .map_or("no vectors yet".into(), |d| d.to_string()),
        found.keys.join(", "),
        found.points
    );
    print_status(&library.foreign_source_view(name)?);
    Ok(ExitCode::SUCCESS)
}

/// `carrel source adopt`: exits 1 when nothing was read to adopt.
fn adopt(library: &mut Library, name: &str) -> Result<ExitCode, Error> {
    if !library.adopt_foreign_source(name)? {
        println!("{name}: nothing read to adopt; `carrel source discover {name}` reads it");
        return Ok(ExitCode::FAILURE);
    }
    println!("{name}: adopted what discovery read");
    print_status(&library.foreign_source_view(name)?);
    Ok(ExitCode::SUCCESS)
}

/// `carrel source list`.
fn list(library: &mut Library, output: Output) -> Result<ExitCode, Error> {
    let views = library.foreign_source_views()?;
    if output.json(&views) {
        return Ok(ExitCode::SUCCESS);
    }
    if views.is_empty() {
        println!(
            "no foreign sources; `carrel source add NAME --chroma URL --collection C` (or `--pgvector URL --table T --vector-column V`) declares one"
        );
    } else {
        views.iter().for_each(print_status);
    }
    Ok(ExitCode::SUCCESS)
}

/// A source as `carrel source list` prints it: its status and where to
/// change it come from the one [`SourceView`].
fn print_status(view: &SourceView) {
    let SourceView {
        source,
        status,
        change,
        limit_label,
        ..
    } = view;
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
        d.limit.map_or("none".into(), |l| l.get().to_string()),
    );
    if let Some(a) = &source.acknowledgement {
        println!("  unscoped, accepted by {} {}", a.by, ago(a.at));
    }
    if let Some(last) = &source.last_used {
        println!("  last used {}: {}", ago(last.at), last.outcome.describe());
    }
}
