//! What both listeners answer from: the sites and their snapshots, the reader, the metrics, the
//! crawler ledger and verifier, and the settings responses follow. [`crate::app`] builds it
//! once; the public side ([`crate::http`]) and the status page ([`crate::admin`]) read it, so
//! neither depends on the other.

use std::sync::Arc;

use crate::answer::Reader;
use crate::ledger::Ledger;
use crate::metrics::Metrics;
use crate::site::sources::SourceCheck;
use crate::site::Site;

/// Everything a request is answered from, on either listener; built once at start.
pub struct App {
    /// The sites served: one, or those of SITEMAP_SITES_FILE.
    pub sites: Vec<Arc<Site>>,
    /// Whether a request's Host header chooses its site (else the one site answers any Host).
    pub routed_by_host: bool,
    /// `<key>.txt` when IndexNow is on: served under each site's base URL.
    pub indexnow_key_file: Option<String>,
    pub reader: Arc<Reader>,
    pub metrics: Arc<Metrics>,
    /// What crawlers fetched, by User-Agent and verdict.
    pub ledger: Arc<Ledger>,
    /// Tells true crawlers from forged ones; the ledger counts each request under its verdict.
    pub verifier: Arc<crate::verify::Verifier>,
    /// `TRUSTED_PROXIES`: peers whose forwarding headers give the client address.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The access log's crawl log, when `ACCESS_LOG_ADDR` is set.
    pub crawl_log: Option<Arc<crate::crawllog::CrawlLog>>,
    /// `Cache-Control` per kind of file (`SITEMAP_CACHE_CONTROL` and the shared-cache part).
    pub cache_headers: crate::cache_headers::CacheHeaders,
    /// `X-Robots-Tag` for every response (staging), or only documents (production).
    pub staging: bool,
    /// Whether every group's source can be read, as `/readyz` last found it.
    pub sources: SourceCheck,
    /// Each site's crawler policy as the status page shows it, in the order of `sites`.
    pub policies: Vec<crate::robots::PolicySummary>,
    /// `ROBOTS_PUBLIC_CHECK=on`: the last hourly comparison of each site's public robots.txt.
    pub public_robots: Option<Arc<crate::public_robots::watch::PublicWatch>>,
}

pub type AppState = Arc<App>;

impl App {
    /// The first (or only) site.
    pub fn site(&self) -> &Arc<Site> {
        &self.sites[0]
    }
}
