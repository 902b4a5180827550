//! A source as declared, as its server showed it (discovery), and as it
//! was last used: where the collection is, what the user says of it, and
//! the one view every surface shows.

use super::*;

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
