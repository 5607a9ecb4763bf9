//! Feeds of recent changes: `/feed.atom` (Atom 1.0, RFC 4287) and `/feed.rss` (RSS 2.0) of the
//! SITEMAP_FEED_SIZE most recently modified entries. Pure: entries in, bytes out.
//!
//! Entries are titled by their decoded path (sitemapd knows no page titles). Every date comes
//! from the data: an entry's `<updated>`/`<pubDate>` is its lastmod, and the
//! feed's own is the newest of them (entries without a lastmod are not in feeds). A feed with no
//! entries says 1970-01-01, never the time it was built, so its bytes stay the same until the
//! data changes.

use chrono::{DateTime, Utc};
use quick_xml::escape::escape;

use crate::config::BaseUrl;
use crate::sitemap::entry::w3c_datetime;
use crate::sitemap::Loc;

pub const ATOM_FILE: &str = "feed.atom";
pub const RSS_FILE: &str = "feed.rss";
const ATOM_NS: &str = "http://www.w3.org/2005/Atom";

/// One changed page as a feed lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEntry {
    pub loc: Loc,
    pub updated: DateTime<Utc>,
}

/// The site a feed describes.
pub struct FeedSite<'a> {
    /// The site's URLs: the feed's title and alternate link.
    pub base: &'a BaseUrl,
    /// Where the feed itself is published (its `self` link and Atom id).
    pub files: &'a BaseUrl,
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
        let self_url = self.files.file_url(ATOM_FILE);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!("<feed xmlns=\"{ATOM_NS}\">\n"));
        push_text(&mut out, "id", &self_url);
        push_text(&mut out, "title", &self.title());
        push_text(&mut out, "updated", &w3c_datetime(Self::newest(entries)));
        out.push_str(&format!(
            "<link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>\n",
            escape(self_url.as_str())
        ));
        out.push_str(&format!(
            "<link rel=\"alternate\" href=\"{}\"/>\n",
            escape(self.base.as_str())
        ));
        out.push_str("<author><name>");
        out.push_str(&escape(self.base.url().host_str().unwrap_or_default()));
        out.push_str("</name></author>\n");
        push_text(&mut out, "generator", "sitemapd");
        for entry in entries {
            let loc = entry.loc.as_str();
            out.push_str("<entry>");
            push_inline(&mut out, "id", loc);
            push_inline(&mut out, "title", &readable_title(&entry.loc));
            out.push_str(&format!(
                "<link rel=\"alternate\" href=\"{}\"/>",
                escape(loc)
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
        let self_url = self.files.file_url(RSS_FILE);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!(
            "<rss version=\"2.0\" xmlns:atom=\"{ATOM_NS}\">\n<channel>\n"
        ));
        push_text(&mut out, "title", &self.title());
        push_text(&mut out, "link", self.base.as_str());
        push_text(&mut out, "description", &self.title());
        out.push_str(&format!(
            "<atom:link href=\"{}\" rel=\"self\" type=\"application/rss+xml\"/>\n",
            escape(self_url.as_str())
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
                escape(loc)
            ));
            push_inline(&mut out, "pubDate", &rfc822(entry.updated));
            out.push_str("</item>\n");
        }
        out.push_str("</channel>\n</rss>\n");
        out.into_bytes()
    }
}

/// A title for a page sitemapd knows only by URL: its path and query, percent-decoded so a
/// person reads `/événements/été-3`, not `/%C3%A9v%C3%A9nements/%C3%A9t%C3%A9-3`.
fn readable_title(loc: &Loc) -> String {
    let path = loc.path_and_query();
    let path = if path.is_empty() { "/" } else { path };
    percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned()
}

/// RFC 822 dates as RSS 2.0 wants them, with a four-digit year: `Wed, 01 May 2024 12:00:00 +0000`.
fn rfc822(at: DateTime<Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

fn push_text(out: &mut String, name: &str, text: &str) {
    push_inline(out, name, text);
    out.push('\n');
}

fn push_inline(out: &mut String, name: &str, text: &str) {
    out.push('<');
    out.push_str(name);
    out.push('>');
    out.push_str(&escape(text));
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
            }
            .rss(&entries()),
        )
        .unwrap();
        assert!(rss.contains("<pubDate>Sun, 05 May 2024 12:00:00 +0000</pubDate>"));
        assert!(rss.contains("<lastBuildDate>Sun, 05 May 2024 12:00:00 +0000</lastBuildDate>"));
    }

    #[test]
    fn a_feed_published_elsewhere_links_to_itself_there_and_to_the_site_at_its_base() {
        let base = BaseUrl::parse("https://e.com/shop").unwrap();
        let files = BaseUrl::parse("https://sitemaps.example.net/e/").unwrap();
        let site = FeedSite {
            base: &base,
            files: &files,
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
