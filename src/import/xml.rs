//! XML sitemaps and sitemap indexes, streamed one `<url>` or `<sitemap>` at a time.
//!
//! Elements are recognised by namespace URI and local name, never by prefix: `xhtml:link`
//! is any `link` in the XHTML namespace, whatever the file calls the prefix. Elements in no
//! namespace are read as sitemap elements too (hand-written files often omit `xmlns`). What
//! sits in a `<url>` and is not understood is skipped and counted. Nothing is validated here
//! beyond well-formedness; values come out as the file wrote them.

use std::io::BufRead;

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

use super::source::Tracked;
use crate::sitemap::writer::SITEMAP_NS;

pub const XHTML_NS: &str = "http://www.w3.org/1999/xhtml";
pub const IMAGE_NS: &str = "http://www.google.com/schemas/sitemap-image/1.1";
use crate::sitemap::rich::{NEWS_NS, VIDEO_NS};

/// A `<url>` as the file wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedUrl {
    /// Line of its start tag, when known.
    pub line: Option<u64>,
    pub loc: Option<String>,
    pub lastmod: Option<String>,
    pub changefreq: Option<String>,
    pub priority: Option<String>,
    pub alternates: Vec<ParsedAlternate>,
    /// The `image:loc` of each `image:image` (`None` when it had none).
    pub images: Vec<Option<String>>,
    /// Each `video:video`, its fields as written.
    pub videos: Vec<ParsedVideo>,
    /// The `news:publication_date` of a `news:news`, if it had one.
    pub news_published: Option<String>,
}

/// A `video:video` as the file wrote it: the fields sitemapd keeps (others are skipped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedVideo {
    pub thumbnail_loc: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub content_loc: Option<String>,
    pub player_loc: Option<String>,
    pub duration: Option<String>,
    pub publication_date: Option<String>,
}

/// An `xhtml:link rel="alternate"`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedAlternate {
    pub hreflang: Option<String>,
    pub href: Option<String>,
}

/// What a sitemap document yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Url(ParsedUrl),
    /// A `<sitemap>` of an index: the file it names.
    Sitemap {
        loc: String,
        line: Option<u64>,
    },
}

/// Where and why a document is not a readable sitemap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}byte {byte}: {message}", line.map(|l| format!("line {l}, ")).unwrap_or_default())]
pub struct XmlError {
    pub line: Option<u64>,
    /// Offset from the start of the (gunzipped) content.
    pub byte: u64,
    pub message: String,
}

/// Namespaces this reader tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    /// The sitemaps.org namespace, or none.
    Sitemap,
    Xhtml,
    Image,
    Video,
    News,
    Other,
}

/// An open element, as far as a sitemap is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Urlset,
    Index,
    Url,
    Field(Field),
    Link,
    Image,
    ImageLoc,
    Video,
    VideoField(VideoField),
    News,
    NewsPublished,
    Sitemap,
    SitemapLoc,
    /// Anything else, with everything inside it.
    Skipped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VideoField {
    ThumbnailLoc,
    Title,
    Description,
    ContentLoc,
    PlayerLoc,
    Duration,
    PublicationDate,
}

impl VideoField {
    fn of(name: &[u8]) -> Option<Self> {
        Some(match name {
            b"thumbnail_loc" => Self::ThumbnailLoc,
            b"title" => Self::Title,
            b"description" => Self::Description,
            b"content_loc" => Self::ContentLoc,
            b"player_loc" => Self::PlayerLoc,
            b"duration" => Self::Duration,
            b"publication_date" => Self::PublicationDate,
            _ => return None,
        })
    }

