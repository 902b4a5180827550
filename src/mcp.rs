//! The libraries over the Model Context Protocol, read only: on stdio
//! (`carrel mcp`, a local process that may read every library it serves)
//! and on streamable HTTP (`carrel serve`, where each request's read token
//! decides which libraries it may read: [`crate::serve`]). Five tools, each
//! a thin call into the [`Hub`]: `libraries` (each with its owner and
//! document count), `search` (both lanes, never merged, every hit with its
//! library and owner, each lane's `below_floor` tail apart, which is not an
//! answer), `read` (card, text or one passage), `cite` (is this quote
//! really in that document, and where) and `list`. Every failure is a tool
//! error with a sentence, never an empty result: an unknown library lists
//! the known ones, and a library that cannot be opened says why.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

use crate::answer::cite::{self, Located, squash};
use crate::library::hub::{Grant, Hub, Member, Selection};
use crate::{Error, Library};

/// A document id: an integer such as `12`, or the same digits as a string
/// (`"12"`). Nothing else is accepted.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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

/// Which libraries to search: a list of names (`["research", "notes"]`),
/// one name, or `"*"` for every library you may read.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum KbArg {
    List(Vec<String>),
    One(String),
}

impl KbArg {
    fn selection(self) -> Selection {
        match self {
            KbArg::One(s) if s.trim() == "*" => Selection::All,
            KbArg::One(s) => Selection::Named(vec![s]),
            KbArg::List(names) => Selection::Named(names),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for, in words.
    pub query: String,
    /// The libraries to search (`libraries` lists them): a list of names, or
    /// "*" for all of them. May be left out only when one library is served.
    #[serde(default)]
    pub kb: Option<KbArg>,
    /// Hits per lane (default 10).
    #[serde(default)]
    pub top_k: Option<usize>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// The library to list; may be left out only when one is served.
    #[serde(default)]
    pub kb: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
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

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The library that holds the document (the `kb` of the hit); may be
    /// left out only when one library is served.
    #[serde(default)]
    pub kb: Option<String>,
    pub id: DocIdArg,
    #[serde(default)]
    pub part: ReadPart,
    /// The chunk id of the passage, with `part: "passage"` (from a topic hit).
    #[serde(default)]
    pub chunk: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CiteArgs {
    /// The library that holds the document; may be left out only when one
    /// library is served.
    #[serde(default)]
    pub kb: Option<String>,
    pub id: DocIdArg,
    /// The exact words to check; whitespace differences are ignored.
    pub quote: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct VerifyArgs {
    /// The library to check; may be left out only when one library is
    /// served.
    #[serde(default)]
    pub kb: Option<String>,
    /// The line to look for, word for word; whitespace and case are ignored.
    pub line: String,
}

#[derive(Debug, Serialize)]
struct CiteResult {
    status: &'static str,
    kb: Option<crate::kb::Kb>,
    owner: Option<String>,
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
    hub: Arc<Hub>,
    /// What a request that came without HTTP may read: everything, on
    /// stdio. Over HTTP the grant travels with each request ([`Grant`] in
    /// the request's extensions, put there by the token check).
    local: Grant,
    tool_router: ToolRouter<Self>,
}

fn to_json<T: Serialize>(v: &T) -> Result<String, String> {
    serde_json::to_string_pretty(v).map_err(|e| format!("could not encode the result: {e}"))
}

/// Where a library's answer comes from, on every read and list.
fn attributed(member: &Member, value: serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::json!({ "kb": member.kb(), "owner": member.owner() });
    if let (Some(out), serde_json::Value::Object(v)) = (out.as_object_mut(), value) {
        out.extend(v);
    }
    out
}

#[tool_router]
impl CarrelMcp {
    /// Every library of `hub`, for a local caller (stdio).
    pub fn local(hub: Arc<Hub>) -> Self {
        CarrelMcp {
            hub,
            local: Grant::All,
            tool_router: Self::tool_router(),
        }
    }

    /// For HTTP: each request reads only what its token's grant allows; a
    /// request without one reads nothing.
    pub fn remote(hub: Arc<Hub>) -> Self {
        CarrelMcp {
            hub,
            local: Grant::Only(Default::default()),
            tool_router: Self::tool_router(),
        }
    }

    /// The grant of the request: the one the token check put on its HTTP
    /// request, else the local one.
    fn grant(&self, ext: &rmcp::model::Extensions) -> Grant {
        ext.get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<Grant>())
            .cloned()
            .unwrap_or_else(|| self.local.clone())
    }

    /// Passes a tool call on to the hub that serves library `kb`, when it is
    /// one of another hub (only a local caller sees those): its answer, or
    /// none for a library here.
    async fn passed_on<A: Serialize>(
        &self,
        kb: Option<&str>,
        grant: &Grant,
        tool: &'static str,
        args: &A,
    ) -> Result<Option<String>, String> {
        let (hub, grant) = (self.hub.clone(), grant.clone());
        let kb = kb.map(str::to_string);
        let args =
            serde_json::to_value(args).map_err(|e| format!("could not pass the call on: {e}"))?;
        tokio::task::spawn_blocking(move || match hub.remote(kb.as_deref(), &grant)? {
            Some(remote) => remote.forward(tool, args).map(Some),
            None => Ok(None),
        })
        .await
        .map_err(|e| format!("the library task failed: {e}"))?
        .map_err(|e| e.to_string())
    }

    /// Runs work on one library off the async runtime (ONNX and SQLite block).
    async fn with_library<T: Send + 'static>(
        &self,
        kb: Option<String>,
        grant: Grant,
        f: impl FnOnce(&Member, &mut Library) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, String> {
        let hub = self.hub.clone();
        tokio::task::spawn_blocking(move || {
            let member = hub.one(kb.as_deref(), &grant)?;
            let mut lib = crate::fault::lock(member.library()?);
            f(member, &mut lib)
        })
        .await
        .map_err(|e| format!("the library task failed: {e}"))?
        .map_err(|e| e.to_string())
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "The libraries you can search: each with its `kb` name (what `search`, `read`, \
        `cite` and `list` take), title, owner, description, document count and the scorers it is \
        asked with, or state `unavailable` with the reason it cannot be asked."
    )]
    async fn libraries(&self, ext: rmcp::model::Extensions) -> Result<String, String> {
        let (hub, grant) = (self.hub.clone(), self.grant(&ext));
        let list = tokio::task::spawn_blocking(move || hub.libraries(&grant))
            .await
            .map_err(|e| format!("the library task failed: {e}"))?;
        to_json(&list)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "Search libraries with both lanes, returned separately and never merged: \
        `subject` answers \"is this document what the query is ABOUT?\" (cards, cross-encoder), \
        `topic` answers \"which documents DISCUSS it?\" (best passage per document, heading veto). \
        `kb` names the libraries to search: a list of names from `libraries`, or \"*\" for all of \
        them (it may be left out only when one library is served). `route` says how each library \
        took part (answered, unavailable or failed, with the reason, and its time). Each lane lists \
        its state in each library (ready, weak, unavailable with a reason, failed) and its hits in \
        `groups`: hits share a group only when one scorer placed them all (`scorer`) and they \
        stand the same way (`standing`: `hit`, `weak`, or `below_floor`, which is not an answer \
        and should not be cited as a match). Every hit has `kb` and `owner` (its library and who \
        keeps it), doc id, title, locations (source path or URL), heading path, page and passage. \
        A lane with state `ready` and no hits means the library was searched and nothing matched; \
        `topic_held_back` names each library whose topic lane held back because none of its \
        passages uses at least half the query's words (`kb`, `why`), its passages left in \
        `below_floor`."
    )]
    async fn search(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<String, String> {
        let top_k = args.top_k.unwrap_or(10).clamp(1, 50);
        let (hub, grant) = (self.hub.clone(), self.grant(&ext));
        let result = tokio::task::spawn_blocking(move || {
            let members = match args.kb {
                Some(kb) => hub.select(&kb.selection(), &grant)?,
                None => vec![hub.one(None, &grant)?],
            };
            hub.search(&members, &args.query, top_k)
        })
        .await
        .map_err(|e| format!("the library task failed: {e}"))?
        .map_err(|e| e.to_string())?;
        to_json(&result)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "Read one document by id (an integer, or its digits as a string) in library \
        `kb` (the hit's `kb`; may be left out only when one library is served). part=\"text\" (default) gives the full extracted text with headings; part=\"card\" the card; \
        part=\"passage\" with chunk=<chunk id from a topic hit> gives that one passage with its \
        heading path and page. An unknown id, a broken document or a chunk of another document is an error."
    )]
    async fn read(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(args): Parameters<ReadArgs>,
    ) -> Result<String, String> {
        let grant = self.grant(&ext);
        if let Some(text) = self
            .passed_on(args.kb.as_deref(), &grant, "read", &args)
            .await?
        {
            return Ok(text);
        }
        let id = args.id.get()?;
        let part = args.part;
        let chunk = args.chunk;
        let out = self
            .with_library(args.kb, grant, move |member, lib| {
                let doc = lib.read(id)?;
                if let Some(reason) = &doc.document.broken_reason {
                    return Ok(Err(format!("document {id} is broken and has no text: {reason}")));
                }
                let value = match part {
                    ReadPart::Text => serde_json::json!({
                        "doc": id, "title": doc.document.title, "source": doc.document.source, "sections": doc.sections,
                    }),
                    ReadPart::Card => serde_json::json!({ "doc": id, "title": doc.document.title, "card": doc.card }),
                    ReadPart::Passage => {
                        let Some(chunk) = chunk else {
                            return Ok(Err("part \"passage\" needs `chunk`, the chunk id from a topic hit".into()));
                        };
                        match lib.chunks(id)?.into_iter().find(|c| c.id == chunk) {
                            Some(c) => serde_json::json!({
                                "doc": id, "title": doc.document.title, "source": doc.document.source,
                                "chunk": c.id, "heading_path": c.heading_path, "page": c.page, "passage": c.text,
                            }),
                            None => return Ok(Err(format!("chunk {chunk} is not a passage of document {id}"))),
                        }
                    }
                };
                Ok(Ok(attributed(member, value)))
            })
            .await??;
        to_json(&out)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "Check a citation: does `quote` occur in document `id` of library `kb` \
        (whitespace and case ignored)? Returns status \"verified\" with the passage's chunk id, heading path and page, or \
        \"not_found\" with the nearest passage. An unknown id is an error."
    )]
    async fn cite(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(args): Parameters<CiteArgs>,
    ) -> Result<String, String> {
        let grant = self.grant(&ext);
        if let Some(text) = self
            .passed_on(args.kb.as_deref(), &grant, "cite", &args)
            .await?
        {
            return Ok(text);
        }
        let id = args.id.get()?;
        let quote = args.quote;
        if squash(&quote).is_empty() {
            return Err("the quote is empty".into());
        }
        let result = self
            .with_library(args.kb, grant, move |member, lib| {
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
                    kb: member.kb().cloned(),
                    owner: member.owner().map(str::to_string),
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
        description = "Check a line against a whole library: does `line` occur word for word \
        (whitespace and case ignored) in any document of library `kb`? Returns state \"found\" with \
        every place (doc id, title, source, chunk id, heading path, page, passage), or \
        \"not_in_library\" with the nearest passage. For \"did X say '...'?\": a line that is not \
        there is not there."
    )]
    async fn verify(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(args): Parameters<VerifyArgs>,
    ) -> Result<String, String> {
        let grant = self.grant(&ext);
        if let Some(text) = self
            .passed_on(args.kb.as_deref(), &grant, "verify", &args)
            .await?
        {
            return Ok(text);
        }
        let line = args.line;
        if squash(&line).is_empty() {
            return Err("the line is empty".into());
        }
        let out = self
            .with_library(args.kb, grant, move |member, lib| {
                Ok(attributed(
                    member,
                    serde_json::json!(lib.verify_line(&line)?),
                ))
            })
            .await?;
        to_json(&out)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "List every document of library `kb` (may be left out only when one library \
        is served) with its id, title, kind, source, chunk count and state (indexed, stale, or \
        broken with broken_reason)."
    )]
    async fn list(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<String, String> {
        let grant = self.grant(&ext);
        if let Some(text) = self
            .passed_on(args.kb.as_deref(), &grant, "list", &args)
            .await?
        {
            return Ok(text);
        }
        let out = self
            .with_library(args.kb, grant, |member, lib| {
                Ok(serde_json::json!({ "kb": member.kb(), "owner": member.owner(), "documents": lib.list()? }))
            })
            .await?;
        to_json(&out)
    }

    #[tool(
        annotations(read_only_hint = true),
        description = "The foreign sources of library `kb` (someone else's vector collection, asked \
        beside the library; may be left out only when one library is served): each with \
        `skip_reason` (null when retrieval reads it), `status` (the sentence), `change` (where the \
        condition is changed) and its last use. Enabled is not the same as read: read `status`. \
        Only a local caller sees them."
    )]
    async fn sources(
        &self,
        ext: rmcp::model::Extensions,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<String, String> {
        let grant = self.grant(&ext);
        if !matches!(grant, Grant::All) {
            return Err("a library's foreign sources are shown only to a local caller".into());
        }
        let out = self
            .with_library(args.kb, grant, |member, lib| {
                Ok(serde_json::json!({
                    "kb": member.kb(), "owner": member.owner(), "sources": lib.foreign_source_views()?,
                }))
            })
            .await?;
        to_json(&out)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CarrelMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Document libraries, each kept by an owner. `libraries` lists them; `search` names the ones \
                 to ask (`kb`) and returns two separate lanes (subject: what a document is about; topic: what \
                 discusses it), every hit with its library and owner. Cite with `cite` before quoting, and \
                 say whose library a quote came from.",
            )
    }
}

/// The runtime a server runs on: two workers (the tools' library work runs
/// on blocking threads of its own).
pub(crate) fn runtime() -> crate::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))
}

/// Serves `hub` on stdin/stdout until the client disconnects.
pub fn serve_stdio(hub: Hub) -> crate::Result<()> {
    runtime()?.block_on(async move {
        let service = CarrelMcp::local(Arc::new(hub))
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
