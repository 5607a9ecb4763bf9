//! PostgreSQL backend: how it connects, its dialect, and LISTEN/NOTIFY waking the change-log
//! reader and the followers of a replica that saved a state.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{
    PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, PgQueryResult, PgRow,
};
use sqlx::{ConnectOptions, Postgres, Row, Transaction};
use tokio::sync::Notify;

mod watch;

use super::sql::{Dialect, Sql};
use super::{quote_identifier, StoreError};
use crate::sitemap::entry::Unreadable;
use crate::sitemap::RawEntry;
use crate::store::replica::STANDBY_STATEMENT_TIMEOUT;
use crate::store::{DatabaseUrl, Pooling};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");
const CHANGE_CHANNEL: &str = "sitemapd_changed";
/// Where the replica keeping a site current says it saved a group's state (the payload is the
/// group's key): followers load it at once instead of at their next version poll.
const STATE_CHANNEL: &str = "sitemapd_state";

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

    /// The built-in table's typed columns, read as they are.
    fn entry_columns() -> &'static str {
        "id::int8 AS id, loc::text AS loc, lastmod::timestamptz AS lastmod, \
         NULL::text AS lastmod_unreadable, changefreq::text AS changefreq, \
         priority::float8 AS priority, NULL::text AS priority_text"
    }

    /// Casts make any view with the five columns readable, whatever their exact types. A text
    /// `lastmod` goes through `sitemapd_timestamptz`, which gives NULL where the cast would
    /// fail the whole query, and a text `priority` is parsed here: what is no time or number is
    /// left out and counted, never a failed read.
    fn tolerant_entry_columns() -> &'static str {
        "id::int8 AS id, loc::text AS loc, \
         CASE WHEN pg_typeof(lastmod) IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype) \
         THEN sitemapd_timestamptz(lastmod::text) ELSE lastmod::timestamptz END AS lastmod, \
         CASE WHEN pg_typeof(lastmod) IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype) \
         AND btrim(lastmod::text) <> '' AND sitemapd_timestamptz(lastmod::text) IS NULL \
         THEN lastmod::text END AS lastmod_unreadable, \
         changefreq::text AS changefreq, \
         CASE WHEN pg_typeof(priority) IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype) \
         THEN NULL ELSE priority::float8 END AS priority, \
         CASE WHEN pg_typeof(priority) IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype) \
         THEN priority::text END AS priority_text"
    }

    fn tables_named(names: &str) -> String {
        format!(
            "(SELECT count(*) FROM pg_catalog.pg_class c \
             WHERE c.relname IN ({names}) AND pg_catalog.pg_table_is_visible(c.oid))"
        )
    }

    /// `sitemapd_timestamptz(x)` as a guarded cast: text that does not look like a date and
    /// time reads as NULL, as the function makes it (a date-like text the cast still refuses,
    /// such as February 30th, fails the read).
    fn without_own_functions(sql: String) -> String {
        written_out(&sql)
    }

    fn lastmod_type_query() -> Option<&'static str> {
        Some(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = to_regclass($1) AND attname = 'lastmod' AND NOT attisdropped",
        )
    }

    fn tolerant_instant_key(column: &str) -> String {
        format!(
            "CASE WHEN pg_typeof({column}) IN ('text'::regtype, 'character varying'::regtype, \
             'character'::regtype) THEN sitemapd_timestamptz({column}::text) \
             ELSE {column}::timestamptz END"
        )
    }

    const SUMMARISES: bool = true;

    fn time(column: &str) -> String {
        format!("{column}::timestamptz")
    }

    fn read_time(row: &PgRow, name: &str) -> Option<DateTime<Utc>> {
        row.try_get(name).ok().flatten()
    }

    fn instant_key(column: &str) -> String {
        format!("{column}::timestamptz")
    }

    fn raw_entry(row: &PgRow) -> RawEntry {
        let priority = super::rows::priority_of_text(row.try_get("priority_text").ok().flatten());
        RawEntry {
            id: row.try_get("id").unwrap_or_default(),
            loc: row.try_get("loc").ok().flatten(),
            lastmod: Self::read_time(row, "lastmod"),
            changefreq: row.try_get("changefreq").ok().flatten(),
            priority: row.try_get("priority").ok().flatten().or(priority.0),
            unreadable: Unreadable::of(
                row.try_get("lastmod_unreadable").ok().flatten(),
                priority.1,
            ),
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
    /// A pool on `url`; `read_only`: a source database of its own (perhaps a hot standby),
    /// whose sessions are read-only and whose statements end within
    /// [`STANDBY_STATEMENT_TIMEOUT`].
    pub fn connect(
        url: &DatabaseUrl,
        pooling: &Pooling,
        read_only: bool,
    ) -> Result<Self, StoreError> {
        let timeout = match read_only {
            true => pooling.statement_timeout.min(STANDBY_STATEMENT_TIMEOUT),
            false => pooling.statement_timeout,
        };
        let statement_timeout = format!("{}ms", timeout.as_millis());
        let read_only_sessions = if read_only { "on" } else { "off" };
        // Timestamps without zone in a CMS view are read as UTC, whatever the server's default.
        let options = PgConnectOptions::from_str(url.expose())?
            .options([
                ("statement_timeout", statement_timeout.as_str()),
                ("timezone", "UTC"),
                ("default_transaction_read_only", read_only_sessions),
            ])
            .application_name("sitemapd")
            .disable_statement_logging();
        let pool = PgPoolOptions::new()
            .max_connections(pooling.max_connections)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options);
        Ok(Self::new(pool, &pooling.first_source, read_only))
    }

    /// Notified whenever our triggers log a change (`pg_notify` on [`CHANGE_CHANNEL`]): wakes
    /// the change-log reader, which reads the log itself, so a lost notification only delays
    /// it. The listener ends when the returned handle is dropped.
    pub fn wake_on_notify(&self) -> Arc<Notify> {
        let wake = Arc::new(Notify::new());
        let weak = Arc::downgrade(&wake);
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let heard = || match weak.upgrade() {
                Some(wake) => {
                    wake.notify_one();
                    true
                }
                None => false,
            };
            listen(&pool, CHANGE_CHANNEL, heard, || weak.strong_count() > 0).await
        });
        wake
    }
}

