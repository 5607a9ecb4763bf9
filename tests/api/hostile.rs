//! Hostile data: arbitrary rows in the tables must never break a file.
//!
//! Two property tests. The first is pure: any string at all (NUL included) either is refused by
//! `Loc::parse` or becomes a URL that is ASCII, at most 2,048 characters, under the base, a fixed
//! point of the normaliser, and that survives `write_url` and a real XML parser unchanged. The
//! second puts arbitrary rows into PostgreSQL, MariaDB and SQLite, each holding them as it can
//! (see [`store`]): entries (hostile `loc`, extreme and junk `lastmod`, garbage `changefreq`, NaN
//! and out-of-range `priority`, extreme ids) and extension rows (hostile hreflangs and URLs,
//! several per entry, for entries that exist or not). It serves them through HTTP with tiny
//! pages and checks every file with checkers of its own: xmllint against the official schema
//! and the extension schemas, a namespace-aware parser (the root declares exactly the extension
//! namespaces its elements use; every extension URL is an RFC 3986 web URL; no hreflang twice in
//! a `<url>`), the text form of each file (the same URLs), and the library's own `EntryRules`
//! applied to the values the database holds as the oracle: every entry it accepts is served
//! exactly once, in id order, with exactly the `<url>` element `write_url` makes for it and the
//! extension rows it keeps; nothing else is served.

use std::collections::HashSet;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDateTime, TimeZone, Timelike, Utc};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use sitemapd::config::BaseUrl;
use sitemapd::sitemap::entry::{RawAlternate, RawImage, FUTURE_LASTMOD_ALLOWANCE_SECS};
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::writer::{IMAGE_NS, SITEMAP_NS, XHTML_NS};
use sitemapd::sitemap::{
    write_url, DocumentStyle, EntryRules, Loc, Namespaces, RawEntry, SkipReason,
};

use crate::helpers::*;
use crate::strategies::{database_runner, Shrink};

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
        // The edges of the first and last years, to the microsecond, and the years before
        // 1000 that MariaDB's DATETIME holds although its manual starts it at 1000.
        1 => (prop::sample::select(vec![0, 1, 999, 1000, 9999, 10000]), 0u32..2, 0u32..1_000_000)
            .prop_map(|(y, end, us)| {
                let at = if end == 0 { utc(y, 1, 1, 0, 0, 0) } else { utc(y, 12, 31, 23, 59, 59) };
                Some(at + chrono::Duration::microseconds(i64::from(us)) * if end == 0 { 1 } else { -1 } )
            }),
        1 => (0i32..1200, 1u32..=12, 1u32..=28, 0i64..86_400_000_000)
            .prop_map(|(y, m, d, us)| Some(utc(y, m, d, 0, 0, 0) + chrono::Duration::microseconds(us))),
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

/// Priorities as a double: what the generator means; each backend stores what its column can
/// hold (see [`store`]).
fn priority_strategy() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        2 => Just(None),
        3 => (0.0f64..=1.0).prop_map(Some),
        3 => prop::sample::select(
            vec![
                0.0f32, -0.0, 1.0, 0.5, 0.99995, 0.00004, f32::MIN_POSITIVE, -0.1, -1e-30,
                1.0000001, 1.5, 100.0, f32::MAX, f32::MIN, f32::NAN, f32::INFINITY,
                f32::NEG_INFINITY,
            ]
        )
        .prop_map(|p| Some(f64::from(p))),
        1 => any::<f32>().prop_map(|p| Some(f64::from(p))),
        // Doubles no REAL can hold: just past 1, rounding edges, beyond f32, subnormal.
        1 => prop::sample::select(
            vec![
                1.0 + 1e-12, 1.0 - 1e-12, 0.99995, 0.00005, 0.49995, 1e300, -1e300, 5e-324,
                -5e-324, f64::MAX, f64::NAN, f64::NEG_INFINITY,
            ]
        )
        .prop_map(Some),
        1 => any::<f64>().prop_map(Some),
    ]
}

fn id_strategy() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -50i64..5_000,
        1 => any::<i64>(),
        1 => prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1, 0, -1]),
    ]
}

/// How a lastmod is written where the column is text (SQLite): the forms its migration
/// documents (RFC 3339, and SQLite's own `YYYY-MM-DD HH:MM:SS` in UTC).
#[derive(Debug, Clone, Copy)]
enum TextForm {
    /// `2024-05-01T12:00:00.123456Z`
    Rfc3339Utc,
    /// RFC 3339 at an offset of this many minutes east of UTC: `2024-05-01T14:00:00+02:00`.
    /// Near years 1 and 9999 the local date and the UTC date are in different years.
    Rfc3339Offset(i32),
    /// `2024-05-01t12:00:00z`: RFC 3339 allows lowercase (section 5.6, NOTE).
    Rfc3339Lowercase,
    /// What SQLite's `CURRENT_TIMESTAMP` writes: `2024-05-01 12:00:00`, seconds only.
    SqliteSeconds,
    /// The same with microseconds: `2024-05-01 12:00:00.123456`.
    SqliteMicros,
    /// Unix seconds, as PHP's `time()` gives them: `1714564800`. Numbers up to 5,373,484 are
    /// Julian days to SQLite, and eight digits look like a compact date (refused), so instants
    /// before 1973-03-03 (100,000,000 s) are written as RFC 3339 instead.
    UnixSeconds,
}

