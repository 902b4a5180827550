//! Grounded answers (`carrel ask`, the app's Chat page): context from the
//! mentioned documents or from the lanes, an answer from the extractive
//! answerer, the built-in model or an OpenAI-compatible server, and a check
//! by code of every statement in it.
//!
//! The check: an extractive quote must occur in the passage it cites. A
//! written sentence is cited by Carrel ([`marks::attribute`]) to the passage
//! that supports it, or to none ("not found in your documents"); the
//! model's own `[n]` is kept as a hint. Every cited passage must have been
//! in the context and must still belong to the document it names.

mod answerers;
pub mod cite;
mod context;
pub mod follow_up;
pub mod history;
pub mod marks;
pub mod provider;
pub mod sentences;
pub mod verify;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};
use unicode_segmentation::UnicodeSegmentation;

use crate::error::{Error, Result};
use crate::kb::{Identity, Kb};
use crate::lanes::MatchResponse;
use crate::lanes::merge::{RouteState, RouteStep};
use crate::mention::{self, Mention, MentionError, Mentionable, Resolution};
use crate::models::writer::{self, Ended, Message, Role, Writer};
use crate::models::{Fingerprints, ModelConfig, ModelsFrom};
use crate::score::{Cosine, Scale, ScorerId, ScorerKind};
use crate::store::{ChunkRow, DocumentRow, Store};

use answerers::*;
pub use answerers::{
    Answerer, AnswererChoice, Draft, Drafted, Drafts, EXTRACTIVE_PASSAGES, LOCAL_CONTEXT_CHARS,
    draft,
};
pub use context::{CONTEXT_BUDGET_CHARS, Foreign, LANE_HITS, Prepared, passages_from, prepare};
pub use follow_up::Earlier;
pub use marks::SUPPORT_MIN_PCT;
use marks::statement;
pub use marks::{Holder, Holders, check};
pub use provider::LlmConfig;

/// How a passage got into the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Found {
    /// The user mentioned its document.
    Mention { token: String },
    /// The subject lane admitted its document; this is its best passage.
    SubjectLane,
    /// The topic lane admitted it.
    TopicLane,
}

/// One numbered passage of the context: never without its document and place.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Passage {
    pub n: usize,
    pub doc: i64,
    pub title: String,
    pub source: String,
    pub chunk: i64,
    pub heading_path: Vec<String>,
    pub page: Option<u32>,
    pub text: String,
    pub found: Found,
    /// Cosine to the question (absent when the message had no question).
    pub cosine: Option<Cosine>,
    #[specta(type = String)]
    pub scorer: ScorerId,
    /// True when the whole document fit the budget and went in.
    pub whole_document: bool,
    /// The library that holds it and who keeps it (none in turns kept
    /// before libraries had names).
    #[serde(default)]
    pub kb: Option<Kb>,
    #[serde(default)]
    pub owner: Option<String>,
}

/// A mentioned document, resolved.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Mentioned {
    pub token: String,
    pub doc: i64,
    pub title: String,
    /// The library it was found in.
    #[serde(default)]
    pub kb: Option<Kb>,
}

/// The verdict on one statement of an answer: each says exactly what was
/// checked, no more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "status", rename_all = "snake_case")]
#[serde(rename = "CitationCheck")]
pub enum Check {
    /// The statement occurs verbatim in the passage it cites, which
    /// belongs to its document (a quote, or a sentence a model copied).
    Verified,
    /// Written: Carrel cited the passage holding at least
    /// [`SUPPORT_MIN_PCT`] of the statement's content-word pairs, the most of
    /// any passage; it belongs to its document.
    Supported { overlap_pct: u32 },
    /// Kept from earlier builds, which checked a model's own citations:
    /// real passages, and no content words to check against them.
    Cited,
    /// Written: no passage of the context holds [`SUPPORT_MIN_PCT`] of its
    /// content-word pairs (the closest holds `overlap_pct`): "not found in your
    /// documents", and cited to nothing.
    Unsupported { overlap_pct: u32 },
    /// Written: it makes no claim to look for (no content words: "So it is.").
    NoClaim,
    /// Kept from earlier builds: the statement cited nothing.
    Uncited,
    /// At least one citation failed; each problem is a sentence.
    Invalid { problems: Vec<String> },
}

#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Statement {
    pub text: String,
    /// Passage numbers, as `[n]` in the answer: Carrel's, for written text.
    pub citations: Vec<usize>,
    pub check: Check,
    /// The `[n]` a model wrote after it: a hint, compared with
    /// `citations` in the debug pane, never a citation.
    #[serde(default)]
    pub hint: Vec<usize>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, specta::Type)]
