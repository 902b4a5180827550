//! A library on another machine's hub (`carrel serve`), asked with rmcp's
//! client over MCP's streamable HTTP transport, with the read token its
//! owner gave. Each call is a session of its own, on a thread and runtime
//! of its own, so it can be made from any thread (the hub's search threads,
//! an MCP tool's blocking worker, the CLI).
//!
//! Failures say which: the hub could not be reached (`Unreachable`), or it
//! answered with an error (`Remote`, its sentence kept).

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::ClientInitializeError;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use serde::Deserialize;

use super::shared::{Scorer, Scorers, SharedMatch};
use crate::error::{Error, Result};
use crate::kb::{Identity, Kb};

/// How long a hub may take for one call, connection included: a search of
/// a large library takes well under a second.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A library another hub serves.
#[derive(Clone)]
pub struct Remote {
    /// The hub's MCP endpoint, `http://host:port/mcp`.
    pub url: String,
    /// The library's name on that hub.
    pub kb: Kb,
    token: String,
}

/// Whether `url` can be a hub's address: an http(s) URL with a host. Said
/// before anything is asked, so a typo is not reported as a hub that
/// could not be reached.
pub fn check_url(url: &str) -> Result<()> {
    let bad = |reason: &str| Error::BadHubUrl {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let parsed = url::Url::parse(url).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => bad("it must start with http:// or https://"),
        e => bad(&e.to_string()),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    Ok(())
}

/// A library as another hub's `libraries` tool lists it.
#[derive(Debug, Clone, Deserialize)]
struct Listed {
    kb: Option<Kb>,
    title: Option<String>,
    owner: Option<String>,
    description: Option<String>,
    state: String,
    documents: Option<i64>,
    reason: Option<String>,
    scorers: Option<Scorers>,
}

/// What another hub says of one of its libraries.
#[derive(Debug, Clone)]
pub struct There {
    pub identity: Identity,
    pub documents: i64,
    /// The scorers it is asked with there, when the hub says.
    pub scorers: Option<Scorers>,
}

impl There {
    /// The name of the embedder its vectors are made with, when its hub
    /// said (its fingerprint is `name@sha`).
    pub fn embedder_name(&self) -> Option<String> {
        match &self.scorers.as_ref()?.embedder {
            Scorer::Known { id } => id.split('@').next().map(str::to_string),
            Scorer::Unknown { .. } => None,
        }
    }
}

impl Remote {
    pub fn new(url: &str, kb: Kb, token: &str) -> Remote {
        Remote {
            url: url.trim().to_string(),
            kb,
            token: token.trim().to_string(),
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// What the library says about itself on its hub, and its document
    /// count; an error when the hub cannot be reached, refuses the token, or
    /// does not serve this library to it.
    pub fn identity(&self) -> Result<There> {
        let text = self.call("libraries", serde_json::json!({}))?;
        let listed: Vec<Listed> = serde_json::from_str(&text)
            .map_err(|e| self.garbled(format!("its library list: {e}")))?;
        let Some(l) = listed.into_iter().find(|l| l.kb.as_ref() == Some(&self.kb)) else {
            return Err(Error::Remote {
                url: self.url.clone(),
                reason: format!(
                    "it serves no library `{}` to this token (ask its owner for a token that opens it)",
                    self.kb
                ),
            });
        };
        if l.state != "ready" {
            return Err(Error::Remote {
                url: self.url.clone(),
                reason: format!(
                    "its library `{}` is {}: {}",
                    self.kb,
                    l.state,
                    l.reason.unwrap_or_default()
                ),
            });
        }
        let identity = Identity {
            kb: self.kb.clone(),
            title: l.title.unwrap_or_else(|| self.kb.to_string()),
            owner: l.owner,
            description: l.description.unwrap_or_default(),
        };
        Ok(There {
            identity,
            documents: l.documents.unwrap_or(0),
            scorers: l.scorers,
        })
    }

    /// Both lanes of this library for `query`, as its hub answers them.
    /// Every hit must be attributed to this library: a hub that answers
    /// for another is an error, never a quietly mislabelled hit.
    pub fn search(&self, query: &str, top_k: usize) -> Result<SharedMatch> {
        let text = self.call(
            "search",
            serde_json::json!({ "query": query, "kb": [self.kb], "top_k": top_k }),
        )?;
        let found: SharedMatch = serde_json::from_str(&text)
            .map_err(|e| self.garbled(format!("its search answer: {e}")))?;
        let subject = found
            .subject
            .groups
            .iter()
            .flat_map(|g| &g.hits)
            .map(|h| &h.kb);
        let topic = found
            .topic
            .groups
            .iter()
            .flat_map(|g| &g.hits)
            .map(|h| &h.kb);
        if let Some(other) = subject.chain(topic).find(|kb| **kb != self.kb) {
            return Err(self.garbled(format!(
                "it answered with a hit of library `{other}`, not `{}`",
                self.kb
            )));
        }
        Ok(found)
    }

    /// One tool on the hub, with `args` and `kb` set to this library: its
    /// text, or the hub's error as an error.
    pub fn forward(&self, tool: &str, mut args: serde_json::Value) -> Result<String> {
        if let Some(map) = args.as_object_mut() {
            map.insert("kb".into(), serde_json::json!(self.kb));
        }
        self.call(tool, args)
    }

    fn call(&self, tool: &str, args: serde_json::Value) -> Result<String> {
        let arguments = match args {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let request = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(self.token.clone());
        let unreachable = |reason: String| Error::Unreachable {
            url: self.url.clone(),
            reason,
        };
        let asked = std::thread::scope(|s| {
            s.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| unreachable(format!("no runtime for the call: {e}")))?;
                runtime.block_on(async {
                    let session = async {
                        let transport = StreamableHttpClientTransport::from_config(config);
                        let client = ClientConfig::default()
                            .serve(transport)
                            .await
                            .map_err(|e| self.failed(e))?;
                        let result = client
                            .call_tool(request)
                            .await
                            .map_err(|e| unreachable(e.to_string()));
                        let _ = client.cancel().await;
                        result
                    };
                    tokio::time::timeout(CALL_TIMEOUT, session)
                        .await
                        .map_err(|_| {
                            unreachable(format!("no answer within {} s", CALL_TIMEOUT.as_secs()))
                        })?
                })
            })
            .join()
            .unwrap_or_else(|_| Err(unreachable("the call panicked".into())))
        })?;
        let text: String = asked
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        if asked.is_error == Some(true) {
            return Err(Error::Remote {
                url: self.url.clone(),
                reason: text,
            });
        }
        Ok(text)
    }

    /// A failed connection as a sentence, read from the transport's typed
    /// error (never its words, which hold the URL: a hub on port 35401 is
    /// not a hub that answered 401). A refused token is the hub's answer;
    /// anything else is a hub that could not be reached.
    fn failed(&self, error: ClientInitializeError) -> Error {
        if error.is_authorization_required() {
            return Error::Remote {
                url: self.url.clone(),
                reason: "it refused the read token (HTTP 401): ask the library's owner for a token that opens it".into(),
            };
        }
        let refused = match &error {
            ClientInitializeError::TransportError { error, .. } => matches!(
                error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
                Some(StreamableHttpError::Client(e)) if e.is_connect() || e.is_request()
            ),
            _ => false,
        };
        // The transport's own words name its worker types; a person needs
        // to know that nothing answered there.
        let reason = if refused {
            "nothing answered at that address: is `carrel serve` running there, and is the address right?".to_string()
        } else {
            error.to_string()
        };
        Error::Unreachable {
            url: self.url.clone(),
            reason,
        }
    }

    fn garbled(&self, what: String) -> Error {
        Error::Remote {
            url: self.url.clone(),
            reason: format!("the hub's answer could not be read ({what})"),
        }
    }
}

/// A passage of this library is still in the document it names when its
/// hub finds its words there (`cite`).
impl crate::answer::Holder for Remote {
    fn holds(&self, p: &crate::answer::Passage) -> Result<bool> {
        let quote: String = p.text.chars().take(200).collect();
        let text = self.forward("cite", serde_json::json!({ "id": p.doc, "quote": quote }))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| self.garbled(format!("its citation check: {e}")))?;
        Ok(v["status"] == "verified" && v["doc"] == p.doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing listens on port 1; the URL holds "401" on purpose: the
    /// sentence comes from the transport's typed error, not from its words.
    #[test]
    fn a_hub_that_is_not_there_is_unreachable_whatever_its_url_says() {
        let kb = Kb::parse("skeptics").unwrap();
        let remote = Remote::new("http://127.0.0.1:1/401/mcp", kb, "token");
        match remote.identity() {
            Err(Error::Unreachable { reason, .. }) => {
                assert!(reason.contains("nothing answered"), "{reason}")
            }
            other => panic!("expected unreachable, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_hub_address_must_be_an_http_url_with_a_host() {
        assert!(check_url("http://their-machine:7311/mcp").is_ok());
        assert!(check_url("https://10.0.0.2/mcp").is_ok());
        for bad in [
            "notaurl",
            "ftp://host/mcp",
            "file:///mcp",
            "their-machine:7311/mcp",
        ] {
            let err = check_url(bad).unwrap_err().to_string();
            assert!(err.contains("is not a hub's address"), "{bad}: {err}");
        }
    }
}
