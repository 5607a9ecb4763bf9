//! Hostile data: arbitrary rows in the table must never break a file.
//!
//! Two property tests. The first is pure: any string at all (NUL included) either is refused by
//! `Loc::parse` or becomes a URL that is ASCII, at most 2,048 characters, under the base, a fixed
//! point of the normaliser, and that survives `write_url` and a real XML parser unchanged. The
//! second puts arbitrary rows (hostile `loc`, extreme `lastmod`, garbage `changefreq`, NaN and
//! out-of-range `priority`, extreme ids) into PostgreSQL, serves them through HTTP with tiny pages,
//! and checks every file against the official schema and against the library's own
//! `EntryRules` as the oracle: every row it accepts is served exactly once, in id order, with
//! exactly the `<url>` element `write_url` makes for it; nothing else is served.

use std::collections::HashSet;

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use sitemapd::config::BaseUrl;
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::{
    write_url, DocumentStyle, EntryRules, Loc, Namespaces, RawEntry, SkipReason,
};

use crate::helpers::*;

const PAGE_SIZE: usize = 7;

fn base() -> BaseUrl {
    BaseUrl::parse(BASE).unwrap()
}

fn oracle() -> EntryRules {
    EntryRules::new(base(), None, vec![])
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// Fragments that are known to be trouble for URL parsers, XML or both.
const NASTY: &[&str] = &[
    "&",
    "<",
    ">",
    "'",
    "\"",
    "%",
    "%2",
    "%41",
    "%zz",
    "%%",
    "%00",
    "%2e%2e",
    "%2F",
    " ",
    "\t",
    "\n",
    "\r",
    "\u{0}",
    "\u{1}",
    "\u{8}",
    "\u{b}",
    "\u{c}",
    "\u{1b}",
    "\u{1f}",
    "\u{7f}",
    "\u{80}",
    "\u{85}",
    "\u{9f}",
    "\u{a0}",
    "\u{200b}",
    "\u{2028}",
    "\u{feff}",
    "\u{d7ff}",
    "\u{e000}",
    "\u{fffd}",
    "\u{fffe}",
    "\u{ffff}",
    "\u{10000}",
    "\u{10ffff}",
    "é",
    "日本語",
    "😀",
    "İ",
    "ß",
    "#",
    "##",
    "?",
    "??",
    "/",
    "//",
    ".",
    "..",
    "/../",
    "/./",
    "[",
    "]",
    "|",
    "^",
    "{",
    "}",
    "`",
    "\\",
    "@",
    ":",
    ";",
    "=",
    "+",
    "$",
    ",",
    "!",
    "*",
    "(",
    ")",
    "~",
    "&amp;",
    "&#0;",
    "&#x1;",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<?",
    "?>",
    "\u{301}",
];

/// Starts of URLs: in scope, out of scope, other schemes, relative, tricky authorities.
const PREFIXES: &[&str] = &[
    "",
    "/",
    "https://www.example.com/",
    "https://www.example.com",
    "https://www.example.com?",
    "https://www.example.com#",
    "HTTPS://WWW.EXAMPLE.COM/",
    "https://www.EXAMPLE.com/",
    "https://www.example.com:443/",
    "https://www.example.com:8443/",
    "https://www.example.com:/",
    "http://www.example.com/",
    "https://other.example.com/",
    "https://example.com/",
    "https://www.example.com.evil.com/",
    "https://www.example.com./",
    "https://user:pw@www.example.com/",
    "https://@www.example.com/",
    "https://www.example.com@evil.com/",
    "https://www.example.com\\@evil.com/",
    "https:www.example.com/",
    "https:/www.example.com/",
    "//www.example.com/",
    "//evil.com/",
    "/\\evil.com/",
    "\\\\evil.com/",
    "javascript:",
    "javascript:alert(1)//https://www.example.com/",
    "JavaScript://www.example.com/%0aalert(1)",
    "data:text/html,",
    "mailto:",
    "ftp://www.example.com/",
    "file:///",
    "ws://www.example.com/",
    "https://www.exämple.com/",
    "https://xn--www.example.com/",
    "https://[::1]/",
    "https://127.0.0.1/",
    "   ",
    "\t/",
    " https://www.example.com/",
    "relative/",
    "./",
    "../",
    "?q=",
    "#frag",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9_.-]{1,10}",
        4 => prop::sample::select(NASTY).prop_map(String::from),
        2 => any::<char>().prop_map(String::from),
    ]
}