impl Sql<Postgres> {
    /// Tells the followers that `key`'s stored state moved (after the save committed).
    pub async fn announce_state(&self, key: &str) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(STATE_CHANNEL)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A count that moves whenever a replica announces a saved state on this database (any
    /// group's: a follower then reads its own group's version, one row). One listening
    /// connection per process, shared by every follower, ending once none holds the returned
    /// sender.
    pub fn state_announcements(&self) -> Arc<tokio::sync::watch::Sender<u64>> {
        let mut shared = crate::sync::lock(&self.state_listener);
        if let Some(sender) = shared.upgrade() {
            return sender;
        }
        let sender = Arc::new(tokio::sync::watch::channel(0u64).0);
        *shared = Arc::downgrade(&sender);
        let weak = Arc::downgrade(&sender);
        let pool = self.pool.clone();
        tokio::spawn(async move {
            listen(
                &pool,
                STATE_CHANNEL,
                || match weak.upgrade() {
                    Some(sender) => {
                        sender.send_modify(|n| *n = n.wrapping_add(1));
                        true
                    }
                    None => false,
                },
                || weak.strong_count() > 0,
            )
            .await
        });
        sender
    }
}

/// Listens on `channel` for as long as `wanted` says so (asked at least every 5 s), calling
/// `heard` for each notification (it says whether anyone still wants them); reconnects when
/// the connection drops.
async fn listen(
    pool: &PgPool,
    channel: &str,
    mut heard: impl FnMut() -> bool,
    wanted: impl Fn() -> bool,
) {
    loop {
        let mut listener = match connect_listener(pool, channel).await {
            Ok(listener) => listener,
            Err(e) => {
                tracing::debug!(error = %e, channel, "cannot listen for notifications; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
                if !wanted() {
                    return;
                }
                continue;
            }
        };
        loop {
            if !wanted() {
                return;
            }
            let got = tokio::time::timeout(Duration::from_secs(5), listener.try_recv()).await;
            match got {
                Ok(Ok(Some(_))) => {
                    if !heard() {
                        return;
                    }
                }
                // Timed out: see whether anyone still reads.
                Err(_) => {}
                // The connection dropped: listen again.
                Ok(Ok(None)) | Ok(Err(_)) => break,
            }
        }
    }
}

/// A listener on a connection of its own: a pool of one, made with the shared pool's options but
/// outside it, as the lease's connection is. A LISTEN holds its connection for as long as the
/// process runs, so one taken from the shared pool is one fewer for the sweeps and the requests
/// (with `DATABASE_MAX_CONNECTIONS=1` none was left, and no file was ever served).
async fn connect_listener(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let own = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with(pool.connect_options().as_ref().clone());
    let mut listener = PgListener::connect_with(&own).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// The call of our tolerant cast, as the tolerant columns write it.
const OWN_CAST: &str = "sitemapd_timestamptz(";

/// Text a timestamp cast accepts in the forms CMSs store: a date, then optionally a time and
/// a zone.
const TIMESTAMP_LIKE: &str =
    r"'^\s*\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)?\s*$'";

/// `sql` with each `sitemapd_timestamptz(x)` replaced by a guarded cast of `x`.
fn written_out(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() * 2);
    let mut rest = sql;
    while let Some(at) = rest.find(OWN_CAST) {
        out.push_str(&rest[..at]);
        let inner_start = at + OWN_CAST.len();
        let Some(len) = closing_paren(&rest[inner_start..]) else {
            break;
        };
        let inner = &rest[inner_start..inner_start + len];
        out.push_str(&format!(
            "(CASE WHEN ({inner}) ~ {TIMESTAMP_LIKE} THEN ({inner})::timestamptz END)"
        ));
        rest = &rest[inner_start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Where the parenthesis closing an argument list that starts `text` is.
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_tolerant_cast_is_written_out_for_a_source_without_it() {
        let sql =
            "SELECT sitemapd_timestamptz(lastmod::text) AS a, sitemapd_timestamptz(f(x)::text) b";
        let out = written_out(sql);
        assert!(!out.contains("sitemapd_"), "{out}");
        assert!(out.contains("(CASE WHEN (lastmod::text) ~ '"), "{out}");
        assert!(
            out.contains("THEN (f(x)::text)::timestamptz END) b"),
            "{out}"
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
