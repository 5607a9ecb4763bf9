//! PostgreSQL backend: entries by keyset range, state tables, and LISTEN/NOTIFY for changes.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::{ConnectOptions, Postgres, QueryBuilder, Row, Transaction};

use chrono::{DateTime, Utc};

use super::{
    entry_columns, keyed_alternate, keyed_image, quote_identifier, Change, FileRecord, IdRange,
    ImportCounts, ImportPlan, ImportedEntry, Keyed, Modified, PageRecord, SavedState, StoreError,
    SubmittedThrough, ALTERNATES_TABLE, IMAGES_TABLE, IMPORT_ROWS_PER_STATEMENT, UPSERT_ENTRIES,
};
use crate::config::Config;
use crate::sitemap::entry::{RawAlternate, RawImage};
use crate::sitemap::{Namespaces, RawEntry};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");
const CHANGE_CHANNEL: &str = "sitemapd_changed";

/// Rows inserted with explicit ids (by a CMS, a script) leave the identity sequence behind the
/// table; this moves it past the highest id, never back, so imported rows get fresh ids.
const CATCH_UP_IDENTITY: &str = "SELECT setval(seq, top) FROM ( \
     SELECT pg_get_serial_sequence('sitemap_entries', 'id')::regclass AS seq, \
            (SELECT max(id) FROM sitemap_entries) AS top) AS t \
     WHERE seq IS NOT NULL AND top > COALESCE(pg_sequence_last_value(seq), 0)";

#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
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
        let select = select_sql(source);
        Self {
            select_range: format!("{select} WHERE id BETWEEN $1 AND $2 ORDER BY id"),
            select_chunk: format!("{select} WHERE id BETWEEN $1 AND $2 ORDER BY id LIMIT $3"),
            select_recent: format!(
                "{select} WHERE lastmod IS NOT NULL ORDER BY lastmod::timestamptz DESC, id DESC LIMIT $1"
            ),
            select_modified: format!(
                "{select} WHERE lastmod IS NOT NULL AND (lastmod::timestamptz, id::int8) > ($1, $2) \
                 AND lastmod::timestamptz <= $3 ORDER BY lastmod::timestamptz, id LIMIT $4"
            ),
        }
    }
}

