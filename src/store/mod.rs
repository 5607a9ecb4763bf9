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

mod change_log;
mod crawls;
mod error;
mod import;
mod mysql;
mod postgres;
mod records;
mod rows;
mod sql;
mod sqlite;

use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::config::{Config, DatabaseKind, NewsPublication};
use crate::sitemap::{Namespaces, RawEntry};

use change_log::{poll_change_log, LogCursor, SourceLog};
pub use change_log::{ChangeFeed, LogReading, Logged};
pub use crawls::{CrawlRow, ListedLoc, PathRow, Waiting};
pub use error::StoreError;
pub use import::{Alternate, EntryDetails, ImportCounts, ImportedEntry};
use import::{ImportPlan, IMPORT_ROWS_PER_STATEMENT};
pub use mysql::MySqlStore;
pub use postgres::PgStore;
pub use records::{
    Change, FileRecord, IdRange, Keyed, Modified, PageRecord, SavedState, SubmittedThrough,
};
use rows::{attach, keyed_alternate, keyed_image};
pub use rows::{quote_identifier, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE};
pub use sqlite::SqliteStore;

/// Entries read per query when extension rows are merged in.
const EXTENSION_CHUNK: i64 = 2000;

/// Counts the migrations sqlx recorded as applied (the same table on every backend).
const APPLIED_MIGRATIONS: &str = "SELECT count(*) FROM _sqlx_migrations WHERE success";

/// The table our migrations create, whose changes our own triggers log.
pub const BUILTIN_SOURCE: &str = "sitemap_entries";

/// What [`Store::watch`] did for a source.
#[derive(Debug)]
pub enum Watch {
    /// The built-in table: our migrations' triggers log its changes.
    Builtin,
    /// Triggers on these tables log the source's changes.
    Watched(Vec<String>),
    /// The database cannot log changes of the tables behind a view (MySQL, SQLite).
    Unsupported,
    /// The source reads no table (it does not exist yet, or reads only functions).
    NothingToWatch,
    /// The triggers could not be created (most often: no TRIGGER privilege).
    Failed(StoreError),
}

