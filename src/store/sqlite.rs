//! SQLite backend, the embedded default: same interface as PostgreSQL; changes are seen by
//! polling the change log our triggers keep (SQLite cannot notify another process; see
//! [`super::LogReading`]).

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
};
use sqlx::{ConnectOptions, QueryBuilder, Row, Sqlite, Transaction, TypeInfo, ValueRef};

use super::{
    entry_columns, keyed_alternate, keyed_image, poll_change_log, quote_identifier, Change,
    ChangeLog, FileRecord, IdRange, ImportCounts, ImportPlan, ImportedEntry, Keyed, LogCursor,
    LogReading, Modified, PageRecord, SavedState, StoreError, SubmittedThrough, ALTERNATES_TABLE,
    IMAGES_TABLE, IMPORT_ROWS_PER_STATEMENT, UPSERT_ENTRIES,
};
use crate::config::Config;
use crate::sitemap::entry::{w3c_datetime, RawAlternate, RawImage};
use crate::sitemap::{Namespaces, RawEntry};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    queries: std::sync::Arc<Queries>,
}

/// Statements that name the source, built once. SQLite keeps lastmod as text in several forms, or
/// as a number; `unixepoch(lastmod, 'auto', 'subsec')` reads them all as one comparable number,
/// as [`parse_lastmod`] and [`lastmod_from_number`] do.
struct Queries {
    select_range: String,
    select_chunk: String,
    select_recent: String,
    select_modified: String,
}

impl Queries {
    fn new(source: &str) -> Self {
        let source = quote_identifier(source);
        let columns = "SELECT id, loc, lastmod, changefreq, priority";
        let select = format!("{columns} FROM {source}");
        let lastmod_us = "CAST(unixepoch(lastmod, 'auto', 'subsec') * 1000000 AS INTEGER)";
        Self {
            select_range: format!("{select} WHERE id BETWEEN ?1 AND ?2 ORDER BY id"),
            select_chunk: format!("{select} WHERE id BETWEEN ?1 AND ?2 ORDER BY id LIMIT ?3"),
            select_recent: format!(
                "{select} WHERE {lastmod_us} IS NOT NULL ORDER BY {lastmod_us} DESC, id DESC LIMIT ?1"
            ),
            select_modified: format!(
                "{columns}, {lastmod_us} AS lastmod_us FROM {source} WHERE {lastmod_us} IS NOT NULL AND ({lastmod_us}, id) > (?1, ?2) \
                 AND {lastmod_us} <= ?3 ORDER BY {lastmod_us}, id LIMIT ?4"
            ),
        }
    }
}

