//! The crawler ledger: which crawlers fetched robots.txt, the index and each sitemap file, when,
//! with what status, and which files changed since a crawler last fetched them — for the status
//! page and the metrics `sitemapd_crawler_requests_total{crawler,status}` and
//! `sitemapd_crawler_files_behind{crawler}`.
//!
//! Crawlers are told apart by the product token in their User-Agent ([`Crawler::classify`]).
//! User-Agent can be forged, so these counts describe what requests *claimed* to be: verifying
//! a crawler takes a reverse-DNS lookup of the client address and a forward lookup of the name
//! found (Google and Bing document the check), which is not done here.
//!
//! Recording sits on every request's path, so it never awaits, never allocates for a file it
//! already knows, and holds one of seven small locks (one per crawler) only for a counter bump and
//! a map update. Memory is bounded whatever the traffic: each crawler tracks at most
//! [`MAX_FILES_PER_CRAWLER`] files and forgets the least recently fetched first.

mod recent;
pub mod registry;

pub use registry::{CrawlerId, CrawlerInfo, Purpose, Registry, RegistryError};

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry as MetricsRegistry;
use serde::Serialize;

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

/// How much of a User-Agent [`Crawler::classify`] reads: real crawlers name themselves well
/// within it, and a huge header costs no more than this.
const USER_AGENT_SCAN_BYTES: usize = 512;

/// A crawler, named by the product token its User-Agent carries.
///
/// Serialises as [`Crawler::as_str`], the same name the metrics' `crawler` label uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Crawler {
    /// Google's crawlers that carry the token, e.g. `Googlebot/2.1`, `Googlebot-Image/1.0`.
    Googlebot,
    /// Bing (`bingbot/2.0`).
    #[serde(rename = "bingbot")]
    Bingbot,
    /// Yandex (`YandexBot/3.0`).
    YandexBot,
    /// Apple (`Applebot/0.1`).
    Applebot,
    /// DuckDuckGo (`DuckDuckBot/1.1`, `DuckDuckBot-Https/1.1`).
    DuckDuckBot,
    /// Baidu (`Baiduspider/2.0`).
    Baiduspider,
    /// Anything else: browsers, curl, other bots, no User-Agent at all.
    #[serde(rename = "other")]
    Other,
}

/// The token each named crawler is recognised by, lowercase (matched ignoring ASCII case).
const TOKENS: [(&[u8], Crawler); 6] = [
    (b"googlebot", Crawler::Googlebot),
    (b"bingbot", Crawler::Bingbot),
    (b"yandexbot", Crawler::YandexBot),
    (b"applebot", Crawler::Applebot),
    (b"duckduckbot", Crawler::DuckDuckBot),
    (b"baiduspider", Crawler::Baiduspider),
];

impl Crawler {
    /// Every crawler, in the order the status page and [`Ledger::snapshot`] list them.
    pub const ALL: [Crawler; 7] = [
        Crawler::Googlebot,
        Crawler::Bingbot,
        Crawler::YandexBot,
        Crawler::Applebot,
        Crawler::DuckDuckBot,
        Crawler::Baiduspider,
        Crawler::Other,
    ];

    /// The name shown and used as the metrics' `crawler` label: each crawler's own spelling of
    /// its token (`bingbot` is lowercase), and `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Crawler::Googlebot => "Googlebot",
            Crawler::Bingbot => "bingbot",
            Crawler::YandexBot => "YandexBot",
            Crawler::Applebot => "Applebot",
            Crawler::DuckDuckBot => "DuckDuckBot",
            Crawler::Baiduspider => "Baiduspider",
            Crawler::Other => "other",
        }
    }

    /// The crawler a User-Agent names: the first known token found in it, ignoring ASCII case,
    /// or [`Crawler::Other`].
    ///
    /// Runs on every request, so it neither allocates nor uses a regex: one pass over at most the
    /// first 512 bytes, comparing bytes in place only where a token's first letter appears.
    pub fn classify(user_agent: &str) -> Crawler {
        let bytes = user_agent.as_bytes();
        let mut rest = &bytes[..bytes.len().min(USER_AGENT_SCAN_BYTES)];
        while let Some((&first, tail)) = rest.split_first() {
            let first = first.to_ascii_lowercase();
            for (token, crawler) in TOKENS {
                if token[0] == first
                    && rest.len() >= token.len()
                    && rest[..token.len()].eq_ignore_ascii_case(token)
                {
                    return crawler;
                }
            }
            rest = tail;
        }
        Crawler::Other
    }

    /// Position in [`Crawler::ALL`], which is also the declaration order.
    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Crawler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Labels of `sitemapd_crawler_requests_total`: who claimed to ask, and the status sent.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CrawlerStatusLabels {
    /// [`Crawler::as_str`].
    pub crawler: &'static str,
    /// The HTTP status code of the response (a label value like `200`).
    pub status: u16,
}