impl PgStore {
    pub async fn connect(config: &Config) -> Result<Self, StoreError> {
        let statement_timeout = format!("{}s", config.statement_timeout.as_secs());
        // Timestamps without zone in a CMS view are read as UTC, whatever the server's default.
        let options = PgConnectOptions::from_str(config.database_url.expose())?
            .options([
                ("statement_timeout", statement_timeout.as_str()),
                ("timezone", "UTC"),
            ])
            .application_name("sitemapd")
            .disable_statement_logging();
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(Duration::from_secs(5))
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
            "SELECT entry_id::int8 AS entry_id, hreflang::text AS hreflang, href::text AS href \
             FROM {ALTERNATES_TABLE} WHERE entry_id BETWEEN $1 AND $2 ORDER BY entry_id, hreflang, href"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(keyed_alternate).collect())
    }

    pub async fn images(&self, range: IdRange) -> Result<Keyed<RawImage>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT entry_id::int8 AS entry_id, loc::text AS loc \
             FROM {IMAGES_TABLE} WHERE entry_id BETWEEN $1 AND $2 ORDER BY entry_id, id"
        ))
        .bind(range.first)
        .bind(range.last)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(keyed_image).collect())
    }

    pub async fn extension_presence(&self, range: IdRange) -> Result<Namespaces, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT EXISTS (SELECT 1 FROM {ALTERNATES_TABLE} WHERE entry_id BETWEEN $1 AND $2) AS xhtml, \
                    EXISTS (SELECT 1 FROM {IMAGES_TABLE} WHERE entry_id BETWEEN $1 AND $2) AS image"
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
            .bind(DateTime::from_timestamp_micros(after.lastmod_us).unwrap_or_default())
            .bind(after.id)
            .bind(through)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(Modified::from_entries(rows.iter().map(raw_entry).collect()))
    }

    pub async fn load_submitted(&self, site: &str) -> Result<Option<SubmittedThrough>, StoreError> {
        let row =
            sqlx::query("SELECT through_us, through_id FROM sitemapd_indexnow WHERE site = $1")
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
                "INSERT INTO sitemapd_indexnow (site, through_us, through_id) VALUES ($1, $2, $3) \
                 ON CONFLICT (site) DO NOTHING",
            )
            .bind(site)
            .bind(to.lastmod_us)
            .bind(to.id)
            .execute(&self.pool)
            .await?
            .rows_affected(),
            Some(from) => sqlx::query(
                "UPDATE sitemapd_indexnow SET through_us = $2, through_id = $3 \
                 WHERE site = $1 AND through_us = $4 AND through_id = $5",
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
        let mut tx = self.pool.begin().await?;
        // One writer per site at a time, across replicas: the lock ends with the transaction.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('sitemapd:' || $1))")
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
        sqlx::query("DELETE FROM sitemapd_pages WHERE site = $1")
            .bind(site)
            .execute(&mut *tx)
            .await?;
        for p in pages {
            sqlx::query(
                "INSERT INTO sitemapd_pages (site, page_no, first_id, urls, bytes, fingerprint, changed_at, extensions) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
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
                "INSERT INTO sitemapd_files (site, name, fingerprint, changed_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (site, name) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, changed_at = EXCLUDED.changed_at",
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
        sqlx::query(CATCH_UP_IDENTITY).execute(&mut *tx).await?;
        let existing = ids_by_loc(&mut tx, batch.iter().map(|e| e.loc.as_str())).await?;
        let plan = ImportPlan::new(batch, &existing);
        for chunk in plan.upserts.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let mut upsert = QueryBuilder::<Postgres>::new(UPSERT_ENTRIES.0);
            upsert.push_values(chunk, |mut row, entry| {
                let (lastmod, changefreq, priority) = entry_columns(entry);
                row.push_bind(&entry.loc)
                    .push_bind(lastmod)
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
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = 'sitemapd_entries_inserted'",
        )
        .bind(quote_identifier(source))
        .fetch_one(&self.pool)
        .await
        .is_ok_and(|n| n > 0)
    }

    /// Notifications from the triggers our migration puts on its own table; a lost connection
    /// is reported as [`Change::Everything`] since notifications may have been missed meanwhile.
    /// Listening starts before this returns, so a sweep made right after misses nothing.
    pub async fn changes(&self, source: &str) -> BoxStream<'static, Change> {
        let pool = self.pool.clone();
        let table = source.rsplit('.').next().unwrap_or(source).to_string();
        let first = connect_listener(&pool).await.ok();
        stream::unfold(first, move |listener| {
            let (pool, table) = (pool.clone(), table.clone());
            async move {
                let Some(mut listener) = listener else {
                    // (Re)connected: anything may have changed while we were not listening.
                    return Some((Change::Everything, Some(reconnect_listener(&pool).await)));
                };
                loop {
                    match listener.try_recv().await {
                        Ok(Some(n)) => {
                            if let Some(change) = parse_notification(n.payload(), &table) {
                                return Some((change, Some(listener)));
                            }
                        }
                        // The connection dropped; the listener reconnects on the next call.
                        Ok(None) => return Some((Change::Everything, Some(listener))),
                        Err(e) => {
                            tracing::warn!(error = %e, "change notifications interrupted");
                            return Some((Change::Everything, None));
                        }
                    }
                }
            }
        })
        .boxed()
    }
}

async fn reconnect_listener(pool: &PgPool) -> PgListener {
    loop {
        match connect_listener(pool).await {
            Ok(listener) => return listener,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for changes; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

async fn connect_listener(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANGE_CHANNEL).await?;
    Ok(listener)
}

/// `"<table> <lo> <hi>"` or `"<table> all"`, as the trigger function sends them.
fn parse_notification(payload: &str, table: &str) -> Option<Change> {
    let mut parts = payload.split(' ');
    if parts.next()? != table {
        return None;
    }
    match (parts.next()?, parts.next()) {
        ("all", None) => Some(Change::Everything),
        (lo, Some(hi)) => match (lo.parse(), hi.parse()) {
            (Ok(first), Ok(last)) => Some(Change::Ids(IdRange { first, last })),
            _ => Some(Change::Everything),
        },
        _ => Some(Change::Everything),
    }
}

/// Casts make any view with the five columns readable, whatever their exact types.
fn select_sql(source: &str) -> String {
    format!(
        "SELECT id::int8 AS id, loc::text AS loc, lastmod::timestamptz AS lastmod, \
         changefreq::text AS changefreq, priority::float8 AS priority \
         FROM {}",
        quote_identifier(source)
    )
}

fn raw_entry(row: &PgRow) -> RawEntry {
    RawEntry {
        id: row.try_get("id").unwrap_or_default(),
        loc: row.try_get("loc").ok().flatten(),
        lastmod: row.try_get("lastmod").ok().flatten(),
        changefreq: row.try_get("changefreq").ok().flatten(),
        priority: row.try_get("priority").ok().flatten(),
        ..RawEntry::default()
    }
}

/// Ids of those `locs` that exist in the built-in table.
async fn ids_by_loc<'a>(
    tx: &mut Transaction<'_, Postgres>,
    locs: impl Iterator<Item = &'a str>,
) -> Result<HashMap<String, i64>, StoreError> {
    let locs: Vec<&str> = locs.collect();
    let mut ids = HashMap::with_capacity(locs.len());
    for chunk in locs.chunks(IMPORT_ROWS_PER_STATEMENT) {
        let mut select =
            QueryBuilder::<Postgres>::new("SELECT id, loc FROM sitemap_entries WHERE loc IN (");
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

super::define_replace_extensions!(Postgres);

async fn load_pages<'e>(
    exec: impl sqlx::PgExecutor<'e>,
    site: &str,
) -> Result<Vec<PageRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT page_no, first_id, urls, bytes, fingerprint, changed_at, extensions \
         FROM sitemapd_pages WHERE site = $1 ORDER BY first_id",
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
    exec: impl sqlx::PgExecutor<'e>,
    site: &str,
) -> Result<Vec<FileRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT name, fingerprint, changed_at FROM sitemapd_files WHERE site = $1 ORDER BY name",
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
    fn notifications_for_other_tables_are_ignored() {
        assert_eq!(parse_notification("other 1 2", "sitemap_entries"), None);
        assert_eq!(
            parse_notification("sitemap_entries 3 9", "sitemap_entries"),
            Some(Change::Ids(IdRange { first: 3, last: 9 }))
        );
        assert_eq!(
            parse_notification("sitemap_entries all", "sitemap_entries"),
            Some(Change::Everything)
        );
    }

    #[test]
    fn the_source_is_quoted_in_the_query() {
        assert!(Queries::new("cms.v")
            .select_range
            .contains("FROM \"cms\".\"v\" WHERE"));
    }
}
