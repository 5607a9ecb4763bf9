//! The store: every SQL statement sitemapd runs, behind one interface for all backends.
//!
//! It reads entries from `SITEMAP_SOURCE` by id range (keyset: `WHERE id BETWEEN lo AND hi ORDER
//! BY id`, so the last page costs what the first does), keeps our own small state tables (page
//! boundaries and fingerprints), and reports changes the database can tell us about. It knows
//! nothing of HTTP or XML. Queries are built at run time, so building needs no database.

mod postgres;
mod sqlite;

use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::config::{Config, DatabaseKind};
use crate::sitemap::entry::{RawAlternate, RawImage};
use crate::sitemap::{Namespaces, RawEntry};

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// A database failure. Its Display is for logs: it never holds the connection password.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

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
    pub fingerprint: String,
    /// Unix seconds of the last change of the page's bytes.
    pub changed_at: i64,
    /// Extension namespaces the file declares ([`Namespaces::bits`]).
    pub extensions: i64,
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

/// Entries read per query when extension rows are merged in.
const EXTENSION_CHUNK: i64 = 2000;

/// A whole file whose validators are stored in `sitemapd_files` (the index, robots.txt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    pub name: String,
    pub fingerprint: String,
    pub changed_at: i64,
}

/// Reading our state tables' rows, the same for every backend.
macro_rules! from_row {
    ($record:ident { $($field:ident),* }) => {
        impl $record {
            fn from_row<'r, R>(row: &'r R) -> Result<Self, sqlx::Error>
            where
                R: sqlx::Row,
                &'static str: sqlx::ColumnIndex<R>,
                i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
                String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
            {
                Ok(Self { $($field: row.try_get(stringify!($field))?),* })
            }
        }
    };
}

from_row!(PageRecord {
    page_no,
    first_id,
    urls,
    bytes,
    fingerprint,
    changed_at,
    extensions
});
from_row!(FileRecord {
    name,
    fingerprint,
    changed_at
});

/// Pages and files as saved together.
pub type SavedState = (Vec<PageRecord>, Vec<FileRecord>);

/// What the database says changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Rows with ids in this range were inserted, updated or deleted.
    Ids(IdRange),
    /// Anything may have changed (a TRUNCATE, or a lost notification connection).
    Everything,
}

/// The database behind the service.
#[derive(Clone)]
pub enum Store {
    Postgres(PgStore),
    Sqlite(SqliteStore),
}

macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            Store::Postgres($s) => $body,
            Store::Sqlite($s) => $body,
        }
    };
}

impl Store {
    pub async fn connect(config: &Config) -> Result<Self, StoreError> {
        Ok(match config.database_url.kind() {
            DatabaseKind::Postgres => Self::Postgres(PgStore::connect(config).await?),
            DatabaseKind::Sqlite => Self::Sqlite(SqliteStore::connect(config).await?),
        })
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        each!(self, s => s.migrate().await)
    }

    /// The same database (and connection pool) read from another source table or view.
    pub fn for_source(&self, source: &str) -> Store {
        match self {
            Store::Postgres(s) => Store::Postgres(s.for_source(source)),
            Store::Sqlite(s) => Store::Sqlite(s.for_source(source)),
        }
    }

    /// Entries with ids in `range`, in id order, streamed, each with its rows of the extension
    /// tables `wanted` names. Runs without extension rows read the source alone, in one query.
    pub fn entries(
        &self,
        range: IdRange,
        wanted: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        if wanted.is_empty() {
            return self.plain_entries(range);
        }
        stream::once(self.extension_presence(range))
            .map(move |present| match present {
                Ok(present) if present.intersection(wanted).is_empty() => self.plain_entries(range),
                Ok(present) => self.entries_with_extensions(range, present.intersection(wanted)),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            })
            .flatten()
            .boxed()
    }

