//! Typed scales, a leaf every layer may use (the store keeps cosines, the
//! lanes compare them, the log and the UI show them). A cosine and a
//! cross-encoder logit are different numbers on different scales, so they
//! are different types with private fields: a number leaves only through
//! [`Cosine::get`] / [`RerankLogit::get`] (to be shown or serialised), and
//! two scores meet only on one scale, through [`Floor::admits`] or
//! [`Scale::rank`]. Comparing a logit with a cosine does not compile:
//!
//! ```compile_fail,E0308
//! use carrel::score::{Cosine, RerankLogit};
//! let same = Cosine::new(0.5) < RerankLogit::new(0.5);
//! ```
//!
//! ```compile_fail,E0308
//! use carrel::score::{Cosine, Floor, RerankLogit};
//! const F: Floor<Cosine> = Floor::new(Cosine::new(0.5), "test");
//! F.admits(RerankLogit::new(0.9));
//! ```
//!
//! ```compile_fail,E0616
//! // The number inside is not reachable: no `.0`.
//! let x: f32 = carrel::score::Cosine::new(0.5).0;
//! ```

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One scale's scores: ordered among themselves, never against another
/// scale's.
pub trait Scale: Copy + PartialOrd {
    /// The number, for display and serialisation only.
    fn get(self) -> f32;

    /// Higher first (a total order), for sorting hits of one scale.
    fn rank(self, other: Self) -> std::cmp::Ordering {
        other.get().total_cmp(&self.get())
    }
}

/// Cosine similarity of two unit vectors, in [-1, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, specta::Type)]
#[serde(transparent)]
pub struct Cosine(f32);

impl Cosine {
    pub const fn new(value: f32) -> Cosine {
        Cosine(value)
    }

    /// From a sqlite-vec cosine distance (1 − cosine).
    pub fn from_distance(d: f32) -> Cosine {
        Cosine(1.0 - d)
    }

    /// The number, for display and serialisation only.
    pub const fn get(self) -> f32 {
        self.0
    }
}

impl Scale for Cosine {
    fn get(self) -> f32 {
        self.0
    }
}

/// A cross-encoder's raw output (logit), unbounded; larger is more relevant.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, specta::Type)]
#[serde(transparent)]
pub struct RerankLogit(f32);

impl RerankLogit {
    pub const fn new(value: f32) -> RerankLogit {
        RerankLogit(value)
    }

    /// The number, for display and serialisation only.
    pub const fn get(self) -> f32 {
        self.0
    }
}

impl Scale for RerankLogit {
    fn get(self) -> f32 {
        self.0
    }
}

/// A number as the retrieval log keeps it: on the scale that produced it.
/// Serialised as `"score": x, "scale": "cosine" | "rerank_logit"`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "scale", content = "score", rename_all = "snake_case")]
pub enum Scored {
    Cosine(Cosine),
    RerankLogit(RerankLogit),
}

impl Scored {
    /// The scale's name as stored and shown.
    pub fn scale(self) -> &'static str {
        match self {
            Scored::Cosine(_) => "cosine",
            Scored::RerankLogit(_) => "rerank_logit",
        }
    }

    /// The number, for display and storage only.
    pub fn get(self) -> f32 {
        match self {
            Scored::Cosine(c) => c.get(),
            Scored::RerankLogit(r) => r.get(),
        }
    }

    /// Reads back what [`Scored::scale`] and [`Scored::get`] wrote.
    pub fn from_parts(scale: &str, score: f64) -> Option<Scored> {
        match scale {
            "cosine" => Some(Scored::Cosine(Cosine(score as f32))),
            "rerank_logit" => Some(Scored::RerankLogit(RerankLogit(score as f32))),
            _ => None,
        }
    }
}

/// A threshold on one scale, with the population it was calibrated on.
#[derive(Debug, Clone, Copy)]
pub struct Floor<S> {
    value: S,
    calibrated_on: &'static str,
}

impl<S: Scale> Floor<S> {
    pub const fn new(value: S, calibrated_on: &'static str) -> Self {
        Floor {
            value,
            calibrated_on,
        }
    }

    pub fn admits(&self, score: S) -> bool {
        score >= self.value
    }

    /// The threshold, for display (the debug pane, the eval report).
    pub fn value(&self) -> S {
        self.value
    }

    /// The population the threshold was calibrated on.
    pub fn calibrated_on(&self) -> &'static str {
        self.calibrated_on
    }
}

/// Which scorer produced a number: its kind, model and fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScorerId {
    pub kind: ScorerKind,
    pub model: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScorerKind {
    /// Bi-encoder cosine between query and card or chunk vectors.
    Cosine,
    /// Cross-encoder logit over (query, card).
    CrossEncoder,
}

impl std::fmt::Display for ScorerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            ScorerKind::Cosine => "cosine",
            ScorerKind::CrossEncoder => "cross-encoder",
        };
        write!(f, "{kind}:{}", self.model)
    }
}

impl Serialize for ScorerId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Reads back what [`Display`](std::fmt::Display) wrote (a kept chat turn).
impl<'de> Deserialize<'de> for ScorerId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let (kind, model) = s
            .split_once(':')
            .ok_or_else(|| serde::de::Error::custom(format!("not a scorer id: {s}")))?;
        let kind = match kind {
            "cosine" => ScorerKind::Cosine,
            "cross-encoder" => ScorerKind::CrossEncoder,
            other => {
                return Err(serde::de::Error::custom(format!(
                    "unknown scorer kind {other}"
                )));
            }
        };
        Ok(ScorerId {
            kind,
            model: model.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scorer_ids_read_back_what_they_write() {
        for kind in [ScorerKind::Cosine, ScorerKind::CrossEncoder] {
            let id = ScorerId {
                kind,
                model: "carrel-ce-v1@12b3882729bc".into(),
            };
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(serde_json::from_str::<ScorerId>(&json).unwrap(), id);
        }
        assert!(serde_json::from_str::<ScorerId>("\"bm25:x\"").is_err());
    }

    #[test]
    fn floors_admit_on_their_own_scale() {
        let f = Floor::new(Cosine(0.5), "test");
        assert!(f.admits(Cosine(0.5)));
        assert!(!f.admits(Cosine(0.49)));
        let r = Floor::new(RerankLogit(-1.0), "test");
        assert!(r.admits(RerankLogit(0.0)));
        // `f.admits(RerankLogit(0.9))` does not compile: the module's
        // compile_fail doc tests prove it.
    }

    #[test]
    fn scores_rank_higher_first_on_their_own_scale() {
        let mut v = [Cosine(0.2), Cosine(0.9), Cosine(-0.1)];
        v.sort_by(|a, b| a.rank(*b));
        assert_eq!(v, [Cosine(0.9), Cosine(0.2), Cosine(-0.1)]);
    }

    #[test]
    fn logged_scores_keep_their_scale() {
        let s = Scored::RerankLogit(RerankLogit(1.5));
        assert_eq!(
            serde_json::to_value(s).unwrap(),
            serde_json::json!({"scale": "rerank_logit", "score": 1.5})
        );
        assert_eq!(Scored::from_parts(s.scale(), s.get() as f64), Some(s));
        assert_eq!(Scored::from_parts("bm25", 1.0), None);
    }

    #[test]
    fn distance_maps_to_cosine() {
        assert_eq!(Cosine::from_distance(0.25), Cosine(0.75));
    }
}
