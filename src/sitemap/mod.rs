//! Sitemap documents: entry validation, the protocol's limits and the XML writer.
//!
//! Pure code: no database, no HTTP. The store hands [`RawEntry`] rows in; out come bytes that are
//! valid against the sitemaps.org schemas, plus a [`PageBuilder`] that keeps every file within the
//! protocol's limits and fingerprints its exact bytes for validators.

pub mod audit;
mod base_url;
pub mod blocks;
pub mod entry;
mod lastmod;
pub mod loc;
mod namespaces;
pub mod publication;
pub mod rich;
mod seen;
pub mod writer;

use xxhash_rust::xxh3::Xxh3;

use blocks::BlockHasher;

pub use base_url::BaseUrl;
pub use blocks::{Block, BLOCK_IDS};
pub use entry::{Entry, EntryRules, RawEntry};
pub use loc::Loc;
pub use namespaces::Namespaces;
pub use seen::{SeenUrls, UrlKey};
pub use writer::{write_url, DocumentStyle};

/// Most URLs one sitemap file may hold (sitemaps.org).
pub const MAX_URLS_PER_FILE: usize = 50_000;
/// Most bytes one sitemap file may hold uncompressed (50 MiB).
pub const MAX_FILE_BYTES: usize = 52_428_800;
/// Most sitemaps one index may list.
pub const MAX_SITEMAPS_PER_INDEX: usize = 50_000;
/// Bumped whenever the bytes we write for the same data change, so fingerprints change too.
const RENDER_VERSION: u64 = 3;

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
    /// A `sitemap_alternates` row with a bad language tag or URL (the entry stays).
    InvalidAlternate,
    /// A `sitemap_images` row with a bad URL, or past 1,000 images per entry (the entry stays).
    InvalidImage,
    /// A `sitemap_videos` row without a thumbnail, title, description, or both content and
    /// player URL, or with a bad URL or text (the entry stays).
    InvalidVideo,
    /// An article of a news group without a title, publication date, publication name or
    /// language (the article is left out).
    InvalidNews,
    /// A `lastmod` later than now (beyond [`entry::FUTURE_LASTMOD_ALLOWANCE_SECS`] of clock
    /// skew): search engines distrust a site's lastmods when one is in the future, so it is
    /// left out (the entry stays).
    FutureLastmod,
    /// The same URL (once normalised) as an entry listed before it in the same file: listed
    /// once.
    Duplicate,
    /// A `lastmod` the database cannot read as a time (text that is no date): the tag is left
    /// out, the entry stays.
    InvalidLastmod,
    /// A `priority` that is no number: the tag is left out, the entry stays.
    InvalidPriority,
    /// Rows that share one id: ids order the files and cut them, so none of them is listed.
    DuplicateId,
    /// A row whose id is NULL: it has no place in the files.
    NullId,
    /// A row whose id does not fit a signed 64-bit integer (a MySQL `BIGINT UNSIGNED` above
    /// 2^63 - 1).
    IdOutOfRange,
}

impl SkipReason {
    pub const ALL: [SkipReason; 16] = [
        Self::InvalidUrl,
        Self::OutOfScope,
        Self::TooLong,
        Self::NotXmlSafe,
        Self::RobotsDisallowed,
        Self::InvalidAlternate,
        Self::InvalidImage,
        Self::InvalidVideo,
        Self::InvalidNews,
        Self::FutureLastmod,
        Self::Duplicate,
        Self::InvalidLastmod,
        Self::InvalidPriority,
        Self::DuplicateId,
        Self::NullId,
        Self::IdOutOfRange,
    ];

    /// Whether the reason leaves a whole entry out (the others drop one extension row or
    /// one tag).
    pub fn drops_entry(self) -> bool {
        !matches!(
            self,
            Self::InvalidAlternate
                | Self::InvalidImage
                | Self::InvalidVideo
                | Self::FutureLastmod
                | Self::InvalidLastmod
                | Self::InvalidPriority
        )
    }

    /// Stable name, used in logs, metrics and `sitemapd check`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidUrl => "invalid_url",
            Self::OutOfScope => "out_of_scope",
            Self::TooLong => "too_long",
            Self::NotXmlSafe => "not_xml_safe",
            Self::RobotsDisallowed => "robots_disallowed",
            Self::InvalidAlternate => "invalid_alternate",
            Self::InvalidImage => "invalid_image",
            Self::InvalidVideo => "invalid_video",
            Self::InvalidNews => "invalid_news",
            Self::FutureLastmod => "future_lastmod",
            Self::Duplicate => "duplicate",
            Self::InvalidLastmod => "invalid_lastmod",
            Self::InvalidPriority => "invalid_priority",
            Self::DuplicateId => "duplicate_id",
            Self::NullId => "null_id",
            Self::IdOutOfRange => "id_out_of_range",
        }
    }
}

