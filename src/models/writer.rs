//! The built-in answerer's language model: Qwen2.5-Coder-0.5B-Instruct as
//! GGUF, run in-process by llama.cpp through the `llama-cpp-2` crate. It
//! writes; it never cites. What a sentence it wrote rests on is decided by
//! Carrel afterwards ([`crate::answer::attribute`]).
//!
//! One model per process, loaded on first use and kept: loading maps the
//! file (about 1 s cold) and every answer after that only builds a context.
//! The instructions every answer begins with are read once: the model's
//! state after them is kept and restored into each new context, so a
//! question costs only its own tokens before the first word.
//! Writing stops at once when its stop flag is set, keeping what was
//! written.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{LlamaStateSeqFlags, SeqState};
use serde::{Deserialize, Serialize};

/// The folder `make models` installs the model into, under the models dir.
pub const WRITER_NAME: &str = "qwen2.5-coder-0.5b-instruct";
/// The Debian package that installs it beside an installed Carrel's other
/// models (`tools/package-model.sh` names it `carrel-model-` + the folder).
pub const WRITER_PACKAGE: &str = "carrel-model-qwen2.5-coder-0.5b-instruct";
/// Its file, as `tools/fetch-writer.sh` assembles and checks it.
pub const WRITER_FILE: &str = "model.gguf";
pub const WRITER_SHA256: &str = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
/// Its length: checked at every load (hashing 491 MB would cost a second
/// per `carrel ask`); the sha256 was checked when `make models` installed
/// it.
pub const WRITER_BYTES: u64 = 491_400_064;

/// Threads that read the prompt: both cores, since the person waits for
/// the first word.
pub const PROMPT_THREADS: i32 = 2;
/// Threads that write. One: on 2 cores, two writing threads that meet at a
/// barrier every layer fell under 5 tokens/s whenever another process took
/// a core (DESIGN.md); one keeps its pace and leaves a core to the lanes.
pub const WRITE_THREADS: i32 = 1;
/// Tokens of context the model is given room for: prompt and answer.
pub const CONTEXT_TOKENS: u32 = 4096;
/// The longest answer, in tokens.
pub const MAX_ANSWER_TOKENS: usize = 400;

/// Who says a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
        }
    }
}

/// Why writing ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// The model said it was done.
    Finished,
    /// Someone pressed Stop; what was written is kept.
    Stopped,
    /// It reached [`MAX_ANSWER_TOKENS`].
    Length,
}

/// What the model wrote, and how fast.
#[derive(Debug, Clone)]
pub struct Written {
    pub text: String,
    pub ended: Ended,
    pub prompt_tokens: usize,
    /// Of those, the tokens not read for this answer: the instructions'
    /// state, kept from an earlier answer, was restored.
    pub restored_tokens: usize,
    pub tokens: usize,
    /// From the call to the first written token (prompt read included).
    pub first_token_ms: f64,
    pub total_ms: f64,
}

/// The loaded model.
pub struct Writer {
    model: LlamaModel,
    template: LlamaChatTemplate,
    path: PathBuf,
    /// The last instructions read, and the model's state after each:
    /// at most [`KEPT_INSTRUCTIONS`], the oldest dropped first.
    instructions: Mutex<Vec<ReadAlready>>,
}

/// How many sets of instructions keep their state (about 1.5 MB each).
/// Carrel gives one; room for a few keeps one caller's from pushing out
/// another's.
const KEPT_INSTRUCTIONS: usize = 4;

/// A prompt's beginning that the model has read, kept to be restored.
struct ReadAlready {
    tokens: Vec<LlamaToken>,
    state: SeqState,
}

