//! The subject lane: "is this document what the query is ABOUT?"
//!
//! 1. Cosine between the query and each card decides eligibility, and is the
//!    number shown. Below its embedder's gate ([`SUBJECT_GATE`] for
//!    all-MiniLM-L6-v2, [`CosineFloors`] for each) a card is not even a
//!    candidate; if no card reaches its floor ([`SUBJECT_FLOOR`]), the
//!    cross-encoder is not run at all.
//! 2. The cross-encoder orders the eligible cards and admits those at or over
//!    [`RERANK_FLOOR`], a floor on its own scale, but only when it and
//!    cosine put the same card first ([`first_agreed`]), or when the
//!    cross-encoder is sure of its first card alone ([`RERANK_SURE`]):
//!    [`first_card`]. Otherwise, when the two scorers disagree on which
//!    document the query is about, the lane stays silent: its cards are
//!    `disputed`, shown below the floor, never hits.
//! 3. If the cross-encoder cannot run (missing, failed to load, failed at run
//!    time, over its time budget), eligible cards are suppressed and the lane
//!    is unavailable with the reason. It never falls back to raw cosine.

use std::collections::HashMap;
use std::time::Instant;

use super::{
    Candidate, CosineFloors, Decision, LaneQuery, LaneRun, SUBJECT_CANDIDATES, SubjectHit, Unready,
};
use crate::error::Result;
use crate::language::Language;
use crate::models::Reranker;
use crate::score::{Cosine, Floor, RerankLogit, Scale, ScorerId, ScorerKind};
use crate::store::Store;

/// Cards under this cosine (all-MiniLM-L6-v2) are not candidates at all,
/// not even weak ones.
/// Below every floor, so ordinary browsing never pays for the reranker.
pub const SUBJECT_GATE: Cosine = Cosine::new(0.15);

/// Cosine eligibility floor, query vs card (all-MiniLM-L6-v2). On
/// fixtures/labelled the relevant card scored 0.260–0.710 (n=26) and the best
/// card for a noise query 0.096–0.387 (n=13): the populations overlap, as in
/// the background measurements (0.553–0.845 against 0.455–0.686), so this
/// floor only keeps every relevant card eligible (26 of 26 at 0.25) and bounds
/// the cross-encoder's work; its own floor keeps noise out. On the
/// calibration set (tools/calibration: 404 index-term queries, 173 noise)
/// 0.25 keeps 95% of relevant cards eligible and lets 51% of noise queries
/// reach the cross-encoder; at 1% noise (0.443) it would cut eligibility to
/// 85%, so it is not an admission floor and stays where it is.
pub const SUBJECT_FLOOR: Floor<Cosine> = Floor::new(
    Cosine::new(0.25),
    "fixtures/labelled: relevant card 0.260–0.710 (n=26), noise best 0.096–0.387 (n=13); \
     calibration set (404 relevant, 173 noise): 95% of relevant cards eligible, 51% of noise reaches the cross-encoder",
);

/// Cross-encoder admission floor, on the logit scale of carrel-ce-v2
/// (binary cross-entropy, so 0 means "as likely about it as not"), for the
/// card both scorers put first ([`first_agreed`]). Set at the zero-noise
/// point of 186 noise queries: on the calibration set (tools/calibration:
/// 404 index-term queries, 536 qrels, 173 lexical-collision noise queries;
/// none of its 13 manuals is in v2's training data) and fixtures/labelled
/// (26 + 13 noise) the highest agreed logit of a noise query is −0.325
/// ("why does my dog keep chasing its tail" on coreutils' `tail`), the next
/// −1.29 ("Pond's face cream ingredients" on the pond-ecology card). At −0.3
/// the lane fires on 205 of 404 calibration queries (51%), its first hit
/// right on 92.7% of them (89.3% by the index's own targets alone), 0 of
/// 173 noise; on labelled on 16 of 26, right on all 16, 0 of 13 noise. Just
/// over −1.29 it would fire on 53% of calibration queries with 1 noise
/// query admitted (its 1%-noise point), and on 73% of labelled ones.
/// carrel-ce-v1's scale is another: under its floor (1.9) with the same
/// rule it fired on 51%, right on 87%; no v1 floor reaches 90%.
///
/// The model file stores its weights as uint8 (`tools/reranker/u8.py`), so
/// these logits are the same on every CPU. With the int8 weights it was
/// first committed with (136a06028a75), an AVX2 CPU without VNNI computed
/// other logits (2,619 calibration pairs: mean |Δ| 0.138, max 1.909): the
/// `tail` noise query scored −0.106 and passed this floor. The uint8 file
/// gives −0.325 there, and every figure above, on that CPU.
pub const RERANK_FLOOR: Floor<RerankLogit> = Floor::new(
    RerankLogit::new(-0.3),
    "carrel-ce-v2 (5a2511219333, uint8 weights), first card agreed by cosine: zero-noise point of the calibration set \
     (404 relevant, 173 noise: 51% fire, 92.7% right, 0 noise) and fixtures/labelled (26, 13 noise: 62% fire, 100% right, 0 noise)",
);

