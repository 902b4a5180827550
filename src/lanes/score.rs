//! Typed scales. A cosine and a cross-encoder logit are different numbers on
//! different scales, so they are different types, and a [`Floor`] is typed by
//! the scale it was calibrated on: comparing a logit with a cosine floor does
//! not compile.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Cosine similarity of two unit vectors, in [-1, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, specta::Type)]
#[serde(transparent)]
pub struct Cosine(pub f32);

impl Cosine {
    /// From a sqlite-vec cosine distance (1 − cosine).
    pub fn from_distance(d: f32) -> Cosine {
        Cosine(1.0 - d)
    }
}

/// A cross-encoder's raw output (logit), unbounded; larger is more relevant.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, specta::Type)]
#[serde(transparent)]
pub struct RerankLogit(pub f32);

/// A threshold on one scale, with the population it was calibrated on.
#[derive(Debug, Clone, Copy)]
pub struct Floor<S> {
    pub value: S,
    pub calibrated_on: &'static str,
}

impl<S: PartialOrd + Copy> Floor<S> {
    pub const fn new(value: S, calibrated_on: &'static str) -> Self {
        Floor {
            value,
            calibrated_on,
        }
    }

    pub fn admits(&self, score: S) -> bool {
        score >= self.value
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
        // `f.admits(RerankLogit(0.9))` does not compile: that is the point.
    }

    #[test]
    fn distance_maps_to_cosine() {
        assert_eq!(Cosine::from_distance(0.25), Cosine(0.75));
    }
}
