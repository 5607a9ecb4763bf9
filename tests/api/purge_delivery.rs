//! The cache purge's delivery at its worst: an endpoint that accepts and never answers does
//! not keep the process past `SHUTDOWN_GRACE_SECS`, and endpoints that fail are logged once per
//! endpoint and period, with counts, not once per URL.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::{eventually, Backend, Sitemapd, TestDb, BASE};

/// A TCP endpoint that accepts every connection and never answers (nor closes); how many it
/// accepted. Its thread ends with the test process.
fn hanging_endpoint() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    (endpoint, accepted)
}

/// A database whose first sweep changes files: their purges go out at once.
async fn entries() -> TestDb {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "/c")]).await;
    db
}

/// With purges hanging at two endpoints, SIGTERM ends the process within the grace period, and
/// it exits 0 saying what was left unsent.
#[tokio::test]
async fn hanging_purge_endpoints_do_not_hold_the_shutdown_past_its_grace() {
    let db = entries().await;
    let (first, first_accepted) = hanging_endpoint();
    let (second, second_accepted) = hanging_endpoint();
    const GRACE: Duration = Duration::from_secs(2);
    let serving = Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("CACHE_PURGE", format!("{first},{second}"))
        .env("SHUTDOWN_GRACE_SECS", GRACE.as_secs().to_string())
        .serve()
        .await;
    let hanging = eventually(
        "purges in flight at both endpoints",
        || async {
            first_accepted.load(Ordering::SeqCst) > 0 && second_accepted.load(Ordering::SeqCst) > 0
        },
        |both| *both,
    )
    .await;
    assert!(hanging, "the first sweep's purges reached both endpoints");
    let asked = Instant::now();
    serving.terminate();
    let out = serving.wait_with_output().await;
    let took = asked.elapsed();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        took <= GRACE,
        "stopped {took:?} after SIGTERM, grace {GRACE:?}: {log}"
    );
}

/// A TCP endpoint that answers every request `403 Forbidden` (and closes); how many it got.
fn refusing_endpoint() -> (String, Arc<AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(
                b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (endpoint, requests)
}

/// Two endpoints refuse every purge of the first sweep (several URLs each): the log has one
/// line per endpoint with the count of its URLs, none per URL.
#[tokio::test]
async fn failing_endpoints_are_logged_once_each_with_counts() {
    let db = entries().await;
    let (first, first_requests) = refusing_endpoint();
    let (second, second_requests) = refusing_endpoint();
    let serving = Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("CACHE_PURGE", format!("{first},{second}"))
        .serve()
        .await;
    let client = reqwest::Client::new();
    let metrics = serving.url("/metrics");
    let failed = || async {
        let text = client
            .get(&metrics)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("sitemapd_cache_purges_total{outcome=\"failed\"}"));
        line.and_then(|l| l.rsplit(' ').next()?.parse::<usize>().ok())
            .unwrap_or(0)
    };
    let received =
        || first_requests.load(Ordering::SeqCst) + second_requests.load(Ordering::SeqCst);
    let counted = eventually("every refused purge counted", failed, |n| {
        *n > 2 && *n == received()
    })
    .await;
    assert_eq!(counted, received());
    serving.terminate();
    let out = serving.wait_with_output().await;
    let log = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("purge"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per endpoint: {log}");
    for (endpoint, requests) in [(&first, &first_requests), (&second, &second_requests)] {
        let urls = format!("urls={}", requests.load(Ordering::SeqCst));
        assert!(
            lines.iter().any(|l| l.contains(endpoint.as_str())
                && l.contains(&urls)
                && l.contains("refused=")),
            "{endpoint} with {urls}: {lines:#?}"
        );
    }
}
