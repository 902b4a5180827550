//! `carrel kb`: the libraries on this machine's shelf, each with its name,
//! title, owner and description (`crate::kb`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Cli, print_json};
use crate::kb::{Identity, Kb};
use crate::library::shelf::{Shelf, ShelfState, shelf_path};
use crate::store::Store;
use crate::{DATABASE_FILE, Error};

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
    },
    /// Give a library another name
    Rename { kb: String, new_kb: String },
    /// Take a library off the shelf, by name or folder; its files stay
    Forget { kb_or_dir: String },
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
            let survey = shelf.survey(&in_use);
            if *json {
                print_json(&survey);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "{:<16} {:<24} {:<20} {:>6}  FOLDER",
                "KB", "TITLE", "OWNER", "DOCS"
            );
            for s in &survey.libraries {
                let mark = if s.in_use { "  (in use)" } else { "" };
                let folder = format!("{}{mark}", s.dir.display());
                match &s.state {
                    ShelfState::Ready {
                        identity,
                        documents,
                    } => println!(
                        "{:<16} {:<24} {:<20} {:>6}  {folder}",
                        identity.kb,
                        identity.title,
                        identity.owner.as_deref().unwrap_or("(not set)"),
                        documents
                    ),
                    ShelfState::NotCreated => println!(
                        "{:<16} {:<24} {:<20} {:>6}  {folder}: not created yet; `carrel add` starts it",
                        crate::kb::DEFAULT_KB,
                        "",
                        "",
                        0
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
        } => {
            let kb = Kb::parse(kb)?;
            shelf.survey(&in_use).check_free(&kb)?;
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
            Store::open(&dir.join(DATABASE_FILE))?.set_identity(&identity)?;
            shelf.add_local(&dir);
            shelf.save(&path)?;
            println!(
                "created        {} ({}) at {}; add to it with `carrel --kb {} add PATH`",
                identity.kb,
                identity.title,
                dir.display(),
                identity.kb
            );
            Ok(ExitCode::SUCCESS)
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
        Command::Forget { kb_or_dir } => {
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
            let models = super::models(cli)?;
            let scorers = Scorers {
                embedder: Scorer::from(crate::models::Fingerprints::of(&models).map(|f| f.model)),
                cross_encoder: Scorer::from(crate::models::reranker_id(&models)),
            };
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

/// The scorers this library is asked with: the embedder's and the
/// cross-encoder's fingerprints, or why they could not be read.
#[derive(serde::Serialize)]
struct Scorers {
    embedder: Scorer,
    cross_encoder: Scorer,
}

/// A model's fingerprint (`name@sha12`), or why it could not be read.
#[derive(serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum Scorer {
    Known { id: String },
    Unknown { reason: String },
}

impl From<Result<String, Error>> for Scorer {
    fn from(r: Result<String, Error>) -> Scorer {
        match r {
            Ok(id) => Scorer::Known { id },
            Err(e) => Scorer::Unknown {
                reason: e.to_string(),
            },
        }
    }
}

impl std::fmt::Display for Scorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scorer::Known { id } => f.write_str(id),
            Scorer::Unknown { reason } => write!(f, "unknown: {reason}"),
        }
    }
}

#[derive(serde::Serialize)]
struct Described<'a> {
    #[serde(flatten)]
    identity: &'a Identity,
    dir: &'a std::path::Path,
    documents: i64,
    scorers: Scorers,
}
