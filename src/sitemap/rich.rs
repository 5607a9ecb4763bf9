//! Rich entries: videos (`video:video`, Google's video extension) of any entry, and the article
//! of a news group's entry (`news:news`): rows as read, and the checks that make them writable
//! ([`super::writer`] writes them). A bad video row is dropped and counted, never the entry; an
//! article without what Google News requires is left out.

use chrono::{DateTime, Utc};

use super::lastmod::Lastmod;
use super::loc::{is_xml_char, Loc};
use super::{SkipCounts, SkipReason};
use crate::sitemap::publication::NewsPublication;
use crate::sitemap::BaseUrl;

/// Namespace of `video:video` (Google's video sitemap extension).
pub const VIDEO_NS: &str = "http://www.google.com/schemas/sitemap-video/1.1";
/// Namespace of `news:news` (Google News sitemaps).
pub const NEWS_NS: &str = "http://www.google.com/schemas/sitemap-news/0.9";

/// Most characters of a video's title and description (Google's schema).
pub const MAX_VIDEO_TITLE: usize = 100;
pub const MAX_VIDEO_DESCRIPTION: usize = 2048;
/// Longest video duration Google takes, in seconds (8 hours).
pub const MAX_VIDEO_SECONDS: i64 = 28_800;
/// Most videos one `<url>` carries (as for images).
pub const MAX_VIDEOS_PER_URL: usize = 1000;

/// One `sitemap_videos` row, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawVideo {
    pub thumbnail_loc: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub content_loc: Option<String>,
    pub player_loc: Option<String>,
    pub duration: Option<i64>,
    pub publication_date: Option<DateTime<Utc>>,
}

/// A video every field of which can be written as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Video {
    pub thumbnail_loc: Loc,
    pub title: String,
    pub description: String,
    pub content_loc: Option<Loc>,
    pub player_loc: Option<Loc>,
    /// Seconds, 1 to 28,800; out of range is left out (the video stays).
    pub duration: Option<i64>,
    pub publication_date: Option<Lastmod>,
}

/// The article of a news group's row, as read (defaults of the group already applied).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawArticle {
    pub publication_date: Option<DateTime<Utc>>,
    pub title: Option<String>,
    pub language: Option<String>,
    pub publication_name: Option<String>,
}

/// An article as `news:news` carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Article {
    pub publication: NewsPublication,
    pub publication_date: Lastmod,
    pub title: String,
}

impl RawArticle {
    /// Fills what the row leaves NULL (or blank) from the group's publication.
    pub fn with_defaults(mut self, defaults: &NewsPublication) -> Self {
        let blank = |v: &Option<String>| v.as_deref().is_none_or(|v| v.trim().is_empty());
        if blank(&self.language) {
            self.language = Some(defaults.language.clone());
        }
        if blank(&self.publication_name) {
            self.publication_name = Some(defaults.name.clone());
        }
        self
    }

    /// The article, or why it cannot be listed.
    pub fn accept(&self) -> Result<Article, SkipReason> {
        let text = |v: &Option<String>| v.as_deref().and_then(clean_text);
        let language = self
            .language
            .as_deref()
            .map(|l| l.trim().to_ascii_lowercase());
        let article = Article {
            publication: NewsPublication {
                name: text(&self.publication_name).ok_or(SkipReason::InvalidNews)?,
                language: language
                    .filter(|l| crate::sitemap::publication::is_news_language(l))
                    .ok_or(SkipReason::InvalidNews)?,
            },
            publication_date: self
                .publication_date
                .and_then(Lastmod::new)
                .ok_or(SkipReason::InvalidNews)?,
            title: text(&self.title).ok_or(SkipReason::InvalidNews)?,
        };
        Ok(article)
    }
}

/// Videos that can be written, the others dropped and counted as `invalid_video`.
pub fn accept_videos(raw: &[RawVideo], base: &BaseUrl, dropped: &mut SkipCounts) -> Vec<Video> {
    let mut accepted = Vec::new();
    for video in raw {
        match accept_video(video, base) {
            Some(video) if accepted.len() < MAX_VIDEOS_PER_URL => accepted.push(video),
            _ => dropped.add(SkipReason::InvalidVideo),
        }
    }
    accepted
}