    fn plain_entries(&self, range: IdRange) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        each!(self, s => s.entries(range))
    }

    /// Reads entries in chunks and merges each chunk's extension rows into it.
    fn entries_with_extensions(
        &self,
        range: IdRange,
        namespaces: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        stream::try_unfold(Some(range.first), move |next| async move {
            let Some(first) = next.filter(|first| *first <= range.last) else {
                return Ok::<_, StoreError>(None);
            };
            let rest = IdRange {
                first,
                last: range.last,
            };
            let mut chunk = each!(self, s => s.entries_chunk(rest, EXTENSION_CHUNK).await)?;
            let Some(last) = chunk.last().map(|e| e.id) else {
                return Ok(None);
            };
            let read = IdRange { first, last };
            if namespaces.xhtml {
                let rows = each!(self, s => s.alternates(read).await)?;
                attach(&mut chunk, rows, |e| &mut e.alternates);
            }
            if namespaces.image {
                let rows = each!(self, s => s.images(read).await)?;
                attach(&mut chunk, rows, |e| &mut e.images);
            }
            Ok(Some((
                stream::iter(chunk.into_iter().map(Ok)),
                last.checked_add(1),
            )))
        })
        .try_flatten()
        .boxed()
    }

    /// Which extension tables have rows for entries in `range`.
    pub async fn extension_presence(&self, range: IdRange) -> Result<Namespaces, StoreError> {
        each!(self, s => s.extension_presence(range).await)
    }

    /// Up to `limit` entries with a lastmod, the most recently modified first (ties: highest
    /// id first). For feeds.
    pub async fn recent(&self, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        each!(self, s => s.recent(limit).await)
    }

    /// Up to `limit` entries modified after `after` (by lastmod, then id) and no later than
    /// `through`, oldest first. For IndexNow.
    pub async fn modified_after(
        &self,
        after: SubmittedThrough,
        through: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<RawEntry>, StoreError> {
        each!(self, s => s.modified_after(after, through, limit).await)
    }

    pub async fn load_submitted(&self, site: &str) -> Result<Option<SubmittedThrough>, StoreError> {
        each!(self, s => s.load_submitted(site).await)
    }

    /// Moves the site's IndexNow progress to `to` if it is further than what is stored; says
    /// whether it moved (another replica may have got there first).
    pub async fn advance_submitted(
        &self,
        site: &str,
        from: Option<SubmittedThrough>,
        to: SubmittedThrough,
    ) -> Result<bool, StoreError> {
        each!(self, s => s.advance_submitted(site, from, to).await)
    }

    pub async fn load_pages(&self, site: &str) -> Result<Vec<PageRecord>, StoreError> {
        each!(self, s => s.load_pages(site).await)
    }

    pub async fn load_files(&self, site: &str) -> Result<Vec<FileRecord>, StoreError> {
        each!(self, s => s.load_files(site).await)
    }

    /// Replaces the site's pages and files, serialised with other replicas; `merge` sees what is
    /// stored now (another replica may have written since we read) and returns what to store,
    /// or `None` to store nothing.
    pub async fn save_state<F>(
        &self,
        site: &str,
        merge: F,
    ) -> Result<Option<SavedState>, StoreError>
    where
        F: FnOnce(Vec<PageRecord>, Vec<FileRecord>) -> Option<SavedState> + Send,
    {
        each!(self, s => s.save_state(site, merge).await)
    }

    /// Whether the database answers and our migrations are applied.
    pub async fn ready(&self) -> Result<(), StoreError> {
        each!(self, s => s.ready().await)
    }

    /// Whether changes to `source` are reported by [`Store::changes`] (our triggers are on it).
    pub async fn notifies(&self, source: &str) -> bool {
        each!(self, s => s.notifies(source).await)
    }

    /// Waits for the next change the database reports for the source. Sources without
    /// notifications (views) never report; the periodic sweep covers them.
    pub async fn changes(&self, source: &str) -> BoxStream<'static, Change> {
        each!(self, s => s.changes(source).await)
    }
}

/// Hands each extension row to its entry; both lists are in entry id order.
fn attach<T>(
    entries: &mut [RawEntry],
    rows: Keyed<T>,
    field: impl Fn(&mut RawEntry) -> &mut Vec<T>,
) {
    let mut entries = entries.iter_mut().peekable();
    for (entry_id, row) in rows {
        while entries.peek().is_some_and(|e| e.id < entry_id) {
            entries.next();
        }
        if let Some(entry) = entries.peek_mut().filter(|e| e.id == entry_id) {
            field(entry).push(row);
        }
    }
}

/// Names of the extension tables the migrations create.
pub const ALTERNATES_TABLE: &str = "sitemap_alternates";
pub const IMAGES_TABLE: &str = "sitemap_images";

/// Builds raw extension rows from the text columns every backend reads.
pub fn raw_alternate(hreflang: Option<String>, href: Option<String>) -> RawAlternate {
    RawAlternate { hreflang, href }
}

pub fn raw_image(loc: Option<String>) -> RawImage {
    RawImage { loc }
}

/// Quotes a possibly schema-qualified identifier: `cms.pages` → `"cms"."pages"`.
pub fn quote_identifier(name: &str) -> String {
    name.split('.')
        .map(|part| format!("\"{}\"", part.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_rows_reach_their_own_entries_only() {
        let mut entries: Vec<RawEntry> = [1, 3, 4]
            .into_iter()
            .map(|id| RawEntry {
                id,
                ..RawEntry::default()
            })
            .collect();
        let rows = vec![(0, "orphan"), (3, "a"), (3, "b"), (4, "c"), (9, "late")];
        let rows: Keyed<RawImage> = rows
            .into_iter()
            .map(|(id, loc)| (id, raw_image(Some(loc.into()))))
            .collect();
        attach(&mut entries, rows, |e| &mut e.images);
        let locs = |e: &RawEntry| {
            e.images
                .iter()
                .map(|i| i.loc.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert!(entries[0].images.is_empty());
        assert_eq!(locs(&entries[1]), ["a", "b"]);
        assert_eq!(locs(&entries[2]), ["c"]);
    }

    #[test]
    fn identifiers_are_quoted_part_by_part() {
        assert_eq!(quote_identifier("sitemap_entries"), "\"sitemap_entries\"");
        assert_eq!(quote_identifier("cms.v"), "\"cms\".\"v\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }
}
