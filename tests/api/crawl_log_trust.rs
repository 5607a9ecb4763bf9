//! The crawl log believes no stranger: datagrams from senders outside `ACCESS_LOG_SENDERS` are
//! dropped unread and counted (several loopback addresses stand for several hosts: 127.0.0.1 is
//! the web server, 127.0.0.2 someone else).

use std::net::{SocketAddr, UdpSocket};

use serde_json::Value;

use crate::crawl_log::{crawl_log, googlebot, report, HOST};
use crate::helpers::{eventually, spawn_app, template_file, TestApp, TestDb, GOOGLEBOT};

/// An nginx syslog datagram in the shipped format: Googlebot fetched `path` at `at`.
pub fn googlebot_line(path: &str, at: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "<190>{} web sitemapd: {}\t66.249.66.1\t\"{HOST}\"\t\"GET\"\t\"{path}\"\t200\t5\t\"{GOOGLEBOT}\"",
        at.format("%b %d %H:%M:%S"),
        at.format("%Y-%m-%dT%H:%M:%S+00:00"),
    )
}

/// Sends `line` to the crawl log from the address `from` (any 127.0.0.0/8 address is local).
pub fn send_from(from: &str, to: SocketAddr, line: &str) {
    let socket = UdpSocket::bind((from, 0)).unwrap();
    socket.send_to(line.as_bytes(), to).unwrap();
}

/// A service over entries `/a` and `/b`, its crawl log on 127.0.0.1 with `vars` besides.
async fn start(db: &TestDb, vars: &[(&str, &str)]) -> TestApp {
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let robots = template_file("User-agent: *\nAllow: /\n");
    let mut all = vec![
        ("ACCESS_LOG_ADDR", "127.0.0.1:0"),
        ("ROBOTS_TEMPLATE", robots.path().to_str().unwrap()),
        ("CRAWLER_VERIFY", "off"),
    ];
    all.extend_from_slice(vars);
    spawn_app(&db.url, &all).await
}

fn intake(app: &TestApp) -> Value {
    let status = serde_json::to_value(sitemapd::admin::status::Status::of(&app.app)).unwrap();
    status["access_log"].clone()
}

/// By default only loopback's 127.0.0.1 and ::1 are read: a Googlebot line from 127.0.0.2 is
/// counted as untrusted and never becomes coverage; the same line from 127.0.0.1 does.
#[tokio::test]
async fn lines_from_an_untrusted_sender_are_dropped_unread_and_counted() {
    let db = TestDb::new().await;
    let app = start(&db, &[]).await;
    let addr = crawl_log(&app).local_addr();
    let now = chrono::Utc::now();
    send_from("127.0.0.2", addr, &googlebot_line("/a", now));
    let untrusted = eventually(
        "the stranger's datagram to be counted",
        || app.metric("sitemapd_access_log_untrusted_datagrams_total"),
        |n| *n >= 1.0,
    )
    .await;
    assert_eq!(untrusted, 1.0);
    send_from("127.0.0.1", addr, &googlebot_line("/b", now));
    let seen = eventually(
        "the web server's line in the report",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 1,
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
    assert_eq!(
        app.metric("sitemapd_access_log_lines_total{result=\"parsed\"}")
            .await,
        1.0,
        "the stranger's line is never parsed"
    );
    let intake = intake(&app);
    assert_eq!(intake["untrusted_datagrams"], 1, "{intake:#}");
    assert_eq!(intake["parsed_lines"], 1, "{intake:#}");
    let page = reqwest::get(crate::helpers::status_page(&app).await)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("untrusted senders"), "{page}");
}

/// `ACCESS_LOG_SENDERS` replaces the default: a network that holds 127.0.0.2 only makes its
/// lines count, and 127.0.0.1's are the stranger's now.
#[tokio::test]
async fn the_senders_listed_are_the_only_ones_read() {
    let db = TestDb::new().await;
    let app = start(&db, &[("ACCESS_LOG_SENDERS", "127.0.0.2/32")]).await;
    let addr = crawl_log(&app).local_addr();
    let now = chrono::Utc::now();
    send_from("127.0.0.1", addr, &googlebot_line("/a", now));
    send_from("127.0.0.2", addr, &googlebot_line("/b", now));
    let seen = eventually(
        "the listed sender's line in the report",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 1,
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
    let untrusted = eventually(
        "127.0.0.1's datagram to be counted",
        || app.metric("sitemapd_access_log_untrusted_datagrams_total"),
        |n| *n >= 1.0,
    )
    .await;
    assert_eq!(untrusted, 1.0);
}

#[test]
fn a_bad_sender_list_stops_the_start() {
    crate::helpers::refused(
        &[
            ("ACCESS_LOG_ADDR", "127.0.0.1:5140"),
            ("ACCESS_LOG_SENDERS", "10.0.0.0/33"),
        ],
        &["ACCESS_LOG_SENDERS", "10.0.0.0/33"],
    );
    crate::helpers::refused(&[("ACCESS_LOG_SENDERS", "web1")], &["ACCESS_LOG_SENDERS"]);
}

/// A crawl log bound beyond loopback says at start which senders it reads.
#[tokio::test]
async fn a_log_beyond_loopback_names_its_senders_at_start() {
    let db = TestDb::on(crate::helpers::Backend::Sqlite).await;
    db.migrate().await;
    let port = crate::helpers::free_port();
    let serving = crate::helpers::Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", crate::helpers::BASE)
        .env("CRAWLER_VERIFY", "off")
        .env("ACCESS_LOG_ADDR", format!("0.0.0.0:{port}"))
        .env("ACCESS_LOG_SENDERS", "192.0.2.7,198.51.100.0/24")
        .serve()
        .await;
    serving.terminate();
    let out = serving.wait_with_output().await;
    let log = String::from_utf8_lossy(&out.stderr);
    let said = log
        .lines()
        .find(|l| l.contains("ACCESS_LOG_SENDERS"))
        .unwrap_or_else(|| panic!("no line names the senders: {log}"));
    assert!(said.contains("192.0.2.7/32,198.51.100.0/24"), "{said}");
}
