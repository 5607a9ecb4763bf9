//! The change log, the same on every backend: the triggers count changes per watched source
//! (`sitemapd_changes.version`) and log the ids each version touched (`sitemapd_change_log`);
//! each site keeps the version its stored files cover (`sitemapd_cursors`).

use sqlx::Row;

use super::super::{LogReading, StoreError};
use super::impl_sql;

impl_sql! {
    /// The version of `source`'s change log, and the source's highest id where the backend
    /// watches it; `None` when the source is not watched.
    pub async fn change_version(&self, source: &str) -> Result<Option<(i64, Option<i64>)>, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT version, {} AS top FROM sitemapd_changes WHERE source = ?",
            DB::highest_entry_id()
        )))
        .bind(source)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) => Some((row.try_get("version")?, row.try_get("top")?)),
            None => None,
        })
    }

    /// What was logged for `source` after version `after`.
    pub async fn read_change_log(&self, source: &str, after: i64) -> Result<LogReading, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT MIN(version) AS first, MAX(version) AS last, MIN(lo) AS lo, MAX(hi) AS hi, \
                    {} AS top \
             FROM sitemapd_change_log WHERE source = ? AND version > ?",
            DB::highest_entry_id()
        )))
        .bind(source)
        .bind(after)
        .fetch_one(&self.pool)
        .await?;
        Ok(LogReading::from_row(&row)?)
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
}
