//! MySQL and MariaDB backend: same interface as PostgreSQL. MySQL cannot notify a client, so
//! changes are seen by polling the change log our row triggers keep, as on SQLite (see
//! [`super::LogReading`]).
//!
//! Every column is read through a cast (`CAST(loc AS CHAR)`, `CAST(priority AS CHAR)`, …): a view over
//! a CMS's tables may hold any compatible type, and binary-collated text would not decode as a
//! string otherwise. DATETIME values are read as UTC, and the session's time zone is UTC, so
//! TIMESTAMP columns are converted to UTC by the server.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions, MySqlQueryResult, MySqlRow};
use sqlx::{ConnectOptions, Executor, MySql, Row, Transaction};

use super::rows::quote_identifier_with;
use super::sql::{Dialect, Sql};
use super::StoreError;
use crate::sitemap::entry::Unreadable;
use crate::sitemap::RawEntry;
use crate::store::{DatabaseUrl, Pooling};

mod stamp;
mod triggers;
mod watch;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/mysql");

/// The store on MySQL or MariaDB.
pub type MySqlStore = Sql<MySql>;

impl Dialect for MySql {
    const MIGRATOR: &'static Migrator = &MIGRATOR;
    type Instant = NaiveDateTime;
    type Written = NaiveDateTime;

    /// `cms.pages` → `` `cms`.`pages` ``.
    fn quote(name: &str) -> String {
        quote_identifier_with(name, '`')
    }

    fn text(column: &str) -> String {
        format!("CAST({column} AS CHAR)")
    }

    fn int(expression: &str) -> String {
        format!("CAST({expression} AS SIGNED)")
    }

    /// Priority as text: MySQL would turn a text priority that is no number into 0
    /// (`'high' + 0`), where the rules must see no priority at all.
    /// A lastmod that is no time (text a view carries) reads as NULL: its text comes along in
    /// `lastmod_unreadable`, so the tag is counted as left out (a zero date is no date, as the
    /// CMSs mean it).
    fn entry_columns() -> &'static str {
        "CAST(id AS SIGNED) AS id, CAST(loc AS CHAR) AS loc, \
         CAST(lastmod AS DATETIME(6)) AS lastmod, \
         CASE WHEN lastmod IS NOT NULL AND CAST(lastmod AS DATETIME(6)) IS NULL \
         AND TRIM(CAST(lastmod AS CHAR)) <> '' AND CAST(lastmod AS CHAR) NOT LIKE '0000-00-00%' \
         THEN CAST(lastmod AS CHAR) END AS lastmod_unreadable, \
         CAST(changefreq AS CHAR) AS changefreq, CAST(priority AS CHAR) AS priority"
    }

    fn tables_named(names: &str) -> String {
        format!(
            "(SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name IN ({names}))"
        )
    }

    /// The source's own column, not the cast of the same name, so its index serves.
    fn time(column: &str) -> String {
        format!("CAST({column} AS DATETIME(6))")
    }

    /// Times are read as UTC, as lastmods are; a zero date is no date.
    fn read_time(row: &MySqlRow, name: &str) -> Option<DateTime<Utc>> {
        row.try_get::<Option<NaiveDateTime>, _>(name)
            .ok()
            .flatten()
            .map(|at| at.and_utc())
    }

    fn instant_key(column: &str) -> String {
        column.to_string()
    }

    /// Bytewise, as the other databases order these ASCII-or-URL values.
    fn sort_key(column: &str) -> String {
        format!("CAST({column} AS BINARY)")
    }

    fn insert_ignoring(rest: &str) -> String {
        format!("INSERT IGNORE INTO {rest}")
    }

    fn on_conflict(_key: &str) -> String {
        " ON DUPLICATE KEY UPDATE ".to_string()
    }

    fn inserted(column: &str) -> String {
        format!("VALUES({column})")
    }

    fn raw_entry(row: &MySqlRow) -> RawEntry {
        let priority = super::rows::priority_of_text(row.try_get("priority").ok().flatten());
        RawEntry {
            id: row.try_get("id").unwrap_or_default(),
            loc: row.try_get("loc").ok().flatten(),
            // A zero date ('0000-00-00', common in CMS tables) is no date.
            lastmod: Self::read_time(row, "lastmod"),
            changefreq: row.try_get("changefreq").ok().flatten(),
            priority: priority.0,
            unreadable: Unreadable::of(
                row.try_get("lastmod_unreadable").ok().flatten(),
                priority.1,
            ),
            ..RawEntry::default()
        }
    }

    fn instant(lastmod_us: i64) -> NaiveDateTime {
        DateTime::from_timestamp_micros(lastmod_us)
            .unwrap_or_default()
            .naive_utc()
    }

    fn written(at: DateTime<Utc>) -> NaiveDateTime {
        at.naive_utc()
    }

    const SUMMARISES: bool = true;
    const RANGES_AS_LITERALS: bool = true;

    fn row_hash(values: &str) -> String {
        format!("CRC32(CONCAT_WS('|', {values}))")
    }

    fn ordered_join(part: &str) -> String {
        format!("GROUP_CONCAT({part} ORDER BY {part} SEPARATOR ';')")
    }

    /// TRUNCATE fires no trigger in MySQL: the highest id falling tells of it.
    fn highest_entry_id() -> String {
        "(SELECT MAX(id) FROM sitemap_entries)".to_string()
    }

    fn int_div(expression: &str, divisor: i64) -> String {
        format!("({expression}) DIV {divisor}")
    }

    /// A bulk load's log is trimmed over several polls.
    fn bounded_delete(delete: &str) -> String {
        format!("{delete} LIMIT 50000")
    }

    /// URLs are keyed by a hash (`loc_hash`): TEXT cannot be a unique key.
    fn loc_key() -> (&'static str, &'static str, &'static str) {
        ("loc_hash", "UNHEX(SHA2(", ", 256))")
    }

    fn rows_affected(result: &MySqlQueryResult) -> u64 {
        result.rows_affected()
    }

    async fn begin_write(pool: &MySqlPool) -> Result<Transaction<'static, MySql>, sqlx::Error> {
        pool.begin().await
    }

    /// The site's lock row, locked until the transaction ends. It is made outside the
    /// transaction, so two replicas never hold a shared lock on it that both then upgrade.
    async fn begin_site_write(
        pool: &MySqlPool,
        site: &str,
    ) -> Result<Transaction<'static, MySql>, sqlx::Error> {
        sqlx::query("INSERT IGNORE INTO sitemapd_locks (site) VALUES (?)")
            .bind(site)
            .execute(pool)
            .await?;
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT site FROM sitemapd_locks WHERE site = ? FOR UPDATE")
            .bind(site)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }
}

