//! Locks a test holds on a table of its database, so the service waits on it.

use super::databases::{TestDb, TestPool};

impl TestDb {
    /// Blocks every read of sitemap_entries until [`Held::release`]: a render started meanwhile
    /// waits for its rows. `None` on SQLite, whose readers never wait for a writer (WAL).
    pub async fn hold_entries(&self) -> Option<Held> {
        self.hold_table("sitemap_entries").await
    }

    /// Blocks every read and write of `table` until [`Held::release`]; `None` on SQLite.
    pub async fn hold_table(&self, table: &str) -> Option<Held> {
        self.hold(
            &format!("BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"),
            &format!("LOCK TABLES {table} WRITE"),
        )
        .await
    }

    /// Blocks every write of `table` (reads go on) until [`Held::release`]; `None` on SQLite.
    pub async fn hold_writes(&self, table: &str) -> Option<Held> {
        self.hold(
            &format!("BEGIN; LOCK TABLE {table} IN EXCLUSIVE MODE"),
            &format!("LOCK TABLES {table} READ"),
        )
        .await
    }

    /// Runs the locking statement of the server on a connection kept until released.
    async fn hold(&self, postgres: &str, mariadb: &str) -> Option<Held> {
        match &self.pool {
            TestPool::Postgres(pool) => {
                let mut conn = pool.acquire().await.unwrap();
                sqlx::raw_sql(postgres).execute(&mut *conn).await.unwrap();
                Some(Held::Postgres(conn))
            }
            TestPool::MariaDb(pool) => {
                let mut conn = pool.acquire().await.unwrap();
                sqlx::raw_sql(mariadb).execute(&mut *conn).await.unwrap();
                Some(Held::MariaDb(conn))
            }
            TestPool::Sqlite(_) => None,
        }
    }
}

/// A connection that holds a lock on sitemap_entries (see [`TestDb::hold_entries`]).
pub enum Held {
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>),
    MariaDb(sqlx::pool::PoolConnection<sqlx::MySql>),
}

impl Held {
    /// Runs `sql` on the connection holding the lock (a write to the locked table).
    pub async fn exec(&mut self, sql: &str) {
        let done = match self {
            Held::Postgres(conn) => sqlx::raw_sql(sql).execute(&mut **conn).await.map(drop),
            Held::MariaDb(conn) => sqlx::raw_sql(sql).execute(&mut **conn).await.map(drop),
        };
        done.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    pub async fn release(self) {
        let released = match self {
            Held::Postgres(mut conn) => sqlx::raw_sql("COMMIT").execute(&mut *conn).await.map(drop),
            Held::MariaDb(mut conn) => sqlx::raw_sql("UNLOCK TABLES")
                .execute(&mut *conn)
                .await
                .map(drop),
        };
        released.expect("release the lock");
    }
}
