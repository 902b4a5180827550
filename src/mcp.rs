//! `carrel mcp`: the library over the Model Context Protocol (stdio), read
//! only. Four tools, each a thin call into [`Library`]: `search` (both lanes,
//! never merged, full attribution, each with its `below_floor` tail, which
//! is not an answer), `read` (card, text or one passage),
//! `cite` (is this quote really in that document, and where) and `list`.
//! Every failure is a tool error with a sentence, never an empty result.

use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

use crate::answer::cite::{self, Located, squash};
use crate::lanes::Detail;
use crate::{Error, Library};

/// A document id: an integer such as `12`, or the same digits as a string
/// (`"12"`). Nothing else is accepted.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DocIdArg {
    Number(i64),
    Digits(#[schemars(regex(pattern = r"^[0-9]+$"))] String),
}

impl DocIdArg {
    fn get(&self) -> Result<i64, String> {
        match self {
            DocIdArg::Number(n) => Ok(*n),
            DocIdArg::Digits(s) => s
                .trim()
                .parse()
                .map_err(|_| format!("`{s}` is not a document id: use the integer id that `list` or `search` returned")),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for, in words.
    pub query: String,
    /// Hits per lane (default 10).
    #[serde(default)]
    pub top_k: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReadPart {
    /// The full extracted text with its headings (default).
    #[default]
    Text,
    /// The document's card: title, what it is about, outline, key terms.
    Card,
    /// One passage, named by `chunk`.
    Passage,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    pub id: DocIdArg,
    #[serde(default)]
    pub part: ReadPart,
    /// The chunk id of the passage, with `part: "passage"` (from a topic hit).
    #[serde(default)]
    pub chunk: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CiteArgs {
    pub id: DocIdArg,
    /// The exact words to check; whitespace differences are ignored.
    pub quote: String,
}

#[derive(Debug, Serialize)]
struct CiteResult {
    status: &'static str,
    doc: i64,
    title: String,
    source: String,
    chunk: Option<i64>,
    heading_path: Vec<String>,
    page: Option<u32>,
    /// For `not_found`: the passage that shares the most words with the quote.
    nearest_passage: Option<String>,
}

#[derive(Clone)]
pub struct CarrelMcp {
    library: Arc<Mutex<Library>>,
    tool_router: ToolRouter<Self>,
}

fn to_json<T: Serialize>(v: &T) -> Result<String, String> {
    serde_json::to_string_pretty(v).map_err(|e| format!("could not encode the result: {e}"))
}

#[tool_router]
impl CarrelMcp {
    pub fn new(library: Library) -> Self {
        CarrelMcp {
            library: Arc::new(Mutex::new(library)),
            tool_router: Self::tool_router(),
        }
    }

    /// Runs library work off the async runtime (ONNX and SQLite block).
    async fn with_library<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Library) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, String> {
        let library = self.library.clone();
        tokio::task::spawn_blocking(move || {
            let mut lib = crate::fault::lock(&library);
            f(&mut lib).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| format!("the library task failed: {e}"))?
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "Search the library with both lanes, returned separately and never merged: \
        `subject` answers \"is this document what the query is ABOUT?\" (cards, cross-encoder), \
        `topic` answers \"which documents DISCUSS it?\" (best passage per document, heading veto). \
        Each lane has a state (ready, weak, unavailable with a reason, failed) and hits with doc id, \
        title, locations (source path or URL), heading path, page, passage and the scorer that made \
        each number. An empty `hits` with state `ready` means the library was searched and nothing matched. \
        Each lane's `below_floor` lists candidates that scored below the lane's floor (not among its hits): \
        shown for context, they are not an answer and should not be cited as matches."
    )]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> Result<String, String> {
        let top_k = args.top_k.unwrap_or(10).clamp(1, 50);
        let r = self
            .with_library(move |lib| lib.match_query(&args.query, top_k))
            .await?;
        to_json(&r.view(Detail::Hits))
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "Read one document by id (an integer, or its digits as a string). \
        part=\"text\" (default) gives the full extracted text with headings; part=\"card\" the card; \
        part=\"passage\" with chunk=<chunk id from a topic hit> gives that one passage with its \
        heading path and page. An unknown id, a broken document or a chunk of another document is an error."
    )]
    async fn read(&self, Parameters(args): Parameters<ReadArgs>) -> Result<String, String> {
        let id = args.id.get()?;
        let part = args.part;
        let chunk = args.chunk;
        let out = self
            .with_library(move |lib| {
                let doc = lib.read(id)?;
                if let Some(reason) = &doc.document.broken_reason {
                    return Ok(Err(format!("document {id} is broken and has no text: {reason}")));
                }
                Ok(match part {
                    ReadPart::Text => Ok(serde_json::json!({
                        "doc": id, "title": doc.document.title, "source": doc.document.source, "sections": doc.sections,
                    })),
                    ReadPart::Card => Ok(serde_json::json!({ "doc": id, "title": doc.document.title, "card": doc.card })),
                    ReadPart::Passage => {
                        let Some(chunk) = chunk else {
                            return Ok(Err("part \"passage\" needs `chunk`, the chunk id from a topic hit".into()));
                        };
                        match lib.chunks(id)?.into_iter().find(|c| c.id == chunk) {
                            Some(c) => Ok(serde_json::json!({
                                "doc": id, "title": doc.document.title, "source": doc.document.source,
                                "chunk": c.id, "heading_path": c.heading_path, "page": c.page, "passage": c.text,
                            })),
                            None => Err(format!("chunk {chunk} is not a passage of document {id}")),
                        }
                    }
                })
            })
            .await??;
        to_json(&out)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "Check a citation: does `quote` occur in document `id` (whitespace and case \
        ignored)? Returns status \"verified\" with the passage's chunk id, heading path and page, or \
        \"not_found\" with the nearest passage. An unknown id is an error."
    )]
    async fn cite(&self, Parameters(args): Parameters<CiteArgs>) -> Result<String, String> {
        let id = args.id.get()?;
        let quote = args.quote;
        if squash(&quote).is_empty() {
            return Err("the quote is empty".into());
        }
        let result = self
            .with_library(move |lib| {
                let doc = lib.document(id)?;
                let chunks = lib.chunks(id)?;
                let (hit, nearest) = match cite::locate(&chunks, &quote) {
                    Located::Verified(c) => (Some(c), None),
                    Located::NotFound { nearest } => (None, nearest.map(|c| c.text.clone())),
                };
                Ok(CiteResult {
                    status: if hit.is_some() {
                        "verified"
                    } else {
                        "not_found"
                    },
                    doc: id,
                    title: doc.title,
                    source: doc.source,
                    chunk: hit.map(|c| c.id),
                    heading_path: hit.map(|c| c.heading_path.clone()).unwrap_or_default(),
                    page: hit.and_then(|c| c.page),
                    nearest_passage: nearest,
                })
            })
            .await?;
        to_json(&result)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "List every document with its id, title, kind, source, chunk count and state \
        (indexed, stale, or broken with broken_reason)."
    )]
    async fn list(&self) -> Result<String, String> {
        let docs = self.with_library(|lib| lib.list()).await?;
        to_json(&docs)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CarrelMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A local document library. `search` returns two separate lanes (subject: what a document is \
                 about; topic: what discusses it). Cite with `cite` before quoting.",
            )
    }
}

/// Serves the library on stdin/stdout until the client disconnects.
pub fn serve_stdio(library: Library) -> crate::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    runtime.block_on(async move {
        let service = CarrelMcp::new(library)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Mcp(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| Error::Mcp(e.to_string()))?;
        Ok(())
    })
}
