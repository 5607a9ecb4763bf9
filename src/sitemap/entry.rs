//! Entries: a row as the store reads it ([`RawEntry`]) and as a sitemap may carry it ([`Entry`]).
//!
//! [`EntryRules`] turns one into the other: it builds the [`Loc`], drops tags that are out of
//! range instead of the row, and leaves out URLs the served robots.txt disallows.

use std::sync::Arc;

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

use super::loc::Loc;
use super::SkipReason;
use crate::config::BaseUrl;
use crate::robots::RobotsTxt;

/// One row of the source, as read; nothing about it is trusted yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawEntry {
    pub id: i64,
    pub loc: Option<String>,
    pub lastmod: Option<DateTime<Utc>>,
    pub changefreq: Option<String>,
    pub priority: Option<f64>,
}

/// An entry every field of which can be written as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    pub loc: Loc,
    pub lastmod: Option<Lastmod>,
    pub changefreq: Option<ChangeFreq>,
    pub priority: Option<Priority>,
}

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

/// The protocol's `changefreq` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeFreq {
    Always,
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
    Never,
}

impl ChangeFreq {
    /// Accepts any case and surrounding spaces, as CMS data often has them.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value.trim().to_ascii_lowercase().as_str() {
            "always" => Self::Always,
            "hourly" => Self::Hourly,
            "daily" => Self::Daily,
            "weekly" => Self::Weekly,
            "monthly" => Self::Monthly,
            "yearly" => Self::Yearly,
            "never" => Self::Never,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Hourly => "hourly",
            Self::Daily => "daily",
            Self::Weekly => "weekly",
            Self::Monthly => "monthly",
            Self::Yearly => "yearly",
            Self::Never => "never",
        }
    }
}

/// A `priority` from 0.0 to 1.0, kept in ten-thousandths so it prints as a plain decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority(u16);

impl Priority {
    pub fn new(value: f64) -> Option<Self> {
        (0.0..=1.0)
            .contains(&value)
            .then(|| Self((value * 10_000.0).round() as u16))
    }

    /// The value as a number, e.g. to store it.
    pub fn value(self) -> f64 {
        f64::from(self.0) / 10_000.0
    }

    /// `0.0`, `0.5`, `0.85`, `1.0`: xsd:decimal, never an exponent.
    pub fn to_decimal(self) -> String {
        let (units, frac) = (self.0 / 10_000, self.0 % 10_000);
        let digits = format!("{frac:04}");
        let digits = digits.trim_end_matches('0');
        format!("{units}.{}", if digits.is_empty() { "0" } else { digits })
    }
}

/// What decides whether and how a row is served: the base URL and the robots.txt we serve.
#[derive(Clone)]
pub struct EntryRules {
    base: BaseUrl,
    robots: Option<Arc<RobotsTxt>>,
    agents: Vec<String>,
}

impl EntryRules {
    /// `robots` with `agents`: URLs it disallows for any of these agents are left out.
    /// Agents whose groups disallow nothing are not checked at all (the common `Allow: /`).
    pub fn new(base: BaseUrl, robots: Option<Arc<RobotsTxt>>, agents: Vec<String>) -> Self {
        let agents: Vec<String> = match &robots {
            Some(r) => agents.into_iter().filter(|a| r.may_disallow(a)).collect(),
            None => Vec::new(),
        };
        let robots = robots.filter(|_| !agents.is_empty());
        Self {
            base,
            robots,
            agents,
        }
    }

    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    pub fn accept(&self, raw: &RawEntry) -> Result<Entry, SkipReason> {
        let loc = Loc::parse(raw.loc.as_deref().unwrap_or(""), &self.base)?;
        if self.disallowed_by_robots(&loc) {
            return Err(SkipReason::RobotsDisallowed);
        }
        Ok(Entry {
            id: raw.id,
            loc,
            lastmod: raw.lastmod.and_then(Lastmod::new),
            changefreq: raw.changefreq.as_deref().and_then(ChangeFreq::parse),
            priority: raw.priority.and_then(Priority::new),
        })
    }

    /// Accepts `raw` and writes its `<url>` element into `element`, which is cleared first:
    /// what the sweep measures and what the renderers send are built by this one call.
    pub fn write(&self, raw: &RawEntry, element: &mut Vec<u8>) -> Result<Entry, SkipReason> {
        let entry = self.accept(raw)?;
        element.clear();
        super::writer::write_url(element, &entry);
        Ok(entry)
    }

    fn disallowed_by_robots(&self, loc: &Loc) -> bool {
        let Some(robots) = &self.robots else {
            return false;
        };
        let path = loc.path_and_query();
        self.agents
            .iter()
            .any(|agent| !robots.is_allowed(agent, path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn priority_prints_as_a_plain_decimal() {
        let p = |v| Priority::new(v).map(Priority::to_decimal);
        assert_eq!(p(0.0).unwrap(), "0.0");
        assert_eq!(p(1.0).unwrap(), "1.0");
        assert_eq!(p(0.85).unwrap(), "0.85");
        assert_eq!(p(0.1f32 as f64).unwrap(), "0.1");
        assert_eq!(p(0.00001).unwrap(), "0.0");
        assert_eq!(p(1.5), None);
        assert_eq!(p(-0.1), None);
        assert_eq!(p(f64::NAN), None);
    }

    #[test]
    fn changefreq_accepts_any_case_and_rejects_the_rest() {
        assert_eq!(ChangeFreq::parse(" Daily "), Some(ChangeFreq::Daily));
        assert_eq!(ChangeFreq::parse("sometimes"), None);
    }

    #[test]
    fn lastmod_is_w3c_with_an_explicit_offset() {
        let at = Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap();
        assert_eq!(Lastmod::new(at).unwrap().w3c(), "2024-05-01T12:00:00+00:00");
        let far = Utc.with_ymd_and_hms(10_000, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(Lastmod::new(far), None);
    }

    #[test]
    fn a_bad_tag_is_dropped_not_the_row() {
        let rules = EntryRules::new(BaseUrl::parse("https://e.com").unwrap(), None, vec![]);
        let raw = RawEntry {
            id: 1,
            loc: Some("/a".into()),
            lastmod: None,
            changefreq: Some("often".into()),
            priority: Some(7.0),
        };
        let entry = rules.accept(&raw).unwrap();
        assert_eq!(
            (entry.changefreq, entry.priority, entry.lastmod),
            (None, None, None)
        );
    }
}
