//! Sitemap documents: entry validation, the protocol's limits and the XML writer.
//!
//! Pure code: no database, no HTTP. The store hands [`RawEntry`] rows in; out come bytes that are
//! valid against the sitemaps.org schemas, plus a [`PageBuilder`] that keeps every file within the
//! protocol's limits and fingerprints its exact bytes for validators.

pub mod entry;
pub mod loc;
pub mod writer;

use xxhash_rust::xxh3::Xxh3;

pub use entry::{Entry, EntryRules, RawEntry};
pub use loc::Loc;
pub use writer::{write_url, DocumentStyle};

/// Most bytes one sitemap file may hold uncompressed (50 MiB).
pub const MAX_FILE_BYTES: usize = 52_428_800;
/// Most sitemaps one index may list.
pub const MAX_SITEMAPS_PER_INDEX: usize = 50_000;
/// Bumped whenever the bytes we write for the same data change, so fingerprints change too.
const RENDER_VERSION: u64 = 1;

/// Why a row is not in any sitemap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// Empty, relative or unparseable.
    InvalidUrl,
    /// Not http(s), another scheme, host or port, or outside the base path.
    OutOfScope,
    /// Longer than 2,048 characters once encoded.
    TooLong,
    /// Holds characters XML 1.0 cannot carry.
    NotXmlSafe,
    /// Disallowed by the robots.txt we serve, for one of ROBOTS_CHECK_AGENTS.
    RobotsDisallowed,
}

impl SkipReason {
    pub const ALL: [SkipReason; 5] = [
        Self::InvalidUrl,
        Self::OutOfScope,
        Self::TooLong,
        Self::NotXmlSafe,
        Self::RobotsDisallowed,
    ];

    /// Stable name, used in logs, metrics and `sitemapd check`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidUrl => "invalid_url",
            Self::OutOfScope => "out_of_scope",
            Self::TooLong => "too_long",
            Self::NotXmlSafe => "not_xml_safe",
            Self::RobotsDisallowed => "robots_disallowed",
        }
    }
}

/// Rows skipped, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipCounts([u64; SkipReason::ALL.len()]);

impl SkipCounts {
    pub fn add(&mut self, reason: SkipReason) {
        self.0[reason as usize] += 1;
    }

    pub fn get(&self, reason: SkipReason) -> u64 {
        self.0[reason as usize]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, other: &SkipCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (SkipReason, u64)> + '_ {
        SkipReason::ALL.into_iter().map(|r| (r, self.get(r)))
    }
}

/// A content fingerprint: 128 bits of XXH3 over a document's exact bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub u128);

impl Fingerprint {
    pub fn of(bytes: &[u8]) -> Self {
        let mut h = Xxh3::with_seed(RENDER_VERSION);
        h.update(bytes);
        Self(h.digest128())
    }

    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }

    pub fn parse_hex(s: &str) -> Option<Self> {
        u128::from_str_radix(s, 16).ok().map(Self)
    }
}

/// What a finished page is: its size and the fingerprint of its exact bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageDigest {
    pub urls: usize,
    pub bytes: usize,
    pub fingerprint: Fingerprint,
}

/// Follows one sitemap file as entries are added: enforces the limits, hashes the bytes.
///
/// The same builder serves the sweep (which only measures) and the renderer (which also sends
/// the bytes), so a page's fingerprint is by construction the hash of what is served.
pub struct PageBuilder {
    max_urls: usize,
    max_bytes: usize,
    urls: usize,
    bytes: usize,
    close: &'static [u8],
    hasher: Xxh3,
}

impl PageBuilder {
    /// Starts a page; `open` is the document's prolog, already counted and hashed.
    pub fn new(style: &DocumentStyle, max_urls: usize, open: &[u8]) -> Self {
        Self::with_limits(style, max_urls, MAX_FILE_BYTES, open)
    }

    /// A page held to tighter limits than the protocol's, to leave room for growth.
    pub fn with_limits(
        style: &DocumentStyle,
        max_urls: usize,
        max_bytes: usize,
        open: &[u8],
    ) -> Self {
        let close = style.urlset_close();
        let mut hasher = Xxh3::with_seed(RENDER_VERSION);
        hasher.update(open);
        Self {
            max_urls,
            max_bytes,
            urls: 0,
            bytes: open.len() + close.len(),
            close,
            hasher,
        }
    }

    /// Whether one more `<url>` of `len` bytes keeps the file within both limits.
    pub fn fits(&self, len: usize) -> bool {
        self.urls < self.max_urls && self.bytes + len <= self.max_bytes
    }

    pub fn add(&mut self, url_element: &[u8]) {
        self.urls += 1;
        self.bytes += url_element.len();
        self.hasher.update(url_element);
    }

    pub fn urls(&self) -> usize {
        self.urls
    }

    pub fn finish(mut self) -> PageDigest {
        self.hasher.update(self.close);
        PageDigest {
            urls: self.urls,
            bytes: self.bytes,
            fingerprint: Fingerprint(self.hasher.digest128()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_fingerprints_exactly_the_document_bytes() {
        let style = DocumentStyle::default();
        let open = style.urlset_open();
        let mut page = PageBuilder::new(&style, 10, &open);
        page.add(b"<url><loc>https://e.com/</loc></url>\n");
        let digest = page.finish();
        let mut doc = open.clone();
        doc.extend_from_slice(b"<url><loc>https://e.com/</loc></url>\n");
        doc.extend_from_slice(style.urlset_close());
        assert_eq!(digest.fingerprint, Fingerprint::of(&doc));
        assert_eq!(digest.bytes, doc.len());
    }

    #[test]
    fn the_builder_refuses_past_either_limit() {
        let style = DocumentStyle::default();
        let mut page = PageBuilder::new(&style, 1, &style.urlset_open());
        assert!(page.fits(100));
        page.add(&[b'x'; 100]);
        assert!(!page.fits(1));
        let page = PageBuilder::new(&style, 50_000, &style.urlset_open());
        assert!(!page.fits(MAX_FILE_BYTES));
    }
}
