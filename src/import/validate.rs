//! What of a sitemap file may be imported: the rules the server serves by.
//!
//! A URL is checked by [`EntryRules::accept`] (base URL, scope, length, XML safety, robots.txt),
//! so a row that would be skipped when served is never imported. A tag that is invalid
//! (a lastmod that is not W3C Datetime, an unknown changefreq, a priority out of range, an
//! alternate or image without a usable URL, a video without what Google requires) drops that
//! tag, not the entry. A news article's publication date is the entry's lastmod when it has none. The loc is kept as
//! the file wrote it (trimmed): the server normalises it when serving, as for any row.

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, Utc};

use super::xml::{ParsedAlternate, ParsedUrl, ParsedVideo};
use crate::sitemap::entry::Lastmod;
use crate::sitemap::loc::{is_xml_char, MAX_LOC_CHARS};
use crate::sitemap::rich::{accept_video, RawVideo};
use crate::sitemap::BaseUrl;
use crate::sitemap::{EntryRules, RawEntry, SkipReason};
use crate::store::{Alternate, EntryDetails, ImportedEntry};

/// A tag the file had that was not imported, and its value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedTag {
    pub tag: &'static str,
    pub value: String,
}

/// An entry that may be imported, with the tags left out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub entry: ImportedEntry,
    pub dropped: Vec<DroppedTag>,
}

/// A `<url>` of an XML sitemap: the entry, or why the row is skipped.
pub fn xml_entry(rules: &EntryRules, url: ParsedUrl) -> Result<Accepted, SkipReason> {
    let loc = trimmed(url.loc.as_deref().unwrap_or(""));
    let raw = RawEntry {
        id: 0,
        loc: Some(loc.to_string()),
        lastmod: url.lastmod.as_deref().and_then(parse_w3c_datetime),
        changefreq: url.changefreq.clone(),
        priority: url
            .priority
            .as_deref()
            .and_then(|p| trimmed(p).parse().ok()),
        ..RawEntry::default()
    };
    let accepted = rules.accept(&raw)?;
    let mut dropped = Vec::new();
    let mut drop_if_missing = |tag, written: &Option<String>, kept: bool| {
        if let (Some(value), false) = (written, kept) {
            dropped.push(DroppedTag {
                tag,
                value: value.clone(),
            });
        }
    };
    drop_if_missing("lastmod", &url.lastmod, accepted.lastmod.is_some());
    drop_if_missing("changefreq", &url.changefreq, accepted.changefreq.is_some());
    drop_if_missing("priority", &url.priority, accepted.priority.is_some());
    let alternates = alternates(url.alternates, &mut dropped);
    let images = images(url.images, &mut dropped);
    let videos = videos(url.videos, rules.base(), &mut dropped);
    // A news sitemap's article has a publication date and often no lastmod: that date is
    // when the page last changed, as far as the file says.
    let lastmod = accepted.lastmod.or_else(|| {
        url.news_published
            .as_deref()
            .and_then(parse_w3c_datetime)
            .and_then(Lastmod::new)
    });
    Ok(Accepted {
        entry: ImportedEntry {
            loc: loc.to_string(),
            details: Some(EntryDetails {
                lastmod,
                changefreq: accepted.changefreq,
                priority: accepted.priority,
                alternates,
                images,
                videos,
            }),
        },
        dropped,
    })
}

/// A line of a text sitemap: the entry (URL only), or why the row is skipped.
pub fn text_entry(rules: &EntryRules, url: &str) -> Result<ImportedEntry, SkipReason> {
    let loc = trimmed(url);
    rules.accept(&RawEntry {
        loc: Some(loc.to_string()),
        ..RawEntry::default()
    })?;
    Ok(ImportedEntry {
        loc: loc.to_string(),
        details: None,
    })
}

/// Alternates with a language and an absolute URL, the first of each language.
fn alternates(parsed: Vec<ParsedAlternate>, dropped: &mut Vec<DroppedTag>) -> Vec<Alternate> {
    let mut languages = HashSet::new();
    let mut kept = Vec::new();
    for alternate in parsed {
        let hreflang = alternate.hreflang.as_deref().map(trimmed).unwrap_or("");
        let href = alternate.href.as_deref().map(trimmed).unwrap_or("");
        if is_hreflang(hreflang)
            && is_absolute_url(href)
            && languages.insert(hreflang.to_ascii_lowercase())
        {
            kept.push(Alternate {
                hreflang: hreflang.to_string(),
                href: href.to_string(),
            });
        } else {
            dropped.push(DroppedTag {
                tag: "xhtml:link",
                value: format!("hreflang={hreflang:?} href={href:?}"),
            });
        }
    }
    kept
}

