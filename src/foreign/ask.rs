//! Asking the foreign sources for one query: each source that
//! [`skip_reason`] lets through is asked at once, each within its time
//! budget; the points within the pre-rerank limit (gate 5, in the metric's
//! direction) are scored by the cross-encoder against the query, and only
//! those at or above [`PASSAGE_FLOOR`] are admitted, as their own list
//! ("Elsewhere"), never sorted with the library's lanes.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{
    CollectionScore, CrossEncoder, Direction, Metric, PASSAGE_FLOOR, POINTS_ASKED, Scope, Source,
    SourceOutcome, skip_reason,
};
use crate::models::Reranker;
use crate::score::{RerankLogit, ScorerId, ScorerKind};

/// One admitted foreign point.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ElsewhereHit {
    pub source: String,
    pub scope: Option<Scope>,
    pub point: String,
    pub text: String,
    /// The collection's own score, on its own scale, read in `direction`.
    pub own_score: CollectionScore,
    pub metric: Metric,
    pub direction: Direction,
    /// The cross-encoder's logit for (query, text): the scale it was
    /// admitted on.
    pub rerank: RerankLogit,
    #[specta(type = String)]
    pub scorer: ScorerId,
}

/// What each source did for this query.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct SourceReport {
    pub source: String,
    pub scope: Option<Scope>,
    pub outcome: SourceOutcome,
    /// The outcome in a sentence ([`SourceOutcome::describe`]), as every
    /// surface shows it.
    pub status: String,
}

/// The foreign sources' answer to one query: the admitted hits, best
/// logit first, and every source's outcome.
#[derive(Debug, Clone, Default, Serialize, specta::Type)]
pub struct Elsewhere {
    pub hits: Vec<ElsewhereHit>,
    pub sources: Vec<SourceReport>,
    /// The floor the hits cleared; none when there is no source.
    pub floor: Option<RerankLogit>,
    /// Wall time of asking every source and ranking their points (ms).
    pub ms: f64,
}

/// A source's points before the cross-encoder: asked, then filtered by gate 5.
struct Asked {
    source: usize,
    returned: u32,
    points: Vec<(String, String, CollectionScore)>,
    ms: f64,
}

/// Asks `sources` for `query`. The cross-encoder is loaded only when some
/// source answers with a point to score; a failure to load or run it makes
/// every source that answered `unavailable`, with the reason.
pub fn ask<'r>(
    sources: &[Source],
    cross_encoder: &CrossEncoder,
    query: &str,
    vector: &[f32],
    budget: Duration,
    reranker: impl FnOnce() -> Result<&'r mut dyn Reranker, String>,
) -> Elsewhere {
    let started = Instant::now();
    let mut outcomes: Vec<Option<SourceOutcome>> = sources
        .iter()
        .map(|s| skip_reason(s, cross_encoder).map(|reason| SourceOutcome::Skipped { reason }))
        .collect();
    let read = ask_open(sources, &mut outcomes, vector, budget);
    let mut hits = Vec::new();
    match score_points(query, &read, reranker) {
        Ok((logits, model)) => {
            let mut logits = logits.into_iter();
            for a in read {
                let source = a.source;
                outcomes[source] = Some(admit(&sources[source], a, &mut logits, &model, &mut hits));
            }
        }
        Err(reason) => {
            tracing::warn!(%reason, "foreign sources answered, but nothing could be ranked");
            for a in read {
                outcomes[a.source] = Some(SourceOutcome::Unavailable {
                    reason: reason.clone(),
                });
            }
        }
    }
    hits.sort_by(|a, b| b.rerank.get().total_cmp(&a.rerank.get()));
    Elsewhere {
        hits,
        sources: reports(sources, outcomes),
        floor: (!sources.is_empty()).then(|| PASSAGE_FLOOR.value()),
        ms: started.elapsed().as_secs_f64() * 1000.0,
    }
}

