//! When sweeps run: on each change the change log reports, on each stale report of a render,
//! and every refresh period for sources nothing logs (views over CMS tables); a view whose
//! tables are watched gets a full sweep within the refresh period after each change. A group that
//! opened without stored files gets a full sweep first; one whose stored files cover the change
//! log up to a known version is verified file by file in the background at a bounded rate
//! ([`VERIFY_IDLE_FACTOR`]), and so is every watched source hourly, as a safety net. A sweep
//! that fails (the database away, a statement timed out) is owed: a full sweep follows after
//! [`RETRY_FIRST`], then after twice as long each time it fails again, at most the refresh
//! period apart, until one succeeds; changes reported meanwhile wait for it (it covers them).
//! After each sweep that succeeds, the version of the change log it covers is stored, so a
//! restarted service reads only what changed after it.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use super::lease::SiteLease;
use super::{Inbox, Opening, SweepError, Sweeper};
use crate::site::{Group, Readiness, Stale};
use crate::store::{Change, IdRange, BUILTIN_SOURCE};

/// A verification of every file of a watched source, in case a change was not logged.
const SAFETY_SWEEP: Duration = Duration::from_secs(3600);
/// Pause before a failed sweep is run again; it doubles with each failure, up to the refresh.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// A verification idles this many times as long as each file took to re-measure, so it uses
/// at most a tenth of what the service and its database could give it.
const VERIFY_IDLE_FACTOR: u32 = 9;
/// The shortest wait for a file that time changes.
const DUE_PAUSE_MIN: Duration = Duration::from_millis(20);
/// The shortest pause between two files of a verification.
const VERIFY_PAUSE_MIN: Duration = Duration::from_millis(10);
/// How often a follower reads the version of the stored state (one row by its key); on
/// PostgreSQL it also reads it as soon as the holder announces a save.
const FOLLOW_POLL: Duration = Duration::from_secs(1);

/// What woke the loop.
enum Wake {
    Change(Change),
    Stale(Stale),
    /// Time to verify the next file.
    Verify,
    /// Time to start verifying every file again.
    StartVerification,
    /// Time to ask whether a watched view was redefined.
    CheckDefinition,
}

/// A verification under way: the next file to re-measure, and when.
#[derive(Debug, Clone, Copy)]
struct Verification {
    next: usize,
    at: Instant,
}

/// Where the group's reading of the change log stands.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// The last version read from the log.
    heard: Option<i64>,
    /// The version stored as covered by the group's files.
    saved: Option<i64>,
}

impl Sweeper {
    /// Runs sweeps for as long as the process lives (see the module's documentation). With a
    /// lease, only while this replica holds it: otherwise it follows the stored state.
    pub async fn keep_current(self: Arc<Self>, refresh: Duration) {
        let Some(mut inbox) = self.inbox.lock().await.take() else {
            tracing::error!("this group is kept current already");
            return;
        };
        let Some(mut lease) = self.lease().filter(|_| self.group.news.is_none()) else {
            return self
                .keep_current_holding(&mut inbox, refresh, true, None)
                .await;
        };
        lease.decided().await;
        let mut first = true;
        loop {
            if !lease.holds() {
                self.follow(&mut lease, &mut inbox.stale).await;
                self.take_over().await;
                first = false;
            }
            self.keep_current_holding(&mut inbox, refresh, first, Some(&mut lease))
                .await;
            first = false;
        }
    }