impl SqliteStore {
    pub async fn connect(config: &Config) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(config.database_url.expose())?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5))
            .disable_statement_logging();
        let pool = SqlitePoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options);
        Ok(Self {
            pool,
            queries: std::sync::Arc::new(Queries::new(&config.first_site().source)),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    pub fn for_source(&self, source: &str) -> Self {
        Self {
            pool: self.pool.clone(),
            queries: std::sync::Arc::new(Queries::new(source)),
        }
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    pub fn entries(&self, range: IdRange) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        sqlx::query(&self.queries.select_range)
            .bind(range.first)
            .bind(range.last)
            .fetch(&self.pool)
            .map_ok(|row| raw_entry(&row))
            .map_err(StoreError::from)
            .boxed()
    }

    pub async fn entries_chunk(
        &self,
        range: IdRange,
        limit: i64,
    ) -> Result<Vec<RawEntry>, StoreError> {
        let rows = sqlx::query(&self.queries.select_chunk)
            .bind(range.first)
            .bind(range.last)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(raw_entry).collect())
    }

    pub async fn alternates(&self, range: IdRange) -> Result<Keyed<RawAlternate>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT entry_id, CAST(hreflang AS TEXT) AS hreflang, CAST(href AS TEXT) AS href \
             FROM {ALTERNATES_TABLE} WHERE entry_id BETWEEN ?1 AND ?2 ORDER BY entry_id, hreflang, href"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(keyed_alternate).collect())
    }

    pub async fn images(&self, range: IdRange) -> Result<Keyed<RawImage>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT entry_id, CAST(loc AS TEXT) AS loc \
             FROM {IMAGES_TABLE} WHERE entry_id BETWEEN ?1 AND ?2 ORDER BY entry_id, id"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(keyed_image).collect())
    }

    pub async fn extension_presence(&self, range: IdRange) -> Result<Namespaces, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT EXISTS (SELECT 1 FROM {ALTERNATES_TABLE} WHERE entry_id BETWEEN ?1 AND ?2) AS xhtml, \
                    EXISTS (SELECT 1 FROM {IMAGES_TABLE} WHERE entry_id BETWEEN ?1 AND ?2) AS image"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_one(&self.pool)
        .await?;
        Ok(Namespaces {
            xhtml: row.try_get("xhtml")?,
            image: row.try_get("image")?,
        })
    }

    pub async fn recent(&self, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        let rows = sqlx::query(&self.queries.select_recent)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(raw_entry).collect())
    }

    pub async fn modified_after(
        &self,
        after: SubmittedThrough,
        through: DateTime<Utc>,
        limit: i64,
    ) -> Result<Modified, StoreError> {
        let rows = sqlx::query(&self.queries.select_modified)
            .bind(after.lastmod_us)
            .bind(after.id)
            .bind(through.timestamp_micros())
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        let through = rows.last().and_then(|last| {
            Some(SubmittedThrough {
                lastmod_us: last.try_get("lastmod_us").ok()?,
                id: last.try_get("id").ok()?,
            })
        });
        Ok(Modified {
            entries: rows.iter().map(raw_entry).collect(),
            through,
        })
    }

    pub async fn load_submitted(&self, site: &str) -> Result<Option<SubmittedThrough>, StoreError> {
        let row =
            sqlx::query("SELECT through_us, through_id FROM sitemapd_indexnow WHERE site = ?1")
                .bind(site)
                .fetch_optional(&self.pool)
                .await?;
        Ok(match row {
            Some(r) => Some(SubmittedThrough {
                lastmod_us: r.try_get("through_us")?,
                id: r.try_get("through_id")?,
            }),
            None => None,
        })
    }

    pub async fn advance_submitted(
        &self,
        site: &str,
        from: Option<SubmittedThrough>,
        to: SubmittedThrough,
    ) -> Result<bool, StoreError> {
        let moved = match from {
            None => sqlx::query(
                "INSERT INTO sitemapd_indexnow (site, through_us, through_id) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (site) DO NOTHING",
            )
            .bind(site)
            .bind(to.lastmod_us)
            .bind(to.id)
            .execute(&self.pool)
            .await?
            .rows_affected(),
            Some(from) => sqlx::query(
                "UPDATE sitemapd_indexnow SET through_us = ?2, through_id = ?3 \
                 WHERE site = ?1 AND through_us = ?4 AND through_id = ?5",
            )
            .bind(site)
            .bind(to.lastmod_us)
            .bind(to.id)
            .bind(from.lastmod_us)
            .bind(from.id)
            .execute(&self.pool)
            .await?
            .rows_affected(),
        };
        Ok(moved == 1)
    }

    pub async fn load_pages(&self, site: &str) -> Result<Vec<PageRecord>, StoreError> {
        load_pages(&self.pool, site).await
    }

    pub async fn load_files(&self, site: &str) -> Result<Vec<FileRecord>, StoreError> {
        load_files(&self.pool, site).await
    }

    pub async fn replace_state(
        &self,
        site: &str,
        expected: &SavedState,
        next: &SavedState,
    ) -> Result<bool, StoreError> {
        let mut tx = begin_write(&self.pool).await?;
        let stored = (
            load_pages(&mut *tx, site).await?,
            load_files(&mut *tx, site).await?,
        );
        if stored != *expected {
            return Ok(false);
        }
        let (pages, files) = next;
        sqlx::query("DELETE FROM sitemapd_pages WHERE site = ?1")
            .bind(site)
            .execute(&mut *tx)
            .await?;
        for p in pages {
            sqlx::query(
                "INSERT INTO sitemapd_pages (site, page_no, first_id, urls, bytes, fingerprint, changed_at, extensions) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .bind(site)
            .bind(p.page_no)
            .bind(p.first_id)
            .bind(p.urls)
            .bind(p.bytes)
            .bind(p.fingerprint.hex())
            .bind(p.changed_at)
            .bind(p.extensions)
            .execute(&mut *tx)
            .await?;
        }
        for f in files {
            sqlx::query(
                "INSERT INTO sitemapd_files (site, name, fingerprint, changed_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (site, name) DO UPDATE SET fingerprint = excluded.fingerprint, changed_at = excluded.changed_at",
            )
            .bind(site)
            .bind(&f.name)
            .bind(f.fingerprint.hex())
            .bind(f.changed_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    pub async fn import_batch(&self, batch: &[ImportedEntry]) -> Result<ImportCounts, StoreError> {
        let mut tx = begin_write(&self.pool).await?;
        let existing = ids_by_loc(&mut tx, batch.iter().map(|e| e.loc.as_str())).await?;
        let plan = ImportPlan::new(batch, &existing);
        for chunk in plan.upserts.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let mut upsert = QueryBuilder::<Sqlite>::new(UPSERT_ENTRIES.0);
            upsert.push_values(chunk, |mut row, entry| {
                let (lastmod, changefreq, priority) = entry_columns(entry);
                row.push_bind(&entry.loc)
                    .push_bind(lastmod.map(w3c_datetime))
                    .push_bind(changefreq)
                    .push_bind(priority);
            });
            upsert.push(UPSERT_ENTRIES.1);
            upsert.build().execute(&mut *tx).await?;
        }
        let ids = ids_by_loc(&mut tx, plan.upserts.iter().map(|e| e.loc.as_str())).await?;
        let owners = plan.extension_owners(&ids);
        replace_extensions(&mut tx, &owners).await?;
        tx.commit().await?;
        Ok(plan.counts(&owners))
    }

    /// Migrations applied to the database, and migrations this build knows.
    pub async fn migrations(&self) -> Result<(i64, i64), StoreError> {
        let applied = sqlx::query_scalar(super::APPLIED_MIGRATIONS)
            .fetch_one(&self.pool)
            .await?;
        Ok((applied, MIGRATOR.iter().count() as i64))
    }

    pub async fn notifies(&self, source: &str) -> bool {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM sitemapd_changes WHERE source = ?1")
            .bind(source)
            .fetch_one(&self.pool)
            .await
            .is_ok_and(|n| n > 0)
    }

    /// Changes our triggers logged for `source` since this was called (the current version is
    /// read first, so a sweep made right after misses nothing); nothing for other sources.
    pub async fn changes(&self, source: &str) -> BoxStream<'static, Change> {
        let pool = self.pool.clone();
        let source = source.to_string();
        let start =
            sqlx::query_scalar::<_, i64>("SELECT version FROM sitemapd_changes WHERE source = ?1")
                .bind(&source)
                .fetch_optional(&pool)
                .await;
        let Ok(Some(version)) = start else {
            return stream::pending().boxed();
        };
        poll_change_log(
            LogCursor { version, top: None },
            SqliteChangeLog { pool, source },
        )
    }
}

/// One source's change log in an SQLite database.
struct SqliteChangeLog {
    pool: SqlitePool,
    source: String,
}

impl ChangeLog for SqliteChangeLog {
    async fn read(&self, after: i64) -> Result<LogReading, StoreError> {
        let row = sqlx::query(
            "SELECT MIN(version) AS first, MAX(version) AS last, MIN(lo) AS lo, MAX(hi) AS hi, \
                    NULL AS top \
             FROM sitemapd_change_log WHERE source = ?1 AND version > ?2",
        )
        .bind(&self.source)
        .bind(after)
        .fetch_one(&self.pool)
        .await?;
        Ok(LogReading::from_row(&row)?)
    }

    async fn trim(&self, through: i64) {
        let _ = sqlx::query("DELETE FROM sitemapd_change_log WHERE source = ?1 AND version <= ?2")
            .bind(&self.source)
            .bind(through)
            .execute(&self.pool)
            .await;
    }
}

/// A transaction that reads and then writes, holding the write lock from its start.
///
/// A deferred transaction (SQLite's default) takes its snapshot at the first read; if another
/// connection commits before its first write (the change poller, the CMS, another replica),
/// that write fails at once with SQLITE_BUSY_SNAPSHOT, which the busy timeout does not retry.
/// `BEGIN IMMEDIATE` waits for the write lock (within the busy timeout) instead.
async fn begin_write(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
    pool.begin_with("BEGIN IMMEDIATE").await
}

fn raw_entry(row: &SqliteRow) -> RawEntry {
    RawEntry {
        id: row.try_get("id").unwrap_or_default(),
        loc: row.try_get("loc").ok().flatten(),
        lastmod: read_lastmod(row),
        changefreq: row.try_get("changefreq").ok().flatten(),
        priority: read_priority(row),
        ..RawEntry::default()
    }
}

/// SQLite columns hold any type: lastmod as text ([`parse_lastmod`]) or as a number
/// ([`lastmod_from_number`]).
fn read_lastmod(row: &SqliteRow) -> Option<DateTime<Utc>> {
    match read_number(row, "lastmod") {
        Some(n) => lastmod_from_number(n),
        None => row
            .try_get::<Option<String>, _>("lastmod")
            .ok()
            .flatten()
            .as_deref()
            .and_then(parse_lastmod),
    }
}

/// The value of `column` when it is stored as a number (INTEGER or REAL); `None` otherwise.
fn read_number(row: &SqliteRow, column: &str) -> Option<f64> {
    let raw = row.try_get_raw(column).ok()?;
    if raw.is_null() {
        return None;
    }
    match raw.type_info().name() {
        // sqlx decodes an INTEGER only as an integer, a REAL only as a float.
        "INTEGER" => row.try_get::<i64, _>(column).ok().map(|n| n as f64),
        "REAL" => row.try_get::<f64, _>(column).ok(),
        _ => None,
    }
}

/// A lastmod kept as a number, read exactly as SQLite's `unixepoch(x, 'auto', 'subsec')` reads
/// it (to the millisecond, with its rounding): a Julian day number (what `julianday()` returns)
/// below 5,373,484.5, unix seconds (what PHP's `time()` returns) otherwise; `None` outside the
/// years SQLite's date functions cover (-4713 to 9999).
pub fn lastmod_from_number(n: f64) -> Option<DateTime<Utc>> {
    const FIRST_NON_JULIAN: f64 = 5_373_484.5;
    /// Milliseconds from Julian day 0 to the unix epoch.
    const UNIX_EPOCH_JD_MS: f64 = 210_866_760_000_000.0;
    const LAST_JD_MS: f64 = 464_269_060_799_999.0;
    let jd_ms = if (0.0..FIRST_NON_JULIAN).contains(&n) {
        (n * 86_400_000.0 + 0.5).floor()
    } else {
        (n * 1000.0 + UNIX_EPOCH_JD_MS + 0.5).floor()
    };
    if !(0.0..=LAST_JD_MS).contains(&jd_ms) {
        return None;
    }
    DateTime::from_timestamp_millis((jd_ms - UNIX_EPOCH_JD_MS) as i64)
}

/// SQLite columns hold any type; a priority stored as an integer or as text still counts.
fn read_priority(row: &SqliteRow) -> Option<f64> {
    read_number(row, "priority").or_else(|| {
        row.try_get::<Option<String>, _>("priority")
            .ok()
            .flatten()
            .and_then(|s| s.trim().parse().ok())
    })
}

/// A number kept as text (a TEXT column stores what it is given as text): digits with an
/// optional fraction. Eight digits before the point look like a compact date (`20240501`),
/// which SQLite would read as seconds of 1970: that is refused rather than published.
fn number_in_text(text: &str) -> Option<f64> {
    let whole = text.split('.').next().unwrap_or_default();
    let plain = !whole.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.matches('.').count() <= 1;
    (plain && whole.len() != 8)
        .then(|| text.parse().ok())
        .flatten()
}

/// RFC 3339, or SQLite's own `YYYY-MM-DD HH:MM:SS` (UTC), or a bare date, or a number
/// ([`lastmod_from_number`]).
pub fn parse_lastmod(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Some(at.and_utc());
        }
    }
    if let Some(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
    {
        return Some(date.and_utc());
    }
    number_in_text(text).and_then(lastmod_from_number)
}

