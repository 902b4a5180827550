//! `carrel add URL` against a real HTTP server on loopback: fetched pages are
//! indexed, and every refusal (private address, HTTP error, unreachable host,
//! size cap) is a listed broken reason. A scripted resolver plays DNS that
//! rebinds a name to loopback, and redirects point at loopback.

mod common;

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use carrel::ingest::HostResolver;
use carrel::{Library, LibraryConfig};
use common::*;

const PAGE: &str = "<html><head><title>Pond Survey Handbook</title></head><body><main><h1>Pond Survey Handbook</h1>\
<p>This handbook explains how volunteers survey garden ponds for newts and dragonfly larvae.</p></main></body></html>";

/// Serves a few fixed routes on 127.0.0.1 for at most `max` connections.
fn serve(max: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(max) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, ctype, body, extra) = match path.as_str() {
                "/page" => (
                    "200 OK",
                    "text/html; charset=utf-8",
                    PAGE.to_string(),
                    String::new(),
                ),
                "/moved" => (
                    "302 Found",
                    "text/plain",
                    String::new(),
                    "Location: /page\r\n".to_string(),
                ),
                "/big" => ("200 OK", "text/plain", "x".repeat(5000), String::new()),
                _ => (
                    "404 Not Found",
                    "text/plain",
                    "no".to_string(),
                    String::new(),
                ),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn loopback_urls_are_refused_unless_allowed() {
    let base = serve(4);
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open(lib_dir.path());
    let report = lib.add(&[format!("{base}/page")], &mut |_| {}).unwrap();
    assert_eq!(report.added, 0);
    assert!(
        report.failed[0].reason.contains("--allow-private"),
        "{}",
        report.failed[0].reason
    );
    assert_eq!(
        lib.list().unwrap()[0].broken_code.as_deref(),
        Some("private_address")
    );
}

#[test]
fn fetched_pages_are_indexed_and_failures_listed() {
    let base = serve(16);
    let lib_dir = tempfile::tempdir().unwrap();
    let mut config = LibraryConfig::new(lib_dir.path().to_path_buf(), models());
    config.limits.allow_private_urls = true;
    config.limits.max_file_bytes = 1000;
    let mut lib = Library::open(config).unwrap();
    let dead = format!("http://127.0.0.1:{}/page", closed_port());
    let inputs = [
        format!("{base}/page"),
        format!("{base}/moved"),
        format!("{base}/gone"),
        format!("{base}/big"),
        dead,
    ];
    let report = lib.add(&inputs, &mut |_| {}).unwrap();
    assert_eq!(report.added, 2, "{report:#?}");
    let codes: Vec<(String, Option<String>)> = lib
        .list()
        .unwrap()
        .into_iter()
        .map(|d| {
            (
                d.source.rsplit('/').next().unwrap().to_string(),
                d.broken_code,
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("page".to_string(), None),
            ("moved".into(), None),
            ("gone".into(), Some("http_status".into())),
            ("big".into(), Some("too_large".into())),
            ("page".into(), Some("unreachable".into())),
        ]
    );
    let page = &lib.list().unwrap()[0];
    assert_eq!(
        (page.title.as_str(), page.kind.as_deref()),
        ("Pond Survey Handbook", Some("html"))
    );
    let [docs, contents, ..] = lib.store().counts().unwrap();
    assert_eq!(
        (docs, contents),
        (5, 1),
        "the redirect lands on the same body, stored once"
    );
    let gone = report
        .failed
        .iter()
        .find(|f| f.source.ends_with("/gone"))
        .unwrap();
    assert_eq!(gone.reason, "fetch failed: the server answered HTTP 404");

    let again = lib.add(&[format!("{base}/page")], &mut |_| {}).unwrap();
    assert_eq!(
        (again.added, again.unchanged),
        (0, 1),
        "an unchanged page is unchanged by hash"
    );
}

/// The address a loopback server stands in for a public host on.
const STAND_IN: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
/// The address no test may reach while private addresses are refused.
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// The name the scripted resolver answers for.
const PUBLIC_HOST: &str = "public.test";

/// DNS for `public.test` from a script, one answer per lookup (the last one
/// repeats), counting lookups. It vouches for [`STAND_IN`] as public: the
/// test-only allow-list that lets a loopback server play a public host.
#[derive(Debug)]
struct Scripted {
    answers: Vec<IpAddr>,
    lookups: AtomicUsize,
}

impl Scripted {
    fn new(answers: &[IpAddr]) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: answers.to_vec(),
            lookups: AtomicUsize::new(0),
        })
    }

    fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

impl HostResolver for Scripted {
    fn lookup(&self, host: &str) -> io::Result<Vec<IpAddr>> {
        if host != PUBLIC_HOST {
            return Err(io::Error::new(io::ErrorKind::NotFound, "not a test host"));
        }
        let n = self.lookups.fetch_add(1, Ordering::SeqCst);
        Ok(vec![self.answers[n.min(self.answers.len() - 1)]])
    }

    fn vouches_for(&self, ip: IpAddr) -> bool {
        ip == STAND_IN
    }
}

