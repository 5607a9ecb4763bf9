//! Feeds of recent changes, checked by strict validators and read back by an independent parser
//! (Python's feedparser).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::feed_checks::{assert_valid_feed, Feed};
use crate::helpers::*;

crate::on_each_database!(
    the_feeds_list_the_most_recently_modified_entries_with_their_lastmod,
    feeds_have_validators_and_change_when_an_entry_does,
    a_feed_size_of_zero_turns_the_feeds_off,
    a_feed_is_full_even_when_the_newest_rows_are_skipped,
);

/// What feedparser understood of `body`; panics with the complaints of the strict checkers
/// (jing with RFC 4287's schema, the RSS 2.0 checker) or of feedparser if it is not valid.
fn parse_feed(body: &[u8]) -> Value {
    let kind = if String::from_utf8_lossy(body).contains("<rss ") {
        Feed::Rss
    } else {
        Feed::Atom
    };
    assert_valid_feed(body, kind);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), body).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers/feed.py");
    // Debian's python3-feedparser lives with /usr/bin/python3, whatever else is on PATH.
    let python = std::env::var("FEED_PYTHON").unwrap_or_else(|_| {
        if Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        }
        .into()
    });
    let out = Command::new(python)
        .arg(script)
        .arg(file.path())
        .output()
        .expect("python3 with feedparser (Debian: python3-feedparser) must be installed; ./scripts/test.sh installs it");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "feedparser: {stdout}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(body)
    );
    serde_json::from_str(&stdout).unwrap()
}

/// The links of the feed at `path`, in order, checked and parsed as [`parse_feed`] does.
async fn feed_links(app: &TestApp, path: &str) -> Vec<String> {
    let feed = parse_feed(&app.get(path).await.bytes().await.unwrap());
    feed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["link"].as_str().unwrap().to_string())
        .collect()
}

/// 150 entries modified one minute apart (id 1 oldest), a few without lastmod, one out of scope.
async fn site_with_history(backend: Backend, feed_size: &str) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let start = utc("2024-05-01 12:00:00");
    let mut rows: Vec<Row> = (1..=150)
        .map(|i| Row {
            lastmod: Some(start + chrono::Duration::minutes(i)),
            ..Row::new(i, &format!("/news/{i}?a=1&b=café"))
        })
        .collect();
    rows.push(Row::new(151, "/undated"));
    rows.push(Row::new(152, "https://elsewhere.example.org/x").lastmod("2030-01-01 00:00:00"));
    db.insert_rows(&rows).await;
    let app = spawn_app(&db.url, &[("SITEMAP_FEED_SIZE", feed_size)]).await;
    (db, app)
}

async fn the_feeds_list_the_most_recently_modified_entries_with_their_lastmod(backend: Backend) {
    let (_db, app) = site_with_history(backend, "20").await;
    for (path, content_type, version) in [
        (
            "/feed.atom",
            "application/atom+xml; charset=utf-8",
            "atom10",
        ),
        ("/feed.rss", "application/rss+xml; charset=utf-8", "rss20"),
    ] {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "content-type"), content_type);
        let feed = parse_feed(&resp.bytes().await.unwrap());
        assert_eq!(feed["version"], version);
        let entries = feed["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 20, "{path}");
        // Newest first: ids 150, 149, … with their own lastmod; the out-of-scope row is left out.
        assert_eq!(
            entries[0]["link"],
            "https://www.example.com/news/150?a=1&b=caf%C3%A9"
        );
        assert_eq!(entries[0]["updated"], "2024-05-01T14:30:00Z");
        assert_eq!(entries[19]["updated"], "2024-05-01T14:11:00Z");
        if version == "atom10" {
            assert_eq!(
                feed["updated"], "2024-05-01T14:30:00Z",
                "the newest lastmod"
            );
        }
    }
}

async fn feeds_have_validators_and_change_when_an_entry_does(backend: Backend) {
    let (db, app) = site_with_history(backend, "20").await;
    let first = app.get("/feed.atom").await;
    let etag = header(&first, "etag").to_string();
    assert_eq!(
        app.get_with("/feed.atom", &[("if-none-match", &etag)])
            .await
            .status(),
        304
    );
    db.set_lastmod(3, utc("2024-06-01 00:00:00")).await;
    let now = {
        let app = &app;
        eventually(
            "a new ETag of the Atom feed",
            move || async move { header(&app.get("/feed.atom").await, "etag").to_string() },
            |now| *now != etag,
        )
        .await
    };
    assert_ne!(now, etag, "the change reaches the feed");
    let feed = parse_feed(&app.get("/feed.atom").await.bytes().await.unwrap());
    assert_eq!(
        feed["entries"][0]["link"],
        "https://www.example.com/news/3?a=1&b=caf%C3%A9"
    );
}