impl TextForm {
    /// The text, and the instant it stands for (seconds-only text drops the fraction). Both
    /// forms have four-digit years: a text whose year needs more digits or a sign (chrono
    /// writes `+10000`, `-0044`) is in neither form, and stands for no time.
    fn write(self, at: DateTime<Utc>) -> (String, Option<DateTime<Utc>>) {
        let (text, year, meant) = match self {
            Self::Rfc3339Utc => (at.format("%Y-%m-%dT%H:%M:%S%.fZ"), at.year(), at),
            Self::Rfc3339Offset(minutes) => {
                let zone = FixedOffset::east_opt(minutes * 60).unwrap();
                let local = at.with_timezone(&zone);
                let text = local.format("%Y-%m-%dT%H:%M:%S%.f%:z").to_string();
                return (text, (0..=9999).contains(&local.year()).then_some(at));
            }
            Self::Rfc3339Lowercase => (at.format("%Y-%m-%dt%H:%M:%S%.fz"), at.year(), at),
            Self::SqliteSeconds => (
                at.format("%Y-%m-%d %H:%M:%S"),
                at.year(),
                at.with_nanosecond(0).unwrap(),
            ),
            Self::SqliteMicros => (at.format("%Y-%m-%d %H:%M:%S%.6f"), at.year(), at),
            Self::UnixSeconds if at.timestamp() >= 100_000_000 => {
                let meant = at.with_nanosecond(0).unwrap();
                let year = at.year();
                return (
                    at.timestamp().to_string(),
                    (0..=9999).contains(&year).then_some(meant),
                );
            }
            Self::UnixSeconds => return Self::Rfc3339Utc.write(at),
        };
        (
            text.to_string(),
            (0..=9999).contains(&year).then_some(meant),
        )
    }
}

fn text_form_strategy() -> impl Strategy<Value = TextForm> {
    prop_oneof![
        Just(TextForm::Rfc3339Utc),
        prop_oneof![
            (-14 * 60..=14 * 60),
            prop::sample::select(vec![-60, 60, 330, -570, 14 * 60, -14 * 60])
        ]
        .prop_map(TextForm::Rfc3339Offset),
        Just(TextForm::Rfc3339Lowercase),
        Just(TextForm::SqliteSeconds),
        Just(TextForm::SqliteMicros),
        Just(TextForm::UnixSeconds),
    ]
}

/// Lastmod values that are no time at all. Those marked `true` (a zero year, month or day) a
/// MariaDB DATETIME holds too: CMS tables are full of `0000-00-00 00:00:00`.
const JUNK_LASTMODS: &[(&str, bool)] = &[
    ("0000-00-00 00:00:00", true),
    ("2024-00-00 00:00:00", true),
    ("2024-05-00 12:00:00", true),
    ("2024-00-15 12:00:00", true),
    ("", false),
    (" ", false),
    ("yesterday", false),
    ("now", false),
    ("NULL", false),
    ("12:00:00", false),
    ("2024-02-30 12:00:00", false),
    ("2024-13-01 00:00:00", false),
    ("2024-05-01T25:00:00Z", false),
    ("2024-05-01T12:60:00Z", false),
    ("2024-05-01T12:00:00+24:00", false),
    ("2024-05-01T12:00:00 UTC", false),
    ("Wed, 01 May 2024 12:00:00 GMT", false),
];

/// A lastmod as the generator means it: none, an instant (written as `TextForm` where the
/// column is text), or text that is no time (`true`: MariaDB holds it as a zero date).
#[derive(Debug, Clone)]
enum GenLastmod {
    Null,
    At(DateTime<Utc>, TextForm),
    Junk(String, bool),
}

fn gen_lastmod_strategy() -> impl Strategy<Value = GenLastmod> {
    prop_oneof![
        10 => (lastmod_strategy(), text_form_strategy())
            .prop_map(|(at, form)| at.map_or(GenLastmod::Null, |at| GenLastmod::At(at, form))),
        1 => prop::sample::select(JUNK_LASTMODS)
            .prop_map(|(text, zero)| GenLastmod::Junk(text.to_string(), zero)),
        1 => any::<String>().prop_map(|text| GenLastmod::Junk(text, false)),
    ]
}

/// Language tags: valid, valid but odd (case, spaces, private use), near misses, and junk.
fn hreflang_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "fr", "en", "en-GB", "en-gb", "EN-GB", "de-CH-1901", "zh-Hant", "zh-Hant-TW", "es-419",
            "sr-Latn-RS", "x-default", "X-Default", "haw", "fr", "FR", " fr", "fr ", "\tfr\n",
            "\u{a0}fr\u{3000}", "\u{85}de",
        ])
        .prop_map(String::from),
        3 => "[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8}){0,3}",
        3 => prop::sample::select(vec![
            "", " ", "f", "english", "en_GB", "en-", "-en", "en--GB", "fr-toolongsubtag", "e1",
            "123", "fr\"x", "fr<", "fr&amp;", "fr'", "x-defaults", "x-default-", "xx-default",
            "i-klingon", "x-klingon", "fr\u{0}", "\u{0}fr", "f\u{0}r", "én", "ﬀ", "İt", "fr\u{301}",
            "ｆｒ", "fr\u{200b}", "fr\u{feff}", "d\u{1}e", "en-GB-", "a-b", "abcd",
        ])
        .prop_map(String::from),
        1 => pieces(),
        1 => any::<String>(),
    ]
}

