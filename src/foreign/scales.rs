//! A collection's own scale: its metric, which way its scores run, a
//! score on it (never compared with Carrel's numbers), and the limit a
//! source may set on it (gate 5).

use super::*;

/// A collection's distance function, as its store names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Cosine,
    /// Euclidean (Chroma's `l2` answers its square, pgvector's `<->` the
    /// distance itself).
    L2,
    /// Inner product (Chroma's `ip`, pgvector's `<#>`).
    InnerProduct,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Cosine, Metric::L2, Metric::InnerProduct];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::L2 => "l2",
            Metric::InnerProduct => "inner_product",
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        match s {
            "cosine" => Some(Metric::Cosine),
            "l2" | "euclidean" => Some(Metric::L2),
            "ip" | "inner_product" | "dot" => Some(Metric::InnerProduct),
            _ => None,
        }
    }
}

/// Which way a collection's own score reads. A similarity is closer when
/// higher; a distance is closer when lower. One fixed comparison would be
/// right for one and backwards for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsCloser,
    LowerIsCloser,
}

impl Direction {
    /// The pre-rerank field's label: raising a minimum score admits fewer
    /// points, raising a maximum distance admits more.
    pub fn limit_label(self) -> &'static str {
        match self {
            Direction::HigherIsCloser => "Minimum score",
            Direction::LowerIsCloser => "Maximum distance",
        }
    }

    /// Gate 5: whether a point's own `score` is within `limit`.
    pub fn within(self, score: CollectionScore, limit: CollectionScore) -> bool {
        match self {
            Direction::HigherIsCloser => score.0 >= limit.0,
            Direction::LowerIsCloser => score.0 <= limit.0,
        }
    }
}

/// A number on a foreign collection's own scale (a distance or a
/// similarity, as its metric and [`Direction`] say): compared only with that
/// source's own pre-rerank limit, through [`Direction::within`], never with a
/// cosine or a logit. Admission is decided on the cross-encoder's scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(transparent)]
pub struct CollectionScore(f32);

impl CollectionScore {
    pub const fn new(value: f32) -> CollectionScore {
        CollectionScore(value)
    }

    /// The number, for display and serialisation only.
    pub const fn get(self) -> f32 {
        self.0
    }
}

/// Chroma answers a distance for every metric (cosine: 1 − cosine; l2:
/// squared distance; ip: 1 − dot).
pub const CHROMA_DIRECTION: Direction = Direction::LowerIsCloser;

/// The pre-rerank field's label for a store and a metric, for a form that
/// has not saved its source yet.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct LimitLabel {
    pub store: Store,
    pub metric: Metric,
    pub label: String,
}

/// Every store and metric's label, from [`Store::direction`].
pub fn limit_labels() -> Vec<LimitLabel> {
    Store::ALL
        .into_iter()
        .flat_map(|store| {
            Metric::ALL.into_iter().map(move |metric| LimitLabel {
                store,
                metric,
                label: store.direction(metric).limit_label().into(),
            })
        })
        .collect()
}

/// A query's check, in every adapter, that the collection still measures
/// the declared `metric` (`found` read just before it asks; none: the
/// collection fixes no metric). Its scores would otherwise be read the
/// wrong way, so the query fails instead.
pub fn still_measures(metric: Metric, found: Option<Metric>) -> Result<(), Failure> {
    match found {
        Some(found) if found != metric => Err(format!(
            "the collection now measures {}, not {}; read its schema again",
            found.as_str(),
            metric.as_str()
        )),
        _ => Ok(()),
    }
}
