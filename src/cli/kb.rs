//! `carrel kb`: the libraries on this machine's shelf, each with its name,
//! title, owner and description (`crate::kb`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Cli, print_json};
use crate::kb::{Identity, Kb, ReadToken};
use crate::library::hub::Scorers;
use crate::library::shelf::{Shelf, ShelfState, shelf_path};
use crate::models::{EmbedderKind, Fingerprints};
use crate::store::Store;
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
        #[arg(long)]
        json: bool,
    },
    /// Make a new, empty library and put it on the shelf
    Create {
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
    },
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
        #[arg(long)]
        json: bool,
    },
    /// Revoke a read token by its id (`carrel kb tokens NAME` lists them)
    Revoke { kb: String, id: i64 },
    /// Show a library's identity, or change its title, owner or description
    Describe {
        kb: String,
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        owner: Option<String>,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let path = shelf_path()?;
    let mut shelf = Shelf::load(&path)?;
    let (in_use, _) = crate::library_dir(cli.library.as_deref(), None)?;
    match &args.command {
        Command::List { json } => {
            let survey = crate::library::shelf::surveyed(&in_use)?;
            if *json {
                print_json(&survey);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "{:<16} {:<24} {:<20} {:>6}  {:<22} FOLDER OR HUB",
                "KB", "TITLE", "OWNER", "DOCS", "EMBEDDER"
            );
            for s in &survey.libraries {
                let mark = if s.in_use { "  (in use)" } else { "" };
                let folder = format!("{}{mark}", s.place);
                match &s.state {
                    ShelfState::Ready {
                        identity,
                        documents,
                        embedder,
                    } => println!(
                        "{:<16} {:<24} {:<20} {:>6}  {:<22} {folder}",
                        identity.kb,
                        identity.title,
                        identity.owner.as_deref().unwrap_or("(not set)"),
                        documents,
                        embedder.as_deref().unwrap_or("(not said)")
                    ),
                    ShelfState::NotCreated => println!(
                        "{:<16} {:<24} {:<20} {:>6}  {:<22} {folder}: not created yet; `carrel add` starts it",
                        crate::kb::DEFAULT_KB,
                        "",
                        "",
                        0,
                        ""
                    ),
                    ShelfState::Remote { kb } => println!("{kb:<16} not asked  {folder}"),
                    ShelfState::Unreachable {
                        kb,
                        reason,
                        last_ok,
                    } => println!(
                        "{kb:<16} UNREACHABLE ({}): {reason}  {folder}",
                        match last_ok {
                            Some(t) => format!("it last answered {}", super::ago(*t)),
                            None => "it never answered".to_string(),
                        }
                    ),
                    ShelfState::Unavailable { reason } => {
                        println!("{:<16} unavailable: {reason}", "?")
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Create {
            kb,
            title,
            owner,
            description,
            dir,
            embedder,
        } => {
            let kb = Kb::parse(kb)?;
            shelf.survey(&in_use).check_free(&kb)?;
            // The embedder's files are checked before anything is made.
            let mut models = super::models(cli)?;
            models.embedder = *embedder;
            Fingerprints::of(&models)?;
            let dir = match dir {
                Some(d) => d.clone(),
                None => crate::default_data_dir()?
                    .join("libraries")
                    .join(kb.as_str()),
            };
            let db = dir.join(DATABASE_FILE);
            if db.exists() {
                return Err(Error::LibraryExists(dir));
            }
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let dir = std::fs::canonicalize(&dir).map_err(|e| Error::io(&dir, e))?;
            let identity = Identity {
                title: title.clone().unwrap_or_else(|| kb.to_string()),
                kb,
                owner: owner.clone(),
                description: description.clone(),
            };
            let store = Store::open(&dir.join(DATABASE_FILE))?;
            store.set_identity(&identity)?;
            store.set_embedder(*embedder)?;
            shelf.add_local(&dir);
            shelf.save(&path)?;
            println!(
                "created        {} ({}, embedded with {embedder}) at {}; add to it with `carrel --kb {} add PATH`",
                identity.kb,
                identity.title,
                dir.display(),
                identity.kb
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Set { kb, embedder } => {
            set_embedder(cli, shelf.survey(&in_use).find(kb)?, *embedder)
        }
        Command::Rename { kb, new_kb } => {
            let survey = shelf.survey(&in_use);
            let dir = survey.find(kb)?;
            let new_kb = Kb::parse(new_kb)?;
            survey.check_free(&new_kb)?;
            let store = Store::open(&dir.join(DATABASE_FILE))?;
            let identity = Identity {
                kb: new_kb,
                ..store.identity()?
            };
            store.set_identity(&identity)?;
            println!("renamed        {kb} → {} ({})", identity.kb, dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Add { dir, as_kb } => {
            if !dir.join(DATABASE_FILE).is_file() {
                return Err(Error::NoLibrary(dir.clone()));
            }
            let dir = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
            let survey = shelf.survey(&in_use);
            if survey.libraries.iter().any(|s| s.dir() == Some(&dir)) {
                return Err(Error::LibraryOnShelf(dir));
            }
            let store = Store::open(&dir.join(DATABASE_FILE))?;
            let mut identity = store.identity()?;
            if let Some(new_kb) = as_kb {
                identity.kb = Kb::parse(new_kb)?;
            }
            survey.check_free(&identity.kb)?;
            store.set_identity(&identity)?;
            shelf.add_local(&dir);
            shelf.save(&path)?;
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
        Command::AddRemote { url, kb, token } => {
            let there = crate::library::shelf::add_remote(&in_use, url, kb, token)?;
            println!(
                "added          {kb} ({}, kept by {}, {} documents) at {url}; search it with `carrel mcp` (`search` with kb [\"{kb}\"])",
                there.identity.title,
                there.identity.owner.as_deref().unwrap_or("(not set)"),
                there.documents
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Forget { kb_or_dir } => {
            if let Ok(kb) = Kb::parse(kb_or_dir)
                && shelf.forget_remote(&kb)
            {
                shelf.save(&path)?;
                println!("forgot         {kb}, the library on another hub");
                return Ok(ExitCode::SUCCESS);
            }
            let dir = shelf
                .survey(&in_use)
                .find(kb_or_dir)
                .unwrap_or_else(|_| PathBuf::from(kb_or_dir));
            if !shelf.forget(&dir) {
                return Err(Error::NotOnShelf(dir));
            }
            shelf.save(&path)?;
            println!("forgot         {}; its files are untouched", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Token { kbs, label } => {
            let survey = shelf.survey(&in_use);
            let dirs = kbs
                .iter()
                .map(|kb| survey.find(kb))
                .collect::<Result<Vec<_>, _>>()?;
            let token =
                ReadToken::generate().map_err(|e| Error::io("the system's random source", e))?;
            let mut made = Vec::new();
            for (kb, dir) in kbs.iter().zip(&dirs) {
                let info = Store::open(&dir.join(DATABASE_FILE))?.add_read_token(&token, label)?;
                made.push(format!("`carrel kb revoke {kb} {}`", info.id));
            }
            // The secret alone on stdout, so a script can take it; the rest
            // is for people.
            println!("{}", token.secret());
            eprintln!(
                "read token for {} made{}: it is shown only now. A client sends it as `Authorization: Bearer TOKEN` to `carrel serve`; {} takes it back",
                kbs.join(", "),
                if label.is_empty() {
                    String::new()
                } else {
                    format!(" ({label})")
                },
                made.join(", ")
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Tokens { kb, json } => {
            let dir = shelf.survey(&in_use).find(kb)?;
            let tokens = Store::open(&dir.join(DATABASE_FILE))?.read_tokens()?;
            if *json {
                print_json(&tokens);
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
        Command::Revoke { kb, id } => {
            let dir = shelf.survey(&in_use).find(kb)?;
            if !Store::open(&dir.join(DATABASE_FILE))?.revoke_read_token(*id)? {
                return Err(Error::UnknownToken {
                    kb: kb.clone(),
                    id: *id,
                });
            }
            println!(
                "revoked        read token {id} of `{kb}`; a server refuses it from its next request"
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Describe {
            kb,
            title,
            owner,
            description,
            json,
        } => {
            let dir = shelf.survey(&in_use).find(kb)?;
            let store = Store::open(&dir.join(DATABASE_FILE))?;
            let mut identity = store.identity()?;
            if title.is_some() || owner.is_some() || description.is_some() {
                if let Some(t) = title {
                    identity.title = t.clone();
                }
                if let Some(o) = owner {
                    // An empty owner clears it back to "not set".
                    identity.owner = Some(o.trim().to_string()).filter(|o| !o.is_empty());
                }
                if let Some(d) = description {
                    identity.description = d.clone();
                }
                store.set_identity(&identity)?;
            }
            let scorers = Scorers::of_store(&super::models(cli)?, &store);
            if *json {
                print_json(&Described {
                    identity: &identity,
                    dir: &dir,
                    documents: store.document_count()?,
                    scorers,
                });
                return Ok(ExitCode::SUCCESS);
            }
            println!("kb             {}", identity.kb);
            println!("title          {}", identity.title);
            println!(
                "owner          {}",
                identity.owner.as_deref().unwrap_or("(not set)")
            );
            println!("description    {}", identity.description);
            println!("documents      {}", store.document_count()?);
            println!("folder         {}", dir.display());
            println!("embedder       {}", scorers.embedder);
            println!("cross-encoder  {}", scorers.cross_encoder);
            Ok(ExitCode::SUCCESS)
        }
    }
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
