//! What a database operation can fail with.

/// A database failure. Its cause is its source (shown with [`crate::error::Chain`]); neither
/// ever holds the connection password.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error("migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("{applied} of {known} migrations applied; run `sitemapd migrate`")]
    MigrationsPending { applied: i64, known: i64 },
    #[error(
        "the entries are read from SOURCE_DATABASE_URL, where sitemapd writes nothing: import \
         into the source's primary (DATABASE_URL set to it, SOURCE_DATABASE_URL unset)"
    )]
    ReadOnlySource,
}

impl StoreError {
    /// Whether the database gave up on the statement because of another transaction (a
    /// deadlock or serialization failure, SQLSTATE class 40, or SQLite busy): the same
    /// statement may succeed when run again.
    pub fn is_conflict(&self) -> bool {
        let StoreError::Database(sqlx::Error::Database(e)) = self else {
            return false;
        };
        let code = e.code();
        let code = code.as_deref().unwrap_or_default();
        // SQLite: SQLITE_BUSY (5) and its extended codes (…, 517 BUSY_SNAPSHOT).
        code.starts_with("40") || code.parse::<u32>().is_ok_and(|c| c & 0xff == 5)
    }

    /// Whether a read of a source database of its own may succeed when run again: the server
    /// cancelled it because of replication (a standby's conflict with recovery: SQLSTATE
    /// 40001, or 40P01 for a buffer-pin deadlock, 57P01 where recovery ended the session; a
    /// MySQL/MariaDB deadlock). A refused connection is not: a source that cannot be read says
    /// so at once (`/readyz`).
    pub fn is_cancelled_by_replication(&self) -> bool {
        let StoreError::Database(sqlx::Error::Database(e)) = self else {
            return false;
        };
        let code = e.code();
        let code = code.as_deref().unwrap_or_default();
        code.starts_with("40") || code == "57P01"
    }
}

/// Times a write that another transaction made the database give up is run again.
const CONFLICT_RETRIES: usize = 3;

/// Runs `write` (one transaction, safe to run again once rolled back) until it ends other
/// than by a conflict ([`StoreError::is_conflict`]), at most [`CONFLICT_RETRIES`] more times.
pub(crate) async fn retry_on_conflict<F, Fut, T>(mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut tries = 0;
    loop {
        match write().await {
            Err(e) if e.is_conflict() && tries < CONFLICT_RETRIES => tries += 1,
            done => return done,
        }
    }
}