    fn slot(self, video: &mut ParsedVideo) -> &mut Option<String> {
        match self {
            Self::ThumbnailLoc => &mut video.thumbnail_loc,
            Self::Title => &mut video.title,
            Self::Description => &mut video.description,
            Self::ContentLoc => &mut video.content_loc,
            Self::PlayerLoc => &mut video.player_loc,
            Self::Duration => &mut video.duration,
            Self::PublicationDate => &mut video.publication_date,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    Lastmod,
    ChangeFreq,
    Priority,
}

impl Node {
    fn collects_text(self) -> bool {
        matches!(
            self,
            Self::Field(_)
                | Self::ImageLoc
                | Self::VideoField(_)
                | Self::NewsPublished
                | Self::SitemapLoc
        )
    }

    fn name(self) -> &'static str {
        match self {
            Self::Urlset => "<urlset>",
            Self::Index => "<sitemapindex>",
            Self::Url => "<url>",
            Self::Field(Field::Loc) | Self::SitemapLoc => "<loc>",
            Self::Field(Field::Lastmod) => "<lastmod>",
            Self::Field(Field::ChangeFreq) => "<changefreq>",
            Self::Field(Field::Priority) => "<priority>",
            Self::Link => "<xhtml:link>",
            Self::Image => "<image:image>",
            Self::ImageLoc => "<image:loc>",
            Self::Video => "<video:video>",
            Self::VideoField(_) => "a field of <video:video>",
            Self::News => "<news:news>",
            Self::NewsPublished => "<news:publication_date>",
            Self::Sitemap => "<sitemap>",
            Self::Skipped => "an element",
        }
    }
}

/// A streaming reader of one sitemap or sitemap index.
pub struct SitemapXml<R> {
    reader: NsReader<Tracked<R>>,
    buf: Vec<u8>,
    open: Vec<Node>,
    root_seen: bool,
    url: ParsedUrl,
    image: Option<String>,
    video: ParsedVideo,
    sitemap: Option<(Option<String>, Option<u64>)>,
    text: String,
    unknown: u64,
}

impl<R: BufRead> SitemapXml<R> {
    pub fn new(reader: Tracked<R>) -> Self {
        Self {
            reader: NsReader::from_reader(reader),
            buf: Vec::with_capacity(1024),
            open: Vec::with_capacity(8),
            root_seen: false,
            url: ParsedUrl::default(),
            image: None,
            video: ParsedVideo::default(),
            sitemap: None,
            text: String::new(),
            unknown: 0,
        }
    }

    /// Elements inside `<url>`s (or the root) that this reader does not understand, so far.
    pub fn unknown_elements(&self) -> u64 {
        self.unknown
    }

    /// The next `<url>` or `<sitemap>`, or `None` once the document has ended well.
    pub fn next_item(&mut self) -> Result<Option<Item>, XmlError> {
        let mut buf = std::mem::take(&mut self.buf);
        let item = self.read_item(&mut buf);
        buf.clear();
        self.buf = buf;
        item
    }

    fn read_item(&mut self, buf: &mut Vec<u8>) -> Result<Option<Item>, XmlError> {
        loop {
            buf.clear();
            self.reader.get_mut().begin_node();
            let start = self.reader.buffer_position();
            let (ns, event) = match self.reader.read_resolved_event_into(buf) {
                Ok((ns, event)) => (namespace(&ns), event),
                Err(e) => return Err(self.reader_error(&e)),
            };
            let item = match event {
                Event::Start(e) => {
                    self.open_element(ns, &e, start)?;
                    None
                }
                Event::Empty(e) => {
                    self.open_element(ns, &e, start)?;
                    self.close_element()
                }
                Event::End(_) => self.close_element(),
                Event::Text(t) if self.collecting() => {
                    let text = t.unescape().map_err(|e| self.error_at(start, e))?;
                    self.text.push_str(&text);
                    None
                }
                Event::CData(c) if self.collecting() => {
                    let text = c.decode().map_err(|e| self.error_at(start, e))?;
                    self.text.push_str(&text);
                    None
                }
                Event::Decl(d) => {
                    check_encoding(&d).map_err(|message| self.error_at(start, message))?;
                    None
                }
                Event::Eof => return self.end_of_document(start).map(|()| None),
                _ => None,
            };
            if item.is_some() {
                return Ok(item);
            }
        }
    }

    fn collecting(&self) -> bool {
        self.open.last().is_some_and(|n| n.collects_text())
    }

