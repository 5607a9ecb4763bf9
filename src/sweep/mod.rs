//! The write side: keeps a group's snapshot equal to its database.
//!
//! One sweep, in order: a change (logged by the database, reported by a render that met stale
//! rows, or a periodic check) names the files to re-measure; [`measure`] reads their rows and
//! fingerprints their bytes; [`compact`] merges neighbours that fit in one file; [`settle`]
//! dates each file against what is stored; the store saves that state compare-and-set (other
//! replicas may be sweeping too); the group installs the new snapshot; [`announce`] tells
//! IndexNow and the ping webhook. [`schedule`] runs sweeps for as long as the process lives,
//! with retries when one fails; [`roles`] says when it runs when replicas share a site (hold,
//! follow, take over, under the site's [`lease`]).
//!
//! Validators live in the database (`sitemapd_pages`, `sitemapd_files`), so every replica and
//! every restart answers with the same ETag and Last-Modified.

mod announce;
mod changed;
mod compact;
mod feeds;
pub mod lease;
mod llms;
mod measure;
mod patch;
mod quiet;
mod relist;
mod roles;
mod schedule;
mod settle;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use chrono::Utc;
use futures::stream::BoxStream;
use tokio::sync::Mutex;

use crate::metrics::SweepMetrics;
use crate::notify::Notifier;
use crate::site::{
    Group, Layout, Readiness, Snapshot, Stale, StaleReports, ROBOTS_RULES_FILE, SETTINGS_FILE,
};
use crate::store::{Change, Logged, SavedState, StoreError};
pub use announce::register_removed_reader;
use changed::Changed;
use measure::{apply_scan, Measure};
use settle::{Proposal, WholeFile};

/// Why a sweep did not store new validators. The served state stays as it was; the sweep is
/// owed and [`Sweeper::keep_current`] runs it again.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("gave up after {0} tries: other replicas kept moving the file boundaries")]
    Contended(usize),
}

/// Tries of one sweep when other replicas keep moving the file boundaries under it, and of one
/// save when they keep saving the same boundaries.
const SWEEP_TRIES: usize = 3;

/// Keeps one group current.
pub struct Sweeper {
    group: Arc<Group>,
    notifier: Arc<Notifier>,
    metrics: SweepMetrics,
    /// One sweep of this group at a time in this process.
    sweeping: Mutex<()>,
    /// What wakes [`Sweeper::keep_current`]; taken when it starts.
    inbox: Mutex<Option<Inbox>>,
    /// What the group's files must go through before they are known to be current.
    opening: Opening,
    /// robots.txt leaves out other entries than when the stored files were measured: once a
    /// sweep has stored files under the new rules, the entries they leave out are announced.
    robots_rules_changed: AtomicBool,
    /// Whether `sitemapd_listed` holds every URL this view-fed group lists (see [`relist`]).
    listed_known: Arc<AtomicBool>,
    /// The site's lease, when replicas share the work ([`lease`]); none: this replica keeps
    /// the group current by itself.
    lease: Option<lease::SiteLease>,
    /// Where the tables behind the source were when the last full sweep began ([`quiet`]).
    quiet: quiet::Quiet,
    /// The cache in front to tell of the URLs each save changed (`CACHE_PURGE`); none: off.
    purge: Option<crate::purge::SitePurge>,
}

/// The changes the database logs (read from the version the stored files cover, or from the
/// version before the opening sweep, so none made in between is lost), and the renders' stale
/// reports.
struct Inbox {
    changes: BoxStream<'static, Logged>,
    /// The change-log version the feed starts after; `None` when nothing logs the source.
    start: Option<i64>,
    stale: StaleReports,
}

/// What a group's stored state says when the service starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// Nothing is stored: a full sweep before any file is served.
    FirstSweep,
    /// Files are stored but what changed since is not known (no change log, or its cursor is
    /// gone): served at once, and a full sweep runs in the background.
    FullSweep,
    /// Files are stored, and the change log holds everything since: served at once, changes
    /// applied as read, and the files verified in the background at a bounded rate.
    Verify,
}

/// How a save ended.
enum Saved {
    /// What the save stored, and the state it replaced.
    State {
        saved: SavedState,
        replaced: SavedState,
    },
    /// Another replica moved the boundaries the sweep started from.
    BoundariesMoved,
}