/// Rows skipped, by reason, with the first few examples of each (for the status page; they do
/// not take part in comparisons: two counts are equal when their numbers are).
#[derive(Debug, Clone, Default)]
pub struct SkipCounts {
    counts: [u64; SkipReason::ALL.len()],
    /// Shared, so cloning a page (as each request does) copies no text.
    examples: std::sync::Arc<Vec<(SkipReason, String)>>,
    /// When the earliest lastmod left out for being in the future stops being so (unix
    /// seconds): the file changes then by time alone.
    future_due: Option<i64>,
}

/// Examples kept per reason.
const EXAMPLES_PER_REASON: usize = 3;

impl PartialEq for SkipCounts {
    fn eq(&self, other: &Self) -> bool {
        self.counts == other.counts
    }
}

impl Eq for SkipCounts {}

impl SkipCounts {
    pub fn add(&mut self, reason: SkipReason) {
        self.add_n(reason, 1);
    }

    pub fn add_n(&mut self, reason: SkipReason, n: u64) {
        self.counts[reason as usize] += n;
    }

    pub fn set(&mut self, reason: SkipReason, n: u64) {
        self.counts[reason as usize] = n;
    }

    pub fn get(&self, reason: SkipReason) -> u64 {
        self.counts[reason as usize]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Keeps `example` of `reason` if fewer than three are kept (made only then).
    pub fn example(&mut self, reason: SkipReason, example: impl FnOnce() -> String) {
        if self.examples_of(reason).count() < EXAMPLES_PER_REASON {
            std::sync::Arc::make_mut(&mut self.examples).push((reason, example()));
        }
    }

    /// No counts, and `due` as [`SkipCounts::future_due`].
    pub fn due_at(due: Option<i64>) -> Self {
        Self {
            future_due: due,
            ..Self::default()
        }
    }

    /// Notes a lastmod left out for being in the future, at `lastmod` (unix seconds).
    pub fn note_future_lastmod(&mut self, lastmod: i64) {
        let due = lastmod.saturating_sub(entry::FUTURE_LASTMOD_ALLOWANCE_SECS);
        self.future_due = Some(self.future_due.map_or(due, |d| d.min(due)));
    }

    /// When a lastmod left out for being in the future comes within the allowance first.
    pub fn future_due(&self) -> Option<i64> {
        self.future_due
    }

    /// The examples kept of `reason`.
    pub fn examples_of(&self, reason: SkipReason) -> impl Iterator<Item = &str> + '_ {
        self.examples
            .iter()
            .filter(move |(r, _)| *r == reason)
            .map(|(_, e)| e.as_str())
    }

