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

pub mod cite;
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

pub use follow_up::Earlier;
pub use marks::SUPPORT_MIN_PCT;
pub use provider::LlmConfig;

/// Characters of passage text handed to the answerer, all documents together.
/// About 3,000 tokens: fits the context of small local models.
pub const CONTEXT_BUDGET_CHARS: usize = 12_000;
/// Passages the extractive answerer quotes.
pub const EXTRACTIVE_PASSAGES: usize = 3;
/// Longest extractive quote.
const QUOTE_MAX_CHARS: usize = 320;
/// Lane hits considered when no document is mentioned.
pub const LANE_HITS: usize = 5;

/// Characters of passage text the built-in model reads: usually 4 of the
/// lanes' passages (they run near 600 characters, and fill the budget
/// whole), 566 prompt tokens with the question and the instructions
/// (median over 128 answers). On 2 cores the 0.5B model reads a prompt at
/// about 100 tokens/s, so the first word comes after 5.6 s (median; README,
/// Figures → Answers).
pub const LOCAL_CONTEXT_CHARS: usize = 1_900;

/// Who writes the answer.
#[derive(Debug, Clone)]
pub enum Answerer {
    /// No model: the best passages, quoted and cited.
    Extractive,
    /// The built-in model (llama.cpp, in this process), from its GGUF file.
    Local { model: PathBuf },
    /// An OpenAI-compatible server.
    Llm(LlmConfig),
}

/// Which answerer a person asked for (Settings, `carrel ask --answerer`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    specta::Type,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum AnswererChoice {
    /// The built-in model when it is installed, else extractive.
    #[default]
    Auto,
    /// The built-in model (extractive, said so, when it is not installed).
    Local,
    /// Quotes only: no model writes.
    Extractive,
    /// An OpenAI-compatible server (its URL and model are needed).
    Server,
}

impl Answerer {
    /// The one place an answerer is chosen: `choice`, with the models in
    /// `models` and the server `server` names. Returns the answerer and,
    /// when it is not the one asked for, a note that says why (it goes on
    /// the answer, for the reader).
    pub fn choose(
        choice: AnswererChoice,
        models: &ModelConfig,
        server: Option<LlmConfig>,
    ) -> std::result::Result<(Answerer, Option<String>), String> {
        let model = writer::writer_path(&models.dir);
        match choice {
            AnswererChoice::Extractive => Ok((Answerer::Extractive, None)),
            AnswererChoice::Server => match server {
                Some(cfg) => Ok((Answerer::Llm(cfg), None)),
                None => Err("the server answerer needs a URL and a model name (--llm-url and --llm-model, or Settings)".into()),
            },
            AnswererChoice::Auto | AnswererChoice::Local if model.is_file() => {
                Ok((Answerer::Local { model }, None))
            }
            AnswererChoice::Auto | AnswererChoice::Local => Ok((
                Answerer::Extractive,
                Some(format!(
                    "no built-in model is installed ({} is missing; {}), so these are quotes from the passages, not a written answer",
                    model.display(),
                    how_to_install_writer(models.from)
                )),
            )),
        }
    }

    /// The answerer the environment asks for, as `carrel ask` reads it:
    /// [`Answerer::from_env_or`] with nothing saved.
    pub fn from_env(models: &ModelConfig) -> (Answerer, Option<String>) {
        Answerer::from_env_or(models, AnswererChoice::Auto, None)
            .expect("only the server answerer needs a server")
    }

    /// The environment over a saved choice (the app's Settings): a server
    /// when `CARREL_LLM_URL` and `CARREL_LLM_MODEL` are set, else
    /// `CARREL_ANSWERER` (auto, local, extractive), else `saved`, with
    /// `server` for [`AnswererChoice::Server`].
    pub fn from_env_or(
        models: &ModelConfig,
        saved: AnswererChoice,
        server: Option<LlmConfig>,
    ) -> std::result::Result<(Answerer, Option<String>), String> {
        if let (Ok(url), Ok(model)) = (
            std::env::var("CARREL_LLM_URL"),
            std::env::var("CARREL_LLM_MODEL"),
        ) && !url.is_empty()
            && !model.is_empty()
        {
            return Ok((Answerer::llm(&url, &model), None));
        }
        let asked = std::env::var("CARREL_ANSWERER")
            .ok()
            .and_then(|c| <AnswererChoice as clap::ValueEnum>::from_str(&c, true).ok())
            .filter(|c| *c != AnswererChoice::Server);
        match asked {
            Some(choice) => Answerer::choose(choice, models, None),
            None => Answerer::choose(saved, models, server),
        }
    }

