//! PostgreSQL backend: entries by keyset range, state tables, and LISTEN/NOTIFY for changes.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt};
use sqlx::migrate::Migrator;
use sqlx::postgres::{
    PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, PgQueryResult, PgRow,
};
use sqlx::{ConnectOptions, Postgres, Row, Transaction};

use super::sql::{Dialect, Sql};
use super::{quote_identifier, Change, IdRange, StoreError};
use crate::config::Config;
use crate::sitemap::RawEntry;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");
const CHANGE_CHANNEL: &str = "sitemapd_changed";

/// Rows inserted with explicit ids (by a CMS, a script) leave the identity sequence behind the
/// table; this moves it past the highest id, never back, so imported rows get fresh ids.
const CATCH_UP_IDENTITY: &str = "SELECT setval(seq, top) FROM ( \
     SELECT pg_get_serial_sequence('sitemap_entries', 'id')::regclass AS seq, \
            (SELECT max(id) FROM sitemap_entries) AS top) AS t \
     WHERE seq IS NOT NULL AND top > COALESCE(pg_sequence_last_value(seq), 0)";

/// The store on PostgreSQL.
pub type PgStore = Sql<Postgres>;

impl Dialect for Postgres {
    const MIGRATOR: &'static Migrator = &MIGRATOR;
    type Instant = DateTime<Utc>;
    type Written = DateTime<Utc>;

    fn placeholders(sql: &str) -> String {
        let mut n = 0;
        let mut numbered = String::with_capacity(sql.len() + 8);
        for c in sql.chars() {
            if c == '?' {
                n += 1;
                numbered.push_str(&format!("${n}"));
            } else {
                numbered.push(c);
            }
        }
        numbered
    }

    fn quote(name: &str) -> String {
        quote_identifier(name)
    }

    fn text(column: &str) -> String {
        format!("{column}::text")
    }

    fn int(expression: &str) -> String {
        format!("({expression})::int8")
    }

    /// Casts make any view with the five columns readable, whatever their exact types.
    fn entry_columns() -> &'static str {
        "id::int8 AS id, loc::text AS loc, lastmod::timestamptz AS lastmod, \
         changefreq::text AS changefreq, priority::float8 AS priority"
    }

    fn lastmod_key() -> &'static str {
        "src.lastmod::timestamptz"
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

    fn instant(lastmod_us: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(lastmod_us).unwrap_or_default()
    }

    fn written(at: DateTime<Utc>) -> DateTime<Utc> {
        at
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    async fn begin_write(pool: &PgPool) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        pool.begin().await
    }

    /// Rows inserted with explicit ids leave the identity sequence behind the table.
    async fn before_import(tx: &mut PgConnection) -> Result<(), sqlx::Error> {
        sqlx::query(CATCH_UP_IDENTITY).execute(tx).await.map(|_| ())
    }

    /// One writer per site at a time, across replicas: the lock ends with the transaction.
    async fn begin_site_write(
        pool: &PgPool,
        site: &str,
    ) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('sitemapd:' || $1))")
            .bind(site)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }
}

impl Sql<Postgres> {
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
        Ok(Self::new(pool, &config.first_site().source))
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
    fn placeholders_are_numbered() {
        assert_eq!(
            Postgres::placeholders("a = ? AND b IN (?, ?)"),
            "a = $1 AND b IN ($2, $3)"
        );
    }
}
