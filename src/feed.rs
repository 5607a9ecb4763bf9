//! Feeds of recent changes: `/feed.atom` (Atom 1.0, RFC 4287) and `/feed.rss` (RSS 2.0) of the
//! SITEMAP_FEED_SIZE most recently modified entries. Pure: entries in, bytes out.
//!
//! Entries are titled by their decoded path (sitemapd knows no page titles). Every date comes
//! from the data: an entry's `<updated>`/`<pubDate>` is its lastmod, and the
//! feed's own is the newest of them (entries without a lastmod, or with one before 1900, which
//! an RSS date cannot carry, are not in feeds). A feed with no
//! entries says 1970-01-01, never the time it was built, so its bytes stay the same until the
//! data changes.

use std::borrow::Cow;

use chrono::{DateTime, Datelike, Utc};
use quick_xml::escape::escape;

use crate::robots::{License, RSL_NS};
use crate::sitemap::entry::w3c_datetime;
use crate::sitemap::loc::is_xml_char;
use crate::sitemap::BaseUrl;
use crate::sitemap::Loc;

const ATOM_NS: &str = "http://www.w3.org/2005/Atom";

/// The earliest year of a lastmod that feeds list. RSS 2.0 dates are RFC 822 dates, whose
/// years RFC 2822 (3.3) starts at 1900; readers take a year such as `0099` for 1999 or 2099.
/// A page last changed before 1900 is a placeholder date, not a recent change: such an entry is
/// left out of both feeds, as one without a lastmod is, rather than listed with a date readers
/// would get wrong (or one sitemapd invented).
pub const EARLIEST_YEAR: i32 = 1900;

/// One changed page as a feed lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEntry {
    pub loc: Loc,
    pub updated: DateTime<Utc>,
}

impl FeedEntry {
    /// The entry for a page last modified at `updated`, unless that is before [`EARLIEST_YEAR`].
    pub fn new(loc: Loc, updated: DateTime<Utc>) -> Option<Self> {
        (updated.year() >= EARLIEST_YEAR).then_some(Self { loc, updated })
    }
}

/// The site a feed describes.
pub struct FeedSite<'a> {
    /// The site's URLs: the feed's title and alternate link.
    pub base: &'a BaseUrl,
    /// Where the feed itself is published (its `self` link and Atom id).
    pub files: &'a BaseUrl,
    /// The site's licence: each RSS item carries the `<rsl:content>` its URL falls under.
    pub license: Option<&'a License>,
}

impl FeedSite<'_> {
    fn title(&self) -> String {
        let url = self.base.url();
        let host = url.host_str().unwrap_or_default();
        let path = url.path().trim_end_matches('/');
        format!("Recently updated pages on {host}{path}")
    }

    fn newest(entries: &[FeedEntry]) -> DateTime<Utc> {
        entries
            .iter()
            .map(|e| e.updated)
            .max()
            .unwrap_or(DateTime::UNIX_EPOCH)
    }

    /// An Atom 1.0 feed: entries identified by their URL, titled by its path, with their lastmod.
    pub fn atom(&self, entries: &[FeedEntry]) -> Vec<u8> {
        let mut out = String::with_capacity(512 + entries.len() * 300);
        let self_url = self.files.file_url(crate::files::FEED_ATOM);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!("<feed xmlns=\"{ATOM_NS}\">\n"));
        push_text(&mut out, "id", &self_url);
        push_text(&mut out, "title", &self.title());
        push_text(&mut out, "updated", &w3c_datetime(Self::newest(entries)));
        out.push_str(&format!(
            "<link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>\n",
            xml_text(self_url.as_str())
        ));
        out.push_str(&format!(
            "<link rel=\"alternate\" href=\"{}\"/>\n",
            xml_text(self.base.as_str())
        ));
        out.push_str("<author><name>");
        out.push_str(&xml_text(self.base.url().host_str().unwrap_or_default()));
        out.push_str("</name></author>\n");
        push_text(&mut out, "generator", "sitemapd");
        for entry in entries {
            let loc = entry.loc.as_str();
            out.push_str("<entry>");
            push_inline(&mut out, "id", loc);
            push_inline(&mut out, "title", &readable_title(&entry.loc));
            out.push_str(&format!(
                "<link rel=\"alternate\" href=\"{}\"/>",
                xml_text(loc)
            ));
            push_inline(&mut out, "updated", &w3c_datetime(entry.updated));
            out.push_str("</entry>\n");
        }
        out.push_str("</feed>\n");
        out.into_bytes()
    }

    /// An RSS 2.0 channel: items with link, permanent guid and the lastmod as pubDate.
    pub fn rss(&self, entries: &[FeedEntry]) -> Vec<u8> {
        let mut out = String::with_capacity(512 + entries.len() * 300);
        let self_url = self.files.file_url(crate::files::FEED_RSS);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let rsl = match self.license {
            Some(_) => format!(" xmlns:rsl=\"{RSL_NS}\""),
            None => String::new(),
        };
        out.push_str(&format!(
            "<rss version=\"2.0\" xmlns:atom=\"{ATOM_NS}\"{rsl}>\n<channel>\n"
        ));
        push_text(&mut out, "title", &self.title());
        push_text(&mut out, "link", self.base.as_str());
        push_text(&mut out, "description", &self.title());
        out.push_str(&format!(
            "<atom:link href=\"{}\" rel=\"self\" type=\"application/rss+xml\"/>\n",
            xml_text(self_url.as_str())
        ));
        push_text(&mut out, "lastBuildDate", &rfc822(Self::newest(entries)));
        push_text(&mut out, "generator", "sitemapd");
        for entry in entries {
            let loc = entry.loc.as_str();
            out.push_str("<item>");
            push_inline(&mut out, "title", &readable_title(&entry.loc));
            push_inline(&mut out, "link", loc);
            out.push_str(&format!(
                "<guid isPermaLink=\"true\">{}</guid>",
                xml_text(loc)
            ));
            push_inline(&mut out, "pubDate", &rfc822(entry.updated));
            if let Some(license) = self.license {
                out.push_str(&license.rss_item(loc, entry.loc.path_and_query()));
            }
            out.push_str("</item>\n");
        }
        out.push_str("</channel>\n</rss>\n");
        out.into_bytes()
    }
}

