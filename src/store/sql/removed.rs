//! URLs that left the built-in table (its triggers note a deleted row's loc, and the former loc
//! of a row whose loc changed), read for IndexNow and cleared once read.

use sqlx::Row;

use super::super::StoreError;
use super::impl_sql;

impl_sql! {
    /// Up to `limit` removed URLs, oldest first, with their ids.
    pub async fn removed(&self, limit: i64) -> Result<Vec<(i64, String)>, StoreError> {
        let sql = DB::placeholders(&format!(
            "SELECT {} AS id, {} AS loc FROM sitemapd_removed ORDER BY id LIMIT ?",
            DB::int("id"),
            DB::text("loc")
        ));
        let rows = sqlx::query::<DB>(&sql).bind(limit).fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| Ok((row.try_get("id")?, row.try_get("loc")?)))
            .collect()
    }

    /// Clears the removed URLs with ids from `first` to `last`; says how many it cleared (fewer
    /// than were read when another replica cleared them first).
    pub async fn forget_removed(&self, first: i64, last: i64) -> Result<u64, StoreError> {
        let sql = DB::placeholders("DELETE FROM sitemapd_removed WHERE id BETWEEN ? AND ?");
        let done = sqlx::query::<DB>(&sql)
            .bind(first)
            .bind(last)
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done))
    }
}
