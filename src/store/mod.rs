//! The store: every SQL statement sitemapd runs, behind one interface for all backends
//! (PostgreSQL, MySQL/MariaDB, and SQLite as the embedded default).
//!
//! It reads entries from `SITEMAP_SOURCE` by id range (keyset: `WHERE id BETWEEN lo AND hi ORDER
//! BY id`, so the last page costs what the first does), keeps our own small state tables (page
//! boundaries and fingerprints), and reports changes the database can tell us about. It knows
//! nothing of HTTP or XML. Queries are built at run time, so building needs no database.
//!
//! `sitemapd import` writes through [`Store::import_batch`]: always into the built-in
//! `sitemap_entries` (and its extension tables), whatever `SITEMAP_SOURCE` names.

mod mysql;
mod postgres;
mod sqlite;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::config::{Config, DatabaseKind};
use crate::sitemap::entry::{ChangeFreq, Lastmod, Priority, RawAlternate, RawImage};
use crate::sitemap::{Namespaces, RawEntry};

pub use mysql::MySqlStore;
pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// A database failure. Its Display is for logs: it never holds the connection password.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("{applied} of {known} migrations applied; run `sitemapd migrate`")]
    MigrationsPending { applied: i64, known: i64 },
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
    fn from_entries(entries: Vec<RawEntry>) -> Self {
        let through = entries.last().and_then(|last| {
            Some(SubmittedThrough {
                lastmod_us: last.lastmod?.timestamp_micros(),
                id: last.id,
            })
        });
        Self { entries, through }
    }
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

/// An entry read from a sitemap file by `sitemapd import`, already validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedEntry {
    /// The URL as the file had it (trimmed): the key entries are matched by.
    pub loc: String,
    /// `None` for a line of a text sitemap: that format carries only URLs, so an entry that
    /// exists already keeps its fields and extensions.
    pub details: Option<EntryDetails>,
}

/// What an XML sitemap says about an entry besides its URL; a tag that was invalid is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryDetails {
    pub lastmod: Option<Lastmod>,
    pub changefreq: Option<ChangeFreq>,
    pub priority: Option<Priority>,
    /// `xhtml:link rel="alternate"`, at most one per hreflang.
    pub alternates: Vec<Alternate>,
    /// `image:loc` of each `image:image`, in file order.
    pub images: Vec<String>,
}

/// One alternate language version of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternate {
    pub hreflang: String,
    pub href: String,
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCounts {
    /// New entries (new ids).
    pub inserted: u64,
    /// Entries that existed: same id, fields and extensions from the file.
    pub updated: u64,
    /// Text sitemap lines whose URL existed: left as they were.
    pub unchanged: u64,
    /// Extension rows written.
    pub alternates: u64,
    pub images: u64,
}

impl ImportCounts {
    pub fn add(&mut self, other: ImportCounts) {
        self.inserted += other.inserted;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.alternates += other.alternates;
        self.images += other.images;
    }

    /// Entries the import went through, for progress reports.
    pub fn entries(&self) -> u64 {
        self.inserted + self.updated + self.unchanged
    }
}

/// Counts the migrations sqlx recorded as applied (the same table on every backend).
const APPLIED_MIGRATIONS: &str = "SELECT count(*) FROM _sqlx_migrations WHERE success";

/// Most rows one statement of an import carries: well within every backend's parameter limit.
const IMPORT_ROWS_PER_STATEMENT: usize = 500;

/// What one import batch does, decided from which of its URLs exist already: the same
/// decisions for every backend, so only the SQL differs between them.
struct ImportPlan<'a> {
    /// Entries the upsert writes, in batch order: every new one, and existing ones that take
    /// the file's fields (all but text sitemap lines).
    upserts: Vec<&'a ImportedEntry>,
    updated: u64,
    unchanged: u64,
}

