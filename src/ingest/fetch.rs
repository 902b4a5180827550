//! One-shot URL fetch for `carrel add URL`, with the guards a local app owes
//! its user: addresses in special-purpose ranges (loopback, private,
//! link-local, …) are refused unless allowed, on every redirect hop too, and
//! size, time and redirect caps apply. Every refusal is a listed
//! [`BrokenReason`], never a silent skip.
//!
//! A host name is looked up once, by [`GuardedResolver`], and reqwest connects
//! only to the addresses that lookup returned and the guard checked: a DNS
//! answer that changes between a check and the connection (rebinding) has no
//! second lookup to change. Literal IP hosts skip DNS and are checked directly.

use std::fmt;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use crate::extract::{BrokenReason, Kind};
use crate::store::Validators;

/// Per-request time cap.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;

#[derive(Debug, Clone)]
pub struct FetchPolicy {
    pub allow_private: bool,
    pub max_bytes: u64,
    pub timeout: Duration,
    /// Where host names are looked up: [`SystemResolver`] outside tests.
    pub resolver: Arc<dyn HostResolver>,
}

/// Where fetches look host names up: the seam between the address guard and
/// DNS. Whatever it answers is checked, then connected to as is.
pub trait HostResolver: fmt::Debug + Send + Sync + 'static {
    /// Every address `host` resolves to.
    fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>>;

    /// Whether this resolver vouches for `ip` as public although it lies in a
    /// special-purpose range. Only test resolvers vouch, so that a loopback
    /// server can stand in for a public host; [`SystemResolver`] never does.
    fn vouches_for(&self, _ip: IpAddr) -> bool {
        false
    }
}

/// The system's DNS (getaddrinfo), as every other program on the machine sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        Ok((host, 0).to_socket_addrs()?.map(|a| a.ip()).collect())
    }
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

/// IPv4 ranges of the IANA special-purpose registry that are not the public
/// internet, as (network, prefix length, what it is).
const SPECIAL_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "0.0.0.0/8, \"this network\""),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "10.0.0.0/8, private"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "100.64.0.0/10, carrier-grade NAT",
    ),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "127.0.0.0/8, loopback"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "169.254.0.0/16, link-local",
    ),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "172.16.0.0/12, private"),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "192.0.0.0/24, IETF protocol assignments",
    ),
    (
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        "192.0.2.0/24, documentation",
    ),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "192.88.99.0/24, 6to4 relay anycast",
    ),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "192.168.0.0/16, private"),
    (
        Ipv4Addr::new(198, 18, 0, 0),
        15,
        "198.18.0.0/15, benchmarking",
    ),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "198.51.100.0/24, documentation",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "203.0.113.0/24, documentation",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "224.0.0.0/4, multicast"),
    (
        Ipv4Addr::new(255, 255, 255, 255),
        32,
        "255.255.255.255, broadcast",
    ),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "240.0.0.0/4, reserved"),
];

/// IPv6 ranges of the IANA special-purpose registry that are not the public
/// internet. IPv4-mapped addresses (`::ffff:0:0/96`) are not listed: they are
/// judged by the IPv4 address they carry.
const SPECIAL_V6: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "::, unspecified"),
    (Ipv6Addr::LOCALHOST, 128, "::1, loopback"),
    (Ipv6Addr::UNSPECIFIED, 96, "::/96, IPv4-compatible"),
    (
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0),
        96,
        "64:ff9b::/96, NAT64",
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "64:ff9b:1::/48, local NAT64",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "100::/64, discard-only",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "2001::/32, Teredo",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "2001::/23, IETF protocol assignments",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "2001:db8::/32, documentation",
    ),
    (
        Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0),
        16,
        "2002::/16, 6to4",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "3fff::/20, documentation",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "5f00::/16, segment routing",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "fc00::/7, unique local",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "fe80::/10, link-local",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "fec0::/10, site-local",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "ff00::/8, multicast",
    ),
];

/// The one owner of the address rule: the special-purpose range `ip` lies in
/// (loopback, private, link-local, documentation, transition, multicast …),
/// or `None` for a public address. Every fetch, redirect hop and resolved
/// name is judged here.
fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4).into();
            SPECIAL_V4
                .iter()
                .find(|(net, len, _)| in_prefix(bits, u32::from(*net).into(), *len, 32))
                .map(|(_, _, what)| *what)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return special_range(IpAddr::V4(v4));
            }
            let bits = u128::from(v6);
            SPECIAL_V6
                .iter()
                .find(|(net, len, _)| in_prefix(bits, u128::from(*net), *len, 128))
                .map(|(_, _, what)| *what)
        }
    }
}

/// Whether `a` and `net` share their first `len` of `width` bits.
fn in_prefix(a: u128, net: u128, len: u8, width: u32) -> bool {
    let shift = width - u32::from(len);
    a.checked_shr(shift).unwrap_or(0) == net.checked_shr(shift).unwrap_or(0)
}