/// A video with a thumbnail, a title, a description and a content or player URL; URLs checked
/// as image URLs are (absolute http(s), any host).
pub fn accept_video(raw: &RawVideo, base: &BaseUrl) -> Option<Video> {
    let url = |v: &Option<String>| -> Option<Option<Loc>> {
        match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            None => Some(None),
            Some(v) => Loc::parse_anywhere(v, base).ok().map(Some),
        }
    };
    let text = |v: &Option<String>, most: usize| {
        v.as_deref()
            .and_then(clean_text)
            .filter(|t| t.chars().count() <= most)
    };
    let content_loc = url(&raw.content_loc)?;
    let player_loc = url(&raw.player_loc)?;
    if content_loc.is_none() && player_loc.is_none() {
        return None;
    }
    Some(Video {
        thumbnail_loc: url(&raw.thumbnail_loc)??,
        title: text(&raw.title, MAX_VIDEO_TITLE)?,
        description: text(&raw.description, MAX_VIDEO_DESCRIPTION)?,
        content_loc,
        player_loc,
        duration: raw.duration.filter(|s| (1..=MAX_VIDEO_SECONDS).contains(s)),
        publication_date: raw.publication_date.and_then(Lastmod::new),
    })
}

/// Text trimmed, not empty, and made only of characters XML 1.0 carries.
fn clean_text(value: &str) -> Option<String> {
    let value = value.trim();
    (!value.is_empty() && value.chars().all(is_xml_char)).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> BaseUrl {
        BaseUrl::parse("https://e.com").unwrap()
    }

    fn video() -> RawVideo {
        RawVideo {
            thumbnail_loc: Some("https://cdn.e.com/t.jpg".into()),
            title: Some("Grilling & more".into()),
            description: Some("How to <grill>".into()),
            content_loc: Some("/v.mp4".into()),
            player_loc: None,
            duration: Some(600),
            publication_date: None,
        }
    }

    #[test]
    fn a_video_needs_thumbnail_title_description_and_a_content_or_player_url() {
        let mut dropped = SkipCounts::default();
        let bad = [
            RawVideo {
                thumbnail_loc: None,
                ..video()
            },
            RawVideo {
                title: Some("  ".into()),
                ..video()
            },
            RawVideo {
                description: None,
                ..video()
            },
            RawVideo {
                content_loc: None,
                player_loc: None,
                ..video()
            },
            RawVideo {
                player_loc: Some("javascript:alert(1)".into()),
                ..video()
            },
            RawVideo {
                title: Some("x".repeat(101)),
                ..video()
            },
        ];
        let mut all = bad.to_vec();
        all.push(RawVideo {
            duration: Some(99_999),
            ..video()
        });
        let accepted = accept_videos(&all, &base(), &mut dropped);
        assert_eq!(dropped.get(SkipReason::InvalidVideo), bad.len() as u64);
        assert_eq!(accepted.len(), 1);
        assert_eq!(
            accepted[0].duration, None,
            "an out-of-range duration is left out"
        );
        assert_eq!(
            accepted[0].content_loc.as_ref().unwrap().as_str(),
            "https://e.com/v.mp4"
        );
        assert_eq!(accepted[0].title, "Grilling & more");
    }

    #[test]
    fn an_article_takes_the_groups_defaults_and_needs_a_title_and_date() {
        let defaults = NewsPublication {
            name: "The Daily".into(),
            language: "en".into(),
        };
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let raw = RawArticle {
            publication_date: Some(at),
            title: Some("Rates & rivers".into()),
            language: None,
            publication_name: Some(" ".into()),
        };
        let article = raw.clone().with_defaults(&defaults).accept().unwrap();
        assert_eq!(article.publication, defaults);
        assert_eq!(article.title, "Rates & rivers");
        let untitled = RawArticle { title: None, ..raw };
        assert_eq!(
            untitled.with_defaults(&defaults).accept(),
            Err(SkipReason::InvalidNews)
        );
    }
}
