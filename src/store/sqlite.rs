//! SQLite backend, the embedded default: how it connects and its dialect; changes are seen by
//! polling the change log our triggers keep (SQLite cannot notify another process).

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteQueryResult,
    SqliteRow, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Row, Sqlite, Transaction, TypeInfo, ValueRef};

use super::sql::{Dialect, Sql};
use super::{quote_identifier, Modified, StoreError, SubmittedThrough};
use crate::sitemap::entry::w3c_datetime;
use crate::sitemap::entry::Unreadable;
use crate::sitemap::RawEntry;
use crate::store::{DatabaseUrl, Pooling};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// The store on SQLite.
pub type SqliteStore = Sql<Sqlite>;

/// SQLite keeps lastmod as text in several forms, or as a number; `unixepoch(lastmod, 'auto',
/// 'subsec')` reads them all as one comparable number, as [`parse_lastmod`] and
/// [`lastmod_from_number`] do.
impl Dialect for Sqlite {
    const MIGRATOR: &'static Migrator = &MIGRATOR;
    type Instant = i64;
    type Written = String;

    fn quote(name: &str) -> String {
        quote_identifier(name)
    }

    fn text(column: &str) -> String {
        format!("CAST({column} AS TEXT)")
    }

    fn int(expression: &str) -> String {
        expression.to_string()
    }

    fn entry_columns() -> &'static str {
        "id, loc, lastmod, changefreq, priority"
    }

    fn time(column: &str) -> String {
        column.to_string()
    }

    fn tables_named(names: &str) -> String {
        format!(
            "(SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') \
             AND name IN ({names}))"
        )
    }

    fn read_time(row: &SqliteRow, name: &str) -> Option<DateTime<Utc>> {
        read_time_column(row, name)
    }

    fn instant_key(column: &str) -> String {
        format!("CAST(unixepoch({column}, 'auto', 'subsec') * 1000000 AS INTEGER)")
    }

    fn raw_entry(row: &SqliteRow) -> RawEntry {
        let lastmod = read_time_column(row, "lastmod");
        let lastmod_unreadable = lastmod
            .is_none()
            .then(|| unreadable_text(row, "lastmod"))
            .flatten();
        let priority = read_priority(row);
        RawEntry {
            id: row.try_get("id").unwrap_or_default(),
            loc: row.try_get("loc").ok().flatten(),
            lastmod,
            changefreq: row.try_get("changefreq").ok().flatten(),
            priority: priority.0,
            unreadable: Unreadable::of(lastmod_unreadable, priority.1),
            ..RawEntry::default()
        }
    }

    fn instant(lastmod_us: i64) -> i64 {
        lastmod_us
    }

    fn written(at: DateTime<Utc>) -> String {
        w3c_datetime(at)
    }

    /// The position comes from SQLite's own reading of lastmod, which compares text dates to
    /// the millisecond: coarser than the one decoded for the entry.
    fn modified(rows: &[SqliteRow]) -> Modified {
        let through = rows.last().and_then(|last| {
            Some(SubmittedThrough {
                lastmod_us: last.try_get("lastmod_key").ok()?,
                id: last.try_get("id").ok()?,
            })
        });
        Modified {
            entries: rows.iter().map(Self::raw_entry).collect(),
            through,
        }
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    async fn begin_write(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        begin_write(pool).await
    }

    /// `BEGIN IMMEDIATE` serialises writers of the whole database, replicas included.
    async fn begin_site_write(
        pool: &SqlitePool,
        _site: &str,
    ) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        begin_write(pool).await
    }
}

impl Sql<Sqlite> {
    /// Write-ahead log with `synchronous = NORMAL`, as SQLite advises for WAL: a commit
    /// survives a crash of sitemapd; a power loss may undo the last commits, never break the
    /// file. Statement journals (every multi-row upsert writes one) stay in memory instead of
    /// temporary files. Most of the crawl log's write time was the kernel's (docs/performance.md).
    /// `read_only`: a source database of its own, opened read-only (never created).
    pub fn connect(
        url: &DatabaseUrl,
        pooling: &Pooling,
        read_only: bool,
    ) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url.expose())?
            .create_if_missing(!read_only)
            .read_only(read_only)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .pragma("temp_store", "memory")
            .busy_timeout(Duration::from_secs(5))
            .disable_statement_logging();
        let pool = SqlitePoolOptions::new()
            .max_connections(pooling.max_connections)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options);
        Ok(Self::new(pool, &pooling.first_source, read_only))
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

/// A time stored as a number (unix or Julian) or as text in any common form.
fn read_time_column(row: &SqliteRow, name: &str) -> Option<DateTime<Utc>> {
    match read_number(row, name) {
        Some(n) => lastmod_from_number(n),
        None => row
            .try_get::<Option<String>, _>(name)
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
/// Text that holds no number comes back as the second value.
fn read_priority(row: &SqliteRow) -> (Option<f64>, Option<String>) {
    match read_number(row, "priority") {
        Some(n) => (Some(n), None),
        None => super::rows::priority_of_text(row.try_get("priority").ok().flatten()),
    }
}

/// The text of `column` when it holds some (not blank) that was not read as its type.
fn unreadable_text(row: &SqliteRow, column: &str) -> Option<String> {
    if read_number(row, column).is_some() {
        return None;
    }
    row.try_get::<Option<String>, _>(column)
        .ok()
        .flatten()
        .filter(|text| !text.trim().is_empty())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{SavedState, BUILTIN_SOURCE};

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
        let pooling = Pooling {
            max_connections: config.max_connections,
            statement_timeout: config.statement_timeout,
            first_source: BUILTIN_SOURCE.into(),
        };
        let store = SqliteStore::connect(&config.database_url, &pooling, false).unwrap();
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
        let empty = SavedState::default();
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
