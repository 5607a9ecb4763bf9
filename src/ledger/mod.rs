//! The crawler ledger: which crawlers fetched robots.txt, the index and each sitemap file
//! from sitemapd, when, with what status, and which files changed since a crawler last fetched
//! them — for the status page and the metrics `sitemapd_crawler_requests_total{crawler,status,verified}`
//! and `sitemapd_crawler_files_behind{crawler}`.
//!
//! Crawlers are told apart by the [`Registry`] ([`crate::crawlers`]): each registry crawler by
//! its name, and "other" for a User-Agent the registry does not know. User-Agent can be forged,
//! so each request is recorded with its [`Trust`] (what verification found its client address
//! proves), and the counts say how many were verified, unverified and forged. With verification
//! on, the files a verifiable crawler fetched (and so "files behind") are those of its verified
//! requests only.
//!
//! Recording sits on every request's path, so it never awaits, never allocates for a file it
//! already knows, and holds one small lock (its crawler's) only for a counter bump and a map
//! update. A crawler's part of the ledger is made on its first request, so the hundreds of
//! registry crawlers that never come cost a slot each. Memory is bounded whatever the traffic:
//! each crawler tracks at most [`MAX_FILES_PER_CRAWLER`] files and forgets the least recently
//! fetched first.
//!
//! Beside it: `metrics.rs` (its prometheus counters and labels), [`files`] (what the ledger
//! calls a site's files, and each as served now), [`summary`] (what it tells the status page),
//! `recent.rs` (one crawler's bounded file map) and `version.rs` (whether a crawler is behind on
//! a file).

pub mod files;
mod metrics;
mod recent;
pub mod summary;
pub mod unknown;
mod version;

pub use metrics::{CrawlerLabels, CrawlerMetrics, CrawlerName, CrawlerStatusLabels, Verified};
pub use version::{version_of_etag, Fetch, Served};

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::Serialize;

pub use crate::crawlers::OTHER;
use crate::crawlers::{CrawlerId, Registry, Trust};
use crate::sync::lock;

use recent::Recent;

/// Most (site, file) pairs one crawler's last fetches are kept for.
///
/// A site has robots.txt, an index and its sitemap files; 10,000 covers 500 million URLs at the
/// protocol's 50,000 per file, so a real crawler's history fits whole. When a crawler fetches a
/// new file with its ledger full, the file it fetched least recently is forgotten (rather than
/// refusing the new one): the ledger then describes what the crawler does now, and a forgotten
/// file only drops out of "files behind" until that crawler fetches it again.
pub const MAX_FILES_PER_CRAWLER: usize = 10_000;

/// A (site, file) pair longer than this, together, is counted but not tracked, so a key's size is
/// bounded too. Real keys (a base URL and a file name) are far shorter.
const MAX_KEY_BYTES: usize = 1024;

/// One file a crawler fetched, and when it last did (a `200` or `304`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileFetch {
    /// The site's base URL, as given to [`Ledger::record`].
    pub site: String,
    /// The file's name, e.g. `robots.txt`, `sitemap_index.xml`, `sitemap-3.xml.gz`.
    pub file: String,
    /// Unix seconds.
    pub last_fetch: i64,
}

/// What one crawler did, for the status page (serialised as JSON there).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrawlerActivity {
    /// The registry crawler, or `None` for requests of no registry crawler ("other").
    #[serde(skip)]
    pub crawler: Option<CrawlerId>,
    /// Its registry name, or [`OTHER`].
    pub name: String,
    /// The crawler's latest request of any file, whatever its status (unix seconds); `None` if
    /// it never came since the service started.
    pub last_fetch: Option<i64>,
    /// `200` responses.
    pub ok: u64,
    /// `304` responses: re-fetches the validators saved.
    pub not_modified: u64,
    /// Requests (any status) whose client address proved the crawler.
    pub verified: u64,
    /// Requests no method could decide (or a crawler with no method, or verification off).
    pub unverified: u64,
    /// Requests whose client address every method of the crawler refuted.
    pub forged: u64,
    /// Its latest `200` or `304` of robots.txt, of any site (unix seconds): a crawler that never
    /// read it cannot know the site's policy.
    pub robots_txt: Option<i64>,
    /// The files it fetched (at most [`MAX_FILES_PER_CRAWLER`], the most recent), sorted by site
    /// then file.
    pub files: Vec<FileFetch>,
    /// Requests of each of the last [`DAYS_KEPT`] days (UTC), oldest first, today last.
    pub per_day: Vec<DayCount>,
}

/// Requests of one crawler on one day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DayCount {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub requests: u64,
}

/// Days of request counts kept per crawler, for the status page's chart.
pub const DAYS_KEPT: usize = 14;