async fn a_feed_is_full_even_when_the_newest_rows_are_skipped(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let start = utc("2024-05-01 12:00:00");
    // The 20 oldest rows are good; the 300 newest point at another host and are skipped.
    let rows: Vec<Row> = (1..=320)
        .map(|i| {
            let loc = if i <= 20 {
                format!("/good/{i}")
            } else {
                format!("https://elsewhere.example.org/{i}")
            };
            Row {
                lastmod: Some(start + chrono::Duration::minutes(i)),
                ..Row::new(i, &loc)
            }
        })
        .collect();
    db.insert_rows(&rows).await;
    let app = spawn_app(&db.url, &[("SITEMAP_FEED_SIZE", "10")]).await;
    let links = feed_links(&app, "/feed.rss").await;
    let expected: Vec<String> = (11..=20)
        .rev()
        .map(|i| format!("https://www.example.com/good/{i}"))
        .collect();
    assert_eq!(links, expected);
}

async fn a_feed_size_of_zero_turns_the_feeds_off(backend: Backend) {
    let (_db, app) = site_with_history(backend, "0").await;
    assert_eq!(app.get("/feed.atom").await.status(), 404);
    assert_eq!(app.get("/feed.rss").await.status(), 404);
}

#[tokio::test]
async fn sqlite_lastmods_and_priorities_stored_as_numbers_are_read_as_sqlite_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    drop(spawn_app(&url, &[]).await);
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    // A CMS table whose columns keep numbers as numbers: PHP's time() is an INTEGER,
    // julianday() a REAL, an integer priority an INTEGER.
    sqlx::raw_sql(
        "CREATE TABLE cms_pages (id INTEGER PRIMARY KEY, loc TEXT, lastmod, changefreq TEXT, priority);
         INSERT INTO cms_pages VALUES
           (1, '/unix', 1714568400, NULL, 1),
           (2, '/julian', julianday('2024-05-01 00:01:00'), NULL, 0.5),
           (3, '/compact', '20240501', NULL, NULL);",
    )
    .execute(&pool)
    .await
    .unwrap();
    let app = spawn_app(&url, &[("SITEMAP_SOURCE", "cms_pages")]).await;
    assert_eq!(
        feed_links(&app, "/feed.atom").await,
        [
            "https://www.example.com/unix",
            "https://www.example.com/julian"
        ]
    );
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_valid(&xml, Schema::Urlset);
    let entries: Vec<_> = url_fields(&xml)
        .into_iter()
        .map(|f| {
            let field = |name: &str| f.get(name).cloned();
            (field("loc").unwrap(), field("lastmod"), field("priority"))
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("unix", Some("2024-05-01T13:00:00+00:00"), Some("1.0")),
            ("julian", Some("2024-05-01T00:01:00+00:00"), Some("0.5")),
            // Eight digits look like a compact date: no lastmod rather than one in 1970.
            ("compact", None, None),
        ]
        .map(|(loc, lastmod, priority)| (
            format!("https://www.example.com/{loc}"),
            lastmod.map(String::from),
            priority.map(String::from)
        ))
    );
}

#[tokio::test]
async fn sqlite_feeds_order_lastmod_text_in_any_form_by_time_and_extensions_work_there_too() {
    // Text in several forms, unix seconds (PHP's time()) and a Julian day (SQLite's julianday()).
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    drop(spawn_app(&url, &[]).await);
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "INSERT INTO sitemap_entries (id, loc, lastmod) VALUES
           (1, '/a', '2024-05-01 12:00:00'),
           (2, '/b', '2024-05-01T13:30:00+02:00'),
           (3, '/c', '2024-05-01T11:45:00Z'),
           (4, '/d', NULL),
           (5, '/e', 1714568400),
           (6, '/f', julianday('2024-05-01 11:50:00'));
         INSERT INTO sitemap_images (entry_id, loc) VALUES (3, 'https://cdn.example.net/c.jpg');",
    )
    .execute(&pool)
    .await
    .unwrap();
    let app = spawn_app(&url, &[]).await;
    let links = feed_links(&app, "/feed.rss").await;
    // 13:00Z (unix seconds), 12:00Z, 11:50Z (Julian day), 11:45Z, then 13:30+02:00 = 11:30Z.
    assert_eq!(
        links,
        [
            "https://www.example.com/e",
            "https://www.example.com/a",
            "https://www.example.com/f",
            "https://www.example.com/c",
            "https://www.example.com/b"
        ]
    );
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_valid(&xml, Schema::Urlset);
    let xml = String::from_utf8(xml).unwrap();
    assert!(xml.contains("<image:loc>https://cdn.example.net/c.jpg</image:loc>"));
    for (loc, lastmod) in [
        ("e", "2024-05-01T13:00:00+00:00"),
        ("f", "2024-05-01T11:50:00+00:00"),
    ] {
        let url = format!("<loc>https://www.example.com/{loc}</loc>");
        let after = &xml[xml.find(&url).expect("listed") + url.len()..];
        let lastmod = format!("<lastmod>{lastmod}</lastmod>");
        assert!(after.trim_start().starts_with(&lastmod), "{xml}");
    }
}