impl Watch {
    /// One line for `migrate` and the log.
    pub fn describe(&self, source: &str) -> String {
        match self {
            Watch::Builtin => format!("{source}: changes logged by its own triggers"),
            Watch::Watched(tables) => format!(
                "{source}: watching {}; changes show at once",
                tables.join(", ")
            ),
            Watch::Unsupported => format!(
                "{source}: this database cannot report changes behind a view; \
                 changes show within SITEMAP_REFRESH_SECS"
            ),
            Watch::NothingToWatch => format!(
                "{source}: no table found behind it; changes show within SITEMAP_REFRESH_SECS"
            ),
            Watch::Failed(e) => format!(
                "{source}: cannot watch the tables behind it ({}); changes show within \
                 SITEMAP_REFRESH_SECS. To have them show at once, let sitemapd's database user \
                 add triggers: GRANT TRIGGER ON <each table the view reads> TO <that user>",
                crate::error::Chain(e)
            ),
        }
    }
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
        match self {
            Store::Mysql(s) => s.migrate_with_triggers().await,
            Store::Postgres(s) => s.migrate().await,
            Store::Sqlite(s) => s.migrate().await,
        }
    }

    /// Puts change triggers on the tables behind `source` where the database allows it
    /// (PostgreSQL, with the TRIGGER privilege on them), so its changes are logged like those
    /// of the built-in table. Says what was done; failing leaves the source refreshed
    /// periodically, as before.
    pub async fn watch(&self, source: &str) -> Watch {
        if source == BUILTIN_SOURCE {
            return Watch::Builtin;
        }
        match self {
            Store::Postgres(s) => match s.watch_source(source).await {
                Ok(tables) if tables.is_empty() => Watch::NothingToWatch,
                Ok(tables) => Watch::Watched(tables),
                Err(e) => Watch::Failed(e),
            },
            Store::Mysql(_) | Store::Sqlite(_) => Watch::Unsupported,
        }
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
            if namespaces.video {
                let rows = each!(self, s => s.videos(read).await)?;
                attach(&mut chunk, rows, |e| &mut e.videos);
            }
            Ok(Some((
                stream::iter(chunk.into_iter().map(Ok)),
                last.checked_add(1),
            )))
        })
        .try_flatten()
        .boxed()
    }

    /// A news source's articles with ids in `range`, published from `since` to `until` (unix
    /// seconds, both included), in id order, with what a row leaves NULL taken from `defaults`.
    /// The optional columns are read when the source has them.
    pub fn articles<'a>(
        &'a self,
        range: IdRange,
        since: i64,
        until: i64,
        defaults: &'a NewsPublication,
    ) -> BoxStream<'a, Result<RawEntry, StoreError>> {
        let read = async move {
            let optional = each!(self, s => s.has_article_columns().await)?;
            let micros = |secs: i64| secs.saturating_mul(1_000_000);
            // The end of `until`'s second is in.
            let window = (micros(since), micros(until) + 999_999);
            each!(self, s => s.articles(range, window, optional).await)
        };
        stream::once(read)
            .map_ok(move |rows| {
                stream::iter(rows.into_iter().map(move |mut row| {
                    row.article = row.article.map(|a| a.with_defaults(defaults));
                    Ok(row)
                }))
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

    /// The site's stored pages and files.
    pub async fn load_state(&self, site: &str) -> Result<SavedState, StoreError> {
        each!(self, s => s.load_state(site).await)
    }

    /// Compare-and-set, serialised with other replicas (PostgreSQL: an advisory lock; MySQL:
    /// the site's lock row; SQLite: `BEGIN IMMEDIATE`): if what is stored for `site` is still
    /// `expected`, replaces it with `next` and says true; otherwise writes nothing. What to
    /// store is decided by the caller, outside the transaction.
    pub async fn replace_state(
        &self,
        site: &str,
        expected: &SavedState,
        next: &SavedState,
    ) -> Result<bool, StoreError> {
        each!(self, s => s.replace_state(site, expected, next).await)
    }

    /// Upserts `batch` by `loc` into the built-in `sitemap_entries`, in one transaction: new
    /// URLs get new ids (in batch order), existing ones keep theirs and get the file's fields,
    /// and the extension rows of both are replaced by the file's. Locs must be distinct
    /// within a batch.
    pub async fn import_batch(&self, batch: &[ImportedEntry]) -> Result<ImportCounts, StoreError> {
        each!(self, s => s.import_batch(batch).await)
    }

    /// Up to `limit` URLs that left the built-in table (deleted, or their loc changed), oldest
    /// first, with their ids.
    pub async fn removed(&self, limit: i64) -> Result<Vec<(i64, String)>, StoreError> {
        each!(self, s => s.removed(limit).await)
    }

    /// Clears the removed URLs with these ids.
    pub async fn forget_removed(&self, ids: &[i64]) -> Result<(), StoreError> {
        each!(self, s => s.forget_removed(ids).await)
    }

    /// Clears every removed URL.
    pub async fn forget_all_removed(&self) -> Result<(), StoreError> {
        each!(self, s => s.forget_all_removed().await)
    }

    /// The URLs a view-fed group listed with ids in `range` (see `sitemapd_listed`), in id
    /// order.
    pub async fn listed(
        &self,
        site: &str,
        range: IdRange,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        each!(self, s => s.listed(site, range).await)
    }

    /// Whether anything is listed for `site`.
    pub async fn any_listed(&self, site: &str) -> Result<bool, StoreError> {
        each!(self, s => s.any_listed(site).await)
    }

    /// Forgets the listed URLs of ids `forget`, then notes `note`, in one transaction.
    pub async fn relist(
        &self,
        site: &str,
        forget: &[i64],
        note: &[(i64, String)],
    ) -> Result<(), StoreError> {
        each!(self, s => s.relist(site, forget, note).await)
    }

    /// Forgets every URL listed for `site`.
    pub async fn forget_all_listed(&self, site: &str) -> Result<(), StoreError> {
        each!(self, s => s.forget_all_listed(site).await)
    }

    /// Each file's summary (count and hash of its rows and their extension rows, computed by
    /// the database), for files cut at `thresholds`; `None` where the database cannot (SQLite).
    pub async fn file_summaries(
        &self,
        thresholds: &[i64],
    ) -> Result<Option<Vec<String>>, StoreError> {
        each!(self, s => s.file_summaries(thresholds).await)
    }

    /// Whether the database answers and our migrations are applied.
    pub async fn ready(&self) -> Result<(), StoreError> {
        let (applied, known) = each!(self, s => s.migrations().await)?;
        if applied < known {
            return Err(StoreError::MigrationsPending { applied, known });
        }
        Ok(())
    }

    /// The changes our triggers log for `source`, read after `resume` (the cursor a site
    /// stored with its files) when the log still holds what followed it, else after the
    /// current version. Sources nothing logs (views) get a feed that never yields.
    pub async fn changes(&self, source: &str, resume: Option<i64>) -> ChangeFeed {
        let Ok(Some((current, top))) = each!(self, s => s.change_version(source).await) else {
            return ChangeFeed::silent();
        };
        // A cursor beyond the log's version belongs to another database (restored, recreated).
        let resumed_at = resume.filter(|cursor| *cursor <= current);
        let start = LogCursor {
            version: resumed_at.unwrap_or(current),
            // The highest id when the cursor was stored is not known: a TRUNCATE while stopped
            // is found by the background verification instead.
            top: if resumed_at.is_some() { None } else { top },
        };
        let wake = match self {
            Store::Postgres(s) => Some(s.wake_on_notify()),
            _ => None,
        };
        let log = SourceLog {
            store: self.clone(),
            source: source.to_string(),
        };
        ChangeFeed {
            start: Some(start.version),
            resumed: resumed_at.is_some(),
            changes: poll_change_log(start, log, wake),
        }
    }

    async fn read_change_log(&self, source: &str, after: i64) -> Result<LogReading, StoreError> {
        each!(self, s => s.read_change_log(source, after).await)
    }

    async fn trim_change_log(&self, source: &str, through: i64) -> Result<(), StoreError> {
        each!(self, s => s.trim_change_log(source, through).await)
    }

    /// The change-log version the site's stored files cover.
    pub async fn load_cursor(&self, site: &str) -> Result<Option<i64>, StoreError> {
        each!(self, s => s.load_cursor(site).await)
    }

    /// Records that the site's stored files cover the change log through `version`.
    pub async fn save_cursor(&self, site: &str, version: i64) -> Result<(), StoreError> {
        each!(self, s => s.save_cursor(site, version).await)
    }
}