    /// Serves the stored state while another replica keeps it current: loads it again whenever
    /// its version moves, and tells the holder of rows a render here met that the stored files
    /// do not describe (through the source's change log). Until the lease is taken.
    ///
    /// The holder is configured as this replica is (the lease's name says so): files stored
    /// under other settings are the holder's before its first sweep (or an older replica's, in
    /// a rolling upgrade), so they are not served, and the holder's own are awaited.
    async fn follow(&self, lease: &mut SiteLease, stale: &mut crate::site::StaleReports) {
        let group = &self.group;
        tracing::info!(group = %group.key, "following the replica that keeps this site current");
        // PostgreSQL: the holder announces each save, heard at once; the poll stays, in case
        // a notification is lost (and is the only way elsewhere).
        let announcements = group.store.state_announcements();
        let mut announced = announcements.as_ref().map(|sender| sender.subscribe());
        let mut seen: Option<i64> = None;
        loop {
            match group.store.state_version(&group.key).await {
                Ok(version) if seen != Some(version) => {
                    match group.store.load_state(&group.key).await {
                        Ok(stored) if stored.is_empty() || !super::made_under(&stored, group) => {
                            seen = Some(version)
                        }
                        Ok(stored) => {
                            self.install_stored(&stored);
                            group.set_readiness(Readiness::Current);
                            seen = Some(version);
                        }
                        Err(e) => {
                            tracing::debug!(error = %crate::error::Chain(&e), "cannot load the stored state")
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %crate::error::Chain(&e), "cannot read the stored state's version")
                }
            }
            tokio::select! {
                () = lease.taken() => return,
                Some(report) = stale.recv() => {
                    if let Err(e) = group.store.log_change(&group.source, report.range).await {
                        tracing::debug!(error = %crate::error::Chain(&e), "cannot tell the holder of a stale file");
                    }
                }
                () = tokio::time::sleep(FOLLOW_POLL) => {}
                () = announced_save(&mut announced) => {}
            }
        }
    }

    /// On taking the lease: serves what the replica before stored, when it was laid out under
    /// this replica's settings (files laid out under others are laid out again by the sweeps).
    async fn take_over(&self) {
        match self.group.store.load_state(&self.group.key).await {
            Ok(stored) if !stored.is_empty() && super::made_under(&stored, &self.group) => {
                self.install_stored(&stored)
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %crate::error::Chain(&e), "cannot load the stored state on taking over")
            }
        }
    }

