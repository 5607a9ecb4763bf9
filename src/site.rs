//! A served site: its configuration-derived rules, the current [`Snapshot`] of its files'
//! validators, and the sweep that keeps that snapshot equal to the database.
//!
//! Validators live in the database (`sitemapd_pages`, `sitemapd_files`), so every replica and
//! every restart answers with the same ETag and Last-Modified. The sweep re-measures pages after
//! a change (at once for our own table, whose triggers report the ids touched; every
//! SITEMAP_REFRESH_SECS for any source), and a file's `changed_at` moves forward whenever its
//! bytes change, never backwards, so If-Modified-Since cannot hide a change.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::StreamExt;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::config::{BaseUrl, Config};
use crate::feed::{FeedEntry, FeedSite, ATOM_FILE, RSS_FILE};
use crate::notify::{HostSet, Notifier};
use crate::pages::{apply_scan, Layout, Measure, Page};
use crate::sitemap::{
    DocumentStyle, EntryRules, Fingerprint, Namespaces, SkipCounts, MAX_SITEMAPS_PER_INDEX,
};
use crate::store::{Change, FileRecord, IdRange, PageRecord, Store, StoreError, SubmittedThrough};

/// Why a sweep did not store new validators. The served state stays as it was; the sweep is
/// owed and [`Site::keep_current`] runs it again.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("gave up after {0} tries: other replicas kept moving the file boundaries")]
    Contended(usize),
}

/// Validators of one whole file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validators {
    pub fingerprint: Fingerprint,
    /// Unix seconds.
    pub changed_at: i64,
}

/// Everything needed to answer a request without touching the database.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub layout: Layout,
    /// The sitemap index document, built once per sweep (it is small).
    pub index: SmallDoc,
    pub robots: Validators,
    pub robots_body: Bytes,
    /// The Atom and RSS feeds, unless SITEMAP_FEED_SIZE is 0.
    pub feeds: Option<Feeds>,
}

/// A small whole document kept in memory, with its gzip form made on first request.
#[derive(Debug, Clone)]
pub struct SmallDoc {
    pub body: Bytes,
    pub gz: OnceLock<Bytes>,
    pub validators: Validators,
}

#[derive(Debug, Clone)]
pub struct Feeds {
    pub atom: SmallDoc,
    pub rss: SmallDoc,
}

/// Feed bodies read by a sweep, before their validators are settled.
struct FeedBodies {
    atom: Bytes,
    rss: Bytes,
}

impl Snapshot {
    /// Page `no` with the ids it holds, both from this snapshot.
    pub fn page(&self, no: i64) -> Option<ServedPage> {
        let (index, page) = self.layout.find(no)?;
        Some(ServedPage {
            page: page.clone(),
            range: self.layout.range(index),
        })
    }

    /// The one page when a single file holds every entry.
    pub fn single_page(&self) -> Option<ServedPage> {
        match self.layout.0.as_slice() {
            [only] => self.page(only.no),
            _ => None,
        }
    }

    pub fn skipped(&self) -> SkipCounts {
        self.layout
            .0
            .iter()
            .fold(SkipCounts::default(), |mut acc, p| {
                acc.merge(&p.skipped);
                acc
            })
    }

    pub fn served(&self) -> usize {
        self.layout.0.iter().map(|p| p.urls).sum()
    }
}

/// A page as one request serves it: its validators and the ids it holds, taken together so a
/// render reads exactly the range the validators describe.
#[derive(Debug, Clone)]
pub struct ServedPage {
    pub page: Page,
    pub range: IdRange,
}

/// One site: what it serves and how it stays current.
pub struct Site {
    /// Key of this site's rows in our state tables.
    pub key: String,
    /// The site's URLs: entries must fall under it; robots.txt and the IndexNow key file are
    /// served on its host.
    pub base: BaseUrl,
    /// Where the site's files are published (`sitemaps_url`, by default `base`): the index
    /// lists them there, robots.txt announces the index there, and they are served there.
    pub files: BaseUrl,
    pub rules: EntryRules,
    pub style: DocumentStyle,
    pub page_size: usize,
    pub feed_size: usize,
    pub source: String,
    pub store: Store,
    snapshot: RwLock<Arc<Snapshot>>,
    sweeping: Mutex<()>,
    notifier: Arc<Notifier>,
    /// Changes reported since before the first sweep, for [`Site::keep_current`].
    changes: Mutex<Option<BoxStream<'static, Change>>>,
    /// The opening sweep gave up on contention: [`Site::keep_current`] owes a full one.
    opened_stale: AtomicBool,
    /// Counts sweeps that failed (`sitemapd_sweep_failures_total`).
    sweep_failures: Counter,
}

