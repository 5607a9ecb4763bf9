//! The feeds checked strictly, by checkers that owe sitemapd nothing.
//!
//! - Atom: jing against the RELAX NG schema of RFC 4287 (tests/schemas/atom.rnc), and
//!   tests/parsers/atom_rules.py for what the schema cannot say (its Schematron rules, which
//!   jing ignores, and prose rules of the RFC).
//! - RSS 2.0, which has no official schema: tests/parsers/rss_strict.py, written from the
//!   specification.
//! - Both: read back by feedparser (tests/parsers/feed.py), the lenient reader most feed
//!   software is built like.
//!
//! Then the feeds themselves: hostile rows on every database, and arbitrary rows in PostgreSQL.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{DateTime, Datelike, TimeZone, Utc};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sitemapd::config::BaseUrl;
use sitemapd::sitemap::{EntryRules, RawEntry};

use crate::helpers::*;
use crate::strategies::{database_runner, Shrink};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    Atom,
    Rss,
}

impl Feed {
    pub const BOTH: [Feed; 2] = [Feed::Atom, Feed::Rss];

    pub fn path(self) -> &'static str {
        match self {
            Feed::Atom => "/feed.atom",
            Feed::Rss => "/feed.rss",
        }
    }
}

fn parsers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parsers")
}

/// The Python that has feedparser (Debian's python3-feedparser lives with /usr/bin/python3,
/// whatever else is on PATH); the strict checkers need only the standard library.
fn python() -> String {
    std::env::var("FEED_PYTHON").unwrap_or_else(|_| {
        if Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        }
        .into()
    })
}

/// Runs a checker on `file`; what it said, if it did not exit 0.
fn complaint(program: &str, args: &[&Path], file: &Path, install: &str) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} ({install}) must be installed: {e}; ./scripts/test.sh installs it")
        });
    let said = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            // The Debian jing wrapper warns about optional jars it does not need.
            .filter(|l| !l.starts_with("[warning]"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    (!out.status.success()).then(|| {
        format!(
            "{} {}: {}{}",
            program,
            args.iter()
                .map(|a| a.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            said(&out.stdout),
            said(&out.stderr)
        )
    })
}

/// Every complaint of the independent checkers about `body` as a `kind` feed, or None.
pub fn feed_problems(body: &[u8], kind: Feed) -> Option<String> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), body).unwrap();
    let python = python();
    let mut problems: Vec<String> = Vec::new();
    if kind == Feed::Atom {
        let jing = std::env::var("JING").unwrap_or_else(|_| "jing".into());
        let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/atom.rnc");
        problems.extend(complaint(
            &jing,
            &[Path::new("-c"), &schema],
            file.path(),
            "Debian package jing",
        ));
        problems.extend(complaint(
            &python,
            &[&parsers().join("atom_rules.py")],
            file.path(),
            "python3",
        ));
    } else {
        problems.extend(complaint(
            &python,
            &[&parsers().join("rss_strict.py")],
            file.path(),
            "python3",
        ));
    }
    problems.extend(complaint(
        &python,
        &[&parsers().join("feed.py")],
        file.path(),
        "python3 with feedparser, Debian package python3-feedparser",
    ));
    (!problems.is_empty()).then(|| problems.join("\n"))
}

/// Panics with every complaint, and the feed, unless all checkers accept `body`.
pub fn assert_valid_feed(body: &[u8], kind: Feed) {
    if let Some(problems) = feed_problems(body, kind) {
        panic!(
            "{kind:?} feed refused:\n{problems}\n{}",
            String::from_utf8_lossy(body)
        );
    }
}

/// Fetches both feeds, checks their status and validity, and returns their bodies.
pub async fn fetch_valid_feeds(app: &TestApp) -> [Vec<u8>; 2] {
    let mut bodies = [Vec::new(), Vec::new()];
    for (kind, body) in Feed::BOTH.into_iter().zip(&mut bodies) {
        let resp = app.get(kind.path()).await;
        assert_eq!(resp.status(), 200, "{}", kind.path());
        *body = resp.bytes().await.unwrap().to_vec();
        assert_valid_feed(body, kind);
    }
    bodies
}

/// One entry of a feed as written: its link (Atom: the id, which is the link), its title and
/// its date, unescaped, read with a real XML parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub link: String,
    pub title: String,
    pub date: String,
}