fn images(parsed: Vec<Option<String>>, dropped: &mut Vec<DroppedTag>) -> Vec<String> {
    let mut kept = Vec::new();
    for image in parsed {
        let loc = image.as_deref().map(trimmed).unwrap_or("");
        if is_absolute_url(loc) {
            kept.push(loc.to_string());
        } else {
            dropped.push(DroppedTag {
                tag: "image:image",
                value: loc.to_string(),
            });
        }
    }
    kept
}

/// Videos with what Google requires (see [`accept_video`]), as they will be served: a duration
/// or date Google would refuse is left out, the video kept.
fn videos(
    parsed: Vec<ParsedVideo>,
    base: &BaseUrl,
    dropped: &mut Vec<DroppedTag>,
) -> Vec<RawVideo> {
    let mut kept = Vec::new();
    for video in parsed {
        let text = |v: &Option<String>| v.as_deref().map(|v| trimmed(v).to_string());
        let raw = RawVideo {
            thumbnail_loc: text(&video.thumbnail_loc),
            title: text(&video.title),
            description: text(&video.description),
            content_loc: text(&video.content_loc),
            player_loc: text(&video.player_loc),
            duration: video
                .duration
                .as_deref()
                .and_then(|d| trimmed(d).parse().ok()),
            publication_date: video
                .publication_date
                .as_deref()
                .and_then(parse_w3c_datetime),
        };
        match accept_video(&raw, base) {
            Some(accepted) => kept.push(RawVideo {
                duration: accepted.duration,
                publication_date: accepted.publication_date.map(|at| at.at()),
                ..raw
            }),
            None => dropped.push(DroppedTag {
                tag: "video:video",
                value: raw.title.or(raw.content_loc).unwrap_or_default(),
            }),
        }
    }
    kept
}