const INDEX_FILE: &str = "index";
/// Full re-measure of a source whose changes are notified, in case a notification was lost.
const SAFETY_SWEEP: Duration = Duration::from_secs(3600);
const ROBOTS_FILE: &str = "robots";
/// Entries read per query when changed URLs are gathered for IndexNow.
const SUBMIT_BATCH: i64 = 10_000;
/// Most batches one sweep submits; the rest wait for the next sweep.
const SUBMIT_BATCHES_PER_SWEEP: usize = 10;
/// Most reads for the feeds' rows per sweep: 2N + 50 rows, then four times as many each round
/// (N = 100: at most 16,000 rows). PostgreSQL and MySQL read them along the `lastmod` index;
/// SQLite, whose lastmod may be text in any form, sorts (an index on its time expression would
/// make an INSERT of the text `now` fail).
const FEED_READ_ROUNDS: usize = 4;
/// Tries of one sweep when other replicas keep moving the file boundaries under it.
const SWEEP_TRIES: usize = 3;
/// Pause before a failed sweep is run again; it doubles with each failure, up to the refresh.
const RETRY_FIRST: Duration = Duration::from_secs(1);

impl Site {
    /// Loads the stored state and brings it up to date with one full sweep.
    pub async fn open(
        config: &Config,
        store: Store,
        rules: EntryRules,
        robots_body: String,
        notifier: Arc<Notifier>,
        sweep_failures: Counter,
    ) -> Result<Arc<Self>, StoreError> {
        let style = DocumentStyle {
            stylesheet: config
                .stylesheet
                .then(|| config.sitemaps_url.file_url(crate::stylesheet::FILE_NAME)),
        };
        let now = Utc::now().timestamp();
        let robots_body = Bytes::from(robots_body);
        let layout = Layout::empty(&style, now);
        let index_doc = index_document(&style, &config.sitemaps_url, &layout);
        let snapshot = Snapshot {
            index: SmallDoc {
                validators: Validators {
                    fingerprint: Fingerprint::of(&index_doc),
                    changed_at: now,
                },
                body: index_doc,
                gz: OnceLock::new(),
            },
            robots: Validators {
                fingerprint: Fingerprint::of(&robots_body),
                changed_at: now,
            },
            robots_body,
            feeds: None,
            layout,
        };
        let site = Arc::new(Self {
            key: config.base_url.as_str().to_string(),
            base: config.base_url.clone(),
            files: config.sitemaps_url.clone(),
            rules,
            style,
            page_size: config.page_size,
            feed_size: config.feed_size,
            source: config.source.clone(),
            store,
            snapshot: RwLock::new(Arc::new(snapshot)),
            sweeping: Mutex::new(()),
            notifier,
            changes: Mutex::new(None),
            opened_stale: AtomicBool::new(false),
            sweep_failures,
        });
        // Listen first, then sweep: a change made in between is then reported, not lost.
        *site.changes.lock().await = Some(site.store.changes(&site.source).await);
        site.reload().await?;
        match site.sweep(Change::Everything).await {
            Ok(()) => {}
            Err(SweepError::Store(e)) => return Err(e),
            Err(contended @ SweepError::Contended(_)) => {
                // Another replica's state is loaded and served meanwhile.
                tracing::warn!(error = %contended, "opening sweep deferred");
                site.sweep_failures.inc();
                site.opened_stale.store(true, Ordering::Relaxed);
            }
        }
        Ok(site)
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().expect("snapshot lock").clone()
    }

    fn install(&self, snapshot: Snapshot) {
        *self.snapshot.write().expect("snapshot lock") = Arc::new(snapshot);
    }