    /// Characters of passages this answerer reads.
    pub fn context_chars(&self) -> usize {
        match self {
            Answerer::Local { .. } => LOCAL_CONTEXT_CHARS,
            Answerer::Extractive | Answerer::Llm(_) => CONTEXT_BUDGET_CHARS,
        }
    }

    /// An OpenAI-compatible model at `url` ([`LlmConfig::keyed`]).
    pub fn llm(url: &str, model: &str) -> Answerer {
        Answerer::Llm(LlmConfig::keyed(url, model))
    }

    pub fn name(&self) -> String {
        match self {
            Answerer::Extractive => "extractive".into(),
            Answerer::Local { .. } => format!("local:{}", writer::WRITER_NAME),
            Answerer::Llm(cfg) => format!("llm:{} at {}", cfg.model, cfg.base_url),
        }
    }
}

/// Where the built-in model comes from, for the models folder in use.
fn how_to_install_writer(from: ModelsFrom) -> String {
    match from {
        ModelsFrom::Installed => format!("install the package {}", writer::WRITER_PACKAGE),
        ModelsFrom::Given | ModelsFrom::Env | ModelsFrom::DataDir => {
            "`make models` puts it there from a source checkout".into()
        }
    }
}

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

/// A library on another machine, asked by its caller (its hub searched
/// for the question): its passages, or why there are none, and what says
/// whether a passage is still in it.
pub struct Foreign {
    pub kb: Kb,
    pub owner: Option<String>,
    pub passages: std::result::Result<Vec<Passage>, String>,
    pub ms: f64,
    pub holder: Box<dyn Holder>,
}

/// A question with its context, before anyone answers it.
pub struct Prepared {
    question: String,
    mentions: Vec<Mentioned>,
    context: Vec<Passage>,
    notes: Vec<String>,
    /// Why there is nothing to answer from, if so.
    no_context: Option<String>,
    route: Vec<RouteStep>,
    /// What checks the passages of libraries on other machines.
    foreign: Vec<(Kb, Box<dyn Holder>)>,
    quote: Option<verify::QuotedLine>,
    /// The turn this question follows up on, told to the answerer.
    earlier: Option<Earlier>,
}

impl Prepared {
    /// The numbered passages the answerer will read.
    pub fn context(&self) -> &[Passage] {
        &self.context
    }
}

/// What the answerer wrote, before it is checked.
#[derive(Debug, Clone)]
pub struct Drafts {
    pub drafts: Vec<Draft>,
    /// How the model wrote them (none for quotes).
    pub writing: Option<Writing>,
}

/// What the answerer wrote, or why not; none when nobody was asked (no
/// context: a model is never asked to answer from nothing).
pub type Drafted = Option<std::result::Result<Drafts, String>>;

/// The answerer's turn; needs no library, so nothing waits on it. `on`
/// hears the context at once, then the text as it is written and each
/// statement with its mark as it ends; `stop` ends the writing, keeping
/// what was written.
pub fn draft(
    prepared: &Prepared,
    answerer: &Answerer,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Progress),
) -> Drafted {
    if let Some(q) = &prepared.quote {
        on(Progress::Quote(q));
    }
    if prepared.no_context.is_some() {
        return None;
    }
    let (question, context) = (&prepared.question, &prepared.context);
    on(Progress::Context(context));
    let asking = prompt(question, context, prepared.earlier.as_ref());
    Some(match answerer {
        Answerer::Extractive => Ok(Drafts {
            drafts: extractive(question, context),
            writing: None,
        }),
        Answerer::Local { model } => write_local(model, asking, context, stop, on),
        Answerer::Llm(cfg) => provider::complete(cfg, SYSTEM_PROMPT, &asking).map(|text| {
            let mut split = sentences::Sentences::new();
            let mut cuts = split.push(&text);
            cuts.extend(split.finish());
            Drafts {
                drafts: hand_on(cuts, context, on),
                writing: None,
            }
        }),
    })
}

/// The built-in model's answer, streamed through `on` as it is written.
fn write_local(
    model: &std::path::Path,
    prompt: String,
    context: &[Passage],
    stop: &AtomicBool,
    on: &mut dyn FnMut(Progress),
) -> std::result::Result<Drafts, String> {
    let writer = Writer::load(model)?;
    let messages = [
        Message::new(Role::System, LOCAL_PROMPT),
        Message::new(Role::User, prompt),
    ];
    let mut split = sentences::Sentences::new();
    let mut drafts = Vec::new();
    let written = writer.write(&messages, stop, &mut |piece| {
        let cuts = split.push(piece);
        drafts.extend(hand_on(cuts, context, on));
    })?;
    drafts.extend(hand_on(split.finish(), context, on));
    Ok(Drafts {
        drafts,
        writing: Some(Writing {
            ended: written.ended,
            prompt_tokens: written.prompt_tokens as u32,
            tokens: written.tokens as u32,
            first_token_ms: written.first_token_ms,
            total_ms: written.total_ms,
            text: written.text,
        }),
    })
}