    fn open_element(&mut self, ns: Ns, e: &BytesStart, start: u64) -> Result<(), XmlError> {
        let node = self
            .classify(ns, e.local_name().as_ref())
            .map_err(|message| self.error_at(start, message))?;
        let line = self.reader.get_ref().line_at(start);
        match node {
            Node::Url => {
                self.url = ParsedUrl {
                    line,
                    ..Default::default()
                }
            }
            Node::Image => self.image = None,
            Node::Video => self.video = ParsedVideo::default(),
            Node::Sitemap => self.sitemap = Some((None, line)),
            Node::Link => self.read_link(e).map_err(|m| self.error_at(start, m))?,
            n if n.collects_text() => self.text.clear(),
            _ => {}
        }
        self.open.push(node);
        Ok(())
    }

    /// What an element is, given where it stands.
    fn classify(&mut self, ns: Ns, name: &[u8]) -> Result<Node, String> {
        let parent = self.open.last().copied();
        let ours = ns == Ns::Sitemap;
        Ok(match (parent, ns, name) {
            (None, _, _) if self.root_seen => {
                return Err("a second root element: a document has one".into())
            }
            (None, _, b"urlset") if ours => Node::Urlset,
            (None, _, b"sitemapindex") if ours => Node::Index,
            (None, _, _) => {
                return Err(format!(
                "root element <{}> is not <urlset> or <sitemapindex> of the sitemaps.org namespace",
                String::from_utf8_lossy(name)
            ))
            }
            (Some(Node::Urlset), _, b"url") if ours => Node::Url,
            (Some(Node::Url), _, b"loc") if ours => Node::Field(Field::Loc),
            (Some(Node::Url), _, b"lastmod") if ours => Node::Field(Field::Lastmod),
            (Some(Node::Url), _, b"changefreq") if ours => Node::Field(Field::ChangeFreq),
            (Some(Node::Url), _, b"priority") if ours => Node::Field(Field::Priority),
            (Some(Node::Url), Ns::Xhtml, b"link") => Node::Link,
            (Some(Node::Url), Ns::Image, b"image") => Node::Image,
            (Some(Node::Image), Ns::Image, b"loc") => Node::ImageLoc,
            (Some(Node::Url), Ns::Video, b"video") => Node::Video,
            (Some(Node::Video), Ns::Video, field) => {
                VideoField::of(field).map_or(Node::Skipped, Node::VideoField)
            }
            (Some(Node::Url), Ns::News, b"news") => Node::News,
            (Some(Node::News), Ns::News, b"publication_date") => Node::NewsPublished,
            (Some(Node::Index), _, b"sitemap") if ours => Node::Sitemap,
            (Some(Node::Sitemap), _, b"loc") if ours => Node::SitemapLoc,
            (Some(Node::Urlset | Node::Url | Node::Index), _, _) => {
                self.unknown += 1;
                Node::Skipped
            }
            _ => Node::Skipped,
        })
    }

    /// `xhtml:link` is kept when `rel="alternate"`; other links are unknown elements.
    fn read_link(&mut self, e: &BytesStart) -> Result<(), String> {
        let mut rel = None;
        let mut alternate = ParsedAlternate::default();
        for attribute in e.attributes() {
            let attribute = attribute.map_err(|e| format!("malformed attribute: {e}"))?;
            let value = || {
                attribute
                    .unescape_value()
                    .map(|v| v.into_owned())
                    .map_err(|e| format!("malformed attribute value: {e}"))
            };
            match attribute.key.as_ref() {
                b"rel" => rel = Some(value()?),
                b"hreflang" => alternate.hreflang = Some(value()?),
                b"href" => alternate.href = Some(value()?),
                _ => {}
            }
        }
        if rel.is_some_and(|r| r.trim().eq_ignore_ascii_case("alternate")) {
            self.url.alternates.push(alternate);
        } else {
            self.unknown += 1;
        }
        Ok(())
    }