    /// Keeps the group current until `lease` is lost (for ever without one). `first`: the
    /// service's opening (else this replica takes over from another, which stored its files and
    /// the change-log version they cover; the change feed resumes from before that).
    async fn keep_current_holding(
        &self,
        inbox: &mut Inbox,
        refresh: Duration,
        first: bool,
        mut lease: Option<&mut SiteLease>,
    ) {
        let group = self.group.clone();
        let Inbox {
            changes,
            start,
            stale,
        } = inbox;
        let start = *start;
        // A news group's files change with time alone: it is swept every refresh period, as an
        // unwatched source is, whatever logs its changes.
        let watched = start.is_some() && group.news.is_none();
        // The tables behind a watched view log their own keys, which are the view's ids only
        // when the view takes its ids from them: a full sweep follows each change within the
        // refresh period, in case they are not.
        let follows_up = watched && group.source != BUILTIN_SOURCE;
        let mut follow_up: Option<Instant> = None;
        // A view whose database stamps its tables' changes (MariaDB/MySQL, see `quiet.rs`) is
        // looked at twice a period: a look at an idle view costs a few catalogue rows, and a
        // change then shows within the period, its files' summaries included.
        let period = if watched {
            refresh.max(SAFETY_SWEEP)
        } else if group.store.keeps_change_stamps() {
            (refresh / 2).max(Duration::from_secs(1))
        } else {
            refresh
        };
        tracing::info!(source = %group.source, watched, period_secs = period.as_secs(), "keeping sitemaps current");
        // A view redefined fires no trigger, and may read tables nothing watches yet: its
        // definition is compared every refresh period.
        let mut definition_ticker = tokio::time::interval(refresh);
        definition_ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut definition = match follows_up {
            true => self.source_definition().await,
            false => None,
        };
        definition_ticker.tick().await;
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let opening = if first {
            self.opening
        } else if group.readiness() == Readiness::FirstSweep {
            // The replica before this one stored nothing yet.
            Opening::FirstSweep
        } else if watched {
            // The change feed covers what changed since the other replica stored its files.
            Opening::Verify
        } else {
            Opening::FullSweep
        };
        let mut cursor = Cursor {
            heard: start,
            saved: (opening == Opening::Verify).then_some(start).flatten(),
        };
        let mut owed = (opening != Opening::Verify).then(Owed::now);
        // A replica that takes over verifies nothing: the one before it kept the files current.
        let mut verification = (first && opening == Opening::Verify).then(Verification::now);
        loop {
            let retry_at = owed.map(|o| o.at);
            // An owed full sweep covers a file that time changes.
            let due = owed
                .is_none()
                .then(|| time_changes_a_file(&group))
                .flatten();
            let due_at = due.map(|(at, _)| at);
            let verify_at = verification.filter(|_| owed.is_none()).map(|v| v.at);
            let wake = tokio::select! {
                () = lease_lost(&mut lease) => return,
                Some(logged) = changes.next() => {
                    cursor.heard = Some(logged.version);
                    if follows_up {
                        follow_up.get_or_insert(Instant::now() + refresh);
                    }
                    Wake::Change(logged.change)
                }
                _ = tokio::time::sleep_until(follow_up.unwrap_or_else(Instant::now)), if follow_up.is_some() => {
                    follow_up = None;
                    Wake::Change(Change::Everything)
                }
                Some(report) = stale.recv() => Wake::Stale(report),
                _ = definition_ticker.tick(), if follows_up => Wake::CheckDefinition,
                _ = ticker.tick() => match watched {
                    true => Wake::StartVerification,
                    false => Wake::Change(Change::Everything),
                },
                _ = tokio::time::sleep_until(retry_at.unwrap_or_else(Instant::now)), if retry_at.is_some() => Wake::Change(Change::Everything),
                _ = tokio::time::sleep_until(verify_at.unwrap_or_else(Instant::now)), if verify_at.is_some() => Wake::Verify,
                _ = tokio::time::sleep_until(due_at.unwrap_or_else(Instant::now)), if due.is_some() => {
                    Wake::Change(due.map_or(Change::Everything, |(_, range)| Change::Ids(range)))
                }
            };
            let full = owed.is_some() || matches!(wake, Wake::Change(Change::Everything));
            let result = match (owed, wake) {
                (_, Wake::StartVerification) => {
                    verification.get_or_insert_with(Verification::now);
                    continue;
                }
                (_, Wake::CheckDefinition) => {
                    if !self.redefined(&mut definition).await {
                        continue;
                    }
                    // Read everything again under the new definition, now or when owed.
                    match owed {
                        Some(o) if Instant::now() < o.at => continue,
                        _ => self.sweep(Change::Everything).await,
                    }
                }
                // The owed full sweep covers this change; it runs at its time, not sooner, so a
                // database that times out is not handed one full sweep per change.
                (Some(o), _) if Instant::now() < o.at => continue,
                // What the failed sweep should have covered is not known any more: all of it.
                (Some(_), _) => self.sweep(Change::Everything).await,
                (None, Wake::Change(change)) => self.sweep(change).await,
                (None, Wake::Stale(report)) => self.catch_up(report).await,
                (None, Wake::Verify) => self.verify_next(&mut verification).await,
            };
            match result {
                Ok(()) => {
                    owed = None;
                    // The cursor first: a group said to be current has stored what it covers.
                    self.store_cursor(&mut cursor).await;
                    if full {
                        // Everything was just re-measured: that is a verification too.
                        verification = None;
                        group.set_readiness(Readiness::Current);
                    }
                }
                Err(e) => {
                    self.metrics.failures.inc();
                    let next = Owed::after(owed, refresh);
                    owed = Some(next);
                    tracing::warn!(error = %crate::error::Chain(&e), retry_in_secs = next.pause.as_secs(), "sweep failed; serving the last known state");
                }
            }
        }
    }

    /// The group's source definition, when the database can tell it.
    async fn source_definition(&self) -> Option<String> {
        let group = &self.group;
        match group.store.source_definition(&group.source).await {
            Ok(definition) => definition,
            Err(e) => {
                tracing::warn!(source = %group.source, error = %crate::error::Chain(&e), "cannot read the source's definition");
                None
            }
        }
    }

