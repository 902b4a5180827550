//! One-shot URL fetch for `carrel add URL`, with the guards a local app owes
//! its user: private, loopback and link-local addresses are refused unless
//! allowed (also after every redirect), and size, time and redirect caps.
//! Every refusal is a listed [`BrokenReason`], never a silent skip.

use std::io::Read;
use std::net::{IpAddr, ToSocketAddrs};
use std::time::Duration;

use crate::extract::{BrokenReason, Kind};
use crate::store::Validators;

/// Per-request time cap.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchPolicy {
    pub allow_private: bool,
    pub max_bytes: u64,
    pub timeout: Duration,
}

pub struct Fetched {
    pub bytes: Vec<u8>,
    /// The kind the server's Content-Type names, if it names one we read.
    pub kind: Option<Kind>,
    pub validators: Validators,
}

/// What a (conditional) fetch found.
pub enum Fetch {
    /// The server said 304: the version we hold is current.
    NotModified,
    Fetched(Fetched),
}

/// True for addresses that are not the public internet: loopback, private
/// ranges, link-local, unspecified, unique-local and multicast.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1]) // carrier-grade NAT
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00 // unique local
                || (v6.segments()[0] & 0xffc0) == 0xfe80 // link-local
                || v6.to_ipv4_mapped().is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

/// Refuses a URL whose host resolves to a private address (when not allowed).
fn check_host(url: &url::Url, allow_private: bool) -> Result<(), BrokenReason> {
    if allow_private {
        return Ok(());
    }
    let host = url
        .host_str()
        .ok_or_else(|| BrokenReason::InvalidUrl("it has no host".into()))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| BrokenReason::Unreachable(format!("{host} did not resolve: {e}")))?;
    for addr in addrs {
        if is_private(addr.ip()) {
            return Err(BrokenReason::PrivateAddress(format!(
                "{host} is {}",
                addr.ip()
            )));
        }
    }
    Ok(())
}

/// Fetches `raw` under the policy's guards. With `known` validators from the
/// last fetch the request is conditional, and a 304 is [`Fetch::NotModified`].
pub fn fetch(raw: &str, policy: &FetchPolicy, known: &Validators) -> Result<Fetch, BrokenReason> {
    let url = url::Url::parse(raw).map_err(|e| BrokenReason::InvalidUrl(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BrokenReason::InvalidUrl(format!(
            "scheme `{}` is not http or https",
            url.scheme()
        )));
    }
    check_host(&url, policy.allow_private)?;
    let allow_private = policy.allow_private;
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match check_host(attempt.url(), allow_private) {
            Ok(()) => attempt.follow(),
            Err(reason) => attempt.error(format!("redirect refused: {reason}")),
        }
    });
    let client = reqwest::blocking::Client::builder()
        .timeout(policy.timeout)
        .redirect(redirects)
        .user_agent(concat!("carrel/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| BrokenReason::Unreachable(e.to_string()))?;
    let mut request = client.get(url);
    if let Some(etag) = &known.etag {
        request = request.header(reqwest::header::IF_NONE_MATCH, etag);
    }
    if let Some(lm) = &known.last_modified {
        request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
    }
    let response = request.send().map_err(|e| {
        if e.is_timeout() {
            BrokenReason::Unreachable(format!("timed out after {} s", policy.timeout.as_secs()))
        } else {
            BrokenReason::Unreachable(error_chain(&e))
        }
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_MODIFIED {
        return Ok(Fetch::NotModified);
    }
    if !status.is_success() {
        return Err(BrokenReason::HttpStatus(status.as_u16()));
    }
    let too_large = |bytes| BrokenReason::TooLarge {
        bytes,
        cap: policy.max_bytes,
    };
    if let Some(len) = response.content_length()
        && len > policy.max_bytes
    {
        return Err(too_large(len));
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    let kind = header(reqwest::header::CONTENT_TYPE)
        .as_deref()
        .and_then(Kind::from_mime);
    let validators = Validators {
        etag: header(reqwest::header::ETAG),
        last_modified: header(reqwest::header::LAST_MODIFIED),
    };
    let mut bytes = Vec::new();
    response
        .take(policy.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| BrokenReason::Unreachable(format!("the download broke off: {e}")))?;
    if bytes.len() as u64 > policy.max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(Fetch::Fetched(Fetched {
        bytes,
        kind,
        validators,
    }))
}

/// reqwest's top-level message is "error sending request"; the cause says why.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        msg = format!("{msg}: {s}");
        source = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.20.0.1",
            "169.254.1.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "100.64.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "100.128.0.1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn non_http_schemes_are_refused() {
        let policy = FetchPolicy {
            allow_private: false,
            max_bytes: 10,
            timeout: FETCH_TIMEOUT,
        };
        assert!(matches!(
            fetch("file:///etc/passwd", &policy, &Validators::default()),
            Err(BrokenReason::InvalidUrl(_))
        ));
        assert!(matches!(
            fetch("http://127.0.0.1:9/", &policy, &Validators::default()),
            Err(BrokenReason::PrivateAddress(_))
        ));
    }
}
