//! `carrel kb`: the libraries on this machine's shelf, each with its name,
//! title, owner and description (`crate::kb`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Cli, Output};
use crate::kb::{Identity, Kb, ReadToken};
use crate::library::shared::Scorers;
use crate::library::shelf::{Shelf, ShelfState, Survey, shelf_path};
use crate::models::{EmbedderKind, Fingerprints};
use crate::store::Store;
use crate::store::copy::CopyStep;
use crate::{DATABASE_FILE, Error, Library, LibraryConfig};

/// The arguments of `carrel kb`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Every library on the shelf: its name, title, owner, documents and folder
    List {
        #[command(flatten)]
        output: Output,
    },
    /// Make a new, empty library and put it on the shelf
    Create(CreateArgs),
    /// Change a library's settings. A new embedder re-embeds every document
    /// now, with progress; until it is done, both lanes say "re-embedding N
    /// of M"
    Set {
        kb: String,
        #[arg(long, value_enum)]
        embedder: EmbedderKind,
    },
    /// Give a library another name
    Rename { kb: String, new_kb: String },
    /// Put a library folder that already exists (copied from someone, or
    /// forgotten before) on the shelf, under its own name or a new one
    Add {
        dir: PathBuf,
        /// Rename it as it is added (when its name is taken on the shelf)
        #[arg(long = "as")]
        as_kb: Option<String>,
    },
    /// Put a library that another machine serves (`carrel serve`) on the
    /// shelf: its hub's URL, its name there, and the read token its owner
    /// gave. The hub is asked first: the token must open that library
    AddRemote {
        /// The hub's MCP endpoint, e.g. http://their-machine:7311/mcp
        url: String,
        /// The library's name on that hub
        kb: String,
        #[arg(long, env = "CARREL_READ_TOKEN")]
        token: String,
    },
    /// Take a library off the shelf, by name or folder; its files stay
    Forget { kb_or_dir: String },
    /// Make a read token for `carrel serve`: whoever holds it may read these
    /// libraries, and no other. It is printed once; each library keeps only
    /// its SHA-256, and revoking it in one leaves the others
    Token {
        #[arg(required = true)]
        kbs: Vec<String>,
        /// Whom or what it is for, to know which to revoke
        #[arg(long, default_value = "")]
        label: String,
    },
    /// The library's read tokens: id, label and when made (never the secret)
    Tokens {
        kb: String,
        #[command(flatten)]
        output: Output,
    },
    /// Revoke a read token by its id (`carrel kb tokens NAME` lists them)
    Revoke { kb: String, id: i64 },
    /// Show a library's identity, or change its title, owner or description
    Describe(DescribeArgs),
    /// Copy a library whole into a new one, on this machine (SQLite) or on a
    /// PostgreSQL server (--postgres): documents, bodies, passages, cards and
    /// vectors, watches, read tokens, the kept chat and the log. The
    /// original stays as it is
    Copy(CopyArgs),
}

/// `carrel kb copy`'s arguments.
#[derive(clap::Args)]
struct CopyArgs {
    /// The library to copy
    kb: String,
    /// The new library's name
    new_kb: String,
    /// Where the new one lives [default: libraries/NEW_KB in the per-user data folder]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Put the new one on a PostgreSQL server with pgvector, in an empty
    /// database: postgresql://USER@HOST:PORT/DATABASE
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
    #[command(flatten)]
    output: Output,
}

/// `carrel kb create`'s arguments.
#[derive(clap::Args)]
struct CreateArgs {
    /// Its name: lowercase letters, digits and `-` (for `--kb NAME` and `@kb:NAME`)
    kb: String,
    /// A title people read [default: the name]
    #[arg(long)]
    title: Option<String>,
    /// Who keeps it: a name or an address
    #[arg(long)]
    owner: Option<String>,
    /// What it holds
    #[arg(long, default_value = "")]
    description: String,
    /// Where it lives [default: libraries/NAME in the per-user data folder]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// What makes its vectors: all-MiniLM-L6-v2 reads English;
    /// multilingual-e5-small reads about 100 languages in one space, at
    /// half the speed
    #[arg(long, value_enum, default_value_t)]
    embedder: EmbedderKind,
    /// Keep it on a PostgreSQL server with pgvector (a team library many
    /// people and watchers write into): postgresql://USER@HOST:PORT/DATABASE.
    /// The password comes from PGPASSWORD or ~/.pgpass and is never kept.
    /// A database that already holds this library is joined
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
}

