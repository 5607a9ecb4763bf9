//! Generators of rows: lastmods (instants, the text forms SQLite holds, junk), changefreqs,
//! priorities, ids, and whole cases of entries with their extension rows.

use chrono::{DateTime, Datelike, FixedOffset, TimeZone, Timelike, Utc};
use proptest::prelude::*;

use super::url_strategies::{href_strategy, hreflang_strategy, loc_strategy};

pub(super) fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

pub(super) fn lastmod_strategy() -> impl Strategy<Value = Option<DateTime<Utc>>> {
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

pub(super) fn changefreq_strategy() -> impl Strategy<Value = Option<String>> {
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
pub(super) fn priority_strategy() -> impl Strategy<Value = Option<f64>> {
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

pub(super) fn id_strategy() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -50i64..5_000,
        1 => any::<i64>(),
        1 => prop::sample::select(vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1, 0, -1]),
    ]
}

/// How a lastmod is written where the column is text (SQLite): the forms its migration
/// documents (RFC 3339, and SQLite's own `YYYY-MM-DD HH:MM:SS` in UTC).
#[derive(Debug, Clone, Copy)]
pub(super) enum TextForm {
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
    pub(super) fn write(self, at: DateTime<Utc>) -> (String, Option<DateTime<Utc>>) {
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

pub(super) fn text_form_strategy() -> impl Strategy<Value = TextForm> {
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
pub(super) const JUNK_LASTMODS: &[(&str, bool)] = &[
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
pub(super) enum GenLastmod {
    Null,
    At(DateTime<Utc>, TextForm),
    Junk(String, bool),
}

pub(super) fn gen_lastmod_strategy() -> impl Strategy<Value = GenLastmod> {
    prop_oneof![
        10 => (lastmod_strategy(), text_form_strategy())
            .prop_map(|(at, form)| at.map_or(GenLastmod::Null, |at| GenLastmod::At(at, form))),
        1 => prop::sample::select(JUNK_LASTMODS)
            .prop_map(|(text, zero)| GenLastmod::Junk(text.to_string(), zero)),
        1 => any::<String>().prop_map(|text| GenLastmod::Junk(text, false)),
    ]
}

#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) id: i64,
    pub(super) loc: String,
    pub(super) lastmod: GenLastmod,
    pub(super) changefreq: Option<String>,
    pub(super) priority: Option<f64>,
}

/// A `sitemap_alternates` row as generated: `(entry_id, hreflang, href)`.
pub(super) type AltRow = (i64, String, String);
/// A `sitemap_images` row as generated: `(entry_id, loc)`.
pub(super) type ImgRow = (i64, String);

/// One case: entries and the extension rows that point at them (or at no entry).
#[derive(Debug, Clone)]
pub(super) struct Case {
    pub(super) rows: Vec<Row>,
    pub(super) alternates: Vec<AltRow>,
    pub(super) images: Vec<ImgRow>,
}

/// Arbitrary rows; keys and what each backend can hold are settled by [`store`].
pub(super) fn case_strategy() -> impl Strategy<Value = Case> {
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
