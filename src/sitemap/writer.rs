//! The XML writer: bytes of urlsets and sitemap indexes, entry by entry. No I/O.
//!
//! Documents are UTF-8, start with the XML declaration, use the sitemaps.org namespace, are not
//! indented and end each `<url>`/`<sitemap>` with LF so they diff well. Text goes through
//! quick-xml's escaper, so `& < > ' "` always leave as entities.

use quick_xml::escape::escape;

use super::entry::{w3c_datetime, Entry, EntryRules, RawEntry};
use super::namespaces::Namespaces;
use super::rich::{Article, Video, NEWS_NS, VIDEO_NS};
use super::SkipReason;

pub const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
/// Namespace of `xhtml:link rel="alternate" hreflang` (alternate language versions).
pub const XHTML_NS: &str = "http://www.w3.org/1999/xhtml";
/// Namespace of `image:image` (Google's image sitemap extension).
pub const IMAGE_NS: &str = "http://www.google.com/schemas/sitemap-image/1.1";

const XML_DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/// How documents look, the same for every file of a site.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentStyle {
    /// URL of an XSL stylesheet announced with `<?xml-stylesheet?>`, if any.
    pub stylesheet: Option<String>,
    /// URL of the CSS stylesheet announced after it, for browsers without XSLT.
    pub css: Option<String>,
}

impl DocumentStyle {
    fn prolog(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(XML_DECLARATION.as_bytes());
        if let Some(href) = &self.stylesheet {
            out.extend_from_slice(b"<?xml-stylesheet type=\"text/xsl\" href=\"");
            out.extend_from_slice(escape(href.as_str()).as_bytes());
            out.extend_from_slice(b"\"?>\n");
        }
        if let Some(href) = &self.css {
            out.extend_from_slice(b"<?xml-stylesheet type=\"text/css\" href=\"");
            out.extend_from_slice(escape(href.as_str()).as_bytes());
            out.extend_from_slice(b"\"?>\n");
        }
    }

    /// Everything before the first `<url>`, declaring the extension namespaces `namespaces`.
    pub fn urlset_open(&self, namespaces: Namespaces) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.prolog(&mut out);
        out.extend_from_slice(format!("<urlset xmlns=\"{SITEMAP_NS}\"").as_bytes());
        if namespaces.xhtml {
            out.extend_from_slice(format!(" xmlns:xhtml=\"{XHTML_NS}\"").as_bytes());
        }
        if namespaces.image {
            out.extend_from_slice(format!(" xmlns:image=\"{IMAGE_NS}\"").as_bytes());
        }
        if namespaces.video {
            out.extend_from_slice(format!(" xmlns:video=\"{VIDEO_NS}\"").as_bytes());
        }
        if namespaces.news {
            out.extend_from_slice(format!(" xmlns:news=\"{NEWS_NS}\"").as_bytes());
        }
        out.extend_from_slice(b">\n");
        out
    }

    /// Everything after the last `<url>`.
    pub fn urlset_close(&self) -> &'static [u8] {
        b"</urlset>\n"
    }

    /// A whole sitemap index for `(absolute URL, lastmod)` pairs, in order.
    pub fn index<'a>(
        &self,
        sitemaps: impl IntoIterator<Item = (&'a str, chrono::DateTime<chrono::Utc>)>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096);
        self.prolog(&mut out);
        out.extend_from_slice(format!("<sitemapindex xmlns=\"{SITEMAP_NS}\">\n").as_bytes());
        for (loc, lastmod) in sitemaps {
            push_element(&mut out, "sitemap", |out| {
                push_text(out, "loc", loc);
                push_text(out, "lastmod", &w3c_datetime(lastmod));
            });
        }
        out.extend_from_slice(b"</sitemapindex>\n");
        out
    }
}

