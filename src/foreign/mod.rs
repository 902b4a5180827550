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
pub mod pgvector;
pub mod saved;

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

/// Where a source lives. Each kind says which way its scores read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    /// A collection on a Chroma server, over its HTTP API (v2).
    Chroma {
        url: String,
        tenant: String,
        database: String,
        collection: String,
    },
    /// A PostgreSQL table with a pgvector column; the text and scope are
    /// columns too (the declaration's text key and scope key).
    Pgvector {
        /// A PostgreSQL connection URL (`postgresql://user@host:port/db`).
        url: String,
        /// The table, `schema.table` or `table`.
        table: String,
        /// Its `vector` column.
        vector_column: String,
    },
}

/// Chroma answers a distance for every metric (cosine: 1 − cosine; l2:
/// squared distance; ip: 1 − dot).
pub const CHROMA_DIRECTION: Direction = Direction::LowerIsCloser;

/// One point a collection returned: its id, its text under the source's text
/// key (none when the point lacks it), and its score on the collection's
/// own scale.
#[derive(Debug, Clone)]
pub struct Point {
    pub id: String,
    pub text: Option<String>,
    pub own: CollectionScore,
}

/// Why a request got no usable answer, in words for the source's status.
pub type Failure = String;

/// What every adapter answers for its collection: the seam a new store
/// (Qdrant, answering a similarity for cosine and dot and a distance for
/// euclidean) plugs into, each call within one time budget.
pub trait Collection {
    /// The server answers and holds the collection.
    fn test(&self, budget: Duration) -> Result<(), Failure>;
    /// What the collection really is: its metric (when it fixes one), its
    /// dimensions and the payload keys on a sample of its points.
    fn discover(&self, budget: Duration) -> Result<Discovery, Failure>;
    /// The `n` points nearest `vector` under `metric`, within `scope`, each
    /// with its text under `text_key` and its own score, read in
    /// [`Kind::direction`]. A collection that now fixes another metric
    /// fails the query: its scores would be read the wrong way.
    fn query(
        &self,
        vector: &[f32],
        n: usize,
        scope: Option<&Scope>,
        text_key: &str,
        metric: Metric,
        budget: Duration,
    ) -> Result<Vec<Point>, Failure>;
}

/// The kinds of store a source can live in, apart from where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    Chroma,
    Pgvector,
}

impl Store {
    pub const ALL: [Store; 2] = [Store::Chroma, Store::Pgvector];

    /// Which way a score from this store reads under `metric`. Chroma
    /// answers a distance for every metric; pgvector's operators are
    /// distances too, except that Carrel reads `<#>` (the negative inner
    /// product) as the inner product itself, a similarity.
    pub fn direction(self, metric: Metric) -> Direction {
        match (self, metric) {
            (Store::Chroma, _) => CHROMA_DIRECTION,
            (Store::Pgvector, Metric::InnerProduct) => Direction::HigherIsCloser,
            (Store::Pgvector, Metric::Cosine | Metric::L2) => Direction::LowerIsCloser,
        }
    }
}

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

impl Kind {
    pub fn store(&self) -> Store {
        match self {
            Kind::Chroma { .. } => Store::Chroma,
            Kind::Pgvector { .. } => Store::Pgvector,
        }
    }

    /// Which way this source's scores read under `metric`.
    pub fn direction(&self, metric: Metric) -> Direction {
        self.store().direction(metric)
    }

    /// The adapter for the collection this names.
    pub fn collection(&self) -> Box<dyn Collection + '_> {
        match self {
            Kind::Chroma {
                url,
                tenant,
                database,
                collection,
            } => Box::new(chroma::Collection {
                url,
                tenant,
                database,
                name: collection,
            }),
            Kind::Pgvector {
                url,
                table,
                vector_column,
            } => Box::new(pgvector::Table {
                url,
                table,
                vector_column,
            }),
        }
    }

    /// Where it is, for a person (a password in a URL is never shown).
    pub fn describe(&self) -> String {
        match self {
            Kind::Chroma {
                url,
                tenant,
                database,
                collection,
            } => format!("chroma {url} {tenant}/{database}/{collection}"),
            Kind::Pgvector {
                url,
                table,
                vector_column,
            } => format!(
                "pgvector {} {table}.{vector_column}",
                pgvector::without_password(url)
            ),
        }
    }
}

/// Which points of a collection a source may return: those whose payload
/// `key` equals `value` (one client, one project).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
pub struct Scope {
    pub key: String,
    pub value: String,
}