impl<'a> ImportPlan<'a> {
    fn new(batch: &'a [ImportedEntry], existing: &HashMap<String, i64>) -> Self {
        let mut plan = Self {
            upserts: Vec::with_capacity(batch.len()),
            updated: 0,
            unchanged: 0,
        };
        for entry in batch {
            match (existing.contains_key(&entry.loc), &entry.details) {
                (true, None) => plan.unchanged += 1,
                (true, Some(_)) => {
                    plan.updated += 1;
                    plan.upserts.push(entry);
                }
                (false, _) => plan.upserts.push(entry),
            }
        }
        plan
    }

    /// The upserted entries with their ids: their extension rows are replaced (for new ids
    /// too, so rows a deleted entry left under a reused id cannot attach to the new one).
    fn extension_owners(&self, ids: &HashMap<String, i64>) -> Vec<(i64, Option<&'a EntryDetails>)> {
        self.upserts
            .iter()
            .filter_map(|e| Some((*ids.get(&e.loc)?, e.details.as_ref())))
            .collect()
    }

    fn counts(&self, owners: &[(i64, Option<&EntryDetails>)]) -> ImportCounts {
        let details = || owners.iter().filter_map(|(_, d)| *d);
        ImportCounts {
            inserted: self.upserts.len() as u64 - self.updated,
            updated: self.updated,
            unchanged: self.unchanged,
            alternates: details().map(|d| d.alternates.len() as u64).sum(),
            images: details().map(|d| d.images.len() as u64).sum(),
        }
    }
}

/// The upsert of entries by `loc`, the same text for PostgreSQL and SQLite (MySQL has its own);
/// the VALUES rows go between the two parts.
const UPSERT_ENTRIES: (&str, &str) = (
    "INSERT INTO sitemap_entries (loc, lastmod, changefreq, priority) ",
    " ON CONFLICT (loc) DO UPDATE SET lastmod = excluded.lastmod, \
     changefreq = excluded.changefreq, priority = excluded.priority",
);

/// Defines `replace_extensions(tx, owners)` for one backend: deletes the extension rows of
/// `owners`, then writes the file's. The statements are the same for every backend (the query
/// builder writes each one's placeholders); a macro rather than a generic function, whose sqlx
/// bounds would say more than the body.
macro_rules! define_replace_extensions {
    ($db:ty) => {
        async fn replace_extensions(
            tx: &mut sqlx::Transaction<'_, $db>,
            owners: &[(i64, Option<&super::EntryDetails>)],
        ) -> Result<(), super::StoreError> {
            use super::{ALTERNATES_TABLE, IMAGES_TABLE, IMPORT_ROWS_PER_STATEMENT};
            let ids: Vec<i64> = owners.iter().map(|(id, _)| *id).collect();
            for table in [ALTERNATES_TABLE, IMAGES_TABLE] {
                for chunk in ids.chunks(IMPORT_ROWS_PER_STATEMENT) {
                    let mut delete = sqlx::QueryBuilder::<$db>::new(format!(
                        "DELETE FROM {table} WHERE entry_id IN ("
                    ));
                    let mut list = delete.separated(", ");
                    for id in chunk {
                        list.push_bind(*id);
                    }
                    delete.push(")");
                    delete.build().execute(&mut **tx).await?;
                }
            }
            for chunk in super::alternate_rows(owners).chunks(IMPORT_ROWS_PER_STATEMENT) {
                let mut insert = sqlx::QueryBuilder::<$db>::new(format!(
                    "INSERT INTO {ALTERNATES_TABLE} (entry_id, hreflang, href) "
                ));
                insert.push_values(chunk, |mut row, (id, alternate)| {
                    row.push_bind(*id)
                        .push_bind(&alternate.hreflang)
                        .push_bind(&alternate.href);
                });
                insert.build().execute(&mut **tx).await?;
            }
            for chunk in super::image_rows(owners).chunks(IMPORT_ROWS_PER_STATEMENT) {
                let mut insert = sqlx::QueryBuilder::<$db>::new(format!(
                    "INSERT INTO {IMAGES_TABLE} (entry_id, loc) "
                ));
                insert.push_values(chunk, |mut row, (id, loc)| {
                    row.push_bind(*id).push_bind(*loc);
                });
                insert.build().execute(&mut **tx).await?;
            }
            Ok(())
        }
    };
}
use define_replace_extensions;