/// Asks, side by side, every source no gate skipped (`outcomes` none);
/// one that fails is `unavailable` with why.
fn ask_open(
    sources: &[Source],
    outcomes: &mut [Option<SourceOutcome>],
    vector: &[f32],
    budget: Duration,
) -> Vec<Asked> {
    let asked: Vec<(usize, Result<Asked, String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .iter()
            .enumerate()
            .filter(|(i, _)| outcomes[*i].is_none())
            .map(|(i, source)| (i, scope.spawn(move || ask_one(i, source, vector, budget))))
            .collect();
        handles
            .into_iter()
            .map(|(i, h)| {
                let asked = h
                    .join()
                    .unwrap_or_else(|_| Err("asking the source panicked".into()));
                (i, asked)
            })
            .collect()
    });
    let mut read = Vec::new();
    for (i, a) in asked {
        match a {
            Ok(a) => read.push(a),
            Err(reason) => {
                tracing::warn!(source = %sources[i].name, %reason, "a foreign source is unavailable");
                outcomes[i] = Some(SourceOutcome::Unavailable { reason })
            }
        }
    }
    read
}

/// The cross-encoder's logit for every point read, in order, and its id;
/// nothing is loaded when no source read a point.
fn score_points<'r>(
    query: &str,
    read: &[Asked],
    reranker: impl FnOnce() -> Result<&'r mut dyn Reranker, String>,
) -> Result<(Vec<f32>, String), String> {
    let texts: Vec<&str> = read
        .iter()
        .flat_map(|a| a.points.iter().map(|(_, t, _)| t.as_str()))
        .collect();
    if texts.is_empty() {
        return Ok((Vec::new(), String::new()));
    }
    let r = reranker()?;
    let id = r.model_id().to_string();
    r.rerank(query, &texts)
        .map(|s| (s, id))
        .map_err(|e| format!("the cross-encoder failed: {e}"))
}

/// Admits a source's points whose logit passes [`PASSAGE_FLOOR`] into
/// `hits`, taking their logits from `logits` in order; returns how the
/// source was read.
fn admit(
    source: &Source,
    asked: Asked,
    logits: &mut impl Iterator<Item = f32>,
    model: &str,
    hits: &mut Vec<ElsewhereHit>,
) -> SourceOutcome {
    let direction = source.at.direction(source.declared.metric);
    let within_limit = asked.points.len() as u32;
    let mut admitted = 0;
    for (point, text, own) in asked.points {
        let logit = RerankLogit::new(logits.next().unwrap_or(f32::NAN));
        if !PASSAGE_FLOOR.admits(logit) {
            continue;
        }
        admitted += 1;
        hits.push(ElsewhereHit {
            source: source.name.clone(),
            scope: source.declared.scope.clone(),
            point,
            text,
            own_score: own,
            metric: source.declared.metric,
            direction,
            rerank: logit,
            scorer: ScorerId {
                kind: ScorerKind::CrossEncoder,
                model: model.to_string(),
            },
        });
    }
    SourceOutcome::Read {
        returned: asked.returned,
        within_limit,
        admitted,
        ms: asked.ms,
    }
}

/// Each source with what became of it, in the order declared.
fn reports(sources: &[Source], outcomes: Vec<Option<SourceOutcome>>) -> Vec<SourceReport> {
    sources
        .iter()
        .zip(outcomes)
        .map(|(s, o)| {
            let outcome = o.unwrap_or(SourceOutcome::Unavailable {
                reason: "not asked".into(),
            });
            SourceReport {
                source: s.name.clone(),
                scope: s.declared.scope.clone(),
                status: outcome.describe(),
                outcome,
            }
        })
        .collect()
}

/// Asks one source within `budget`; keeps the points within its limit that
/// carry text.
fn ask_one(i: usize, source: &Source, vector: &[f32], budget: Duration) -> Result<Asked, String> {
    let started = Instant::now();
    // Gate 4 let only a source with a text key through.
    let Some(text_key) = source.declared.text_key.as_deref() else {
        return Err("it names no text key".into());
    };
    let points = source.at.collection().query(
        vector,
        POINTS_ASKED,
        source.declared.scope.as_ref(),
        text_key,
        source.declared.metric,
        budget,
    )?;
    let direction = source.at.direction(source.declared.metric);
    let returned = points.len() as u32;
    let points = points
        .into_iter()
        .filter(|p| {
            source
                .declared
                .limit
                .is_none_or(|limit| direction.within(p.own, limit))
        })
        .filter_map(|p| Some((p.id, p.text?, p.own)))
        .collect();
    Ok(Asked {
        source: i,
        returned,
        points,
        ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}
