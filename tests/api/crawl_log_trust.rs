//! The crawl log believes no stranger: datagrams from senders outside `ACCESS_LOG_SENDERS` are
//! dropped unread and counted (several loopback addresses stand for several hosts: 127.0.0.1 is
//! the web server, 127.0.0.2 someone else); lines dated outside `ACCESS_LOG_MAX_SKEW_SECS` of
//! their arrival are counted and not stored, and no signature is checked before that window.

use std::net::{SocketAddr, UdpSocket};

use serde_json::Value;

use crate::crawl_log::{crawl_log, googlebot, report, HOST};
use crate::helpers::{
    eventually, signer_registry, spawn_app, template_file, DirectoryAnswer, KeyDirectory,
    SigningKey, TestApp, TestDb, GOOGLEBOT,
};

/// An nginx syslog datagram in the shipped format: Googlebot fetched `path` at `at`.
pub fn googlebot_line(path: &str, at: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "<190>{} web sitemapd: {}\t66.249.66.1\t\"{HOST}\"\t\"GET\"\t\"{path}\"\t200\t5\t\"{GOOGLEBOT}\"",
        at.format("%b %d %H:%M:%S"),
        at.format("%Y-%m-%dT%H:%M:%S+00:00"),
    )
}

/// The time now as the shipped formats log it (Apache's offset spelling, which nginx's parses
/// too): lines further than `ACCESS_LOG_MAX_SKEW_SECS` from their arrival are not stored.
pub fn logged_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S+0000")
        .to_string()
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

/// Lines dated more than `ACCESS_LOG_MAX_SKEW_SECS` (300 s by default) from their arrival,
/// either way, are counted as `out_of_window` and never stored: a line dated 2099 would keep its
/// URL out of "waiting for recrawl" for ever. A line a minute old is stored.
#[tokio::test]
async fn lines_dated_outside_their_window_are_counted_and_not_stored() {
    let db = TestDb::new().await;
    let app = start(&db, &[]).await;
    let addr = crawl_log(&app).local_addr();
    let now = chrono::Utc::now();
    let future = chrono::DateTime::parse_from_rfc3339("2099-01-01T00:00:00Z")
        .unwrap()
        .to_utc();
    send_from("127.0.0.1", addr, &googlebot_line("/a", future));
    send_from(
        "127.0.0.1",
        addr,
        &googlebot_line("/a", now - chrono::Duration::hours(1)),
    );
    send_from(
        "127.0.0.1",
        addr,
        &googlebot_line("/b", now - chrono::Duration::seconds(60)),
    );
    let seen = eventually(
        "the line a minute old in the report",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 1,
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
    let out = app
        .metric("sitemapd_access_log_lines_total{result=\"out_of_window\"}")
        .await;
    assert_eq!(out, 2.0);
    let intake = intake(&app);
    assert_eq!(intake["out_of_window_lines"], 2, "{intake:#}");
    assert_eq!(intake["parsed_lines"], 1, "{intake:#}");
}

/// A log shipped late: with `ACCESS_LOG_MAX_SKEW_SECS=7200` a line an hour old is stored.
#[tokio::test]
async fn a_wider_window_takes_a_log_shipped_late() {
    let db = TestDb::new().await;
    let app = start(&db, &[("ACCESS_LOG_MAX_SKEW_SECS", "7200")]).await;
    let hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    send_from(
        "127.0.0.1",
        crawl_log(&app).local_addr(),
        &googlebot_line("/a", hour_ago),
    );
    let seen = eventually(
        "the hour-old line in the report",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 1,
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
    let out = app
        .metric("sitemapd_access_log_lines_total{result=\"out_of_window\"}")
        .await;
    assert_eq!(out, 0.0);
}

#[test]
fn a_bad_window_stops_the_start() {
    crate::helpers::refused(
        &[("ACCESS_LOG_MAX_SKEW_SECS", "5m")],
        &["ACCESS_LOG_MAX_SKEW_SECS", "5m"],
    );
}

/// A log line in the shipped format with Web Bot Auth headers `signed` (as
/// [`SigningKey::sign`] makes them), dated `at`: a fetch of `/private/x` from 127.0.0.1.
fn signed_line(at: i64, signed: &[(String, String)]) -> String {
    let header = |name: &str| {
        let value = &signed.iter().find(|(n, _)| n == name).expect(name).1;
        value.replace('\\', "\\\\").replace('"', "\\\"")
    };
    let time = chrono::DateTime::from_timestamp(at, 0).unwrap();
    format!(
        "{}\t127.0.0.1\t\"{HOST}\"\t\"GET\"\t\"/private/x\"\t200\t5\t\"Mozilla/5.0\"\t\"{}\"\t\"{}\"\t\"{}\"",
        time.format("%Y-%m-%dT%H:%M:%S+00:00"),
        header("signature-agent"),
        header("signature-input"),
        header("signature"),
    )
}

/// A captured signature does not verify again in a backdated line: a signature valid for five
/// minutes 30 days ago, in a line dated then, is out of the window (never checked, never
/// stored); in a line dated now it has expired (forged). A log shipped an hour late within a
/// two-hour window is checked at its own time: its signature, valid then, verifies.
#[tokio::test]
async fn a_signature_is_never_checked_before_the_window() {
    let db = TestDb::on(crate::helpers::Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let key = SigningKey::generate();
    let directory = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = directory.origin();
    let registry = signer_registry(&[("SignedAgent", &origin)]);
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = spawn_app(
        &db.url,
        &[
            ("ACCESS_LOG_ADDR", "127.0.0.1:0"),
            ("ACCESS_LOG_MAX_SKEW_SECS", "7200"),
            ("ROBOTS_TEMPLATE", robots.path().to_str().unwrap()),
            ("CRAWLERS_FILE", registry.path().to_str().unwrap()),
        ],
    )
    .await;
    let addr = crawl_log(&app).local_addr();
    let (url, member) = (
        format!("http://{HOST}/private/x"),
        format!("sig1=\"{origin}\""),
    );
    let now = chrono::Utc::now().timestamp();
    let month_ago = now - 30 * 86_400;
    let captured = key.sign(&url, &member, month_ago, month_ago + 300);
    send_from("127.0.0.1", addr, &signed_line(month_ago + 10, &captured));
    send_from("127.0.0.1", addr, &signed_line(now, &captured));
    let hour_ago = now - 3600;
    let late = key.sign(&url, &member, hour_ago, hour_ago + 300);
    send_from("127.0.0.1", addr, &signed_line(hour_ago + 10, &late));
    let violations = |report: &Value| {
        report["sites"][0]["robots_violations"]
            .as_array()
            .and_then(|all| all.iter().find(|v| v["crawler"] == "SignedAgent").cloned())
            .unwrap_or(Value::Null)
    };
    let seen = eventually(
        "SignedAgent's two stored fetches",
        || async { violations(&report(&app)) },
        |v| v["verified"] == 1 && v["forged"] == 1,
    )
    .await;
    assert_eq!(seen["verified"], 1, "the late log's line: {seen}");
    assert_eq!(
        seen["forged"], 1,
        "the captured signature dated now: {seen}"
    );
    assert_eq!(seen["unverified"], 0, "{seen}");
    let out = app
        .metric("sitemapd_access_log_lines_total{result=\"out_of_window\"}")
        .await;
    assert_eq!(out, 1.0, "the backdated line");
}