/// `carrel kb describe`'s arguments.
#[derive(clap::Args)]
struct DescribeArgs {
    kb: String,
    /// A new title people read
    #[arg(long)]
    title: Option<String>,
    /// Who keeps it now (an empty one clears it)
    #[arg(long)]
    owner: Option<String>,
    /// What it holds now
    #[arg(long)]
    description: Option<String>,
    #[command(flatten)]
    output: Output,
}

impl DescribeArgs {
    /// Whether anything is to be changed, rather than only shown.
    fn changes(&self) -> bool {
        self.title.is_some() || self.owner.is_some() || self.description.is_some()
    }
}

pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let mut here = Here::load(cli)?;
    match &args.command {
        Command::List { output } => list(&here, *output),
        Command::Create(create_args) => create(&mut here, create_args),
        Command::Set { kb, embedder } => set_embedder(cli, here.find(kb)?, *embedder),
        Command::Rename { kb, new_kb } => rename(&here, kb, new_kb),
        Command::Add { dir, as_kb } => add(&mut here, dir, as_kb.as_deref()),
        Command::AddRemote { url, kb, token } => add_remote(&here, url, kb, token),
        Command::Forget { kb_or_dir } => forget(&mut here, kb_or_dir),
        Command::Token { kbs, label } => make_token(&here, kbs, label),
        Command::Tokens { kb, output } => tokens(&here, kb, *output),
        Command::Revoke { kb, id } => revoke(&here, kb, *id),
        Command::Describe(describe_args) => describe(&here, describe_args),
        Command::Copy(copy_args) => copy(&mut here, copy_args),
    }
}

/// The shelf as every `kb` subcommand starts from: its file, what it holds,
/// and the library in use.
struct Here<'a> {
    cli: &'a Cli,
    path: PathBuf,
    shelf: Shelf,
    in_use: PathBuf,
}

impl<'a> Here<'a> {
    fn load(cli: &'a Cli) -> Result<Self, Error> {
        let path = shelf_path()?;
        let shelf = Shelf::load(&path)?;
        let (in_use, _) = crate::library_dir(super::library_flag(cli)?.as_deref(), None)?;
        Ok(Here {
            cli,
            path,
            shelf,
            in_use,
        })
    }

    fn survey(&self) -> Survey {
        self.shelf.survey(&self.in_use)
    }

    /// The folder of the library on the shelf with this name.
    fn find(&self, kb: &str) -> Result<PathBuf, Error> {
        self.survey().find(kb)
    }

    /// The store of the library on the shelf with this name, and its folder.
    fn open(&self, kb: &str) -> Result<(PathBuf, Store), Error> {
        let dir = self.find(kb)?;
        let store = Store::open_dir(&dir)?;
        Ok((dir, store))
    }

    fn save(&self) -> Result<(), Error> {
        self.shelf.save(&self.path)
    }
}

/// `carrel kb list`.
fn list(here: &Here, output: Output) -> Result<ExitCode, Error> {
    let survey = crate::library::shelf::surveyed(&here.in_use)?;
    if output.json(&survey) {
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<16} {:<24} {:<20} {:>6}  {:<22} FOLDER OR HUB",
        "KB", "TITLE", "OWNER", "DOCS", "EMBEDDER"
    );
    for s in &survey.libraries {
        let mark = if s.in_use { "  (in use)" } else { "" };
        let place = match &s.server {
            Some(server) => format!("PostgreSQL {server} (folder {})", s.place),
            None => s.place.to_string(),
        };
        println!("{}", shelf_row(&s.state, &format!("{place}{mark}")));
    }
    Ok(ExitCode::SUCCESS)
}

/// One line of `carrel kb list` for people.
fn shelf_row(state: &ShelfState, folder: &str) -> String {
    match state {
        ShelfState::Ready {
            identity,
            documents,
            embedder,
        } => format!(
            "{:<16} {:<24} {:<20} {:>6}  {:<22} {folder}",
            identity.kb,
            identity.title,
            identity.owner.as_deref().unwrap_or("(not set)"),
            documents,
            embedder.as_deref().unwrap_or("(not said)")
        ),
        ShelfState::NotCreated => format!(
            "{:<16} {:<24} {:<20} {:>6}  {:<22} {folder}: not created yet; `carrel add` starts it",
            crate::kb::DEFAULT_KB,
            "",
            "",
            0,
            ""
        ),
        ShelfState::Remote { kb } => format!("{kb:<16} not asked  {folder}"),
        ShelfState::Unreachable {
            kb,
            reason,
            last_ok,
        } => format!(
            "{kb:<16} UNREACHABLE ({}): {reason}  {folder}",
            match last_ok {
                Some(t) => format!("it last answered {}", super::ago(*t)),
                None => "it never answered".to_string(),
            }
        ),
        ShelfState::Unavailable { reason } => format!("{:<16} unavailable: {reason}", "?"),
    }
}