fn pieces() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|v| v.concat())
}

/// A string of exactly `target` characters once encoded (2,048 fits, 2,049 does not), built
/// with encodable characters so the encoded length is not the raw length.
fn exact_length() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "/",
            "https://www.example.com/",
            "HTTPS://www.example.com:443/",
        ]),
        "[a-zé &<>'\"%|^日😀]{0,40}",
        prop::sample::select(vec![MAX_LOC_CHARS, MAX_LOC_CHARS + 1]),
    )
        .prop_map(|(prefix, middle, target)| {
            // 'z' is no hex digit, so the padding never completes a `%XX` escape.
            let start = format!("{prefix}{middle}z");
            let encoded = Loc::parse(&start, &base())
                .expect("the exact-length generator only uses in-scope, encodable text")
                .as_str()
                .len();
            format!("{start}{}", "z".repeat(target.saturating_sub(encoded)))
        })
}

fn loc_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (prop::sample::select(PREFIXES), pieces()).prop_map(|(p, s)| format!("{p}{s}")),
        2 => any::<String>(),
        2 => any::<String>().prop_map(|s| format!("/{s}")),
        2 => any::<String>().prop_map(|s| format!("{BASE}{s}")),
        2 => exact_length(),
        1 => (1usize..3000).prop_map(|n| format!("{BASE}{}", "é".repeat(n / 6))),
    ]
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

fn lastmod_strategy() -> impl Strategy<Value = Option<DateTime<Utc>>> {
    prop_oneof![
        3 => Just(None),
        // Normal times, with microseconds (what timestamptz keeps).
        4 => (946_684_800i64..1_900_000_000, 0u32..1_000_000)
            .prop_map(|(s, us)| DateTime::from_timestamp(s, us * 1000)),
        1 => Just(Some(utc(1, 1, 1, 0, 0, 0))),
        1 => Just(Some(utc(9999, 12, 31, 23, 59, 59))),
        1 => Just(Some(utc(20000, 1, 1, 0, 0, 0))),
        // 1 BC: year 0 in chrono's proleptic calendar, `0000` in ISO 8601, no year at all in XSD 1.0.
        1 => Just(Some(utc(0, 6, 15, 12, 0, 0))),
        1 => Just(Some(utc(-44, 3, 15, 12, 0, 0))),
        1 => Just(Some(utc(1970, 1, 1, 0, 0, 0))),
        1 => (-4700i32..30000, 1u32..=12, 1u32..=28)
            .prop_map(|(y, m, d)| Some(utc(y, m, d, 0, 0, 0))),
    ]
}

fn changefreq_strategy() -> impl Strategy<Value = Option<String>> {
    let valid = [
        "always", "hourly", "daily", "weekly", "monthly", "yearly", "never",
    ];
    prop_oneof![
        2 => Just(None),
        3 => prop::sample::select(valid.to_vec()).prop_map(|s| Some(s.to_string())),
        2 => prop::sample::select(vec!["DAILY", " Weekly ", "Never\n", "mOnThLy"])
            .prop_map(|s| Some(s.to_string())),
        2 => prop::sample::select(vec!["", "sometimes", "daily<", "&", "dailyy", "1", "\u{1}"])
            .prop_map(|s| Some(s.to_string())),
        1 => any::<String>().prop_map(Some),
    ]
}

fn priority_strategy() -> impl Strategy<Value = Option<f32>> {
    prop_oneof![
        2 => Just(None),
        3 => (0.0f32..=1.0).prop_map(Some),
        3 => prop::sample::select(
            vec![
                0.0f32, -0.0, 1.0, 0.5, 0.99995, 0.00004, f32::MIN_POSITIVE, -0.1, -1e-30,
                1.0000001, 1.5, 100.0, f32::MAX, f32::MIN, f32::NAN, f32::INFINITY,
                f32::NEG_INFINITY,
            ]
        )
        .prop_map(Some),
        1 => any::<f32>().prop_map(Some),
    ]
}

fn id_strategy() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -50i64..5_000,
        1 => any::<i64>(),
        1 => prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1, 0, -1]),
    ]
}

#[derive(Debug, Clone)]
struct Row {
    id: i64,
    loc: String,
    lastmod: Option<DateTime<Utc>>,
    changefreq: Option<String>,
    priority: Option<f32>,
}

impl Row {
    fn raw(&self) -> RawEntry {
        RawEntry {
            id: self.id,
            loc: Some(self.loc.clone()),
            lastmod: self.lastmod,
            changefreq: self.changefreq.clone(),
            priority: self.priority.map(f64::from),
            ..RawEntry::default()
        }
    }
}

