//! MySQL and MariaDB backend: same interface as PostgreSQL. MySQL cannot notify a client, so
//! changes are seen by polling the change log our row triggers keep, as on SQLite (see
//! [`super::LogReading`]).
//!
//! Every column is read through a cast (`CAST(loc AS CHAR)`, `CAST(priority AS CHAR)`, …): a view over
//! a CMS's tables may hold any compatible type, and binary-collated text would not decode as a
//! string otherwise. DATETIME values are read as UTC, and the session's time zone is UTC, so
//! TIMESTAMP columns are converted to UTC by the server.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions, MySqlRow};
use sqlx::{ConnectOptions, Executor, MySql, QueryBuilder, Row, Transaction};

use super::{
    entry_columns, keyed_alternate, keyed_image, poll_change_log, Change, ChangeLog, FileRecord,
    IdRange, ImportCounts, ImportPlan, ImportedEntry, Keyed, LogCursor, LogReading, Modified,
    PageRecord, SavedState, StoreError, SubmittedThrough, ALTERNATES_TABLE, IMAGES_TABLE,
    IMPORT_ROWS_PER_STATEMENT,
};
use crate::config::Config;
use crate::sitemap::entry::{RawAlternate, RawImage};
use crate::sitemap::{Namespaces, RawEntry};

mod triggers;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/mysql");

/// The upsert of entries by `loc` (its unique hash); the VALUES rows go between the parts.
const UPSERT_ENTRIES: (&str, &str) = (
    "INSERT INTO sitemap_entries (loc, lastmod, changefreq, priority) ",
    " ON DUPLICATE KEY UPDATE lastmod = VALUES(lastmod), \
     changefreq = VALUES(changefreq), priority = VALUES(priority)",
);

/// A pool on a MySQL or MariaDB database, and the statements that read its source.
#[derive(Clone)]
pub struct MySqlStore {
    pool: MySqlPool,
    queries: std::sync::Arc<Queries>,
}

/// Statements that name the source, built once.
struct Queries {
    select_range: String,
    select_chunk: String,
    select_recent: String,
    select_modified: String,
}

impl Queries {
    fn new(source: &str) -> Self {
        // Conditions name the source's own columns (`src.`), not the casts of the same name,
        // so the indexes on them serve the query.
        let select = select_sql(source);
        Self {
            select_range: format!("{select} WHERE src.id BETWEEN ? AND ? ORDER BY src.id"),
            select_chunk: format!("{select} WHERE src.id BETWEEN ? AND ? ORDER BY src.id LIMIT ?"),
            select_recent: format!(
                "{select} WHERE src.lastmod IS NOT NULL \
                 ORDER BY src.lastmod DESC, src.id DESC LIMIT ?"
            ),
            select_modified: format!(
                "{select} WHERE src.lastmod IS NOT NULL \
                 AND (src.lastmod > ? OR (src.lastmod = ? AND src.id > ?)) AND src.lastmod <= ? \
                 ORDER BY src.lastmod, src.id LIMIT ?"
            ),
        }
    }
}

impl MySqlStore {
    pub async fn connect(config: &Config) -> Result<Self, StoreError> {
        // Sessions in UTC and utf8mb4 whatever the URL's query says: DATETIME values are read
        // as UTC, and TIMESTAMP ones are converted by the server to the session's zone.
        let options = MySqlConnectOptions::from_str(config.database_url.expose())?
            .timezone(Some(String::from("+00:00")))
            .charset("utf8mb4")
            .disable_statement_logging();
        let timeout = config.statement_timeout;
        let pool = MySqlPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(Duration::from_secs(5))
            .after_connect(move |conn, _| Box::pin(set_statement_timeout(conn, timeout)))
            .connect_lazy_with(options);
        Ok(Self {
            pool,
            queries: std::sync::Arc::new(Queries::new(&config.first_site().source)),
        })
    }

    pub fn for_source(&self, source: &str) -> Self {
        Self {
            pool: self.pool.clone(),
            queries: std::sync::Arc::new(Queries::new(source)),
        }
    }

