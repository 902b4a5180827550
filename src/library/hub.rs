//! Several libraries asked as one: what `carrel mcp` and `carrel serve`
//! hold. Each library is opened once and asked on its own, with its own
//! lanes; the hub keeps who answered and how (the route), attributes every
//! hit to its library and owner, and puts hits in one list only as
//! [`crate::lanes::merge`] allows.
//!
//! Crossing from one library to another is always asked for: a search
//! names its libraries (or `*`), and a read or a citation names the one it
//! means whenever the hub holds more than one. Who may ask for which
//! library is a [`Grant`], made from a read token by [`Hub::authenticate`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use super::remote::Remote;
use super::shared::{HeldBack, Scorers, SharedMatch};
use super::shelf::{Place, ShelfState, Shelved};
use super::{Library, LibraryConfig};
use crate::error::{Error, Result};
use crate::kb::{Identity, Kb, ReadToken};
use crate::lanes::MatchResponse;
use crate::lanes::merge::{RouteState, RouteStep, SharedLane};
use crate::models::ModelConfig;
use crate::store::Store;

/// One library the hub serves.
pub struct Member {
    state: MemberState,
}

enum MemberState {
    Open {
        dir: PathBuf,
        identity: Identity,
        library: Arc<Mutex<Library>>,
        /// A second connection, for token checks and counts: a request is
        /// let in or refused without waiting for another one's search.
        side: Box<Mutex<Store>>,
    },
    /// It could not be opened when the hub started; the reason says why.
    Unavailable { reason: String },
    /// A library another hub serves, asked there each time; its owner as
    /// that hub said when this one started (none if it did not answer).
    Remote {
        remote: Remote,
        owner: Option<String>,
    },
}

/// Which libraries a caller may read: all of them (a local process, as
/// `carrel mcp` on stdio), or those its read token opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    All,
    Only(BTreeSet<Kb>),
}

impl Grant {
    fn allows(&self, kb: &Kb) -> bool {
        match self {
            Grant::All => true,
            Grant::Only(kbs) => kbs.contains(kb),
        }
    }
}

/// Which libraries a search asks: each by name, or every one the caller may
/// read, which must be asked for as `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    Named(Vec<String>),
}

/// A library as the `libraries` tool lists it.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryInfo {
    /// Its name; none for a library that could not be opened to read it.
    pub kb: Option<Kb>,
    pub title: Option<String>,
    pub owner: Option<String>,
    pub description: Option<String>,
    #[serde(flatten)]
    pub state: Availability,
    pub scorers: Scorers,
}

/// Whether a library can be asked now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Availability {
    Ready { documents: i64 },
    Unavailable { reason: String },
}

/// The libraries a hub serves, opened once.
pub struct Hub {
    members: Vec<Member>,
    models: ModelConfig,
}

impl Hub {
    /// Opens every library of `libraries` (a surveyed shelf, or part of
    /// one); one that cannot be opened is kept as unavailable, with why.
    pub fn open(libraries: &[Shelved], models: &ModelConfig) -> Hub {
        let members = libraries
            .iter()
            .map(|s| Member {
                state: match (s.remote(), &s.place) {
                    (Some(remote), _) => {
                        let owner = match &s.state {
                            ShelfState::Ready { identity, .. } => identity.owner.clone(),
                            _ => remote.identity().ok().and_then(|t| t.identity.owner),
                        };
                        MemberState::Remote { remote, owner }
                    }
                    (None, Place::Hub { url, .. }) => MemberState::Unavailable {
                        reason: format!("the library at {url} has no name on the shelf"),
                    },
                    (None, Place::Local { dir }) => match &s.state {
                        ShelfState::Ready { .. } => open_member(dir, models),
                        ShelfState::NotCreated => MemberState::Unavailable {
                            reason: format!(
                                "no library at {} yet: `carrel add` creates it",
                                dir.display()
                            ),
                        },
                        ShelfState::Unavailable { reason } => MemberState::Unavailable {
                            reason: reason.clone(),
                        },
                        ShelfState::Remote { .. } | ShelfState::Unreachable { .. } => {
                            MemberState::Unavailable {
                                reason: format!("{} is a folder, not a hub", dir.display()),
                            }
                        }
                    },
                },
            })
            .collect();
        Hub {
            members,
            models: models.clone(),
        }
    }