    /// Replaces the in-memory layout with what the database holds (another writer's work).
    async fn reload(&self) -> Result<(), StoreError> {
        let pages = self.store.load_pages(&self.key).await?;
        let files = self.store.load_files(&self.key).await?;
        let current = self.snapshot();
        let mut next = (*current).clone();
        if !pages.is_empty() {
            let layout = Layout(pages.iter().map(page_from_record).collect());
            next.layout = keep_skip_counts(layout, &current.layout);
        }
        for f in files {
            let fingerprint = Fingerprint::parse_hex(&f.fingerprint).unwrap_or(Fingerprint(0));
            let v = Validators {
                fingerprint,
                changed_at: f.changed_at,
            };
            match f.name.as_str() {
                INDEX_FILE => next.index.validators = v,
                // robots.txt comes from this process's template: only its history is taken.
                ROBOTS_FILE if v.fingerprint == next.robots.fingerprint => next.robots = v,
                // Feeds too: their bodies are read by this process's sweeps.
                ATOM_FILE | RSS_FILE => {
                    if let Some(feeds) = next.feeds.as_mut() {
                        let doc = if f.name == ATOM_FILE {
                            &mut feeds.atom
                        } else {
                            &mut feeds.rss
                        };
                        if doc.validators.fingerprint == v.fingerprint {
                            doc.validators = v;
                        }
                    }
                }
                _ => {}
            }
        }
        next.index.body = index_document(&self.style, &self.files, &next.layout);
        next.index.gz = OnceLock::new();
        self.install(next);
        Ok(())
    }