/// Starts of alternate and image URLs, which may be on any http(s) host: other hosts fine and
/// hostile, hosts with characters RFC 3986 does not allow in a host, credentials, odd ports.
const OTHER_HOSTS: &[&str] = &[
    "https://www.example.fr/",
    "http://cdn.example.net/",
    "HTTPS://CDN.EXAMPLE.NET/",
    "https://cdn.example.net:8443/",
    "https://cdn.example.net:99999/",
    "https://cdn.example.net:0/",
    "https://[::1]:8080/",
    "https://[::ffff:127.0.0.1]/",
    "https://127.1/",
    "https://0x7f.0.0.1/",
    "https://bücher.example/",
    "https://xn--bcher-kva.example/",
    "https://xn--/",
    "https://ex%41mple.com/",
    "https://a{b}.example/",
    "https://a\"b.example/",
    "https://a`b.example/",
    "https://a'b.example/",
    "https://a!$&()*+,;=.example/",
    "https://a~b_c.example/",
    "https://a..b.example/",
    "https://.example/",
    "https://user@cdn.example.net/",
    "https://:pw@cdn.example.net/",
    "https://cdn.example.net\\x.jpg",
    "http:/cdn.example.net/",
    "https:///cdn.example.net/",
    "ftp://cdn.example.net/",
    "data:image/png;base64,",
    "//cdn.example.net/",
];

/// A URL of exactly `target` characters once encoded on another host (2,048 fits, 2,049 not).
fn exact_length_anywhere() -> impl Strategy<Value = String> {
    (
        "[a-zé &<>'\"%|^日😀]{0,40}",
        prop::sample::select(vec![MAX_LOC_CHARS, MAX_LOC_CHARS + 1]),
    )
        .prop_map(|(middle, target)| {
            let start = format!("https://cdn.example.net/{middle}z");
            let encoded = Loc::parse_anywhere(&start, &base())
                .expect("the exact-length generator only uses encodable text")
                .as_str()
                .len();
            format!("{start}{}", "z".repeat(target.saturating_sub(encoded)))
        })
}

fn href_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "(https://www\\.example\\.(fr|de)|http://cdn\\.example\\.net|)/[a-z0-9/._-]{0,30}",
        4 => (prop::sample::select(OTHER_HOSTS), pieces()).prop_map(|(p, s)| format!("{p}{s}")),
        4 => loc_strategy(),
        1 => exact_length_anywhere(),
    ]
}

#[derive(Debug, Clone)]
struct Row {
    id: i64,
    loc: String,
    lastmod: GenLastmod,
    changefreq: Option<String>,
    priority: Option<f64>,
}

/// A `sitemap_alternates` row as generated: `(entry_id, hreflang, href)`.
type AltRow = (i64, String, String);
/// A `sitemap_images` row as generated: `(entry_id, loc)`.
type ImgRow = (i64, String);

/// One case: entries and the extension rows that point at them (or at no entry).
#[derive(Debug, Clone)]
struct Case {
    rows: Vec<Row>,
    alternates: Vec<AltRow>,
    images: Vec<ImgRow>,
}

