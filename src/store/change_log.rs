//! The change log our triggers keep on every backend: each reader reads it after its own cursor
//! (which a site stores, so a restarted service reads only what changed while it was stopped),
//! and turns what it finds into [`Change`]s.
//!
//! The log is read from the source database; the cursors are kept in the state database. A
//! source database of its own (a standby) holds a log only where our migrations were applied
//! to its primary: it is then read as it replays, never trimmed nor written, and polled (a
//! standby cannot LISTEN). Statements: `sql/change_log.rs`.

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::Notify;

use super::{Backend, Change, IdRange, Store, StoreError};

/// How often the change log of a database that cannot notify (MySQL, SQLite) is read.
const CHANGE_POLL: std::time::Duration = std::time::Duration::from_millis(250);
/// How often it is read when notifications wake the reader (PostgreSQL): in case one is lost.
const WOKEN_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Versions of a change log kept for consumers that lag; one that lags more re-reads everything
/// (after a bulk load of more rows than this, that is the cheaper way anyway).
const CHANGE_LOG_RETAINED: i64 = 100_000;

/// What one read of a change log found after a consumer's cursor.
///
/// Our triggers bump one counter row per source (`sitemapd_changes.version`: the row lock
/// serialises writers, so versions follow commit order) and log the ids each version touched
/// (`sitemapd_change_log`). Every consumer (replicas, or sites of one process sharing a source)
/// reads the log after its own cursor, so none can take a change from another; the log is
/// trimmed to [`CHANGE_LOG_RETAINED`] versions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogReading {
    /// Lowest and highest version logged after the cursor: `None` when nothing is new.
    pub first: Option<i64>,
    pub last: Option<i64>,
    /// The ids those versions touched, sorted, as ranges apart from each other.
    pub touched: Vec<IdRange>,
    /// The source's highest id, where the backend watches it (MySQL: TRUNCATE fires no trigger).
    pub top: Option<i64>,
}

/// One bucket of a change log's keys, as the database groups them: the versions that logged
/// keys in it, and the lowest and highest of those keys.
#[derive(Debug, Clone, Copy)]
pub struct LoggedBucket {
    pub first: i64,
    pub last: i64,
    pub keys: IdRange,
}

/// More ranges than this in one reading are read as one: a bulk load touches most files anyway.
const MOST_RANGES: usize = 256;

impl LogReading {
    /// The reading of `buckets` (sorted by their lowest key), with the source's highest id.
    pub(super) fn from_buckets(buckets: &[LoggedBucket], top: Option<i64>) -> Self {
        let first = buckets.iter().map(|b| b.first).min();
        let last = buckets.iter().map(|b| b.last).max();
        let mut touched: Vec<IdRange> = Vec::new();
        for bucket in buckets {
            match touched.last_mut() {
                Some(previous) if previous.last >= bucket.keys.first.saturating_sub(1) => {
                    previous.last = previous.last.max(bucket.keys.last);
                }
                _ => touched.push(bucket.keys),
            }
        }
        if touched.len() > MOST_RANGES {
            let (lo, hi) = (touched[0].first, touched.iter().map(|r| r.last).max());
            touched = vec![IdRange {
                first: lo,
                last: hi.unwrap_or(lo),
            }];
        }
        Self {
            first,
            last,
            touched,
            top,
        }
    }

    /// Whether a key logged says "any row" (a table without an integer key, a TRUNCATE).
    fn names_every_row(&self) -> bool {
        self.touched
            .iter()
            .any(|r| r.first == i64::MIN && r.last == i64::MAX)
    }
}

/// Where a consumer of a change log stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LogCursor {
    pub version: i64,
    pub top: Option<i64>,
}

impl LogCursor {
    /// The change `reading` reports, if any, moving the cursor past it.
    fn advance(&mut self, reading: LogReading) -> Option<Change> {
        let shrank = match (self.top, reading.top) {
            (Some(was), Some(is)) => is < was,
            (Some(_), None) => true,
            _ => false,
        };
        self.top = reading.top;
        let Some(last) = reading.last else {
            return shrank.then_some(Change::Everything);
        };
        // Versions are contiguous: a gap after the cursor means entries were trimmed.
        let contiguous = reading.first == Some(self.version + 1);
        self.version = last;
        match contiguous && !shrank && !reading.touched.is_empty() && !reading.names_every_row() {
            true => Some(Change::Keys(reading.touched)),
            false => Some(Change::Everything),
        }
    }
}