/// Alternate rows to write for `owners`, as `(entry_id, alternate)`.
fn alternate_rows<'a>(owners: &[(i64, Option<&'a EntryDetails>)]) -> Vec<(i64, &'a Alternate)> {
    owners
        .iter()
        .filter_map(|(id, d)| Some((*id, (*d)?)))
        .flat_map(|(id, d)| d.alternates.iter().map(move |a| (id, a)))
        .collect()
}

/// Image rows to write for `owners`, as `(entry_id, loc)`, in file order.
fn image_rows<'a>(owners: &[(i64, Option<&'a EntryDetails>)]) -> Vec<(i64, &'a str)> {
    owners
        .iter()
        .filter_map(|(id, d)| Some((*id, (*d)?)))
        .flat_map(|(id, d)| d.images.iter().map(move |loc| (id, loc.as_str())))
        .collect()
}

/// The columns an imported entry writes: `None`s for a text sitemap line.
fn entry_columns(
    entry: &ImportedEntry,
) -> (
    Option<chrono::DateTime<chrono::Utc>>,
    Option<&'static str>,
    Option<f64>,
) {
    let details = entry.details.as_ref();
    (
        details.and_then(|d| d.lastmod).map(|l| l.at()),
        details.and_then(|d| d.changefreq).map(ChangeFreq::as_str),
        details.and_then(|d| d.priority).map(Priority::value),
    )
}

/// The database behind the service.
#[derive(Clone)]
pub enum Store {
    Postgres(PgStore),
    Mysql(MySqlStore),
    Sqlite(SqliteStore),
}

macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            Store::Postgres($s) => $body,
            Store::Mysql($s) => $body,
            Store::Sqlite($s) => $body,
        }
    };
}