/// Arbitrary rows; keys and what each backend can hold are settled by [`store`].
fn case_strategy() -> impl Strategy<Value = Case> {
    let row = (
        id_strategy(),
        loc_strategy(),
        gen_lastmod_strategy(),
        changefreq_strategy(),
        priority_strategy(),
    )
        .prop_map(|(id, loc, lastmod, changefreq, priority)| Row {
            id,
            loc,
            lastmod,
            changefreq,
            priority,
        });
    prop::collection::vec(row, 50..200).prop_flat_map(|rows| {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        // A few entries get several extension rows, others one, some rows no entry at all.
        let few = ids[..12].to_vec();
        let entry_id = prop_oneof![
            3 => prop::sample::select(few),
            2 => prop::sample::select(ids),
            1 => id_strategy(),
        ];
        let alternates = prop::collection::vec(
            (entry_id.clone(), hreflang_strategy(), href_strategy()),
            0..80,
        );
        let images = prop::collection::vec((entry_id, href_strategy()), 0..80);
        (Just(rows), alternates, images).prop_map(|(rows, alternates, images)| Case {
            rows,
            alternates,
            images,
        })
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
// The served property: rows in each database → HTTP → schema-valid files, exactly the oracle's
// ---------------------------------------------------------------------------------------------

/// A lastmod as bound for one backend's column.
#[derive(Debug, Clone, PartialEq)]
enum Bound {
    Null,
    /// PostgreSQL's TIMESTAMPTZ.
    Instant(DateTime<Utc>),
    /// MariaDB's DATETIME(6), bound as a DATETIME (a DateTime<Utc> would go as a TIMESTAMP).
    Naive(NaiveDateTime),
    /// SQLite's text, or a zero date MariaDB's DATETIME takes from text.
    Text(String),
}

/// A row as one backend holds it.
#[derive(Debug, Clone)]
struct Stored {
    id: i64,
    loc: String,
    lastmod: Bound,
    /// The instant the held lastmod stands for: `None` for NULL and for what is no time.
    meant: Option<DateTime<Utc>>,
    changefreq: Option<String>,
    /// The value the column holds (PostgreSQL's REAL widened to a double).
    priority: Option<f64>,
}

/// A case as one backend holds it.
#[derive(Debug, Clone)]
struct StoredCase {
    backend: Backend,
    rows: Vec<Stored>,
    /// What the test inserts; MariaDB may keep fewer (see [`store`]).
    alternates: Vec<AltRow>,
    images: Vec<ImgRow>,
}

/// Maps a generated case to what `backend` can store; the oracle is applied to these values.
///
/// | value | PostgreSQL | MariaDB | SQLite |
/// | --- | --- | --- | --- |
/// | id | any | any (0 too: the loading session sets NO_AUTO_VALUE_ON_ZERO) | any |
/// | NUL in any text | removed (TEXT cannot hold it) | kept | kept |
/// | lastmod instant | kept, any year (TIMESTAMPTZ: 4713 BC on) | kept for years 0 to 9999 (DATETIME(6), to the microsecond), else NULL | text in one of [`TextForm`], meaning the instant it writes (none when that needs a year of other than four digits) |
/// | lastmod junk | NULL | a zero date (month or day 0) kept as such, which is no time; other junk NULL | the text as it is, which is no time |
/// | priority | rounded to single precision (REAL; past its range ±inf), NaN and ±inf kept | NaN and ±inf become NULL (DOUBLE cannot hold them) | NaN becomes NULL (SQLite stores NULL for it), ±inf kept |
/// | alternates | one per (entry_id, hreflang), byte for byte | hreflang over 255 characters dropped (VARCHAR(255)); one per (entry_id, hreflang) as the column's case- and accent-insensitive collation compares: the server keeps the first (INSERT IGNORE), and the test reads back which | as PostgreSQL |
///
/// Then ids and locs are made unique, first row wins (the table's keys: bytes for loc on every
/// backend: PostgreSQL's deterministic collation, MariaDB's hash of the bytes, SQLite's BINARY).
fn store(backend: Backend, case: &Case) -> StoredCase {
    let text = |s: &str| match backend {
        Backend::Postgres => s.replace('\0', ""),
        Backend::MariaDb | Backend::Sqlite => s.to_string(),
    };
    let (mut ids, mut locs) = (HashSet::new(), HashSet::new());
    let rows = case
        .rows
        .iter()
        .filter_map(|row| {
            let (lastmod, meant) = match (backend, &row.lastmod) {
                (_, GenLastmod::Null) => (Bound::Null, None),
                (Backend::Postgres, GenLastmod::At(at, _)) => (Bound::Instant(*at), Some(*at)),
                (Backend::Postgres, GenLastmod::Junk(..)) => (Bound::Null, None),
                (Backend::MariaDb, GenLastmod::At(at, _)) if (0..=9999).contains(&at.year()) => {
                    (Bound::Naive(at.naive_utc()), Some(*at))
                }
                (Backend::MariaDb, GenLastmod::At(..)) => (Bound::Null, None),
                (Backend::MariaDb, GenLastmod::Junk(zero_date, true)) => {
                    (Bound::Text(zero_date.clone()), None)
                }
                (Backend::MariaDb, GenLastmod::Junk(_, false)) => (Bound::Null, None),
                (Backend::Sqlite, GenLastmod::At(at, form)) => {
                    let (text, meant) = form.write(*at);
                    (Bound::Text(text), meant)
                }
                (Backend::Sqlite, GenLastmod::Junk(junk, _)) => (Bound::Text(junk.clone()), None),
            };
            let priority = match backend {
                Backend::Postgres => row.priority.map(|p| f64::from(p as f32)),
                Backend::MariaDb => row.priority.filter(|p| p.is_finite()),
                Backend::Sqlite => row.priority.filter(|p| !p.is_nan()),
            };
            let loc = text(&row.loc);
            (ids.insert(row.id) && locs.insert(loc.clone())).then(|| Stored {
                id: row.id,
                loc,
                lastmod,
                meant,
                changefreq: row.changefreq.as_deref().map(text),
                priority,
            })
        })
        .collect();
    let mut keys = HashSet::new();
    let alternates = case
        .alternates
        .iter()
        .map(|(id, hreflang, href)| (*id, text(hreflang), text(href)))
        .filter(|(id, hreflang, _)| match backend {
            Backend::MariaDb => hreflang.chars().count() <= 255,
            Backend::Postgres | Backend::Sqlite => keys.insert((*id, hreflang.clone())),
        })
        .collect();
    let images = case
        .images
        .iter()
        .map(|(id, loc)| (*id, text(loc)))
        .collect();
    StoredCase {
        backend,
        rows,
        alternates,
        images,
    }
}

/// Replaces the tables' rows with the case's, in one transaction: a sweep the change
/// notifications start meanwhile sees all of it or none.
async fn load(db: &TestDb, case: &StoredCase) {
    const CLEAR: &str =
        "DELETE FROM sitemap_entries; DELETE FROM sitemap_alternates; DELETE FROM sitemap_images";
    const ENTRIES: &str = "INSERT INTO sitemap_entries (id, loc, changefreq, lastmod, priority) ";
    const IMAGES: &str = "INSERT INTO sitemap_images (entry_id, loc) ";
    macro_rules! fill {
        ($pool:expr, $Db:ty, $session:expr, $alternates:expr, |$b:ident, $row:ident| $bind:block) => {
            async {
                let mut tx = $pool.begin().await?;
                sqlx::raw_sql($session).execute(&mut *tx).await?;
                sqlx::raw_sql(CLEAR).execute(&mut *tx).await?;
                for chunk in case.rows.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$Db>::new(ENTRIES);
                    q.push_values(chunk, |mut $b, $row| {
                        $b.push_bind($row.id)
                            .push_bind($row.loc.clone())
                            .push_bind($row.changefreq.clone());
                        $bind
                    });
                    q.build().execute(&mut *tx).await?;
                }
                for chunk in case.alternates.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$Db>::new($alternates);
                    q.push_values(chunk, |mut b, (id, hreflang, href)| {
                        b.push_bind(*id)
                            .push_bind(hreflang.clone())
                            .push_bind(href.clone());
                    });
                    q.build().execute(&mut *tx).await?;
                }
                for chunk in case.images.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$Db>::new(IMAGES);
                    q.push_values(chunk, |mut b, (id, loc)| {
                        b.push_bind(*id).push_bind(loc.clone());
                    });
                    q.build().execute(&mut *tx).await?;
                }
                tx.commit().await
            }
            .await
        };
    }
    let alternates = "INSERT INTO sitemap_alternates (entry_id, hreflang, href) ";
    let loaded = match &db.pool {
        TestPool::Postgres(pool) => {
            fill!(pool, sqlx::Postgres, "SELECT 1", alternates, |b, row| {
                b.push_bind(match &row.lastmod {
                    Bound::Null => None,
                    Bound::Instant(at) => Some(*at),
                    other => unreachable!("{other:?} on PostgreSQL"),
                })
                .push_bind(row.priority.map(|p| p as f32));
            })
        }
        // Zero dates are refused under NO_ZERO_DATE/NO_ZERO_IN_DATE (MySQL's default); this
        // session allows them, as CMS installations commonly do. An id of 0 would make
        // AUTO_INCREMENT assign the next id, unless NO_AUTO_VALUE_ON_ZERO (as mysqldump sets
        // it). Alternates whose hreflang equals another's in the column's collation are left
        // to the server: INSERT IGNORE.
        TestPool::MariaDb(pool) => fill!(
            pool,
            sqlx::MySql,
            "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO'",
            "INSERT IGNORE INTO sitemap_alternates (entry_id, hreflang, href) ",
            |b, row| {
                match &row.lastmod {
                    Bound::Null => b.push_bind(None::<NaiveDateTime>),
                    Bound::Naive(at) => b.push_bind(Some(*at)),
                    Bound::Text(zero_date) => b.push_bind(Some(zero_date.clone())),
                    other => unreachable!("{other:?} on MariaDB"),
                };
                b.push_bind(row.priority);
            }
        ),
        TestPool::Sqlite(pool) => fill!(pool, sqlx::Sqlite, "SELECT 1", alternates, |b, row| {
            b.push_bind(match &row.lastmod {
                Bound::Null => None,
                Bound::Text(text) => Some(text.clone()),
                other => unreachable!("{other:?} on SQLite"),
            })
            .push_bind(row.priority);
        }),
    };
    loaded.expect("load the case");
}

