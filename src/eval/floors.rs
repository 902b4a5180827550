//! The floor sweeps: every floor of both lanes (and the foreign sources')
//! judged over the run's candidates, with the operating point at most 1%
//! of noise admitted.

use super::*;

/// The three floors' populations, one [`Judged`] per query each.
pub(super) struct Floors {
    pub(super) subject_cosine: Sweep,
    pub(super) subject_rerank: Sweep,
    pub(super) topic: Sweep,
    /// The foreign lane's passage floor: the best logit among the passages
    /// nearest the query, as a foreign collection of them would bring.
    pub(super) foreign: Sweep,
}

impl Default for Floors {
    fn default() -> Self {
        Floors::of(EmbedderKind::default())
    }
}

impl Floors {
    /// The sweeps of the floors in use for a library of `embedder`.
    pub(super) fn of(embedder: EmbedderKind) -> Floors {
        use crate::lanes::subject;
        let cosine = CosineFloors::of(embedder);
        Floors {
            subject_cosine: Sweep::new(
                "subject cosine eligibility (card cosine)",
                cosine.subject.value().get(),
            ),
            subject_rerank: Sweep::new(
                "subject rerank floor (cross-encoder logit)",
                subject::RERANK_FLOOR.value().get(),
            ),
            topic: Sweep::new("topic floor (passage cosine)", cosine.topic.value().get()),
            foreign: Sweep::new(
                "foreign passage floor (cross-encoder logit)",
                crate::foreign::PASSAGE_FLOOR.value().get(),
            ),
        }
    }
}

impl Floors {
    /// Adds one query as each floor would judge it: the cosine of its
    /// relevant card (of any card, for noise); the logit of the card the
    /// subject lane would fire on ([`crate::lanes::subject::first_card`]);
    /// the best passage the veto let through.
    pub(super) fn judge(
        &mut self,
        noise: bool,
        relevant: &HashMap<String, f64>,
        subject: &[CardScores],
        topic: &[PassageScores],
        foreign: &[(String, f32)],
    ) {
        let is_relevant = |d: &String| relevant.get(d).is_some_and(|g| *g > 0.0);
        let best =
            |it: &mut dyn Iterator<Item = (f32, bool)>| it.max_by(|a, b| a.0.total_cmp(&b.0));
        let card = best(
            &mut subject
                .iter()
                .filter(|c| noise || is_relevant(&c.doc))
                .map(|c| (c.cosine.get(), is_relevant(&c.doc))),
        );
        // The logit the lane would fire on: its first card's, when the
        // lane takes that card (`first_card`); none when it does not.
        let scored = CardScores::scored(subject);
        let pairs: Vec<(Cosine, RerankLogit)> = scored.iter().map(|(_, c, l)| (*c, *l)).collect();
        let logit = crate::lanes::subject::first_card(&pairs)
            .map(|i| (scored[i].2.get(), is_relevant(scored[i].0)));
        let passage = best(
            &mut topic
                .iter()
                .filter(|p| p.decision != crate::lanes::Decision::Vetoed)
                .map(|p| (p.cosine.get(), is_relevant(&p.doc))),
        );
        // A foreign passage is admitted on its logit alone: the best one.
        let foreign = best(&mut foreign.iter().map(|(d, l)| (*l, is_relevant(d))));
        for (sweep, judged) in [
            (&mut self.subject_cosine, card),
            (&mut self.subject_rerank, logit),
            (&mut self.topic, passage),
            (&mut self.foreign, foreign),
        ] {
            sweep.points.push(Judged {
                score: judged.map(|j| j.0),
                noise,
                right: judged.is_some_and(|j| j.1),
            });
        }
    }
}