/// Ids of those `locs` that exist in the built-in table.
async fn ids_by_loc<'a>(
    tx: &mut Transaction<'_, Sqlite>,
    locs: impl Iterator<Item = &'a str>,
) -> Result<HashMap<String, i64>, StoreError> {
    let locs: Vec<&str> = locs.collect();
    let mut ids = HashMap::with_capacity(locs.len());
    for chunk in locs.chunks(IMPORT_ROWS_PER_STATEMENT) {
        let mut select =
            QueryBuilder::<Sqlite>::new("SELECT id, loc FROM sitemap_entries WHERE loc IN (");
        let mut list = select.separated(", ");
        for loc in chunk {
            list.push_bind(*loc);
        }
        select.push(")");
        for row in select.build().fetch_all(&mut **tx).await? {
            ids.insert(row.try_get("loc")?, row.try_get("id")?);
        }
    }
    Ok(ids)
}

super::define_replace_extensions!(Sqlite);

async fn load_pages<'e>(
    exec: impl sqlx::SqliteExecutor<'e>,
    site: &str,
) -> Result<Vec<PageRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT page_no, first_id, urls, bytes, fingerprint, changed_at, extensions \
         FROM sitemapd_pages WHERE site = ?1 ORDER BY first_id",
    )
    .bind(site)
    .fetch_all(exec)
    .await?;
    Ok(rows
        .iter()
        .map(PageRecord::from_row)
        .collect::<Result<_, _>>()?)
}