/// What [`super::Store::changes`] hands a site: where its reading of the change log starts, and
/// the changes logged after that, each with its version.
pub struct ChangeFeed {
    /// The version the stream reads after; `None` when the source is not watched (a view):
    /// then the stream never yields.
    pub start: Option<i64>,
    /// Whether `start` is the cursor the caller asked to resume from: everything logged since
    /// it will be reported. When false, what changed before `start` is not known.
    pub resumed: bool,
    pub changes: BoxStream<'static, Logged>,
}

/// One change read from the log, and the version it brings the reader to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    pub change: Change,
    pub version: i64,
}

impl ChangeFeed {
    /// The feed of a source nothing logs.
    pub fn silent() -> Self {
        Self {
            start: None,
            resumed: false,
            changes: stream::pending().boxed(),
        }
    }
}

impl Store {
    /// The changes our triggers log for `source`, read after `resume` (the cursor a site
    /// stored with its files) when the log still holds what followed it, else after the
    /// current version. Sources nothing logs (views) get a feed that never yields.
    pub async fn changes(&self, source: &str, resume: Option<i64>) -> ChangeFeed {
        let Ok(Some((current, top))) = self.change_version(source).await else {
            return ChangeFeed::silent();
        };
        // A cursor beyond the log's version belongs to another database (restored, recreated).
        let resumed_at = resume.filter(|cursor| *cursor <= current);
        let start = LogCursor {
            version: resumed_at.unwrap_or(current),
            // The highest id when the cursor was stored is not known: a TRUNCATE while stopped
            // is found by the background verification instead.
            top: if resumed_at.is_some() { None } else { top },
        };
        let wake = match (&self.source, &self.replica) {
            (Backend::Postgres(s), None) => Some(s.wake_on_notify()),
            _ => None,
        };
        let log = SourceLog {
            store: self.clone(),
            source: source.to_string(),
        };
        ChangeFeed {
            start: Some(start.version),
            resumed: resumed_at.is_some(),
            changes: poll_change_log(start, log, wake),
        }
    }

    /// The version of `source`'s change log and its highest id; `None` when nothing logs it.
    pub(super) async fn change_version(
        &self,
        source: &str,
    ) -> Result<Option<(i64, Option<i64>)>, StoreError> {
        from_source!(self, s => s.change_version(source).await)
    }

    async fn read_change_log(&self, source: &str, after: i64) -> Result<LogReading, StoreError> {
        from_source!(self, s => s.read_change_log(source, after).await)
    }

    /// Trims the log behind every reader; never on a source database of its own.
    async fn trim_change_log(&self, source: &str, through: i64) -> Result<(), StoreError> {
        if self.replica.is_some() {
            return Ok(());
        }
        on!(&self.source, s => s.trim_change_log(source, through).await)
    }

    /// Logs a change of `range` in `source`'s change log (false: the source has none, or is a
    /// database of its own, where sitemapd writes nothing).
    pub async fn log_change(&self, source: &str, range: IdRange) -> Result<bool, StoreError> {
        if self.replica.is_some() {
            return Ok(false);
        }
        on!(&self.source, s => s.log_change(source, range).await)
    }

    /// The change-log version the site's stored files cover.
    pub async fn load_cursor(&self, site: &str) -> Result<Option<i64>, StoreError> {
        on!(&self.state, s => s.load_cursor(site).await)
    }

    /// Records that the site's stored files cover the change log through `version`.
    pub async fn save_cursor(&self, site: &str, version: i64) -> Result<(), StoreError> {
        on!(&self.state, s => s.save_cursor(site, version).await)
    }
}

/// One source's change log as one reader reads it.
#[derive(Clone)]
struct SourceLog {
    store: Store,
    source: String,
}

