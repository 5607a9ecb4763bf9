//! When sweeps run: on each change the database reports, on each stale report of a render, and
//! every refresh period for sources that report nothing (views over CMS tables). Sources with our
//! triggers get a full sweep only hourly, as a safety net. A sweep that fails (the database away,
//! a statement timed out) is owed: a full sweep follows after [`RETRY_FIRST`], then after twice as
//! long each time it fails again, at most the refresh period apart, until one succeeds; changes
//! reported meanwhile wait for it (it covers them).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use super::{Inbox, Sweeper};
use crate::site::Stale;
use crate::store::Change;

/// Full re-measure of a source whose changes are notified, in case a notification was lost.
const SAFETY_SWEEP: Duration = Duration::from_secs(3600);
/// Pause before a failed sweep is run again; it doubles with each failure, up to the refresh.
const RETRY_FIRST: Duration = Duration::from_secs(1);

/// What woke the loop.
enum Wake {
    Change(Change),
    Stale(Stale),
}

impl Sweeper {
    /// Runs sweeps for as long as the process lives (see the module's documentation).
    pub async fn keep_current(self: Arc<Self>, refresh: Duration) {
        let site = self.site.clone();
        let notifying = site.store.notifies(&site.source).await;
        let period = if notifying {
            refresh.max(SAFETY_SWEEP)
        } else {
            refresh
        };
        tracing::info!(source = %site.source, notifying, period_secs = period.as_secs(), "keeping sitemaps current");
        let Some(Inbox {
            mut changes,
            mut stale,
        }) = self.inbox.lock().await.take()
        else {
            tracing::error!("this site is kept current already");
            return;
        };
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let mut owed = self
            .opened_stale
            .load(std::sync::atomic::Ordering::Relaxed)
            .then(|| Owed::after(None, refresh));
        loop {
            let retry_at = owed.map(|o| o.at);
            let wake = tokio::select! {
                Some(change) = changes.next() => Wake::Change(change),
                Some(report) = stale.recv() => Wake::Stale(report),
                _ = ticker.tick() => Wake::Change(Change::Everything),
                _ = tokio::time::sleep_until(retry_at.unwrap_or_else(Instant::now)), if retry_at.is_some() => Wake::Change(Change::Everything),
            };
            let result = match (owed, wake) {
                // The owed full sweep covers this change; it runs at its time, not sooner, so a
                // database that times out is not handed one full sweep per change.
                (Some(o), _) if Instant::now() < o.at => continue,
                // What the failed sweep should have covered is not known any more: all of it.
                (Some(_), _) => self.sweep(Change::Everything).await,
                (None, Wake::Change(change)) => self.sweep(change).await,
                (None, Wake::Stale(report)) => self.catch_up(report).await,
            };
            match result {
                Ok(()) => owed = None,
                Err(e) => {
                    self.failures.inc();
                    let next = Owed::after(owed, refresh);
                    owed = Some(next);
                    tracing::warn!(error = %crate::error::Chain(&e), retry_in_secs = next.pause.as_secs(), "sweep failed; serving the last known state");
                }
            }
        }
    }
}

/// A full sweep owed after a failure: when it runs, and the pause that led there.
#[derive(Debug, Clone, Copy)]
struct Owed {
    at: Instant,
    pause: Duration,
}

impl Owed {
    /// After `previous` failed again: twice its pause, at most `longest`; [`RETRY_FIRST`] after
    /// a first failure.
    fn after(previous: Option<Owed>, longest: Duration) -> Self {
        let pause = previous.map_or(RETRY_FIRST, |o| (o.pause * 2).min(longest.max(RETRY_FIRST)));
        Owed {
            at: Instant::now() + pause,
            pause,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owed_sweep_waits_twice_as_long_after_each_failure_up_to_the_refresh() {
        let refresh = Duration::from_secs(5);
        let mut owed = None;
        let mut pauses = Vec::new();
        for _ in 0..5 {
            let next = Owed::after(owed, refresh);
            assert!(next.at > Instant::now());
            pauses.push(next.pause.as_secs());
            owed = Some(next);
        }
        assert_eq!(pauses, [1, 2, 4, 5, 5]);
    }
}
