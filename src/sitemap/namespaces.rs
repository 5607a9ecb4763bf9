//! Which extension namespaces (alternates, images) a document declares on its root.

/// The extension namespaces a document declares on its root: only those its entries use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Namespaces {
    pub xhtml: bool,
    pub image: bool,
}

impl Namespaces {
    pub const NONE: Self = Self {
        xhtml: false,
        image: false,
    };
    pub const XHTML: Self = Self {
        xhtml: true,
        image: false,
    };
    pub const IMAGE: Self = Self {
        xhtml: false,
        image: true,
    };
    pub const ALL: Self = Self {
        xhtml: true,
        image: true,
    };

    pub fn union(self, other: Self) -> Self {
        Self {
            xhtml: self.xhtml || other.xhtml,
            image: self.image || other.image,
        }
    }

    pub fn intersection(self, other: Self) -> Self {
        Self {
            xhtml: self.xhtml && other.xhtml,
            image: self.image && other.image,
        }
    }

    pub fn is_empty(self) -> bool {
        self == Self::NONE
    }

    /// As stored in `sitemapd_pages.extensions`: 1 = xhtml, 2 = image.
    pub fn bits(self) -> i64 {
        i64::from(self.xhtml) | (i64::from(self.image) << 1)
    }

    pub fn from_bits(bits: i64) -> Self {
        Self {
            xhtml: bits & 1 != 0,
            image: bits & 2 != 0,
        }
    }
}