impl Store {
    pub async fn connect(config: &Config) -> Result<Self, StoreError> {
        Ok(match config.database_url.kind() {
            DatabaseKind::Postgres => Self::Postgres(PgStore::connect(config).await?),
            DatabaseKind::Mysql => Self::Mysql(MySqlStore::connect(config).await?),
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
            Store::Mysql(s) => Store::Mysql(s.for_source(source)),
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
    /// `through`, oldest first, with the position of the last one. For IndexNow.
    pub async fn modified_after(
        &self,
        after: SubmittedThrough,
        through: DateTime<Utc>,
        limit: i64,
    ) -> Result<Modified, StoreError> {
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

    /// The site's stored pages and files.
    pub async fn load_state(&self, site: &str) -> Result<SavedState, StoreError> {
        Ok((self.load_pages(site).await?, self.load_files(site).await?))
    }

    /// Compare-and-set: writes `next` if what is stored is still `expected`.
    pub async fn replace_state(
        &self,
        site: &str,
        expected: &SavedState,
        next: &SavedState,
    ) -> Result<bool, StoreError> {
        let next = next.clone();
        let saved = self
            .save_state(site, move |pages, files| {
                (pages == expected.0 && files == expected.1).then_some(next)
            })
            .await?;
        Ok(saved.is_some())
    }

    /// Upserts `batch` by `loc` into the built-in `sitemap_entries`, in one transaction: new
    /// URLs get new ids (in batch order), existing ones keep theirs and get the file's fields,
    /// and the extension rows of both are replaced by the file's. Locs must be distinct
    /// within a batch.
    pub async fn import_batch(&self, batch: &[ImportedEntry]) -> Result<ImportCounts, StoreError> {
        each!(self, s => s.import_batch(batch).await)
    }

    /// Whether the database answers and our migrations are applied.
    pub async fn ready(&self) -> Result<(), StoreError> {
        let (applied, known) = each!(self, s => s.migrations().await)?;
        if applied < known {
            return Err(StoreError::MigrationsPending { applied, known });
        }
        Ok(())
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

/// How often the change log of a database that cannot notify (MySQL, SQLite) is read.
const CHANGE_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Versions of a change log kept for consumers that lag; one that lags more re-reads everything
/// (after a bulk load of more rows than this, that is the cheaper way anyway).
const CHANGE_LOG_RETAINED: i64 = 100_000;

/// What one read of a change log found after a consumer's cursor.
///
/// MySQL and SQLite cannot notify a client. Their triggers bump one counter row per source
/// (`sitemapd_changes.version`: the row lock serialises writers, so versions follow commit
/// order) and log the ids each version touched (`sitemapd_change_log`). Every consumer
/// (replicas, or sites of one process sharing a source) reads the log after its own cursor, so
/// none can take a change from another; the log is trimmed to [`CHANGE_LOG_RETAINED`] versions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LogReading {
    /// Lowest and highest version logged after the cursor: `None` when nothing is new.
    pub first: Option<i64>,
    pub last: Option<i64>,
    /// The ids those versions touched.
    pub touched: Option<IdRange>,
    /// The source's highest id, where the backend watches it (MySQL: TRUNCATE fires no trigger).
    pub top: Option<i64>,
}

impl LogReading {
    /// A change-log query's row: columns `first`, `last`, `lo`, `hi` and `top` (NULL where the
    /// backend does not watch the highest id), the same on every backend.
    fn from_row<'r, R>(row: &'r R) -> Result<Self, sqlx::Error>
    where
        R: sqlx::Row,
        &'static str: sqlx::ColumnIndex<R>,
        i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        let touched = match (row.try_get("lo")?, row.try_get("hi")?) {
            (Some(first), Some(last)) => Some(IdRange { first, last }),
            _ => None,
        };
        Ok(Self {
            first: row.try_get("first")?,
            last: row.try_get("last")?,
            touched,
            top: row.try_get("top")?,
        })
    }
}

/// Where a consumer of a change log stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogCursor {
    pub version: i64,
    pub top: Option<i64>,
}

impl LogCursor {
    /// The change `reading` reports, if any, moving the cursor past it.
    fn advance(&mut self, reading: LogReading) -> Option<Change> {
        let shrank = match (self.top, reading.top) {
            (Some(was), Some(is)) => is < was,
            (Some(_), None) => true,
            _ => false,
        };
        self.top = reading.top;
        let Some(last) = reading.last else {
            return shrank.then_some(Change::Everything);
        };
        // Versions are contiguous: a gap after the cursor means entries were trimmed.
        let contiguous = reading.first == Some(self.version + 1);
        self.version = last;
        match reading.touched {
            Some(range) if contiguous && !shrank => Some(Change::Ids(range)),
            _ => Some(Change::Everything),
        }
    }
}

/// A change log as one consumer reads it (MySQL, SQLite): one source's log in one database.
pub(crate) trait ChangeLog: Send + Sync + 'static {
    /// What was logged after `version`.
    fn read(
        &self,
        after: i64,
    ) -> impl std::future::Future<Output = Result<LogReading, StoreError>> + Send;
    /// Deletes what was logged up to `through`; a failure waits for the next trim.
    fn trim(&self, through: i64) -> impl std::future::Future<Output = ()> + Send;
}

/// Reads `log` every [`CHANGE_POLL`] from `start` on, yielding each change and trimming the log
/// behind it (to [`CHANGE_LOG_RETAINED`] versions). Read errors are retried at the next poll.
pub(crate) fn poll_change_log<L: ChangeLog>(
    start: LogCursor,
    log: L,
) -> BoxStream<'static, Change> {
    let log = std::sync::Arc::new(log);
    // What was logged before we started (a bulk load, say) is trimmed at the first poll.
    let first_trim = start.version - CHANGE_LOG_RETAINED;
    stream::unfold(
        (start, Some(first_trim)),
        move |(mut cursor, pending_trim)| {
            let log = log.clone();
            async move {
                if let Some(through) = pending_trim {
                    log.trim(through).await;
                }
                loop {
                    tokio::time::sleep(CHANGE_POLL).await;
                    let Ok(reading) = log.read(cursor.version).await else {
                        continue;
                    };
                    if let Some(change) = cursor.advance(reading) {
                        log.trim(cursor.version - CHANGE_LOG_RETAINED).await;
                        return Some((change, (cursor, None)));
                    }
                }
            }
        },
    )
    .boxed()
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

/// An extension row as every backend reads it: `entry_id`, then text columns (NULL or
/// undecodable text is `None`, for the rules to drop).
fn keyed_alternate<'r, R>(row: &'r R) -> (i64, RawAlternate)
where
    R: sqlx::Row,
    &'static str: sqlx::ColumnIndex<R>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let text = |column: &'static str| row.try_get::<Option<String>, _>(column).ok().flatten();
    let alternate = RawAlternate {
        hreflang: text("hreflang"),
        href: text("href"),
    };
    (row.try_get("entry_id").unwrap_or_default(), alternate)
}