pub struct CheckSummary {
    pub statements: usize,
    pub verified: usize,
    pub supported: usize,
    pub cited: usize,
    pub unsupported: usize,
    #[serde(default)]
    pub no_claim: usize,
    pub uncited: usize,
    pub invalid: usize,
}

impl CheckSummary {
    pub fn of(statements: &[Statement]) -> CheckSummary {
        let mut c = CheckSummary {
            statements: statements.len(),
            ..CheckSummary::default()
        };
        for s in statements {
            *match s.check {
                Check::Verified => &mut c.verified,
                Check::Supported { .. } => &mut c.supported,
                Check::Cited => &mut c.cited,
                Check::Unsupported { .. } => &mut c.unsupported,
                Check::NoClaim => &mut c.no_claim,
                Check::Uncited => &mut c.uncited,
                Check::Invalid { .. } => &mut c.invalid,
            } += 1;
        }
        c
    }

    pub fn all_verified(&self) -> bool {
        self.statements > 0 && self.verified == self.statements
    }

    /// Every statement's content was confirmed in its passage: verbatim, or
    /// by its words (a statement that claims nothing aside). Only then may a
    /// surface say "all checked".
    pub fn all_checked(&self) -> bool {
        let claims = self.statements - self.no_claim;
        claims > 0 && self.verified + self.supported == claims
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Outcome {
    Answered {
        statements: Vec<Statement>,
        check: CheckSummary,
    },
    /// Nothing to answer from; the reason says why and what to do.
    NoContext { reason: String },
    /// The answerer failed; never shown as an empty answer.
    Failed { reason: String },
}

#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Answer {
    pub question: String,
    pub answerer: String,
    pub mentions: Vec<Mentioned>,
    pub context: Vec<Passage>,
    /// Mentioned documents that gave no text, and why.
    pub notes: Vec<String>,
    pub outcome: Outcome,
    /// The libraries asked, each with how it took part and its time.
    #[serde(default)]
    pub route: Vec<RouteStep>,
    /// How a model wrote it (none for quotes, or when no model was asked).
    #[serde(default)]
    pub writing: Option<Writing>,
    /// The line the question quotes, checked verbatim against the
    /// libraries read, before anyone answers.
    #[serde(default)]
    pub quote: Option<verify::QuotedLine>,
}

/// How a model's writing went: why it ended, and how fast.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type)]
pub struct Writing {
    pub ended: Ended,
    pub prompt_tokens: u32,
    pub tokens: u32,
    /// From asking the model to its first token, prompt read included.
    pub first_token_ms: f64,
    pub total_ms: f64,
    /// What the model wrote, its `[n]` markers in (the debug pane's).
    #[serde(default)]
    pub text: String,
}

/// [`Progress`] as it travels to the app (a Tauri Channel): owned, typed.
#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnswerEvent {
    Quote { quote: verify::QuotedLine },
    Context { passages: Vec<Passage> },
    Text { text: String },
    Statement { statement: Statement },
}

impl From<Progress<'_>> for AnswerEvent {
    fn from(p: Progress) -> AnswerEvent {
        match p {
            Progress::Quote(q) => AnswerEvent::Quote { quote: q.clone() },
            Progress::Context(c) => AnswerEvent::Context {
                passages: c.to_vec(),
            },
            Progress::Text(t) => AnswerEvent::Text { text: t.into() },
            Progress::Statement(s) => AnswerEvent::Statement {
                statement: s.clone(),
            },
        }
    }
}