/// The logit at which the cross-encoder's first card is taken though
/// cosine put another card first ([`first_card`]): most often a page asked
/// for by its title, which cosine ranks under a card of more words like it.
/// On the calibration set's title queries (`tools/calibration`: 374 nodes
/// of its 13 manuals asked by their own names), carrel-ce-v2 put a relevant
/// card first on 359 of the 364 with one scored, cosine on 326, so
/// agreement alone fired on 75% of them. Swept with carrel-ce-v2
/// (2026-12-03; index terms and titles, fired / right when fired):
/// agreement alone 51% / 92.7% and 75% / 99.3%; with the cross-encoder
/// alone at 2.5, 61% / 90.7% and 89% / 98.5%; at 2.75, 58% / 91.5% and
/// 87% / 98.5%; at 3.0, 52% / 92.5% and 79% / 98.7%. 2.75 keeps room under
/// both bars the lane is held to (fires on ≥ 80% of title queries, right on
/// ≥ 90% of every kind). It was first chosen on all 1,155 node names (85%
/// fired, 99.2% right), which include these 374, so these are not held-out
/// figures. No noise query of the calibration set (173) or
/// fixtures/labelled (13) reaches even [`RERANK_FLOOR`] on its first card.
pub const RERANK_SURE: Floor<RerankLogit> = Floor::new(
    RerankLogit::new(2.75),
    "carrel-ce-v2 (5a2511219333), its first card alone: calibration set (404 index terms, 374 titles, 173 noise): \
     with agreement at -0.3, fires on 58% / 87%, right on 91.5% / 98.5%, 0 noise; 2.5 gives 61% / 89% at 90.7% / 98.5%, \
     3.0 gives 52% / 79% at 92.5% / 98.7%",
);

/// The cross-encoder [`RERANK_FLOOR`] was calibrated on: carrel-ce-v2, by the
/// first 12 hex digits of its model file's sha256.
pub const RERANK_FLOOR_MODEL: &str = "5a2511219333";

/// True when `model_id` (`name@sha12`) is the model [`RERANK_FLOOR`] was
/// calibrated on. Any other cross-encoder is still ordered and floored, but
/// its scores are shown as uncalibrated.
pub fn floor_calibrated_for(model_id: &str) -> bool {
    model_id
        .rsplit_once('@')
        .is_some_and(|(_, sha)| sha == RERANK_FLOOR_MODEL)
}

/// The card the lane may fire on, of cards scored on both scales: the
/// cross-encoder's first, provided cosine puts the same card first; `None`
/// when the two disagree (or nothing was scored). Each scale orders only its
/// own numbers; what they must agree on is a card, not a score.
///
/// Why: on the calibration set (tools/calibration: 404 index-term queries,
/// 536 qrels, 173 noise; the two scorers' first cards were compared on every
/// query) a first hit the scorers agree on is right far more often than one
/// the cross-encoder picks alone: carrel-ce-v2 at logit 0 fired on 287
/// queries, right on 84%, and on the 201 of them the scorers agree on,
/// right on 93% (0 noise either way). A higher floor alone buys less: at
/// 2.5 it fires on 180, right on 91%. carrel-ce-v1 at 1.9: 319 fired, 73%
/// right, 1 noise, against 207 agreed, 87% right, 0 noise.
pub fn first_agreed(scored: &[(Cosine, RerankLogit)]) -> Option<usize> {
    let cross_encoder = first_by(scored, |a, b| a.1.rank(b.1))?;
    let cosine = first_by(scored, |a, b| a.0.rank(b.0))?;
    (cross_encoder == cosine).then_some(cross_encoder)
}

