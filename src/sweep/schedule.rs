//! When sweeps run: on each change the change log reports, on each stale report of a render,
//! and every refresh period for sources nothing logs (views over CMS tables). A watched view's
//! logged keys cost the files holding them (summarised, then read if they moved); a change no
//! key names (a table its ids do not come from) gets one full sweep within the refresh period,
//! as every change does where each table logs its own keys (PostgreSQL). A group that
//! opened without stored files gets a full sweep first; one whose stored files cover the change
//! log up to a known version is verified file by file in the background at a bounded rate
//! ([`VERIFY_IDLE_FACTOR`]), and so is every watched source hourly, as a safety net. A sweep
//! that fails (the database away, a statement timed out) is owed: a full sweep follows after
//! [`RETRY_FIRST`], then after twice as long each time it fails again, at most the refresh
//! period apart, until one succeeds; changes reported meanwhile wait for it (it covers them).
//! After each sweep that succeeds, the version of the change log it covers is stored, so a
//! restarted service reads only what changed after it.
//!
//! This is what the replica holding the site does ([`Sweeper::hold`]): waiting for what wakes
//! it ([`Schedule::wake`]), then handling it. Following another replica and taking over from it
//! are `roles.rs`'s.

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use super::lease::SiteLease;
use super::{Inbox, Opening, SweepError, Sweeper};
use crate::site::{Group, Readiness, Stale};
use crate::store::{Change, IdRange, BUILTIN_SOURCE};

/// A verification of every file of a watched source, in case a change was not logged.
const SAFETY_SWEEP: Duration = Duration::from_secs(3600);
/// How often a watched MySQL/MariaDB view's definition and triggers are looked at: the look
/// reads the catalogue of every table behind it (about 0.1 s of server CPU on a WordPress
/// database), which an idle site should not pay every refresh period.
const DEFINITION_LOOK_ON_CATALOGUE: Duration = Duration::from_secs(300);
/// How soon after a full sweep a watched view's files measured without a summary take theirs
/// (one pass of summaries, at a gentle pace, kept as they are when no table was written).
const SUMMARISE_AFTER: Duration = Duration::from_secs(5);
/// Pause before a failed sweep is run again; it doubles with each failure, up to the refresh.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// A verification idles this many times as long as each file took to re-measure, so it uses
/// at most a tenth of what the service and its database could give it.
const VERIFY_IDLE_FACTOR: u32 = 9;
/// The shortest wait for a file that time changes.
const DUE_PAUSE_MIN: Duration = Duration::from_millis(20);
/// The shortest pause between two files of a verification.
const VERIFY_PAUSE_MIN: Duration = Duration::from_millis(10);

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
    /// A change the follow-up sweep covers, already scheduled.
    FollowedUp,
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

/// What the scheduler starts with: the sweep the group's files are owed ([`Opening`]), and
/// whether stored files the change log covers are verified in the background.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    opening: Opening,
    verify: bool,
}

/// A holder's schedule: its clocks, and what it owes the group's files.
struct Schedule {
    refresh: Duration,
    /// The group's changes are read from a change log.
    watched: bool,
    /// A full sweep follows, within the refresh period, each logged change that names no key
    /// (a table the view's ids do not come from), and, where every table logs its own keys
    /// (PostgreSQL), every logged change.
    follows_up: bool,
    follows_every_change: bool,
    follow_up: Option<Instant>,
    definition_ticker: tokio::time::Interval,
    /// The source's definition as last read (a watched view's).
    definition: Option<String>,
    ticker: tokio::time::Interval,
    cursor: Cursor,
    /// A full sweep owed after a failure (or the opening's).
    owed: Option<Owed>,
    verification: Option<Verification>,
}

impl Schedule {
    /// Waits for what wakes the scheduler next; `None` when `lease` is lost.
    async fn wake(
        &mut self,
        group: &Group,
        inbox: &mut Inbox,
        lease: &mut Option<&mut SiteLease>,
    ) -> Option<Wake> {
        let retry_at = self.owed.map(|o| o.at);
        // An owed full sweep covers a file that time changes.
        let due = self
            .owed
            .is_none()
            .then(|| time_changes_a_file(group))
            .flatten();
        let due_at = due.map(|(at, _)| at);
        let verify_at = self
            .verification
            .filter(|_| self.owed.is_none())
            .map(|v| v.at);
        let follow_up = self.follow_up;
        let (follows_up, watched) = (self.follows_up, self.watched);
        Some(tokio::select! {
            () = lease_lost(lease) => return None,
            Some(logged) = inbox.changes.next() => {
                self.cursor.heard = Some(logged.version);
                self.heard(logged.change)
            }
            _ = tokio::time::sleep_until(follow_up.unwrap_or_else(Instant::now)), if follow_up.is_some() => {
                self.follow_up = None;
                Wake::Change(Change::Everything)
            }
            Some(report) = inbox.stale.recv() => Wake::Stale(report),
            _ = self.definition_ticker.tick(), if follows_up => Wake::CheckDefinition,
            _ = self.ticker.tick() => match watched {
                true => Wake::StartVerification,
                false => Wake::Change(Change::Everything),
            },
            _ = tokio::time::sleep_until(retry_at.unwrap_or_else(Instant::now)), if retry_at.is_some() => Wake::Change(Change::Everything),
            _ = tokio::time::sleep_until(verify_at.unwrap_or_else(Instant::now)), if verify_at.is_some() => Wake::Verify,
            _ = tokio::time::sleep_until(due_at.unwrap_or_else(Instant::now)), if due.is_some() => {
                Wake::Change(due.map_or(Change::Everything, |(_, range)| Change::Ids(range)))
            }
        })
    }

