//! `lastmod` values: a time engines can read (W3C Datetime, UTC, a four-digit year), and how it
//! is written, digit by digit, on the hot path of every entry.

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

/// A `lastmod` in W3C Datetime, in UTC (`2024-05-01T12:00:00+00:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lastmod(DateTime<Utc>);

impl Lastmod {
    /// W3C Datetime needs a four-digit year, and xsd:dateTime has no year 0000 (1 BC); anything
    /// else is dropped, never invented.
    pub fn new(at: DateTime<Utc>) -> Option<Self> {
        (1..=9999).contains(&at.year()).then_some(Self(at))
    }

    pub fn at(&self) -> DateTime<Utc> {
        self.0
    }

    pub fn w3c(&self) -> String {
        w3c_datetime(self.0)
    }
}

/// W3C Datetime with seconds and an explicit `+00:00` offset, e.g. `2024-05-01T12:00:00+00:00`.
/// Written digit by digit: it is on the hot path of every entry.
pub fn w3c_datetime(at: DateTime<Utc>) -> String {
    if !(1..=9999).contains(&at.year()) {
        return at.to_rfc3339_opts(SecondsFormat::Secs, false);
    }
    let mut out = String::with_capacity(25);
    let year = at.year() as u32;
    let fields = [
        (year / 100, ""),
        (year % 100, "-"),
        (at.month(), "-"),
        (at.day(), "T"),
        (at.hour(), ":"),
        (at.minute(), ":"),
        (at.second(), "+00:00"),
    ];
    for (value, after) in fields {
        out.push(char::from(b'0' + (value / 10) as u8));
        out.push(char::from(b'0' + (value % 10) as u8));
        out.push_str(after);
    }
    out
}