/// What someone declared about a source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct Declared {
    pub metric: Metric,
    pub dimensions: u32,
    /// The payload key that holds each point's text (`#document` for
    /// Chroma's own documents).
    pub text_key: Option<String>,
    pub scope: Option<Scope>,
    /// Gate 5, on the collection's own scale, in its direction; none lets
    /// every point asked through to the cross-encoder.
    pub limit: Option<CollectionScore>,
    /// The model that made the collection's vectors.
    pub embedder: String,
}

/// What discovery read from the collection itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct Discovery {
    /// None when the collection fixes no metric (a pgvector column with no
    /// vector index is searched exactly, under whichever the query names).
    pub metric: Option<Metric>,
    /// None while the collection holds no vector.
    pub dimensions: Option<u32>,
    /// The payload keys found on the points sampled (`#document` when they
    /// carry Chroma documents).
    pub keys: Vec<String>,
    pub points: u32,
    pub read_at: i64,
}

impl Discovery {
    /// The metric read, or why there is none, for a person.
    pub fn metric_label(&self) -> &'static str {
        self.metric
            .map_or("none fixed (no vector index)", Metric::as_str)
    }
}

/// Who accepted that an unscoped source may return any of its points, when,
/// and the sentence they accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
pub struct Acknowledgement {
    pub by: String,
    pub at: i64,
    pub sentence: String,
}

/// The sentence accepted for an unscoped source.
pub fn unscoped_sentence(name: &str) -> String {
    format!(
        "Source {name} has no scope: any of its points may be quoted to anyone who asks this library, \
         whichever client or project it belongs to. I accept this."
    )
}

/// A source as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct Source {
    pub name: String,
    pub at: Kind,
    pub declared: Declared,
    pub enabled: bool,
    pub discovery: Option<Discovery>,
    pub acknowledgement: Option<Acknowledgement>,
    pub last_used: Option<LastUse>,
}

/// The last time retrieval came to a source, and what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
pub struct LastUse {
    pub at: i64,
    pub outcome: SourceOutcome,
}

/// What one query did with one source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SourceOutcome {
    /// Not asked, for this reason.
    Skipped { reason: SkipReason },
    /// Asked and answered: points returned, within the pre-rerank limit, and
    /// admitted past the passage floor.
    Read {
        returned: u32,
        within_limit: u32,
        admitted: u32,
        ms: f64,
    },
    /// Asked, and it did not answer in time, or failed.
    Unavailable { reason: String },
}

impl SourceOutcome {
    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            SourceOutcome::Skipped { reason } => format!("skipped: {}", reason.sentence()),
            SourceOutcome::Read {
                returned,
                within_limit,
                admitted,
                ms,
            } => format!(
                "read in {ms:.0} ms: {returned} points, {within_limit} within the limit, {admitted} admitted"
            ),
            SourceOutcome::Unavailable { reason } => format!("unavailable: {reason}"),
        }
    }
}

/// Why the declaration and the collection disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum SchemaError {
    NeverRead,
    Metric {
        declared: Metric,
        found: Metric,
    },
    Dimensions {
        declared: u32,
        found: u32,
    },
    /// The declared embedder is not one Carrel can run for the query.
    Embedder {
        declared: String,
    },
    /// The declared dimensions are not the embedder's.
    EmbedderDimensions {
        declared: u32,
        embedder: u32,
    },
}

/// Why retrieval does not read a source. Each has a sentence and a line
/// saying where to change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "gate", rename_all = "snake_case")]
pub enum SkipReason {
    /// Gate 1.
    NotEnabled,
    /// Gate 2: no cross-encoder calibrated for passages is installed.
    NoCrossEncoder { why: String },
    /// Gate 3.
    Schema { error: SchemaError },
    /// Gate 4: no text key declared.
    NoTextKey,
    /// Gate 4: the text key is on none of the points discovery read.
    TextKeyAbsent { key: String, found: Vec<String> },
    /// Gate 6: no scope, and nobody has accepted that.
    Unscoped,
}

