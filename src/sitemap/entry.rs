//! Entries: a row as the store reads it ([`RawEntry`]) and as a sitemap may carry it ([`Entry`]).
//!
//! [`EntryRules`] turns one into the other: it builds the [`Loc`], drops tags that are out of
//! range instead of the row, and leaves out URLs the served robots.txt disallows. Extension rows
//! (alternate language versions, images) that are invalid are dropped one by one and counted;
//! they never cost the entry its place.

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use super::lastmod::{w3c_datetime, Lastmod};
use super::loc::Loc;
use super::namespaces::Namespaces;
use super::rich::{accept_videos, Article, RawArticle, RawVideo, Video};
use super::{SkipCounts, SkipReason};
use crate::robots::RobotsTxt;
use crate::sitemap::BaseUrl;

/// One row of the source, as read; nothing about it is trusted yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawEntry {
    pub id: i64,
    pub loc: Option<String>,
    pub lastmod: Option<DateTime<Utc>>,
    pub changefreq: Option<String>,
    pub priority: Option<f64>,
    /// `sitemap_alternates` rows of this entry, in `hreflang` order.
    pub alternates: Vec<RawAlternate>,
    /// `sitemap_images` rows of this entry, in their id order.
    pub images: Vec<RawImage>,
    /// `sitemap_videos` rows of this entry, in their id order.
    pub videos: Vec<RawVideo>,
    /// A news group's row: the article (an entry of any other group has none).
    pub article: Option<RawArticle>,
    /// A `lastmod` or `priority` the database holds but that is no time or number, as text
    /// (the tag is left out and counted).
    pub unreadable: Option<Box<Unreadable>>,
    /// Why the store could not place the row at all (a shared id): it is skipped.
    pub rejected: Option<crate::sitemap::SkipReason>,
}

impl RawEntry {
    /// The row's id as the database holds it, for examples.
    pub fn id_text(&self) -> String {
        match self.unreadable.as_ref().and_then(|u| u.id.as_ref()) {
            Some(id) => id.clone(),
            None => self.id.to_string(),
        }
    }
}

/// Values of a row that could not be read as their type, kept as the database gave them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unreadable {
    pub lastmod: Option<String>,
    pub priority: Option<String>,
    /// An id that is no 64-bit integer (`NULL`, or beyond 2^63 - 1), as text.
    pub id: Option<String>,
}

impl Unreadable {
    /// `None` when nothing was unreadable.
    pub fn of(lastmod: Option<String>, priority: Option<String>) -> Option<Box<Self>> {
        (lastmod.is_some() || priority.is_some()).then(|| {
            Box::new(Self {
                lastmod,
                priority,
                id: None,
            })
        })
    }
}

/// One `sitemap_alternates` row, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawAlternate {
    pub hreflang: Option<String>,
    pub href: Option<String>,
}

/// One `sitemap_images` row, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawImage {
    pub loc: Option<String>,
}

/// Most `image:image` elements one `<url>` may hold (Google's limit).
pub const MAX_IMAGES_PER_URL: usize = 1000;
/// Most alternates one `<url>` may hold: more than there are languages and regions in use.
pub const MAX_ALTERNATES_PER_URL: usize = 1000;
/// How far ahead of this machine's clock a `lastmod` may be (the database's clock may run a
/// little ahead) before it counts as in the future and is left out.
pub const FUTURE_LASTMOD_ALLOWANCE_SECS: i64 = 900;

/// An entry every field of which can be written as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    pub loc: Loc,
    pub lastmod: Option<Lastmod>,
    pub changefreq: Option<ChangeFreq>,
    pub priority: Option<Priority>,
    pub alternates: Vec<Alternate>,
    /// Image URLs: absolute http(s), any host (images often live on a CDN).
    pub images: Vec<Loc>,
    pub videos: Vec<Video>,
    /// The article, in a news group.
    pub article: Option<Article>,
    /// Extension rows left out, by reason.
    pub dropped: SkipCounts,
}

impl Entry {
    /// The extension namespaces this entry's `<url>` uses.
    pub fn namespaces(&self) -> Namespaces {
        Namespaces {
            xhtml: !self.alternates.is_empty(),
            image: !self.images.is_empty(),
            video: !self.videos.is_empty(),
            news: self.article.is_some(),
        }
    }
}