async fn load_files<'e>(
    exec: impl sqlx::SqliteExecutor<'e>,
    site: &str,
) -> Result<Vec<FileRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT name, fingerprint, changed_at FROM sitemapd_files WHERE site = ?1 ORDER BY name",
    )
    .bind(site)
    .fetch_all(exec)
    .await?;
    Ok(rows
        .iter()
        .map(FileRecord::from_row)
        .collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the hostile property test: a write by another connection (the change poller,
    /// the CMS) committed between a transaction's first read and its first write made the write
    /// fail at once with SQLITE_BUSY_SNAPSHOT ("database is locked"), which no busy timeout
    /// retries, so a sweep failed whenever the table changed under it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_committed_while_state_is_saved_does_not_fail_the_save() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("sitemap.db").display());
        let config = crate::config::Config::from_vars(
            &crate::config::Vars::from_pairs(vec![
                ("SITEMAP_BASE_URL", "https://e.com/"),
                ("DATABASE_URL", url.as_str()),
            ]),
            &crate::config::Defaults::default(),
        )
        .unwrap();
        let store = SqliteStore::connect(&config).await.unwrap();
        store.migrate().await.unwrap();
        let other = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                SqliteConnectOptions::from_str(&url)
                    .unwrap()
                    .busy_timeout(Duration::from_millis(200)),
            )
            .await
            .unwrap();
        // Another writer holds the write lock and commits while the save is under way: the
        // save waits for the lock instead of reading a snapshot that the commit makes stale.
        let mut holder = other.acquire().await.unwrap();
        sqlx::raw_sql("BEGIN IMMEDIATE; UPDATE sitemapd_changes SET version = version + 1")
            .execute(&mut *holder)
            .await
            .unwrap();
        let empty: SavedState = (Vec::new(), Vec::new());
        let saving =
            tokio::spawn(
                async move { store.replace_state("https://e.com/", &empty, &empty).await },
            );
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        sqlx::raw_sql("COMMIT").execute(&mut *holder).await.unwrap();
        let saved = saving.await.unwrap();
        assert!(matches!(saved, Ok(true)), "{saved:?}");
    }

    #[test]
    fn lastmod_text_in_common_forms_is_read_as_utc() {
        let expect = "2024-05-01T12:00:00+00:00";
        for text in [
            "2024-05-01T12:00:00Z",
            "2024-05-01T14:00:00+02:00",
            "2024-05-01 12:00:00",
        ] {
            assert_eq!(
                crate::sitemap::entry::w3c_datetime(parse_lastmod(text).unwrap()),
                expect,
                "{text}"
            );
        }
        assert!(parse_lastmod("2024-05-01").is_some());
        assert_eq!(
            parse_lastmod("2024-05-01T12:00"),
            parse_lastmod("2024-05-01 12:00")
        );
        assert!(parse_lastmod("2024-05-01T12:00").is_some());
        assert_eq!(parse_lastmod("yesterday"), None);
    }

    #[test]
    fn a_lastmod_stored_as_a_number_is_unix_seconds_or_a_julian_day_as_sqlite_reads_it() {
        let at = |n| lastmod_from_number(n).map(crate::sitemap::entry::w3c_datetime);
        assert_eq!(
            at(1_714_564_800.0).as_deref(),
            Some("2024-05-01T12:00:00+00:00")
        );
        assert_eq!(
            at(2_460_432.0).as_deref(),
            Some("2024-05-01T12:00:00+00:00")
        );
        assert_eq!(at(f64::NAN), None);
        assert_eq!(at(1e300), None);
        let text = |t| parse_lastmod(t).map(crate::sitemap::entry::w3c_datetime);
        assert_eq!(
            text("1714564800").as_deref(),
            Some("2024-05-01T12:00:00+00:00")
        );
        assert_eq!(
            text("2460432.0").as_deref(),
            Some("2024-05-01T12:00:00+00:00")
        );
        assert_eq!(text("1.2.3"), None);
        assert_eq!(
            text("20240501"),
            None,
            "a compact date, not seconds of 1970"
        );
        // SQLite rounds to the millisecond: a minute stored as a Julian day stays that minute.
        let minute = 2_460_431.5 + 1.0 / 1440.0; // 2024-05-01 00:01:00
        assert_eq!(at(minute).as_deref(), Some("2024-05-01T00:01:00+00:00"));
        assert_eq!(
            text(&minute.to_string()).as_deref(),
            Some("2024-05-01T00:01:00+00:00")
        );
        assert_eq!(
            at(5_373_484.5).as_deref(),
            Some("1970-03-04T04:38:04+00:00")
        );
    }
}
