//! URLs that left the built-in table (its triggers note a deleted row's loc, and the former loc
//! of a row whose loc changed), read for IndexNow by every site the table feeds.
//!
//! Several sites may read one built-in table, and each must see every removed URL (each submits
//! those under its own base URL), so a row is not cleared when one site reads it: each reader
//! (a group, by its key) keeps how far it read in `sitemapd_removed_read`, and rows every reader
//! has passed are cleared. A reader that has not read for [`READER_FORGOTTEN_SECS`] (a site
//! removed from the configuration) no longer holds rows back.

use sqlx::Row;

use super::super::StoreError;
use super::impl_sql;

/// A reader silent this long is forgotten, so a site taken out of the configuration does not
/// keep every removed URL forever (seven days).
pub const READER_FORGOTTEN_SECS: i64 = 7 * 24 * 3600;

impl_sql! {
    /// Notes `reader` (a group's key) as a reader of removed URLs, from the oldest row kept,
    /// unless it is one already; and says it is alive.
    pub async fn register_removed_reader(&self, reader: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query::<DB>(&DB::placeholders(&DB::insert_ignoring(
            "sitemapd_removed_read (site, through_id, read_at) VALUES (?, 0, ?)",
        )))
        .bind(reader)
        .bind(now)
        .execute(&self.pool)
        .await?;
        sqlx::query::<DB>(&DB::placeholders(
            "UPDATE sitemapd_removed_read SET read_at = ? WHERE site = ?",
        ))
        .bind(now)
        .bind(reader)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// How far `reader` has read (the highest removed id it has taken); `None` if it is no
    /// reader.
    pub async fn removed_read_through(&self, reader: &str) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT {} AS through_id FROM sitemapd_removed_read WHERE site = ?",
            DB::int("through_id")
        )))
        .bind(reader)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) => Some(row.try_get("through_id")?),
            None => None,
        })
    }

    /// Up to `limit` removed URLs with ids above `after`, oldest first, with their ids.
    pub async fn removed_after(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        if self.read_only && !self.has_tables(&["sitemapd_removed"]).await? {
            return Ok(Vec::new());
        }
        let sql = DB::placeholders(&format!(
            "SELECT {} AS id, {} AS loc FROM sitemapd_removed WHERE id > ? ORDER BY id LIMIT ?",
            DB::int("id"),
            DB::text("loc")
        ));
        let rows = sqlx::query::<DB>(&sql)
            .bind(after)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("id")?, row.try_get("loc")?)))
            .collect()
    }

    /// Moves `reader` from `from` to `to`; false when another replica moved it first (that
    /// replica submits the batch).
    pub async fn advance_removed_read(
        &self,
        reader: &str,
        from: i64,
        to: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        let moved = sqlx::query::<DB>(&DB::placeholders(
            "UPDATE sitemapd_removed_read SET through_id = ?, read_at = ? \
             WHERE site = ? AND through_id = ?",
        ))
        .bind(to)
        .bind(now)
        .bind(reader)
        .bind(from)
        .execute(&self.pool)
        .await?;
        Ok(DB::rows_affected(&moved) == 1)
    }

    /// Clears the removed URLs every living reader has read (all of them when nobody reads),
    /// and forgets readers silent since `forgotten_before`.
    pub async fn forget_removed_read_by_all(&self, forgotten_before: i64) -> Result<(), StoreError> {
        sqlx::query::<DB>(&DB::placeholders(
            "DELETE FROM sitemapd_removed_read WHERE read_at < ?",
        ))
        .bind(forgotten_before)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query::<DB>(&format!(
            "SELECT {} AS readers, {} AS through_id FROM sitemapd_removed_read",
            DB::int("COUNT(*)"),
            DB::int("COALESCE(MIN(through_id), 0)")
        ))
        .fetch_one(&self.pool)
        .await?;
        let readers: i64 = row.try_get("readers")?;
        let through: i64 = row.try_get("through_id")?;
        if readers == 0 {
            sqlx::query::<DB>("DELETE FROM sitemapd_removed")
                .execute(&self.pool)
                .await?;
        } else {
            sqlx::query::<DB>(&DB::placeholders("DELETE FROM sitemapd_removed WHERE id <= ?"))
                .bind(through)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }
}