impl SkipReason {
    /// What a person reads: why the source is not read.
    pub fn sentence(&self) -> String {
        match self {
            SkipReason::NotEnabled => "it is not enabled".into(),
            SkipReason::NoCrossEncoder { why } => format!(
                "{why}; a foreign hit is never admitted unranked, so the source is not asked"
            ),
            SkipReason::Schema { error } => match error {
                SchemaError::NeverRead => "its schema has never been read".into(),
                SchemaError::Metric { declared, found } => format!(
                    "it is declared {} but the collection measures {}",
                    declared.as_str(),
                    found.as_str()
                ),
                SchemaError::Dimensions { declared, found } => format!(
                    "it is declared {declared} dimensions but the collection's vectors have {found}"
                ),
                SchemaError::Embedder { declared } => format!(
                    "its vectors were made by {declared}, and Carrel can make a query vector only with {EMBEDDER}"
                ),
                SchemaError::EmbedderDimensions { declared, embedder } => {
                    format!("it is declared {declared} dimensions but {EMBEDDER} makes {embedder}")
                }
            },
            SkipReason::NoTextKey => {
                "it names no text key, so its points would bring no text to rank or quote".into()
            }
            SkipReason::TextKeyAbsent { key, found } => format!(
                "its text key {key} is on none of the points read (they carry: {})",
                if found.is_empty() {
                    "nothing".to_string()
                } else {
                    found.join(", ")
                }
            ),
            SkipReason::Unscoped => {
                "it has no scope key and nobody has accepted that it may return any point".into()
            }
        }
    }

    /// Where the condition is changed.
    pub fn where_to_change(&self, name: &str) -> String {
        match self {
            SkipReason::NotEnabled => format!("`carrel source enable {name}`"),
            SkipReason::NoCrossEncoder { .. } => {
                "`make models` installs carrel-ce-v2 into the models folder; `carrel doctor` says which one is found".into()
            }
            SkipReason::Schema { .. } => format!(
                "`carrel source discover {name}` reads the collection again; `carrel source adopt {name}` takes what it read"
            ),
            SkipReason::NoTextKey | SkipReason::TextKeyAbsent { .. } => format!(
                "`carrel source add {name} ... --text-key KEY` with a key from `carrel source discover {name}`"
            ),
            SkipReason::Unscoped => format!(
                "`carrel source acknowledge {name} --by NAME`, or give it a scope with `--scope KEY=VALUE`"
            ),
        }
    }
}

/// The cross-encoder as gate 2 sees it: a file check and its fingerprint,
/// never a load, so the screen does not fail because a model is slow.
/// The one case it can read as passed while nothing is read: the file is
/// there and calibrated but fails to load or run at query time. That shows
/// in the source's last use and in the log, never as green.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrossEncoder {
    Calibrated { id: String },
    Other { id: String },
    Missing { why: String },
}

impl CrossEncoder {
    /// Looks for the configured cross-encoder's file (hashing it).
    pub fn of(models: &ModelConfig) -> CrossEncoder {
        match crate::models::reranker_id(models) {
            Ok(id) => CrossEncoder::loaded(id),
            Err(e) => CrossEncoder::Missing {
                why: format!("no cross-encoder is installed ({e})"),
            },
        }
    }

    /// A cross-encoder already loaded, by its id (`name@sha12`).
    pub fn loaded(id: String) -> CrossEncoder {
        if crate::lanes::subject::floor_calibrated_for(&id) {
            CrossEncoder::Calibrated { id }
        } else {
            CrossEncoder::Other { id }
        }
    }
}

/// Gate 3: where the declaration and what discovery read disagree.
pub fn schema_error(declared: &Declared, discovery: Option<&Discovery>) -> Option<SchemaError> {
    if declared.embedder != EMBEDDER {
        return Some(SchemaError::Embedder {
            declared: declared.embedder.clone(),
        });
    }
    if declared.dimensions as usize != EMBEDDER_DIMENSIONS {
        return Some(SchemaError::EmbedderDimensions {
            declared: declared.dimensions,
            embedder: EMBEDDER_DIMENSIONS as u32,
        });
    }
    let Some(found) = discovery else {
        return Some(SchemaError::NeverRead);
    };
    if let Some(metric) = found.metric
        && metric != declared.metric
    {
        return Some(SchemaError::Metric {
            declared: declared.metric,
            found: metric,
        });
    }
    match found.dimensions {
        Some(d) if d != declared.dimensions => Some(SchemaError::Dimensions {
            declared: declared.dimensions,
            found: d,
        }),
        _ => None,
    }
}