    /// The libraries served, as `libraries` lists them to this caller.
    pub fn libraries(&self, grant: &Grant) -> Vec<LibraryInfo> {
        let scorers = Scorers::of(&self.models);
        self.members
            .iter()
            .filter(|m| m.visible(grant))
            .map(|m| {
                if let MemberState::Remote { remote, owner } = &m.state {
                    return match remote.identity() {
                        Ok(there) => LibraryInfo {
                            kb: Some(there.identity.kb),
                            title: Some(there.identity.title),
                            owner: there.identity.owner,
                            description: Some(there.identity.description),
                            state: Availability::Ready {
                                documents: there.documents,
                            },
                            scorers: there.scorers.unwrap_or_else(|| scorers.clone()),
                        },
                        Err(e) => LibraryInfo {
                            kb: Some(remote.kb.clone()),
                            title: None,
                            owner: owner.clone(),
                            description: None,
                            state: Availability::Unavailable {
                                reason: e.to_string(),
                            },
                            scorers: scorers.clone(),
                        },
                    };
                }
                let (kb, title, owner, description) = match &m.state {
                    MemberState::Open { identity: i, .. } => (
                        Some(i.kb.clone()),
                        Some(i.title.clone()),
                        i.owner.clone(),
                        Some(i.description.clone()),
                    ),
                    MemberState::Unavailable { .. } | MemberState::Remote { .. } => {
                        (None, None, None, None)
                    }
                };
                let scorers = match &m.state {
                    MemberState::Open { side, .. } => {
                        Scorers::of_store(&self.models, &crate::fault::lock(side))
                    }
                    _ => scorers.clone(),
                };
                LibraryInfo {
                    kb,
                    title,
                    owner,
                    description,
                    state: m.availability(),
                    scorers,
                }
            })
            .collect()
    }

    /// The libraries a read token opens. None at all is an error that says
    /// so, for a 401.
    pub fn authenticate(&self, token: &ReadToken) -> Result<Grant> {
        let digest = token.digest();
        let mut kbs = BTreeSet::new();
        for m in &self.members {
            if let MemberState::Open { identity, side, .. } = &m.state
                && crate::fault::lock(side).grants(&digest)?
            {
                kbs.insert(identity.kb.clone());
            }
        }
        if kbs.is_empty() {
            return Err(Error::Unauthorized(
                "this token opens no library served here: ask the library's owner for a read token (`carrel kb token NAME`)".into(),
            ));
        }
        Ok(Grant::Only(kbs))
    }

    /// The one library `kb` names, for a read or a citation. With no name,
    /// the only library this caller may read; with several, an error that
    /// lists them, since a read never crosses libraries by default.
    pub fn one(&self, kb: Option<&str>, grant: &Grant) -> Result<&Member> {
        match kb {
            Some(kb) => self.named(kb, grant),
            None => {
                let visible: Vec<&Member> =
                    self.members.iter().filter(|m| m.visible(grant)).collect();
                match visible.as_slice() {
                    [only] => Ok(only),
                    _ => Err(Error::KbNeeded {
                        known: self.known(grant),
                    }),
                }
            }
        }
    }

    /// The libraries a search asks, each once, in the order named.
    pub fn select(&self, selection: &Selection, grant: &Grant) -> Result<Vec<&Member>> {
        match selection {
            Selection::All => Ok(self.members.iter().filter(|m| m.visible(grant)).collect()),
            Selection::Named(names) => {
                if names.is_empty() {
                    return Err(Error::KbNeeded {
                        known: self.known(grant),
                    });
                }
                let mut out: Vec<&Member> = Vec::new();
                for name in names {
                    let m = self.named(name, grant)?;
                    if !out.iter().any(|o| std::ptr::eq(*o, m)) {
                        out.push(m);
                    }
                }
                Ok(out)
            }
        }
    }