/// The card the lane fires on, if any: the cross-encoder's first, when
/// cosine agrees ([`first_agreed`]) or when its logit reaches
/// [`RERANK_SURE`] alone.
pub fn first_card(scored: &[(Cosine, RerankLogit)]) -> Option<usize> {
    let cross_encoder = first_by(scored, |a, b| a.1.rank(b.1))?;
    (first_agreed(scored).is_some() || RERANK_SURE.admits(scored[cross_encoder].1))
        .then_some(cross_encoder)
}

/// The first card by one scale's order, ties to the earlier card.
fn first_by(
    scored: &[(Cosine, RerankLogit)],
    rank: impl Fn(&(Cosine, RerankLogit), &(Cosine, RerankLogit)) -> std::cmp::Ordering,
) -> Option<usize> {
    (0..scored.len()).min_by(|&a, &b| rank(&scored[a], &scored[b]).then(a.cmp(&b)))
}

/// An eligible card: its hit, (card text, content hash), and its index in
/// the candidate list.
type Eligible = (SubjectHit, (String, String), usize);

/// Where the lane gets its cross-encoder: a loaded one, or why there is none.
pub type RerankerAccess<'a> = std::result::Result<&'a mut dyn Reranker, String>;

/// Runs the lane. Returns the run and whether the gate skipped the
/// cross-encoder (no card reached the cosine floor).
pub fn run<'a>(
    store: &Store,
    q: &LaneQuery<'_>,
    fingerprint: &str,
    model: &str,
    reranker: impl FnOnce() -> RerankerAccess<'a>,
    budget: std::time::Duration,
    cache: &mut HashMap<(String, String, String), RerankLogit>,
) -> Result<(LaneRun<SubjectHit>, bool)> {
    let (query, query_vec, top_k) = (q.text, q.vector, q.top_k);
    let Scan {
        mut candidates,
        eligible,
        unread,
        weak,
    } = scan(store, query_vec, q.floors, top_k, fingerprint, model)?;
    if eligible.is_empty() && unread.is_empty() {
        // The gate: nothing could be admitted, so the cross-encoder is not run.
        return Ok((
            LaneRun {
                admitted: Ok(Vec::new()),
                weak,
                candidates,
            },
            true,
        ));
    }
    let reranker = match reranker() {
        Ok(r) => r,
        Err(reason) => return Ok((suppress(&mut candidates, &eligible, reason), false)),
    };
    let model_id = reranker.model_id().to_string();
    // A card or a query the cross-encoder cannot read is never ranked by
    // cosine instead: the card is unavailable, with why; and a query it
    // cannot read, or one whose every eligible card it cannot, leaves the
    // lane unavailable.
    let name = model_id.split('@').next().unwrap_or(&model_id).to_string();
    for &(i, language) in &unread {
        candidates[i].decision = Decision::RerankerUnavailable;
        candidates[i].unjudged = Some(format!(
            "{name} reads English; this card is {} ({language})",
            language.name()
        ));
    }
    if let Some(language) = q.language.filter(|l| !cross_encoder_reads(*l)) {
        let reason = format!(
            "{name} reads English; this query is {} ({language}), so no card is ranked by what it is about",
            language.name()
        );
        return Ok((suppress(&mut candidates, &eligible, reason), false));
    }
    if eligible.is_empty() {
        let languages: Vec<String> = unread.iter().map(|(_, l)| l.name().to_string()).collect();
        let reason = format!(
            "{name} reads English; every card this query reaches is in another language ({})",
            languages.join(", ")
        );
        return Ok((suppress(&mut candidates, &eligible, reason), false));
    }
    if let Err(reason) = rerank_missing(reranker, query, &model_id, &eligible, budget, cache) {
        return Ok((suppress(&mut candidates, &eligible, reason), false));
    }
    let run = admit(query, model_id, eligible, candidates, weak, cache, top_k);
    Ok((run, false))
}

/// The cards nearest the query, each decided by cosine alone.
struct Scan {
    candidates: Vec<Candidate>,
    /// Over the cosine floor: for the cross-encoder to decide.
    eligible: Vec<Eligible>,
    /// Over the cosine floor, in a language the cross-encoder does not
    /// read: each candidate's index and its card's language.
    unread: Vec<(usize, Language)>,
    /// Under the cosine floor (at most `top_k`), in cosine order.
    weak: Vec<SubjectHit>,
}