    /// What a logged change wakes: a sweep of the files its keys name; for a view, a change
    /// that names no key waits for the follow-up sweep (one full sweep within the refresh
    /// period covers every such change meanwhile, however often the table is written).
    fn heard(&mut self, change: Change) -> Wake {
        if !self.follows_up {
            return Wake::Change(change);
        }
        let unkeyed = change == Change::Everything;
        if unkeyed || self.follows_every_change {
            self.follow_up.get_or_insert(Instant::now() + self.refresh);
        }
        match unkeyed {
            true => Wake::FollowedUp,
            false => Wake::Change(change),
        }
    }
}

impl Sweeper {
    /// What the scheduler starts with at the service's opening: what the stored state said
    /// ([`Opening`]); stored files the change log covers are verified in the background.
    pub(super) fn opening_plan(&self) -> Plan {
        Plan {
            opening: self.opening,
            verify: self.opening == Opening::Verify,
        }
    }

    /// What the scheduler starts with on taking over from another replica, which stored its
    /// files and the change-log version they cover (the feed resumes from before that; `start`
    /// is where it began). Nothing is verified: the replica before kept the files current.
    pub(super) fn take_over_plan(&self, start: Option<i64>) -> Plan {
        let opening = if self.group.readiness() == Readiness::FirstSweep {
            // The replica before this one stored nothing yet.
            Opening::FirstSweep
        } else if self.watched(start) {
            // The change feed covers what changed since the other replica stored its files.
            Opening::Verify
        } else {
            Opening::FullSweep
        };
        Plan {
            opening,
            verify: false,
        }
    }

    /// Whether the group's changes are read from a change log (its feed starts after a
    /// version). A news group's files change with time alone: it is swept every refresh
    /// period, as an unwatched source is, whatever logs its changes.
    fn watched(&self, start: Option<i64>) -> bool {
        start.is_some() && self.group.news.is_none()
    }

    /// Keeps the group current from `plan` until `lease` is lost (for ever without one): waits
    /// for what wakes it ([`Schedule::wake`]), handles it ([`Sweeper::handle`]) and settles what
    /// the sweep did ([`Sweeper::settle`]).
    pub(super) async fn hold(
        &self,
        inbox: &mut Inbox,
        refresh: Duration,
        plan: Plan,
        mut lease: Option<&mut SiteLease>,
    ) {
        let mut schedule = self.schedule(inbox.start, refresh, plan).await;
        loop {
            let Some(wake) = schedule.wake(&self.group, inbox, &mut lease).await else {
                return;
            };
            let full = schedule.owed.is_some() || matches!(wake, Wake::Change(Change::Everything));
            if let Some(result) = self.handle(&mut schedule, wake).await {
                self.settle(&mut schedule, result, full).await;
            }
        }
    }

    /// The schedule of a group kept current from `plan`, its change feed starting after
    /// `start`.
    async fn schedule(&self, start: Option<i64>, refresh: Duration, plan: Plan) -> Schedule {
        let group = &self.group;
        let watched = self.watched(start);
        // The tables behind a watched view log their own keys, which are the view's ids only
        // when the view takes its ids from them: a full sweep follows each change within the
        // refresh period, in case they are not.
        let follows_up = watched && group.source != BUILTIN_SOURCE;
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
        // definition (and whether its tables still have their triggers) is looked at every
        // refresh period, and at least every few minutes where that reads the catalogue of
        // every table behind it (MySQL/MariaDB, see `DEFINITION_LOOK_ON_CATALOGUE`).
        let look_every = match group.store.logs_every_tables_keys() {
            true => refresh,
            false => refresh.max(DEFINITION_LOOK_ON_CATALOGUE),
        };
        let mut definition_ticker = tokio::time::interval(look_every);
        definition_ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let definition = match follows_up {
            true => self.source_definition().await,
            false => None,
        };
        definition_ticker.tick().await;
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let verifying = plan.opening == Opening::Verify;
        Schedule {
            refresh,
            watched,
            follows_up,
            follows_every_change: group.store.logs_every_tables_keys(),
            follow_up: None,
            definition_ticker,
            definition,
            ticker,
            cursor: Cursor {
                heard: start,
                saved: verifying.then_some(start).flatten(),
            },
            owed: (!verifying).then(Owed::now),
            verification: (plan.verify && verifying).then(Verification::now),
        }
    }