/// Whether retrieval reads `source`, and if not, why: the one answer for
/// retrieval, the CLI, MCP and the Sources screen. Gates in order: enabled,
/// a calibrated cross-encoder, the schema, the text key, the scope. (Gate 5,
/// the pre-rerank limit, filters points, not sources: [`Direction::within`].)
pub fn skip_reason(source: &Source, cross_encoder: &CrossEncoder) -> Option<SkipReason> {
    if !source.enabled {
        return Some(SkipReason::NotEnabled);
    }
    if let Some(reason) = gate_cross_encoder(cross_encoder) {
        return Some(reason);
    }
    readiness(source)
}

/// Gates 3, 4 and 6: what the source itself lacks, whether or not it is
/// enabled.
pub fn readiness(source: &Source) -> Option<SkipReason> {
    schema_error(&source.declared, source.discovery.as_ref())
        .map(|error| SkipReason::Schema { error })
        .or_else(|| refusal(source))
}

/// Gates 4 and 6, which refuse enabling a source outright: asked, it would
/// bring nothing (no text) or anything (no scope, and nobody accepted that).
fn refusal(source: &Source) -> Option<SkipReason> {
    let Some(key) = &source.declared.text_key else {
        return Some(SkipReason::NoTextKey);
    };
    if let Some(found) = &source.discovery
        && !found.keys.contains(key)
    {
        return Some(SkipReason::TextKeyAbsent {
            key: key.clone(),
            found: found.keys.clone(),
        });
    }
    if source.declared.scope.is_none() && source.acknowledgement.is_none() {
        return Some(SkipReason::Unscoped);
    }
    None
}

fn gate_cross_encoder(cross_encoder: &CrossEncoder) -> Option<SkipReason> {
    match cross_encoder {
        CrossEncoder::Calibrated { .. } => None,
        CrossEncoder::Other { id } => Some(SkipReason::NoCrossEncoder {
            why: format!(
                "the cross-encoder in use ({id}) has no passage floor calibrated for it (only {PASSAGE_FLOOR_MODEL})"
            ),
        }),
        CrossEncoder::Missing { why } => Some(SkipReason::NoCrossEncoder { why: why.clone() }),
    }
}

/// Enables `source`, unless what it lacks would make it useless (no text)
/// or unsafe (no scope, unacknowledged): then the reason, and it stays off.
pub fn enable(source: &mut Source) -> Result<(), SkipReason> {
    if let Some(reason) = refusal(source) {
        return Err(reason);
    }
    source.enabled = true;
    Ok(())
}

/// Takes what discovery read as the declaration (metric and dimensions; the
/// text key too when none is declared and the points carry Chroma
/// documents), so the values are adopted, never retyped. False when there
/// is nothing read to adopt.
pub fn adopt(source: &mut Source) -> bool {
    let Some(found) = &source.discovery else {
        return false;
    };
    if let Some(metric) = found.metric {
        source.declared.metric = metric;
    }
    if let Some(d) = found.dimensions {
        source.declared.dimensions = d;
    }
    if source.declared.text_key.is_none() && found.keys.iter().any(|k| k == chroma::DOCUMENT_KEY) {
        source.declared.text_key = Some(chroma::DOCUMENT_KEY.into());
    }
    true
}

/// A source with the one answer to whether retrieval reads it, as the CLI
/// (`carrel source list --json`), MCP (`sources`) and the app show it:
/// every surface renders this value, never its own reading of the gates.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct SourceView {
    #[serde(flatten)]
    pub source: Source,
    /// None: read by retrieval.
    pub skip_reason: Option<SkipReason>,
    /// "read by retrieval", or "skipped: " and the reason's sentence.
    pub status: String,
    /// Where the condition is changed, when skipped.
    pub change: Option<String>,
    /// The pre-rerank field's label for this source's metric.
    pub limit_label: String,
    /// For a source with no scope: the exact sentence an acknowledgement
    /// accepts (and keeps).
    pub acknowledge_sentence: Option<String>,
}

impl SourceView {
    pub fn of(source: &Source, cross_encoder: &CrossEncoder) -> SourceView {
        let skip_reason = skip_reason(source, cross_encoder);
        let (status, change) = match &skip_reason {
            None => ("read by retrieval".into(), None),
            Some(reason) => (
                format!("skipped: {}", reason.sentence()),
                Some(reason.where_to_change(&source.name)),
            ),
        };
        SourceView {
            source: source.clone(),
            skip_reason,
            status,
            change,
            limit_label: source
                .at
                .direction(source.declared.metric)
                .limit_label()
                .into(),
            acknowledge_sentence: source
                .declared
                .scope
                .is_none()
                .then(|| unscoped_sentence(&source.name)),
        }
    }
}

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
