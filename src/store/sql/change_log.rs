//! The change log, the same on every backend: the triggers count changes per watched source
//! (`sitemapd_changes.version`) and log the ids each version touched (`sitemapd_change_log`);
//! each site keeps the version its stored files cover (`sitemapd_cursors`).

use sqlx::Row;

use super::super::{IdRange, LogReading, LoggedBucket, StoreError, BUILTIN_SOURCE};

/// Logged keys within one bucket of this many ids are read as one range (a file holds tens of
/// thousands of ids): a burst of writes to neighbouring rows costs one range, while keys far
/// apart (a post and its new revision) stay apart and cost their own files only.
const KEY_BUCKET: i64 = 4096;
use super::impl_sql;

impl_sql! {
    /// The version of `source`'s change log, and the source's highest id where the backend
    /// watches it; `None` when the source is not watched.
    pub async fn change_version(&self, source: &str) -> Result<Option<(i64, Option<i64>)>, StoreError> {
        // A source database of its own has the log only where our migrations reached its
        // primary: asked of its catalogue first, so the server logs no error.
        if self.read_only && !self.has_tables(&["sitemapd_changes", "sitemapd_change_log"]).await? {
            return Ok(None);
        }
        let top = match source == BUILTIN_SOURCE {
            true => DB::highest_entry_id(),
            false => DB::int("NULL"),
        };
        let row = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT version, {top} AS top FROM sitemapd_changes WHERE source = ?"
        )))
        .bind(source)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) => Some((row.try_get("version")?, row.try_get("top")?)),
            None => None,
        })
    }

    /// What was logged for `source` after version `after`: the keys in buckets of
    /// [`KEY_BUCKET`] ids (each bucket's lowest and highest), so keys far apart stay apart.
    pub async fn read_change_log(&self, source: &str, after: i64) -> Result<LogReading, StoreError> {
        let rows = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT MIN(version) AS first, MAX(version) AS last, MIN(lo) AS lo, MAX(hi) AS hi \
             FROM sitemapd_change_log WHERE source = ? AND version > ? \
             GROUP BY {} ORDER BY MIN(lo)",
            DB::int_div("lo", KEY_BUCKET)
        )))
        .bind(source)
        .bind(after)
        .fetch_all(&self.pool)
        .await?;
        let mut buckets = Vec::with_capacity(rows.len());
        for row in &rows {
            buckets.push(LoggedBucket {
                first: row.try_get("first")?,
                last: row.try_get("last")?,
                keys: IdRange { first: row.try_get("lo")?, last: row.try_get("hi")? },
            });
        }
        // The built-in table's highest id (MySQL: a TRUNCATE fires no trigger); a view's
        // tables are not `sitemap_entries`, which its database may not even hold.
        let top = match source == BUILTIN_SOURCE {
            true => sqlx::query_scalar::<DB, Option<i64>>(&format!("SELECT {}", DB::highest_entry_id()))
                .fetch_one(&self.pool)
                .await?,
            false => None,
        };
        Ok(LogReading::from_buckets(&buckets, top))
    }

    /// Deletes what was logged for `source` up to `through` (a bounded part of it where the
    /// database deletes a bulk load's log slowly: the rest goes at the next trims).
    pub async fn trim_change_log(&self, source: &str, through: i64) -> Result<(), StoreError> {
        sqlx::query::<DB>(&DB::placeholders(&DB::bounded_delete(
            "DELETE FROM sitemapd_change_log WHERE source = ? AND version <= ?",
        )))
        .bind(source)
        .bind(through)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The change-log version the site's stored files cover.
    pub async fn load_cursor(&self, site: &str) -> Result<Option<i64>, StoreError> {
        Ok(sqlx::query_scalar::<DB, i64>(&DB::placeholders(
            "SELECT version FROM sitemapd_cursors WHERE site = ?",
        ))
        .bind(site)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Records that the site's stored files cover the change log through `version`; never
    /// moves the cursor back (another replica may have covered more).
    pub async fn save_cursor(&self, site: &str, version: i64) -> Result<(), StoreError> {
        sqlx::query::<DB>(&DB::placeholders(&DB::insert_ignoring(
            "sitemapd_cursors (site, version) VALUES (?, ?)",
        )))
        .bind(site)
        .bind(version)
        .execute(&self.pool)
        .await?;
        sqlx::query::<DB>(&DB::placeholders(
            "UPDATE sitemapd_cursors SET version = ? WHERE site = ? AND version < ?",
        ))
        .bind(version)
        .bind(site)
        .bind(version)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Logs a change of `range` in `source`'s change log, as the source's triggers do, so the
    /// replica keeping the site current hears of rows a follower's render met; false when the
    /// source has no change log (its holder's periodic sweep finds the change).
    pub async fn log_change(&self, source: &str, range: IdRange) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let bumped = sqlx::query::<DB>(&DB::placeholders(
            "UPDATE sitemapd_changes SET version = version + 1 WHERE source = ?",
        ))
        .bind(source)
        .execute(&mut *tx)
        .await?;
        if DB::rows_affected(&bumped) == 0 {
            return Ok(false);
        }
        sqlx::query::<DB>(&DB::placeholders(
            "INSERT INTO sitemapd_change_log (source, version, lo, hi) \
             SELECT source, version, ?, ? FROM sitemapd_changes WHERE source = ?",
        ))
        .bind(range.first)
        .bind(range.last)
        .bind(source)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