/// One crawler's part of the ledger, behind its own lock.
#[derive(Debug)]
struct Track {
    last_fetch: Option<i64>,
    robots_txt: Option<i64>,
    ok: u64,
    not_modified: u64,
    /// Requests by verdict, indexed by [`trust_slot`].
    trust: [u64; 3],
    files: Recent,
    /// Requests per day: slot `day % DAYS_KEPT` holds `(day, count)` (days since 1970).
    days: [(i64, u64); DAYS_KEPT],
}

impl Track {
    fn new(file_capacity: usize) -> Self {
        Self {
            last_fetch: None,
            robots_txt: None,
            ok: 0,
            not_modified: 0,
            trust: [0; 3],
            files: Recent::new(file_capacity),
            days: [(i64::MIN, 0); DAYS_KEPT],
        }
    }
}

/// What crawlers fetched since the service started; shared by the request handlers as
/// `Arc<Ledger>`. Nothing is persisted: it is a view of current behaviour, not an audit log.
///
/// One `std::sync::Mutex` per crawler rather than one for all (so Googlebot and bingbot never
/// wait on each other) and rather than an async lock (each is held for a map update, never across
/// an await). Nothing here panics with a lock held, but should a lock be poisoned anyway it is
/// used regardless ([`crate::sync`]): a statistics ledger must never fail the request that
/// feeds it.
#[derive(Debug)]
pub struct Ledger {
    registry: Arc<Registry>,
    /// One slot per registry crawler in registry order, then one for "other"; a slot's track is
    /// made on the crawler's first request.
    tracks: Box<[OnceLock<Mutex<Track>>]>,
    /// The metrics' label of each slot, made once so that counting a request copies a pointer.
    names: Box<[CrawlerName]>,
    file_capacity: usize,
    metrics: CrawlerMetrics,
    /// Whether verification is on: then a verifiable crawler's files are those of its verified
    /// requests only.
    verifying: bool,
    /// The User-Agents of "other" requests seen most (bounded).
    unknown: unknown::UnknownAgents,
}

impl Ledger {
    /// An empty ledger of `registry`'s crawlers that counts into `metrics` (register them with
    /// the service's registry).
    pub fn new(registry: Arc<Registry>, metrics: CrawlerMetrics) -> Self {
        Self::with_file_capacity(registry, MAX_FILES_PER_CRAWLER, metrics)
    }

    fn with_file_capacity(
        registry: Arc<Registry>,
        file_capacity: usize,
        metrics: CrawlerMetrics,
    ) -> Self {
        let names = registry
            .crawlers()
            .iter()
            .map(|c| CrawlerName::from(c.name.as_str()))
            .chain([CrawlerName::from(OTHER)])
            .collect();
        Self {
            tracks: (0..=registry.len()).map(|_| OnceLock::new()).collect(),
            names,
            registry,
            file_capacity,
            metrics,
            verifying: false,
            unknown: unknown::UnknownAgents::default(),
        }
    }

    /// This ledger with verification `on` or not (off by default): when on, only verified
    /// requests of a crawler that has a verification method count among the files it fetched
    /// (and so in "files behind"); a crawler with no method can never be verified, so its
    /// claimed requests count, as all do when off.
    pub fn verifying(mut self, on: bool) -> Self {
        self.verifying = on;
        self
    }

    /// Whether a request of `crawler` with verdict `trust` counts among the files it fetched.
    /// A crawler no method can verify counts what it claims: nothing could ever prove it.
    fn counts_fetch(&self, crawler: Option<CrawlerId>, trust: Trust) -> bool {
        trust.counts_as_own(self.verifying)
            || crawler.is_none_or(|id| !self.registry.get(id).is_verifiable())
    }

    /// The crawlers this ledger tells apart.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The metrics this ledger counts into.
    pub fn metrics(&self) -> &CrawlerMetrics {
        &self.metrics
    }

    /// The registry crawler a request's User-Agent names; `None` ("other") for none or no header.
    pub fn classify(&self, user_agent: Option<&str>) -> Option<CrawlerId> {
        user_agent.and_then(|ua| self.registry.classify(ua))
    }

    /// Counts a request whose User-Agent names no registry crawler, for the status page's list of
    /// the unknown agents seen most.
    pub fn record_unknown_agent(&self, user_agent: &str) {
        self.unknown.record(user_agent);
    }

    /// The unknown User-Agents seen most, most first.
    pub fn unknown_agents(&self) -> Vec<unknown::UnknownAgent> {
        self.unknown.top()
    }

    /// The name `crawler` is shown and counted under: its registry name, or [`OTHER`].
    pub fn name(&self, crawler: Option<CrawlerId>) -> &str {
        self.names[self.slot(crawler)].as_str()
    }

