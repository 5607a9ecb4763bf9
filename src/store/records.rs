//! The values the store hands out and takes: id ranges, our state tables' rows (pages and whole
//! files), IndexNow progress, and what the database says changed.

use crate::sitemap::{Fingerprint, RawEntry};

/// An inclusive range of entry ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    pub first: i64,
    pub last: i64,
}

impl IdRange {
    pub const ALL: IdRange = IdRange {
        first: i64::MIN,
        last: i64::MAX,
    };

    pub fn contains(&self, id: i64) -> bool {
        (self.first..=self.last).contains(&id)
    }

    pub fn overlaps(&self, other: &IdRange) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// One sitemap file as stored in `sitemapd_pages`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRecord {
    pub page_no: i64,
    /// Lowest id the page may hold; the page ends where the next one starts.
    pub first_id: i64,
    pub urls: i64,
    pub bytes: i64,
    pub fingerprint: Fingerprint,
    /// Unix seconds of the last change of the page's bytes.
    pub changed_at: i64,
    /// Extension namespaces the file declares ([`Namespaces::bits`]).
    pub extensions: i64,
    /// What the database said of the file's rows when they were measured (see
    /// [`super::Store::file_summaries`]); `None` when not known.
    pub summary: Option<String>,
}

/// Rows of extension tables read for a run of entries: `(entry_id, row)` in entry order.
pub type Keyed<T> = Vec<(i64, T)>;

/// Where IndexNow submission has got to: every entry up to this (lastmod, id) was submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SubmittedThrough {
    /// `lastmod` in microseconds since the epoch.
    pub lastmod_us: i64,
    pub id: i64,
}

/// Entries modified after a [`SubmittedThrough`], and where the last of them stands.
#[derive(Debug, Default)]
pub struct Modified {
    pub entries: Vec<RawEntry>,
    /// The position of the last entry as the database orders them: the next query starts
    /// after it. Taken from the database's own reading of `lastmod`, which may be coarser
    /// than the one decoded for the entry (SQLite compares text dates to the millisecond).
    pub through: Option<SubmittedThrough>,
}

impl Modified {
    /// For backends whose comparisons see `lastmod` exactly as it is decoded.
    pub(super) fn from_entries(entries: Vec<RawEntry>) -> Self {
        let through = entries.last().and_then(|last| {
            Some(SubmittedThrough {
                lastmod_us: last.lastmod?.timestamp_micros(),
                id: last.id,
            })
        });
        Self { entries, through }
    }
}

/// A whole file whose validators are stored in `sitemapd_files` (the index, robots.txt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    pub name: String,
    pub fingerprint: Fingerprint,
    pub changed_at: i64,
}

impl PageRecord {
    /// A row of `sitemapd_pages`.
    pub(super) fn from_row<'r, R>(row: &'r R) -> Result<Self, sqlx::Error>
    where
        R: sqlx::Row,
        &'static str: sqlx::ColumnIndex<R>,
        i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        Ok(Self {
            page_no: row.try_get("page_no")?,
            first_id: row.try_get("first_id")?,
            urls: row.try_get("urls")?,
            bytes: row.try_get("bytes")?,
            fingerprint: fingerprint_of(row.try_get("fingerprint")?)?,
            changed_at: row.try_get("changed_at")?,
            extensions: row.try_get("extensions")?,
            summary: row.try_get("summary")?,
        })
    }
}

impl FileRecord {
    /// A row of `sitemapd_files`.
    pub(super) fn from_row<'r, R>(row: &'r R) -> Result<Self, sqlx::Error>
    where
        R: sqlx::Row,
        &'static str: sqlx::ColumnIndex<R>,
        i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        Ok(Self {
            name: row.try_get("name")?,
            fingerprint: fingerprint_of(row.try_get("fingerprint")?)?,
            changed_at: row.try_get("changed_at")?,
        })
    }
}

/// A stored fingerprint; anything but 32 hex digits is a decoding error, not fingerprint 0.
fn fingerprint_of(hex: String) -> Result<Fingerprint, sqlx::Error> {
    Fingerprint::parse_hex(&hex).ok_or_else(|| sqlx::Error::ColumnDecode {
        index: "fingerprint".into(),
        source: format!("{hex:?} is not a fingerprint (32 hex digits)").into(),
    })
}

/// A group's stored state: its pages (id ranges and their validators) and its whole files (the
/// index, robots.txt, feeds, the settings fingerprint), saved together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedState {
    pub pages: Vec<PageRecord>,
    pub files: Vec<FileRecord>,
}

impl SavedState {
    /// Whether nothing is stored (the group's first sweep has not saved yet).
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The stored whole file named `name`.
    pub fn file(&self, name: &str) -> Option<&FileRecord> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// What the database says changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Rows with ids in this range were inserted, updated or deleted.
    Ids(IdRange),
    /// A change log named these keys (sorted, apart): the rows with these ids may have changed.
    /// For the built-in table they are its rows' ids; behind a view, the keys of the tables the
    /// view's id comes from, which may name no row of the view (a revision, a draft).
    Keys(Vec<IdRange>),
    /// Anything may have changed (a TRUNCATE, or a lost notification connection).
    Everything,
}

/// How many files the database summarises at once ([`super::Store::file_summaries`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryPace {
    /// Two at a time where the pool has room: a change is waiting to show.
    Quick,
    /// One at a time: the pass only takes the first summaries of files just measured, beside
    /// the renders of a first crawl, and leaves the database a core.
    Gentle,
}

/// What the database says of the last change to the tables behind a source (MySQL/MariaDB:
/// their commit times, and the views' definitions), as a fingerprint: a refresh that finds the
/// stamp where the last sweep left it need not read the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceStamp {
    fingerprint: crate::sitemap::Fingerprint,
    /// Whether every change it records was made in an earlier second than the stamp was read:
    /// a later change in that same second would leave the stamp as it is.
    settled: bool,
}

impl SourceStamp {
    pub fn new(text: &str, settled: bool) -> Self {
        Self {
            fingerprint: crate::sitemap::Fingerprint::of(text.as_bytes()),
            settled,
        }
    }

    /// Whether nothing can have changed since `earlier` was read, if this stamp is read now.
    pub fn unchanged_since(&self, earlier: &SourceStamp) -> bool {
        earlier.settled && self.fingerprint == earlier.fingerprint
    }
}