/// Finds the cards nearest the query by cosine and sorts them by the gate
/// and the cosine floor.
fn scan(
    store: &Store,
    query_vec: &[f32],
    floors: &CosineFloors,
    top_k: usize,
    fingerprint: &str,
    model: &str,
) -> Result<Scan> {
    let cosine_scorer = ScorerId {
        kind: ScorerKind::Cosine,
        model: model.to_string(),
    };
    let mut scan = Scan {
        candidates: Vec::new(),
        eligible: Vec::new(),
        unread: Vec::new(),
        weak: Vec::new(),
    };
    let cards = store.nearest_cards(query_vec, SUBJECT_CANDIDATES, fingerprint)?;
    let held: Vec<i64> = cards.iter().map(|c| c.content).collect();
    let mut locations = store.locations_of(&held)?;
    for card in cards {
        let locs = locations.remove(&card.content).unwrap_or_default();
        let Some(first) = locs.first().cloned() else {
            continue;
        };
        let decision = by_cosine(floors, card.cosine);
        scan.candidates.push(Candidate {
            doc: first.doc,
            title: first.title.clone(),
            cosine: card.cosine,
            rerank: None,
            heading_path: None,
            keyword_rank: None,
            decision,
            unjudged: None,
        });
        let at = scan.candidates.len() - 1;
        let hit = SubjectHit {
            doc: first.doc,
            title: first.title,
            locations: locs,
            cosine: card.cosine,
            rerank: None,
            scorer: cosine_scorer.clone(),
            calibrated: false,
            why: card.what,
        };
        match decision {
            Decision::Admitted => match card.language.filter(|l| !cross_encoder_reads(*l)) {
                Some(l) => scan.unread.push((at, l)),
                None => scan.eligible.push((hit, (card.text, card.hash), at)),
            },
            Decision::BelowCosineFloor if scan.weak.len() < top_k => scan.weak.push(hit),
            _ => {}
        }
    }
    Ok(scan)
}

/// Whether the cross-encoders Carrel has (carrel-ce-v1, carrel-ce-v2,
/// trained on English pairs) read text in `language`; a model given with
/// `--reranker` is taken to read what they read.
pub fn cross_encoder_reads(language: Language) -> bool {
    language == Language::ENGLISH
}

/// A card's decision by its cosine, on its embedder's floors: under the
/// gate, under the floor, or provisionally admitted (the cross-encoder
/// decides).
fn by_cosine(floors: &CosineFloors, cosine: Cosine) -> Decision {
    if cosine < floors.subject_gate {
        Decision::BelowGate
    } else if floors.subject.admits(cosine) {
        Decision::Admitted // provisional: the cross-encoder decides below
    } else {
        Decision::BelowCosineFloor
    }
}

/// The lane when the cross-encoder cannot decide: the eligible cards are
/// suppressed, and the lane is unavailable for `reason`.
fn suppress(
    candidates: &mut Vec<Candidate>,
    eligible: &[Eligible],
    reason: String,
) -> LaneRun<SubjectHit> {
    for (_, _, i) in eligible {
        candidates[*i].decision = Decision::RerankerUnavailable;
    }
    LaneRun {
        admitted: Err(Unready::Unavailable(reason)),
        weak: Vec::new(),
        candidates: std::mem::take(candidates),
    }
}

/// Scores with the cross-encoder the eligible cards it has not scored for
/// this query yet, into `cache`, within `budget`; else why the lane must be
/// suppressed.
fn rerank_missing(
    reranker: &mut dyn Reranker,
    query: &str,
    model_id: &str,
    eligible: &[Eligible],
    budget: std::time::Duration,
    cache: &mut HashMap<(String, String, String), RerankLogit>,
) -> std::result::Result<(), String> {
    // Only cards this (query, content, reranker) has not scored yet go to the
    // model; the budget and the checks apply to that call.
    let key = |hash: &str| (query.to_string(), hash.to_string(), model_id.to_string());
    let missing: Vec<usize> = (0..eligible.len())
        .filter(|&i| !cache.contains_key(&key(&eligible[i].1.1)))
        .collect();
    if !missing.is_empty() {
        let texts: Vec<&str> = missing.iter().map(|&i| eligible[i].1.0.as_str()).collect();
        let started = Instant::now();
        let fresh = match reranker.rerank(query, &texts) {
            Ok(s) => s,
            Err(e) => {
                let reason = format!("the cross-encoder failed at run time: {e}");
                return Err(reason);
            }
        };
        let elapsed = started.elapsed();
        if elapsed > budget {
            let reason = format!(
                "the cross-encoder took {} ms, over its {} ms budget; results suppressed rather than shown uncalibrated",
                elapsed.as_millis(),
                budget.as_millis()
            );
            return Err(reason);
        }
        if fresh.len() != texts.len() || fresh.iter().any(|s| !s.is_finite()) {
            let reason = "the cross-encoder returned no usable score for some cards".to_string();
            return Err(reason);
        }
        for (&i, score) in missing.iter().zip(fresh) {
            cache.insert(key(&eligible[i].1.1), RerankLogit::new(score));
        }
    }
    Ok(())
}