    fn close_element(&mut self) -> Option<Item> {
        let node = self.open.pop()?;
        if self.open.is_empty() {
            self.root_seen = true;
        }
        let mut text = || std::mem::take(&mut self.text);
        match node {
            Node::Field(Field::Loc) => self.url.loc = Some(text()),
            Node::Field(Field::Lastmod) => self.url.lastmod = Some(text()),
            Node::Field(Field::ChangeFreq) => self.url.changefreq = Some(text()),
            Node::Field(Field::Priority) => self.url.priority = Some(text()),
            Node::ImageLoc => self.image = Some(text()),
            Node::Image => self.url.images.push(self.image.take()),
            Node::VideoField(field) => *field.slot(&mut self.video) = Some(text()),
            Node::Video => self.url.videos.push(std::mem::take(&mut self.video)),
            Node::NewsPublished => self.url.news_published = Some(text()),
            Node::Url => return Some(Item::Url(std::mem::take(&mut self.url))),
            Node::SitemapLoc => {
                let loc = text();
                if let Some((slot, _)) = &mut self.sitemap {
                    *slot = Some(loc);
                }
            }
            Node::Sitemap => {
                let (loc, line) = self.sitemap.take()?;
                return Some(Item::Sitemap {
                    loc: loc.unwrap_or_default(),
                    line,
                });
            }
            Node::Urlset | Node::Index | Node::Link | Node::News | Node::Skipped => {}
        }
        None
    }

    fn end_of_document(&self, at: u64) -> Result<(), XmlError> {
        if let Some(innermost) = self.open.last() {
            return Err(self.error_at(
                at,
                format!("the file ends inside {}: it is truncated", innermost.name()),
            ));
        }
        if !self.root_seen {
            return Err(self.error_at(at, "no root element: the document is empty"));
        }
        Ok(())
    }

    fn reader_error(&self, e: &quick_xml::Error) -> XmlError {
        match e {
            quick_xml::Error::Io(io) => {
                self.error_at(self.reader.buffer_position(), format!("cannot read: {io}"))
            }
            other => self.error_at(
                self.reader.error_position(),
                format!("malformed XML: {other}"),
            ),
        }
    }