/// What the guard needs: whether special-purpose addresses are allowed, and
/// the resolver (which may vouch for test addresses).
#[derive(Debug, Clone)]
struct Guard {
    allow_private: bool,
    resolver: Arc<dyn HostResolver>,
}

impl Guard {
    /// Refuses `ip`, which `host` named, when it lies in a special-purpose
    /// range and such addresses are not allowed.
    fn check(&self, host: &str, ip: IpAddr) -> Result<(), BrokenReason> {
        if self.allow_private || self.resolver.vouches_for(ip) {
            return Ok(());
        }
        match special_range(ip) {
            None => Ok(()),
            Some(range) if host == ip.to_string() => {
                Err(BrokenReason::PrivateAddress(format!("{ip} is in {range}")))
            }
            Some(range) => Err(BrokenReason::PrivateAddress(format!(
                "{host} is {ip}, in {range}"
            ))),
        }
    }

    /// Checks a URL whose host is a literal IP address, which reaches no
    /// resolver; a host name is checked when [`GuardedResolver`] looks it up.
    fn check_literal(&self, url: &url::Url) -> Result<(), BrokenReason> {
        let ip = match url.host() {
            None => return Err(BrokenReason::InvalidUrl("it has no host".into())),
            Some(url::Host::Domain(_)) => return Ok(()),
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        };
        self.check(&ip.to_string(), ip)
    }

    /// Looks `host` up once and checks every address it has; these, and only
    /// these, are what the connection may use.
    fn lookup(&self, host: &str) -> Result<Vec<IpAddr>, BrokenReason> {
        let addrs = self
            .resolver
            .lookup(host)
            .map_err(|e| BrokenReason::Unreachable(format!("{host} did not resolve: {e}")))?;
        if addrs.is_empty() {
            return Err(BrokenReason::Unreachable(format!(
                "{host} resolved to no address"
            )));
        }
        for &ip in &addrs {
            self.check(host, ip)?;
        }
        Ok(addrs)
    }
}

/// A refusal carried through reqwest's error chain (from the resolver or the
/// redirect policy) and recovered intact by [`refusal_in`].
#[derive(Debug)]
struct Refused(BrokenReason);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Refused {}

/// The refusal somewhere in `e`'s chain of causes, if the guard made one.
fn refusal_in(e: &(dyn std::error::Error + 'static)) -> Option<BrokenReason> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(Refused(reason)) = c.downcast_ref::<Refused>() {
            return Some(reason.clone());
        }
        cause = c.source();
    }
    None
}

/// reqwest's resolver for every host name it connects to, on the first hop and
/// on every redirect: one lookup through the [`HostResolver`], every address
/// checked, and exactly the checked addresses handed back.
#[derive(Debug)]
struct GuardedResolver(Guard);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            // The lookup blocks (getaddrinfo); keep it off the client's runtime
            // so the request's timeout still runs.
            let looked = tokio::task::spawn_blocking(move || guard.lookup(&host)).await?;
            let addrs = looked.map_err(Refused)?;
            // Port 0: reqwest puts in the URL's port, or the scheme's.
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
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
    let guard = Guard {
        allow_private: policy.allow_private,
        resolver: policy.resolver.clone(),
    };
    guard.check_literal(&url)?;
    let client = guarded_client(guard, policy)?;
    let mut request = client.get(url);
    if let Some(etag) = &known.etag {
        request = request.header(reqwest::header::IF_NONE_MATCH, etag);
    }
    if let Some(lm) = &known.last_modified {
        request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
    }
    let response = request.send().map_err(|e| {
        if let Some(refused) = refusal_in(&e) {
            refused
        } else if e.is_timeout() {
            BrokenReason::Unreachable(format!("timed out after {} s", policy.timeout.as_secs()))
        } else {
            BrokenReason::Unreachable(error_chain(&e))
        }
    })?;
    read_response(response, policy)
}

/// The client for one fetch: every host it connects to, first or redirected
/// to, goes through `guard`, and so does every redirect's literal address.
fn guarded_client(
    guard: Guard,
    policy: &FetchPolicy,
) -> Result<reqwest::blocking::Client, BrokenReason> {
    let redirect_guard = guard.clone();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        let refusal = match redirect_guard.check_literal(attempt.url()) {
            Ok(()) => return attempt.follow(),
            Err(BrokenReason::PrivateAddress(why)) => BrokenReason::PrivateAddress(format!(
                "it redirected to {}, and {why}",
                attempt.url()
            )),
            Err(reason) => reason,
        };
        attempt.error(Refused(refusal))
    });
    let mut client = reqwest::blocking::Client::builder()
        .timeout(policy.timeout)
        .redirect(redirects)
        .user_agent(concat!("carrel/", env!("CARGO_PKG_VERSION")));
    if !policy.allow_private {
        // A proxy would connect on our behalf to addresses the guard never saw.
        client = client.no_proxy();
    }
    let client = client
        .dns_resolver(Arc::new(GuardedResolver(guard)))
        .build()
        .map_err(|e| BrokenReason::Unreachable(e.to_string()))?;
    Ok(client)
}

