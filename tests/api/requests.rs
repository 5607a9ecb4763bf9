//! Hostile requests: odd paths, methods and headers never get a 5xx; malformed conditionals
//! are ignored.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

use crate::helpers::*;

const HEADERS: &[&str] = &[
    "if-none-match",
    "if-modified-since",
    "range",
    "accept-encoding",
    "if-match",
    "host",
    "x-forwarded-host",
];

const PATHS: &[&str] = &[
    "/sitemap_index.xml",
    "/sitemap.xml",
    "/sitemap-1.xml.gz",
    "/sitemap-1.xml",
    "/robots.txt",
    "/sitemap-2.xml",
    "/sitemap-99999999999999999999.xml",
    "/sitemap--1.xml",
    "/%2e%2e/etc/passwd",
    "/sitemap-1.xml.gz/../x",
    "//sitemap.xml",
    "/sitemap_index.xml?x=1",
    "/metrics",
    "/readyz",
    "/healthz",
];

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        Just("W/\"x\", \"y\"".to_string()),
        Just("\"unterminated".to_string()),
        Just("Wed, 01 May 2024 12:00:00 GMT".to_string()),
        Just("not a date".to_string()),
        Just("bytes=0-10".to_string()),
        Just("gzip;q=abc, *;q=-1".to_string()),
        "[ -~]{0,200}",
        Just("x".repeat(6000)),
    ]
}

#[tokio::test]
async fn no_request_gets_a_server_error() {
    let db = TestDb::new().await;
    drop(spawn_app(&db.url, &[]).await);
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let app = spawn_app(&db.url, &[]).await;
    let strategy = (
        prop::sample::select(PATHS),
        prop::sample::select(
            &[
                "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE",
            ][..],
        ),
        prop::collection::vec((prop::sample::select(HEADERS), header_value()), 0..4),
    );
    let mut runner = TestRunner::new(Config::default());
    for _ in 0..300 {
        let (path, method, headers) = strategy.new_tree(&mut runner).unwrap().current();
        let mut req = app.client.request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            app.url(path),
        );
        for (name, value) in &headers {
            req = req.header(*name, value.as_str());
        }
        let resp = req.send().await.expect("an answer");
        let status = resp.status();
        assert!(
            !status.is_server_error(),
            "{method} {path} {headers:?} -> {status}"
        );
        resp.bytes().await.expect("a complete body");
    }
}

#[tokio::test]
async fn range_requests_get_the_whole_file() {
    let db = TestDb::new().await;
    drop(spawn_app(&db.url, &[]).await);
    db.insert(&[(1, "/a")]).await;
    let app = spawn_app(&db.url, &[]).await;
    let whole = app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap();
    let ranged = app
        .get_with("/sitemap-1.xml.gz", &[("range", "bytes=0-3")])
        .await;
    assert_eq!(ranged.status(), 200);
    assert_eq!(ranged.bytes().await.unwrap(), whole);
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let db = TestDb::new().await;
    let app = spawn_app(&db.url, &[]).await;
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(b"GET /robots.txt HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    let mut buf = Vec::new();
    // The server closes the connection (header read timeout); bounded so the test cannot hang.
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        stream.read_to_end(&mut buf),
    )
    .await;
    assert!(read.is_ok(), "the connection was not closed");
}