/// `xhtml:link rel="alternate"`: the same page in another language or region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternate {
    pub hreflang: Hreflang,
    /// Absolute http(s), any host (a language may have its own domain).
    pub href: Loc,
}

/// An `hreflang` value: `x-default`, or a BCP 47 tag such as `fr`, `en-GB`, `zh-Hant`, `es-419`.
/// Tags compare without regard to case, as BCP 47 says (`en-GB` is `en-gb`): a URL gets one
/// alternate per language, whatever the case its rows use.
#[derive(Debug, Clone, Eq)]
pub struct Hreflang(String);

impl PartialEq for Hreflang {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl Hreflang {
    /// Checks the shape of a language tag (language, then subtags of 1 to 8 letters or digits);
    /// the registry of languages is not consulted.
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("x-default") {
            return Some(Self("x-default".into()));
        }
        let mut parts = value.split('-');
        let language = parts.next()?;
        let language_ok =
            (2..=3).contains(&language.len()) && language.bytes().all(|b| b.is_ascii_alphabetic());
        let subtags_ok = parts
            .all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()));
        (language_ok && subtags_ok).then(|| Self(value.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
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
        if let Some(reason) = raw.rejected {
            return Err(reason);
        }
        let loc = Loc::parse(raw.loc.as_deref().unwrap_or(""), &self.base)?;
        if self.disallowed_by_robots(&loc) {
            return Err(SkipReason::RobotsDisallowed);
        }
        let article = raw.article.as_ref().map(RawArticle::accept).transpose()?;
        let mut dropped = SkipCounts::default();
        let alternates = self.accept_alternates(&raw.alternates, &mut dropped);
        let images = self.accept_images(&raw.images, &mut dropped);
        let videos = accept_videos(&raw.videos, &self.base, &mut dropped);
        if let Some(unreadable) = &raw.unreadable {
            count_unreadable(raw.id, unreadable, &mut dropped);
        }
        Ok(Entry {
            id: raw.id,
            loc,
            lastmod: self.present_lastmod(raw.lastmod, &mut dropped),
            changefreq: raw.changefreq.as_deref().and_then(ChangeFreq::parse),
            priority: raw.priority.and_then(Priority::new),
            alternates,
            images,
            videos,
            article,
            dropped,
        })
    }

    /// The row's lastmod, unless it is in the future (then dropped and counted): engines take a
    /// future date as a sign that a site's lastmods cannot be trusted. Time alone can bring it
    /// back (when its time comes); a sweep then finds the file changed.
    fn present_lastmod(
        &self,
        lastmod: Option<chrono::DateTime<chrono::Utc>>,
        dropped: &mut SkipCounts,
    ) -> Option<Lastmod> {
        let lastmod = lastmod.and_then(Lastmod::new)?;
        let latest = chrono::Utc::now().timestamp() + FUTURE_LASTMOD_ALLOWANCE_SECS;
        if lastmod.at().timestamp() > latest {
            dropped.add(SkipReason::FutureLastmod);
            dropped.note_future_lastmod(lastmod.at().timestamp());
            return None;
        }
        Some(lastmod)
    }

    fn accept_alternates(&self, raw: &[RawAlternate], dropped: &mut SkipCounts) -> Vec<Alternate> {
        let mut accepted: Vec<Alternate> = Vec::new();
        for alternate in raw {
            let hreflang = alternate.hreflang.as_deref().and_then(Hreflang::parse);
            let href = alternate
                .href
                .as_deref()
                .and_then(|href| Loc::parse_anywhere(href, &self.base).ok());
            match (hreflang, href) {
                (Some(hreflang), Some(href))
                    if accepted.len() < MAX_ALTERNATES_PER_URL
                        && !accepted.iter().any(|a| a.hreflang == hreflang) =>
                {
                    accepted.push(Alternate { hreflang, href })
                }
                _ => dropped.add(SkipReason::InvalidAlternate),
            }
        }
        accepted
    }

    fn accept_images(&self, raw: &[RawImage], dropped: &mut SkipCounts) -> Vec<Loc> {
        let mut accepted = Vec::new();
        for image in raw {
            let loc = image
                .loc
                .as_deref()
                .and_then(|loc| Loc::parse_anywhere(loc, &self.base).ok());
            match loc {
                Some(loc) if accepted.len() < MAX_IMAGES_PER_URL => accepted.push(loc),
                _ => dropped.add(SkipReason::InvalidImage),
            }
        }
        accepted
    }

    /// Whether the robots.txt we serve disallows `loc` for one of the agents checked.
    pub fn disallowed_by_robots(&self, loc: &Loc) -> bool {
        let Some(robots) = &self.robots else {
            return false;
        };
        let path = loc.path_and_query();
        self.agents
            .iter()
            .any(|agent| !robots.is_allowed(agent, path))
    }
}

