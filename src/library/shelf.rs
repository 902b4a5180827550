//! The shelf: the libraries this user keeps on this machine, kept in
//! `shelf.json` in the per-user data folder. Each entry says only where a
//! library is; what it is called and who keeps it is in the library's own
//! file ([`crate::kb::Identity`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::LibraryConfig;
use super::remote::{Remote, There};
use crate::error::{Error, Result};
use crate::kb::{Identity, Kb};
use crate::store::Store;

/// The shelf as it stands now, `in_use` first, each library on another hub
/// asked how it stands (which notes on the shelf when each answered).
pub fn surveyed(in_use: &Path) -> Result<Survey> {
    let path = shelf_path()?;
    let mut shelf = Shelf::load(&path)?;
    let mut survey = shelf.survey(in_use);
    shelf.check_remotes(&mut survey, &path)?;
    Ok(survey)
}

/// Puts library `kb` of the hub at `url` on the shelf, once that hub says
/// the token opens it: what it says of the library. A name taken by a
/// library on this machine is refused; one of another hub is replaced.
pub fn add_remote(in_use: &Path, url: &str, kb: &str, token: &str) -> Result<There> {
    super::remote::check_url(url)?;
    let kb = Kb::parse(kb)?;
    let path = shelf_path()?;
    let mut shelf = Shelf::load(&path)?;
    let survey = shelf.survey(in_use);
    if survey.entry(kb.as_str()).is_ok_and(|s| s.dir().is_some()) {
        survey.check_free(&kb)?;
    }
    let remote = Remote::new(url, kb.clone(), token);
    let there = remote.identity()?;
    shelf.add_remote(&remote);
    shelf.answered(&kb);
    shelf.save(&path)?;
    Ok(there)
}

/// Where an import goes: the library in use (`home`), or the library on
/// this machine's shelf that `into` names, opened with `home`'s models and
/// limits. Only the library in use is followed by a watcher while the app
/// runs, so only it may take watches: a folder added to another library is
/// added once, never made a watch that nothing reads.
pub fn import_target(home: LibraryConfig, into: Option<&str>) -> Result<(LibraryConfig, Sync)> {
    match into {
        None => Ok((home, Sync::Watched)),
        Some(kb) => {
            let survey = Shelf::load(&shelf_path()?)?.survey(&home.dir);
            survey.import_target(home, kb)
        }
    }
}

/// Whether an import's folders and URLs may become watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// The library in use: a watcher follows its watches.
    Watched,
    /// Another library: nothing would follow a watch there.
    AddedOnce,
}

/// Where the shelf is kept: `shelf.json` in the per-user data folder.
pub fn shelf_path() -> Result<PathBuf> {
    Ok(crate::paths::default_data_dir()?.join("shelf.json"))
}

/// One library on the shelf.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShelfEntry {
    /// A library folder on this machine.
    Local { dir: PathBuf },
    /// A library another machine's hub serves (`carrel serve`): its MCP
    /// URL, its name there, the read token its owner gave, and when it last
    /// answered (unix seconds).
    Remote {
        url: String,
        kb: Kb,
        token: String,
        #[serde(default)]
        last_ok: Option<i64>,
    },
}

/// The libraries this user keeps: the library in use (the one the CLI and
/// the app open by default) and every one added with `carrel kb create`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Shelf {
    pub libraries: Vec<ShelfEntry>,
}