/// Hands each cut of written text on as it comes, a statement with its
/// mark; returns the statements' drafts, cited by Carrel.
fn hand_on(
    cuts: Vec<sentences::Cut>,
    context: &[Passage],
    on: &mut dyn FnMut(Progress),
) -> Vec<Draft> {
    let mut out = Vec::new();
    for cut in cuts {
        match cut {
            sentences::Cut::Text(t) => on(Progress::Text(&t)),
            sentences::Cut::Ended(mut d) => {
                let attribution = marks::attribute(&d.text, context);
                d.citations = attribution.cited().into_iter().collect();
                on(Progress::Statement(&statement(&d, attribution)));
                out.push(d);
            }
        }
    }
    out
}

/// A written statement with the mark its attribution gives it (before its
/// passage's place in its library is checked).
fn statement(d: &Draft, attribution: marks::Attribution) -> Statement {
    use marks::Attribution as A;
    Statement {
        text: d.text.clone(),
        citations: attribution.cited().into_iter().collect(),
        check: match attribution {
            A::Verbatim { .. } => Check::Verified,
            A::Supported { pct, .. } => Check::Supported { overlap_pct: pct },
            A::NotFound { best } => Check::Unsupported {
                overlap_pct: best.map_or(0, |(_, pct)| pct),
            },
            A::NoClaim => Check::NoClaim,
        },
        hint: d.hint.clone(),
    }
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

/// Resolves the mentions and builds the numbered context from `libs`: the
/// mentioned documents, each with an equal share of the budget, or each
/// library's lane passages with an equal share, the libraries taking turns
/// (their numbers are never compared). Libraries on other machines
/// (`foreign`, searched by the caller) take their turns too, for a question
/// that mentions no document. A library that fails is in the route with
/// why; the question fails only when every library did. A question that
/// follows up on `earlier` is searched for with it ([`follow_up`]), and its
/// answerer is told of it.
pub fn prepare(
    libs: &mut [&mut dyn Corpus],
    foreign: Vec<Foreign>,
    message: &str,
    earlier: Option<&Earlier>,
    budget: usize,
) -> Result<Prepared> {
    let ids: Vec<Identity> = libs.iter().map(|l| l.identity()).collect::<Result<_>>()?;
    let mentions = mentioned(libs, &ids, message)?;
    let question = mention::strip(message);
    let search = follow_up::search_text(&question, earlier);
    let mut notes: Vec<String> = earlier.map(follow_up::note).into_iter().collect();
    let mut route = Vec::new();
    let mut per_library: Vec<Vec<Passage>> = Vec::new();
    let mut reasons: Vec<(Kb, String)> = Vec::new();
    let mut failure = None;
    let asked: Vec<usize> = if mentions.is_empty() {
        (0..libs.len()).collect()
    } else {
        (0..libs.len())
            .filter(|i| mentions.iter().any(|(at, _)| at == i))
            .collect()
    };
    if mentions.is_empty() && question.is_empty() {
        return Ok(Prepared {
            question,
            mentions: Vec::new(),
            context: Vec::new(),
            notes,
            no_context: Some("the message has no question and mentions no document".into()),
            route,
            foreign: Vec::new(),
            quote: None,
            earlier: None,
        });
    }
    // Each library asked gets an equal share of the budget, those on other
    // machines included (they are asked only when no document is mentioned).
    let foreign_asked = if mentions.is_empty() {
        foreign.len()
    } else {
        0
    };
    let share = budget / (asked.len() + foreign_asked).max(1);
    for &i in &asked {
        let started = std::time::Instant::now();
        let id = &ids[i];
        let mine: Vec<&Mentioned> = mentions
            .iter()
            .filter(|(at, _)| *at == i)
            .map(|(_, m)| m)
            .collect();
        let got = library_context(
            &mut *libs[i],
            &search,
            &mine,
            budget / mentions.len().max(1),
            share,
            &mut notes,
        );
        let ms = crate::lanes::merge::route_ms(started);
        let state = match got {
            Ok((mut context, why_none)) => {
                for p in &mut context {
                    p.kb = Some(id.kb.clone());
                    p.owner = id.owner.clone();
                }
                if let Some(why) = why_none {
                    reasons.push((id.kb.clone(), why));
                }
                per_library.push(context);
                RouteState::Answered
            }
            Err(e) => {
                let reason = e.to_string();
                failure.get_or_insert(e);
                RouteState::Failed { reason }
            }
        };
        route.push(RouteStep {
            kb: Some(id.kb.clone()),
            owner: id.owner.clone(),
            state,
            ms,
        });
    }
    let mut holders = Vec::new();
    for f in foreign.into_iter().filter(|_| mentions.is_empty()) {
        let state = match f.passages {
            Ok(mut passages) => {
                let mut used = 0;
                passages.retain(|p| {
                    used += p.text.chars().count();
                    used <= share
                });
                if passages.is_empty() {
                    reasons.push((
                        f.kb.clone(),
                        "its hub found nothing that passed a floor".into(),
                    ));
                }
                per_library.push(passages);
                RouteState::Answered
            }
            Err(reason) => RouteState::Unavailable { reason },
        };
        route.push(RouteStep {
            kb: Some(f.kb.clone()),
            owner: f.owner,
            state,
            ms: f.ms,
        });
        holders.push((f.kb, f.holder));
    }
    if per_library.is_empty()
        && let Some(e) = failure
    {
        return Err(e);
    }
    let quote = match verify::quoted_line(&question) {
        Some(line) => Some(verify::QuotedLine {
            check: check_line(libs, &line)?,
            line,
        }),
        None => None,
    };
    let mut context = take_turns(per_library);
    for (i, p) in context.iter_mut().enumerate() {
        p.n = i + 1;
    }
    let no_context = context.is_empty().then(|| match reasons.as_slice() {
        [(_, only)] => only.clone(),
        many => many
            .iter()
            .map(|(kb, why)| format!("`{kb}`: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
    });
    Ok(Prepared {
        question,
        mentions: mentions.into_iter().map(|(_, m)| m).collect(),
        context,
        notes,
        no_context,
        route,
        foreign: holders,
        quote,
        earlier: earlier.cloned(),
    })
}

/// A quoted line against every library here: found wherever it occurs,
/// else the closest passage of the first library that has one.
fn check_line(libs: &[&mut dyn Corpus], line: &str) -> Result<verify::LineCheck> {
    let mut found = Vec::new();
    let mut nearest = None;
    for lib in libs {
        match verify::verify_line(&**lib, line)? {
            verify::LineCheck::Found { places } => found.extend(places),
            verify::LineCheck::NotInLibrary { nearest: n } => {
                nearest = nearest.or(n);
            }
        }
    }
    Ok(match found.is_empty() {
        false => verify::LineCheck::Found { places: found },
        true => verify::LineCheck::NotInLibrary { nearest },
    })
}

/// The passages a hub's topic lane admitted, in its order, each with its
/// library and owner: what a library on another machine gives an answer.
pub fn passages_from(
    topic: &crate::lanes::merge::SharedLane<crate::lanes::TopicHit>,
) -> Vec<Passage> {
    topic
        .groups
        .iter()
        .filter(|g| g.standing == crate::lanes::merge::Standing::Hit)
        .flat_map(|g| &g.hits)
        .map(|h| Passage {
            n: 0,
            doc: h.hit.doc,
            title: h.hit.title.clone(),
            source: h
                .hit
                .locations
                .first()
                .map(|l| l.source.clone())
                .unwrap_or_default(),
            chunk: h.hit.chunk,
            heading_path: h.hit.heading_path.clone(),
            page: h.hit.page,
            text: h.hit.passage.clone(),
            found: Found::TopicLane,
            cosine: Some(h.hit.cosine),
            scorer: h.hit.scorer.clone(),
            whole_document: false,
            kb: Some(h.kb.clone()),
            owner: h.owner.clone(),
        })
        .collect()
}

/// One library's context: its mentioned documents (`mentions`, each with
/// `share` characters), or its lanes' passages within `budget`.
fn library_context(
    lib: &mut dyn Corpus,
    question: &str,
    mentions: &[&Mentioned],
    share: usize,
    budget: usize,
    notes: &mut Vec<String>,
) -> Result<(Vec<Passage>, Option<String>)> {
    let fp = Fingerprints::of(lib.models())?;
    let scorer = ScorerId {
        kind: ScorerKind::Cosine,
        model: fp.model.clone(),
    };
    let qvec = if question.is_empty() {
        None
    } else {
        Some(lib.embed_query(question)?)
    };
    match &qvec {
        _ if !mentions.is_empty() => {
            mention_context(lib, mentions, &qvec, &fp, &scorer, share, notes)
        }
        Some(v) => lane_context(lib, question, v, &fp, &scorer, budget),
        None => Ok((Vec::new(), Some("the message has no question".into()))),
    }
}

/// The libraries' passages, one from each in turn, each library's in its
/// own order.
fn take_turns(per_library: Vec<Vec<Passage>>) -> Vec<Passage> {
    let mut queues: Vec<std::vec::IntoIter<Passage>> =
        per_library.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for q in &mut queues {
            out.extend(q.next());
        }
        if out.len() == before {
            return out;
        }
    }
}

/// The documents `message` mentions, each once, in order, with the index of
/// the library it was found in; an error for the first mention that does
/// not resolve to exactly one document in the libraries asked.
fn mentioned(
    libs: &[&mut dyn Corpus],
    ids: &[Identity],
    message: &str,
) -> Result<Vec<(usize, Mentioned)>> {
    let parsed = mention::parse(message);
    if parsed.is_empty() {
        return Ok(Vec::new());
    }
    let docs: Vec<Vec<DocumentRow>> = libs.iter().map(|l| l.list()).collect::<Result<_>>()?;
    let mut mentions: Vec<(usize, Mentioned)> = Vec::new();
    for m in parsed {
        let within: Vec<usize> = (0..libs.len())
            .filter(|&i| m.kb.as_deref().is_none_or(|kb| ids[i].kb.as_str() == kb))
            .collect();
        if within.is_empty() {
            let known: Vec<String> = ids.iter().map(|i| format!("`{}`", i.kb)).collect();
            return Err(match m.kb {
                Some(kb) => Error::UnknownKb {
                    kb,
                    known: known.join(", "),
                },
                // Only libraries on other machines were asked: their
                // documents cannot be mentioned from here.
                None => Error::MentionNowhere { token: m.token },
            });
        }
        let resolutions: Vec<(usize, Resolution)> = within
            .iter()
            .map(|&i| (i, mention::resolve(&m.key, &docs[i])))
            .collect();
        let found: Vec<(usize, i64, String)> = resolutions
            .iter()
            .filter_map(|(i, r)| match r {
                Resolution::Resolved { doc, title } => Some((*i, *doc, title.clone())),
                _ => None,
            })
            .collect();
        match found.as_slice() {
            [(i, doc, title)] => {
                if !mentions.iter().any(|(at, x)| at == i && x.doc == *doc) {
                    mentions.push((
                        *i,
                        Mentioned {
                            token: m.token,
                            doc: *doc,
                            title: title.clone(),
                            kb: Some(ids[*i].kb.clone()),
                        },
                    ));
                }
            }
            [] => {
                // The most useful refusal: a choice within one library, else
                // the closest names.
                let (_, resolution) = resolutions
                    .iter()
                    .find(|(_, r)| matches!(r, Resolution::Ambiguous { .. }))
                    .or_else(|| {
                        resolutions.iter().find(|(_, r)| {
                            matches!(r, Resolution::Unknown { did_you_mean } if !did_you_mean.is_empty())
                        })
                    })
                    .unwrap_or(&resolutions[0]);
                return Err(MentionError {
                    token: m.token,
                    resolution: resolution.clone(),
                }
                .into());
            }
            many => {
                let kbs: Vec<String> = many
                    .iter()
                    .map(|(i, _, _)| format!("{}{}/{}", mention::PREFIX, ids[*i].kb, m.key))
                    .collect();
                return Err(Error::MentionInSeveralLibraries {
                    token: m.token,
                    choices: kbs.join(" or "),
                });
            }
        }
    }
    Ok(mentions)
}

/// The context from the mentioned documents, each with an equal share of the
/// budget; a note for each one without text, and why there is no context
/// when none has any.
fn mention_context(
    lib: &dyn Corpus,
    mentions: &[&Mentioned],
    qvec: &Option<Vec<f32>>,
    fp: &Fingerprints,
    scorer: &ScorerId,
    share: usize,
    notes: &mut Vec<String>,
) -> Result<(Vec<Passage>, Option<String>)> {
    let mut context: Vec<Passage> = Vec::new();
    let mut no_context = None;
    for m in mentions {
        let doc = lib.document(m.doc)?;
        let content = match (&doc.broken_reason, lib.store().document_content(m.doc)?) {
            (None, Some(c)) => c,
            (reason, _) => {
                notes.push(format!(
                    "{} ({}) has no text to answer from: {}",
                    m.token,
                    doc.title,
                    reason.as_deref().unwrap_or("it is not indexed")
                ));
                continue;
            }
        };
        let chunks: Vec<(ChunkRow, Option<Cosine>)> = match qvec {
            Some(v) => lib.store().chunks_with_cosines(content, v, &fp.chunk)?,
            None => lib
                .store()
                .chunks(content)?
                .into_iter()
                .map(|c| (c, None))
                .collect(),
        };
        let (picked, whole) = within_share(&chunks, share);
        for (c, cosine) in picked {
            context.push(Passage {
                n: 0,
                doc: doc.id,
                title: doc.title.clone(),
                source: doc.source.clone(),
                chunk: c.id,
                heading_path: c.heading_path.clone(),
                page: c.page,
                text: c.text.clone(),
                found: Found::Mention {
                    token: m.token.clone(),
                },
                cosine: *cosine,
                scorer: scorer.clone(),
                whole_document: whole,
                kb: None,
                owner: None,
            });
        }
    }
    if context.is_empty() {
        no_context = Some("none of the mentioned documents has indexed text".to_string());
    }
    Ok((context, no_context))
}

/// A mentioned document's chunks for the context: all of them when they fit
/// `share` (then true), else its best by cosine, as many as `share` holds.
fn within_share(
    chunks: &[(ChunkRow, Option<Cosine>)],
    share: usize,
) -> (Vec<&(ChunkRow, Option<Cosine>)>, bool) {
    let total: usize = chunks.iter().map(|(c, _)| c.text.chars().count()).sum();
    let whole = total <= share;
    let mut picked: Vec<&(ChunkRow, Option<Cosine>)> = chunks.iter().collect();
    if !whole {
        // The topic lane's scorer restricted to this document: best
        // passages first, as many as the budget holds.
        let key = |c: &Option<Cosine>| c.unwrap_or(Cosine::new(f32::MIN));
        picked.sort_by(|(a, x), (b, y)| key(x).rank(key(y)).then(a.seq.cmp(&b.seq)));
        let mut used = 0;
        picked.retain(|(c, _)| {
            let n = c.text.chars().count();
            let keep = used + n <= share;
            used += if keep { n } else { 0 };
            keep
        });
    }
    (picked, whole)
}

/// The context from what the lanes admit for `question` (no document was
/// mentioned), and why there is none when neither admits anything.
fn lane_context(
    lib: &mut dyn Corpus,
    question: &str,
    v: &[f32],
    fp: &Fingerprints,
    scorer: &ScorerId,
    budget: usize,
) -> Result<(Vec<Passage>, Option<String>)> {
    let mut no_context = None;
    let r = lib.match_query(question, LANE_HITS)?;
    let topic = topic_passages(lib, &r)?;
    let subject = subject_passages(lib, &r, v, fp, scorer)?;
    let context = alternate(subject, topic, budget);
    if context.is_empty() {
        no_context = Some(no_lane_context(&r));
    }
    Ok((context, no_context))
}

/// The topic lane's admitted passages, in its rank.
fn topic_passages(lib: &dyn Corpus, r: &MatchResponse) -> Result<Vec<Passage>> {
    let mut topic = Vec::new();
    if r.topic.has_ready_hits() {
        for h in r.topic.hits() {
            let doc = lib.document(h.doc)?;
            topic.push(Passage {
                n: 0,
                doc: h.doc,
                title: h.title.clone(),
                source: doc.source,
                chunk: h.chunk,
                heading_path: h.heading_path.clone(),
                page: h.page,
                text: h.passage.clone(),
                found: Found::TopicLane,
                cosine: Some(h.cosine),
                scorer: h.scorer.clone(),
                whole_document: false,
                kb: None,
                owner: None,
            });
        }
    }
    Ok(topic)
}

/// The subject lane's admitted documents, in its rank, each by its passage
/// closest to the question.
fn subject_passages(
    lib: &dyn Corpus,
    r: &MatchResponse,
    v: &[f32],
    fp: &Fingerprints,
    scorer: &ScorerId,
) -> Result<Vec<Passage>> {
    let mut subject = Vec::new();
    if r.subject.has_ready_hits() {
        // In the cross-encoder's order; each document's best passage is
        // picked by chunk cosine within that one document.
        for h in r.subject.hits() {
            let Some(content) = lib.store().document_content(h.doc)? else {
                continue;
            };
            let best = lib
                .store()
                .chunks_with_cosines(content, v, &fp.chunk)?
                .into_iter()
                .filter_map(|(c, cos)| cos.map(|cos| (c, cos)))
                .max_by(|a, b| b.1.rank(a.1));
            let Some((c, cos)) = best else {
                continue;
            };
            let doc = lib.document(h.doc)?;
            subject.push(Passage {
                n: 0,
                doc: h.doc,
                title: h.title.clone(),
                source: doc.source,
                chunk: c.id,
                heading_path: c.heading_path,
                page: c.page,
                text: c.text,
                found: Found::SubjectLane,
                cosine: Some(cos),
                scorer: scorer.clone(),
                whole_document: false,
                kb: None,
                owner: None,
            });
        }
    }
    Ok(subject)
}

/// Why neither lane gave the context anything, with each lane's state, and
/// what the user can do instead.
fn no_lane_context(r: &MatchResponse) -> String {
    let state = |s: &str, reason: Option<&str>| match (s, reason) {
        (_, Some(r)) => format!("{s}: {r}"),
        ("ready", None) => "nothing passed its floor".to_string(),
        ("weak", None) => "only sub-floor matches".to_string(),
        _ => s.to_string(),
    };
    // A topic lane that held back had passages over its floor: say why,
    // not that they were under it.
    let topic = match (&r.explain.topic_held_back, r.topic.reason()) {
        (Some(why), None) => format!("held back: {why}"),
        _ => state(r.topic.state(), r.topic.reason()),
    };
    format!(
        "neither lane admitted a document for this question (subject lane: {}; topic lane: {topic}); \
         mention a document with @doc: to answer from it",
        state(r.subject.state(), r.subject.reason()),
    )
}

/// The lanes' passages for the context: the subject lane's first, the topic
/// lane's first, the subject lane's second, and so on, each in its own lane's
/// rank. The two lanes' numbers are never compared (a subject hit's order is
/// the cross-encoder's, not its passage's cosine). A passage already taken by
/// the other lane, or past the character budget, is left out.
fn alternate(subject: Vec<Passage>, topic: Vec<Passage>, budget: usize) -> Vec<Passage> {
    let mut out: Vec<Passage> = Vec::new();
    let mut used = 0;
    let (mut s, mut t) = (subject.into_iter(), topic.into_iter());
    loop {
        let (a, b) = (s.next(), t.next());
        if a.is_none() && b.is_none() {
            return out;
        }
        for p in [a, b].into_iter().flatten() {
            let n = p.text.chars().count();
            if used + n <= budget && !out.iter().any(|x| x.chunk == p.chunk) {
                used += n;
                out.push(p);
            }
        }
    }
}

/// A statement before it is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub text: String,
    pub citations: Vec<usize>,
    /// The `[n]` markers a model wrote after it.
    pub hint: Vec<usize>,
}

/// The extractive answer: from each of the best passages, the sentences that
/// share the most words with the question, quoted verbatim and cited.
///
/// Mentioned documents' passages are ranked by chunk cosine against the
/// question when one scorer made every cosine (libraries with another
/// embedder keep the context's order). Lane passages keep the context's
/// order, the lanes alternated by their own ranks (see [`alternate`]) and
/// the libraries taking turns.
fn extractive(question: &str, context: &[Passage]) -> Vec<Draft> {
    let mut ranked: Vec<&Passage> = context.iter().collect();
    let one_scorer = ranked.windows(2).all(|w| w[0].scorer == w[1].scorer);
    if one_scorer
        && ranked
            .iter()
            .all(|p| matches!(p.found, Found::Mention { .. }))
    {
        ranked.sort_by(|a, b| {
            let key = |p: &Passage| p.cosine.unwrap_or(Cosine::new(f32::MIN));
            key(a).rank(key(b)).then(a.n.cmp(&b.n))
        });
    }
    let terms = crate::lanes::terms::stems(question);
    ranked
        .into_iter()
        .take(EXTRACTIVE_PASSAGES)
        .map(|p| Draft {
            text: quote(&p.text, &terms),
            citations: vec![p.n],
            hint: Vec::new(),
        })
        .collect()
}

/// The best window of whole sentences of `text`, verbatim, at most
/// [`QUOTE_MAX_CHARS`] unless one sentence is longer.
fn quote(text: &str, terms: &HashSet<String>) -> String {
    let sentences: Vec<(usize, &str)> = text
        .split_sentence_bound_indices()
        .filter(|(_, s)| !s.trim().is_empty())
        .collect();
    if sentences.is_empty() {
        return text.trim().to_string();
    }
    let overlap = |s: &str| crate::lanes::terms::stems(s).intersection(terms).count();
    let best = (0..sentences.len())
        .max_by_key(|&i| (overlap(sentences[i].1), std::cmp::Reverse(i)))
        .unwrap_or(0);
    let start = sentences[best].0;
    let mut end = start + sentences[best].1.len();
    for &(at, s) in &sentences[best + 1..] {
        if at + s.len() - start > QUOTE_MAX_CHARS {
            break;
        }
        end = at + s.len();
    }
    let mut out = text[start..end].trim().to_string();
    if out.chars().count() > QUOTE_MAX_CHARS * 2 {
        out = out.chars().take(QUOTE_MAX_CHARS * 2).collect();
    }
    out
}

const SYSTEM_PROMPT: &str = "You answer questions using only the numbered passages you are given. \
Every sentence of your answer must end with the number of the passage it relies on, in square \
brackets, like [2] or [1][3]. Do not use outside knowledge. If the passages do not answer the \
question, say so in one sentence and cite the passage that comes closest.";

/// The built-in model's instructions. It is not asked to cite: Carrel
/// cites each sentence itself, and asked for `[n]` the 0.5B model wrote
/// only markers ("[1][2]") to a plain question.
const LOCAL_PROMPT: &str = "You answer questions using only the numbered passages you are given. \
Answer in a few plain sentences, in your own words or the passages' words. Do not use outside \
knowledge. If the passages do not answer the question, say so in one sentence.";

fn prompt(question: &str, context: &[Passage], earlier: Option<&Earlier>) -> String {
    let mut out = earlier.map(follow_up::prompt_lines).unwrap_or_default();
    out.push_str("Passages:\n");
    for p in context {
        // The title once, then the heading path when it says more: every
        // token here is read before the first word (100 tokens/s on 2 cores).
        let place = match p.heading_path.join(" › ") {
            path if path.is_empty() || path == p.title => String::new(),
            path => format!("; {path}"),
        };
        let from = match (&p.kb, &p.owner) {
            (Some(kb), Some(owner)) => format!("; library {kb}, kept by {owner}"),
            (Some(kb), None) => format!("; library {kb}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "[{}] ({}{place}{from})\n{}\n\n",
            p.n, p.title, p.text
        ));
    }
    let q = if question.is_empty() {
        "Summarise these passages."
    } else {
        question
    };
    out.push_str(&format!("Question: {q}\n"));
    out
}

/// Removes `[n]` and `[n, m]` markers, returning the text and the numbers.
fn take_markers(s: &str) -> (String, Vec<usize>) {
    let mut text = String::new();
    let mut nums = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let inner = &rest[open + 1..open + close];
        let parsed: Option<Vec<usize>> = inner
            .split(',')
            .map(|x| x.trim().parse::<usize>().ok())
            .collect();
        match parsed {
            Some(ns) if !ns.is_empty() => {
                text.push_str(rest[..open].trim_end());
                nums.extend(ns);
            }
            _ => text.push_str(&rest[..open + close + 1]),
        }
        rest = &rest[open + close + 1..];
    }
    text.push_str(rest);
    (text.split_whitespace().collect::<Vec<_>>().join(" "), nums)
}