    /// Whether the source was redefined since `known`; if so, the tables behind its new
    /// definition are watched too, and `known` is updated.
    async fn redefined(&self, known: &mut Option<String>) -> bool {
        let Some(now) = self.source_definition().await else {
            return false;
        };
        if known.as_ref() == Some(&now) {
            return false;
        }
        let first = known.is_none();
        *known = Some(now);
        if first {
            return false;
        }
        let group = &self.group;
        let watch = group.store.watch(&group.source).await;
        tracing::info!(source = %group.source, "the source was redefined: {}", watch.describe(&group.source));
        true
    }

    /// Re-measures the next file of `verification`, and schedules the one after it; ends the
    /// verification after the last file.
    async fn verify_next(&self, verification: &mut Option<Verification>) -> Result<(), SweepError> {
        let Some(v) = verification.as_mut() else {
            return Ok(());
        };
        let layout = self.group.snapshot().layout.clone();
        if v.next >= layout.len() {
            tracing::info!(group = %self.group.key, files = layout.len(), "every file verified against the source");
            *verification = None;
            self.group.set_readiness(Readiness::Current);
            return Ok(());
        }
        let started = Instant::now();
        self.sweep(Change::Ids(layout.range(v.next))).await?;
        v.next += 1;
        v.at = Instant::now() + (started.elapsed() * VERIFY_IDLE_FACTOR).max(VERIFY_PAUSE_MIN);
        Ok(())
    }

    /// Stores the change-log version the group's files now cover, if it moved; a failure is
    /// retried after the next sweep (until then a restart re-reads a little more of the log).
    async fn store_cursor(&self, cursor: &mut Cursor) {
        let Some(heard) = cursor.heard else { return };
        if cursor.saved.is_some_and(|saved| saved >= heard) {
            return;
        }
        match self
            .group
            .store
            .save_cursor(&self.group.cursor_key(), heard)
            .await
        {
            Ok(()) => cursor.saved = Some(heard),
            Err(e) => {
                tracing::debug!(error = %crate::error::Chain(&e), "cannot store the change-log cursor")
            }
        }
    }
}

/// Completes when a replica announces a saved state; never where none are announced.
async fn announced_save(announced: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    match announced {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Completes when `lease` is lost; never without one.
async fn lease_lost(lease: &mut Option<&mut SiteLease>) {
    match lease {
        Some(lease) => lease.lost().await,
        None => std::future::pending().await,
    }
}

/// The first file whose bytes time alone changes (a lastmod left out for being in the future
/// comes within the allowance), when, and its ids: it is re-measured then, before a render
/// meets rows its validators do not describe (at once if that time has passed meanwhile).
fn time_changes_a_file(group: &Group) -> Option<(Instant, IdRange)> {
    let snapshot = group.snapshot();
    let (index, due) = snapshot
        .layout
        .pages()
        .iter()
        .enumerate()
        .filter_map(|(i, page)| Some((i, page.skipped.future_due()?)))
        .min_by_key(|(_, due)| *due)?;
    // Just after the due second begins (the lastmod is within the allowance from then on); never
    // sooner than a few milliseconds from now, so a clock that disagrees cannot spin the loop.
    let until_due = (due * 1000 + 5).saturating_sub(chrono::Utc::now().timestamp_millis());
    let wait = Duration::from_millis(u64::try_from(until_due).unwrap_or(0)).max(DUE_PAUSE_MIN);
    Some((Instant::now() + wait, snapshot.layout.range(index)))
}

impl Verification {
    fn now() -> Self {
        Self {
            next: 0,
            at: Instant::now(),
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
    /// Owed at once: the opening sweep.
    fn now() -> Self {
        Owed {
            at: Instant::now(),
            pause: Duration::ZERO,
        }
    }

    /// After `previous` failed again: twice its pause, at most `longest`; [`RETRY_FIRST`] after
    /// a first failure.
    fn after(previous: Option<Owed>, longest: Duration) -> Self {
        let pause = previous.map_or(RETRY_FIRST, |o| {
            (o.pause * 2).clamp(RETRY_FIRST, longest.max(RETRY_FIRST))
        });
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