/// Labels of `sitemapd_crawler_files_behind`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CrawlerLabels {
    /// [`Crawler::as_str`].
    pub crawler: &'static str,
}

/// The ledger's metrics; [`CrawlerMetrics::register`] adds them to the service's registry, and a
/// clone goes to [`Ledger::new`] (clones share their values).
#[derive(Clone, Debug, Default)]
pub struct CrawlerMetrics {
    /// Requests by crawler and status, every status (a 404 storm from one bot shows here).
    pub requests: Family<CrawlerStatusLabels, Counter>,
    /// Files each crawler fetched that changed since; set by [`Ledger::refresh_files_behind`],
    /// since only the caller knows the files' change times.
    pub files_behind: Family<CrawlerLabels, Gauge>,
}

impl CrawlerMetrics {
    /// Adds these metrics to `registry` (names get the registry's prefix, and `_total` for the
    /// counter): `crawler_requests` and `crawler_files_behind`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "crawler_requests",
            "Requests by the crawler their User-Agent claims (unverified) and response status",
            self.requests.clone(),
        );
        registry.register(
            "crawler_files_behind",
            "Files a crawler fetched that changed since it last fetched them",
            self.files_behind.clone(),
        );
    }
}

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
    pub crawler: Crawler,
    /// The crawler's latest request of any file, whatever its status (unix seconds); `None` if
    /// it never came since the service started.
    pub last_fetch: Option<i64>,
    /// `200` responses.
    pub ok: u64,
    /// `304` responses: re-fetches the validators saved.
    pub not_modified: u64,
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
    ok: u64,
    not_modified: u64,
    files: Recent,
    /// Requests per day: slot `day % DAYS_KEPT` holds `(day, count)` (days since 1970).
    days: [(i64, u64); DAYS_KEPT],
}