/// Reads `log` from `start` on, whenever `wake` is notified (PostgreSQL's NOTIFY) and at least
/// every [`CHANGE_POLL`] (every [`WOKEN_POLL`] when woken by notifications), yielding each change
/// and trimming the log behind it to [`CHANGE_LOG_RETAINED`] versions. Read errors are retried
/// at the next poll.
///
/// The reading runs in a task of its own, handing each change over when the reader asks for
/// the next: a stream read in place would be left suspended, a connection of the pool in hand,
/// whenever its reader turned to something else (a sweep, which then waited for that connection:
/// with `DATABASE_MAX_CONNECTIONS=1`, until the pool gave up). Changes logged while the reader
/// sweeps are read together at its next ask.
fn poll_change_log(
    start: LogCursor,
    log: SourceLog,
    wake: Option<Arc<Notify>>,
) -> BoxStream<'static, Logged> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Logged>(1);
    tokio::spawn(async move {
        let mut cursor = start;
        // What was logged before we started (a bulk load, say) is trimmed at the first poll.
        let _ = log
            .store
            .trim_change_log(&log.source, start.version - CHANGE_LOG_RETAINED)
            .await;
        // The first read is at once: what was logged while the service was stopped.
        let mut wait = false;
        loop {
            // Wait for room first: nothing is read while the last change is still unread.
            let Ok(permit) = tx.reserve().await else {
                return;
            };
            match (&wake, wait) {
                (_, false) => wait = true,
                (Some(wake), true) => {
                    let _ = tokio::time::timeout(WOKEN_POLL, wake.notified()).await;
                }
                (None, true) => tokio::time::sleep(CHANGE_POLL).await,
            }
            let Ok(reading) = log.store.read_change_log(&log.source, cursor.version).await else {
                continue;
            };
            if let Some(change) = cursor.advance(reading) {
                tracing::debug!(source = %log.source, ?change, version = cursor.version, "change logged");
                let through = cursor.version - CHANGE_LOG_RETAINED;
                let _ = log.store.trim_change_log(&log.source, through).await;
                permit.send(Logged {
                    change,
                    version: cursor.version,
                });
            }
        }
    });
    stream::unfold(rx, |mut rx| async move {
        let logged = rx.recv().await?;
        Some((logged, rx))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(first: i64, last: i64, top: Option<i64>) -> LogReading {
        LogReading {
            first: Some(first),
            last: Some(last),
            touched: vec![IdRange { first: 5, last: 9 }],
            top,
        }
    }

    #[test]
    fn each_consumer_of_a_change_log_gets_every_change_after_its_own_cursor() {
        let mut cursor = LogCursor {
            version: 10,
            top: Some(100),
        };
        let nothing = LogReading {
            top: Some(100),
            ..LogReading::default()
        };
        assert_eq!(cursor.advance(nothing.clone()), None);
        assert_eq!(
            cursor.advance(reading(11, 13, Some(100))),
            Some(Change::Keys(vec![IdRange { first: 5, last: 9 }]))
        );
        assert_eq!(cursor.version, 13);
        // Versions 14..=20 were trimmed before this consumer read them: it re-reads everything.
        assert_eq!(
            cursor.advance(reading(21, 22, Some(100))),
            Some(Change::Everything)
        );
        assert_eq!(cursor.version, 22);
    }

    #[test]
    fn a_table_that_shrank_without_a_logged_change_is_read_again_whole() {
        let mut cursor = LogCursor {
            version: 1,
            top: Some(100),
        };
        // TRUNCATE: nothing logged, the highest id gone.
        let truncated = LogReading::default();
        assert_eq!(cursor.advance(truncated), Some(Change::Everything));
        // Then a reload with fewer rows: logged, but the old files beyond must go too.
        let mut cursor = LogCursor {
            version: 1,
            top: Some(100),
        };
        assert_eq!(
            cursor.advance(reading(2, 40, Some(40))),
            Some(Change::Everything)
        );
        let mut cursor = LogCursor {
            version: 1,
            top: None,
        };
        assert_eq!(
            cursor.advance(reading(2, 2, Some(120))),
            Some(Change::Keys(vec![IdRange { first: 5, last: 9 }]))
        );
    }
}
