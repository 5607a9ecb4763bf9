//! `sitemapd_crawler_ranges`: the last good copy of each published crawler IP-range list (its
//! prefixes, one per line, and when it was fetched), so that a restart or an outage of the
//! operator's site keeps verifying against it.

use sqlx::Row;

use super::sql::{impl_sql, Upsert};
use super::{Store, StoreError};

/// A stored range list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRanges {
    pub url: String,
    /// When it was fetched (unix seconds).
    pub fetched_at: i64,
    /// Its prefixes, one CIDR per line.
    pub prefixes: String,
}

impl_sql! {
    /// Every stored range list.
    pub async fn crawler_ranges(&self) -> Result<Vec<StoredRanges>, StoreError> {
        let sql = format!(
            "SELECT {} AS url, {} AS fetched_at, {} AS prefixes FROM sitemapd_crawler_ranges",
            DB::text("url"),
            DB::int("fetched_at"),
            DB::text("prefixes")
        );
        let rows = sqlx::query::<DB>(&sql).fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                Ok(StoredRanges {
                    url: row.try_get("url")?,
                    fetched_at: row.try_get("fetched_at")?,
                    prefixes: row.try_get("prefixes")?,
                })
            })
            .collect()
    }

    /// Stores `list`, replacing the copy of its URL.
    pub async fn save_crawler_ranges(&self, list: &StoredRanges) -> Result<(), StoreError> {
        let sql = DB::placeholders(&format!(
            "INSERT INTO sitemapd_crawler_ranges (url, fetched_at, prefixes) VALUES (?, ?, ?){}",
            DB::on_conflict_update("url", &["fetched_at", "prefixes"])
        ));
        sqlx::query::<DB>(&sql)
            .bind(list.url.as_str())
            .bind(list.fetched_at)
            .bind(list.prefixes.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

impl Store {
    /// Every stored crawler range list.
    pub async fn crawler_ranges(&self) -> Result<Vec<StoredRanges>, StoreError> {
        on!(&self.state, s => s.crawler_ranges().await)
    }

    /// Stores a fetched range list, replacing the older copy of its URL.
    pub async fn save_crawler_ranges(&self, list: &StoredRanges) -> Result<(), StoreError> {
        on!(&self.state, s => s.save_crawler_ranges(list).await)
    }
}