    fn error_at(&self, byte: u64, message: impl ToString) -> XmlError {
        XmlError {
            line: self.reader.get_ref().line_at(byte),
            byte,
            message: message.to_string(),
        }
    }
}

fn namespace(resolved: &ResolveResult) -> Ns {
    match resolved {
        ResolveResult::Unbound => Ns::Sitemap,
        ResolveResult::Bound(ns) => match ns.as_ref() {
            uri if uri == SITEMAP_NS.as_bytes() => Ns::Sitemap,
            uri if uri == XHTML_NS.as_bytes() => Ns::Xhtml,
            uri if uri == IMAGE_NS.as_bytes() => Ns::Image,
            uri if uri == VIDEO_NS.as_bytes() => Ns::Video,
            uri if uri == NEWS_NS.as_bytes() => Ns::News,
            _ => Ns::Other,
        },
        ResolveResult::Unknown(_) => Ns::Other,
    }
}

/// Sitemaps are UTF-8 (sitemaps.org); a file that declares another encoding would be misread.
fn check_encoding(decl: &quick_xml::events::BytesDecl) -> Result<(), String> {
    match decl.encoding() {
        Some(Ok(name)) if !name.eq_ignore_ascii_case(b"utf-8") => Err(format!(
            "encoding {:?}: sitemaps must be UTF-8",
            String::from_utf8_lossy(&name)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn read_all(xml: &str) -> (Result<Vec<Item>, XmlError>, u64) {
        let mut doc = SitemapXml::new(Tracked::new(BufReader::new(xml.as_bytes())));
        let mut items = Vec::new();
        loop {
            match doc.next_item() {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return (Ok(items), doc.unknown_elements()),
                Err(e) => return (Err(e), doc.unknown_elements()),
            }
        }
    }

    #[test]
    fn extensions_are_found_by_namespace_uri_whatever_the_prefix() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:x="http://www.w3.org/1999/xhtml" xmlns:pic="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:video="http://www.google.com/schemas/sitemap-video/1.1">
  <url>
    <loc> https://e.com/a?x=1&amp;y=2 </loc>
    <lastmod>2024-05-01</lastmod><changefreq>daily</changefreq><priority>0.5</priority>
    <x:link rel="alternate" hreflang="fr" href="https://e.com/fr/a"/>
    <x:link rel="stylesheet" href="https://e.com/s.css"/>
    <pic:image><pic:loc><![CDATA[https://cdn.e.com/1.jpg]]></pic:loc><pic:caption>c</pic:caption></pic:image>
    <video:video><video:title>t</video:title><video:tag>x</video:tag></video:video>
    <n:news xmlns:n="http://www.google.com/schemas/sitemap-news/0.9"><n:title>T</n:title><n:publication_date>2024-05-02</n:publication_date></n:news>
    <other:thing xmlns:other="urn:x"/>
  </url>
</urlset>"#;
        let (items, unknown) = read_all(xml);
        assert_eq!(
            items.unwrap(),
            vec![Item::Url(ParsedUrl {
                line: Some(5),
                loc: Some(" https://e.com/a?x=1&y=2 ".into()),
                lastmod: Some("2024-05-01".into()),
                changefreq: Some("daily".into()),
                priority: Some("0.5".into()),
                alternates: vec![ParsedAlternate {
                    hreflang: Some("fr".into()),
                    href: Some("https://e.com/fr/a".into()),
                }],
                images: vec![Some("https://cdn.e.com/1.jpg".into())],
                videos: vec![ParsedVideo {
                    title: Some("t".into()),
                    ..ParsedVideo::default()
                }],
                news_published: Some("2024-05-02".into()),
            })]
        );
        assert_eq!(unknown, 2, "the stylesheet link and the other element");
    }

    #[test]
    fn a_prefix_bound_to_another_namespace_is_not_ours() {
        let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="urn:other">
<url><loc>https://e.com/</loc><xhtml:link rel="alternate" hreflang="fr" href="https://e.com/fr"/></url></urlset>"#;
        let (items, unknown) = read_all(xml);
        let Item::Url(url) = &items.unwrap()[0] else {
            panic!("a url")
        };
        assert!(url.alternates.is_empty());
        assert_eq!(unknown, 1);
    }

    #[test]
    fn an_index_yields_the_files_it_lists() {
        let xml = "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
                   <sitemap><loc>https://e.com/s-1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>\n\
                   <sitemap><loc>https://e.com/s-2.xml</loc></sitemap>\n</sitemapindex>\n";
        let (items, _) = read_all(xml);
        assert_eq!(
            items.unwrap(),
            vec![
                Item::Sitemap {
                    loc: "https://e.com/s-1.xml.gz".into(),
                    line: Some(2)
                },
                Item::Sitemap {
                    loc: "https://e.com/s-2.xml".into(),
                    line: Some(3)
                },
            ]
        );
    }

    #[test]
    fn malformed_xml_is_reported_with_line_and_byte_after_the_good_urls() {
        let xml = "<urlset>\n<url><loc>https://e.com/1</loc></url>\n<url><loc>https://e.com/2</lox></url>\n</urlset>";
        let mut doc = SitemapXml::new(Tracked::new(BufReader::new(xml.as_bytes())));
        assert!(matches!(doc.next_item(), Ok(Some(Item::Url(_)))));
        let e = doc.next_item().unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert_eq!(e.byte, xml.find("</lox>").unwrap() as u64, "{e}");
        assert!(e.to_string().starts_with("line 3, byte "), "{e}");
    }

    #[test]
    fn a_truncated_file_and_a_foreign_root_are_errors() {
        let (items, _) = read_all("<urlset>\n<url><loc>https://e.com/1</loc>");
        assert!(items.unwrap_err().message.contains("inside <url>"));
        let (items, _) = read_all("<rss><channel/></rss>");
        assert!(items.unwrap_err().message.contains("<rss>"));
        let (items, _) = read_all("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset/>");
        assert!(items.unwrap_err().message.contains("UTF-8"));
        let (items, _) = read_all("<urlset><url><loc>https://e.com/&nbsp;</loc></url></urlset>");
        let e = items.unwrap_err();
        assert_eq!((e.line, e.byte), (Some(1), 18), "{e}");
    }
}