    /// Asks each of `members` both lanes for `query`, side by side. A
    /// library that cannot be asked is in the route with its reason; when
    /// none answered, that is an error with every reason, never an empty
    /// result.
    pub fn search(&self, members: &[&Member], query: &str, top_k: usize) -> Result<SharedMatch> {
        let answers: Vec<(RouteStep, Option<Answered>)> = std::thread::scope(|s| {
            let asked: Vec<_> = members
                .iter()
                .map(|m| s.spawn(move || m.search(query, top_k)))
                .collect();
            asked
                .into_iter()
                .zip(members)
                .map(|(h, m)| {
                    h.join().unwrap_or_else(|_| {
                        let reason = "the search panicked".to_string();
                        (m.step(RouteState::Failed { reason }, 0.0), None)
                    })
                })
                .collect()
        });
        if answers.iter().all(|(_, r)| r.is_none()) {
            let reasons: Vec<String> = answers
                .iter()
                .map(|(step, _)| match &step.state {
                    RouteState::Unavailable { reason } | RouteState::Failed { reason } => {
                        format!("{}: {reason}", step.name())
                    }
                    RouteState::Answered => step.name(),
                })
                .collect();
            return Err(Error::NothingAnswered(reasons.join("; ")));
        }
        // This hub's own libraries first, ordered together as the merge
        // rule allows; then what other hubs answered, taken in by the same
        // rule.
        let here: Vec<(Kb, &RouteStep, &MatchResponse)> = answers
            .iter()
            .filter_map(|(step, r)| match r {
                Some(Answered::Here(r)) => Some((step.kb.clone()?, step, &**r)),
                _ => None,
            })
            .collect();
        let mut subject = SharedLane::gather(
            here.iter().map(|(kb, s, r)| (kb, &s.owner, &r.subject)),
            top_k,
        );
        let mut topic = SharedLane::gather(
            here.iter().map(|(kb, s, r)| (kb, &s.owner, &r.topic)),
            top_k,
        );
        let mut topic_vetoed: usize = here.iter().map(|(_, _, r)| r.explain.vetoed).sum();
        let mut topic_held_back: Vec<HeldBack> = here
            .iter()
            .filter_map(|(kb, _, r)| {
                let why = r.explain.topic_held_back.clone()?;
                Some(HeldBack {
                    kb: kb.to_string(),
                    why,
                })
            })
            .collect();
        for (_, r) in &answers {
            if let Some(Answered::There(m)) = r {
                subject.absorb(m.subject.clone(), top_k);
                topic.absorb(m.topic.clone(), top_k);
                topic_vetoed += m.topic_vetoed;
                topic_held_back.extend(m.topic_held_back.iter().cloned());
            }
        }
        Ok(SharedMatch {
            query: query.to_string(),
            topic_vetoed,
            topic_held_back,
            route: answers.into_iter().map(|(step, _)| step).collect(),
            subject,
            topic,
        })
    }

    /// The library `kb` names if it is on another hub, for a tool call to
    /// be passed on to it; none for a library here.
    pub fn remote(&self, kb: Option<&str>, grant: &Grant) -> Result<Option<Remote>> {
        Ok(match &self.one(kb, grant)?.state {
            MemberState::Remote { remote, .. } => Some(remote.clone()),
            _ => None,
        })
    }

    fn named(&self, kb: &str, grant: &Grant) -> Result<&Member> {
        self.members
            .iter()
            .find(|m| m.visible(grant) && m.kb().is_some_and(|k| k.as_str() == kb))
            .ok_or_else(|| Error::UnknownKb {
                kb: kb.to_string(),
                known: self.known(grant),
            })
    }

    /// The names this caller may ask for, as an error lists them.
    fn known(&self, grant: &Grant) -> String {
        let names: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.visible(grant))
            .filter_map(|m| Some(format!("`{}`", m.kb()?)))
            .collect();
        if names.is_empty() {
            "none that can be opened".into()
        } else {
            names.join(", ")
        }
    }
}

/// One library's answer to a search: its own lanes, or what its hub sent.
enum Answered {
    Here(Box<MatchResponse>),
    There(SharedMatch),
}

