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
mod crawler_ranges;
mod crawls;
pub mod database_url;
mod error;
mod explain;
mod import;
pub mod lease;
mod mysql;
mod postgres;
mod records;
mod rows;
mod shared_ids;
mod sql;
mod sqlite;

use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::sitemap::publication::NewsPublication;
use crate::sitemap::{Namespaces, RawEntry};
pub use database_url::{DatabaseKind, DatabaseUrl};

use change_log::{poll_change_log, LogCursor, SourceLog};
pub use change_log::{ChangeFeed, LogReading, Logged};
pub use crawler_ranges::StoredRanges;
pub use crawls::{CrawlRow, ListedLoc, PathRow, Waiting};
pub use error::StoreError;
pub use explain::RangeReads;
pub use import::{Alternate, EntryDetails, ImportCounts, ImportedEntry};
use import::{ImportPlan, IMPORT_ROWS_PER_STATEMENT};
pub use mysql::MySqlStore;
pub use postgres::PgStore;
pub use records::{
    Change, FileRecord, IdRange, Keyed, Modified, PageRecord, SavedState, SourceStamp,
    SubmittedThrough,
};
use rows::{attach, keyed_alternate, keyed_image};
pub use rows::{quote_identifier, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE};
pub use sql::TitledEntry;
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

// After `each!`, which they use.
mod parts;
mod windows;

/// How to reach the database, as configuration says.
#[derive(Debug, Clone, Copy)]
pub struct Connection<'a> {
    pub database_url: &'a DatabaseUrl,
    /// Pool size.
    pub max_connections: u32,
    /// Longest one statement may run.
    pub statement_timeout: std::time::Duration,
    /// The source of the first site's first group (the built-in table unless configured).
    pub first_source: &'a str,
}