    pub fn merge(&mut self, other: &SkipCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        for (reason, example) in other.examples.iter() {
            self.example(*reason, || example.clone());
        }
        if let Some(due) = other.future_due {
            self.future_due = Some(self.future_due.map_or(due, |d| d.min(due)));
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

/// What a finished page is: its size, the fingerprint of its exact bytes, and the extension
/// namespaces its root declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageDigest {
    pub urls: usize,
    pub bytes: usize,
    pub fingerprint: Fingerprint,
    pub namespaces: Namespaces,
}

/// Follows one sitemap file as entries are added: enforces the limits, hashes the bytes.
///
/// The same builder serves the sweep (which only measures) and the renderer (which also sends
/// the bytes), so a page's fingerprint is by construction the hash of what is served. The root
/// element declares only the extension namespaces the file uses: the renderer knows them from
/// the sweep ([`PageBuilder::declared`]); the sweep learns them from the entries it measures
/// ([`PageBuilder::measuring`]). So the fingerprint covers the prolog, a hash of the `<url>`
/// elements and the closing tag, and limits are checked against the longest possible prolog.
pub struct PageBuilder {
    style: DocumentStyle,
    declared: Option<Namespaces>,
    max_urls: usize,
    max_bytes: usize,
    urls: usize,
    body_bytes: usize,
    /// Bytes of everything but the `<url>` elements, at most.
    frame_bytes: usize,
    blocks: BlockHasher,
}

impl PageBuilder {
    /// A page whose root declares `namespaces`, as the renderer writes it.
    pub fn declared(style: &DocumentStyle, max_urls: usize, namespaces: Namespaces) -> Self {
        Self::build(style, max_urls, MAX_FILE_BYTES, Some(namespaces))
    }

    /// A page being measured: its root will declare what its entries use.
    pub fn measuring(style: &DocumentStyle, max_urls: usize) -> Self {
        Self::build(style, max_urls, MAX_FILE_BYTES, None)
    }

    /// A page held to tighter byte limits than the protocol's.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    fn build(
        style: &DocumentStyle,
        max_urls: usize,
        max_bytes: usize,
        declared: Option<Namespaces>,
    ) -> Self {
        let open = style.urlset_open(declared.unwrap_or(Namespaces::ALL));
        Self {
            style: style.clone(),
            declared,
            max_urls,
            max_bytes,
            urls: 0,
            body_bytes: 0,
            frame_bytes: open.len() + style.urlset_close().len(),
            blocks: BlockHasher::new(),
        }
    }

    /// Whether one more `<url>` of `len` bytes keeps the file within both limits.
    pub fn fits(&self, len: usize) -> bool {
        self.urls < self.max_urls && self.frame_bytes + self.body_bytes + len <= self.max_bytes
    }

    /// Adds the `<url>` element of row `id` (rows come in id order), for the URL `url`, which
    /// uses the extension namespaces `uses`.
    pub fn add(&mut self, id: i64, url: UrlKey, url_element: &[u8], uses: Namespaces) {
        self.urls += 1;
        self.body_bytes += url_element.len();
        self.blocks.add(id, url, url_element, uses);
    }

    pub fn urls(&self) -> usize {
        self.urls
    }

    pub fn finish(self) -> PageDigest {
        self.finish_blocks().0
    }

    /// What the page is, and the blocks it is made of (see [`blocks`]).
    pub fn finish_blocks(self) -> (PageDigest, Vec<Block>) {
        let blocks = self.blocks.finish();
        (
            blocks::digest_of(&self.style, self.declared, &blocks),
            blocks,
        )
    }
}

impl Fingerprint {
    /// The fingerprint of a urlset: its prolog, the hash of its blocks of `<url>` elements,
    /// its end.
    pub fn of_page(open: &[u8], body: u128, close: &[u8]) -> Self {
        let mut h = Xxh3::with_seed(RENDER_VERSION);
        h.update(open);
        h.update(&body.to_le_bytes());
        h.update(close);
        Self(h.digest128())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored validators stay valid across releases only while the same data gives the same
    /// bytes. When this fails because the written bytes changed on purpose, raise
    /// [`RENDER_VERSION`] and pin both again: every stored file is then re-made once.
    #[test]
    fn the_format_version_moves_with_the_written_bytes() {
        let rules = EntryRules::new(BaseUrl::parse("https://e.com").unwrap(), None, vec![]);
        let entry = rules
            .accept(&RawEntry {
                id: 1,
                loc: Some("/caf\u{e9}?a=1&b=2".into()),
                lastmod: chrono::DateTime::from_timestamp(1_714_564_800, 0),
                changefreq: Some("daily".into()),
                priority: Some(0.5),
                ..RawEntry::default()
            })
            .unwrap();
        let style = DocumentStyle::default();
        let mut element = Vec::new();
        write_url(&mut element, &entry);
        let mut doc = style.urlset_open(Namespaces::NONE);
        doc.extend_from_slice(&element);
        doc.extend_from_slice(style.urlset_close());
        // How a file's fingerprint is made from its rows (in blocks of ids) is part of it.
        let mut page = PageBuilder::measuring(&style, 10);
        page.add(entry.id, UrlKey::of_text(b"u"), &element, Namespaces::NONE);
        assert_eq!(
            (
                RENDER_VERSION,
                Fingerprint::of(&doc).hex(),
                page.finish().fingerprint.hex()
            ),
            (
                3,
                "e911c000a5876bf363055ce1360a0b98".to_string(),
                "711a3e3051ec264ea81ce1bc249051d6".to_string()
            ),
            "{}",
            String::from_utf8_lossy(&doc)
        );
    }

    #[test]
    fn the_builder_counts_exactly_the_document_bytes() {
        let style = DocumentStyle::default();
        let element = b"<url><loc>https://e.com/</loc></url>\n";
        let mut page = PageBuilder::measuring(&style, 10);
        page.add(1, UrlKey::of_text(b"u"), element, Namespaces::NONE);
        let digest = page.finish();
        let mut doc = style.urlset_open(Namespaces::NONE);
        doc.extend_from_slice(element);
        doc.extend_from_slice(style.urlset_close());
        assert_eq!(digest.bytes, doc.len());
        assert_eq!(digest.namespaces, Namespaces::NONE);
    }

    #[test]
    fn measuring_and_rendering_agree_on_the_fingerprint() {
        let style = DocumentStyle::default();
        let element = b"<url><loc>https://e.com/</loc><image:image><image:loc>https://c.com/a.jpg</image:loc></image:image></url>\n";
        let uses = Namespaces::IMAGE;
        let mut measured = PageBuilder::measuring(&style, 10);
        measured.add(1, UrlKey::of_text(b"u"), element, uses);
        let measured = measured.finish();
        let mut rendered = PageBuilder::declared(&style, 10, measured.namespaces);
        rendered.add(1, UrlKey::of_text(b"u"), element, uses);
        assert_eq!(rendered.finish(), measured);
        let mut stale = PageBuilder::declared(&style, 10, Namespaces::NONE);
        stale.add(1, UrlKey::of_text(b"u"), element, uses);
        assert_ne!(stale.finish().fingerprint, measured.fingerprint);
    }

    #[test]
    fn the_builder_refuses_past_either_limit() {
        let style = DocumentStyle::default();
        let mut page = PageBuilder::measuring(&style, 1);
        assert!(page.fits(100));
        page.add(1, UrlKey::of_text(b"u"), &[b'x'; 100], Namespaces::NONE);
        assert!(!page.fits(1));
        let page = PageBuilder::measuring(&style, 50_000);
        assert!(!page.fits(MAX_FILE_BYTES));
    }
}
