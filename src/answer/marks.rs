//! What a written sentence rests on, decided by Carrel and not by the
//! model: the one rule that attributes a sentence to the passage of the
//! context that supports it, or to none. A model's own `[n]` is a hint
//! kept beside the computed citation, never the citation (DESIGN.md: the
//! 1.5B model's facts were right 5/5 and its `[n]` 0/5).
//!
//! The marks are exact: `verified` when the sentence occurs verbatim in the
//! passage, `supported` when enough of its content words occur there,
//! `unsupported` (shown as "not found in your documents", with no citation)
//! otherwise.

use std::collections::HashSet;

use super::{Passage, cite};

/// Share of a written sentence's content words (Snowball stems, function
/// words and numbers-only tokens left out) that must occur in one passage
/// of the context for that passage to support it, in percent.
///
/// Not yet calibrated on a population of real output: it is the line set on
/// 7 replayed statements (`fixtures/llm/`: sentences that say what their
/// passage says share 60–100% of their words with it, those citing the
/// wrong passage 0–20%). `carrel eval --answers` (README, "Answers")
/// writes the population it is to be chosen on.
pub const SUPPORT_MIN_PCT: u32 = 50;

/// What a sentence rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// It occurs verbatim (whitespace and case aside) in passage `n`.
    Verbatim { n: usize },
    /// Passage `n` holds `pct`% of its content words, at least
    /// [`SUPPORT_MIN_PCT`].
    Supported { n: usize, pct: u32 },
    /// No passage holds [`SUPPORT_MIN_PCT`] of its content words; `best`
    /// is the closest, with its share.
    NotFound { best: Option<(usize, u32)> },
    /// It has no content words to look for ("So it is.").
    NoClaim,
}

impl Attribution {
    /// The passage it cites: none unless supported.
    pub fn cited(self) -> Option<usize> {
        match self {
            Attribution::Verbatim { n } | Attribution::Supported { n, .. } => Some(n),
            Attribution::NotFound { .. } | Attribution::NoClaim => None,
        }
    }
}

/// The rule: verbatim first; else the passage holding the largest share of
/// the sentence's content words (the earliest on a tie), if that share
/// reaches [`SUPPORT_MIN_PCT`].
pub fn attribute(sentence: &str, context: &[Passage]) -> Attribution {
    if let Some(p) = context.iter().find(|p| cite::occurs(sentence, &p.text)) {
        return Attribution::Verbatim { n: p.n };
    }
    let words = content_words(sentence);
    if words.is_empty() {
        return Attribution::NoClaim;
    }
    let best = context
        .iter()
        .map(|p| (p.n, share_pct(&words, &p.text)))
        .max_by_key(|&(n, pct)| (pct, std::cmp::Reverse(n)));
    match best {
        Some((n, pct)) if pct >= SUPPORT_MIN_PCT => Attribution::Supported { n, pct },
        best => Attribution::NotFound { best },
    }
}

/// A sentence's content words: stems, numbers-only tokens left out (a
/// citation number is no claim).
fn content_words(sentence: &str) -> HashSet<String> {
    crate::lanes::terms::stems(sentence)
        .into_iter()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

fn share_pct(words: &HashSet<String>, passage: &str) -> u32 {
    let there = crate::lanes::terms::stems(passage);
    let found = words.iter().filter(|w| there.contains(*w)).count();
    (found * 100 / words.len()) as u32
}

/// The share of `statement`'s content words that occur in `passage`, in
/// percent; `None` when the statement has no content words.
pub fn word_overlap_pct(statement: &str, passage: &str) -> Option<u32> {
    let words = content_words(statement);
    (!words.is_empty()).then(|| share_pct(&words, passage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::Found;
    use crate::score::{ScorerId, ScorerKind};

    fn passage(n: usize, text: &str) -> Passage {
        Passage {
            n,
            doc: n as i64,
            title: format!("doc {n}"),
            source: String::new(),
            chunk: n as i64,
            heading_path: vec![],
            page: None,
            text: text.into(),
            found: Found::TopicLane,
            cosine: None,
            scorer: ScorerId {
                kind: ScorerKind::Cosine,
                model: "m".into(),
            },
            whole_document: false,
            kb: None,
            owner: None,
        }
    }

    #[test]
    fn a_sentence_is_cited_to_the_passage_that_holds_its_words_not_the_first() {
        let context = [
            passage(1, "A mortgage starter home needs a deposit."),
            passage(2, "Feed the sourdough starter flour and water every day."),
        ];
        assert_eq!(
            attribute("You feed a starter flour and water daily.", &context),
            Attribution::Supported { n: 2, pct: 80 }
        );
        assert_eq!(
            attribute("feed the SOURDOUGH starter flour", &context),
            Attribution::Verbatim { n: 2 }
        );
        assert_eq!(
            attribute("Starters prefer jazz.", &context),
            Attribution::NotFound {
                best: Some((1, 33))
            }
        );
        assert_eq!(attribute("So it is.", &context), Attribution::NoClaim);
        assert_eq!(
            attribute("Starters prefer jazz.", &[]),
            Attribution::NotFound { best: None }
        );
    }

    #[test]
    fn word_overlap_counts_content_words_only() {
        let passage = "Feed the starter equal weights of flour and water every day.";
        assert_eq!(
            word_overlap_pct("Feed the starter every day.", passage),
            Some(100)
        );
        assert_eq!(word_overlap_pct("Starters prefer jazz.", passage), Some(33));
        assert_eq!(word_overlap_pct("This is it [1].", passage), None);
    }
}