pub fn listed(body: &[u8], kind: Feed) -> Vec<Listed> {
    use quick_xml::events::Event;
    let (entry, link, date) = match kind {
        Feed::Atom => (&b"entry"[..], &b"id"[..], &b"updated"[..]),
        Feed::Rss => (&b"item"[..], &b"link"[..], &b"pubDate"[..]),
    };
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut out = Vec::new();
    let mut current: Option<Listed> = None;
    let mut field: Option<Vec<u8>> = None;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            Event::Start(e) if e.name().as_ref() == entry => {
                current = Some(Listed {
                    link: String::new(),
                    title: String::new(),
                    date: String::new(),
                })
            }
            Event::Start(e) if current.is_some() => field = Some(e.name().as_ref().to_vec()),
            Event::Text(t) => {
                if let (Some(item), Some(name)) = (current.as_mut(), field.as_deref()) {
                    let text = t.unescape().expect("valid entities").into_owned();
                    if name == link {
                        item.link = text;
                    } else if name == b"title" {
                        item.title = text;
                    } else if name == date {
                        item.date = text;
                    }
                }
            }
            Event::End(e) if e.name().as_ref() == entry => out.extend(current.take()),
            Event::End(_) => field = None,
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// The links a feed of `size` entries must list for `rows`, computed without the feed code:
/// the rows the library's `EntryRules` serves, with a lastmod in years 1900 to 9999 (what both
/// an RFC 3339 and an RFC 822/2822 date can say), newest first, ties by highest id, each URL
/// once (`/` and `/ ` are one URL once served: the newer row's entry stands).
fn expected_links(rows: &[Row], size: usize) -> Vec<String> {
    let rules = EntryRules::new(BaseUrl::parse(BASE).unwrap(), None, vec![]);
    let mut dated: Vec<(DateTime<Utc>, i64, String)> = rows
        .iter()
        .filter_map(|row| {
            let entry = rules
                .accept(&RawEntry {
                    id: row.id,
                    loc: Some(row.loc.clone()),
                    lastmod: row.lastmod,
                    ..RawEntry::default()
                })
                .ok()?;
            // What is served: a lastmod in the future is not (nor one RSS cannot date).
            let at = entry
                .lastmod
                .map(|l| l.at())
                .filter(|at| (1900..=9999).contains(&at.year()))?;
            Some((at, row.id, entry.loc.as_str().to_string()))
        })
        .collect();
    dated.sort_by_key(|d| std::cmp::Reverse((d.0, d.1)));
    let mut listed = HashSet::new();
    dated
        .into_iter()
        .filter(|(_, _, loc)| listed.insert(loc.clone()))
        .take(size)
        .map(|(_, _, loc)| loc)
        .collect()
}

fn links(body: &[u8], kind: Feed) -> Vec<String> {
    listed(body, kind).into_iter().map(|l| l.link).collect()
}

// ---------------------------------------------------------------------------------------------
// The checkers check
// ---------------------------------------------------------------------------------------------

/// The example of RFC 4287 section 1.1, with the rel="self" link the RFC recommends.
const GOOD_ATOM: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Example Feed</title>
  <link href="http://example.org/"/>
  <link rel="self" href="http://example.org/feed.atom"/>
  <updated>2003-12-13T18:30:02Z</updated>
  <author><name>John Doe</name></author>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>
  <entry>
    <title>Atom-Powered Robots Run Amok</title>
    <link href="http://example.org/2003/12/13/atom03"/>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <updated>2003-12-13T18:30:02Z</updated>
    <summary>Some text.</summary>
  </entry>
</feed>
"#;

/// After the sample of the RSS 2.0 specification.
const GOOD_RSS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">
<channel>
<title>Liftoff News</title>
<link>http://liftoff.msfc.nasa.gov/</link>
<description>Liftoff to Space Exploration.</description>
<atom:link href="http://liftoff.msfc.nasa.gov/rss.xml" rel="self" type="application/rss+xml"/>
<language>en-us</language>
<lastBuildDate>Tue, 10 Jun 2003 09:41:01 GMT</lastBuildDate>
<item>
<title>Star City</title>
<link>http://liftoff.msfc.nasa.gov/news/2003/news-starcity.asp</link>
<pubDate>Tue, 03 Jun 2003 09:39:21 GMT</pubDate>
<guid>http://liftoff.msfc.nasa.gov/2003/06/03.html#item573</guid>
</item>
</channel>
</rss>
"#;

#[test]
fn the_checkers_accept_the_specs_examples_and_refuse_what_the_specs_forbid() {
    assert_valid_feed(GOOD_ATOM.as_bytes(), Feed::Atom);
    assert_valid_feed(GOOD_RSS.as_bytes(), Feed::Rss);
    let atom_cases = [
        // (replace, with, a word of the complaint expected)
        (
            "<id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>",
            "",
            "\"id\"",
        ),
        (
            "<updated>2003-12-13T18:30:02Z</updated>\n  <author>",
            "<updated>Sat, 13 Dec 2003 18:30:02 GMT</updated>\n  <author>",
            "ISO date",
        ),
        ("<summary>", "<subtitle>x</subtitle><summary>", "subtitle"),
        (
            "<link href=\"http://example.org/\"/>",
            "<link hreff=\"http://example.org/\"/>",
            "hreff",
        ),
        (
            "<author><name>John Doe</name></author>",
            "",
            "no atom:author",
        ),
        (
            "<link href=\"http://example.org/2003/12/13/atom03\"/>",
            "",
            "alternate link",
        ),
        (
            "2003-12-13T18:30:02Z</updated>\n    <summary>",
            "2003-12-13t18:30:02z</updated>\n    <summary>",
            "RFC 3339",
        ),
        ("Robots Run", "Robots \u{1} Run", "invalid XML character"),
        ("Robots Run", "Robots &#x1; Run", "Character reference"),
        (
            "http://example.org/2003/12/13/atom03",
            "http://example.org/a b",
            "RFC 3986",
        ),
    ];
    assert_each_rejected(GOOD_ATOM, Feed::Atom, &atom_cases);
    let rss_cases = [
        (
            "<description>Liftoff to Space Exploration.</description>",
            "",
            "lacks the required <description>",
        ),
        (
            "<language>",
            "<foo>1</foo><language>",
            "<foo> is not an RSS 2.0 element",
        ),
        ("Tue, 03 Jun 2003", "Wed, 03 Jun 2003", "that date is a Tue"),
        (
            "Tue, 03 Jun 2003 09:39:21 GMT",
            "2003-06-03T09:39:21Z",
            "not an RFC 822 date-time",
        ),
        (
            "Tue, 03 Jun 2003 09:39:21 GMT",
            "Mon, 01 Jan 0001 00:00:00 +0000",
            "before 1900",
        ),
        ("09:39:21", "24:39:21", "no such date or time"),
        (
            "<link>http://liftoff.msfc.nasa.gov/news",
            "<link>/news",
            "not an absolute http(s) URL",
        ),
        ("news-starcity", "news starcity", "RFC 3986"),
        ("version=\"2.0\"", "version=\"0.92\"", "not \"2.0\""),
        (
            "<title>Star City</title>",
            "",
            "neither a <title> nor a <description>",
        ),
        ("Star City", "Star \u{1} City", "not well-formed"),
        ("Star City", "Star &#1; City", "not well-formed"),
        (
            "type=\"application/rss+xml\"",
            "type=\"text/html\"",
            "application/rss+xml",
        ),
    ];
    assert_each_rejected(GOOD_RSS, Feed::Rss, &rss_cases);
}

/// Each `(from, to, expected)` edit of the valid `good` feed is rejected, with `expected` among
/// the problems named.
fn assert_each_rejected(good: &str, kind: Feed, cases: &[(&str, &str, &str)]) {
    for (from, to, expected) in cases {
        let bad = good.replacen(from, to, 1);
        assert_ne!(bad, good, "{from}");
        let problems = feed_problems(bad.as_bytes(), kind)
            .unwrap_or_else(|| panic!("accepted with {to:?}:\n{bad}"));
        assert!(
            problems.contains(expected),
            "{expected:?} not in:\n{problems}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile rows, on every database
// ---------------------------------------------------------------------------------------------

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

/// Exactly 2,048 characters once encoded (the longest URL the protocol allows) with `extra`
/// 0, one more with 1.
fn long_loc(extra: usize) -> String {
    // "https://www.example.com/" is 24 characters and "é" is encoded as 6: 24 + 337 * 6 + 2.
    format!("/{}zz{}", "é".repeat(337), "z".repeat(extra))
}

crate::on_each_database!(hostile_rows_keep_both_feeds_valid);

async fn hostile_rows_keep_both_feeds_valid(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    // MariaDB's DATETIME starts in year 1000; the others hold any year from 1 on.
    let ancient = match db.backend {
        Backend::MariaDb => at(1000, 1, 1, 0, 0),
        Backend::Postgres | Backend::Sqlite => at(1, 1, 1, 0, 0),
    };
    let rows = vec![
        Row::new(1, "/café/日本語?q=été&x=<y>&z=\"'").lastmod("2024-05-01 12:00:00"),
        Row::new(2, "/a%01b").lastmod("2024-05-01 12:01:00"),
        Row::new(3, "/x%EF%BF%BE").lastmod("2024-05-01 12:02:00"),
        Row::new(4, "/news?a=1&b=2&amp;c=<3>&#1;").lastmod("2024-05-01 12:03:00"),
        Row::new(5, "/%00%08%0B%7F%C2%85%ED%A0%80%FF%EF%B7%90").lastmod("2024-05-01 12:04:00"),
        Row::new(6, &long_loc(0)).lastmod("2024-05-01 12:05:00"),
        Row::new(7, &long_loc(1)).lastmod("2024-05-01 12:59:00"),
        Row::new(8, "/future").lastmod("9999-12-31 23:59:59"),
        Row {
            lastmod: Some(ancient),
            ..Row::new(9, "/ancient")
        },
        Row::new(10, "/1899").lastmod("1899-12-31 23:59:59"),
        Row::new(11, "/1900").lastmod("1900-01-01 00:00:00"),
        Row::new(12, "/undated"),
        Row::new(13, "/😀/\u{202e}rtl\u{feff}/\u{fffd}").lastmod("2024-05-01 12:06:00"),
        Row::new(14, "https://elsewhere.example.org/x").lastmod("2030-01-01 00:00:00"),
        Row::new(15, "/raw\u{1}control").lastmod("2030-01-01 00:00:00"),
        Row::new(16, "/raw\u{fffe}nonchar").lastmod("2030-01-01 00:00:00"),
        Row::new(17, "/100%/%zz/%").lastmod("2024-05-01 12:07:00"),
        Row::new(18, "/?q=%3Cscript%3E%26amp;]]>").lastmod("2024-05-01 12:08:00"),
    ];
    db.insert_rows(&rows).await;
    if db.backend == Backend::MariaDb {
        // `insert_rows` binds a DateTime<Utc>, which sqlx sends to MySQL as a TIMESTAMP, and
        // MariaDB stores NULL for one outside TIMESTAMP's range (1970 to 2038). Write those
        // lastmods as DATETIME literals, so the rows hold what the test says.
        for row in &rows {
            if let Some(at) = row.lastmod.filter(|at| !(1971..=2037).contains(&at.year())) {
                db.exec(&format!(
                    "UPDATE sitemap_entries SET lastmod = '{}' WHERE id = {}",
                    at.format("%Y-%m-%d %H:%M:%S"),
                    row.id
                ))
                .await;
            }
        }
    }
    let stored_dates = db
        .scalar("SELECT count(*) FROM sitemap_entries WHERE lastmod IS NOT NULL")
        .await;
    assert_eq!(
        stored_dates as usize,
        rows.iter().filter(|r| r.lastmod.is_some()).count()
    );
    // The database holds the hostile text as given, so the feeds are fed what the test says.
    let loc_as_text = match db.backend {
        // MariaDB hands the TEXT column over as bytes.
        Backend::MariaDb => "CONVERT(loc USING utf8mb4)",
        Backend::Postgres | Backend::Sqlite => "loc",
    };
    assert_eq!(
        db.strings(&format!(
            "SELECT {loc_as_text} FROM sitemap_entries ORDER BY id"
        ))
        .await,
        rows.iter().map(|r| r.loc.clone()).collect::<Vec<_>>()
    );

    let app = spawn_app(&db.url, &[]).await;
    let [atom, rss] = fetch_valid_feeds(&app).await;
    let expected = expected_links(&rows, 100);
    assert_eq!(links(&atom, Feed::Atom), expected);
    assert_eq!(links(&rss, Feed::Rss), expected);
    assert!(
        expected.iter().any(|l| l.len() == 2048),
        "the 2,048-char URL is listed"
    );
    for gone in [
        "/ancient", "/1899", "/undated", "/x", "control", "nonchar", "/future",
    ] {
        assert!(
            !expected.iter().any(|l| l.ends_with(gone)),
            "{gone} is listed: {expected:?}"
        );
    }
    assert!(expected.iter().any(|l| l.ends_with("/1900")));

    // Titles: decoded where readable, escapes kept where not; the same in both feeds.
    let atom_listed = listed(&atom, Feed::Atom);
    let rss_listed = listed(&rss, Feed::Rss);
    let title_of = |suffix: &str| {
        let found = atom_listed
            .iter()
            .find(|l| l.link.ends_with(suffix))
            .unwrap_or_else(|| panic!("{suffix} not listed"));
        let in_rss = rss_listed.iter().find(|l| l.link == found.link).unwrap();
        assert_eq!(found.title, in_rss.title);
        found.title.clone()
    };
    assert_eq!(title_of("/a%01b"), "/a%01b");
    assert_eq!(title_of("/x%EF%BF%BE"), "/x%EF%BF%BE");
    assert_eq!(
        title_of("%C3%A9t%C3%A9&x=%3Cy%3E&z=%22%27"),
        "/café/日本語?q=été&x=<y>&z=\"'"
    );
    assert_eq!(
        title_of("/%00%08%0B%7F%C2%85%ED%A0%80%FF%EF%B7%90"),
        "/%00%08%0B%7F%C2%85%ED%A0%80%FF%EF%B7%90"
    );
    assert_eq!(
        title_of("/?q=%3Cscript%3E%26amp;%5D%5D%3E"),
        "/?q=<script>&amp;]]>"
    );
    // A hostile entry modified now moves to the top, and the feeds stay valid.
    db.set_lastmod(2, Utc::now() - chrono::Duration::minutes(1))
        .await;
    app.sweep().await;
    let [atom, rss] = fetch_valid_feeds(&app).await;
    for (body, kind) in [(&atom, Feed::Atom), (&rss, Feed::Rss)] {
        assert_eq!(
            links(body, kind)[0],
            "https://www.example.com/a%01b",
            "{kind:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Arbitrary rows in PostgreSQL
// ---------------------------------------------------------------------------------------------

const FEED_SIZE: usize = 25;

/// Text that is trouble for URL parsers, percent-decoding, XML or all three.
const NASTY: &[&str] = &[
    "&",
    "<",
    ">",
    "'",
    "\"",
    "%",
    "%%",
    "%0",
    "%zz",
    "?",
    "#",
    "/",
    "&amp;",
    "&#1;",
    "]]>",
    "<![CDATA[",
    "%01",
    "%00",
    "%0A",
    "%7F",
    "%C2%85",
    "%EF%BF%BE",
    "%EF%BF%BF",
    "%EF%B7%90",
    "%ED%A0%80",
    "%C0%80",
    "%F4%8F%BF%BF",
    "%F4%90%80%80",
    "%C3",
    "%C3%A9",
    "%E2%80%AE",
    "é",
    "日本語",
    "😀",
    "\u{202e}",
    "\u{feff}",
    "\u{fffd}",
    "\u{fffe}",
    "\u{1}",
    "\u{85}",
    " ",
    "\t",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9_.-]{1,8}",
        4 => prop::sample::select(NASTY).prop_map(String::from),
        // Escapes of arbitrary bytes: UTF-8 or not, characters XML can carry or not.
        3 => prop::collection::vec(any::<u8>(), 1..5)
            .prop_map(|bytes| bytes.iter().map(|b| format!("%{b:02X}")).collect::<String>()),
        2 => any::<char>().prop_map(String::from),
    ]
}

fn loc_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::collection::vec(piece(), 0..12).prop_map(|p| format!("/{}", p.concat())),
        2 => any::<String>().prop_map(|s| format!("/{s}")),
        1 => any::<String>(),
        1 => (300usize..345).prop_map(|n| format!("/{}", "é".repeat(n))),
    ]
}

fn lastmod_strategy() -> impl Strategy<Value = Option<DateTime<Utc>>> {
    prop_oneof![
        2 => Just(None),
        6 => (946_684_800i64..4_102_444_800, 0u32..1_000_000)
            .prop_map(|(s, us)| DateTime::from_timestamp(s, us * 1000)),
        1 => prop::sample::select(vec![
            at(1, 1, 1, 0, 0),
            at(99, 6, 15, 12, 0),
            at(1899, 12, 31, 23, 59),
            at(1900, 1, 1, 0, 0),
            at(1970, 1, 1, 0, 0),
            at(9999, 12, 31, 23, 59),
        ])
        .prop_map(Some),
    ]
}

/// Rows PostgreSQL can hold: no NUL in TEXT, unique ids and locs.
fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec((loc_strategy(), lastmod_strategy()), 5..60).prop_map(|raw| {
        let mut locs = HashSet::new();
        raw.into_iter()
            .map(|(loc, lastmod)| (loc.replace('\0', ""), lastmod))
            .filter(|(loc, _)| locs.insert(loc.clone()))
            .enumerate()
            .map(|(i, (loc, lastmod))| Row {
                lastmod,
                ..Row::new(i as i64 + 1, &loc)
            })
            .collect()
    })
}

async fn check_case(db: &TestDb, app: &TestApp, rows: &[Row]) -> Result<(), TestCaseError> {
    db.exec("TRUNCATE sitemap_entries").await;
    db.insert_rows(rows).await;
    app.sweep().await;
    let expected = expected_links(rows, FEED_SIZE);
    for kind in Feed::BOTH {
        let resp = app.get(kind.path()).await;
        prop_assert_eq!(resp.status(), 200);
        let body = resp.bytes().await.unwrap();
        if let Some(problems) = feed_problems(&body, kind) {
            return Err(TestCaseError::fail(format!(
                "{kind:?} feed refused:\n{problems}\n{}",
                String::from_utf8_lossy(&body)
            )));
        }
        prop_assert_eq!(links(&body, kind), expected.clone(), "{:?}", kind);
    }
    Ok(())
}

/// One database and one server for all cases: each case truncates, inserts and sweeps.
/// FEED_CASES=N runs more cases than the suite's default.
#[test]
fn arbitrary_locs_and_lastmods_keep_both_feeds_valid() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (db, app) = rt.block_on(async {
        let db = TestDb::new().await;
        let size = FEED_SIZE.to_string();
        let app = spawn_app(&db.url, &[("SITEMAP_FEED_SIZE", size.as_str())]).await;
        (db, app)
    });
    // Each step runs jing and Python three times; the failure names the feed and its text.
    let mut runner = database_runner(
        "FEED_CASES",
        6,
        Shrink {
            iterations: 200,
            millis: 60_000,
        },
    );
    let result = runner.run(&rows_strategy(), |rows| {
        rt.block_on(check_case(&db, &app, &rows))
    });
    rt.block_on(async move {
        drop(app);
        db.pg().close().await;
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The case CI's generator found: `/` and `/ ` are one URL once served, listed once.
#[tokio::test]
async fn rows_that_serve_one_url_are_one_entry() {
    let at = |s: &str| Some(s.parse().unwrap());
    let rows = vec![
        Row {
            lastmod: at("2000-01-01T00:00:00.028480Z"),
            ..Row::new(1, "/")
        },
        Row {
            lastmod: at("2011-09-25T16:26:15.982059Z"),
            ..Row::new(2, "/ ")
        },
        Row {
            lastmod: at("2043-01-26T13:06:25.416187Z"),
            ..Row::new(3, r#"/'Å:ὔ",\ºషആ𑄞¥ꬅກѨ🇺"চ&"ⶾਹ{𐖴Ֆ*'"#)
        },
        Row::new(4, r"/%0kf__5FS0n7--%B3%73%A3Jd\%C2%85"),
    ];
    let db = TestDb::new().await;
    let size = FEED_SIZE.to_string();
    let app = spawn_app(&db.url, &[("SITEMAP_FEED_SIZE", size.as_str())]).await;
    check_case(&db, &app, &rows).await.unwrap();
    for kind in Feed::BOTH {
        let body = app.get(kind.path()).await.bytes().await.unwrap();
        assert_eq!(links(&body, kind), ["https://www.example.com/"], "{kind:?}");
    }
}