impl Track {
    fn new(file_capacity: usize) -> Self {
        Self {
            last_fetch: None,
            ok: 0,
            not_modified: 0,
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
/// used regardless: a statistics ledger must never fail the request that feeds it.
#[derive(Debug)]
pub struct Ledger {
    tracks: [Mutex<Track>; 7],
    metrics: CrawlerMetrics,
}

impl Default for Ledger {
    /// A ledger with metrics of its own, registered nowhere (for tests and tools).
    fn default() -> Self {
        Self::new(CrawlerMetrics::default())
    }
}

impl Ledger {
    /// An empty ledger that counts into `metrics` (register them with the service's registry).
    pub fn new(metrics: CrawlerMetrics) -> Self {
        Self::with_file_capacity(MAX_FILES_PER_CRAWLER, metrics)
    }

    fn with_file_capacity(file_capacity: usize, metrics: CrawlerMetrics) -> Self {
        Self {
            tracks: std::array::from_fn(|_| Mutex::new(Track::new(file_capacity))),
            metrics,
        }
    }

    /// The metrics this ledger counts into.
    pub fn metrics(&self) -> &CrawlerMetrics {
        &self.metrics
    }

    /// Notes that `crawler` was answered `status` for `file` of `site` at `at` (unix seconds).
    ///
    /// Every status counts in `sitemapd_crawler_requests_total` and in the crawler's last fetch;
    /// only `200` and `304` (the crawler now has the current file) count as `ok` /
    /// `not_modified` and update the file's last fetch. O(1) amortised; allocates only the
    /// first time a crawler fetches a file (or after the file was forgotten).
    pub fn record(&self, crawler: Crawler, site: &str, file: &str, status: u16, at: i64) {
        self.metrics
            .requests
            .get_or_create(&CrawlerStatusLabels {
                crawler: crawler.as_str(),
                status,
            })
            .inc();
        let mut track = self.track(crawler);
        track.last_fetch = Some(track.last_fetch.map_or(at, |last| last.max(at)));
        let day = at.div_euclid(86_400);
        let slot = &mut track.days[day.rem_euclid(DAYS_KEPT as i64) as usize];
        if slot.0 != day {
            *slot = (day, 0);
        }
        slot.1 += 1;
        match status {
            200 => track.ok += 1,
            304 => track.not_modified += 1,
            _ => return,
        }
        if site.len() + file.len() <= MAX_KEY_BYTES {
            track.files.touch(site, file, at);
        }
    }

    /// What every crawler did, in [`Crawler::ALL`] order.
    pub fn snapshot(&self) -> Vec<CrawlerActivity> {
        Crawler::ALL
            .into_iter()
            .map(|crawler| {
                let (last_fetch, ok, not_modified, fetched, days) = {
                    let track = self.track(crawler);
                    (
                        track.last_fetch,
                        track.ok,
                        track.not_modified,
                        Self::fetched(&track),
                        track.days,
                    )
                };
                let mut files: Vec<FileFetch> = fetched
                    .into_iter()
                    .map(|(site, file, last_fetch)| FileFetch {
                        site: site.to_string(),
                        file: file.to_string(),
                        last_fetch,
                    })
                    .collect();
                files.sort_unstable_by(|a, b| (&a.site, &a.file).cmp(&(&b.site, &b.file)));
                CrawlerActivity {
                    crawler,
                    last_fetch,
                    ok,
                    not_modified,
                    files,
                    per_day: per_day(&days, chrono::Utc::now().timestamp()),
                }
            })
            .collect()
    }

    /// How many files `crawler` fetched that changed after its last fetch of them.
    ///
    /// `changed(site, file)` gives a file's last change (unix seconds), or `None` if the file no
    /// longer exists (not counted: there is nothing left to fetch).
    pub fn files_behind(
        &self,
        crawler: Crawler,
        changed: impl Fn(&str, &str) -> Option<i64>,
    ) -> usize {
        self.behind(crawler)
            .filter(|(site, file, last_fetch)| is_behind(&changed, site, file, *last_fetch))
            .count()
    }

    /// The (site, file) pairs [`Ledger::files_behind`] counts, sorted by site then file.
    pub fn files_changed_since(
        &self,
        crawler: Crawler,
        changed: impl Fn(&str, &str) -> Option<i64>,
    ) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = self
            .behind(crawler)
            .filter(|(site, file, last_fetch)| is_behind(&changed, site, file, *last_fetch))
            .map(|(site, file, _)| (site.to_string(), file.to_string()))
            .collect();
        files.sort_unstable();
        files
    }

    /// Sets `sitemapd_crawler_files_behind` for every crawler; call it before the metrics are
    /// encoded (or after each sweep), with the same `changed` as [`Ledger::files_behind`].
    pub fn refresh_files_behind(&self, changed: impl Fn(&str, &str) -> Option<i64>) {
        for crawler in Crawler::ALL {
            let behind = self.files_behind(crawler, &changed);
            self.metrics
                .files_behind
                .get_or_create(&CrawlerLabels {
                    crawler: crawler.as_str(),
                })
                .set(i64::try_from(behind).unwrap_or(i64::MAX));
        }
    }

    /// `crawler`'s tracked files, copied out so `changed` runs without the lock held: a slow
    /// callback must not make a request wait.
    fn behind(&self, crawler: Crawler) -> impl Iterator<Item = (Arc<str>, Arc<str>, i64)> {
        Self::fetched(&self.track(crawler)).into_iter()
    }

    /// A track's files as shared strings (cheap to copy under the lock: reference counts only).
    fn fetched(track: &Track) -> Vec<(Arc<str>, Arc<str>, i64)> {
        track
            .files
            .iter()
            .map(|(site, file, last_fetch)| (Arc::clone(site), Arc::clone(file), last_fetch))
            .collect()
    }

    fn track(&self, crawler: Crawler) -> MutexGuard<'_, Track> {
        self.tracks[crawler.index()]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a file fetched at `last_fetch` has changed since (and still exists).
fn is_behind(
    changed: &impl Fn(&str, &str) -> Option<i64>,
    site: &str,
    file: &str,
    last_fetch: i64,
) -> bool {
    changed(site, file).is_some_and(|change| change > last_fetch)
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
mod tests {
    use super::*;

    const SITE: &str = "https://example.com/";

    #[test]
    fn real_crawler_user_agents_are_classified_by_their_token() {
        let cases = [
            (
                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
                Crawler::Googlebot,
            ),
            (
                "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 \
                 (KHTML, like Gecko) Chrome/120.0.6099.71 Mobile Safari/537.36 (compatible; \
                 Googlebot/2.1; +http://www.google.com/bot.html)",
                Crawler::Googlebot,
            ),
            ("Googlebot-Image/1.0", Crawler::Googlebot),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; \
                 +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
                Crawler::Bingbot,
            ),
            (
                "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
                Crawler::Bingbot,
            ),
            (
                "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
                Crawler::YandexBot,
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, \
                 like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; \
                 +http://www.apple.com/go/applebot)",
                Crawler::Applebot,
            ),
            ("Applebot/0.1", Crawler::Applebot),
            ("DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", Crawler::DuckDuckBot),
            ("DuckDuckBot-Https/1.1; (+https://duckduckgo.com/duckduckbot)", Crawler::DuckDuckBot),
            (
                "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
                Crawler::Baiduspider,
            ),
            ("curl/8.5.0", Crawler::Other),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) \
                 Chrome/124.0.0.0 Safari/537.36",
                Crawler::Other,
            ),
            ("", Crawler::Other),
        ];
        for (user_agent, crawler) in cases {
            assert_eq!(Crawler::classify(user_agent), crawler, "{user_agent}");
        }
    }

    #[test]
    fn classification_ignores_case_and_reads_a_bounded_prefix() {
        assert_eq!(Crawler::classify("GOOGLEBOT"), Crawler::Googlebot);
        assert_eq!(Crawler::classify("BingBot/2.0"), Crawler::Bingbot);
        assert_eq!(Crawler::classify("googlebo"), Crawler::Other);
        assert_eq!(Crawler::classify("é googlebot é"), Crawler::Googlebot);
        let padded = format!("{}Googlebot/2.1", "x".repeat(USER_AGENT_SCAN_BYTES));
        assert_eq!(Crawler::classify(&padded), Crawler::Other);
    }

    #[test]
    fn names_match_the_metric_labels_and_the_json() {
        let names: Vec<&str> = Crawler::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "Googlebot",
                "bingbot",
                "YandexBot",
                "Applebot",
                "DuckDuckBot",
                "Baiduspider",
                "other"
            ]
        );
        for crawler in Crawler::ALL {
            let json = serde_json::to_string(&crawler).unwrap();
            assert_eq!(json, format!("\"{crawler}\""));
            assert_eq!(Crawler::ALL[crawler.index()], crawler);
        }
    }

    #[test]
    fn counts_and_last_fetches_are_kept_per_crawler() {
        let ledger = Ledger::default();
        ledger.record(Crawler::Googlebot, SITE, "robots.txt", 200, 100);
        ledger.record(Crawler::Googlebot, SITE, "sitemap_index.xml", 200, 110);
        ledger.record(Crawler::Googlebot, SITE, "sitemap_index.xml", 304, 120);
        ledger.record(Crawler::Googlebot, SITE, "sitemap-9.xml.gz", 404, 130);
        ledger.record(Crawler::Bingbot, SITE, "sitemap-3.xml.gz", 304, 90);

        let snapshot = ledger.snapshot();
        assert_eq!(
            snapshot.iter().map(|a| a.crawler).collect::<Vec<_>>(),
            Crawler::ALL
        );
        let google = &snapshot[0];
        assert_eq!(google.last_fetch, Some(130), "a 404 is still a visit");
        assert_eq!((google.ok, google.not_modified), (2, 1));
        assert_eq!(
            google.files,
            [
                FileFetch {
                    site: SITE.into(),
                    file: "robots.txt".into(),
                    last_fetch: 100,
                },
                FileFetch {
                    site: SITE.into(),
                    file: "sitemap_index.xml".into(),
                    last_fetch: 120,
                },
            ],
            "sorted, and only files answered 200 or 304"
        );
        let bing = &snapshot[1];
        assert_eq!(
            (bing.last_fetch, bing.ok, bing.not_modified),
            (Some(90), 0, 1)
        );
        let yandex = &snapshot[2];
        assert_eq!((yandex.last_fetch, yandex.ok), (None, 0));
        assert!(yandex.files.is_empty());

        let json = serde_json::to_value(&snapshot[1]).unwrap();
        assert_eq!(json["crawler"], "bingbot");
        assert_eq!(json["not_modified"], 1);
        assert_eq!(json["files"][0]["file"], "sitemap-3.xml.gz");
    }

    #[test]
    fn files_are_sorted_by_site_then_file() {
        let ledger = Ledger::default();
        for (site, file) in [("b/", "a"), ("a/", "z"), ("a/", "b")] {
            ledger.record(Crawler::Other, site, file, 200, 1);
        }
        let other = &ledger.snapshot()[6];
        let keys: Vec<(&str, &str)> = other
            .files
            .iter()
            .map(|f| (f.site.as_str(), f.file.as_str()))
            .collect();
        assert_eq!(keys, [("a/", "b"), ("a/", "z"), ("b/", "a")]);
    }

    #[test]
    fn files_behind_counts_files_changed_after_the_crawlers_last_fetch() {
        let ledger = Ledger::default();
        ledger.record(Crawler::Googlebot, SITE, "sitemap_index.xml", 200, 100);
        ledger.record(Crawler::Googlebot, SITE, "sitemap-1.xml.gz", 200, 100);
        ledger.record(Crawler::Googlebot, SITE, "sitemap-2.xml.gz", 304, 100);
        ledger.record(Crawler::Googlebot, SITE, "sitemap-posts-2.xml.gz", 200, 100);
        ledger.record(Crawler::Bingbot, SITE, "sitemap-1.xml.gz", 200, 300);
        let changed = |site: &str, file: &str| {
            assert_eq!(site, SITE);
            match file {
                "sitemap_index.xml" => Some(200), // changed since: behind
                "sitemap-1.xml.gz" => Some(200),  // behind for Google, not for Bing
                "sitemap-2.xml.gz" => Some(100),  // changed at the fetch itself: current
                "sitemap-posts-2.xml.gz" => None, // no longer exists: not counted
                _ => Some(0),
            }
        };
        assert_eq!(ledger.files_behind(Crawler::Googlebot, changed), 2);
        assert_eq!(
            ledger.files_changed_since(Crawler::Googlebot, changed),
            [
                (SITE.to_string(), "sitemap-1.xml.gz".to_string()),
                (SITE.to_string(), "sitemap_index.xml".to_string()),
            ]
        );
        assert_eq!(ledger.files_behind(Crawler::Bingbot, changed), 0);
        assert_eq!(ledger.files_behind(Crawler::Applebot, changed), 0);
    }

    #[test]
    fn metrics_count_every_status_and_files_behind() {
        let metrics = CrawlerMetrics::default();
        let mut registry = MetricsRegistry::with_prefix("sitemapd");
        metrics.register(&mut registry);
        let ledger = Ledger::new(metrics);
        ledger.record(Crawler::Googlebot, SITE, "robots.txt", 200, 1);
        ledger.record(Crawler::Googlebot, SITE, "robots.txt", 200, 2);
        ledger.record(Crawler::Other, SITE, "nope.xml", 404, 3);
        ledger.refresh_files_behind(|_, _| Some(5));

        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"sitemapd_crawler_requests_total{crawler="Googlebot",status="200"} 2"#,
            r#"sitemapd_crawler_requests_total{crawler="other",status="404"} 1"#,
            r#"sitemapd_crawler_files_behind{crawler="Googlebot"} 1"#,
            r#"sitemapd_crawler_files_behind{crawler="other"} 0"#,
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from:\n{text}"
            );
        }
    }

    #[test]
    fn memory_stays_at_the_cap_and_keeps_the_most_recent_files() {
        let ledger = Ledger::default();
        let distinct = 3 * MAX_FILES_PER_CRAWLER;
        for i in 0..distinct {
            let at = i64::try_from(i).unwrap();
            ledger.record(
                Crawler::Other,
                SITE,
                &format!("sitemap-{i}.xml.gz"),
                200,
                at,
            );
        }
        {
            let track = ledger.track(Crawler::Other);
            assert_eq!(track.files.len(), MAX_FILES_PER_CRAWLER);
            assert_eq!(
                track.files.allocated(),
                (MAX_FILES_PER_CRAWLER, MAX_FILES_PER_CRAWLER)
            );
            assert_eq!(track.ok, u64::try_from(distinct).unwrap());
        }
        let other = &ledger.snapshot()[6];
        assert_eq!(other.files.len(), MAX_FILES_PER_CRAWLER);
        let oldest_kept = distinct - MAX_FILES_PER_CRAWLER;
        let known = |i: usize| {
            other
                .files
                .iter()
                .any(|f| f.file == format!("sitemap-{i}.xml.gz"))
        };
        assert!(known(distinct - 1) && known(oldest_kept));
        assert!(!known(oldest_kept - 1) && !known(0));
        assert_eq!(
            other.files.iter().map(|f| f.last_fetch).min(),
            Some(i64::try_from(oldest_kept).unwrap())
        );
    }

    #[test]
    fn over_long_keys_are_counted_but_not_tracked() {
        let ledger = Ledger::default();
        let long = "x".repeat(MAX_KEY_BYTES);
        ledger.record(Crawler::Googlebot, SITE, &long, 200, 1);
        let google = &ledger.snapshot()[0];
        assert_eq!(google.ok, 1);
        assert!(google.files.is_empty());
    }

    #[test]
    fn concurrent_recording_loses_no_counts() {
        let ledger = Ledger::with_file_capacity(64, CrawlerMetrics::default());
        let threads = 8;
        let per_thread = 2_000;
        std::thread::scope(|scope| {
            for t in 0..threads {
                let ledger = &ledger;
                scope.spawn(move || {
                    for i in 0..per_thread {
                        let crawler = Crawler::ALL[(t + i) % 2];
                        let status = if i % 3 == 0 { 304 } else { 200 };
                        let file = format!("sitemap-{}.xml.gz", i % 100);
                        ledger.record(crawler, SITE, &file, status, i as i64);
                    }
                });
            }
        });
        let snapshot = ledger.snapshot();
        let total: u64 = snapshot.iter().map(|a| a.ok + a.not_modified).sum();
        assert_eq!(total, (threads * per_thread) as u64);
        let not_modified: u64 = snapshot.iter().map(|a| a.not_modified).sum();
        assert_eq!(not_modified, (threads * per_thread.div_ceil(3)) as u64);
        let counted: u64 = Crawler::ALL
            .iter()
            .flat_map(|c| [200, 304].map(|status| (c.as_str(), status)))
            .map(|(crawler, status)| {
                ledger
                    .metrics()
                    .requests
                    .get_or_create(&CrawlerStatusLabels { crawler, status })
                    .get()
            })
            .sum();
        assert_eq!(counted, total);
        assert!(snapshot.iter().all(|a| a.files.len() <= 64));
    }

    #[test]
    fn a_poisoned_lock_does_not_stop_recording() {
        let ledger = Ledger::default();
        let result = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let _held = ledger.track(Crawler::Googlebot);
                    panic!("poison the lock");
                })
                .join()
        });
        assert!(result.is_err());
        assert!(ledger.tracks[0].is_poisoned());
        ledger.record(Crawler::Googlebot, SITE, "robots.txt", 200, 1);
        assert_eq!(ledger.snapshot()[0].ok, 1);
    }

    #[test]
    fn requests_are_counted_per_day_for_two_weeks() {
        let ledger = Ledger::default();
        let day = 86_400;
        let now = 20_000 * day + 100;
        ledger.record(Crawler::Googlebot, "s", "robots.txt", 200, now);
        ledger.record(Crawler::Googlebot, "s", "robots.txt", 304, now - day);
        ledger.record(Crawler::Googlebot, "s", "sitemap_index.xml", 200, now - day);
        // Three weeks ago: outside the two weeks kept.
        ledger.record(Crawler::Googlebot, "s", "robots.txt", 200, now - 20 * day);
        let days = per_day(&ledger.track(Crawler::Googlebot).days, now);
        let counts: Vec<u64> = days.iter().map(|d| d.requests).collect();
        assert_eq!(counts, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1]);
        assert_eq!(days[13].day, "2024-10-04");
    }
}