impl Sql<MySql> {
    /// A pool on `url`; `read_only`: a source database of its own (perhaps a replica), whose
    /// sessions are read-only.
    pub fn connect(
        url: &DatabaseUrl,
        pooling: &Pooling,
        read_only: bool,
    ) -> Result<Self, StoreError> {
        // Sessions in UTC and utf8mb4 whatever the URL's query says: DATETIME values are read
        // as UTC, and TIMESTAMP ones are converted by the server to the session's zone.
        let options = MySqlConnectOptions::from_str(url.expose())?
            .timezone(Some(String::from("+00:00")))
            .charset("utf8mb4")
            .disable_statement_logging();
        let timeout = pooling.statement_timeout;
        let pool = MySqlPoolOptions::new()
            .max_connections(pooling.max_connections)
            .acquire_timeout(Duration::from_secs(5))
            .after_connect(move |conn, _| Box::pin(prepare_session(conn, timeout, read_only)))
            .connect_lazy_with(options);
        Ok(Self::new(pool, &pooling.first_source, read_only))
    }

    /// What the server says of the last change to the tables behind the source, and to the
    /// extension tables when `with_extensions` (see [`stamp`]); `None` when it cannot say.
    pub async fn source_stamp(
        &self,
        with_extensions: bool,
    ) -> Result<Option<super::SourceStamp>, StoreError> {
        let extensions: &[&str] = match with_extensions {
            true => &super::sql::EXTENSION_TABLES,
            false => &[],
        };
        stamp::source_stamp(&self.pool, self.source_name(), extensions).await
    }

    /// Applies the migrations, then puts the change triggers on the tables they created.
    pub async fn migrate_with_triggers(&self) -> Result<(), StoreError> {
        self.migrate().await?;
        if let Err(e) = triggers::add(&self.pool).await {
            // Serving still works: changes then show at the next periodic sweep.
            tracing::warn!(
                error = %crate::error::Chain(&e),
                "cannot create the change triggers (they need the TRIGGER privilege, and with \
                 binary logging on, log_bin_trust_function_creators=1); changes will show \
                 every SITEMAP_REFRESH_SECS instead of at once"
            );
        }
        Ok(())
    }
}

/// A new session's settings: the statement timeout, and read-only for a source database of its
/// own.
async fn prepare_session(
    conn: &mut sqlx::MySqlConnection,
    timeout: Duration,
    read_only: bool,
) -> Result<(), sqlx::Error> {
    set_statement_timeout(conn, timeout).await?;
    if read_only {
        conn.execute("SET SESSION TRANSACTION READ ONLY").await?;
    }
    Ok(())
}

/// Bounds every statement the service runs: MariaDB calls it `max_statement_time` (seconds),
/// MySQL `max_execution_time` (milliseconds, SELECTs only).
async fn set_statement_timeout(
    conn: &mut sqlx::MySqlConnection,
    timeout: Duration,
) -> Result<(), sqlx::Error> {
    let mariadb = format!("SET SESSION max_statement_time = {}", timeout.as_secs_f64());
    if conn.execute(&*mariadb).await.is_ok() {
        return Ok(());
    }
    let mysql = format!("SET SESSION max_execution_time = {}", timeout.as_millis());
    conn.execute(&*mysql).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_with_backticks_part_by_part() {
        assert_eq!(MySql::quote("wp_sitemap"), "`wp_sitemap`");
        assert_eq!(MySql::quote("cms.v"), "`cms`.`v`");
        assert_eq!(MySql::quote("a`b"), "`a``b`");
    }
}