/// `carrel kb create NAME`.
fn create(here: &mut Here, args: &CreateArgs) -> Result<ExitCode, Error> {
    let kb = Kb::parse(&args.kb)?;
    here.survey().check_free(&kb)?;
    // The embedder's files are checked before anything is made.
    let mut models = super::models(here.cli)?;
    models.embedder = args.embedder;
    Fingerprints::of(&models)?;
    let dir = new_folder(args.dir.as_deref(), &kb)?;
    let identity = Identity {
        title: args.title.clone().unwrap_or_else(|| kb.to_string()),
        kb,
        owner: args.owner.clone(),
        description: args.description.clone(),
    };
    let made = match &args.postgres {
        Some(url) => made_on_postgres(&dir, url, &identity, args.embedder)?,
        None => {
            let store = Store::open_dir(&dir)?;
            store.set_identity(&identity)?;
            store.set_embedder(args.embedder)?;
            Made::Created {
                embedder: args.embedder,
                on: dir.display().to_string(),
            }
        }
    };
    here.shelf.add_local(&dir);
    here.save()?;
    made.print(&identity);
    Ok(ExitCode::SUCCESS)
}

/// A new library's folder, made: `dir`, or `libraries/NAME` in the
/// per-user data folder; one that holds a library already is refused.
fn new_folder(dir: Option<&Path>, kb: &Kb) -> Result<PathBuf, Error> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => crate::default_data_dir()?
            .join("libraries")
            .join(kb.as_str()),
    };
    if Store::held_in(&dir) {
        return Err(Error::LibraryExists(dir));
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    std::fs::canonicalize(&dir).map_err(|e| Error::io(&dir, e))
}

/// `carrel kb copy NAME NEW`: a new library, on this machine or a
/// PostgreSQL server, holding everything the first one holds, under the
/// new name.
fn copy(here: &mut Here, args: &CopyArgs) -> Result<ExitCode, Error> {
    let (_, from) = here.open(&args.kb)?;
    let new_kb = Kb::parse(&args.new_kb)?;
    here.survey().check_free(&new_kb)?;
    let dir = new_folder(args.dir.as_deref(), &new_kb)?;
    let copied = (|| {
        let mut to = match &args.postgres {
            Some(url) => Store::create_postgres(&dir, url)?.0,
            None => Store::open_dir(&dir)?,
        };
        let bar = super::progress_bar();
        let copied = from.copy_into(&mut to, &mut |step| match step {
            CopyStep::Bodies { done, of } => {
                bar.set_length(of as u64);
                bar.set_position(done as u64);
                bar.set_message("bodies with their passages and cards");
            }
            CopyStep::Indexing => {
                bar.set_position(bar.length().unwrap_or(0));
                bar.set_message("building the search indexes, each in one pass");
            }
        });
        bar.finish_and_clear();
        let copied = copied?;
        to.set_identity(&Identity {
            kb: new_kb.clone(),
            ..from.identity()?
        })?;
        Ok::<_, Error>(copied)
    })()
    .inspect_err(|_| forget_new(&dir))?;
    here.shelf.add_local(&dir);
    here.save()?;
    if args.output.json(&copied) {
        return Ok(ExitCode::SUCCESS);
    }
    let on = Store::server_of_dir(&dir)?.unwrap_or_else(|| dir.display().to_string());
    println!(
        "copied         {} → {new_kb} at {on}: {} documents ({} bodies, {} passages), {} watches, {} read tokens, {} chat turns, {} log rows, {} foreign sources",
        args.kb,
        copied.documents,
        copied.contents,
        copied.chunks,
        copied.watches,
        copied.read_tokens,
        copied.chat_turns,
        copied.log_rows,
        copied.foreign_sources
    );
    Ok(ExitCode::SUCCESS)
}

