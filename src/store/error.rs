//! What a database operation can fail with.

/// A database failure. Its Display is for logs: it never holds the connection password.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("{applied} of {known} migrations applied; run `sitemapd migrate`")]
    MigrationsPending { applied: i64, known: i64 },
}