/// A title for a page sitemapd knows only by URL: its path and query, percent-decoded so a
/// person reads `/événements/été-3`, not `/%C3%A9v%C3%A9nements/%C3%A9t%C3%A9-3`.
///
/// Only escapes that decode to readable text are decoded. Bytes that are not UTF-8, and
/// characters XML 1.0 cannot carry (`%01`, `%EF%BF%BE`) or that a reader would not see (other
/// controls and noncharacters: `%0A`, `%C2%85`, `%EF%B7%90`), keep their escapes as in the URL, so
/// `/a%01b` is titled `/a%01b` and `/été%0A` `/été%0A`. That is what a reader wants: the feed
/// stays well-formed, and the title still says exactly which URL it is, where dropping those
/// bytes or replacing them with U+FFFD would make different URLs look the same.
pub fn readable_title(loc: &Loc) -> String {
    let path = loc.path_and_query();
    let path = if path.is_empty() { "/" } else { path };
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let run = escape_run(&rest[start..]);
        if run.is_empty() {
            // A `%` that starts no escape (Loc encodes those, but be exact anyway).
            out.push('%');
            rest = &rest[start + 1..];
        } else {
            decode_readable(run, &mut out);
            rest = &rest[start + run.len()..];
        }
    }
    out.push_str(rest);
    out
}

/// The longest prefix of `text` made of `%XX` escapes.
fn escape_run(text: &str) -> &str {
    let bytes = text.as_bytes();
    let mut end = 0;
    while bytes.len() >= end + 3
        && bytes[end] == b'%'
        && bytes[end + 1].is_ascii_hexdigit()
        && bytes[end + 2].is_ascii_hexdigit()
    {
        end += 3;
    }
    &text[..end]
}

/// Appends a run of `%XX` escapes decoded where the result is readable text, and the escapes
/// of every other byte unchanged.
fn decode_readable(run: &str, out: &mut String) {
    let bytes: Vec<u8> = run
        .as_bytes()
        .chunks(3)
        .map(|escape| (hex_value(escape[1]) << 4) | hex_value(escape[2]))
        .collect();
    // Byte i of `bytes` was written as run[3 * i..3 * i + 3].
    let escaped = |from: usize, len: usize| &run[3 * from..3 * (from + len)];
    let mut at = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if readable(c) {
                out.push(c);
            } else {
                out.push_str(escaped(at, c.len_utf8()));
            }
            at += c.len_utf8();
        }
        out.push_str(escaped(at, chunk.invalid().len()));
        at += chunk.invalid().len();
    }
}

/// Whether a decoded character may stand for itself in a title: one XML 1.0 can carry, and not
/// one it discourages (controls, noncharacters such as U+FDD0 or U+10FFFF), which a reader
/// could not see and some parsers refuse.
fn readable(c: char) -> bool {
    let noncharacter = matches!(c, '\u{FDD0}'..='\u{FDEF}') || (c as u32) & 0xFFFE == 0xFFFE;
    is_xml_char(c) && !c.is_control() && !noncharacter
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit - b'A' + 10,
    }
}

