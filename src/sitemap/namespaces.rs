//! Which extension namespaces (alternates, images, videos, news) a document declares on its root.

/// The extension namespaces a document declares on its root: only those its entries use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Namespaces {
    pub xhtml: bool,
    pub image: bool,
    pub video: bool,
    pub news: bool,
}

impl Namespaces {
    pub const NONE: Self = Self {
        xhtml: false,
        image: false,
        video: false,
        news: false,
    };
    pub const XHTML: Self = Self {
        xhtml: true,
        ..Self::NONE
    };
    pub const IMAGE: Self = Self {
        image: true,
        ..Self::NONE
    };
    pub const ALL: Self = Self {
        xhtml: true,
        image: true,
        video: true,
        news: true,
    };

    pub fn union(self, other: Self) -> Self {
        Self {
            xhtml: self.xhtml || other.xhtml,
            image: self.image || other.image,
            video: self.video || other.video,
            news: self.news || other.news,
        }
    }

    pub fn intersection(self, other: Self) -> Self {
        Self {
            xhtml: self.xhtml && other.xhtml,
            image: self.image && other.image,
            video: self.video && other.video,
            news: self.news && other.news,
        }
    }

    pub fn is_empty(self) -> bool {
        self == Self::NONE
    }

    /// As stored in `sitemapd_pages.extensions`: 1 = xhtml, 2 = image, 4 = video, 8 = news.
    pub fn bits(self) -> i64 {
        i64::from(self.xhtml)
            | (i64::from(self.image) << 1)
            | (i64::from(self.video) << 2)
            | (i64::from(self.news) << 3)
    }

    pub fn from_bits(bits: i64) -> Self {
        Self {
            xhtml: bits & 1 != 0,
            image: bits & 2 != 0,
            video: bits & 4 != 0,
            news: bits & 8 != 0,
        }
    }
}