impl Shelf {
    /// Reads the shelf at `path`. No file is an empty shelf; a file that
    /// cannot be read or parsed is an error, never an empty shelf.
    pub fn load(path: &Path) -> Result<Shelf> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::Shelf {
                path: path.to_path_buf(),
                reason: format!("{e}; fix or remove the file"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Shelf::default()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Writes the shelf to `path` whole: a temporary file, then a rename,
    /// so a crash leaves the old shelf or the new one.
    pub fn save(&self, path: &Path) -> Result<()> {
        // A folder whose path is not UTF-8 cannot be written as JSON.
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::Shelf {
            path: path.to_path_buf(),
            reason: format!("it could not be written: {e}"),
        })?;
        crate::paths::write_whole(path, &json)?;
        // It may hold read tokens for other hubs: for this user only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(())
    }

    /// Adds a library folder, once.
    pub fn add_local(&mut self, dir: &Path) {
        if !self.local_dirs(None).iter().any(|d| same_dir(d, dir)) {
            self.libraries.push(ShelfEntry::Local {
                dir: dir.to_path_buf(),
            });
        }
    }

    /// Adds a library on another hub, or replaces the one of that name.
    pub fn add_remote(&mut self, remote: &Remote) {
        self.forget_remote(&remote.kb);
        self.libraries.push(ShelfEntry::Remote {
            url: remote.url.clone(),
            kb: remote.kb.clone(),
            token: remote.token().to_string(),
            last_ok: None,
        });
    }

    /// Takes a library folder off the shelf; its files stay where they are.
    /// False when it was not on the shelf.
    pub fn forget(&mut self, dir: &Path) -> bool {
        let before = self.libraries.len();
        self.libraries.retain(|e| match e {
            ShelfEntry::Local { dir: d } => !same_dir(d, dir),
            ShelfEntry::Remote { .. } => true,
        });
        self.libraries.len() < before
    }

    /// Takes a remote library off the shelf; false when there was none.
    pub fn forget_remote(&mut self, kb: &Kb) -> bool {
        let before = self.libraries.len();
        self.libraries
            .retain(|e| !matches!(e, ShelfEntry::Remote { kb: k, .. } if k == kb));
        self.libraries.len() < before
    }

    /// Notes that the remote library `kb` answered now.
    pub fn answered(&mut self, kb: &Kb) {
        for e in &mut self.libraries {
            if let ShelfEntry::Remote { kb: k, last_ok, .. } = e
                && k == kb
            {
                *last_ok = Some(crate::store::now());
            }
        }
    }

    /// The library folders: `in_use` first (when given), then the shelf's
    /// own, each once.
    pub fn local_dirs(&self, in_use: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = in_use.map(Path::to_path_buf).into_iter().collect();
        for e in &self.libraries {
            if let ShelfEntry::Local { dir } = e
                && !dirs.iter().any(|d| same_dir(d, dir))
            {
                dirs.push(dir.clone());
            }
        }
        dirs
    }

    /// The libraries on other hubs, in the order added.
    fn remotes(&self) -> impl Iterator<Item = (Remote, Option<i64>)> + '_ {
        self.libraries.iter().filter_map(|e| match e {
            ShelfEntry::Remote {
                url,
                kb,
                token,
                last_ok,
            } => Some((Remote::new(url, kb.clone(), token), *last_ok)),
            ShelfEntry::Local { .. } => None,
        })
    }
}

/// How a library on the shelf stands, as `carrel kb list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ShelfState {
    /// Open: what it says about itself, how many documents it lists, and
    /// the embedder its vectors are made with (its name; none when a hub
    /// did not say), so libraries of two embedders are told apart.
    Ready {
        identity: Identity,
        documents: i64,
        embedder: Option<String>,
    },
    /// The library in use before anything was added to it: `carrel add`
    /// (or the app's first import) creates it.
    NotCreated,
    /// It could not be opened, and why: never shown as an empty library.
    Unavailable { reason: String },
    /// A library on another hub, not asked yet (`Survey::check_remotes`
    /// asks each).
    Remote { kb: Kb },
    /// A library on another hub that did not answer, why, and when it last
    /// did (unix seconds; none if never).
    Unreachable {
        kb: Kb,
        reason: String,
        last_ok: Option<i64>,
    },
}

/// Where a library on the shelf is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(untagged)]
pub enum Place {
    Local {
        #[specta(type = String)]
        dir: PathBuf,
    },
    /// Another machine's hub; the token is kept on the shelf, never shown.
    Hub {
        url: String,
        #[serde(skip)]
        #[specta(skip)]
        token: String,
    },
}

/// One library on the shelf, surveyed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Shelved {
    #[serde(flatten)]
    pub place: Place,
    /// The PostgreSQL server that holds it (host, port, database), for a
    /// team library; none for one in a file on this machine or on a hub.
    pub server: Option<String>,
    /// The library the CLI and the app open when no other is named.
    pub in_use: bool,
    #[serde(flatten)]
    pub state: ShelfState,
}