    /// Handles what woke the scheduler: the sweep it calls for and how it ended, or `None`
    /// when nothing is swept now (a verification to start, a definition unchanged, a change an
    /// owed full sweep will cover at its time).
    async fn handle(&self, schedule: &mut Schedule, wake: Wake) -> Option<Result<(), SweepError>> {
        let owed = schedule.owed;
        let owed_later = owed.is_some_and(|o| Instant::now() < o.at);
        Some(match (owed, wake) {
            (_, Wake::FollowedUp) => return None,
            (_, Wake::StartVerification) => {
                schedule.verification.get_or_insert_with(Verification::now);
                return None;
            }
            (_, Wake::CheckDefinition) => {
                let rewatched = self.keep_watching().await;
                let redefined = self.redefined(&mut schedule.definition).await;
                if !(redefined || rewatched) || owed_later {
                    return None;
                }
                // Read everything again: under the new definition, or for what the tables
                // without triggers did not log.
                self.sweep(Change::Everything).await
            }
            // The owed full sweep covers this change; it runs at its time, not sooner, so a
            // database that times out is not handed one full sweep per change.
            (Some(_), _) if owed_later => return None,
            // What the failed sweep should have covered is not known any more: all of it.
            (Some(_), _) => self.sweep(Change::Everything).await,
            (None, Wake::Change(change)) => self.sweep(change).await,
            (None, Wake::Stale(report)) => self.catch_up(report).await,
            (None, Wake::Verify) => self.verify_next(&mut schedule.verification).await,
        })
    }

    /// After a sweep: on success the cursor is stored and a full sweep counts as a
    /// verification; on failure a full sweep is owed, later each time.
    async fn settle(&self, schedule: &mut Schedule, result: Result<(), SweepError>, full: bool) {
        match result {
            Ok(()) => {
                schedule.owed = None;
                // The cursor first: a group said to be current has stored what it covers.
                self.store_cursor(&mut schedule.cursor).await;
                if full {
                    // Everything was just re-measured: that is a verification too.
                    schedule.verification = None;
                    self.group.set_readiness(Readiness::Current);
                    // Files measured without a summary (a first sweep's) take theirs at the
                    // next full sweep; a watched view has none of its own soon.
                    if schedule.follows_up && self.has_unsummarised_files() {
                        let at = Instant::now() + schedule.refresh.min(SUMMARISE_AFTER);
                        schedule.follow_up.get_or_insert(at);
                    }
                }
            }
            Err(e) => {
                self.metrics.failures.inc();
                let next = Owed::after(schedule.owed, schedule.refresh);
                schedule.owed = Some(next);
                tracing::warn!(error = %crate::error::Chain(&e), retry_in_secs = next.pause.as_secs(), "sweep failed; serving the last known state");
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

    /// Finds the tables behind the watched source that lost their triggers (a table made again
    /// by a CMS update, a view that reads another now) and puts the triggers back where it can;
    /// what it cannot is said on the status page and in the log. True when triggers were put
    /// back (changes may have gone unlogged meanwhile).
    async fn keep_watching(&self) -> bool {
        let group = &self.group;
        let lost = match group.store.unwatched_tables(&group.source).await {
            Ok(lost) => lost,
            Err(e) => {
                tracing::debug!(source = %group.source, error = %crate::error::Chain(&e), "cannot list the watched tables' triggers");
                return false;
            }
        };
        if lost.is_empty() {
            group.set_unwatched(lost);
            return false;
        }
        let watch = group.store.watch(&group.source).await;
        let still = group
            .store
            .unwatched_tables(&group.source)
            .await
            .unwrap_or_else(|_| lost.clone());
        let restored = still.len() < lost.len();
        match still.is_empty() {
            true => {
                tracing::info!(source = %group.source, tables = %lost.join(", "), "triggers put back: {}", watch.describe(&group.source))
            }
            false => {
                tracing::warn!(source = %group.source, tables = %still.join(", "), "tables behind the source are no longer watched: {}", watch.describe(&group.source))
            }
        }
        group.set_unwatched(still);
        restored
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
        // A view's file is summarised first, and read only when its rows moved.
        self.sweep(Change::Keys(vec![layout.range(v.next)])).await?;
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