/// A server that answers every request with `route(path)` as
/// (status, extra headers, body), closes each connection (so every redirect
/// hop connects, and resolves, afresh) and counts the requests it got.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Server {
    fn start(
        ip: IpAddr,
        port: u16,
        route: impl Fn(&str) -> (&'static str, String, String) + Send + 'static,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind((ip, port))?;
        let port = listener.local_addr()?.port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let n = stream.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let (status, extra, body) = route(path);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Ok(Server { port, hits })
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

const LOOPBACK_PAGE: &str = "<html><head><title>Loopback Only</title></head><body><main><h1>Loopback Only</h1>\
<p>Nothing on this machine's own address may reach the library unless private addresses are allowed.</p></main></body></html>";

/// A victim on 127.0.0.1 and, on the same port, a stand-in for a public host
/// on 127.0.0.2 that serves [`PAGE`] at `/page` and redirects `/to/X` to
/// `http://X/page` (`{port}` in X becomes the shared port).
fn victim_and_stand_in() -> (Server, Server) {
    for _ in 0..20 {
        let victim = Server::start(LOOPBACK, 0, |_| {
            ("200 OK", String::new(), LOOPBACK_PAGE.to_string())
        })
        .unwrap();
        let port = victim.port;
        let stand_in = Server::start(STAND_IN, port, move |path| {
            match path.strip_prefix("/to/") {
                Some(to) => (
                    "302 Found",
                    format!(
                        "Location: http://{}/page\r\n",
                        to.replace("%7Bport%7D", &port.to_string())
                    ),
                    String::new(),
                ),
                None => ("200 OK", String::new(), PAGE.to_string()),
            }
        });
        if let Ok(stand_in) = stand_in {
            return (victim, stand_in);
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

fn open_resolving(dir: &std::path::Path, resolver: Arc<Scripted>) -> Library {
    let mut config = LibraryConfig::new(dir.to_path_buf(), models());
    config.resolver = resolver;
    Library::open(config).unwrap()
}

#[test]
fn a_name_that_rebinds_to_loopback_is_looked_up_once_and_never_reaches_it() {
    let (victim, stand_in) = victim_and_stand_in();
    let dns = Scripted::new(&[STAND_IN, LOOPBACK]);
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open_resolving(lib_dir.path(), dns.clone());
    let url = format!("http://{PUBLIC_HOST}:{}/page", stand_in.port);
    let report = lib.add(&[url], &mut |_| {}).unwrap();
    assert_eq!(report.added, 1, "{report:#?}");
    assert_eq!(lib.list().unwrap()[0].title, "Pond Survey Handbook");
    assert_eq!(victim.hits(), 0, "the rebound address was connected to");
    assert_eq!(
        dns.lookups(),
        1,
        "the checked lookup is the one connected to"
    );
}

#[test]
fn a_redirect_whose_name_rebinds_to_loopback_is_refused() {
    let (victim, stand_in) = victim_and_stand_in();
    let dns = Scripted::new(&[STAND_IN, LOOPBACK]);
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open_resolving(lib_dir.path(), dns.clone());
    let url = format!(
        "http://{PUBLIC_HOST}:{}/to/{PUBLIC_HOST}:%7Bport%7D",
        stand_in.port
    );
    let report = lib.add(&[url], &mut |_| {}).unwrap();
    assert_eq!(report.added, 0, "{report:#?}");
    let reason = &report.failed[0].reason;
    assert!(
        reason.contains("public.test is 127.0.0.1") && reason.contains("--allow-private"),
        "{reason}"
    );
    assert_eq!(
        lib.list().unwrap()[0].broken_code.as_deref(),
        Some("private_address")
    );
    assert_eq!((stand_in.hits(), victim.hits()), (1, 0));
    assert_eq!(dns.lookups(), 2, "one lookup per hop");
}

#[test]
fn a_redirect_to_a_loopback_literal_is_refused_unless_private_is_allowed() {
    let (victim, stand_in) = victim_and_stand_in();
    let dns = Scripted::new(&[STAND_IN]);
    let lib_dir = tempfile::tempdir().unwrap();
    let mut lib = open_resolving(lib_dir.path(), dns.clone());
    let urls: Vec<String> = ["127.0.0.1", "[::ffff:127.0.0.1]"]
        .iter()
        .map(|to| format!("http://{PUBLIC_HOST}:{}/to/{to}:%7Bport%7D", stand_in.port))
        .collect();
    let report = lib.add(&urls, &mut |_| {}).unwrap();
    assert_eq!(report.added, 0, "{report:#?}");
    for failure in &report.failed {
        assert!(
            failure.reason.contains("redirected to http://")
                && failure.reason.contains("127.0.0.0/8, loopback"),
            "{}",
            failure.reason
        );
    }
    let codes: Vec<Option<String>> = lib
        .list()
        .unwrap()
        .into_iter()
        .map(|d| d.broken_code)
        .collect();
    assert_eq!(
        codes,
        [
            Some("private_address".into()),
            Some("private_address".into())
        ]
    );
    assert_eq!(victim.hits(), 0, "a refused redirect was followed");

    // Allowed, the same redirects land: the refusal above was the guard's.
    drop(lib);
    let mut config = LibraryConfig::new(lib_dir.path().to_path_buf(), models());
    config.resolver = dns.clone();
    config.limits.allow_private_urls = true;
    let mut lib = Library::open(config).unwrap();
    let report = lib.add(&urls, &mut |_| {}).unwrap();
    assert_eq!(report.added + report.unchanged, 2, "{report:#?}");
    assert_eq!(victim.hits(), 2);
    assert!(
        lib.list()
            .unwrap()
            .iter()
            .all(|d| d.title == "Loopback Only"),
        "{:#?}",
        lib.list().unwrap()
    );
}
