//! The gates: whether retrieval reads a source, and why not ([`skip_reason`],
//! the one function every surface calls), and what enabling or adopting a
//! source may do.

use super::*;

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
pub(super) fn refusal(source: &Source) -> Option<SkipReason> {
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

pub(super) fn gate_cross_encoder(cross_encoder: &CrossEncoder) -> Option<SkipReason> {
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