/// See [`keyed_alternate`].
fn keyed_image<'r, R>(row: &'r R) -> (i64, RawImage)
where
    R: sqlx::Row,
    &'static str: sqlx::ColumnIndex<R>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let loc = row.try_get::<Option<String>, _>("loc").ok().flatten();
    (
        row.try_get("entry_id").unwrap_or_default(),
        RawImage { loc },
    )
}

/// Quotes a possibly schema-qualified identifier: `cms.pages` → `"cms"."pages"`.
pub fn quote_identifier(name: &str) -> String {
    quote_identifier_with(name, '"')
}

/// [`quote_identifier`] with another quote character (MySQL's backtick).
fn quote_identifier_with(name: &str, quote: char) -> String {
    let doubled = format!("{quote}{quote}");
    name.split('.')
        .map(|part| format!("{quote}{}{quote}", part.replace(quote, &doubled)))
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
            .map(|(id, loc)| {
                (
                    id,
                    RawImage {
                        loc: Some(loc.into()),
                    },
                )
            })
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

    fn reading(first: i64, last: i64, top: Option<i64>) -> LogReading {
        LogReading {
            first: Some(first),
            last: Some(last),
            touched: Some(IdRange { first: 5, last: 9 }),
            top,
        }
    }

    #[test]
    fn each_consumer_of_a_change_log_gets_every_change_after_its_own_cursor() {
        let mut cursor = LogCursor {
            version: 10,
            top: Some(100),
        };
        let nothing = LogReading {
            top: Some(100),
            ..LogReading::default()
        };
        assert_eq!(cursor.advance(nothing), None);
        assert_eq!(
            cursor.advance(reading(11, 13, Some(100))),
            Some(Change::Ids(IdRange { first: 5, last: 9 }))
        );
        assert_eq!(cursor.version, 13);
        // Versions 14..=20 were trimmed before this consumer read them: it re-reads everything.
        assert_eq!(
            cursor.advance(reading(21, 22, Some(100))),
            Some(Change::Everything)
        );
        assert_eq!(cursor.version, 22);
    }

    #[test]
    fn a_table_that_shrank_without_a_logged_change_is_read_again_whole() {
        let mut cursor = LogCursor {
            version: 1,
            top: Some(100),
        };
        // TRUNCATE: nothing logged, the highest id gone.
        let truncated = LogReading::default();
        assert_eq!(cursor.advance(truncated), Some(Change::Everything));
        // Then a reload with fewer rows: logged, but the old files beyond must go too.
        let mut cursor = LogCursor {
            version: 1,
            top: Some(100),
        };
        assert_eq!(
            cursor.advance(reading(2, 40, Some(40))),
            Some(Change::Everything)
        );
        let mut cursor = LogCursor {
            version: 1,
            top: None,
        };
        assert_eq!(
            cursor.advance(reading(2, 2, Some(120))),
            Some(Change::Ids(IdRange { first: 5, last: 9 }))
        );
    }

    #[test]
    fn identifiers_are_quoted_part_by_part() {
        assert_eq!(quote_identifier("sitemap_entries"), "\"sitemap_entries\"");
        assert_eq!(quote_identifier("cms.v"), "\"cms\".\"v\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }
}