/// What the database holds, read back without the service: entries as
/// `(id, loc, lastmod as text, changefreq, priority)`, alternates and images in the order the
/// service reads them (its own ORDER BY: alternates by hreflang, on MariaDB byte for byte).
struct HeldRows {
    entries: Vec<HeldEntry>,
    alternates: Vec<AltRow>,
    images: Vec<ImgRow>,
}

/// `(id, loc, lastmod, changefreq, priority)` as read back; lastmod as text but on PostgreSQL.
type HeldEntry<Lastmod = Option<String>> = (i64, String, Lastmod, Option<String>, Option<f64>);

async fn held(db: &TestDb) -> HeldRows {
    let (entries, alternates, images) = match &db.pool {
        TestPool::Postgres(pool) => {
            let entries: Vec<HeldEntry<Option<DateTime<Utc>>>> =
                sqlx::query_as(
                    "SELECT id, loc, lastmod, changefreq, priority::float8 \
                     FROM sitemap_entries ORDER BY id",
                )
                .fetch_all(pool)
                .await
                .unwrap();
            let entries = entries
                .into_iter()
                .map(|(id, loc, at, c, p)| (id, loc, at.map(pg_text), c, p))
                .collect();
            (
                entries,
                sqlx::query_as(
                    "SELECT entry_id::int8 AS entry_id, hreflang::text AS hreflang, \
                     href::text AS href FROM sitemap_alternates ORDER BY entry_id, hreflang, href",
                )
                .fetch_all(pool)
                .await
                .unwrap(),
                sqlx::query_as(
                    "SELECT entry_id::int8 AS entry_id, loc::text AS loc \
                     FROM sitemap_images ORDER BY entry_id, id",
                )
                .fetch_all(pool)
                .await
                .unwrap(),
            )
        }
        TestPool::MariaDb(pool) => (
            sqlx::query_as(
                "SELECT id, CONVERT(loc USING utf8mb4), CAST(lastmod AS CHAR), changefreq, \
                 priority FROM sitemap_entries ORDER BY id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT CAST(entry_id AS SIGNED) AS entry_id, CAST(hreflang AS CHAR) AS hreflang, \
                 CAST(href AS CHAR) AS href FROM sitemap_alternates ORDER BY entry_id, CAST(hreflang AS BINARY), CAST(href AS BINARY)",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT CAST(entry_id AS SIGNED) AS entry_id, CAST(loc AS CHAR) AS loc \
                 FROM sitemap_images ORDER BY entry_id, id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
        ),
        TestPool::Sqlite(pool) => (
            sqlx::query_as(
                "SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries ORDER BY id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT entry_id, CAST(hreflang AS TEXT) AS hreflang, CAST(href AS TEXT) AS href \
                 FROM sitemap_alternates ORDER BY entry_id, hreflang, href",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT entry_id, CAST(loc AS TEXT) AS loc FROM sitemap_images ORDER BY entry_id, id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
        ),
    };
    HeldRows {
        entries,
        alternates,
        images,
    }
}

fn pg_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A lastmod as [`held`] reads it back.
fn held_text(bound: &Bound) -> Option<String> {
    match bound {
        Bound::Null => None,
        Bound::Instant(at) => Some(pg_text(*at)),
        Bound::Naive(at) => Some(at.format("%Y-%m-%d %H:%M:%S%.6f").to_string()),
        Bound::Text(text) => Some(text.clone()),
    }
}

fn sorted<T: Ord + Clone>(rows: &[T]) -> Vec<T> {
    let mut rows = rows.to_vec();
    rows.sort();
    rows
}

/// Checks that the database holds what [`store`] says: otherwise the test's model of the
/// backend is wrong, not the service. Returns what it holds.
async fn check_model(db: &TestDb, case: &StoredCase) -> Result<HeldRows, TestCaseError> {
    let held = held(db).await;
    let mut model: Vec<&Stored> = case.rows.iter().collect();
    model.sort_by_key(|r| r.id);
    prop_assert_eq!(held.entries.len(), model.len(), "entries held");
    for (held, row) in held.entries.iter().zip(model) {
        let mut lastmod = held_text(&row.lastmod);
        if case.backend == Backend::MariaDb {
            // MariaDB writes a zero date back with its microseconds.
            if let (Bound::Text(_), Some(text)) = (&row.lastmod, &mut lastmod) {
                text.push_str(".000000");
            }
        }
        let same_priority = match (held.4, row.priority) {
            (Some(a), Some(b)) => a == b || (a.is_nan() && b.is_nan()),
            (a, b) => a.is_none() && b.is_none(),
        };
        prop_assert!(
            held.0 == row.id
                && held.1 == row.loc
                && held.2 == lastmod
                && held.3 == row.changefreq
                && same_priority,
            "{:?} holds {:?} for {:?}",
            case.backend,
            held,
            row
        );
    }
    // Images keep their order of insertion within an entry.
    let mut images = case.images.clone();
    images.sort_by_key(|(id, _)| *id);
    prop_assert_eq!(&held.images, &images, "images held");
    let kept = sorted(&held.alternates);
    match case.backend {
        Backend::Postgres | Backend::Sqlite => {
            prop_assert_eq!(&kept, &sorted(&case.alternates), "alternates held")
        }
        Backend::MariaDb => {
            let mut inserted = sorted(&case.alternates);
            for row in &kept {
                let Some(at) = inserted.iter().position(|r| r == row) else {
                    return Err(TestCaseError::fail(format!(
                        "MariaDB holds an alternate that was not inserted: {row:?}"
                    )));
                };
                inserted.remove(at);
            }
            let entries = |rows: &[AltRow]| rows.iter().map(|r| r.0).collect::<HashSet<_>>();
            prop_assert_eq!(
                entries(&kept),
                entries(&case.alternates),
                "every entry keeps an alternate"
            );
        }
    }
    Ok(held)
}

/// The service's input for a held row: the values the database holds, the extension rows in
/// the order the database gives them.
fn raw_entry(row: &Stored, held: &HeldRows) -> RawEntry {
    RawEntry {
        id: row.id,
        loc: Some(row.loc.clone()),
        lastmod: row.meant,
        changefreq: row.changefreq.clone(),
        priority: row.priority,
        alternates: held
            .alternates
            .iter()
            .filter(|(id, _, _)| *id == row.id)
            .map(|(_, hreflang, href)| RawAlternate {
                hreflang: Some(hreflang.clone()),
                href: Some(href.clone()),
            })
            .collect(),
        images: held
            .images
            .iter()
            .filter(|(id, _)| *id == row.id)
            .map(|(_, loc)| RawImage {
                loc: Some(loc.clone()),
            })
            .collect(),
        ..RawEntry::default()
    }
}

/// The `<url>` elements of one urlset as served, and the extension namespaces its root
/// declares, which must be exactly those its elements use.
fn body_of(xml: &[u8]) -> Result<(&[u8], Namespaces), String> {
    let style = DocumentStyle::default();
    let close = style.urlset_close();
    let framing = || {
        format!(
            "unexpected framing: {}",
            String::from_utf8_lossy(&xml[..xml.len().min(400)])
        )
    };
    for declared in [
        Namespaces::NONE,
        Namespaces::XHTML,
        Namespaces::IMAGE,
        Namespaces::XHTML.union(Namespaces::IMAGE),
    ] {
        let open = style.urlset_open(declared);
        if xml.starts_with(&open) && xml.ends_with(close) {
            let body = &xml[open.len()..xml.len() - close.len()];
            // Text is escaped, so `<` starts an element: these are the extension elements.
            let contains = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
            let used = Namespaces {
                xhtml: contains(b"<xhtml:link "),
                image: contains(b"<image:image>"),
                ..Namespaces::NONE
            };
            if used != declared {
                return Err(format!(
                    "the root declares {declared:?} but the file uses {used:?}"
                ));
            }
            return Ok((body, declared));
        }
    }
    Err(framing())
}

/// The `<loc>` of each `<url>` (sitemap namespace only, not `image:loc`), read with a
/// namespace-aware parser, and the extension values, checked without the library: per `<url>`
/// no hreflang twice, every href and image URL absolute http(s) on some host, no credentials,
/// ASCII from RFC 3986's characters only, at most 2,048 characters.
fn read_urlset(xml: &[u8]) -> Result<Vec<String>, String> {
    use quick_xml::events::Event;
    use quick_xml::name::{Namespace, ResolveResult};
    let mut reader = quick_xml::NsReader::from_reader(xml);
    let mut buf = Vec::new();
    let mut locs = Vec::new();
    let mut hreflangs = HashSet::new();
    let mut text_of: Option<&'static str> = None;
    loop {
        let (ns, event) = reader
            .read_resolved_event_into(&mut buf)
            .map_err(|e| format!("not well-formed: {e}"))?;
        let ns = match ns {
            ResolveResult::Bound(Namespace(ns)) => ns.to_vec(),
            _ => Vec::new(),
        };
        let ns = String::from_utf8_lossy(&ns).into_owned();
        match event {
            Event::Start(e) | Event::Empty(e) => {
                let local = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                match (ns.as_str(), local.as_str()) {
                    (SITEMAP_NS, "url") => hreflangs.clear(),
                    (SITEMAP_NS, "loc") => text_of = Some("loc"),
                    (IMAGE_NS, "loc") => text_of = Some("image"),
                    (XHTML_NS, "link") => {
                        let attribute = |name: &[u8]| {
                            e.try_get_attribute(name)
                                .ok()
                                .flatten()
                                .map(|a| a.unescape_value().unwrap().into_owned())
                        };
                        let hreflang = attribute(b"hreflang").unwrap_or_default();
                        if !hreflangs.insert(hreflang.clone()) {
                            return Err(format!("hreflang {hreflang:?} twice in one <url>"));
                        }
                        if attribute(b"rel").as_deref() != Some("alternate") {
                            return Err("an xhtml:link without rel=\"alternate\"".into());
                        }
                        web_url(&attribute(b"href").unwrap_or_default())?;
                    }
                    _ => {}
                }
            }
            Event::Text(t) => {
                let text = t.unescape().map_err(|e| e.to_string())?.into_owned();
                match text_of.take() {
                    Some("loc") => locs.push(text),
                    Some(_) => web_url(&text)?,
                    None => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(locs)
}

/// An absolute http(s) URL with a host and no credentials, RFC 3986 characters only.
fn web_url(value: &str) -> Result<(), String> {
    let rfc3986 = |b: u8| b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b);
    if value.len() > MAX_LOC_CHARS || !value.bytes().all(rfc3986) {
        return Err(format!(
            "not an RFC 3986 URL of at most 2,048 characters: {value:?}"
        ));
    }
    let url = url::Url::parse(value).map_err(|e| format!("{value:?}: {e}"))?;
    let host = url.host_str().unwrap_or("");
    if !matches!(url.scheme(), "http" | "https")
        || host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=[]:%".contains(&b))
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(format!("not a web URL: {value:?}"));
    }
    Ok(())
}

/// The optional tags of one `<url>`, checked without the library: a lastmod in years 1 to 9999 as
/// chrono writes RFC 3339 with seconds, a changefreq from the protocol's list in any case, a
/// priority from 0 to 1 to four decimals; anything else leaves the tag out.
fn tags_as_the_protocol_says(row: &Stored, element: &str) -> Result<(), String> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        element.find(&open).map(|i| {
            let rest = &element[i + open.len()..];
            rest[..rest.find(&close).unwrap_or(rest.len())].to_string()
        })
    };
    // A lastmod in the future (past the allowance for clock skew) is left out.
    let latest = Utc::now().timestamp() + FUTURE_LASTMOD_ALLOWANCE_SECS;
    let lastmod = row
        .meant
        .filter(|at| (1..=9999).contains(&at.year()) && at.timestamp() <= latest)
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
    let priority = row.priority.filter(|p| (0.0..=1.0).contains(p));
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
fn culprits(errors: &str, xml: &[u8], written: &[(Vec<u8>, String)]) -> String {
    let text = String::from_utf8_lossy(xml);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for no in errors
        .lines()
        .filter_map(|l| l.split(':').nth(1)?.parse::<usize>().ok())
    {
        let Some(line) = lines.get(no.wrapping_sub(1)) else {
            continue;
        };
        out.push_str(&format!("\nline {no}: {line}"));
        for (element, from) in written {
            if element == format!("{line}\n").as_bytes() {
                out.push_str(&format!("\n  written from {from}"));
            }
        }
    }
    out
}

async fn check_served(
    app: &TestApp,
    case: &StoredCase,
    held: &HeldRows,
) -> Result<(), TestCaseError> {
    let rules = oracle();
    let mut sorted: Vec<&Stored> = case.rows.iter().collect();
    sorted.sort_by_key(|r| r.id);
    let mut expected_locs = Vec::new();
    let mut expected_body = Vec::new();
    let mut written = Vec::new();
    // A file lists each URL once (once normalised): the files' id ranges say which repeats
    // share a file.
    let snapshot = app.app.site().first().snapshot();
    let file_of =
        |id: i64| (0..snapshot.layout.len()).position(|i| snapshot.layout.range(i).contains(id));
    let mut listed: HashSet<(Option<usize>, String)> = HashSet::new();
    for row in sorted {
        let raw = raw_entry(row, held);
        if let Ok(entry) = rules.accept(&raw) {
            if !listed.insert((file_of(row.id), entry.loc.as_str().to_string())) {
                continue;
            }
            expected_locs.push(entry.loc.as_str().to_string());
            let mut element = Vec::new();
            write_url(&mut element, &entry);
            let text = String::from_utf8_lossy(&element).into_owned();
            tags_as_the_protocol_says(row, &text).map_err(TestCaseError::fail)?;
            expected_body.extend_from_slice(&element);
            written.push((element, format!("{row:?}\n          {raw:?}")));
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
        let fail = |e: String| TestCaseError::fail(format!("{file}: {e}"));
        let page_locs = read_urlset(&xml).map_err(fail)?;
        let (body, _) = body_of(&xml).map_err(fail)?;
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
        } else if let Some(e) = schema_errors(&xml, "sitemap-extensions.xsd") {
            return Err(TestCaseError::fail(format!(
                "{file} invalid: {e}{}",
                culprits(&e, &xml, &written)
            )));
        }

        // The text form of the same file lists exactly the same URLs.
        let number = file
            .strip_prefix("sitemap-")
            .and_then(|f| f.strip_suffix(".xml.gz"))
            .expect("index lists sitemap-K.xml.gz");
        let text = app.get(&format!("/sitemap-{number}.txt")).await;
        prop_assert_eq!(text.status(), 200, "sitemap-{}.txt", number);
        prop_assert_eq!(header(&text, "content-type"), "text/plain; charset=utf-8");
        let text = text.text().await.unwrap();
        prop_assert!(
            text.is_empty() || text.ends_with('\n'),
            "sitemap-{}.txt does not end with LF",
            number
        );
        prop_assert_eq!(
            text.lines().collect::<Vec<_>>(),
            page_locs.iter().map(String::as_str).collect::<Vec<_>>(),
            "sitemap-{}.txt against {}",
            number,
            file
        );

        served_body.extend_from_slice(body);
        served_locs.extend(page_locs);
    }

    for loc in &served_locs {
        prop_assert!(loc.starts_with(BASE), "not under the base: {:?}", loc);
        prop_assert!(loc.len() <= MAX_LOC_CHARS, "{} chars: {:?}", loc.len(), loc);
        prop_assert!(loc.is_ascii(), "not ASCII: {:?}", loc);
    }
    prop_assert_eq!(&served_locs, &expected_locs);
    if served_body != expected_body {
        // The first `<url>` that differs, and the row the oracle wrote it from.
        let served = String::from_utf8_lossy(&served_body).into_owned();
        let at = served
            .lines()
            .zip(&written)
            .position(|(line, (element, _))| format!("{line}\n").as_bytes() != element)
            .unwrap_or(written.len().min(served.lines().count()));
        return Err(TestCaseError::fail(format!(
            "served <url> element {at} differs from the oracle's:\nserved:   {}\nexpected: {}\nfrom:     {}",
            served.lines().nth(at).unwrap_or("(none)"),
            written.get(at).map_or("(none)".into(), |(e, _)| String::from_utf8_lossy(e).into_owned()),
            written.get(at).map_or("", |(_, from)| from.as_str()),
        )));
    }
    Ok(())
}

crate::on_each_database!(arbitrary_rows_give_valid_files_with_exactly_the_accepted_urls);

/// Arbitrary entries and extension rows, as each database holds them, served with tiny pages:
/// every file valid against the official schema and the extension schemas, declaring only the
/// namespaces it uses, its text form listing the same URLs, and all of them together exactly
/// the `<url>` elements the oracle writes for the held rows, once each, in id order.
async fn arbitrary_rows_give_valid_files_with_exactly_the_accepted_urls(backend: Backend) {
    // proptest's runner is synchronous: it runs on a thread of its own, with its own runtime.
    let outcome = tokio::task::spawn_blocking(move || served_property(backend)).await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// The files of the site as the service holds them: `no@first_id:urls`.
fn layout(app: &TestApp) -> String {
    let snapshot = app.app.site().first().snapshot();
    let files: Vec<String> = snapshot
        .layout
        .pages()
        .iter()
        .map(|p| format!("{}@{}:{}", p.no, p.first_id, p.urls))
        .collect();
    files.join(" ")
}

/// One database and one server for all cases: each case replaces the rows and sweeps.
fn served_property(backend: Backend) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (db, app) = rt.block_on(async {
        let db = TestDb::on(backend).await;
        db.migrate().await;
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
    // HOSTILE_CASES=N runs more cases, for a deeper search than the suite's default. The
    // failure message names the offending rows, so a short shrink is enough.
    let mut runner = database_runner(
        "HOSTILE_CASES",
        32,
        Shrink {
            iterations: 1000,
            millis: 20_000,
        },
    );
    let result = runner.run(&case_strategy(), |case| {
        let case = store(backend, &case);
        rt.block_on(async {
            load(&db, &case).await;
            let held = check_model(&db, &case).await?;
            app.sweep().await;
            let swept = layout(&app);
            if let Err(e) = check_served(&app, &case, &held).await {
                // Whether the files were wrong for the data, or for a moment only: a second
                // sweep tells.
                let failed = layout(&app);
                app.sweep().await;
                let again = match check_served(&app, &case, &held).await {
                    Ok(()) => "passes".to_string(),
                    Err(again) => format!("fails: {again}"),
                };
                return Err(TestCaseError::fail(format!(
                    "{e}\nfiles (no@first_id:urls) after the sweep: {swept}\nwhen it failed: \
                     {failed}\nafter another sweep the check {again}"
                )));
            }
            Ok(())
        })
    });
    rt.block_on(async move {
        drop(app);
        match &db.pool {
            TestPool::Postgres(pool) => pool.close().await,
            TestPool::MariaDb(pool) => pool.close().await,
            TestPool::Sqlite(pool) => pool.close().await,
        }
    });
    if let Err(e) = result {
        panic!("{backend:?}: {e}");
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