/// RFC 822 dates as RSS 2.0 wants them, with a four-digit year: `Wed, 01 May 2024 12:00:00 +0000`.
fn rfc822(at: DateTime<Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// Text or an attribute value as XML: entity-escaped, and free of characters XML 1.0 cannot
/// carry. Everything a feed says goes through here. Nothing that reaches it today holds such a
/// character (a `Loc` and the base URL are ASCII without controls, and titles keep those
/// characters percent-encoded, see [`readable_title`]); replacing them with U+FFFD is the
/// last line of defence, so no text added to the feeds later can make a whole feed malformed.
fn xml_text(text: &str) -> Cow<'_, str> {
    if text.chars().all(is_xml_char) {
        escape(text)
    } else {
        let safe = text.replace(|c| !is_xml_char(c), "\u{FFFD}");
        Cow::Owned(escape(&safe).into_owned())
    }
}

fn push_text(out: &mut String, name: &str, text: &str) {
    push_inline(out, name, text);
    out.push('\n');
}

fn push_inline(out: &mut String, name: &str, text: &str) {
    out.push('<');
    out.push_str(name);
    out.push('>');
    out.push_str(&xml_text(text));
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn entries() -> Vec<FeedEntry> {
        let base = BaseUrl::parse("https://e.com/shop").unwrap();
        ["/shop/a?x=1&y=2", "/shop/b"]
            .iter()
            .zip([5, 3])
            .map(|(loc, day)| FeedEntry {
                loc: Loc::parse(loc, &base).unwrap(),
                updated: Utc.with_ymd_and_hms(2024, 5, day, 12, 0, 0).unwrap(),
            })
            .collect()
    }

    #[test]
    fn atom_dates_come_from_the_entries() {
        let base = BaseUrl::parse("https://e.com/shop").unwrap();
        let atom = String::from_utf8(
            FeedSite {
                base: &base,
                files: &base,
                license: None,
            }
            .atom(&entries()),
        )
        .unwrap();
        assert!(atom.contains("<updated>2024-05-05T12:00:00+00:00</updated>\n"));
        assert!(atom.contains(
            "<entry><id>https://e.com/shop/a?x=1&amp;y=2</id><title>/shop/a?x=1&amp;y=2</title>"
        ));
        assert!(atom.contains("<title>Recently updated pages on e.com/shop</title>"));
        let empty = String::from_utf8(
            FeedSite {
                base: &base,
                files: &base,
                license: None,
            }
            .atom(&[]),
        )
        .unwrap();
        assert!(empty.contains("<updated>1970-01-01T00:00:00+00:00</updated>"));
    }

    #[test]
    fn rss_dates_are_rfc_822() {
        let base = BaseUrl::parse("https://e.com/shop").unwrap();
        let rss = String::from_utf8(
            FeedSite {
                base: &base,
                files: &base,
                license: None,
            }
            .rss(&entries()),
        )
        .unwrap();
        assert!(rss.contains("<pubDate>Sun, 05 May 2024 12:00:00 +0000</pubDate>"));
        assert!(rss.contains("<lastBuildDate>Sun, 05 May 2024 12:00:00 +0000</lastBuildDate>"));
    }

    fn title_of(raw: &str) -> String {
        readable_title(&Loc::parse(raw, &BaseUrl::parse("https://e.com/").unwrap()).unwrap())
    }

    #[test]
    fn titles_decode_readable_text_and_keep_the_escapes_of_the_rest() {
        for (raw, title) in [
            ("/caf%C3%A9/na%c3%afve?q=%E6%97%A5", "/café/naïve?q=日"),
            ("/%F0%9F%98%80", "/😀"),
            // Characters XML 1.0 cannot carry.
            ("/a%01b", "/a%01b"),
            ("/a%00b", "/a%00b"),
            ("/x%EF%BF%BE", "/x%EF%BF%BE"),
            ("/x%EF%BF%BF", "/x%EF%BF%BF"),
            // Noncharacters: XML 1.0 allows but discourages them.
            ("/%EF%B7%90%F4%8F%BF%BF", "/%EF%B7%90%F4%8F%BF%BF"),
            // Control characters XML allows but nobody can read in a title.
            ("/a%0Ab%09c%0D", "/a%0Ab%09c%0D"),
            ("/nel%C2%85", "/nel%C2%85"),
            ("/del%7F", "/del%7F"),
            // Not UTF-8: a lone continuation byte, a cut sequence, an encoded surrogate.
            ("/%FF%C3%A9", "/%FFé"),
            ("/%C3", "/%C3"),
            ("/%ED%A0%80x", "/%ED%A0%80x"),
            // Mixed in one run of escapes.
            ("/%C3%A9%01%C3%A9", "/é%01é"),
            // Entity-looking text is only text; the writer escapes it.
            ("/a?x=1&y=%3C%26%3E", "/a?x=1&y=<&>"),
            ("/100%25", "/100%"),
            ("/100%", "/100%"),
        ] {
            assert_eq!(title_of(raw), title, "{raw}");
        }
    }

    #[test]
    fn every_character_of_both_feeds_is_one_xml_1_0_can_carry() {
        let base = BaseUrl::parse("https://e.com/").unwrap();
        let hostile = [
            "/a%01b",
            "/x%EF%BF%BE",
            "/%00%08%0B%0C%1F%7F%C2%80%C2%9F",
            "/%ED%BF%BF%EF%BF%BF%F4%8F%BF%BF",
            "/&<>'\"",
            "/%26amp%3B%3C!%5BCDATA%5B%5D%5D%3E",
            "/caf%C3%A9",
        ];
        let entries: Vec<FeedEntry> = hostile
            .iter()
            .map(|raw| FeedEntry {
                loc: Loc::parse(raw, &base).unwrap(),
                updated: Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap(),
            })
            .collect();
        let site = FeedSite {
            base: &base,
            files: &base,
            license: None,
        };
        for feed in [site.atom(&entries), site.rss(&entries)] {
            let text = String::from_utf8(feed).unwrap();
            if let Some(bad) = text.chars().find(|&c| !is_xml_char(c)) {
                panic!("U+{:04X} in {text}", bad as u32);
            }
            let mut reader = quick_xml::Reader::from_str(&text);
            let mut titles = Vec::new();
            let mut in_title = false;
            loop {
                match reader.read_event().expect("well-formed") {
                    quick_xml::events::Event::Start(e) => in_title = e.name().as_ref() == b"title",
                    quick_xml::events::Event::End(_) => in_title = false,
                    quick_xml::events::Event::Text(t) if in_title => {
                        titles.push(t.unescape().unwrap().into_owned())
                    }
                    quick_xml::events::Event::Eof => break,
                    _ => {}
                }
            }
            assert_eq!(
                titles[1..],
                [
                    "/a%01b",
                    "/x%EF%BF%BE",
                    "/%00%08%0B%0C%1F%7F%C2%80%C2%9F",
                    "/%ED%BF%BF%EF%BF%BF%F4%8F%BF%BF",
                    "/&<>'\"",
                    "/&amp;<![CDATA[]]>",
                    "/café",
                ],
                "{text}"
            );
        }
    }

    #[test]
    fn text_xml_cannot_carry_never_reaches_a_feed() {
        assert_eq!(xml_text("a<\u{1}\u{FFFE}&"), "a&lt;\u{FFFD}\u{FFFD}&amp;");
        assert!(matches!(xml_text("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn lastmods_before_1900_are_left_out_and_rss_writes_four_digit_years_from_then_on() {
        let base = BaseUrl::parse("https://e.com/").unwrap();
        let loc = || Loc::parse("/a", &base).unwrap();
        let at = |y| Utc.with_ymd_and_hms(y, 1, 1, 0, 0, 0).unwrap();
        for year in [1, 99, 1000, 1899] {
            assert_eq!(FeedEntry::new(loc(), at(year)), None, "{year}");
        }
        let from = Utc.with_ymd_and_hms(1899, 12, 31, 23, 59, 59).unwrap();
        assert_eq!(FeedEntry::new(loc(), from), None);
        for year in [1900, 2024, 9999] {
            assert!(FeedEntry::new(loc(), at(year)).is_some(), "{year}");
        }
        assert_eq!(rfc822(at(1900)), "Mon, 01 Jan 1900 00:00:00 +0000");
        assert_eq!(
            rfc822(Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap()),
            "Fri, 31 Dec 9999 23:59:59 +0000"
        );
    }

    #[test]
    fn a_feed_published_elsewhere_links_to_itself_there_and_to_the_site_at_its_base() {
        let base = BaseUrl::parse("https://e.com/shop").unwrap();
        let files = BaseUrl::parse("https://sitemaps.example.net/e/").unwrap();
        let site = FeedSite {
            base: &base,
            files: &files,
            license: None,
        };
        let atom = String::from_utf8(site.atom(&entries())).unwrap();
        assert!(atom.contains("<id>https://sitemaps.example.net/e/feed.atom</id>"));
        assert!(atom.contains("rel=\"self\" type=\"application/atom+xml\" href=\"https://sitemaps.example.net/e/feed.atom\""));
        assert!(atom.contains("<link rel=\"alternate\" href=\"https://e.com/shop/\"/>"));
        let rss = String::from_utf8(site.rss(&entries())).unwrap();
        assert!(rss.contains("<link>https://e.com/shop/</link>"));
        assert!(rss
            .contains("<atom:link href=\"https://sitemaps.example.net/e/feed.rss\" rel=\"self\""));
    }
}
