//! Prometheus metrics of one running service, in a registry of its own (no globals, so several
//! servers in one test process keep separate counts).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::ledger::CrawlerMetrics;
use crate::notify::NotifyMetrics;
use crate::sitemap::SkipCounts;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: &'static str,
    pub status: u16,
}

/// A site (its base URL).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SiteLabels {
    pub site: String,
}

/// A site (its base URL) and one of its groups (empty for the unnamed group).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabels {
    pub site: String,
    pub group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: &'static str,
    pub site: String,
    pub group: String,
}

/// The write side's counters.
#[derive(Debug, Clone, Default)]
pub struct SweepMetrics {
    /// Sweeps that failed and are owed.
    pub failures: Counter,
    /// Files measured again: read whole from the database, or patched by blocks.
    pub files_measured: Counter,
    /// Blocks of ids read again to patch a file a logged change touched.
    pub blocks_read: Counter,
    /// Summary checks of every file (cheap: the database sends one row per file).
    pub summary_checks: Counter,
    /// Periodic sweeps that read nothing: the tables behind the source had not changed.
    pub quiet_refreshes: Counter,
}

/// The service's counters; cheap to update from any task.
pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub not_modified: Counter,
    pub renders: Counter,
    pub render_seconds: Histogram,
    pub cache_hits: Counter,
    pub render_followers: Counter,
    /// Renders that met rows the file's validators do not describe, and were aborted.
    pub stale_renders: Counter,
    pub bytes_served: Counter,
    pub database_errors: Counter,
    /// The write side's counters; hand a clone to each [`crate::sweep::Sweeper`].
    pub sweep: SweepMetrics,
    pub entries_served: Family<GroupLabels, Gauge>,
    pub entries_skipped: Family<ReasonLabels, Gauge>,
    /// Sitemap files of each group.
    pub files: Family<GroupLabels, Gauge>,
    /// 1 for each site this replica keeps current (holds the lease of), 0 where it follows.
    pub lease_held: Family<SiteLabels, Gauge>,
    /// How far behind its primary each site's source database is (SOURCE_DATABASE_URL).
    pub source_lag: Family<SiteLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// Counters of the change notifier; hand a clone to [`crate::notify::Notifier::start`].
    pub notify: NotifyMetrics,
    /// What crawlers fetched; hand a clone to [`crate::ledger::Ledger::new`].
    pub crawlers: CrawlerMetrics,
    /// The crawl log's counters; hand a clone to [`crate::crawllog::CrawlLog::start`].
    pub crawl_log: crate::crawllog::CrawlLogMetrics,
    /// Purges of a cache in front; hand a clone to [`crate::purge::Purger::start`].
    pub purge: crate::purge::PurgeMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("sitemapd");
        let m = Self {
            requests: Family::default(),
            not_modified: Counter::default(),
            renders: Counter::default(),
            render_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            cache_hits: Counter::default(),
            render_followers: Counter::default(),
            stale_renders: Counter::default(),
            bytes_served: Counter::default(),
            database_errors: Counter::default(),
            sweep: SweepMetrics::default(),
            entries_served: Family::default(),
            entries_skipped: Family::default(),
            files: Family::default(),
            lease_held: Family::default(),
            source_lag: Family::default(),
            notify: NotifyMetrics::default(),
            crawlers: CrawlerMetrics::default(),
            crawl_log: crate::crawllog::CrawlLogMetrics::default(),
            purge: crate::purge::PurgeMetrics::default(),
            registry: Registry::default(),
        };
        registry.register(
            "http_requests",
            "HTTP requests by route and status",
            m.requests.clone(),
        );
        registry.register("not_modified", "304 responses", m.not_modified.clone());
        registry.register(
            "renders",
            "Sitemap files rendered from the database",
            m.renders.clone(),
        );
        registry.register(
            "render_seconds",
            "Time to render one sitemap file",
            m.render_seconds.clone(),
        );
        registry.register(
            "cache_hits",
            "Sitemap files served from the in-memory cache",
            m.cache_hits.clone(),
        );
        registry.register(
            "render_followers",
            "Requests for a sitemap file that joined its render under way (single flight)",
            m.render_followers.clone(),
        );
        registry.register(
            "stale_renders",
            "Renders that met rows changed since the last sweep: aborted, never sent under the old ETag",
            m.stale_renders.clone(),
        );
        registry.register("bytes_served", "Body bytes sent", m.bytes_served.clone());
        registry.register(
            "database_errors",
            "Failed database operations",
            m.database_errors.clone(),
        );
        registry.register(
            "sweep_failures",
            "Sweeps that failed (database errors, timeouts, replicas contending); each is run again",
            m.sweep.failures.clone(),
        );
        registry.register(
            "files_measured",
            "Sitemap files sweeps measured again from the database: read whole, or their changed blocks read (see blocks_read)",
            m.sweep.files_measured.clone(),
        );
        registry.register(
            "blocks_read",
            "Blocks of ids read again to patch a file where a logged change fell, instead of reading it whole",
            m.sweep.blocks_read.clone(),
        );
        registry.register(
            "summary_checks",
            "Checks of every file against summaries the database computed (a source nothing logs)",
            m.sweep.summary_checks.clone(),
        );
        registry.register(
            "quiet_refreshes",
            "Periodic checks of a view that read nothing: the database says no table behind it changed since the last sweep",
            m.sweep.quiet_refreshes.clone(),
        );
        registry.register(
            "entries_served",
            "Entries listed in the sitemaps, by site and group",
            m.entries_served.clone(),
        );
        registry.register("files", "Sitemap files, by site and group", m.files.clone());
        registry.register(
            "lease_held",
            "1 where this replica keeps the site's files current, 0 where it follows the replica that does",
            m.lease_held.clone(),
        );
        registry.register(
            "source_lag_seconds",
            "How far behind its primary the database a site's entries are read from is \
             (SOURCE_DATABASE_URL: a standby's replay lag, a replica's Seconds_Behind_Source); \
             NaN while not known",
            m.source_lag.clone(),
        );
        registry.register(
            "entries_skipped",
            "Entries (and extension rows) left out, by site, group and reason",
            m.entries_skipped.clone(),
        );
        m.notify.register(&mut registry);
        m.crawlers.register(&mut registry);
        m.crawl_log.register(&mut registry);
        m.purge.register(&mut registry);
        Self { registry, ..m }
    }

    /// What one group of one site lists and leaves out now.
    pub fn record_entries(
        &self,
        group: &GroupLabels,
        files: usize,
        served: usize,
        skipped: &SkipCounts,
    ) {
        self.files.get_or_create(group).set(files as i64);
        self.entries_served.get_or_create(group).set(served as i64);
        for (reason, count) in skipped.iter() {
            self.entries_skipped
                .get_or_create(&ReasonLabels {
                    reason: reason.as_str(),
                    site: group.site.clone(),
                    group: group.group.clone(),
                })
                .set(count as i64);
        }
    }

    /// What a site's source database last said of its lag (`None`: not known).
    pub fn record_source_lag(&self, site: &str, lag_seconds: Option<f64>) {
        self.source_lag
            .get_or_create(&SiteLabels { site: site.into() })
            .set(lag_seconds.unwrap_or(f64::NAN));
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