    /// Notes that `crawler` (`None`: other) was answered `status` for `file` of `site` at `at`
    /// (unix seconds), and that verification found `trust` of its client address; which
    /// version of the file it got is not known (see [`Ledger::record_fetch`]).
    pub fn record(
        &self,
        crawler: Option<CrawlerId>,
        trust: Trust,
        site: &str,
        file: &str,
        status: u16,
        at: i64,
    ) {
        self.record_fetch(crawler, trust, site, file, status, Fetch::from(at));
    }

    /// Notes that `crawler` (`None`: other) was answered `status` for `file` of `site` (when,
    /// and which version of the file: [`Fetch`]), and that verification found `trust` of its
    /// client address.
    ///
    /// Every status counts in `sitemapd_crawler_requests_total`, in the verdict's count and in
    /// the crawler's last fetch; only `200` and `304` (the crawler now has the current file)
    /// count as `ok` / `not_modified` and update the file's last fetch (for a verifiable crawler
    /// with verification on, only when verified). O(1) amortised; allocates only the first time
    /// a crawler comes or fetches a file (or after the file was forgotten).
    pub fn record_fetch(
        &self,
        crawler: Option<CrawlerId>,
        trust: Trust,
        site: &str,
        file: &str,
        status: u16,
        fetch: Fetch,
    ) {
        let at = fetch.at;
        let slot = self.slot(crawler);
        self.metrics
            .requests
            .get_or_create(&CrawlerStatusLabels {
                crawler: self.names[slot].clone(),
                status,
                verified: Verified(trust),
            })
            .inc();
        let counts_fetch = self.counts_fetch(crawler, trust);
        let mut track = self.track_of_slot(slot);
        track.trust[trust_slot(trust)] += 1;
        track.last_fetch = Some(track.last_fetch.map_or(at, |last| last.max(at)));
        let day = at.div_euclid(86_400);
        let day_slot = &mut track.days[day.rem_euclid(DAYS_KEPT as i64) as usize];
        if day_slot.0 != day {
            *day_slot = (day, 0);
        }
        day_slot.1 += 1;
        match status {
            200 => track.ok += 1,
            304 => track.not_modified += 1,
            _ => return,
        }
        // Fetches of robots.txt tell whether a crawler can know the site's policy.
        if file == crate::files::ROBOTS {
            track.robots_txt = Some(track.robots_txt.map_or(at, |last| last.max(at)));
        }
        if counts_fetch && site.len() + file.len() <= MAX_KEY_BYTES {
            track.files.touch(site, file, fetch);
        }
    }