/// Rows PostgreSQL can hold: no NUL in TEXT, unique ids and unique locs (the table's keys).
fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (
            id_strategy(),
            loc_strategy(),
            lastmod_strategy(),
            changefreq_strategy(),
            priority_strategy(),
        ),
        50..200,
    )
    .prop_map(|raw| {
        let (mut ids, mut locs) = (HashSet::new(), HashSet::new());
        raw.into_iter()
            .filter_map(|(id, loc, lastmod, changefreq, priority)| {
                let loc = loc.replace('\0', "");
                let changefreq = changefreq.map(|c| c.replace('\0', ""));
                (ids.insert(id) && locs.insert(loc.clone())).then_some(Row {
                    id,
                    loc,
                    lastmod,
                    changefreq,
                    priority,
                })
            })
            .collect()
    })
}

// ---------------------------------------------------------------------------------------------
// The pure property: Loc::parse + write_url
// ---------------------------------------------------------------------------------------------

/// What must hold for any input string; `Err` describes the violation.
fn check_loc(raw: &str) -> Result<(), String> {
    let base = base();
    let loc = match Loc::parse(raw, &base) {
        Err(_) => return Ok(()),
        Ok(loc) => loc,
    };
    let s = loc.as_str();
    if !s.is_ascii() {
        return Err(format!("not ASCII: {s:?}"));
    }
    if s.len() > MAX_LOC_CHARS {
        return Err(format!("{} chars: {s:?}", s.len()));
    }
    if !s.starts_with(BASE) {
        return Err(format!("not under the base: {s:?}"));
    }
    if s.chars().any(|c| c.is_ascii_control() || c == ' ') {
        return Err(format!("control or space left in: {s:?}"));
    }
    let url = url::Url::parse(s).map_err(|e| format!("does not parse back ({e}): {s:?}"))?;
    if url.scheme() != "https"
        || url.host_str() != Some("www.example.com")
        || url.port().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(format!("parses back out of scope: {s:?}"));
    }
    // A served URL is a fixed point: normalising it again changes nothing.
    match Loc::parse(s, &base) {
        Ok(again) if again == loc => {}
        other => return Err(format!("not a fixed point: {s:?} -> {other:?}")),
    }
    // Written as XML and read back by a real parser, the text is the URL itself.
    let entry = oracle()
        .accept(&RawEntry {
            id: 1,
            loc: Some(raw.to_string()),
            ..Default::default()
        })
        .map_err(|e| format!("Loc::parse accepted but EntryRules refused: {e:?}"))?;
    let style = DocumentStyle::default();
    let mut doc = style.urlset_open(Namespaces::NONE);
    write_url(&mut doc, &entry);
    doc.extend_from_slice(style.urlset_close());
    let read = std::panic::catch_unwind(|| locs(&doc))
        .map_err(|_| format!("not well-formed XML: {}", String::from_utf8_lossy(&doc)))?;
    if read != [s] {
        return Err(format!("XML round trip gave {read:?} for {s:?}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_string_is_refused_or_becomes_a_safe_absolute_loc(
        raw in prop_oneof![
            loc_strategy(),
            // NUL and friends can reach Loc::parse from SQLite or a view even if not from TEXT.
            (pieces(), pieces()).prop_map(|(a, b)| format!("/{a}\u{0}{b}")),
        ]
    ) {
        check_loc(&raw).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn the_boundary_lengths_are_exactly_in_and_out() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&exact_length(), |raw| {
            match Loc::parse(&raw, &base()) {
                Ok(loc) => prop_assert_eq!(loc.as_str().len(), MAX_LOC_CHARS, "{:?}", raw),
                Err(reason) => prop_assert_eq!(reason, SkipReason::TooLong, "{:?}", raw),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn known_hostile_locs_hold_the_properties() {
    for raw in NASTY.iter().chain(PREFIXES) {
        for candidate in [
            raw.to_string(),
            format!("/{raw}"),
            format!("{BASE}{raw}"),
            format!("{raw}/x"),
        ] {
            if let Err(e) = check_loc(&candidate) {
                panic!("{candidate:?}: {e}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The served property: rows in PostgreSQL → HTTP → schema-valid files, exactly the oracle's URLs
// ---------------------------------------------------------------------------------------------

async fn load(db: &TestDb, rows: &[Row]) {
    db.exec("TRUNCATE sitemap_entries").await;
    for chunk in rows.chunks(500) {
        let mut q = sqlx::QueryBuilder::new(
            "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority) ",
        );
        q.push_values(chunk, |mut b, r| {
            b.push_bind(r.id)
                .push_bind(&r.loc)
                .push_bind(r.lastmod)
                .push_bind(&r.changefreq)
                .push_bind(r.priority);
        });
        q.build()
            .execute(db.pg())
            .await
            .expect("insert hostile rows");
    }
}

/// `<url>` elements of one urlset as served, between the prolog and the closing tag.
fn body_of(xml: &[u8]) -> &[u8] {
    let style = DocumentStyle::default();
    let open = style.urlset_open(Namespaces::NONE);
    let close = style.urlset_close();
    assert!(
        xml.starts_with(&open) && xml.ends_with(close),
        "unexpected framing: {}",
        String::from_utf8_lossy(&xml[..xml.len().min(300)])
    );
    &xml[open.len()..xml.len() - close.len()]
}

/// The optional tags of one `<url>`, checked without the library: a lastmod in years 1 to 9999 as
/// chrono writes RFC 3339 with seconds, a changefreq from the protocol's list in any case, a
/// priority from 0 to 1 to four decimals; anything else leaves the tag out.
fn tags_as_the_protocol_says(row: &Row, element: &str) -> Result<(), String> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        element.find(&open).map(|i| {
            let rest = &element[i + open.len()..];
            rest[..rest.find(&close).unwrap_or(rest.len())].to_string()
        })
    };
    let lastmod = row
        .lastmod
        .filter(|at| (1..=9999).contains(&chrono::Datelike::year(at)))
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, false));
    if tag("lastmod") != lastmod {
        return Err(format!(
            "lastmod {:?} for {row:?} in {element}",
            tag("lastmod")
        ));
    }
    let valid = [
        "always", "hourly", "daily", "weekly", "monthly", "yearly", "never",
    ];
    let changefreq = row
        .changefreq
        .as_deref()
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| valid.contains(&c.as_str()));
    if tag("changefreq") != changefreq {
        return Err(format!(
            "changefreq {:?} for {row:?} in {element}",
            tag("changefreq")
        ));
    }
    let priority = row
        .priority
        .map(f64::from)
        .filter(|p| (0.0..=1.0).contains(p));
    match (tag("priority"), priority) {
        (None, None) => {}
        (Some(text), Some(p))
            if text
                .parse::<f64>()
                .is_ok_and(|v| (v - p).abs() <= 0.00005 + 1e-9)
                && !text.contains(['e', 'E', '-', '+'])
                && text.contains('.') => {}
        (text, _) => return Err(format!("priority {text:?} for {row:?} in {element}")),
    }
    Ok(())
}

/// The lines xmllint names, and the rows they were written from: the failing input, exactly.
fn culprits(errors: &str, xml: &[u8], rows: &[Row]) -> String {
    let text = String::from_utf8_lossy(xml);
    let lines: Vec<&str> = text.lines().collect();
    let rules = oracle();
    let mut out = String::new();
    for no in errors
        .lines()
        .filter_map(|l| l.split(':').nth(1)?.parse::<usize>().ok())
    {
        let Some(line) = lines.get(no.wrapping_sub(1)) else {
            continue;
        };
        out.push_str(&format!("\nline {no}: {line}"));
        for row in rows {
            if let Ok(entry) = rules.accept(&row.raw()) {
                let mut element = Vec::new();
                write_url(&mut element, &entry);
                if element == format!("{line}\n").as_bytes() {
                    out.push_str(&format!("\n  written from {row:?}"));
                }
            }
        }
    }
    out
}

async fn check_served(app: &TestApp, rows: &[Row]) -> Result<(), TestCaseError> {
    let rules = oracle();
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by_key(|r| r.id);
    let mut expected_locs = Vec::new();
    let mut expected_body = Vec::new();
    for row in sorted {
        if let Ok(entry) = rules.accept(&row.raw()) {
            expected_locs.push(entry.loc.as_str().to_string());
            let start = expected_body.len();
            write_url(&mut expected_body, &entry);
            let element = String::from_utf8_lossy(&expected_body[start..]).into_owned();
            tags_as_the_protocol_says(row, &element).map_err(TestCaseError::fail)?;
        }
    }

    let index = app.get("/sitemap_index.xml").await;
    prop_assert_eq!(index.status(), 200);
    let index = index.bytes().await.unwrap();
    if let Some(e) = schema_errors(&index, "siteindex.xsd") {
        return Err(TestCaseError::fail(format!("index invalid: {e}")));
    }

    let mut served_locs = Vec::new();
    let mut served_body = Vec::new();
    let files = app.index_pages().await;
    for file in &files {
        let resp = app.get(&format!("/{file}")).await;
        prop_assert_eq!(resp.status(), 200, "{}", file);
        let xml = gunzip(&resp.bytes().await.unwrap());
        let page_locs = locs(&xml);
        prop_assert!(
            page_locs.len() <= PAGE_SIZE,
            "{} holds {}",
            file,
            page_locs.len()
        );
        if page_locs.is_empty() {
            // The one allowed empty urlset: a site with no entry at all, as page 1 alone.
            prop_assert!(
                expected_locs.is_empty() && files.len() == 1,
                "{} is an empty urlset among {:?}",
                file,
                files
            );
        } else if let Some(e) = schema_errors(&xml, "sitemap.xsd") {
            return Err(TestCaseError::fail(format!(
                "{file} invalid: {e}{}",
                culprits(&e, &xml, rows)
            )));
        }
        served_body.extend_from_slice(body_of(&xml));
        served_locs.extend(page_locs);
    }

    for loc in &served_locs {
        prop_assert!(loc.starts_with(BASE), "not under the base: {:?}", loc);
        prop_assert!(loc.len() <= MAX_LOC_CHARS, "{} chars: {:?}", loc.len(), loc);
        prop_assert!(loc.is_ascii(), "not ASCII: {:?}", loc);
    }
    prop_assert_eq!(&served_locs, &expected_locs);
    prop_assert!(
        served_body == expected_body,
        "served <url> elements differ from the oracle's:\nserved:   {}\nexpected: {}",
        String::from_utf8_lossy(&served_body),
        String::from_utf8_lossy(&expected_body)
    );
    Ok(())
}

/// One database and one server for all cases: each case truncates, inserts and sweeps.
#[test]
fn arbitrary_rows_in_postgres_give_valid_files_with_exactly_the_accepted_urls() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (db, app) = rt.block_on(async {
        let db = TestDb::new().await;
        let page_size = PAGE_SIZE.to_string();
        let app = spawn_app(
            &db.url,
            &[
                ("SITEMAP_PAGE_SIZE", page_size.as_str()),
                ("DATABASE_MAX_CONNECTIONS", "3"),
            ],
        )
        .await;
        (db, app)
    });
    // HOSTILE_CASES=N runs more cases, for a deeper search than the suite's default.
    let cases = std::env::var("HOSTILE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        // Each shrinking step is a round trip through the database and the server.
        // The failure message names the offending rows, so a short shrink is enough.
        max_shrink_iters: 1000,
        max_shrink_time: 20_000,
        ..ProptestConfig::default()
    });
    let result = runner.run(&rows_strategy(), |rows| {
        rt.block_on(async {
            load(&db, &rows).await;
            app.sweep().await;
            check_served(&app, &rows).await
        })
    });
    rt.block_on(async move {
        drop(app);
        db.pg().close().await;
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Found by the property above: PostgreSQL holds years before 1 AD (`0001-06-15 BC` is year 0
/// in chrono's proleptic calendar), and `0000` is no year in XSD 1.0, so the tag must go.
#[test]
fn a_lastmod_in_1_bc_is_dropped_not_written_as_year_0000() {
    for at in [
        utc(0, 6, 15, 12, 0, 0),
        utc(0, 1, 1, 0, 0, 0),
        utc(0, 12, 31, 23, 59, 59),
    ] {
        let entry = oracle()
            .accept(&RawEntry {
                id: 1,
                loc: Some("/a".into()),
                lastmod: Some(at),
                ..Default::default()
            })
            .unwrap();
        let mut element = Vec::new();
        write_url(&mut element, &entry);
        let element = String::from_utf8(element).unwrap();
        assert!(
            !element.contains("<lastmod>0000-"),
            "{at:?} is written as {element}"
        );
    }
    let first_ad = oracle()
        .accept(&RawEntry {
            id: 1,
            loc: Some("/a".into()),
            lastmod: Some(utc(1, 1, 1, 0, 0, 0)),
            ..Default::default()
        })
        .unwrap();
    assert!(
        first_ad.lastmod.is_some(),
        "year 1 is a valid xsd:dateTime year"
    );
}