impl Sweeper {
    /// Loads the stored state into `group` (served at once if there is any) and opens its change
    /// feed where the stored files leave off. Reads no entries: [`Sweeper::keep_current`]
    /// brings the files up to date in the background, [`Sweeper::sweep_now`] in the foreground.
    /// With `lease` (replicas share the site's work), the group is kept current only while
    /// this replica holds it. With `purge` (`CACHE_PURGE`), each save tells the cache in front
    /// of the URLs whose bytes it changed.
    pub async fn open(
        group: Arc<Group>,
        stale: StaleReports,
        notifier: Arc<Notifier>,
        metrics: SweepMetrics,
        lease: Option<lease::SiteLease>,
        purge: Option<crate::purge::SitePurge>,
    ) -> Result<Arc<Self>, StoreError> {
        let stored = group.store.load_state(&group.key).await?;
        let has_state = !stored.is_empty();
        // Files laid out under other settings (another page size, other rules) are not served:
        // they may break the new limits. The first sweep lays them out again.
        let same_settings = made_under(&stored, &group);
        let robots_rules_changed = stored
            .files
            .iter()
            .any(|f| f.name == ROBOTS_RULES_FILE && f.fingerprint != group.robots_rules);
        announce::forget_listed_unless_told(&group, &notifier).await;
        let cursor = match has_state && same_settings {
            true => group.store.load_cursor(&group.cursor_key()).await?,
            false => None,
        };
        // Listen first, then sweep: a change made in between is then reported, not lost.
        let feed = group.store.changes(&group.source, cursor).await;
        let opening = match (has_state && same_settings, feed.resumed) {
            (false, _) => Opening::FirstSweep,
            // A news group is measured whole each sweep: nothing to verify file by file.
            (true, true) if group.news.is_none() => Opening::Verify,
            (true, _) => Opening::FullSweep,
        };
        let sweeper = Arc::new(Self {
            group,
            notifier,
            metrics,
            sweeping: Mutex::new(()),
            inbox: Mutex::new(Some(Inbox {
                changes: feed.changes,
                start: feed.start,
                stale,
            })),
            opening,
            robots_rules_changed: AtomicBool::new(robots_rules_changed),
            listed_known: Arc::new(AtomicBool::new(false)),
            lease,
            quiet: quiet::Quiet::default(),
            purge,
        });
        if has_state {
            // Under other settings, the first sweep starts from these boundaries.
            sweeper.install_stored(&stored);
        }
        // A news group's stored files were measured at an instant this process does not know,
        // so renders could not read the same articles: they are served from its first sweep
        // on, which reads only the articles of its window.
        if opening != Opening::FirstSweep && sweeper.group.news.is_none() {
            sweeper.group.set_readiness(Readiness::Verifying);
        }
        tracing::info!(group = %sweeper.group.key, ?opening, change_log_from = ?feed.start, "opened");
        Ok(sweeper)
    }

    pub fn group(&self) -> &Arc<Group> {
        &self.group
    }

    /// For a one-shot command (`export`): a full sweep now, so what is written is current.
    pub async fn sweep_now(&self) -> Result<(), SweepError> {
        let start = self
            .inbox
            .lock()
            .await
            .as_ref()
            .and_then(|inbox| inbox.start);
        self.sweep(Change::Everything).await?;
        self.group.set_readiness(Readiness::Current);
        if let Some(version) = start {
            self.group
                .store
                .save_cursor(&self.group.cursor_key(), version)
                .await?;
        }
        Ok(())
    }

    /// Re-measures the files `change` may have touched and stores their new validators.
    pub async fn sweep(&self, change: Change) -> Result<(), SweepError> {
        let _one_at_a_time = self.sweeping.lock().await;
        self.sweep_locked(change).await
    }

    /// Re-measures a page a render found stale, unless a sweep has re-measured it since: a
    /// burst of requests for a stale file costs one sweep, not one each.
    async fn catch_up(&self, stale: Stale) -> Result<(), SweepError> {
        let _one_at_a_time = self.sweeping.lock().await;
        let still_stale = self
            .group
            .snapshot()
            .page(stale.page_no)
            .is_some_and(|served| served.page.fingerprint == stale.fingerprint);
        if !still_stale {
            return Ok(());
        }
        self.sweep_locked(Change::Ids(stale.range)).await
    }

