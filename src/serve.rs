//! `carrel serve`: the hub over MCP's streamable HTTP transport (rmcp's
//! server, on hyper). Every request must carry a read token
//! (`Authorization: Bearer TOKEN`); the token decides which libraries the
//! request may read (a [`Grant`] on the request, which the tools read). A
//! missing or wrong token is an HTTP 401 with a sentence, and is logged
//! with the peer's address; the token itself never is.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::kb::ReadToken;
use crate::library::hub::{Grant, Hub};
use crate::mcp::CarrelMcp;
use crate::{Error, Result};

/// The path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// The address `carrel serve` listens on unless told otherwise: this
/// machine only. Serving to others is a choice (`--addr 0.0.0.0:PORT`).
pub const DEFAULT_ADDR: &str = "127.0.0.1:7311";

/// Serves `hub` on `listener` until the process is stopped. `hosts` are the
/// `Host` headers accepted besides loopback's (a guard against DNS
/// rebinding; a hub bound to a LAN address adds that address).
pub fn serve_http(hub: Hub, listener: TcpListener, hosts: Vec<String>) -> Result<()> {
    crate::mcp::runtime()?.block_on(async move {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("the listening socket", e))?;
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Error::io("the listening socket", e))?;
        let hub = Arc::new(hub);
        let mut allowed: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(String::from)
            .collect();
        allowed.extend(hosts);
        let for_sessions = hub.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(CarrelMcp::remote(for_sessions.clone())),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_allowed_hosts(allowed),
        );
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            };
            let (hub, mcp) = (hub.clone(), mcp.clone());
            let service = hyper::service::service_fn(move |req| {
                let (hub, mcp) = (hub.clone(), mcp.clone());
                async move { Ok::<_, Infallible>(answer(&hub, &mcp, peer, req).await) }
            });
            tokio::spawn(async move {
                let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                if let Err(e) = served {
                    tracing::debug!("connection from {peer} ended: {e}");
                }
            });
        }
    })
}

type Mcp = StreamableHttpService<CarrelMcp, LocalSessionManager>;

/// One request: refused with a 401 unless its token opens a library, and
/// otherwise handed to MCP with the token's grant.
async fn answer(
    hub: &Arc<Hub>,
    mcp: &Mcp,
    peer: SocketAddr,
    mut req: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if req.uri().path() != MCP_PATH {
        return sentence(
            StatusCode::NOT_FOUND,
            &format!("Carrel answers MCP on {MCP_PATH} only"),
        );
    }
    let token = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| ReadToken::from_header(token));
    let checked = match token {
        None => Err(Error::Unauthorized(
            "no read token: send `Authorization: Bearer TOKEN`, with a token the library's owner made with `carrel kb token NAME`".into(),
        )),
        Some(token) => {
            let hub = hub.clone();
            tokio::task::spawn_blocking(move || hub.authenticate(&token))
                .await
                .unwrap_or_else(|e| Err(Error::Mcp(format!("the token check failed: {e}"))))
        }
    };
    match checked {
        Ok(grant) => {
            req.extensions_mut().insert::<Grant>(grant);
            mcp.handle(req).await
        }
        Err(e @ Error::Unauthorized(_)) => {
            tracing::warn!(
                "refused {} {} from {peer}: {e}",
                req.method(),
                req.uri().path()
            );
            let mut res = sentence(StatusCode::UNAUTHORIZED, &e.to_string());
            res.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer realm=\"carrel\""),
            );
            res
        }
        Err(e) => {
            tracing::error!("token check for {peer} failed: {e}");
            sentence(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
        }
    }
}

/// A plain-text answer that says what happened.
fn sentence(status: StatusCode, text: &str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut res = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *res.status_mut() = status;
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}
