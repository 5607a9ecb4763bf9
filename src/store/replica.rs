//! A source database of its own (`SOURCE_DATABASE_URL`, a site's `source_database_url`): a
//! PostgreSQL hot standby, a MySQL/MariaDB replica, or any database sitemapd only reads.
//!
//! - Its pools are opened read-only (PostgreSQL: `default_transaction_read_only`; MySQL:
//!   `SET SESSION TRANSACTION READ ONLY`; SQLite: a read-only file) and nothing that writes
//!   is sent to it; statements on PostgreSQL are bounded by [`STANDBY_STATEMENT_TIMEOUT`], well
//!   under the default `max_standby_streaming_delay` (30 s).
//! - A statement the server cancels because of replication (a standby's "conflict with
//!   recovery", SQLSTATE 40001; a dropped connection) is run again after a pause, up to
//!   [`RETRIES`] times: a replay never fails a sweep.
//! - Every [`LAG_POLL`] it is asked what it is and how far behind its primary
//!   (`sql/replica.rs`), for the status page, `/status.json` and `sitemapd_source_lag_seconds`.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Backend, DatabaseKind, DatabaseUrl, Pooling, Store, StoreError};

/// Longest one statement runs on a PostgreSQL source database of its own (or
/// `DATABASE_STATEMENT_TIMEOUT_SECS`, if shorter).
pub const STANDBY_STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Times a statement cancelled by replication is run again.
const RETRIES: u32 = 6;
/// The first pause before running it again; each next one doubles (0.2 s … 6.4 s).
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// How often the source database is asked for its lag.
const LAG_POLL: Duration = Duration::from_secs(5);
/// How long that question may take.
const LAG_WAIT: Duration = Duration::from_secs(5);

/// What a source database is to its primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceRole {
    /// A PostgreSQL hot standby (in recovery).
    Standby,
    /// A MySQL/MariaDB replica (it has a replication source).
    Replica,
    /// Not replicating: a primary, or a database that replicates nothing.
    Primary,
    /// Not known yet, or it cannot say (no privilege to ask, not reachable).
    Unknown,
}

/// What one look at the source database found.
#[derive(Debug, Clone, PartialEq)]
pub struct LagReading {
    pub role: SourceRole,
    /// Seconds behind its primary; `None` when not known (replication stopped, nothing
    /// replayed yet).
    pub lag_seconds: Option<f64>,
}

/// A source database of its own, as the status page and `/status.json` show it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourceStatus {
    /// `postgresql`, `mysql` or `sqlite`.
    pub database: &'static str,
    /// Host and database name (never the password).
    pub url: String,
    pub role: SourceRole,
    pub lag_seconds: Option<f64>,
    /// When it was last asked (RFC 3339); `None` before the first answer.
    pub checked_at: Option<String>,
    /// Why the last question failed, if it did.
    pub error: Option<String>,
    /// Statements cancelled by replication (or a lost connection) and run again.
    pub retried_statements: u64,
}

/// One source database of its own, shared by every site and group that reads it.
pub(super) struct SourceDatabase {
    kind: DatabaseKind,
    url: String,
    status: Mutex<Looked>,
    retried: std::sync::atomic::AtomicU64,
}

/// The last look at it.
#[derive(Debug, Default)]
struct Looked {
    reading: Option<LagReading>,
    at: Option<DateTime<Utc>>,
    error: Option<String>,
}