/// Removes what a failed copy made in `dir` (the library file, or the file
/// naming its server), so the same command can run again; rows a server
/// took stay there, and the next copy into that database is refused.
fn forget_new(dir: &Path) {
    for name in [
        DATABASE_FILE,
        "library.sqlite3-wal",
        "library.sqlite3-shm",
        crate::store::POSTGRES_FILE,
    ] {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// What `carrel kb create` made: a new library, or one a PostgreSQL
/// database held already, joined.
enum Made {
    Created {
        embedder: EmbedderKind,
        on: String,
    },
    Joined {
        embedder: EmbedderKind,
        on: String,
        documents: i64,
    },
}

impl Made {
    fn print(&self, identity: &Identity) {
        let kb = &identity.kb;
        match self {
            Made::Created { embedder, on } => println!(
                "created        {kb} ({}, embedded with {embedder}) at {on}; add to it with `carrel --kb {kb} add PATH`",
                identity.title
            ),
            Made::Joined {
                embedder,
                on,
                documents,
            } => println!(
                "joined         {kb} at {on}: {documents} documents, embedded with {embedder}; add to it with `carrel --kb {kb} add PATH`"
            ),
        }
    }
}

/// A library on the PostgreSQL server `url`, its folder `dir`: created in
/// an empty database, or joined when the database holds this very library
/// (another person or machine made it). A database holding another
/// library is refused, its rows untouched.
fn made_on_postgres(
    dir: &Path,
    url: &str,
    identity: &Identity,
    embedder: EmbedderKind,
) -> Result<Made, Error> {
    let (store, had_password) = Store::create_postgres(dir, url)?;
    let on = format!(
        "{} (folder {})",
        Store::server_of_dir(dir)?.unwrap_or_default(),
        dir.display()
    );
    if had_password {
        eprintln!(
            "note           the password in the URL was not kept: put it in PGPASSWORD or ~/.pgpass for the next time"
        );
    }
    let held = store.identity()?;
    let documents = store.document_count()?;
    if held.kb.as_str() == crate::kb::DEFAULT_KB && documents == 0 {
        store.set_identity(identity)?;
        store.set_embedder(embedder)?;
        return Ok(Made::Created { embedder, on });
    }
    if held.kb == identity.kb {
        return Ok(Made::Joined {
            embedder: store.embedder()?,
            on,
            documents,
        });
    }
    let _ = std::fs::remove_file(dir.join(crate::store::POSTGRES_FILE));
    Err(Error::DatabaseHoldsAnother {
        server: Store::server_of_dir(dir)?.unwrap_or_else(|| url.to_string()),
        held: held.kb.to_string(),
        asked: identity.kb.to_string(),
    })
}

/// `carrel kb rename NAME NEW`.
fn rename(here: &Here, kb: &str, new_kb: &str) -> Result<ExitCode, Error> {
    let (dir, store) = here.open(kb)?;
    let new_kb = Kb::parse(new_kb)?;
    here.survey().check_free(&new_kb)?;
    let identity = Identity {
        kb: new_kb,
        ..store.identity()?
    };
    store.set_identity(&identity)?;
    println!("renamed        {kb} → {} ({})", identity.kb, dir.display());
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb add DIR [--as NAME]`.
fn add(here: &mut Here, dir: &Path, as_kb: Option<&str>) -> Result<ExitCode, Error> {
    if !Store::held_in(dir) {
        return Err(Error::NoLibrary(dir.to_path_buf()));
    }
    let dir = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
    let survey = here.survey();
    if survey.libraries.iter().any(|s| s.dir() == Some(&dir)) {
        return Err(Error::LibraryOnShelf(dir));
    }
    let store = Store::open_dir(&dir)?;
    let mut identity = store.identity()?;
    if let Some(new_kb) = as_kb {
        identity.kb = Kb::parse(new_kb)?;
    }
    survey.check_free(&identity.kb)?;
    store.set_identity(&identity)?;
    here.shelf.add_local(&dir);
    here.save()?;
    println!(
        "added          {} ({}, {} documents) at {}; ask it with `carrel --kb {} …` or `@kb:{}`",
        identity.kb,
        identity.title,
        store.document_count()?,
        dir.display(),
        identity.kb,
        identity.kb
    );
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb add-remote URL NAME --token T`.
fn add_remote(here: &Here, url: &str, kb: &str, token: &str) -> Result<ExitCode, Error> {
    let there = crate::library::shelf::add_remote(&here.in_use, url, kb, token)?;
    println!(
        "added          {kb} ({}, kept by {}, {} documents) at {url}; search it with `carrel mcp` (`search` with kb [\"{kb}\"])",
        there.identity.title,
        there.identity.owner.as_deref().unwrap_or("(not set)"),
        there.documents
    );
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb forget NAME|DIR`: a remote library by name, else a folder.
fn forget(here: &mut Here, kb_or_dir: &str) -> Result<ExitCode, Error> {
    if let Ok(kb) = Kb::parse(kb_or_dir)
        && here.shelf.forget_remote(&kb)
    {
        here.save()?;
        println!("forgot         {kb}, the library on another hub");
        return Ok(ExitCode::SUCCESS);
    }
    let dir = here
        .find(kb_or_dir)
        .unwrap_or_else(|_| PathBuf::from(kb_or_dir));
    if !here.shelf.forget(&dir) {
        return Err(Error::NotOnShelf(dir));
    }
    here.save()?;
    println!("forgot         {}; its files are untouched", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb token NAME… [--label L]`.
fn make_token(here: &Here, kbs: &[String], label: &str) -> Result<ExitCode, Error> {
    let survey = here.survey();
    let dirs = kbs
        .iter()
        .map(|kb| survey.find(kb))
        .collect::<Result<Vec<_>, _>>()?;
    let token = ReadToken::generate().map_err(|e| Error::io("the system's random source", e))?;
    let mut made = Vec::new();
    for (kb, dir) in kbs.iter().zip(&dirs) {
        let info = Store::open_dir(dir)?.add_read_token(&token, label)?;
        made.push(format!("`carrel kb revoke {kb} {}`", info.id));
    }
    // The secret alone on stdout, so a script can take it; the rest is for
    // people.
    println!("{}", token.secret());
    let label = if label.is_empty() {
        String::new()
    } else {
        format!(" ({label})")
    };
    eprintln!(
        "read token for {} made{label}: it is shown only now. A client sends it as `Authorization: Bearer TOKEN` to `carrel serve`; {} takes it back",
        kbs.join(", "),
        made.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb tokens NAME`.
fn tokens(here: &Here, kb: &str, output: Output) -> Result<ExitCode, Error> {
    let (_, store) = here.open(kb)?;
    let tokens = store.read_tokens()?;
    if output.json(&tokens) {
        return Ok(ExitCode::SUCCESS);
    }
    if tokens.is_empty() {
        println!("no read tokens: `carrel kb token {kb}` makes one");
    }
    for t in &tokens {
        println!(
            "{:>4}  {:<24}  made {}",
            t.id,
            t.label,
            super::ago(t.created)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb revoke NAME ID`.
fn revoke(here: &Here, kb: &str, id: i64) -> Result<ExitCode, Error> {
    let (_, store) = here.open(kb)?;
    if !store.revoke_read_token(id)? {
        return Err(Error::UnknownToken {
            kb: kb.to_string(),
            id,
        });
    }
    println!("revoked        read token {id} of `{kb}`; a server refuses it from its next request");
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb describe NAME [--title …] [--owner …] [--description …]`.
fn describe(here: &Here, args: &DescribeArgs) -> Result<ExitCode, Error> {
    let (dir, store) = here.open(&args.kb)?;
    let mut identity = store.identity()?;
    if args.changes() {
        if let Some(t) = &args.title {
            identity.title = t.clone();
        }
        if let Some(o) = &args.owner {
            // An empty owner clears it back to "not set".
            identity.owner = Some(o.trim().to_string()).filter(|o| !o.is_empty());
        }
        if let Some(d) = &args.description {
            identity.description = d.clone();
        }
        store.set_identity(&identity)?;
    }
    let described = Described {
        identity: &identity,
        dir: &dir,
        documents: store.document_count()?,
        scorers: Scorers::of_store(&super::models(here.cli)?, &store),
    };
    if !args.output.json(&described) {
        described.print();
    }
    Ok(ExitCode::SUCCESS)
}

/// `carrel kb set NAME --embedder KIND`: records the embedder and makes
/// every vector again with it, showing progress.
fn set_embedder(cli: &Cli, dir: PathBuf, embedder: EmbedderKind) -> Result<ExitCode, Error> {
    let mut lib = Library::open_existing(LibraryConfig::new(dir, super::models(cli)?))?;
    let kb = lib.store().identity()?.kb;
    if !lib.set_embedder(embedder)? {
        println!("unchanged      {kb} is already embedded with {embedder}");
        return Ok(ExitCode::SUCCESS);
    }
    let bar = super::progress_bar();
    let done = lib.refresh(&mut |p| super::show_progress(&bar, p))?;
    bar.finish_and_clear();
    println!("re-embedded    {done} documents of {kb} with {embedder}");
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Serialize)]
struct Described<'a> {
    #[serde(flatten)]
    identity: &'a Identity,
    dir: &'a std::path::Path,
    documents: i64,
    scorers: Scorers,
}

impl Described<'_> {
    /// `carrel kb describe` for people.
    fn print(&self) {
        println!("kb             {}", self.identity.kb);
        println!("title          {}", self.identity.title);
        println!(
            "owner          {}",
            self.identity.owner.as_deref().unwrap_or("(not set)")
        );
        println!("description    {}", self.identity.description);
        println!("documents      {}", self.documents);
        println!("folder         {}", self.dir.display());
        println!("embedder       {}", self.scorers.embedder);
        println!("cross-encoder  {}", self.scorers.cross_encoder);
    }
}