/// A lastmod or priority that is no time or number: its tag is left out, counted with the
/// value as example.
fn count_unreadable(id: i64, unreadable: &Unreadable, dropped: &mut SkipCounts) {
    let values = [
        (SkipReason::InvalidLastmod, "lastmod", &unreadable.lastmod),
        (
            SkipReason::InvalidPriority,
            "priority",
            &unreadable.priority,
        ),
    ];
    for (reason, column, value) in values {
        if let Some(value) = value {
            dropped.add(reason);
            dropped.example(reason, || format!("entry id {id}: {column} {value:?}"));
        }
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
            ..RawEntry::default()
        };
        let entry = rules.accept(&raw).unwrap();
        assert_eq!(
            (entry.changefreq, entry.priority, entry.lastmod),
            (None, None, None)
        );
    }

    #[test]
    fn language_tags_are_checked_for_shape() {
        for good in [
            "fr",
            "en-GB",
            "zh-Hant",
            "es-419",
            "x-default",
            "X-Default",
            "sr-Latn-RS",
        ] {
            assert!(Hreflang::parse(good).is_some(), "{good}");
        }
        for bad in [
            "",
            "f",
            "english",
            "en_GB",
            "en-",
            "fr-toolongsubtag",
            "e1",
            "fr\"x",
        ] {
            assert!(Hreflang::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn bad_extension_rows_are_dropped_and_counted_not_the_entry() {
        let rules = EntryRules::new(BaseUrl::parse("https://e.com").unwrap(), None, vec![]);
        let alt = |l: &str, h: &str| RawAlternate {
            hreflang: Some(l.into()),
            href: Some(h.into()),
        };
        let raw = RawEntry {
            id: 1,
            loc: Some("/a".into()),
            alternates: vec![
                alt("fr", "https://e.fr/a"),
                alt("fr", "https://e.fr/b"),
                alt("FR", "https://e.fr/c"),
                alt("klingon!", "https://e.com/k"),
                alt("de", "javascript:alert(1)"),
            ],
            images: vec![
                RawImage {
                    loc: Some("https://cdn.e.com/ä.jpg".into()),
                },
                RawImage { loc: None },
            ],
            ..RawEntry::default()
        };
        let entry = rules.accept(&raw).unwrap();
        assert_eq!(entry.alternates.len(), 1);
        assert_eq!(entry.alternates[0].href.as_str(), "https://e.fr/a");
        assert_eq!(entry.images[0].as_str(), "https://cdn.e.com/%C3%A4.jpg");
        // One per language, whatever the case: the second "fr" and "FR" are dropped.
        assert_eq!(entry.dropped.get(SkipReason::InvalidAlternate), 4);
        assert_eq!(entry.dropped.get(SkipReason::InvalidImage), 1);
        assert_eq!(
            entry.namespaces(),
            Namespaces::XHTML.union(Namespaces::IMAGE)
        );
        let mut element = Vec::new();
        let written = rules.write(&raw, &mut element, Namespaces::IMAGE).unwrap();
        let text = String::from_utf8(element).unwrap();
        assert!(written.alternates.is_empty() && !text.contains("xhtml:link"));
        assert!(text.contains(
            "<image:image><image:loc>https://cdn.e.com/%C3%A4.jpg</image:loc></image:image>"
        ));
    }
}