impl Shelf {
    /// Opens every library on the shelf (`in_use` first) and says how each
    /// stands.
    pub fn survey(&self, in_use: &Path) -> Survey {
        let mut libraries: Vec<Shelved> = self
            .local_dirs(Some(in_use))
            .into_iter()
            .map(|dir| {
                let is_in_use = same_dir(&dir, in_use);
                let note = Store::server_note(&dir).ok().flatten();
                let state = if !Store::held_in(&dir) {
                    if is_in_use {
                        ShelfState::NotCreated
                    } else {
                        ShelfState::Unavailable {
                            reason: format!(
                                "no library at {}: the folder was moved or deleted",
                                dir.display()
                            ),
                        }
                    }
                } else {
                    local_state(&dir, note.as_ref())
                };
                Shelved {
                    place: Place::Local { dir },
                    server: note.map(|n| n.server),
                    in_use: is_in_use,
                    state,
                }
            })
            .collect();
        libraries.extend(self.remotes().map(|(r, _)| Shelved {
            server: None,
            place: Place::Hub {
                url: r.url.clone(),
                token: r.token().to_string(),
            },
            in_use: false,
            state: ShelfState::Remote { kb: r.kb },
        }));
        Survey { libraries }
    }

    /// Asks each remote library's hub how it stands, and notes on the
    /// shelf (saved at `path`) when each one answered.
    pub fn check_remotes(&mut self, survey: &mut Survey, path: &Path) -> Result<()> {
        let mut answered = Vec::new();
        let last: Vec<(Kb, Option<i64>)> = self.remotes().map(|(r, t)| (r.kb, t)).collect();
        for s in &mut survey.libraries {
            let (Some(remote), ShelfState::Remote { kb }) = (s.remote(), &s.state) else {
                continue;
            };
            s.state = match remote.identity() {
                Ok(there) => {
                    answered.push(kb.clone());
                    ShelfState::Ready {
                        embedder: there.embedder_name(),
                        identity: there.identity,
                        documents: there.documents,
                    }
                }
                Err(e) => ShelfState::Unreachable {
                    kb: kb.clone(),
                    reason: e.to_string(),
                    last_ok: last.iter().find(|(k, _)| k == kb).and_then(|(_, t)| *t),
                },
            };
        }
        if !answered.is_empty() {
            for kb in &answered {
                self.answered(kb);
            }
            self.save(path)?;
        }
        Ok(())
    }
}

/// The shelf's libraries as they stood when surveyed, each opened once:
/// what names are taken and where each name is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(transparent)]
pub struct Survey {
    pub libraries: Vec<Shelved>,
}

impl Survey {
    /// The folder of the library named `kb`; an unknown name is an error
    /// that lists the known ones, and a library on another hub is one that
    /// says so.
    pub fn find(&self, kb: &str) -> Result<PathBuf> {
        match self.entry(kb)?.place {
            Place::Local { ref dir } => Ok(dir.clone()),
            Place::Hub { ref url, .. } => Err(Error::RemoteLibrary {
                kb: kb.to_string(),
                url: url.clone(),
            }),
        }
    }

    /// The library named `kb`, here or on another hub; an unknown name is
    /// an error that lists the known ones.
    pub fn entry(&self, kb: &str) -> Result<&Shelved> {
        if let Some(found) = self.libraries.iter().find(|s| s.name() == Some(kb)) {
            return Ok(found);
        }
        let names: Vec<String> = self
            .libraries
            .iter()
            .filter_map(|s| Some(format!("`{}`", s.name()?)))
            .collect();
        Err(Error::UnknownKb {
            kb: kb.to_string(),
            known: if names.is_empty() {
                "none that can be opened".to_string()
            } else {
                names.join(", ")
            },
        })
    }

    /// The libraries a message's `@kb:` tokens name, here or on other
    /// hubs, each once, in order: none when it names none (the question
    /// reads the library in use). An unknown name is an error that lists
    /// the known ones.
    pub fn scoped(&self, message: &str) -> Result<Vec<&Shelved>> {
        let mut named: Vec<&Shelved> = Vec::new();
        for m in crate::mention::parse_kbs(message) {
            let entry = self.entry(&m.kb)?;
            if !named.contains(&entry) {
                named.push(entry);
            }
        }
        Ok(named)
    }

    /// [`import_target`] for the library named `kb` on this shelf.
    pub fn import_target(&self, home: LibraryConfig, kb: &str) -> Result<(LibraryConfig, Sync)> {
        let dir = self.find(kb)?;
        if same_dir(&dir, &home.dir) {
            return Ok((home, Sync::Watched));
        }
        Ok((LibraryConfig { dir, ..home }, Sync::AddedOnce))
    }