/// Appends one `<url>` element for `entry`.
pub fn write_url(out: &mut Vec<u8>, entry: &Entry) {
    push_element(out, "url", |out| {
        push_text(out, "loc", entry.loc.as_str());
        if let Some(article) = &entry.article {
            write_article(out, article);
        }
        if let Some(lastmod) = entry.lastmod {
            push_text(out, "lastmod", &lastmod.w3c());
        }
        if let Some(freq) = entry.changefreq {
            push_text(out, "changefreq", freq.as_str());
        }
        if let Some(priority) = entry.priority {
            push_text(out, "priority", &priority.to_decimal());
        }
        for alternate in &entry.alternates {
            out.extend_from_slice(b"<xhtml:link rel=\"alternate\" hreflang=\"");
            out.extend_from_slice(escape(alternate.hreflang.as_str()).as_bytes());
            out.extend_from_slice(b"\" href=\"");
            out.extend_from_slice(escape(alternate.href.as_str()).as_bytes());
            out.extend_from_slice(b"\"/>");
        }
        for image in &entry.images {
            push_element_inline(out, "image:image", |out| {
                push_text(out, "image:loc", image.as_str())
            });
        }
        write_videos(out, &entry.videos);
    });
}

impl EntryRules {
    /// Accepts `raw` and writes its `<url>` element into `element`, which is cleared first:
    /// what the sweep measures and what the renderers send are built by this one call.
    /// Extensions outside `declared` (namespaces the document root does not declare) are left out.
    pub fn write(
        &self,
        raw: &RawEntry,
        element: &mut Vec<u8>,
        declared: Namespaces,
    ) -> Result<Entry, SkipReason> {
        let mut entry = self.accept(raw)?;
        if !declared.xhtml {
            entry.alternates.clear();
        }
        if !declared.image {
            entry.images.clear();
        }
        if !declared.video {
            entry.videos.clear();
        }
        element.clear();
        write_url(element, &entry);
        Ok(entry)
    }
}

fn push_element_inline(out: &mut Vec<u8>, name: &str, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
    body(out);
    out.extend_from_slice(b"</");
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}

fn push_element(out: &mut Vec<u8>, name: &str, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
    body(out);
    out.extend_from_slice(b"</");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b">\n");
}

fn push_text(out: &mut Vec<u8>, name: &str, text: &str) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
    out.extend_from_slice(escape(text).as_bytes());
    out.extend_from_slice(b"</");
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}

/// Appends `video:video` elements, children in the order Google's schema requires.
pub fn write_videos(out: &mut Vec<u8>, videos: &[Video]) {
    for video in videos {
        push_element_inline(out, "video:video", |out| {
            push_text(out, "video:thumbnail_loc", video.thumbnail_loc.as_str());
            push_text(out, "video:title", &video.title);
            push_text(out, "video:description", &video.description);
            if let Some(loc) = &video.content_loc {
                push_text(out, "video:content_loc", loc.as_str());
            }
            if let Some(loc) = &video.player_loc {
                push_text(out, "video:player_loc", loc.as_str());
            }
            if let Some(seconds) = video.duration {
                push_text(out, "video:duration", &seconds.to_string());
            }
            if let Some(at) = video.publication_date {
                push_text(out, "video:publication_date", &at.w3c());
            }
        });
    }
}