    async fn sweep_locked(&self, mut change: Change) -> Result<(), SweepError> {
        // Time alone changes a news group's files (articles enter when their publication time
        // comes and leave as they age): each sweep measures all of them as of one instant,
        // which renders then keep to.
        let news_at = self.group.news.as_ref().map(|_| Utc::now().timestamp());
        if news_at.is_some() {
            change = Change::Everything;
        }
        let look = match (&change, news_at) {
            (Change::Everything, None) => Some(self.quiet.look(&self.group).await),
            _ => None,
        };
        if look.as_ref().is_some_and(|look| look.nothing_changed) {
            self.metrics.quiet_refreshes.inc();
            return Ok(());
        }
        let completed = |this: &Self| {
            if let Some(look) = &look {
                this.quiet.completed(look);
            }
        };
        for _attempt in 0..SWEEP_TRIES {
            let current = self.group.snapshot();
            let mut changed = match &change {
                Change::Ids(range) => Changed::only(current.layout.overlapping(*range)),
                Change::Keys(keys) => self.keyed_files(&current.layout, keys).await?,
                Change::Everything => self.changed_files(&current.layout, look.as_ref()).await?,
            };
            let nothing_changed = changed.is_nothing();
            let patched_ids = changed.patched_ids();
            let patched = std::mem::take(&mut changed.patched);
            let files = &changed.files;
            let feeds_known = current.feeds.is_some() || self.group.feed_size == 0;
            // Read each sweep: a title can change in a view without any file changing.
            let llms = llms::read(&self.group).await?;
            let llms_same = llms::unchanged(llms.as_ref(), current.llms.as_ref());
            if nothing_changed && feeds_known && llms_same {
                // The database says no file's rows changed: nothing to read or save.
                completed(self);
                return Ok(());
            }
            self.metrics
                .files_measured
                .inc_by((files.len() + patched.len()) as u64);
            let mut scanned = Measure::of(&self.group, news_at)
                .scan(&current.layout, files)
                .await?;
            scanned.extend(patched.into_iter().map(|p| p.scanned));
            let now = Utc::now().timestamp();
            let mut measured = apply_scan(&current.layout, scanned, &self.group.style, now);
            let reread = feeds::Reread {
                before: &current.layout,
                files,
                patched: &patched_ids,
                after: &measured,
            };
            let feeds = feeds::read(&self.group, current.feeds.as_ref(), reread).await?;
            changed.keep_summaries(&mut measured, &current.layout);
            let measured = self.compact(measured, news_at, now).await?;
            let whole_files = WholeFile::of_group(
                &self.group,
                current.robots.validators.fingerprint,
                feeds.as_ref(),
                llms.as_ref().map(|(_, fingerprint)| *fingerprint),
            );
            let proposal = Proposal {
                layout: measured,
                whole_files,
            };
            match self.save(&current.layout, &proposal, now).await? {
                Saved::State { saved, replaced } => {
                    if let Some(look) = &look {
                        self.quiet.measured(look);
                    }
                    let mut next =
                        current.settled(&proposal.layout, &saved, feeds, self.group.publication());
                    next.news_at = news_at;
                    next.llms = llms.map(|(links, _)| llms::section(links, &saved));
                    let index_changed = next.index.validators.changed_at >= now;
                    let save = crate::purge::Save {
                        replaced: &replaced,
                        stored: &saved,
                    };
                    self.install_saved(next, save);
                    report_skips(&current, &self.group.snapshot());
                    self.announce_saved(index_changed, (&current.layout, files, &patched_ids))
                        .await;
                    // Files laid out anew have no summary yet: the next refresh takes them.
                    if !self.has_unsummarised_files() {
                        completed(self);
                    }
                    return Ok(());
                }
                Saved::BoundariesMoved => {
                    // Start again from the other replica's state.
                    self.reload().await?;
                    change = Change::Everything;
                }
            }
        }
        Err(SweepError::Contended(SWEEP_TRIES))
    }