impl Member {
    pub fn kb(&self) -> Option<&Kb> {
        match &self.state {
            MemberState::Open { identity, .. } => Some(&identity.kb),
            MemberState::Remote { remote, .. } => Some(&remote.kb),
            MemberState::Unavailable { .. } => None,
        }
    }

    pub fn owner(&self) -> Option<&str> {
        match &self.state {
            MemberState::Open { identity, .. } => identity.owner.as_deref(),
            MemberState::Remote { owner, .. } => owner.as_deref(),
            MemberState::Unavailable { .. } => None,
        }
    }

    /// A library a token opens is one it names. An unavailable library,
    /// whose name cannot be read, and a library of another hub are shown
    /// only to a local caller: a hub never passes on another's library.
    fn visible(&self, grant: &Grant) -> bool {
        match (&self.state, self.kb()) {
            (MemberState::Remote { .. }, _) | (_, None) => *grant == Grant::All,
            (_, Some(kb)) => grant.allows(kb),
        }
    }

    /// The open library, or why it cannot be asked now: its folder may have
    /// gone since the hub opened it, and an open file would go on answering
    /// from a library that no longer exists.
    pub fn library(&self) -> Result<&Arc<Mutex<Library>>> {
        match &self.state {
            MemberState::Open { library, dir, .. } => {
                if !Store::held_in(dir) {
                    return Err(Error::LibraryGone(dir.clone()));
                }
                Ok(library)
            }
            MemberState::Unavailable { reason } => Err(Error::Unavailable(reason.clone())),
            MemberState::Remote { remote, .. } => Err(Error::RemoteLibrary {
                kb: remote.kb.to_string(),
                url: remote.url.clone(),
            }),
        }
    }

    fn availability(&self) -> Availability {
        let documents = self.library().and_then(|_| match &self.state {
            MemberState::Open { side, .. } => crate::fault::lock(side).document_count(),
            _ => Err(Error::Unavailable("not a library here".into())),
        });
        match documents {
            Ok(documents) => Availability::Ready { documents },
            Err(e) => Availability::Unavailable {
                reason: e.to_string(),
            },
        }
    }

    fn step(&self, state: RouteState, ms: f64) -> RouteStep {
        RouteStep {
            kb: self.kb().cloned(),
            owner: self.owner().map(str::to_string),
            state,
            ms,
        }
    }

    fn search(&self, query: &str, top_k: usize) -> (RouteStep, Option<Answered>) {
        let started = Instant::now();
        if let MemberState::Remote { remote, .. } = &self.state {
            let found = remote.search(query, top_k);
            let ms = crate::lanes::merge::route_ms(started);
            return match found {
                Ok(m) => (
                    self.step(RouteState::Answered, ms),
                    Some(Answered::There(m)),
                ),
                Err(e) => {
                    let reason = e.to_string();
                    (self.step(RouteState::Unavailable { reason }, ms), None)
                }
            };
        }
        let library = match self.library() {
            Ok(l) => l,
            Err(e) => {
                let reason = e.to_string();
                return (self.step(RouteState::Unavailable { reason }, 0.0), None);
            }
        };
        let result = crate::fault::lock(library).match_query(query, top_k);
        let ms = crate::lanes::merge::route_ms(started);
        match result {
            Ok(r) => (
                self.step(RouteState::Answered, ms),
                Some(Answered::Here(Box::new(r))),
            ),
            Err(e) => {
                let reason = e.to_string();
                (self.step(RouteState::Failed { reason }, ms), None)
            }
        }
    }
}

fn open_member(dir: &Path, models: &ModelConfig) -> MemberState {
    let opened = (|| {
        let library =
            Library::open_existing(LibraryConfig::new(dir.to_path_buf(), models.clone()))?;
        let side = Store::open_dir(dir)?;
        Ok::<_, Error>((side.identity()?, library, side))
    })();
    match opened {
        Ok((identity, library, side)) => MemberState::Open {
            dir: dir.to_path_buf(),
            identity,
            library: Arc::new(Mutex::new(library)),
            side: Box::new(Mutex::new(side)),
        },
        Err(e) => MemberState::Unavailable {
            reason: e.to_string(),
        },
    }
}
