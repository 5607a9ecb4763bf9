//! `sitemapd_listed`: the URLs a view-fed group last listed, by id, so that a row that leaves
//! the view (or is now skipped, or has another loc) can be submitted to IndexNow as removed.

use sqlx::Row;

use super::super::{IdRange, StoreError, IMPORT_ROWS_PER_STATEMENT};
use super::{impl_sql, placeholder_list, values_rows};

impl_sql! {
    /// The URLs listed for `site` with ids in `range`, in id order.
    pub async fn listed(&self, site: &str, range: IdRange) -> Result<Vec<(i64, String)>, StoreError> {
        let sql = DB::placeholders(&format!(
            "SELECT {} AS id, {} AS loc FROM sitemapd_listed \
             WHERE site = ? AND id >= ? AND id <= ? ORDER BY id",
            DB::int("id"),
            DB::text("loc")
        ));
        let rows = sqlx::query::<DB>(&sql)
            .bind(site)
            .bind(range.first)
            .bind(range.last)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("id")?, row.try_get("loc")?)))
            .collect()
    }

    /// Whether anything is listed for `site`.
    pub async fn any_listed(&self, site: &str) -> Result<bool, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(
            "SELECT 1 FROM sitemapd_listed WHERE site = ? LIMIT 1",
        ))
        .bind(site)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.is_some())
    }

    /// Replaces what is listed for `site` under `forget` (ids) and `note` (ids with their URL).
    pub async fn relist(
        &self,
        site: &str,
        forget: &[i64],
        note: &[(i64, String)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for chunk in forget.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "DELETE FROM sitemapd_listed WHERE site = ? AND id IN ({})",
                placeholder_list(chunk.len())
            ));
            let mut delete = sqlx::query::<DB>(&sql).bind(site);
            for id in chunk {
                delete = delete.bind(*id);
            }
            delete.execute(&mut *tx).await?;
        }
        for chunk in note.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO sitemapd_listed (site, id, loc) VALUES {}",
                values_rows(3, chunk.len())
            ));
            let mut insert = sqlx::query::<DB>(&sql);
            for (id, loc) in chunk {
                insert = insert.bind(site).bind(*id).bind(loc.as_str());
            }
            insert.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Forgets everything listed for `site` (IndexNow is off: nobody would be told).
    pub async fn forget_all_listed(&self, site: &str) -> Result<(), StoreError> {
        sqlx::query::<DB>(&DB::placeholders("DELETE FROM sitemapd_listed WHERE site = ?"))
            .bind(site)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