impl Store {
    pub async fn connect(config: &Connection<'_>) -> Result<Self, StoreError> {
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

    /// What `source` is defined as, where the database can say (PostgreSQL: a hash of the
    /// definitions of the views it reads and of the tables behind them); `None` elsewhere.
    pub async fn source_definition(&self, source: &str) -> Result<Option<String>, StoreError> {
        match self {
            Store::Postgres(s) => s.source_definition(source).await.map(Some),
            Store::Mysql(_) | Store::Sqlite(_) => Ok(None),
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

    /// What the database says of the last change to the tables behind the source, where it
    /// keeps that (MySQL/MariaDB: see `mysql/stamp.rs`) and the source is not the built-in
    /// table (whose changes its triggers log); `None` elsewhere.
    pub async fn source_stamp(&self) -> Result<Option<SourceStamp>, StoreError> {
        match self {
            Store::Mysql(s) if !s.reads_built_in() => s.source_stamp().await,
            _ => Ok(None),
        }
    }

    /// Whether [`Store::source_stamp`] can say anything for this source.
    pub fn keeps_change_stamps(&self) -> bool {
        matches!(self, Store::Mysql(s) if !s.reads_built_in())
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
    ///
    /// The range that starts the id space (the first file's) begins with the rows no id range
    /// holds (a NULL id, an id beyond 64 bits), rejected, so that they are counted wherever
    /// rows are.
    pub fn entries(
        &self,
        range: IdRange,
        wanted: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        let placed = self.placed_entries(range, wanted);
        match range.first == i64::MIN {
            true => each!(self, s => s.unplaced_entries()).chain(placed).boxed(),
            false => placed,
        }
    }

    fn placed_entries(
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
        shared_ids::reject_shared_ids(self.entries_in_parts(range))
    }

    /// Reads entries in chunks and merges each chunk's extension rows into it.
    fn entries_with_extensions(
        &self,
        range: IdRange,
        namespaces: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        if !each!(self, s => s.reads_built_in()) {
            return self.view_entries_with_extensions(range, namespaces);
        }
        let rows = stream::try_unfold(Some(range.first), move |next| async move {
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
            // A full chunk may end inside a run of rows sharing an id: that id is read again
            // whole with the next chunk (unless the chunk holds nothing else).
            let full = chunk.len() as i64 == EXTENSION_CHUNK;
            let (last, next) = match chunk.iter().position(|e| e.id == last) {
                Some(start) if full && start > 0 => {
                    chunk.truncate(start);
                    (last - 1, Some(last))
                }
                _ => (last, last.checked_add(1)),
            };
            let read = IdRange { first, last };
            self.attach_extensions(&mut chunk, read, namespaces).await?;
            Ok(Some((stream::iter(chunk.into_iter().map(Ok)), next)))
        })
        .try_flatten()
        .boxed();
        shared_ids::reject_shared_ids(rows)
    }

    /// [`Store::entries_with_extensions`] for a source other than the built-in table: chunks
    /// are id windows (see `windows.rs`), so no statement builds more of a view than its chunk.
    fn view_entries_with_extensions(
        &self,
        range: IdRange,
        namespaces: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        let rows = self
            .chunks_in_windows(range, EXTENSION_CHUNK)
            .and_then(move |(window, mut chunk)| async move {
                self.attach_extensions(&mut chunk, window, namespaces)
                    .await?;
                Ok(stream::iter(chunk.into_iter().map(Ok)))
            })
            .try_flatten()
            .boxed();
        shared_ids::reject_shared_ids(rows)
    }

    /// Merges the extension rows `namespaces` names, of ids in `read`, into `chunk`.
    async fn attach_extensions(
        &self,
        chunk: &mut [RawEntry],
        read: IdRange,
        namespaces: Namespaces,
    ) -> Result<(), StoreError> {
        if namespaces.xhtml {
            let rows = each!(self, s => s.alternates(read).await)?;
            attach(chunk, rows, |e| &mut e.alternates);
        }
        if namespaces.image {
            let rows = each!(self, s => s.images(read).await)?;
            attach(chunk, rows, |e| &mut e.images);
        }
        if namespaces.video {
            let rows = each!(self, s => s.videos(read).await)?;
            attach(chunk, rows, |e| &mut e.videos);
        }
        Ok(())
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

    /// Up to `limit` entries with a lastmod and an id in `range`, the most recently modified
    /// first (ties: highest id first). A view's feeds, read one file at a time.
    pub async fn recent_in(&self, range: IdRange, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        each!(self, s => s.recent_in(range, limit).await)
    }

    /// Whether the source is the built-in table (indexed by id and lastmod).
    pub fn reads_built_in(&self) -> bool {
        each!(self, s => s.reads_built_in())
    }

    /// Up to `limit` entries for llms.txt: the most recently modified first (ties: lowest id
    /// first), then those without a lastmod by id, with the source's optional `title` and
    /// `description` columns when it has them.
    pub async fn newest_titled(&self, limit: i64) -> Result<Vec<TitledEntry>, StoreError> {
        each!(self, s => s.newest_titled(limit).await)
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
        let replaced = each!(self, s => s.replace_state(site, expected, next).await)?;
        if let (true, Store::Postgres(s)) = (replaced, self) {
            // Followers poll the version too: a lost notification only delays them.
            if let Err(e) = s.announce_state(site).await {
                tracing::debug!(error = %crate::error::Chain(&e), "cannot announce the saved state");
            }
        }
        Ok(replaced)
    }

    /// PostgreSQL: a count that moves when a replica saves a state (one listening
    /// connection per process); hold the sender while listening. `None`
    /// elsewhere: followers poll the version.
    pub fn state_announcements(&self) -> Option<std::sync::Arc<tokio::sync::watch::Sender<u64>>> {
        match self {
            Store::Postgres(s) => Some(s.state_announcements()),
            _ => None,
        }
    }

    /// Upserts `batch` by `loc` into the built-in `sitemap_entries`, in one transaction: new
    /// URLs get new ids (in batch order), existing ones keep theirs and get the file's fields,
    /// and the extension rows of both are replaced by the file's. Locs must be distinct
    /// within a batch.
    pub async fn import_batch(&self, batch: &[ImportedEntry]) -> Result<ImportCounts, StoreError> {
        each!(self, s => s.import_batch(batch).await)
    }

    /// The version of `key`'s stored state (bumped by every save of it): 0 before the first.
    pub async fn state_version(&self, key: &str) -> Result<i64, StoreError> {
        each!(self, s => s.state_version(key).await)
    }

    /// Notes `holder` as the replica keeping `site` current since `since`.
    pub async fn note_holder(
        &self,
        site: &str,
        holder: &str,
        since: i64,
    ) -> Result<(), StoreError> {
        each!(self, s => s.note_holder(site, holder, since).await)
    }

    /// The replica noted as keeping `site` current, and since when (unix seconds).
    pub async fn holder(&self, site: &str) -> Result<Option<(String, i64)>, StoreError> {
        each!(self, s => s.holder(site).await)
    }

    /// Logs a change of `range` in `source`'s change log (false: the source has none).
    pub async fn log_change(&self, source: &str, range: IdRange) -> Result<bool, StoreError> {
        each!(self, s => s.log_change(source, range).await)
    }

    /// Notes `reader` (a group's key) as a reader of the URLs that leave the built-in table
    /// (deleted, or their loc changed), unless it is one already, and says it is alive.
    pub async fn register_removed_reader(&self, reader: &str, now: i64) -> Result<(), StoreError> {
        each!(self, s => s.register_removed_reader(reader, now).await)
    }

    /// How far `reader` has read the removed URLs; `None` if it is no reader.
    pub async fn removed_read_through(&self, reader: &str) -> Result<Option<i64>, StoreError> {
        each!(self, s => s.removed_read_through(reader).await)
    }

    /// Up to `limit` removed URLs with ids above `after`, oldest first, with their ids.
    pub async fn removed_after(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        each!(self, s => s.removed_after(after, limit).await)
    }

    /// Moves `reader` past the removed URLs through `to`; false when another replica did.
    pub async fn advance_removed_read(
        &self,
        reader: &str,
        from: i64,
        to: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        each!(self, s => s.advance_removed_read(reader, from, to, now).await)
    }

    /// Clears the removed URLs every living reader has read (all when nobody reads).
    pub async fn forget_removed_read_by_all(&self, now: i64) -> Result<(), StoreError> {
        let forgotten_before = now - sql::removed::READER_FORGOTTEN_SECS;
        each!(self, s => s.forget_removed_read_by_all(forgotten_before).await)
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
