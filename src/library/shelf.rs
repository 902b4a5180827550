//! The shelf: the libraries this user keeps on this machine, kept in
//! `shelf.json` in the per-user data folder. Each entry says only where a
//! library is; what it is called and who keeps it is in the library's own
//! file ([`crate::kb::Identity`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kb::{Identity, Kb};
use crate::store::Store;

/// Where the shelf is kept: `shelf.json` in the per-user data folder.
pub fn shelf_path() -> Result<PathBuf> {
    Ok(crate::paths::default_data_dir()?.join("shelf.json"))
}

/// One library on the shelf. Remote libraries (a hub URL, a kb and a token)
/// are the next kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShelfEntry {
    /// A library folder on this machine.
    Local { dir: PathBuf },
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
        crate::paths::write_whole(path, &json)
    }

    /// Adds a library folder, once.
    pub fn add_local(&mut self, dir: &Path) {
        if !self.local_dirs(None).iter().any(|d| same_dir(d, dir)) {
            self.libraries.push(ShelfEntry::Local {
                dir: dir.to_path_buf(),
            });
        }
    }

    /// Takes a library folder off the shelf; its files stay where they are.
    /// False when it was not on the shelf.
    pub fn forget(&mut self, dir: &Path) -> bool {
        let before = self.libraries.len();
        self.libraries
            .retain(|ShelfEntry::Local { dir: d }| !same_dir(d, dir));
        self.libraries.len() < before
    }

    /// The library folders: `in_use` first (when given), then the shelf's
    /// own, each once.
    pub fn local_dirs(&self, in_use: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = in_use.map(Path::to_path_buf).into_iter().collect();
        for ShelfEntry::Local { dir } in &self.libraries {
            if !dirs.iter().any(|d| same_dir(d, dir)) {
                dirs.push(dir.clone());
            }
        }
        dirs
    }
}

/// How a library on the shelf stands, as `carrel kb list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ShelfState {
    /// Open: what it says about itself, and how many documents it lists.
    Ready { identity: Identity, documents: i64 },
    /// The library in use before anything was added to it: `carrel add`
    /// (or the app's first import) creates it.
    NotCreated,
    /// It could not be opened, and why: never shown as an empty library.
    Unavailable { reason: String },
}

/// One library on the shelf, surveyed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Shelved {
    #[specta(type = String)]
    pub dir: PathBuf,
    /// The library the CLI and the app open when no other is named.
    pub in_use: bool,
    #[serde(flatten)]
    pub state: ShelfState,
}

impl Shelf {
    /// Opens every library on the shelf (`in_use` first) and says how each
    /// stands.
    pub fn survey(&self, in_use: &Path) -> Survey {
        let libraries = self
            .local_dirs(Some(in_use))
            .into_iter()
            .map(|dir| {
                let is_in_use = same_dir(&dir, in_use);
                let state = if !dir.join(crate::paths::DATABASE_FILE).is_file() {
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
                    match read_identity(&dir) {
                        Ok((identity, documents)) => ShelfState::Ready {
                            identity,
                            documents,
                        },
                        Err(e) => ShelfState::Unavailable {
                            reason: e.to_string(),
                        },
                    }
                };
                Shelved {
                    dir,
                    in_use: is_in_use,
                    state,
                }
            })
            .collect();
        Survey { libraries }
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
    /// that lists the known ones.
    pub fn find(&self, kb: &str) -> Result<PathBuf> {
        if let Some(found) = self.libraries.iter().find(|s| s.name() == Some(kb)) {
            return Ok(found.dir.clone());
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

    /// The folders of the libraries a message's `@kb:` tokens name, each
    /// once, in order: none when it names none (the question reads the
    /// library in use). An unknown name is an error that lists the known.
    pub fn scoped(&self, message: &str) -> Result<Vec<PathBuf>> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for m in crate::mention::parse_kbs(message) {
            let dir = self.find(&m.kb)?;
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        Ok(dirs)
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
                dir: taken.dir.clone(),
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
            ShelfState::Unavailable { .. } => None,
        }
    }
}

/// A library's identity and document count, read from its file.
fn read_identity(dir: &Path) -> Result<(Identity, i64)> {
    let store = Store::open(&dir.join(crate::paths::DATABASE_FILE))?;
    let documents = store.document_count()?;
    Ok((store.identity()?, documents))
}

/// The same folder, whether or not either path is canonical.
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    a == b || canon(a) == canon(b)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (in_use, research) = (dir.path().join("in-use"), dir.path().join("research"));
        std::fs::create_dir_all(&research).unwrap();
        let store = Store::open(&research.join(crate::paths::DATABASE_FILE)).unwrap();
        store
            .set_identity(&Identity {
                kb: Kb::parse("research").unwrap(),
                title: "Research".into(),
                owner: None,
                description: String::new(),
            })
            .unwrap();
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
}
