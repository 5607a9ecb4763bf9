//! URLs that left the built-in table (its triggers note a deleted row's loc, and the former loc
//! of a row whose loc changed), read for IndexNow and cleared once read.

use sqlx::Row;

use super::super::StoreError;
use super::super::IMPORT_ROWS_PER_STATEMENT;
use super::{impl_sql, placeholder_list};

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

    /// Clears the removed URLs with these ids (exactly those: a row committed later with an id
    /// among them stays for the next read).
    pub async fn forget_removed(&self, ids: &[i64]) -> Result<(), StoreError> {
        for chunk in ids.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "DELETE FROM sitemapd_removed WHERE id IN ({})",
                placeholder_list(chunk.len())
            ));
            let mut delete = sqlx::query::<DB>(&sql);
            for id in chunk {
                delete = delete.bind(*id);
            }
            delete.execute(&self.pool).await?;
        }
        Ok(())
    }

    /// Clears every removed URL (nobody is told of them).
    pub async fn forget_all_removed(&self) -> Result<(), StoreError> {
        sqlx::query::<DB>("DELETE FROM sitemapd_removed")
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