    /// Refuses `kb` when a library on the shelf already has that name.
    pub fn check_free(&self, kb: &Kb) -> Result<()> {
        match self
            .libraries
            .iter()
            .find(|s| s.name() == Some(kb.as_str()))
        {
            Some(taken) => Err(Error::KbTaken {
                kb: kb.to_string(),
                at: taken.place.to_string(),
            }),
            None => Ok(()),
        }
    }
}

impl Shelved {
    /// The name this library answers to: its own, or `default` for the
    /// library in use before it is created (it will be `default` then); an
    /// unavailable one has none that can be read.
    pub fn name(&self) -> Option<&str> {
        match &self.state {
            ShelfState::Ready { identity, .. } => Some(identity.kb.as_str()),
            ShelfState::NotCreated => Some(crate::kb::DEFAULT_KB),
            ShelfState::Remote { kb } | ShelfState::Unreachable { kb, .. } => Some(kb.as_str()),
            ShelfState::Unavailable { .. } => None,
        }
    }

    /// A library on another hub, to be asked there; none for one here.
    pub fn remote(&self) -> Option<Remote> {
        let Place::Hub { url, token } = &self.place else {
            return None;
        };
        let kb = Kb::parse(self.name()?).ok()?;
        Some(Remote::new(url, kb, token))
    }

    /// The folder of a library on this machine; none for one on a hub.
    pub fn dir(&self) -> Option<&Path> {
        match &self.place {
            Place::Local { dir } => Some(dir),
            Place::Hub { .. } => None,
        }
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Local { dir } => write!(f, "{}", dir.display()),
            Place::Hub { url, .. } => f.write_str(url),
        }
    }
}

/// How a library in a folder of this machine stands: read from its file,
/// or asked of its PostgreSQL server. A server that does not answer is
/// `Unreachable`, named as it was when it last answered, never an empty
/// library; each answer is noted in the folder.
fn local_state(dir: &Path, note: Option<&crate::store::ServerNote>) -> ShelfState {
    match read_identity(dir) {
        Ok((identity, documents, embedder)) => {
            if note.is_some()
                && let Err(e) = Store::note_answered(dir, identity.kb.as_str())
            {
                tracing::warn!("could not note that the server answered: {e}");
            }
            ShelfState::Ready {
                identity,
                documents,
                embedder: Some(embedder.name().to_string()),
            }
        }
        Err(e) => match note.and_then(|n| Some((Kb::parse(n.kb.as_deref()?).ok()?, n.last_ok))) {
            Some((kb, last_ok)) => ShelfState::Unreachable {
                kb,
                reason: e.to_string(),
                last_ok,
            },
            None => ShelfState::Unavailable {
                reason: e.to_string(),
            },
        },
    }
}

/// A library's identity and document count, read from its file.
fn read_identity(dir: &Path) -> Result<(Identity, i64, crate::models::EmbedderKind)> {
    let store = Store::open_dir(dir)?;
    let documents = store.document_count()?;
    Ok((store.identity()?, documents, store.embedder()?))
}

