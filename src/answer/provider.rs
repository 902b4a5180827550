//! The optional LLM answerer: any server speaking the OpenAI-compatible chat
//! API (Ollama, llama.cpp server, LM Studio). Configured by flags or by
//! `CARREL_LLM_URL` / `CARREL_LLM_MODEL` / `CARREL_LLM_API_KEY`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where the LLM is and which model to ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LlmConfig {
    /// Base URL up to and including the API version, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    pub model: String,
    #[serde(skip)]
    pub api_key: Option<String>,
    pub timeout: Duration,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

impl LlmConfig {
    pub fn new(base_url: &str, model: &str) -> LlmConfig {
        LlmConfig {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// [`LlmConfig::new`] with `CARREL_LLM_API_KEY` as its key when set (a
    /// local server needs none).
    pub fn keyed(base_url: &str, model: &str) -> LlmConfig {
        let mut cfg = LlmConfig::new(base_url, model);
        cfg.api_key = std::env::var("CARREL_LLM_API_KEY").ok();
        cfg
    }

    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: [Message<'a>; 2],
    temperature: f32,
    stream: bool,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
}

#[derive(Deserialize)]
struct ReplyMessage {
    content: Option<String>,
}

/// Sends one chat completion; the error is a sentence naming the server.
pub fn complete(cfg: &LlmConfig, system: &str, user: &str) -> Result<String, String> {
    let client = reqwest::blocking::Client::builder()
        .timeout(cfg.timeout)
        .build()
        .map_err(|e| format!("could not start an HTTP client: {e}"))?;
    let body = Request {
        model: &cfg.model,
        messages: [
            Message {
                role: "system",
                content: system,
            },
            Message {
                role: "user",
                content: user,
            },
        ],
        temperature: 0.0,
        stream: false,
    };
    let body =
        serde_json::to_vec(&body).map_err(|e| format!("could not encode the request: {e}"))?;
    let mut req = client
        .post(cfg.endpoint())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(key) = &cfg.api_key {
        req = req.bearer_auth(key);
    }
    let endpoint = cfg.endpoint();
    let resp = req
        .send()
        .map_err(|e| format!("the LLM at {endpoint} could not be reached: {e}"))?;
    let status = resp.status();
    let text = resp
        .text()
        .map_err(|e| format!("the LLM at {endpoint} sent an unreadable reply: {e}"))?;
    if !status.is_success() {
        let snippet: String = text.chars().take(200).collect();
        return Err(format!(
            "the LLM at {endpoint} answered HTTP {status}: {snippet}"
        ));
    }
    let parsed: Response = serde_json::from_str(&text).map_err(|e| {
        format!("the LLM at {endpoint} did not send an OpenAI-compatible chat completion: {e}")
    })?;
    match parsed
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
    {
        Some(content) if !content.trim().is_empty() => Ok(content),
        _ => Err(format!("the LLM at {endpoint} returned an empty answer")),
    }
}
