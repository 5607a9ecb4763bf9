//! The lock that says which replica keeps a site current: held by one connection of its own,
//! so it ends with that connection (a stopped or killed replica frees it at once). A session
//! advisory lock on PostgreSQL, `GET_LOCK` on MySQL/MariaDB; SQLite is one process, which
//! always holds it.

use sqlx::{Connection, MySqlConnection, PgConnection};
use xxhash_rust::xxh3::xxh3_64;

use super::{Backend, Store, StoreError};

/// A connection that can take, and then holds, one site's lease.
pub enum LeaseConnection {
    Postgres {
        conn: PgConnection,
        key: i64,
    },
    Mysql {
        conn: MySqlConnection,
        name: String,
    },
    /// One process: the lease is always this replica's.
    Single,
}

impl Store {
    /// Whether several replicas can share this database (SQLite is one process's file: the
    /// one replica keeps every site current, with no lease).
    pub fn shared_by_replicas(&self) -> bool {
        !matches!(self.state, Backend::Sqlite(_))
    }

    /// Opens the connection `site`'s lease is taken and held with.
    pub async fn lease_connection(&self, site: &str) -> Result<LeaseConnection, StoreError> {
        let hash = xxh3_64(format!("sitemapd lease {site}").as_bytes());
        Ok(match &self.state {
            Backend::Postgres(s) => LeaseConnection::Postgres {
                conn: s.pool.acquire().await?.detach(),
                key: hash as i64,
            },
            Backend::Mysql(s) => {
                let mut conn = s.pool.acquire().await?.detach();
                // GET_LOCK names are server-wide: the database's name goes in, so two
                // deployments on one server (or two tests) never share a lease.
                let name: String = sqlx::query_scalar(
                    "SELECT CONCAT('sitemapd-', MD5(CONCAT(IFNULL(DATABASE(), ''), ' ', ?)))",
                )
                .bind(format!("{hash:016x}"))
                .fetch_one(&mut conn)
                .await?;
                LeaseConnection::Mysql { conn, name }
            }
            Backend::Sqlite(_) => LeaseConnection::Single,
        })
    }
}

impl Store {
    /// The version of `key`'s stored state (bumped by every save of it): 0 before the first.
    pub async fn state_version(&self, key: &str) -> Result<i64, StoreError> {
        on!(&self.state, s => s.state_version(key).await)
    }

    /// Notes `holder` as the replica keeping `site` current since `since`.
    pub async fn note_holder(
        &self,
        site: &str,
        holder: &str,
        since: i64,
    ) -> Result<(), StoreError> {
        on!(&self.state, s => s.note_holder(site, holder, since).await)
    }

    /// The replica noted as keeping `site` current, and since when (unix seconds).
    pub async fn holder(&self, site: &str) -> Result<Option<(String, i64)>, StoreError> {
        on!(&self.state, s => s.holder(site).await)
    }
}

impl LeaseConnection {
    /// Takes the lease if no other replica holds it; true when this connection holds it now.
    pub async fn try_take(&mut self) -> Result<bool, StoreError> {
        Ok(match self {
            Self::Postgres { conn, key } => {
                sqlx::query_scalar::<_, bool>("SELECT pg_try_advisory_lock($1)")
                    .bind(*key)
                    .fetch_one(conn)
                    .await?
            }
            Self::Mysql { conn, name } => {
                let taken: Option<i64> = sqlx::query_scalar("SELECT GET_LOCK(?, 0)")
                    .bind(name.as_str())
                    .fetch_one(conn)
                    .await?;
                taken == Some(1)
            }
            Self::Single => true,
        })
    }

    /// Whether the lease this connection took is still its own (the connection is alive and,
    /// on MySQL, the lock is still held by it).
    pub async fn still_held(&mut self) -> Result<bool, StoreError> {
        Ok(match self {
            Self::Postgres { conn, .. } => {
                conn.ping().await?;
                true
            }
            Self::Mysql { conn, name } => {
                let mine: Option<i64> =
                    sqlx::query_scalar("SELECT IS_USED_LOCK(?) = CONNECTION_ID()")
                        .bind(name.as_str())
                        .fetch_one(conn)
                        .await?;
                mine == Some(1)
            }
            Self::Single => true,
        })
    }
}
