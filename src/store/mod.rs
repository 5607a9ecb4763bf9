//! The store: every SQL statement sitemapd runs, behind one interface for all backends.
//!
//! It reads entries from `SITEMAP_SOURCE` by id range (keyset: `WHERE id BETWEEN lo AND hi ORDER
//! BY id`, so the last page costs what the first does), keeps our own small state tables (page
//! boundaries and fingerprints), and reports changes the database can tell us about. It knows
//! nothing of HTTP or XML. Queries are built at run time, so building needs no database.

mod postgres;
mod sqlite;

use futures::stream::BoxStream;

use crate::config::{Config, DatabaseKind};
use crate::sitemap::RawEntry;

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
}

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
    changed_at
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

    /// Entries with ids in `range`, in id order, streamed.
    pub fn entries(&self, range: IdRange) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        each!(self, s => s.entries(range))
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
    fn identifiers_are_quoted_part_by_part() {
        assert_eq!(quote_identifier("sitemap_entries"), "\"sitemap_entries\"");
        assert_eq!(quote_identifier("cms.v"), "\"cms\".\"v\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }
}
