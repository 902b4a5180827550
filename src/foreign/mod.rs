//! Foreign sources: a read-only collection in someone else's vector store
//! (a Chroma collection, or a PostgreSQL table with a pgvector column),
//! asked beside the library and never sorted
//! with its lanes. A collection's own score and Carrel's cosine are two
//! different numbers on two different scales; the cross-encoder is the one
//! scorer that has read both from the same (query, text) pairs, so a foreign
//! point is admitted only past a floor on its scale ([`PASSAGE_FLOOR`]), and
//! with no calibrated cross-encoder a foreign source is not asked at all.
//!
//! Whether retrieval reads a source is one function, [`skip_reason`]: the
//! CLI's `carrel source list`, MCP, the app's Sources screen and retrieval
//! itself all call it and show its answer, never a second copy of the
//! rule. "Enabled" records only what someone asked for.

pub mod ask;
pub mod chroma;
mod declared;
mod gates;
pub mod pgvector;
pub mod saved;
mod scales;

pub use declared::*;
pub use gates::*;
pub use scales::*;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::models::ModelConfig;
use crate::score::{Floor, RerankLogit};

/// The embedder whose vectors Carrel can make a query vector for: a foreign
/// collection must have been embedded by it, since its query vector must
/// come from the same model.
pub const EMBEDDER: &str = crate::models::EMBEDDER_NAME;
/// The dimensions of [`EMBEDDER`]'s vectors.
pub const EMBEDDER_DIMENSIONS: usize = crate::models::EMBED_DIM;

/// The floor a foreign point's cross-encoder logit must reach, on (query,
/// passage) pairs: a foreign point is a passage, not a card. Calibrated by
/// `carrel eval` (its "foreign passage floor" sweep): for each query, the
/// passages of the library nearest it, as many as a source is asked for
/// ([`POINTS_ASKED`]), scored by carrel-ce-v2 as the foreign lane scores
/// them, the query judged by its best logit. On the calibration set (404
/// index-term queries, 173 noise; 2026-12-02) the noise queries' best logits
/// top out at 0.789 (the next at 0.360); at 1.0 no noise query is admitted,
/// 66% of the relevant queries admit a passage, and that passage is from a
/// relevant document in 51.5% of them (its neighbours in the same manual
/// often discuss the term too). On fixtures/labelled (26, 13 noise): 38%
/// admitted, 100% right, 0 noise (noise tops at −2.49). The zero-noise
/// point, as for the subject lane: a foreign hit that is noise is worse than
/// one that is missing.
pub const PASSAGE_FLOOR: Floor<RerankLogit> = Floor::new(
    RerankLogit::new(1.0),
    "carrel-ce-v2 (5a2511219333) on (query, passage) pairs, each query's best of its 10 nearest passages: \
     calibration set (404 relevant, 173 noise): noise tops at 0.789; at 1.0 0 noise, 66% admitted, 51.5% right; \
     fixtures/labelled (26, 13 noise): 38% admitted, 100% right, 0 noise",
);
/// The cross-encoder [`PASSAGE_FLOOR`] was calibrated on (the first 12 hex
/// digits of its model file's sha256): the subject lane's, so one check
/// (`lanes::subject::floor_calibrated_for`) answers for both floors. Any
/// other cross-encoder fails gate 2.
pub const PASSAGE_FLOOR_MODEL: &str = crate::lanes::subject::RERANK_FLOOR_MODEL;

/// Points asked of a source per query, before gate 5 and the cross-encoder.
pub const POINTS_ASKED: usize = 10;

/// The default time a source has to answer one query.
pub const DEFAULT_BUDGET: std::time::Duration = std::time::Duration::from_millis(800);

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source {
        Source {
            name: "crm".into(),
            at: Kind::Chroma {
                url: "http://127.0.0.1:1".into(),
                tenant: "default_tenant".into(),
                database: "default_database".into(),
                collection: "notes".into(),
            },
            declared: Declared {
                metric: Metric::Cosine,
                dimensions: 384,
                text_key: Some("#document".into()),
                scope: Some(Scope {
                    key: "client".into(),
                    value: "acme".into(),
                }),
                limit: None,
                embedder: EMBEDDER.into(),
            },
            enabled: true,
            discovery: Some(Discovery {
                metric: Some(Metric::Cosine),
                dimensions: Some(384),
                keys: vec!["#document".into(), "client".into()],
                points: 2,
                read_at: 1,
            }),
            acknowledgement: None,
            last_used: None,
        }
    }

    const CE: CrossEncoder = CrossEncoder::Calibrated { id: String::new() };

    /// Each gate, alone, gives its own reason; in order, the first wins.
    #[test]
    fn each_gate_says_why_in_order() {
        assert_eq!(skip_reason(&source(), &CE), None);
        let mut s = source();
        s.enabled = false;
        s.declared.text_key = None;
        assert_eq!(skip_reason(&s, &CE), Some(SkipReason::NotEnabled));
        let missing = CrossEncoder::Missing { why: "none".into() };
        assert!(matches!(
            skip_reason(&source(), &missing),
            Some(SkipReason::NoCrossEncoder { .. })
        ));
        let other = CrossEncoder::Other {
            id: "ms-marco@abc".into(),
        };
        assert!(matches!(
            skip_reason(&source(), &other),
            Some(SkipReason::NoCrossEncoder { .. })
        ));
        let mut s = source();
        s.discovery.as_mut().unwrap().metric = Some(Metric::L2);
        assert_eq!(
            skip_reason(&s, &CE),
            Some(SkipReason::Schema {
                error: SchemaError::Metric {
                    declared: Metric::Cosine,
                    found: Metric::L2
                }
            })
        );
        let mut s = source();
        s.discovery = None;
        assert_eq!(
            skip_reason(&s, &CE),
            Some(SkipReason::Schema {
                error: SchemaError::NeverRead
            })
        );
        let mut s = source();
        s.declared.dimensions = 768;
        assert!(matches!(
            skip_reason(&s, &CE),
            Some(SkipReason::Schema {
                error: SchemaError::EmbedderDimensions { .. }
            })
        ));
        let mut s = source();
        s.declared.text_key = None;
        assert_eq!(skip_reason(&s, &CE), Some(SkipReason::NoTextKey));
        let mut s = source();
        s.declared.text_key = Some("body".into());
        assert!(matches!(
            skip_reason(&s, &CE),
            Some(SkipReason::TextKeyAbsent { .. })
        ));
        let mut s = source();
        s.declared.scope = None;
        assert_eq!(skip_reason(&s, &CE), Some(SkipReason::Unscoped));
        s.acknowledgement = Some(Acknowledgement {
            by: "ana".into(),
            at: 1,
            sentence: unscoped_sentence("crm"),
        });
        assert_eq!(skip_reason(&s, &CE), None);
    }

    /// Gate 5 compares in the metric's direction, and its label says so.
    #[test]
    fn the_limit_follows_the_metric_direction() {
        let s = CollectionScore::new;
        assert!(Direction::LowerIsCloser.within(s(0.2), s(0.5)));
        assert!(!Direction::LowerIsCloser.within(s(0.7), s(0.5)));
        assert!(Direction::HigherIsCloser.within(s(0.7), s(0.5)));
        assert!(!Direction::HigherIsCloser.within(s(0.2), s(0.5)));
        assert_eq!(Direction::LowerIsCloser.limit_label(), "Maximum distance");
        assert_eq!(Direction::HigherIsCloser.limit_label(), "Minimum score");
    }
}