    /// The crawlers that came since the start, in registry order, then "other" (always).
    pub fn seen(&self) -> impl Iterator<Item = Option<CrawlerId>> + '_ {
        self.registry
            .ids()
            .filter(|id| self.tracks[id.index()].get().is_some())
            .map(Some)
            .chain([None])
    }

    /// When `crawler` last read robots.txt (a `200` or `304`), unix seconds; `None`: never since
    /// the start.
    pub fn robots_txt_fetch(&self, crawler: Option<CrawlerId>) -> Option<i64> {
        self.tracks[self.slot(crawler)]
            .get()
            .and_then(|track| lock(track).robots_txt)
    }

    /// What every crawler that came did ([`Ledger::seen`] order; "other" always last).
    pub fn snapshot(&self) -> Vec<CrawlerActivity> {
        let now = chrono::Utc::now().timestamp();
        self.seen()
            .map(|crawler| {
                let (last_fetch, ok, not_modified, trust, robots_txt, fetched, days) = {
                    let track = self.track(crawler);
                    (
                        track.last_fetch,
                        track.ok,
                        track.not_modified,
                        track.trust,
                        track.robots_txt,
                        Self::fetched(&track),
                        track.days,
                    )
                };
                let mut files: Vec<FileFetch> = fetched
                    .into_iter()
                    .map(|(site, file, fetch)| FileFetch {
                        site: site.to_string(),
                        file: file.to_string(),
                        last_fetch: fetch.at,
                    })
                    .collect();
                files.sort_unstable_by(|a, b| (&a.site, &a.file).cmp(&(&b.site, &b.file)));
                CrawlerActivity {
                    crawler,
                    name: self.name(crawler).to_string(),
                    last_fetch,
                    ok,
                    not_modified,
                    verified: trust[trust_slot(Trust::Verified)],
                    unverified: trust[trust_slot(Trust::Unverified)],
                    forged: trust[trust_slot(Trust::Forged)],
                    robots_txt,
                    files,
                    per_day: per_day(&days, now),
                }
            })
            .collect()
    }

    /// How many files `crawler` fetched that changed after its last fetch of them: whose
    /// version served now is not the one it got (or, when a version is not known, that changed
    /// in a later second).
    ///
    /// `changed(site, file)` gives the file as served now ([`Served`], or its last change in
    /// unix seconds), or `None` if the file no longer exists (not counted: there is nothing
    /// left to fetch).
    pub fn files_behind<S: Into<Served>>(
        &self,
        crawler: Option<CrawlerId>,
        changed: impl Fn(&str, &str) -> Option<S>,
    ) -> usize {
        self.behind(crawler)
            .filter(|(site, file, fetch)| is_behind(&changed, site, file, *fetch))
            .count()
    }

    /// The (site, file) pairs [`Ledger::files_behind`] counts, sorted by site then file.
    pub fn files_changed_since<S: Into<Served>>(
        &self,
        crawler: Option<CrawlerId>,
        changed: impl Fn(&str, &str) -> Option<S>,
    ) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = self
            .behind(crawler)
            .filter(|(site, file, fetch)| is_behind(&changed, site, file, *fetch))
            .map(|(site, file, _)| (site.to_string(), file.to_string()))
            .collect();
        files.sort_unstable();
        files
    }

    /// Sets `sitemapd_crawler_files_behind` for every crawler that came and "other"; call it
    /// before the metrics are encoded (or after each sweep), with the same `changed` as
    /// [`Ledger::files_behind`].
    pub fn refresh_files_behind<S: Into<Served>>(&self, changed: impl Fn(&str, &str) -> Option<S>) {
        for crawler in self.seen() {
            let behind = self.files_behind(crawler, &changed);
            self.metrics
                .files_behind
                .get_or_create(&CrawlerLabels {
                    crawler: self.names[self.slot(crawler)].clone(),
                })
                .set(i64::try_from(behind).unwrap_or(i64::MAX));
        }
    }

    /// `crawler`'s tracked files, copied out so `changed` runs without the lock held: a slow
    /// `changed` never holds up the requests recording into the same crawler's track.
    fn behind(
        &self,
        crawler: Option<CrawlerId>,
    ) -> impl Iterator<Item = (Arc<str>, Arc<str>, Fetch)> {
        let fetched = match self.tracks[self.slot(crawler)].get() {
            Some(track) => Self::fetched(&lock(track)),
            None => Vec::new(),
        };
        fetched.into_iter()
    }

    /// A track's files as shared strings (cheap to copy under the lock: reference counts only).
    fn fetched(track: &Track) -> Vec<(Arc<str>, Arc<str>, Fetch)> {
        track
            .files
            .iter()
            .map(|(site, file, fetch)| (Arc::clone(site), Arc::clone(file), fetch))
            .collect()
    }

    /// The slot of `crawler`: its registry index, or the last one for "other". An id beyond
    /// this ledger's registry counts as "other" rather than failing the request.
    fn slot(&self, crawler: Option<CrawlerId>) -> usize {
        let other = self.registry.len();
        crawler.map_or(other, |id| id.index().min(other))
    }

    fn track(&self, crawler: Option<CrawlerId>) -> MutexGuard<'_, Track> {
        self.track_of_slot(self.slot(crawler))
    }

    fn track_of_slot(&self, slot: usize) -> MutexGuard<'_, Track> {
        lock(self.tracks[slot].get_or_init(|| Mutex::new(Track::new(self.file_capacity))))
    }
}

/// Where a verdict is counted in [`Track::trust`].
fn trust_slot(trust: Trust) -> usize {
    match trust {
        Trust::Verified => 0,
        Trust::Unverified => 1,
        Trust::Forged => 2,
    }
}

/// Whether a file fetched as `fetch` has changed since (and still exists).
fn is_behind<S: Into<Served>>(
    changed: &impl Fn(&str, &str) -> Option<S>,
    site: &str,
    file: &str,
    fetch: Fetch,
) -> bool {
    changed(site, file).is_some_and(|now| version::is_behind(fetch, now.into()))
}

/// The last [`DAYS_KEPT`] days up to the one of `now`, oldest first, with their counts.
fn per_day(days: &[(i64, u64); DAYS_KEPT], now: i64) -> Vec<DayCount> {
    let today = now.div_euclid(86_400);
    (today - DAYS_KEPT as i64 + 1..=today)
        .map(|day| {
            let (kept, count) = days[day.rem_euclid(DAYS_KEPT as i64) as usize];
            DayCount {
                day: chrono::DateTime::from_timestamp(day * 86_400, 0)
                    .map(|t| t.format("%Y-%m-%d").to_string())
                    .unwrap_or_default(),
                requests: if kept == day { count } else { 0 },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