/// The response's body and validators, or why not: a 304 is
/// [`Fetch::NotModified`], anything else but a success is an error, and so
/// is a body over the policy's size cap.
fn read_response(
    response: reqwest::blocking::Response,
    policy: &FetchPolicy,
) -> Result<Fetch, BrokenReason> {
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

    /// One sample per special-purpose range, with the range it must be
    /// refused as.
    const SPECIAL_SAMPLES: &[&str] = &[
        "0.1.2.3",
        "10.1.2.3",
        "100.64.0.1",
        "127.0.0.1",
        "169.254.169.254",
        "172.16.5.4",
        "192.0.0.8",
        "192.0.2.1",
        "192.88.99.1",
        "192.168.1.1",
        "198.18.0.1",
        "198.19.255.254",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.251",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "::8.8.8.8",
        "64:ff9b::7f00:1",
        "64:ff9b::808:808",
        "64:ff9b:1::1",
        "100::1",
        "2001::1",
        "2001:2::1",
        "2001:1ff::1",
        "2001:db8::1",
        "2002:7f00:1::1",
        "2002:808:808::1",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "fec0::1",
        "ff02::1",
        "3fff::1",
        "5f00::1",
    ];

    /// Public addresses next to the special ranges: parsed, never contacted.
    const PUBLIC_SAMPLES: &[&str] = &[
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "100.128.0.1",
        "172.32.0.1",
        "198.20.0.1",
        "223.255.255.255",
        "2606:4700::1111",
        "2a00:1450:4001::1",
        "::ffff:8.8.8.8",
        "2001:200::1",
        "2003::1",
        "2620:fe::fe",
    ];

    #[test]
    fn every_special_purpose_range_is_refused() {
        let let_through: Vec<&str> = SPECIAL_SAMPLES
            .iter()
            .copied()
            .filter(|ip| special_range(ip.parse().unwrap()).is_none())
            .collect();
        assert!(let_through.is_empty(), "let through: {let_through:?}");
        let refused: Vec<&str> = PUBLIC_SAMPLES
            .iter()
            .copied()
            .filter(|ip| special_range(ip.parse().unwrap()).is_some())
            .collect();
        assert!(refused.is_empty(), "public but refused: {refused:?}");
    }

    /// Answers every name with fixed addresses; vouches for none.
    #[derive(Debug)]
    struct Fixed(Vec<IpAddr>);

    impl HostResolver for Fixed {
        fn lookup(&self, _host: &str) -> io::Result<Vec<IpAddr>> {
            Ok(self.0.clone())
        }
    }

    fn guard(allow_private: bool, answers: &[&str]) -> Guard {
        Guard {
            allow_private,
            resolver: Arc::new(Fixed(answers.iter().map(|a| a.parse().unwrap()).collect())),
        }
    }

    #[test]
    fn a_name_with_any_special_address_is_refused_whole() {
        let g = guard(false, &["8.8.8.8", "127.0.0.1"]);
        assert_eq!(
            g.lookup("mixed.test"),
            Err(BrokenReason::PrivateAddress(
                "mixed.test is 127.0.0.1, in 127.0.0.0/8, loopback".into()
            ))
        );
        let g = guard(false, &["8.8.8.8", "2606:4700::1111"]);
        assert_eq!(g.lookup("public.test").unwrap().len(), 2);
        let g = guard(true, &["127.0.0.1"]);
        assert_eq!(g.lookup("mine.test").unwrap().len(), 1, "allowed");
        assert!(matches!(
            guard(false, &[]).lookup("nowhere.test"),
            Err(BrokenReason::Unreachable(_))
        ));
    }

    #[test]
    fn literal_hosts_in_every_spelling_are_checked() {
        let g = guard(false, &[]);
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]:8080/",
            "http://[::ffff:7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[fec0::1]/",
            "http://198.18.0.1/",
        ] {
            let url = url::Url::parse(url).unwrap();
            assert!(
                matches!(g.check_literal(&url), Err(BrokenReason::PrivateAddress(_))),
                "{url}"
            );
        }
        for url in [
            "http://8.8.8.8/",
            "http://[2606:4700::1111]/",
            "http://public.test/",
        ] {
            let url = url::Url::parse(url).unwrap();
            assert_eq!(g.check_literal(&url), Ok(()), "{url}");
        }
    }

    #[test]
    fn non_http_schemes_are_refused() {
        let policy = FetchPolicy {
            allow_private: false,
            max_bytes: 10,
            timeout: FETCH_TIMEOUT,
            resolver: Arc::new(SystemResolver),
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