impl SourceDatabase {
    pub(super) fn status(&self) -> SourceStatus {
        let looked = crate::sync::lock(&self.status);
        SourceStatus {
            database: match self.kind {
                DatabaseKind::Postgres => "postgresql",
                DatabaseKind::Mysql => "mysql",
                DatabaseKind::Sqlite => "sqlite",
            },
            url: self.url.clone(),
            role: looked
                .reading
                .as_ref()
                .map_or(SourceRole::Unknown, |r| r.role),
            lag_seconds: looked.reading.as_ref().and_then(|r| r.lag_seconds),
            checked_at: looked.at.map(|at| at.to_rfc3339()),
            error: looked.error.clone(),
            retried_statements: self.retried.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Keeps what a look found; a source that stops answering, or answers again, is logged.
    fn record(&self, look: Result<LagReading, String>) {
        let mut looked = crate::sync::lock(&self.status);
        match (&looked.error, &look) {
            (None, Err(e)) => {
                tracing::warn!(source = %self.url, error = %e, "the source database does not answer")
            }
            (Some(_), Ok(_)) => {
                tracing::info!(source = %self.url, "the source database answers again")
            }
            _ => {}
        }
        looked.at = Some(Utc::now());
        match look {
            Ok(reading) => {
                looked.reading = Some(reading);
                looked.error = None;
            }
            Err(e) => {
                looked.reading = None;
                looked.error = Some(e);
            }
        }
    }
}

/// The source databases a process opened, by URL, and how to open more.
pub(super) struct Opened {
    pooling: Pooling,
    databases: tokio::sync::Mutex<Vec<(String, Backend, Arc<SourceDatabase>)>>,
}

impl Opened {
    pub(super) fn new(pooling: Pooling) -> Self {
        Self {
            pooling,
            databases: Default::default(),
        }
    }

    /// The pool on `url` (opened the first time, with its lag watched while it is used).
    pub(super) async fn open(
        &self,
        url: &DatabaseUrl,
    ) -> Result<(Backend, Arc<SourceDatabase>), StoreError> {
        let mut databases = self.databases.lock().await;
        if let Some((_, backend, database)) =
            databases.iter().find(|(known, ..)| known == url.expose())
        {
            return Ok((backend.clone(), database.clone()));
        }
        let backend = Backend::connect(url, &self.pooling, true).await?;
        let database = Arc::new(SourceDatabase {
            kind: url.kind(),
            url: url.redacted(),
            status: Mutex::new(Looked::default()),
            retried: Default::default(),
        });
        tokio::spawn(watch_lag(Arc::downgrade(&database), backend.clone()));
        databases.push((url.expose().to_string(), backend.clone(), database.clone()));
        Ok((backend, database))
    }
}

/// Asks the source database for its role and lag every [`LAG_POLL`], for as long as it is used.
async fn watch_lag(database: Weak<SourceDatabase>, backend: Backend) {
    loop {
        let look = tokio::time::timeout(LAG_WAIT, lag(&backend)).await;
        let Some(database) = database.upgrade() else {
            return;
        };
        let look = match look {
            Ok(Ok(reading)) => Ok(reading),
            Ok(Err(e)) => Err(crate::error::Chain(&e).to_string()),
            Err(_) => Err(format!("no answer within {}s", LAG_WAIT.as_secs())),
        };
        database.record(look);
        drop(database);
        tokio::time::sleep(LAG_POLL).await;
    }
}

async fn lag(backend: &Backend) -> Result<LagReading, StoreError> {
    match backend {
        Backend::Postgres(s) => s.replica_lag().await,
        Backend::Mysql(s) => s.replica_lag().await,
        Backend::Sqlite(_) => Ok(LagReading {
            role: SourceRole::Primary,
            lag_seconds: Some(0.0),
        }),
    }
}

impl Store {
    /// Runs `read` (one statement on the source database, safe to run again); on a source
    /// database of its own, again after a pause while the server cancels it for replication
    /// or the connection was lost, at most [`RETRIES`] more times.
    pub(super) async fn read_source<F, Fut, T>(&self, mut read: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>>,
    {
        let Some(replica) = &self.replica else {
            return read().await;
        };
        let mut pause = FIRST_PAUSE;
        for _ in 0..RETRIES {
            match read().await {
                Err(e) if e.is_cancelled_by_replication() => {
                    replica
                        .retried
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!(
                        source = %replica.url,
                        error = %crate::error::Chain(&e),
                        pause_ms = pause.as_millis() as u64,
                        "the source database cancelled a read (replication); reading again"
                    );
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                done => return done,
            }
        }
        read().await
    }
}