/// Extension URLs may name any host (a CDN, another language's domain), but must be absolute
/// http(s), printable, XML-safe and within the protocol's length.
fn is_absolute_url(text: &str) -> bool {
    let printable = text.chars().all(|c| is_xml_char(c) && !c.is_control());
    let parsed = url::Url::parse(text);
    printable
        && text.len() <= MAX_LOC_CHARS
        && parsed.is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

/// A BCP 47 tag in its common shape (`fr`, `en-GB`, `zh-Hant-TW`), or `x-default`.
fn is_hreflang(tag: &str) -> bool {
    if tag.eq_ignore_ascii_case("x-default") {
        return true;
    }
    let mut parts = tag.split('-');
    let primary = parts.next().unwrap_or("");
    (2..=8).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

fn trimmed(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_ascii_whitespace())
}

/// W3C Datetime (the profile of ISO 8601 sitemaps use): `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, or a
/// date and time with minutes, optional seconds and fraction, and a zone (`Z` or `±hh:mm`).
pub fn parse_w3c_datetime(text: &str) -> Option<DateTime<Utc>> {
    let text = trimmed(text);
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    let date_only = match text.len() {
        4 => format!("{text}-01-01"),
        7 => format!("{text}-01"),
        10 => text.to_string(),
        _ => return datetime_without_seconds(text),
    };
    if !date_only.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    NaiveDate::parse_from_str(&date_only, "%Y-%m-%d")
        .ok()?
        .and_hms_opt(0, 0, 0)
        .map(|at| at.and_utc())
}

/// `2024-05-01T12:30+02:00` or `2024-05-01T12:30Z`.
fn datetime_without_seconds(text: &str) -> Option<DateTime<Utc>> {
    let (clock, zone) = match text.strip_suffix(['Z', 'z']) {
        Some(clock) => (clock, "+00:00"),
        None => text.split_at_checked(text.len().checked_sub(6)?)?,
    };
    DateTime::parse_from_str(&format!("{clock}:00{zone}"), "%Y-%m-%dT%H:%M:%S%:z")
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitemap::entry::w3c_datetime;
    use crate::sitemap::BaseUrl;

    fn rules() -> EntryRules {
        EntryRules::new(BaseUrl::parse("https://e.com").unwrap(), None, vec![])
    }

    fn w3c(text: &str) -> Option<String> {
        parse_w3c_datetime(text).map(w3c_datetime)
    }

    #[test]
    fn every_w3c_datetime_form_is_read_as_utc() {
        assert_eq!(w3c("2024").unwrap(), "2024-01-01T00:00:00+00:00");
        assert_eq!(w3c("2024-05").unwrap(), "2024-05-01T00:00:00+00:00");
        assert_eq!(w3c(" 2024-05-07 ").unwrap(), "2024-05-07T00:00:00+00:00");
        assert_eq!(
            w3c("2024-05-07T14:30+02:00").unwrap(),
            "2024-05-07T12:30:00+00:00"
        );
        assert_eq!(
            w3c("2024-05-07T12:30Z").unwrap(),
            "2024-05-07T12:30:00+00:00"
        );
        assert_eq!(
            w3c("2024-05-07T12:30:15Z").unwrap(),
            "2024-05-07T12:30:15+00:00"
        );
        assert_eq!(
            w3c("2024-05-07T12:30:15.25-01:00").unwrap(),
            "2024-05-07T13:30:15+00:00"
        );
        for bad in [
            "yesterday",
            "2024-13-01",
            "2024-05-07T12:30",
            "+2024",
            "",
            "05/07/2024",
        ] {
            assert_eq!(w3c(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_tags_are_dropped_and_named_but_the_entry_stays() {
        let url = ParsedUrl {
            loc: Some(" https://e.com/a ".into()),
            lastmod: Some("yesterday".into()),
            changefreq: Some("Daily".into()),
            priority: Some("1.5".into()),
            alternates: vec![
                ParsedAlternate {
                    hreflang: Some("fr".into()),
                    href: Some("https://e.fr/a".into()),
                },
                ParsedAlternate {
                    hreflang: Some("FR".into()),
                    href: Some("https://e.fr/b".into()),
                },
                ParsedAlternate {
                    hreflang: Some("de".into()),
                    href: Some("/relative".into()),
                },
            ],
            images: vec![Some("https://cdn.e.com/1.jpg".into()), None],
            ..ParsedUrl::default()
        };
        let accepted = xml_entry(&rules(), url).unwrap();
        assert_eq!(accepted.entry.loc, "https://e.com/a");
        let details = accepted.entry.details.unwrap();
        assert_eq!(details.lastmod, None);
        assert_eq!(details.changefreq.map(|c| c.as_str()), Some("daily"));
        assert_eq!(details.priority, None);
        assert_eq!(details.alternates.len(), 1);
        assert_eq!(details.images, vec!["https://cdn.e.com/1.jpg".to_string()]);
        let tags: Vec<&str> = accepted.dropped.iter().map(|d| d.tag).collect();
        assert_eq!(
            tags,
            [
                "lastmod",
                "priority",
                "xhtml:link",
                "xhtml:link",
                "image:image"
            ]
        );
    }

    #[test]
    fn a_row_the_server_would_skip_is_refused_with_its_reason() {
        let url = |loc: &str| ParsedUrl {
            loc: Some(loc.into()),
            ..ParsedUrl::default()
        };
        assert_eq!(
            xml_entry(&rules(), url("https://other.com/a")).unwrap_err(),
            SkipReason::OutOfScope
        );
        assert_eq!(
            xml_entry(&rules(), ParsedUrl::default()).unwrap_err(),
            SkipReason::InvalidUrl
        );
        assert_eq!(
            text_entry(&rules(), "ftp://e.com/x"),
            Err(SkipReason::OutOfScope)
        );
        assert_eq!(
            text_entry(&rules(), "https://e.com/x").unwrap().details,
            None
        );
    }

    #[test]
    fn hreflang_has_the_shape_of_a_language_tag() {
        for good in ["fr", "en-GB", "zh-Hant-TW", "x-default"] {
            assert!(is_hreflang(good), "{good}");
        }
        for bad in ["", "f", "fr_FR", "en-", "français"] {
            assert!(!is_hreflang(bad), "{bad}");
        }
    }
}
