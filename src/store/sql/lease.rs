//! What replicas share about who keeps a site current (`sitemapd_leases`): the version of each
//! group's stored state, bumped with every save so followers load it again only when it moved,
//! and which replica holds the site's lease, for the status page. The lease itself is a lock
//! held by a connection ([`crate::store::lease`]).

use sqlx::Row;

use super::super::StoreError;
use super::impl_sql;

/// The row of a site (or group) in `sitemapd_leases`, made the first time it is needed.
const LEASE_ROW: &str = "sitemapd_leases (site, version) VALUES (?, 0)";

impl_sql! {
    /// The version of `key`'s stored state: 0 before its first save.
    pub async fn state_version(&self, key: &str) -> Result<i64, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT {} AS version FROM sitemapd_leases WHERE site = ?",
            DB::int("version")
        )))
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) => row.try_get("version")?,
            None => 0,
        })
    }

    /// Notes `holder` as the replica keeping `site` current since `since` (unix seconds).
    pub async fn note_holder(&self, site: &str, holder: &str, since: i64) -> Result<(), StoreError> {
        Self::ensure_lease_row(&self.pool, site).await?;
        sqlx::query::<DB>(&DB::placeholders(
            "UPDATE sitemapd_leases SET holder = ?, since = ? WHERE site = ?",
        ))
        .bind(holder)
        .bind(since)
        .bind(site)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The replica noted as keeping `site` current, and since when.
    pub async fn holder(&self, site: &str) -> Result<Option<(String, i64)>, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT {} AS holder, {} AS since FROM sitemapd_leases \
             WHERE site = ? AND holder IS NOT NULL",
            DB::text("holder"),
            DB::int("since")
        )))
        .bind(site)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) => Some((row.try_get("holder")?, row.try_get("since")?)),
            None => None,
        })
    }
}

impl<DB> super::Sql<DB>
where
    DB: super::Dialect + sqlx::database::HasStatementCache,
    for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    /// Bumps the version of `key`'s stored state, inside the save that changed it.
    pub(super) async fn bump_state_version(
        conn: &mut DB::Connection,
        key: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query::<DB>(&DB::placeholders(&DB::insert_ignoring(LEASE_ROW)))
            .bind(key)
            .execute(&mut *conn)
            .await?;
        sqlx::query::<DB>(&DB::placeholders(
            "UPDATE sitemapd_leases SET version = version + 1 WHERE site = ?",
        ))
        .bind(key)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn ensure_lease_row(pool: &sqlx::Pool<DB>, site: &str) -> Result<(), sqlx::Error>
    where
        for<'c> &'c sqlx::Pool<DB>: sqlx::Executor<'c, Database = DB>,
    {
        sqlx::query::<DB>(&DB::placeholders(&DB::insert_ignoring(LEASE_ROW)))
            .bind(site)
            .execute(pool)
            .await?;
        Ok(())
    }
}