    /// Applies the migrations, then puts the change triggers on the tables they created.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await?;
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
            "SELECT CAST(entry_id AS SIGNED) AS entry_id, CAST(hreflang AS CHAR) AS hreflang, \
             CAST(href AS CHAR) AS href \
             FROM {ALTERNATES_TABLE} WHERE entry_id BETWEEN ? AND ? \
             ORDER BY entry_id, CAST(hreflang AS BINARY), CAST(href AS BINARY)"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(keyed_alternate).collect())
    }

    pub async fn images(&self, range: IdRange) -> Result<Keyed<RawImage>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT CAST(entry_id AS SIGNED) AS entry_id, CAST(loc AS CHAR) AS loc \
             FROM {IMAGES_TABLE} WHERE entry_id BETWEEN ? AND ? ORDER BY entry_id, id"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(keyed_image).collect())
    }

    pub async fn extension_presence(&self, range: IdRange) -> Result<Namespaces, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT EXISTS (SELECT 1 FROM {ALTERNATES_TABLE} WHERE entry_id BETWEEN ? AND ?) + 0 AS xhtml, \
                    EXISTS (SELECT 1 FROM {IMAGES_TABLE} WHERE entry_id BETWEEN ? AND ?) + 0 AS image"
        ))
        .bind(range.first)
        .bind(range.last)
        .bind(range.first)
        .bind(range.last)
        .fetch_one(&self.pool)
        .await?;
        Ok(Namespaces {
            xhtml: row.try_get::<i64, _>("xhtml")? != 0,
            image: row.try_get::<i64, _>("image")? != 0,
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
        let after_at = DateTime::from_timestamp_micros(after.lastmod_us)
            .unwrap_or_default()
            .naive_utc();
        let rows = sqlx::query(&self.queries.select_modified)
            .bind(after_at)
            .bind(after_at)
            .bind(after.id)
            .bind(through.naive_utc())
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(Modified::from_entries(rows.iter().map(raw_entry).collect()))
    }

    pub async fn load_submitted(&self, site: &str) -> Result<Option<SubmittedThrough>, StoreError> {
        let row =
            sqlx::query("SELECT through_us, through_id FROM sitemapd_indexnow WHERE site = ?")
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
                "INSERT IGNORE INTO sitemapd_indexnow (site, through_us, through_id) VALUES (?, ?, ?)",
            )
            .bind(site)
            .bind(to.lastmod_us)
            .bind(to.id)
            .execute(&self.pool)
            .await?
            .rows_affected(),
            Some(from) => sqlx::query(
                "UPDATE sitemapd_indexnow SET through_us = ?, through_id = ? \
                 WHERE site = ? AND through_us = ? AND through_id = ?",
            )
            .bind(to.lastmod_us)
            .bind(to.id)
            .bind(site)
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
        // One writer per site at a time, across replicas: the site's lock row, locked until the
        // transaction ends. It is made outside the transaction, so two replicas never hold a
        // shared lock on it that both then try to upgrade.
        sqlx::query("INSERT IGNORE INTO sitemapd_locks (site) VALUES (?)")
            .bind(site)
            .execute(&self.pool)
            .await?;
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT site FROM sitemapd_locks WHERE site = ? FOR UPDATE")
            .bind(site)
            .execute(&mut *tx)
            .await?;
        let stored = (
            load_pages(&mut *tx, site).await?,
            load_files(&mut *tx, site).await?,
        );
        if stored != *expected {
            return Ok(false);
        }
        let (pages, files) = next;
        sqlx::query("DELETE FROM sitemapd_pages WHERE site = ?")
            .bind(site)
            .execute(&mut *tx)
            .await?;
        for chunk in pages.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let mut insert = QueryBuilder::<MySql>::new(
                "INSERT INTO sitemapd_pages (site, page_no, first_id, urls, bytes, fingerprint, changed_at, extensions) ",
            );
            insert.push_values(chunk, |mut row, p| {
                row.push_bind(site)
                    .push_bind(p.page_no)
                    .push_bind(p.first_id)
                    .push_bind(p.urls)
                    .push_bind(p.bytes)
                    .push_bind(p.fingerprint.hex())
                    .push_bind(p.changed_at)
                    .push_bind(p.extensions);
            });
            insert.build().execute(&mut *tx).await?;
        }
        for f in files {
            sqlx::query(
                "INSERT INTO sitemapd_files (site, name, fingerprint, changed_at) VALUES (?, ?, ?, ?) \
                 ON DUPLICATE KEY UPDATE fingerprint = VALUES(fingerprint), changed_at = VALUES(changed_at)",
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
        let mut tx = self.pool.begin().await?;
        let existing = ids_by_loc(&mut tx, batch.iter().map(|e| e.loc.as_str())).await?;
        let plan = ImportPlan::new(batch, &existing);
        for chunk in plan.upserts.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let mut upsert = QueryBuilder::<MySql>::new(UPSERT_ENTRIES.0);
            upsert.push_values(chunk, |mut row, entry| {
                let (lastmod, changefreq, priority) = entry_columns(entry);
                row.push_bind(&entry.loc)
                    .push_bind(lastmod.map(|at| at.naive_utc()))
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
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM sitemapd_changes WHERE source = ?")
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
        let start = sqlx::query(
            "SELECT version, (SELECT MAX(id) FROM sitemap_entries) AS top \
             FROM sitemapd_changes WHERE source = ?",
        )
        .bind(&source)
        .fetch_optional(&pool)
        .await;
        let Ok(Some(start)) = start else {
            return stream::pending().boxed();
        };
        let start = LogCursor {
            version: start.try_get("version").unwrap_or_default(),
            top: start.try_get("top").ok().flatten(),
        };
        poll_change_log(start, MySqlChangeLog { pool, source })
    }
}

/// One source's change log in a MySQL database.
struct MySqlChangeLog {
    pool: MySqlPool,
    source: String,
}

impl ChangeLog for MySqlChangeLog {
    /// Also reads the table's highest id: TRUNCATE fires no trigger in MySQL; the id falling
    /// tells of it. (The change log exists only for our own table, `sitemap_entries`.)
    async fn read(&self, after: i64) -> Result<LogReading, StoreError> {
        let row = sqlx::query(
            "SELECT MIN(version) AS first, MAX(version) AS last, MIN(lo) AS lo, MAX(hi) AS hi, \
                    (SELECT MAX(id) FROM sitemap_entries) AS top \
             FROM sitemapd_change_log WHERE source = ? AND version > ?",
        )
        .bind(&self.source)
        .bind(after)
        .fetch_one(&self.pool)
        .await?;
        Ok(LogReading::from_row(&row)?)
    }

    /// A bounded delete: a bulk load's log goes over several polls.
    async fn trim(&self, through: i64) {
        let _ = sqlx::query(
            "DELETE FROM sitemapd_change_log WHERE source = ? AND version <= ? LIMIT 50000",
        )
        .bind(&self.source)
        .bind(through)
        .execute(&self.pool)
        .await;
    }
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

/// Quotes a possibly schema-qualified identifier the MySQL way: `cms.pages` → `` `cms`.`pages` ``.
fn quote_identifier(name: &str) -> String {
    super::quote_identifier_with(name, '`')
}

/// Casts make any view with the five columns readable, whatever their exact types.
fn select_sql(source: &str) -> String {
    format!(
        "SELECT CAST(id AS SIGNED) AS id, CAST(loc AS CHAR) AS loc, \
         CAST(lastmod AS DATETIME(6)) AS lastmod, CAST(changefreq AS CHAR) AS changefreq, \
         CAST(priority AS CHAR) AS priority FROM {} AS src",
        quote_identifier(source)
    )
}

fn raw_entry(row: &MySqlRow) -> RawEntry {
    RawEntry {
        id: row.try_get("id").unwrap_or_default(),
        loc: row.try_get("loc").ok().flatten(),
        // A zero date ('0000-00-00', common in CMS tables) is no date.
        lastmod: row
            .try_get::<Option<NaiveDateTime>, _>("lastmod")
            .ok()
            .flatten()
            .map(|at| at.and_utc()),
        changefreq: row.try_get("changefreq").ok().flatten(),
        // As text: MySQL would turn a text priority that is no number into 0 (`'high' + 0`),
        // where the rules must see no priority at all.
        priority: row
            .try_get::<Option<String>, _>("priority")
            .ok()
            .flatten()
            .and_then(|text| text.trim().parse().ok()),
        ..RawEntry::default()
    }
}

/// Ids of those `locs` that exist in the built-in table.
async fn ids_by_loc<'a>(
    tx: &mut Transaction<'_, MySql>,
    locs: impl Iterator<Item = &'a str>,
) -> Result<HashMap<String, i64>, StoreError> {
    let locs: Vec<&str> = locs.collect();
    let mut ids = HashMap::with_capacity(locs.len());
    for chunk in locs.chunks(IMPORT_ROWS_PER_STATEMENT) {
        let mut select = QueryBuilder::<MySql>::new(
            "SELECT id, CAST(loc AS CHAR) AS loc FROM sitemap_entries WHERE loc_hash IN (",
        );
        let mut list = select.separated(", ");
        for loc in chunk {
            list.push("UNHEX(SHA2(")
                .push_bind_unseparated(*loc)
                .push_unseparated(", 256))");
        }
        select.push(")");
        for row in select.build().fetch_all(&mut **tx).await? {
            ids.insert(row.try_get("loc")?, row.try_get("id")?);
        }
    }
    Ok(ids)
}

super::define_replace_extensions!(MySql);

async fn load_pages<'e>(
    exec: impl sqlx::MySqlExecutor<'e>,
    site: &str,
) -> Result<Vec<PageRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT page_no, first_id, urls, bytes, CAST(fingerprint AS CHAR) AS fingerprint, changed_at, extensions \
         FROM sitemapd_pages WHERE site = ? ORDER BY first_id",
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
    exec: impl sqlx::MySqlExecutor<'e>,
    site: &str,
) -> Result<Vec<FileRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT CAST(name AS CHAR) AS name, CAST(fingerprint AS CHAR) AS fingerprint, changed_at \
         FROM sitemapd_files WHERE site = ? ORDER BY name",
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

    #[test]
    fn identifiers_are_quoted_with_backticks_part_by_part() {
        assert_eq!(quote_identifier("wp_sitemap"), "`wp_sitemap`");
        assert_eq!(quote_identifier("cms.v"), "`cms`.`v`");
        assert_eq!(quote_identifier("a`b"), "`a``b`");
    }

    #[test]
    fn the_source_is_quoted_in_the_query() {
        assert!(Queries::new("cms.v")
            .select_range
            .contains("FROM `cms`.`v` AS src WHERE"));
    }
}