/// The same folder, whether or not either path is canonical.
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    a == b || canon(a) == canon(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library named `research` in `parent`, made as `carrel kb create` makes one.
    fn research(parent: &Path) -> PathBuf {
        let dir = parent.join("research");
        std::fs::create_dir_all(&dir).unwrap();
        Store::open(&dir.join(crate::paths::DATABASE_FILE))
            .unwrap()
            .set_identity(&Identity {
                kb: Kb::parse("research").unwrap(),
                title: "Research".into(),
                owner: None,
                description: String::new(),
            })
            .unwrap();
        dir
    }

    #[test]
    fn a_missing_shelf_is_empty_and_a_broken_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shelf.json");
        assert_eq!(Shelf::load(&path).unwrap(), Shelf::default());
        std::fs::write(&path, "{not json").unwrap();
        let err = Shelf::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("shelf.json") && err.contains("fix or remove"),
            "{err}"
        );
    }

    #[test]
    fn the_shelf_keeps_each_folder_once_with_the_one_in_use_first() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        let mut shelf = Shelf::default();
        shelf.add_local(&a);
        shelf.add_local(&b);
        shelf.add_local(&dir.path().join("a/../a"));
        shelf.add_local(&dir.path().join("c"));
        assert!(shelf.forget(&dir.path().join("c")));
        assert!(!shelf.forget(&dir.path().join("c")));
        let path = dir.path().join("shelf.json");
        shelf.save(&path).unwrap();
        let shelf = Shelf::load(&path).unwrap();
        assert_eq!(shelf.local_dirs(None), vec![a.clone(), b.clone()]);
        assert_eq!(shelf.local_dirs(Some(&b)), vec![b, a]);
    }

    #[test]
    fn names_are_found_on_the_shelf_and_default_is_taken_before_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let (in_use, research) = (dir.path().join("in-use"), research(dir.path()));
        let mut shelf = Shelf::default();
        shelf.add_local(&research);
        let survey = shelf.survey(&in_use);
        assert_eq!(survey.find("research").unwrap(), research);
        assert_eq!(survey.find("default").unwrap(), in_use);
        let err = survey.find("nope").unwrap_err().to_string();
        assert!(err.contains("`default`, `research`"), "{err}");
        let default = Kb::parse(crate::kb::DEFAULT_KB).unwrap();
        let taken = survey.check_free(&default).unwrap_err();
        assert!(
            taken.to_string().contains("already on the shelf"),
            "{taken}"
        );
        survey.check_free(&Kb::parse("papers").unwrap()).unwrap();
        assert!(!in_use.exists(), "looking created the library in use");
    }

    #[test]
    fn a_library_on_another_hub_is_named_on_the_shelf_and_its_token_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shelf.json");
        let mut shelf = Shelf::default();
        let kb = Kb::parse("skeptics").unwrap();
        shelf.add_remote(&Remote::new(
            "http://ben:7311/mcp",
            kb.clone(),
            "carrel_secret",
        ));
        // Added again (a new token): replaced, not listed twice.
        shelf.add_remote(&Remote::new(
            "http://ben:7311/mcp",
            kb.clone(),
            "carrel_newer",
        ));
        shelf.answered(&kb);
        shelf.save(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(
                mode & 0o777,
                0o600,
                "the shelf holds tokens: this user's only"
            );
        }
        let shelf = Shelf::load(&path).unwrap();
        assert_eq!(shelf.libraries.len(), 1);
        let survey = shelf.survey(&dir.path().join("in-use"));
        let entry = survey.entry("skeptics").unwrap();
        assert_eq!(entry.dir(), None);
        let err = survey.find("skeptics").unwrap_err().to_string();
        assert!(
            err.contains("on another machine (http://ben:7311/mcp)"),
            "{err}"
        );
        let json = serde_json::to_string(&survey).unwrap();
        assert!(json.contains("\"url\":\"http://ben:7311/mcp\""), "{json}");
        assert!(!json.contains("carrel_"), "a token in the listing: {json}");
        let mut shelf = shelf;
        assert!(shelf.forget_remote(&kb));
        assert!(!shelf.forget_remote(&kb));
    }

    #[test]
    fn an_import_into_another_library_goes_there_once_and_never_as_a_watch() {
        let dir = tempfile::tempdir().unwrap();
        let (in_use, research) = (dir.path().join("in-use"), research(dir.path()));
        let mut shelf = Shelf::default();
        shelf.add_local(&research);
        shelf.add_remote(&Remote::new(
            "http://ben:7311/mcp",
            Kb::parse("skeptics").unwrap(),
            "t",
        ));
        let survey = shelf.survey(&in_use);
        let home = LibraryConfig::new(
            in_use.clone(),
            crate::models::ModelConfig::new(dir.path().into()),
        );
        let (config, sync) = survey.import_target(home.clone(), "research").unwrap();
        assert_eq!((config.dir, sync), (research, Sync::AddedOnce));
        let (config, sync) = survey.import_target(home.clone(), "default").unwrap();
        assert_eq!((config.dir, sync), (in_use, Sync::Watched));
        let err = survey
            .import_target(home.clone(), "skeptics")
            .unwrap_err()
            .to_string();
        assert!(err.contains("on another machine"), "{err}");
        let err = survey.import_target(home, "nope").unwrap_err().to_string();
        assert!(err.contains("no library `nope`"), "{err}");
    }
}
