//! What a search across libraries carries, spoken by the hub that answers
//! it ([`super::hub`]) and the client that asks another machine's hub
//! ([`super::remote`]): the scorers a library is asked with, and the answer
//! with its route and lanes. Its own module so that neither of the two
//! imports the other for it.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::lanes::merge::{RouteStep, SharedLane};
use crate::lanes::{SubjectHit, TopicHit};
use crate::models::ModelConfig;
use crate::store::Store;

/// The scorers a library is asked with: the embedder's and the
/// cross-encoder's fingerprints, or why they could not be read. Hits of two
/// libraries are ranked together only when these are the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scorers {
    pub embedder: Scorer,
    pub cross_encoder: Scorer,
}

impl Scorers {
    /// The scorers of a library stored in `store`: its own embedder, the
    /// cross-encoder of `models`.
    pub fn of_store(models: &ModelConfig, store: &Store) -> Scorers {
        let mut models = models.clone();
        match store.embedder() {
            Ok(kind) => models.embedder = kind,
            Err(e) => {
                return Scorers {
                    embedder: Scorer::from(Err(e)),
                    cross_encoder: Scorer::from(crate::models::reranker_id(&models)),
                };
            }
        }
        Scorers::of(&models)
    }

    pub fn of(models: &ModelConfig) -> Scorers {
        Scorers {
            embedder: Scorer::from(crate::models::Fingerprints::of(models).map(|f| f.model)),
            cross_encoder: Scorer::from(crate::models::reranker_id(models)),
        }
    }
}

/// A model's fingerprint (`name@sha12`), or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Scorer {
    Known { id: String },
    Unknown { reason: String },
}

impl From<Result<String>> for Scorer {
    fn from(r: Result<String>) -> Scorer {
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

/// A search over several libraries: the route, then each lane apart, every
/// hit with its library and owner. The two lanes are never merged; within a
/// lane, hits share a list only when one scorer placed them all.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct SharedMatch {
    pub query: String,
    pub route: Vec<RouteStep>,
    pub subject: SharedLane<SubjectHit>,
    pub topic: SharedLane<TopicHit>,
    /// Topic candidates the heading veto dropped, over every library asked.
    pub topic_vetoed: usize,
    /// Each library whose topic lane held back on the query, and why (the
    /// query's words none of its passages use). Absent from older hubs.
    #[serde(default)]
    pub topic_held_back: Vec<HeldBack>,
}

/// A library whose topic lane held back on a query, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, specta::Type)]
pub struct HeldBack {
    pub kb: String,
    pub why: String,
}
