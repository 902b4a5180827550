//! `carrel add URL` against a real HTTP server on loopback: fetched pages are
//! indexed, and every refusal (private address, HTTP error, unreachable host,
//! size cap) is a listed broken reason.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;

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
