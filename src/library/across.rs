//! A question across libraries, explained: the libraries its `@kb:` tokens
//! name, each asked both lanes on its own. What the match panel, the debug
//! pane and `carrel match --explain` show for such a question: per library
//! its two lists (never merged across libraries, so never across scorers),
//! its route (answered, unavailable or failed, with why, and the time), and
//! for a library on another machine what its hub returned.

use std::time::Instant;

use serde::Serialize;

use super::remote::Remote;
use super::shared::SharedMatch;
use super::shelf::{Shelf, ShelfState, Shelved, shelf_path};
use super::{Library, LibraryConfig};
use crate::error::Result;
use crate::kb::Kb;
use crate::lanes::merge::{RouteState, RouteStep, route_ms};
use crate::lanes::{Detail, MatchView};

/// An `@kb:` question, each library it names asked on its own.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Across {
    /// The question, its `@kb:` and `@doc:` tokens taken out.
    pub query: String,
    /// Each library named, in the order named.
    pub libraries: Vec<AskedLibrary>,
}

/// One library an `@kb:` question named: how it took part, and its lanes
/// when it answered.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct AskedLibrary {
    pub route: RouteStep,
    /// Its two lanes, when it answered.
    pub lanes: Option<AskedLanes>,
}

/// A library's lanes for the question, as they were made.
#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum AskedLanes {
    /// On this machine: its own lanes, as the panel shows the library in
    /// use.
    Here { view: Box<MatchView> },
    /// On another machine: what its hub returned, as it returned it.
    Hub { url: String, returned: SharedMatch },
}

/// The libraries `message`'s `@kb:` tokens name, each asked both lanes for
/// the question on its own: those here opened with `home`'s models, those
/// on other hubs searched there. None when it names none (the library in
/// use explains it); an unknown name is an error that lists the known ones.
/// A library that cannot be opened or searched is in its route with why.
pub fn explain_across(
    home: &LibraryConfig,
    message: &str,
    top_k: usize,
    detail: Detail,
) -> Result<Option<Across>> {
    if crate::mention::parse_kbs(message).is_empty() {
        return Ok(None);
    }
    let survey = Shelf::load(&shelf_path()?)?.survey(&home.dir);
    let query = crate::mention::strip(message);
    let libraries = survey
        .scoped(message)?
        .into_iter()
        .map(|entry| match entry.remote() {
            Some(remote) => ask_hub(&remote, &query, top_k),
            None => ask_here(home, entry, &query, top_k, detail),
        })
        .collect();
    Ok(Some(Across { query, libraries }))
}

/// A library on this machine, opened for the question and asked it.
fn ask_here(
    home: &LibraryConfig,
    entry: &Shelved,
    query: &str,
    top_k: usize,
    detail: Detail,
) -> AskedLibrary {
    let started = Instant::now();
    let (kb, owner) = match &entry.state {
        ShelfState::Ready { identity, .. } => (Some(identity.kb.clone()), identity.owner.clone()),
        _ => (entry.name().and_then(|n| Kb::parse(n).ok()), None),
    };
    let step = |state| RouteStep {
        kb: kb.clone(),
        owner: owner.clone(),
        state,
        ms: route_ms(started),
    };
    let Some(dir) = entry.dir() else {
        let reason = format!("the library at {} has no folder here", entry.place);
        return unanswered(step(RouteState::Unavailable { reason }));
    };
    let config = LibraryConfig {
        dir: dir.to_path_buf(),
        ..home.clone()
    };
    let mut library = match Library::open_existing(config) {
        Ok(l) => l,
        Err(e) => {
            return unanswered(step(RouteState::Unavailable {
                reason: e.to_string(),
            }));
        }
    };
    match library.match_query(query, top_k) {
        Ok(r) => AskedLibrary {
            route: step(RouteState::Answered),
            lanes: Some(AskedLanes::Here {
                view: Box::new(r.view(detail)),
            }),
        },
        Err(e) => unanswered(step(RouteState::Failed {
            reason: e.to_string(),
        })),
    }
}

/// A library on another hub, searched there for the question.
fn ask_hub(remote: &Remote, query: &str, top_k: usize) -> AskedLibrary {
    let started = Instant::now();
    let found = remote.search(query, top_k);
    let step = |state, owner| RouteStep {
        kb: Some(remote.kb.clone()),
        owner,
        state,
        ms: route_ms(started),
    };
    match found {
        Ok(returned) => {
            // Who keeps it, as its hub says in its own route.
            let owner = returned
                .route
                .iter()
                .find(|s| s.kb.as_ref() == Some(&remote.kb))
                .and_then(|s| s.owner.clone());
            AskedLibrary {
                route: step(RouteState::Answered, owner),
                lanes: Some(AskedLanes::Hub {
                    url: remote.url.clone(),
                    returned,
                }),
            }
        }
        Err(e) => unanswered(step(
            RouteState::Failed {
                reason: e.to_string(),
            },
            None,
        )),
    }
}

fn unanswered(route: RouteStep) -> AskedLibrary {
    AskedLibrary { route, lanes: None }
}