/// The cross-encoder's decision on the eligible cards, by their cached
/// scores: those at or over [`RERANK_FLOOR`] admitted in its order when the
/// lane fires on its first card ([`first_card`]), the rest weak, each list
/// cut to `top_k`.
fn admit(
    query: &str,
    model_id: String,
    eligible: Vec<Eligible>,
    mut candidates: Vec<Candidate>,
    mut weak: Vec<SubjectHit>,
    cache: &HashMap<(String, String, String), RerankLogit>,
    top_k: usize,
) -> LaneRun<SubjectHit> {
    let key = |hash: &str| (query.to_string(), hash.to_string(), model_id.clone());
    let scores: Vec<RerankLogit> = eligible
        .iter()
        .map(|(_, (_, hash), _)| cache[&key(hash)])
        .collect();
    let calibrated = floor_calibrated_for(&model_id);
    let ce_scorer = ScorerId {
        kind: ScorerKind::CrossEncoder,
        model: model_id,
    };
    let pairs: Vec<(Cosine, RerankLogit)> = eligible
        .iter()
        .zip(&scores)
        .map(|((hit, _, _), logit)| (hit.cosine, *logit))
        .collect();
    let fires = first_card(&pairs).is_some();
    let mut admitted = Vec::new();
    for ((mut hit, _, i), logit) in eligible.into_iter().zip(scores) {
        hit.rerank = Some(logit);
        candidates[i].rerank = Some(logit);
        if !RERANK_FLOOR.admits(logit) {
            candidates[i].decision = Decision::BelowRerankFloor;
            weak.push(hit);
        } else if !fires {
            candidates[i].decision = Decision::Disputed;
            weak.push(hit);
        } else {
            hit.scorer = ce_scorer.clone();
            hit.calibrated = calibrated;
            admitted.push(hit);
        }
    }
    admitted.sort_by(|a, b| {
        b.rerank
            .partial_cmp(&a.rerank)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    admitted.truncate(top_k);
    // Weak hits are shown by the number they fell short on, the cosine; those
    // below the rerank floor came after the cosine-ordered scan, so re-sort.
    weak.sort_by(|a, b| a.cosine.rank(b.cosine));
    weak.truncate(top_k);
    LaneRun {
        admitted: Ok(admitted),
        weak,
        candidates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cards(scores: &[(f32, f32)]) -> Vec<(Cosine, RerankLogit)> {
        scores
            .iter()
            .map(|&(c, l)| (Cosine::new(c), RerankLogit::new(l)))
            .collect()
    }

    #[test]
    fn the_lane_fires_on_a_card_only_when_both_scorers_put_it_first() {
        assert_eq!(first_agreed(&cards(&[(0.6, 2.0), (0.5, 1.0)])), Some(0));
        assert_eq!(first_agreed(&cards(&[(0.5, 1.0), (0.6, 2.0)])), Some(1));
        assert_eq!(first_agreed(&cards(&[(0.6, 1.0), (0.5, 2.0)])), None);
        assert_eq!(first_agreed(&cards(&[(0.4, -3.0)])), Some(0));
        assert_eq!(first_agreed(&[]), None);
        // Ties go to the earlier card on both scales, the same one.
        assert_eq!(first_agreed(&cards(&[(0.5, 1.0), (0.5, 1.0)])), Some(0));
    }

    #[test]
    fn the_cross_encoder_alone_fires_only_when_sure() {
        let sure = RERANK_SURE.value().get();
        // Agreement needs no more than the floor.
        assert_eq!(first_card(&cards(&[(0.6, 0.0), (0.5, -1.0)])), Some(0));
        // Disagreement: the cross-encoder's first, at the sure logit only.
        assert_eq!(first_card(&cards(&[(0.6, 1.0), (0.5, sure)])), Some(1));
        assert_eq!(first_card(&cards(&[(0.6, 1.0), (0.5, sure - 0.01)])), None);
        assert_eq!(first_card(&[]), None);
    }
}