/// Appends the `news:news` element of an article.
pub fn write_article(out: &mut Vec<u8>, article: &Article) {
    push_element_inline(out, "news:news", |out| {
        push_element_inline(out, "news:publication", |out| {
            push_text(out, "news:name", &article.publication.name);
            push_text(out, "news:language", &article.publication.language);
        });
        push_text(
            out,
            "news:publication_date",
            &article.publication_date.w3c(),
        );
        push_text(out, "news:title", &article.title);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitemap::entry::{EntryRules, RawEntry};
    use crate::sitemap::BaseUrl;
    use chrono::TimeZone;

    #[test]
    fn a_url_is_escaped_and_complete() {
        let rules = EntryRules::new(BaseUrl::parse("https://e.com").unwrap(), None, vec![]);
        let entry = rules
            .accept(&RawEntry {
                id: 1,
                loc: Some("/it's?x=1&y=2".into()),
                lastmod: Some(chrono::Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap()),
                changefreq: Some("daily".into()),
                priority: Some(0.5),
                ..RawEntry::default()
            })
            .unwrap();
        let mut out = Vec::new();
        write_url(&mut out, &entry);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<url><loc>https://e.com/it&apos;s?x=1&amp;y=2</loc><lastmod>2024-05-01T12:00:00+00:00</lastmod>\
             <changefreq>daily</changefreq><priority>0.5</priority></url>\n"
        );
    }

    #[test]
    fn extension_namespaces_are_declared_only_when_used() {
        let style = DocumentStyle::default();
        let open = |ns| String::from_utf8(style.urlset_open(ns)).unwrap();
        assert!(!open(Namespaces::NONE).contains("xmlns:"));
        assert!(open(Namespaces::IMAGE).contains(&format!("xmlns:image=\"{IMAGE_NS}\"")));
        assert!(!open(Namespaces::IMAGE).contains("xmlns:xhtml"));
        assert!(open(Namespaces::XHTML).contains(&format!("xmlns:xhtml=\"{XHTML_NS}\"")));
        for bits in 0..4 {
            assert_eq!(Namespaces::from_bits(bits).bits(), bits);
        }
    }

    #[test]
    fn the_stylesheet_is_announced_only_when_configured() {
        let plain = DocumentStyle::default().urlset_open(Namespaces::NONE);
        assert!(!String::from_utf8(plain).unwrap().contains("xml-stylesheet"));
        let styled = DocumentStyle {
            stylesheet: Some("https://e.com/sitemap.xsl".into()),
            css: Some("https://e.com/sitemap.css".into()),
        };
        assert!(String::from_utf8(styled.urlset_open(Namespaces::NONE))
            .unwrap()
            .contains("<?xml-stylesheet type=\"text/xsl\" href=\"https://e.com/sitemap.xsl\"?>\n<?xml-stylesheet type=\"text/css\" href=\"https://e.com/sitemap.css\"?>\n"));
    }

    #[test]
    fn videos_and_articles_are_written_escaped_in_the_schemas_order() {
        use crate::sitemap::publication::NewsPublication;
        use crate::sitemap::rich::{accept_videos, RawArticle, RawVideo};
        use crate::sitemap::BaseUrl;
        use crate::sitemap::SkipCounts;
        let base = BaseUrl::parse("https://e.com").unwrap();
        let raw = RawVideo {
            thumbnail_loc: Some("https://cdn.e.com/t.jpg".into()),
            title: Some("Grilling & more".into()),
            description: Some("How to <grill>".into()),
            content_loc: Some("/v.mp4".into()),
            duration: Some(600),
            ..RawVideo::default()
        };
        let videos = accept_videos(&[raw], &base, &mut SkipCounts::default());
        let mut out = Vec::new();
        write_videos(&mut out, &videos);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<video:video><video:thumbnail_loc>https://cdn.e.com/t.jpg</video:thumbnail_loc>\
             <video:title>Grilling &amp; more</video:title>\
             <video:description>How to &lt;grill&gt;</video:description>\
             <video:content_loc>https://e.com/v.mp4</video:content_loc>\
             <video:duration>600</video:duration></video:video>"
        );
        let article = RawArticle {
            publication_date: chrono::DateTime::from_timestamp(1_700_000_000, 0),
            title: Some("Rates & rivers".into()),
            ..RawArticle::default()
        }
        .with_defaults(&NewsPublication {
            name: "The Daily".into(),
            language: "en".into(),
        })
        .accept()
        .unwrap();
        let mut out = Vec::new();
        write_article(&mut out, &article);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<news:news><news:publication><news:name>The Daily</news:name>\
             <news:language>en</news:language></news:publication>\
             <news:publication_date>2023-11-14T22:13:20+00:00</news:publication_date>\
             <news:title>Rates &amp; rivers</news:title></news:news>"
        );
    }
}