/// What answering hands on as it goes, for a reader who waits.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// The line the question quotes, checked against the libraries.
    Quote(&'a verify::QuotedLine),
    /// The passages the answer reads, before anyone writes: shown at once.
    Context(&'a [Passage]),
    /// More written text, `[n]` markers taken out.
    Text(&'a str),
    /// A statement ended, with its mark (its passage's place in its
    /// library is checked again when the answer is done).
    Statement(&'a Statement),
}

impl Answer {
    /// The library a statement's first citation came from, and its owner:
    /// what a reader is told it is quoting.
    pub fn cited_library(&self, s: &Statement) -> Option<(&Kb, Option<&str>)> {
        let n = s.citations.first()?;
        let p = self.context.iter().find(|p| p.n == *n)?;
        Some((p.kb.as_ref()?, p.owner.as_deref()))
    }
}

/// What an answer reads from: the library's documents, their passages and
/// the lanes. [`crate::Library`] is the one implementation; `answer` sits
/// below the facade and never reaches for it.
pub trait Corpus {
    /// Every document, with its state.
    fn list(&self) -> Result<Vec<DocumentRow>>;
    fn document(&self, id: i64) -> Result<DocumentRow>;
    fn store(&self) -> &Store;
    /// The models in use, whose fingerprints pick the vectors.
    fn models(&self) -> &ModelConfig;
    fn embed_query(&mut self, query: &str) -> Result<Vec<f32>>;
    /// Both lanes, side by side.
    fn match_query(&mut self, query: &str, top_k: usize) -> Result<MatchResponse>;
    /// What the library says about itself: its name and owner go on every
    /// passage taken from it.
    fn identity(&self) -> Result<Identity>;
}

impl Mentionable for DocumentRow {
    fn id(&self) -> i64 {
        self.id
    }
    fn title(&self) -> &str {
        &self.title
    }
    fn source(&self) -> &str {
        &self.source
    }
}

/// Each `@doc:` mention of `message` with what it refers to.
pub fn resolve_mentions(lib: &dyn Corpus, message: &str) -> Result<Vec<(Mention, Resolution)>> {
    let docs = lib.list()?;
    Ok(mention::parse(message)
        .into_iter()
        .map(|m| {
            let r = mention::resolve(&m.key, &docs);
            (m, r)
        })
        .collect())
}

/// One row of the `@` autocomplete: the document, its mention token, and its
/// card's `what:` line so the user can tell similar titles apart.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct MentionOption {
    pub doc: i64,
    pub title: String,
    pub source: String,
    pub token: String,
    /// The card's `what:` line; none for a broken document.
    pub what: Option<String>,
    /// `indexed`, `stale` or `broken`, as `carrel list` says.
    pub state: String,
}

/// The autocomplete for a partly typed mention, in [`mention::suggest`]'s order.
pub fn complete_mention(
    lib: &dyn Corpus,
    partial: &str,
    limit: usize,
) -> Result<Vec<MentionOption>> {
    let docs = lib.list()?;
    mention::suggest(partial, &docs, limit)
        .into_iter()
        .map(|s| {
            let doc = docs
                .iter()
                .find(|d| d.id == s.doc)
                .expect("suggested from docs");
            let what = match lib.store().document_content(s.doc)? {
                Some(c) => lib.store().card(c)?.map(|card| card.what),
                None => None,
            };
            Ok(MentionOption {
                doc: s.doc,
                title: s.title,
                source: s.source,
                token: s.token,
                what,
                state: doc.state.clone(),
            })
        })
        .collect()
}

/// Answers `message`, grounded in its mentioned documents, or in what the
/// lanes find when it mentions none: [`prepare`], [`draft`], [`finish`] in
/// one go. A caller that shares the library (the app) runs the three itself
/// and holds the library for the first and last only, never during an LLM's
/// answer.
///
/// `libs` are the libraries the question may read: one, or those its
/// `@kb:` tokens named (the caller picks them; crossing into a library is
/// always asked for). Each passage keeps its library and owner.
pub fn ask(
    libs: &mut [&mut dyn Corpus],
    foreign: Vec<Foreign>,
    message: &str,
    answerer: &Answerer,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Progress),
) -> Result<Answer> {
    let prepared = prepare(libs, foreign, message, None, answerer.context_chars())?;
    let drafted = draft(&prepared, answerer, stop, on);
    let readers: Vec<&dyn Corpus> = libs.iter().map(|l| &**l).collect();
    finish(&readers, prepared, answerer, drafted)
}

/// Checks every statement against the libraries it read (the same ones, in
/// the same order, as [`prepare`] was given) and settles the outcome.
pub fn finish(
    libs: &[&dyn Corpus],
    prepared: Prepared,
    answerer: &Answerer,
    drafted: Drafted,
) -> Result<Answer> {
    let Prepared {
        question,
        mentions,
        context,
        notes,
        no_context,
        route,
        foreign,
        quote,
        earlier: _,
    } = prepared;
    let writing = drafted
        .as_ref()
        .and_then(|d| d.as_ref().ok())
        .and_then(|d| d.writing.clone());
    let outcome = match (no_context, drafted) {
        (Some(reason), _) => Outcome::NoContext { reason },
        (None, None) => Outcome::Failed {
            reason: "nobody was asked to answer".into(),
        },
        (None, Some(Err(reason))) => Outcome::Failed { reason },
        (None, Some(Ok(d))) if d.drafts.is_empty() => Outcome::Failed {
            reason: match d.writing.as_ref().map(|w| (w.ended, w.text.trim())) {
                Some((Ended::Stopped, _)) => {
                    "stopped before the model wrote a sentence; ask again to let it finish".into()
                }
                Some((_, text)) if !text.is_empty() => {
                    format!("the model wrote no sentence to check, only “{text}”")
                }
                Some(_) => "the model wrote nothing".into(),
                None => "the answerer returned no statements".into(),
            },
        },
        (None, Some(Ok(Drafts { drafts, .. }))) => {
            let quotes = matches!(answerer, Answerer::Extractive);
            let mut holders: Vec<(Option<Kb>, &dyn Holder)> = libs
                .iter()
                .map(|l| Ok((Some(l.identity()?.kb), l.store() as &dyn Holder)))
                .collect::<Result<_>>()?;
            holders.extend(foreign.iter().map(|(kb, h)| (Some(kb.clone()), h.as_ref())));
            let statements = check(&Holders(holders), drafts, &context, quotes)?;
            Outcome::Answered {
                check: CheckSummary::of(&statements),
                statements,
            }
        }
    };
    Ok(Answer {
        question,
        answerer: answerer.name(),
        mentions,
        context,
        notes,
        outcome,
        route,
        writing,
        quote,
    })
}

#[cfg(test)]
mod tests {
    use super::context::*;
    use super::*;

    fn lane_passage(chunk: i64, found: Found, cosine: f32, text: &str) -> Passage {
        Passage {
            n: 0,
            doc: chunk,
            title: format!("doc {chunk}"),
            source: format!("/d/{chunk}.md"),
            chunk,
            heading_path: vec![],
            page: None,
            text: text.into(),
            found,
            cosine: Some(Cosine::new(cosine)),
            scorer: ScorerId {
                kind: ScorerKind::Cosine,
                model: "m".into(),
            },
            whole_document: false,
            kb: None,
            owner: None,
        }
    }

    /// Regression: `extractive` sorted both lanes' passages by chunk cosine,
    /// so the cross-encoder's first subject hit, whose best passage had a low
    /// cosine, was never quoted.
    #[test]
    fn lanes_alternate_by_their_own_rank_and_a_low_cosine_subject_hit_is_quoted() {
        let subject = vec![
            lane_passage(
                1,
                Found::SubjectLane,
                0.21,
                "Subject one is about starters.",
            ),
            lane_passage(
                2,
                Found::SubjectLane,
                0.90,
                "Subject two is about starters.",
            ),
        ];
        let topic = vec![
            lane_passage(3, Found::TopicLane, 0.80, "Topic one discusses starters."),
            lane_passage(4, Found::TopicLane, 0.70, "Topic two discusses starters."),
            // The same passage the subject lane already gave: taken once.
            lane_passage(2, Found::TopicLane, 0.90, "Subject two is about starters."),
        ];
        let mut context = alternate(subject, topic, CONTEXT_BUDGET_CHARS);
        for (i, p) in context.iter_mut().enumerate() {
            p.n = i + 1;
        }
        let order: Vec<(i64, bool)> = context
            .iter()
            .map(|p| (p.chunk, matches!(p.found, Found::SubjectLane)))
            .collect();
        assert_eq!(order, vec![(1, true), (3, false), (2, true), (4, false)]);
        let quoted: Vec<usize> = extractive("starters", &context)
            .iter()
            .map(|d| d.citations[0])
            .collect();
        assert_eq!(quoted, vec![1, 2, 3], "lane ranks kept, not cosines");
    }

    #[test]
    fn alternate_keeps_within_the_budget() {
        let long = "x".repeat(60);
        let subject = vec![lane_passage(1, Found::SubjectLane, 0.5, &long)];
        let topic = vec![
            lane_passage(2, Found::TopicLane, 0.5, &long),
            lane_passage(3, Found::TopicLane, 0.5, "short"),
        ];
        let chunks: Vec<i64> = alternate(subject, topic, 100)
            .iter()
            .map(|p| p.chunk)
            .collect();
        assert_eq!(chunks, vec![1, 3]);
    }

    #[test]
    fn markers_come_out_of_the_text_with_their_numbers() {
        assert_eq!(
            take_markers("see [the docs] [2]"),
            ("see [the docs]".into(), vec![2])
        );
        assert_eq!(
            take_markers("Rye helps [1, 3]."),
            ("Rye helps.".into(), vec![1, 3])
        );
    }

    #[test]
    fn a_quote_is_verbatim_and_picks_the_sentences_about_the_question() {
        let text = "Intro words here. Feed the starter with rye flour every day. It bubbles. Unrelated closing remark.";
        let q = quote(
            text,
            &crate::lanes::terms::stems("how often to feed a starter"),
        );
        assert!(q.starts_with("Feed the starter"), "{q}");
        assert!(text.contains(&q));
    }
}