    /// Merges neighbouring files that fit in one (see [`compact`]) and measures the merged ones.
    async fn compact(
        &self,
        layout: Layout,
        news_at: Option<i64>,
        now: i64,
    ) -> Result<Layout, StoreError> {
        let runs = compact::mergeable_runs(&layout, self.group.page_size);
        if runs.is_empty() {
            return Ok(layout);
        }
        let (merged, indexes) = compact::merge(&layout, &runs);
        self.metrics.files_measured.inc_by(indexes.len() as u64);
        let scanned = Measure::of(&self.group, news_at)
            .scan(&merged, &indexes)
            .await?;
        Ok(apply_scan(&merged, scanned, &self.group.style, now))
    }

    /// Settles `proposal` against what is stored and saves it, compare-and-set: when another
    /// replica saved the same boundaries meanwhile, settles again against what it saved.
    async fn save(
        &self,
        started_from: &Layout,
        proposal: &Proposal,
        now: i64,
    ) -> Result<Saved, StoreError> {
        let store = &self.group.store;
        for _attempt in 0..SWEEP_TRIES {
            let stored = store.load_state(&self.group.key).await?;
            let stored_boundaries: Vec<(i64, i64)> = stored
                .pages
                .iter()
                .map(|p| (p.page_no, p.first_id))
                .collect();
            if !stored.is_empty() && stored_boundaries != started_from.boundaries() {
                return Ok(Saved::BoundariesMoved);
            }
            let next = proposal.settle(&self.group, &stored, now);
            if store.replace_state(&self.group.key, &stored, &next).await? {
                return Ok(Saved::State {
                    saved: next,
                    replaced: stored,
                });
            }
        }
        Ok(Saved::BoundariesMoved)
    }

    /// Replaces the served layout with what the database holds (another writer's work).
    async fn reload(&self) -> Result<(), StoreError> {
        let stored = self.group.store.load_state(&self.group.key).await?;
        self.install_stored(&stored);
        Ok(())
    }

    /// Installs what `save` stored, and purges the URLs whose bytes that changed where this
    /// replica keeps the site current (it may have lost the lease meanwhile).
    fn install_saved(&self, next: Snapshot, save: crate::purge::Save<'_>) {
        let holds = self.lease.as_ref().is_none_or(|lease| lease.holds());
        match self.purge.as_ref().filter(|_| holds) {
            Some(purge) => purge.install(save, || self.group.install(next)),
            None => self.group.install(next),
        }
    }

    fn install_stored(&self, stored: &SavedState) {
        self.quiet.forget_measured();
        let next = self
            .group
            .snapshot()
            .with_stored(stored, self.group.publication());
        self.group.install(next);
    }
}

/// Whether `stored` was laid out under `group`'s settings: files laid out under others (another
/// page size, other rules) are not served, as they may break the new limits.
pub(super) fn made_under(stored: &SavedState, group: &Group) -> bool {
    stored
        .file(SETTINGS_FILE)
        .is_some_and(|f| f.fingerprint == group.settings.fingerprint)
}

/// Says in the log when the set of skipped rows changes; `sitemapd check` lists examples.
impl Sweeper {
    /// Tells who should know what a saved sweep changed: the index's new date, the URLs that
    /// left a view (of the files read whole and the ids patched, as they were `before`), the
    /// robots rules the files were made under.
    async fn announce_saved(
        &self,
        index_changed: bool,
        read: (&Layout, &[usize], &[crate::store::IdRange]),
    ) {
        if index_changed {
            announce::index_changed(&self.group, &self.notifier).await;
        }
        announce::left_view(&self.group, &self.notifier, read, &self.listed_known).await;
        if self.robots_rules_changed.swap(false, Ordering::Relaxed) {
            announce::robots_rules_changed(&self.group, &self.notifier).await;
        }
    }

    /// Whether a file is served with no database summary of its rows yet (laid out anew,
    /// patched): the next full sweep reads it, or takes its summary.
    fn has_unsummarised_files(&self) -> bool {
        let snapshot = self.group.snapshot();
        snapshot.layout.pages().iter().any(|p| p.summary.is_none())
    }
}

fn report_skips(before: &Snapshot, after: &Snapshot) {
    let (old, new) = (before.layout.skipped(), after.layout.skipped());
    if old != new && new.total() > 0 {
        let summary: Vec<String> = new
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| format!("{}={n}", r.as_str()))
            .collect();
        tracing::warn!(skipped = %summary.join(" "), "entries left out of the sitemaps; `sitemapd check` shows examples");
    }
}