/// llama.cpp's backend: once per process, and never dropped.
fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp logs every tensor it loads; Carrel's log is for
            // its own decisions.
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(false),
            );
            LlamaBackend::init().map_err(|e| format!("llama.cpp could not start: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl Writer {
    /// The model at `path`, loaded once per process and shared. The error
    /// is a sentence that says what to do.
    pub fn load(path: &Path) -> Result<Arc<Writer>, String> {
        static LOADED: Mutex<Option<Arc<Writer>>> = Mutex::new(None);
        let mut loaded = crate::fault::lock(&LOADED);
        if let Some(w) = loaded.as_ref().filter(|w| w.path == path) {
            return Ok(w.clone());
        }
        let len = std::fs::metadata(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "the answerer's model is not installed ({} is missing); `make models` puts it there from a source checkout",
                    path.display()
                ),
                _ => format!("the answerer's model at {} cannot be read: {e}", path.display()),
            })?
            .len();
        if len != WRITER_BYTES {
            return Err(format!(
                "the answerer's model at {} is {len} bytes, not the {WRITER_BYTES} of {WRITER_NAME}; run `make models` again",
                path.display()
            ));
        }
        let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default())
            .map_err(|e| format!("llama.cpp could not load {}: {e}", path.display()))?;
        let template = model
            .chat_template(None)
            .map_err(|e| format!("the model at {} has no chat template: {e}", path.display()))?;
        let w = Arc::new(Writer {
            model,
            template,
            path: path.to_path_buf(),
            instructions: Mutex::new(Vec::new()),
        });
        *loaded = Some(w.clone());
        Ok(w)
    }

    /// The conversation in the model's own chat template, ready for the
    /// assistant's turn.
    pub fn render(&self, messages: &[Message]) -> Result<String, String> {
        self.templated(messages, true)
    }

    /// `messages` in the model's chat template; with `reply`, opening the
    /// assistant's turn.
    fn templated(&self, messages: &[Message], reply: bool) -> Result<String, String> {
        let chat = messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.as_str().into(), m.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("a message cannot go to the model: {e}"))?;
        self.model
            .apply_chat_template(&self.template, &chat, reply)
            .map_err(|e| format!("the model's chat template failed: {e}"))
    }

    /// How many tokens `text` is to this model.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len()
    }

    /// Writes the assistant's turn of `messages`, handing each piece of
    /// text to `on_text` as it comes. Greedy (the same question gives the
    /// same answer), with a light penalty on repeats. Checks `stop` before
    /// every token.
    pub fn write(
        &self,
        messages: &[Message],
        stop: &AtomicBool,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Written, String> {
        let started = Instant::now();
        let prompt = self.render(messages)?;
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(prompt.as_bytes(), false, true);
        let room = CONTEXT_TOKENS as usize - MAX_ANSWER_TOKENS;
        if tokens.len() > room {
            return Err(format!(
                "the question and its passages are {} tokens, more than the {room} the model has room for",
                tokens.len()
            ));
        }
        let instructions = self.instruction_tokens(messages)?;
        let (mut ctx, mut batch, restored_tokens) = self.read_prompt(&tokens, &instructions)?;
        let mut sampler = LlamaSampler::chain_simple([
            LlamaSampler::penalties(self.model.n_vocab(), 64, 1.1, 0.0, 0.0),
            LlamaSampler::greedy(),
        ]);
        let mut decoder = encoding_rs::UTF_8.new_decoder();
        let mut text = String::new();
        let mut first_token_ms = None;
        let mut pos = tokens.len() as i32;
        let mut written = 0;
        let ended = loop {
            if stop.load(Ordering::Relaxed) {
                break Ended::Stopped;
            }
            if written == MAX_ANSWER_TOKENS {
                break Ended::Length;
            }
            let token = sampler.sample(&ctx, batch.n_tokens() - 1);
            sampler.accept(token);
            first_token_ms.get_or_insert_with(|| ms(started));
            if vocab.is_eog(token) {
                break Ended::Finished;
            }
            written += 1;
            let bytes = vocab.token_to_piece(token, false, None);
            // A token may end inside a character: the decoder keeps the
            // rest for the next one.
            let room = decoder
                .max_utf8_buffer_length(bytes.len())
                .unwrap_or(bytes.len() * 3 + 4);
            let mut piece = String::with_capacity(room);
            let _ = decoder.decode_to_string(&bytes, &mut piece, false);
            if !piece.is_empty() {
                text.push_str(&piece);
                on_text(&piece);
            }
            batch.clear();
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| format!("the answer does not fit a batch: {e}"))?;
            pos += 1;
            ctx.decode(&mut batch)
                .map_err(|e| format!("the model failed while writing: {e}"))?;
        };
        Ok(Written {
            text,
            ended,
            prompt_tokens: tokens.len(),
            restored_tokens,
            tokens: written,
            first_token_ms: first_token_ms.unwrap_or_else(|| ms(started)),
            total_ms: ms(started),
        })
    }
    /// The tokens of the system messages that open `messages`, as they
    /// begin the rendered prompt; empty when there are none.
    fn instruction_tokens(&self, messages: &[Message]) -> Result<Vec<LlamaToken>, String> {
        let n = messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        if n == 0 {
            return Ok(Vec::new());
        }
        let text = self.templated(&messages[..n], false)?;
        Ok(self.model.vocab().tokenize(text.as_bytes(), false, true))
    }

    /// A fresh context that has read `tokens`, the batch that read the
    /// last of them, whose logits give the first word, and how many of
    /// them were restored rather than read. When `tokens` begin with
    /// `instructions`, the state after the instructions is restored if it
    /// was kept, and kept if it was not.
    fn read_prompt(
        &self,
        tokens: &[LlamaToken],
        instructions: &[LlamaToken],
    ) -> Result<(LlamaContext<'_>, LlamaBatch<'_>, usize), String> {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(CONTEXT_TOKENS))
            .with_n_batch(CONTEXT_TOKENS)
            .with_n_threads(WRITE_THREADS)
            .with_n_threads_batch(PROMPT_THREADS);
        let mut ctx = self
            .model
            .new_context(backend()?, params)
            .map_err(|e| format!("llama.cpp could not make a context: {e}"))?;
        let mut batch = LlamaBatch::new(CONTEXT_TOKENS as usize, 1);
        let shared = !instructions.is_empty()
            && instructions.len() < tokens.len()
            && tokens.starts_with(instructions);
        let (restored, read) = match shared {
            false => (0, 0),
            true if self.restore(&mut ctx, instructions) => {
                (instructions.len(), instructions.len())
            }
            true => {
                self.read_and_keep(&mut ctx, &mut batch, instructions)?;
                (0, instructions.len())
            }
        };
        read_tokens(&mut ctx, &mut batch, tokens, read, true)?;
        Ok((ctx, batch, restored))
    }

    /// Whether the state after `instructions` was kept and is now in `ctx`.
    fn restore(&self, ctx: &mut LlamaContext<'_>, instructions: &[LlamaToken]) -> bool {
        let kept = crate::fault::lock(&self.instructions);
        match kept.iter().find(|k| k.tokens == instructions) {
            Some(k) if ctx.state_seq_set(&k.state, 0).is_ok() => true,
            Some(_) => {
                // A state that does not fit is read anew, from nothing.
                ctx.clear_kv_cache();
                false
            }
            None => false,
        }
    }

    /// Reads `instructions` into `ctx` and keeps the state after them.
    fn read_and_keep(
        &self,
        ctx: &mut LlamaContext<'_>,
        batch: &mut LlamaBatch<'_>,
        instructions: &[LlamaToken],
    ) -> Result<(), String> {
        read_tokens(ctx, batch, instructions, 0, false)?;
        // A state llama.cpp cannot give is not kept: the next answer reads
        // the instructions again.
        if let Ok(state) = ctx.state_seq_get(0, LlamaStateSeqFlags::empty()) {
            let mut kept = crate::fault::lock(&self.instructions);
            kept.retain(|k| k.tokens != instructions);
            if kept.len() == KEPT_INSTRUCTIONS {
                kept.remove(0);
            }
            kept.push(ReadAlready {
                tokens: instructions.to_vec(),
                state,
            });
        }
        Ok(())
    }
}

/// Reads `tokens[from..]` at their positions in one batch; with `last`,
/// the last token's logits are kept for the first word.
fn read_tokens(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    tokens: &[LlamaToken],
    from: usize,
    last: bool,
) -> Result<(), String> {
    batch.clear();
    for (i, t) in tokens.iter().enumerate().skip(from) {
        batch
            .add(*t, i as i32, &[0], last && i + 1 == tokens.len())
            .map_err(|e| format!("the prompt does not fit a batch: {e}"))?;
    }
    ctx.decode(batch)
        .map_err(|e| format!("the model could not read the prompt: {e}"))
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// Where the models dir keeps the writer's file.
pub fn writer_path(models_dir: &Path) -> PathBuf {
    models_dir.join(WRITER_NAME).join(WRITER_FILE)
}
