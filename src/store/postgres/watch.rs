//! Watching a source other than the built-in table (a view over a CMS's tables, or a CMS table
//! itself): statement triggers on the tables it reads log their changes under the source's name,
//! so they show as fast as changes to `sitemap_entries`. Needs the TRIGGER privilege on those
//! tables; without it the source is refreshed every `SITEMAP_REFRESH_SECS` instead.

use sqlx::Row;

use super::super::watch::trigger_tag;
use super::super::{quote_identifier, StoreError};
use super::PgStore;

/// The tables a source reads (itself, if it is a table), through views over views, each with
/// its single-column integer primary key when it has one.
const BASE_TABLES: &str = "\
WITH RECURSIVE rel(oid) AS (
  SELECT to_regclass($1)::oid
  UNION
  SELECT d.refobjid
  FROM rel
  JOIN pg_rewrite r ON r.ev_class = rel.oid
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                  AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> rel.oid
)
SELECT c.oid::regclass::text AS tbl,
  (SELECT a.attname::text FROM pg_index i
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
   WHERE i.indrelid = c.oid AND i.indisprimary AND i.indnatts = 1
     AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)) AS key
FROM rel JOIN pg_class c ON c.oid = rel.oid
WHERE c.relkind IN ('r', 'p')
ORDER BY 1";

/// What a source is made of: the definitions of the views it reads (through views over views)
/// and the tables behind them, as one hash. A view redefined (`CREATE OR REPLACE VIEW`) fires
/// no trigger: comparing this at each refresh is how its change shows.
const DEFINITION: &str = "\
WITH RECURSIVE rel(oid) AS (
  SELECT to_regclass($1)::oid
  UNION
  SELECT d.refobjid
  FROM rel
  JOIN pg_rewrite r ON r.ev_class = rel.oid
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                  AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> rel.oid
)
SELECT md5(COALESCE(string_agg(c.oid::regclass::text || ':' || c.relkind::text || ':'
         || COALESCE(pg_get_viewdef(c.oid), ''), ';' ORDER BY c.oid::regclass::text), ''))
FROM rel JOIN pg_class c ON c.oid = rel.oid";

/// The events each watched table gets a trigger for, with the transition tables it reads.
const EVENTS: [(&str, &str, &str); 4] = [
    ("INSERT", "ins", "REFERENCING NEW TABLE AS sitemapd_new"),
    (
        "UPDATE",
        "upd",
        "REFERENCING OLD TABLE AS sitemapd_old NEW TABLE AS sitemapd_new",
    ),
    ("DELETE", "del", "REFERENCING OLD TABLE AS sitemapd_old"),
    ("TRUNCATE", "trunc", ""),
];

impl PgStore {
    /// Puts the change triggers on the tables behind `source` (those it has already are kept)
    /// and marks the source as watched; returns the tables. Nothing is changed if any table
    /// cannot be watched.
    pub async fn watch_source(&self, source: &str) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(BASE_TABLES)
            .bind(quote_identifier(source))
            .fetch_all(&self.pool)
            .await?;
        let mut tables = Vec::with_capacity(rows.len());
        let tag = trigger_tag(source);
        let mut tx = self.pool.begin().await?;
        for row in &rows {
            let table: String = row.try_get("tbl")?;
            let key: Option<String> = row.try_get("key")?;
            for (event, short, transitions) in EVENTS {
                let name = format!("sitemapd_{tag}_{short}");
                let exists: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2)",
                )
                .bind(&table)
                .bind(&name)
                .fetch_one(&mut *tx)
                .await?;
                if exists {
                    continue;
                }
                sqlx::query(&format!(
                    "CREATE TRIGGER {name} AFTER {event} ON {table} {transitions} \
                     FOR EACH STATEMENT EXECUTE FUNCTION sitemapd_source_changed({}, {})",
                    literal(source),
                    literal(key.as_deref().unwrap_or_default()),
                ))
                .execute(&mut *tx)
                .await?;
            }
            tables.push(table);
        }
        if !tables.is_empty() {
            sqlx::query(
                "INSERT INTO sitemapd_changes (source, version) VALUES ($1, 0) ON CONFLICT DO NOTHING",
            )
            .bind(source)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(tables)
    }
}

impl PgStore {
    /// Drops every trigger watching `source` and forgets its change log; says which
    /// (`table.trigger`).
    pub async fn unwatch_source(&self, source: &str) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT tgrelid::regclass::text AS tbl, tgname::text AS name FROM pg_trigger \
             WHERE tgname LIKE $1 ORDER BY 1, 2",
        )
        .bind(format!("sitemapd\\_{}\\_%", trigger_tag(source)))
        .fetch_all(&self.pool)
        .await?;
        let mut tx = self.pool.begin().await?;
        let mut dropped = Vec::new();
        for row in &rows {
            let (table, name): (String, String) = (row.try_get("tbl")?, row.try_get("name")?);
            sqlx::query(&format!("DROP TRIGGER IF EXISTS {name} ON {table}"))
                .execute(&mut *tx)
                .await?;
            dropped.push(format!("{table}.{name}"));
        }
        for statement in [
            "DELETE FROM sitemapd_changes WHERE source = $1",
            "DELETE FROM sitemapd_change_log WHERE source = $1",
        ] {
            sqlx::query(statement)
                .bind(source)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(dropped)
    }

    /// The tables behind a watched source that lack any of its triggers; empty when the
    /// source is not watched.
    pub async fn unwatched_tables(&self, source: &str) -> Result<Vec<String>, StoreError> {
        let watched: Option<i64> =
            sqlx::query_scalar("SELECT version FROM sitemapd_changes WHERE source = $1")
                .bind(source)
                .fetch_optional(&self.pool)
                .await?;
        if watched.is_none() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(BASE_TABLES)
            .bind(quote_identifier(source))
            .fetch_all(&self.pool)
            .await?;
        let tag = trigger_tag(source);
        let mut lost = Vec::new();
        for row in &rows {
            let table: String = row.try_get("tbl")?;
            let present: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = ANY($2)",
            )
            .bind(&table)
            .bind(
                EVENTS
                    .map(|(_, short, _)| format!("sitemapd_{tag}_{short}"))
                    .to_vec(),
            )
            .fetch_one(&self.pool)
            .await?;
            if present < EVENTS.len() as i64 {
                lost.push(table);
            }
        }
        Ok(lost)
    }
}

impl PgStore {
    /// The hash of `source`'s definition (see [`DEFINITION`]).
    pub async fn source_definition(&self, source: &str) -> Result<String, StoreError> {
        Ok(sqlx::query_scalar(DEFINITION)
            .bind(quote_identifier(source))
            .fetch_one(&self.pool)
            .await?)
    }
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