    /// For a one-shot command (`export`): runs the full sweep the opening deferred when other
    /// replicas kept moving the boundaries, so what is written is current; fails if it cannot.
    pub async fn finish_opening(&self) -> Result<(), SweepError> {
        if self.opened_stale.load(Ordering::Relaxed) {
            self.sweep(Change::Everything).await?;
            self.opened_stale.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Re-measures the pages `change` may have touched and stores their new validators.
    pub async fn sweep(&self, change: Change) -> Result<(), SweepError> {
        let _one_at_a_time = self.sweeping.lock().await;
        self.sweep_locked(change).await
    }

    /// Re-measures `stale` (ids in `range`) after a render met rows its validators do not
    /// describe, unless a sweep has re-measured it since: a burst of requests for a stale file
    /// costs one sweep, not one each.
    pub async fn catch_up(&self, stale: &Page, range: IdRange) -> Result<(), SweepError> {
        let _one_at_a_time = self.sweeping.lock().await;
        let still_stale = self
            .snapshot()
            .page(stale.no)
            .is_some_and(|served| served.page.fingerprint == stale.fingerprint);
        if !still_stale {
            return Ok(());
        }
        self.sweep_locked(Change::Ids(range)).await
    }

    async fn sweep_locked(&self, change: Change) -> Result<(), SweepError> {
        let mut change = change;
        for _attempt in 0..SWEEP_TRIES {
            let current = self.snapshot();
            let indexes = match change {
                Change::Everything => (0..current.layout.0.len()).collect(),
                Change::Ids(range) => current.layout.overlapping(range),
            };
            let measure = Measure {
                rules: &self.rules,
                style: &self.style,
                page_size: self.page_size,
            };
            let scanned = measure.scan(&self.store, &current.layout, &indexes).await?;
            let feeds = self.read_feeds().await?;
            let now = Utc::now().timestamp();
            let proposed = apply_scan(&current.layout, scanned, &self.style, now);
            let started_from = current.layout.boundaries();
            let measured = proposed.clone();
            let mut whole_files = vec![(ROBOTS_FILE, current.robots.fingerprint)];
            if let Some(feeds) = &feeds {
                whole_files.push((ATOM_FILE, Fingerprint::of(&feeds.atom)));
                whole_files.push((RSS_FILE, Fingerprint::of(&feeds.rss)));
            }
            let (style, files) = (self.style.clone(), self.files.clone());
            let saved = self
                .store
                .save_state(&self.key, move |stored_pages, stored_files| {
                    settle(
                        &started_from,
                        proposed,
                        &whole_files,
                        &style,
                        &files,
                        stored_pages,
                        stored_files,
                        now,
                    )
                })
                .await?;
            match saved {
                Some((pages, files)) => {
                    self.install_saved(&current, &measured, &pages, &files, feeds);
                    self.report_skips(&current);
                    let index_changed = files
                        .iter()
                        .any(|f| f.name == INDEX_FILE && f.changed_at >= now);
                    if index_changed {
                        self.announce().await;
                    }
                    return Ok(());
                }
                None => {
                    // Another replica moved the boundaries meanwhile: start from its state.
                    self.reload().await?;
                    change = Change::Everything;
                }
            }
        }
        Err(SweepError::Contended(SWEEP_TRIES))
    }

    /// Tells the world the sitemaps changed: the ping webhook gets the index URL, IndexNow the
    /// URLs of entries modified since the last submission. Failures are logged, never fatal.
    async fn announce(&self) {
        let _ = self
            .notifier
            .ping(&self.files.file_url("sitemap_index.xml"));
        if let Some(hosts) = self.notifier.host_set(&self.base) {
            if let Err(e) = self.submit_modified_entries(&hosts).await {
                tracing::warn!(error = %e, "could not read the entries to submit to IndexNow; the next change retries");
            }
        }
    }

    /// Submits entries whose lastmod moved past what was submitted before (up to now: a
    /// lastmod in the future waits for its time). Progress is stored per site and advanced
    /// with a compare-and-set, so among replicas exactly one submits each batch. The first time,
    /// what already exists is not news: progress starts at now.
    async fn submit_modified_entries(&self, hosts: &HostSet) -> Result<(), StoreError> {
        let now = Utc::now();
        let Some(mut from) = self.store.load_submitted(&self.key).await? else {
            let start = SubmittedThrough {
                lastmod_us: now.timestamp_micros(),
                id: i64::MAX,
            };
            self.store.advance_submitted(&self.key, None, start).await?;
            return Ok(());
        };
        for _ in 0..SUBMIT_BATCHES_PER_SWEEP {
            let modified = self.store.modified_after(from, now, SUBMIT_BATCH).await?;
            let (rows, Some(to)) = (modified.entries, modified.through) else {
                break;
            };
            if !self
                .store
                .advance_submitted(&self.key, Some(from), to)
                .await?
            {
                break; // Another replica took this batch.
            }
            let urls = rows
                .iter()
                .filter_map(|raw| self.rules.accept(raw).ok())
                .map(|entry| entry.loc.as_str().to_string());
            let _ = self.notifier.submit(hosts, urls);
            if (rows.len() as i64) < SUBMIT_BATCH {
                break;
            }
            from = to;
        }
        Ok(())
    }

    /// The feeds' bodies as the database holds them now: the most recently modified entries
    /// that would be served.
    async fn read_feeds(&self) -> Result<Option<FeedBodies>, StoreError> {
        if self.feed_size == 0 {
            return Ok(None);
        }
        let entries = self.recent_feed_entries().await?;
        let site = FeedSite {
            base: &self.base,
            files: &self.files,
        };
        Ok(Some(FeedBodies {
            atom: Bytes::from(site.atom(&entries)),
            rss: Bytes::from(site.rss(&entries)),
        }))
    }

    /// The `feed_size` most recently modified rows that would be served. Rows that are skipped
    /// (out of scope, undated, …) do not count: the read widens, four times over each round, until
    /// enough are found, the table has no more, or [`FEED_READ_ROUNDS`] rounds were read.
    async fn recent_feed_entries(&self) -> Result<Vec<FeedEntry>, StoreError> {
        let mut limit = self.feed_size as i64 * 2 + 50;
        let mut entries = Vec::new();
        for _ in 0..FEED_READ_ROUNDS {
            let rows = self.store.recent(limit).await?;
            let exhausted = (rows.len() as i64) < limit;
            entries = rows
                .iter()
                .filter_map(|raw| {
                    let entry = self.rules.accept(raw).ok()?;
                    FeedEntry::new(entry.loc, entry.lastmod?.at())
                })
                .take(self.feed_size)
                .collect();
            if entries.len() == self.feed_size || exhausted {
                break;
            }
            limit = limit.saturating_mul(4);
        }
        Ok(entries)
    }

    /// Says in the log when the set of skipped rows changes; `sitemapd check` lists examples.
    fn report_skips(&self, before: &Snapshot) {
        let (old, new) = (before.skipped(), self.snapshot().skipped());
        if old != new && new.total() > 0 {
            let summary: Vec<String> = new
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| format!("{}={n}", r.as_str()))
                .collect();
            tracing::warn!(skipped = %summary.join(" "), "entries left out of the sitemaps; `sitemapd check` shows examples");
        }
    }

    fn install_saved(
        &self,
        previous: &Snapshot,
        measured: &Layout,
        pages: &[PageRecord],
        files: &[FileRecord],
        feeds: Option<FeedBodies>,
    ) {
        let layout = keep_skip_counts(
            Layout(pages.iter().map(page_from_record).collect()),
            measured,
        );
        let index_doc = index_document(&self.style, &self.files, &layout);
        let validators = |name: &str, fallback: Validators| {
            files
                .iter()
                .find(|f| f.name == name)
                .map(|f| Validators {
                    fingerprint: Fingerprint::parse_hex(&f.fingerprint)
                        .unwrap_or(fallback.fingerprint),
                    changed_at: f.changed_at,
                })
                .unwrap_or(fallback)
        };
        let doc = |name: &str, body: Bytes| SmallDoc {
            validators: validators(
                name,
                Validators {
                    fingerprint: Fingerprint::of(&body),
                    changed_at: Utc::now().timestamp(),
                },
            ),
            body,
            gz: OnceLock::new(),
        };
        let feeds = feeds.map(|f| Feeds {
            atom: doc(ATOM_FILE, f.atom),
            rss: doc(RSS_FILE, f.rss),
        });
        self.install(Snapshot {
            index: SmallDoc {
                validators: validators(INDEX_FILE, previous.index.validators),
                body: index_doc,
                gz: OnceLock::new(),
            },
            robots: validators(ROBOTS_FILE, previous.robots),
            robots_body: previous.robots_body.clone(),
            feeds,
            layout,
        });
    }

    /// Runs sweeps for as long as the process lives: on each change the database reports, and
    /// every `refresh` for sources that report nothing (views over CMS tables). Sources with our
    /// triggers get a full sweep only hourly, as a safety net. A sweep that fails (the database
    /// away, a statement timed out) is owed: a full sweep follows after [`RETRY_FIRST`], then
    /// after twice as long each time it fails again, at most `refresh` apart, until one succeeds;
    /// changes reported meanwhile wait for it (it covers them).
    pub async fn keep_current(self: Arc<Self>, refresh: Duration) {
        let notifying = self.store.notifies(&self.source).await;
        let period = if notifying {
            refresh.max(SAFETY_SWEEP)
        } else {
            refresh
        };
        tracing::info!(source = %self.source, notifying, period_secs = period.as_secs(), "keeping sitemaps current");
        let mut changes = match self.changes.lock().await.take() {
            Some(changes) => changes,
            None => self.store.changes(&self.source).await,
        };
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let mut owed = self
            .opened_stale
            .load(Ordering::Relaxed)
            .then(|| Owed::after(None, refresh));
        loop {
            let retry_at = owed.map(|o| o.at);
            let change = tokio::select! {
                Some(change) = changes.next() => change,
                _ = ticker.tick() => Change::Everything,
                _ = tokio::time::sleep_until(retry_at.unwrap_or_else(Instant::now)), if retry_at.is_some() => Change::Everything,
            };
            let change = match owed {
                // The owed full sweep covers this change; it runs at its time, not sooner, so a
                // database that times out is not handed one full sweep per change.
                Some(o) if Instant::now() < o.at => continue,
                // What the failed sweep should have covered is not known any more: all of it.
                Some(_) => Change::Everything,
                None => change,
            };
            match self.sweep(change).await {
                Ok(()) => owed = None,
                Err(e) => {
                    self.sweep_failures.inc();
                    let next = Owed::after(owed, refresh);
                    owed = Some(next);
                    tracing::warn!(error = %e, retry_in_secs = next.pause.as_secs(), "sweep failed; serving the last known state");
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

/// Merges a proposed layout with what is stored: keeps stored times of unchanged files and moves
/// the time of changed ones strictly forward. `None` when the stored boundaries are not the ones
/// the sweep started from.
#[allow(clippy::too_many_arguments)]
fn settle(
    started_from: &[(i64, i64)],
    mut proposed: Layout,
    whole_files: &[(&str, Fingerprint)],
    style: &DocumentStyle,
    files: &BaseUrl,
    stored_pages: Vec<PageRecord>,
    stored_files: Vec<FileRecord>,
    now: i64,
) -> Option<(Vec<PageRecord>, Vec<FileRecord>)> {
    let stored_boundaries: Vec<(i64, i64)> = stored_pages
        .iter()
        .map(|p| (p.page_no, p.first_id))
        .collect();
    if !stored_pages.is_empty() && stored_boundaries != started_from {
        return None;
    }
    for page in &mut proposed.0 {
        let stored = stored_pages.iter().find(|s| s.page_no == page.no);
        page.changed_at = settle_time(
            stored.map(|s| (s.fingerprint.as_str(), s.changed_at)),
            page.fingerprint,
            now,
        );
    }
    let index_doc = index_document(style, files, &proposed);
    let file = |name: &str, fingerprint: Fingerprint| {
        let stored = stored_files.iter().find(|f| f.name == name);
        FileRecord {
            name: name.to_string(),
            fingerprint: fingerprint.hex(),
            changed_at: settle_time(
                stored.map(|s| (s.fingerprint.as_str(), s.changed_at)),
                fingerprint,
                now,
            ),
        }
    };
    let files = std::iter::once(file(INDEX_FILE, Fingerprint::of(&index_doc)))
        .chain(whole_files.iter().map(|(name, fp)| file(name, *fp)))
        .collect();
    Some((proposed.0.iter().map(page_to_record).collect(), files))
}

/// Unchanged bytes keep their time; changed bytes get `now`, but always after the stored time.
fn settle_time(stored: Option<(&str, i64)>, fingerprint: Fingerprint, now: i64) -> i64 {
    match stored {
        Some((fp, at)) if fp == fingerprint.hex() => at,
        Some((_, at)) => now.max(at + 1),
        None => now,
    }
}

/// Skip counts are not stored; they carry over from the layout that measured them.
fn keep_skip_counts(mut layout: Layout, measured: &Layout) -> Layout {
    for page in &mut layout.0 {
        if let Some((_, m)) = measured.find(page.no) {
            page.skipped = m.skipped.clone();
        }
    }
    layout
}

fn page_from_record(r: &PageRecord) -> Page {
    Page {
        no: r.page_no,
        first_id: r.first_id,
        urls: r.urls.max(0) as usize,
        bytes: r.bytes.max(0) as usize,
        fingerprint: Fingerprint::parse_hex(&r.fingerprint).unwrap_or(Fingerprint(0)),
        changed_at: r.changed_at,
        namespaces: Namespaces::from_bits(r.extensions),
        skipped: SkipCounts::default(),
    }
}

fn page_to_record(p: &Page) -> PageRecord {
    PageRecord {
        page_no: p.no,
        first_id: p.first_id,
        urls: p.urls as i64,
        bytes: p.bytes as i64,
        fingerprint: p.fingerprint.hex(),
        changed_at: p.changed_at,
        extensions: p.namespaces.bits(),
    }
}

/// File name of page K as served.
pub fn page_file_name(no: i64) -> String {
    format!("sitemap-{no}.xml.gz")
}

/// The name of page `no`'s text sitemap.
pub fn text_file_name(no: i64) -> String {
    format!("sitemap-{no}.txt")
}

/// The sitemap index for a layout: every page at `files` (where the site's files are
/// published), with the time its bytes last changed.
pub fn index_document(style: &DocumentStyle, files: &BaseUrl, layout: &Layout) -> Bytes {
    if layout.0.len() > MAX_SITEMAPS_PER_INDEX {
        tracing::error!(
            pages = layout.0.len(),
            "more sitemap files than one index may list; listing the first 50000"
        );
    }
    let entries: Vec<(String, DateTime<Utc>)> = layout
        .0
        .iter()
        .take(MAX_SITEMAPS_PER_INDEX)
        .map(|p| {
            (
                files.file_url(&page_file_name(p.no)),
                to_datetime(p.changed_at),
            )
        })
        .collect();
    Bytes::from(style.index(entries.iter().map(|(u, t)| (u.as_str(), *t))))
}

pub fn to_datetime(unix: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(unix, 0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_moves_forward_even_within_the_same_second() {
        let fp = Fingerprint(1);
        assert_eq!(settle_time(Some((&fp.hex(), 50)), fp, 60), 50);
        assert_eq!(settle_time(Some(("other", 60)), fp, 60), 61);
        assert_eq!(settle_time(Some(("other", 10)), fp, 60), 60);
        assert_eq!(settle_time(None, fp, 60), 60);
    }

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
