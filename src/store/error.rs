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
}