/// Whether a passage still belongs to the document it names, asked of the
/// library that holds it: its own store here, or its hub for a library on
/// another machine.
pub trait Holder {
    fn holds(&self, p: &Passage) -> Result<bool>;
}

impl Holder for Store {
    fn holds(&self, p: &Passage) -> Result<bool> {
        let owner = self.document_content(p.doc)?;
        Ok(owner.is_some() && self.chunk_content(p.chunk)? == owner)
    }
}

/// The libraries an answer read, by name, for [`check`]: each passage is
/// checked in the library it names.
pub struct Holders<'a>(pub Vec<(Option<Kb>, &'a dyn Holder)>);

impl<'a> Holders<'a> {
    /// One library: every passage is checked in it.
    pub fn one(store: &'a Store) -> Holders<'a> {
        Holders(vec![(None, store)])
    }

    fn of(&self, p: &Passage) -> Option<&'a dyn Holder> {
        match self.0.as_slice() {
            [(_, only)] => Some(*only),
            many => many
                .iter()
                .find(|(kb, _)| kb.is_some() && *kb == p.kb)
                .map(|(_, h)| *h),
        }
    }
}

/// Marks every statement. Quotes (`quotes`) keep the passage they were
/// taken from and must occur in it; a written statement is cited by
/// [`marks::attribute`]. Every cited passage must have been provided and
/// must still belong to the document it names.
pub fn check(
    holders: &Holders,
    drafts: Vec<Draft>,
    context: &[Passage],
    quotes: bool,
) -> Result<Vec<Statement>> {
    let mut out = Vec::new();
    for d in drafts {
        let mut s = if quotes {
            Statement {
                text: d.text.clone(),
                citations: d.citations.clone(),
                check: Check::Verified,
                hint: Vec::new(),
            }
        } else {
            statement(&d, marks::attribute(&d.text, context))
        };
        let mut problems = Vec::new();
        for &n in &s.citations {
            let Some(p) = context.iter().find(|p| p.n == n) else {
                problems.push(format!(
                    "[{n}] is not one of the {} passages provided",
                    context.len()
                ));
                continue;
            };
            let Some(holder) = holders.of(p) else {
                problems.push(format!(
                    "[{n}] names a library this answer did not read ({})",
                    p.kb.as_ref().map_or("none", |k| k.as_str())
                ));
                continue;
            };
            if !holder.holds(p)? {
                problems.push(format!(
                    "[{n}] names \"{}\" (doc {}), but its passage is not in that document",
                    p.title, p.doc
                ));
            }
            if quotes && !cite::occurs(&s.text, &p.text) {
                problems.push(format!("the quoted text does not occur in passage [{n}]"));
            }
        }
        if quotes && s.citations.is_empty() {
            s.check = Check::Uncited;
        } else if !problems.is_empty() {
            s.check = Check::Invalid { problems };
        }
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
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
