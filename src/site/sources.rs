//! What `/readyz` asks of the database, each within a bounded time so a probe always answers:
//! whether it answers and our migrations are applied ([`SourceCheck::database`]), and whether
//! every group's source can be read ([`SourceCheck::readable`]: a query of an empty id range —
//! the database resolves the table or view and its columns, reads no row — cached a few
//! seconds so a probe every second costs the database almost nothing).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::site::Site;
use crate::sitemap::Namespaces;
use crate::store::{IdRange, Store, StoreError};

/// How long one answer stands.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// How long `/readyz` waits for the check.
const WAIT_AT_MOST: Duration = Duration::from_secs(1);

/// How long `/readyz` waits for a connection from the pool and its one query: past this it
/// answers `503` saying so, whatever the pool is doing.
pub const DATABASE_WAIT: Duration = Duration::from_secs(2);

/// Why the database check did not pass.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseNotReady {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the database gave no answer within {}s (a connection from the pool and one query): \
         every connection of DATABASE_MAX_CONNECTIONS may be in use",
        DATABASE_WAIT.as_secs()
    )]
    NoAnswer,
}

/// The last answer, and when it was taken; whether the last database check went unanswered.
#[derive(Default)]
pub struct SourceCheck {
    last: Mutex<Option<(Instant, Result<(), String>)>>,
    unanswered: AtomicBool,
}

impl SourceCheck {
    /// Whether the database answers and our migrations are applied, within [`DATABASE_WAIT`].
    /// The first check left unanswered, and the first answered after it, are logged.
    pub async fn database(&self, store: &Store) -> Result<(), DatabaseNotReady> {
        let answer = tokio::time::timeout(DATABASE_WAIT, store.ready()).await;
        let unanswered = answer.is_err();
        if self.unanswered.swap(unanswered, Ordering::Relaxed) != unanswered {
            match unanswered {
                true => tracing::warn!(
                    "{}; /readyz answers 503 until it does",
                    DatabaseNotReady::NoAnswer
                ),
                false => tracing::info!("the database answers /readyz's check again"),
            }
        }
        Ok(answer.map_err(|_| DatabaseNotReady::NoAnswer)??)
    }

    /// `Err` names the first source that cannot be read, and why.
    pub async fn readable(&self, sites: &[std::sync::Arc<Site>]) -> Result<(), String> {
        if let Some((at, answer)) = &*self.lock() {
            if at.elapsed() < FRESH_FOR {
                return answer.clone();
            }
        }
        // A source held by a lock (a migration, a long write) is not a missing one: a check
        // that does not end in time says nothing against readiness.
        let answer = tokio::time::timeout(WAIT_AT_MOST, check_all(sites))
            .await
            .unwrap_or(Ok(()));
        *self.lock() = Some((Instant::now(), answer.clone()));
        answer
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Instant, Result<(), String>)>> {
        crate::sync::lock(&self.last)
    }
}

async fn check_all(sites: &[std::sync::Arc<Site>]) -> Result<(), String> {
    // News sources have other columns; their reads report through the sweep.
    let groups = sites
        .iter()
        .flat_map(|site| &site.groups)
        .filter(|group| group.news.is_none());
    for group in groups {
        // A source database of its own that did not answer its last look (every 5 s) is down,
        // however long a connection attempt would wait.
        if let Some(error) = group.store.source_status().and_then(|s| s.error) {
            tracing::warn!(source = %group.source, %error, "the source database cannot be read");
            return Err(format!(
                "the source {} cannot be read from SOURCE_DATABASE_URL",
                group.source
            ));
        }
        let nothing = IdRange { first: 1, last: 0 };
        let mut rows = group.store.entries(nothing, Namespaces::default());
        while let Some(row) = rows.next().await {
            if let Err(e) = row {
                // The cause (SQL, the database's words) goes to the log, not to the probe.
                tracing::warn!(source = %group.source, error = %crate::error::Chain(&e), "a source cannot be read");
                return Err(match group.store.reads_a_replica() {
                    true => format!(
                        "the source {} cannot be read from SOURCE_DATABASE_URL",
                        group.source
                    ),
                    false => format!("the source {} cannot be read", group.source),
                });
            }
        }
    }
    Ok(())
}
