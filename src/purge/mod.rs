//! Keeping a cache in front exactly current (`CACHE_PURGE`): once a save installed a group's
//! next snapshot, the URLs whose bytes it changed ([`changed`]) are handed to a bounded
//! background queue per endpoint ([`send`]): an HTTP `PURGE` per URL (Varnish, Fastly, nginx's
//! cache purge, Squid), or one JSON POST of the list (a CDN's API behind a small relay).
//!
//! A save never waits on a cache: it compares two in-memory snapshots and hands a list to a
//! channel; a full queue drops the list and counts it (`sitemapd_cache_purges_total{outcome=
//! "dropped"}`), the shared TTL of the files then bounds how long a cache keeps them. Only the
//! replica that keeps a site current (holds its lease) saves, so only it purges. With replicas,
//! a cache that refetches at once may get the old bytes from a replica that follows and has not
//! loaded the save yet: the `PURGE`s are sent again [`FOLLOWERS_CATCH_UP`] later (they are
//! idempotent and cheap), and the one JSON POST of a save waits that long.
//!
//! An endpoint's failures are logged once per period with their counts ([`failures`]), and a
//! shutdown waits for the queues at most the time it is given ([`Purger::drain`]): an endpoint
//! that never answers cannot keep the process.

mod changed;
mod failures;
mod send;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use url::Url;

use crate::site::Site;
pub use changed::{Save, ServedFiles};

/// Saves whose lists may wait for one endpoint; beyond, a list is dropped (and counted).
const QUEUED_SAVES: usize = 1024;
/// With replicas, when a save's URLs are purged again (and POSTed): replicas that follow load
/// the saved state within about a second (at once on PostgreSQL), and a cache that refetched
/// from one of them meanwhile must not keep the old bytes for its whole TTL.
pub const FOLLOWERS_CATCH_UP: Duration = Duration::from_secs(3);

/// One `CACHE_PURGE` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `http(s)://host[:port][/prefix]`: one `PURGE <prefix><path>` per URL, with the URL's
    /// `Host`.
    Purge(Url),
    /// `post+http(s)://…`: one JSON POST of the absolute URLs (an array of strings) per save.
    Post(Url),
}

impl Endpoint {
    /// One endpoint as `CACHE_PURGE` spells it; the error says what was expected.
    pub fn parse(value: &str) -> Result<Self, &'static str> {
        let value = value.trim();
        let (post, rest) = match value.strip_prefix("post+") {
            Some(rest) => (true, rest),
            None => (false, value),
        };
        let url = Url::parse(rest).map_err(|_| EXPECTED)?;
        if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
            return Err(EXPECTED);
        }
        if url.fragment().is_some() || (!post && url.query().is_some()) {
            return Err("no query or fragment: the PURGE's path is the file's");
        }
        Ok(if post {
            Self::Post(url)
        } else {
            Self::Purge(url)
        })
    }

    /// Where requests go, for logs (without credentials).
    pub fn shown(&self) -> String {
        let (prefix, url) = match self {
            Self::Purge(url) => ("", url),
            Self::Post(url) => ("post+", url),
        };
        let mut url = url.clone();
        let _ = url.set_password(None);
        let _ = url.set_username("");
        format!("{prefix}{url}")
    }
}

const EXPECTED: &str =
    "comma-separated http(s)://host[:port] (PURGE per URL) or post+http(s)://… (JSON POST) URLs";

/// Outcome of one URL's purge at one endpoint.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// `purged` (the cache accepted it, or had nothing to drop), `failed` (refused, or no
    /// answer after every retry), `dropped` (the queue was full).
    pub outcome: &'static str,
}

/// The purger's counters.
#[derive(Debug, Clone, Default)]
pub struct PurgeMetrics {
    /// URLs by outcome, per endpoint (a URL sent to two endpoints counts twice).
    pub purges: Family<OutcomeLabels, Counter>,
    /// Requests tried again after a failure.
    pub retries: Counter,
}

impl PurgeMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "cache_purges",
            "URLs whose purge a cache in front was sent, by outcome (purged, failed, dropped)",
            self.purges.clone(),
        );
        registry.register(
            "cache_purge_retries",
            "Purge requests tried again after a failure",
            self.retries.clone(),
        );
    }

    fn count(&self, outcome: &'static str, urls: usize) {
        self.purges
            .get_or_create(&OutcomeLabels { outcome })
            .inc_by(urls as u64);
    }
}

/// The URLs one save changed, for one site.
#[derive(Debug)]
pub struct Batch {
    /// The site's base URL, as logs name it.
    pub site: String,
    pub urls: Vec<String>,
    /// With replicas: when the followers have caught up (see [`FOLLOWERS_CATCH_UP`]).
    pub followers_caught_up: Option<Instant>,
}

/// The queues of every `CACHE_PURGE` endpoint; their tasks end when it is dropped.
pub struct Purger {
    queues: Vec<mpsc::Sender<Arc<Batch>>>,
    metrics: PurgeMetrics,
    /// Lists queued and not sent yet, over every endpoint: what a shutdown waits for.
    pending: Arc<watch::Sender<usize>>,
    /// Each endpoint's failures not logged yet: logged at the latest when the process drains.
    failures: Vec<Arc<failures::FailureLog>>,
}

impl Purger {
    /// Starts one background task per endpoint; `None` when there is none.
    pub fn start(
        endpoints: &[Endpoint],
        metrics: PurgeMetrics,
    ) -> Result<Option<Arc<Self>>, reqwest::Error> {
        if endpoints.is_empty() {
            return Ok(None);
        }
        let client = crate::notify::delivery::client()?;
        let pending = Arc::new(watch::Sender::new(0));
        let mut queues = Vec::with_capacity(endpoints.len());
        let mut logs = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let (tx, rx) = mpsc::channel(QUEUED_SAVES);
            let failures = Arc::new(failures::FailureLog::new(endpoint.shown()));
            let sender = send::Sender {
                endpoint: endpoint.clone(),
                client: client.clone(),
                metrics: metrics.clone(),
                pending: pending.clone(),
                failures: failures.clone(),
            };
            tokio::spawn(sender.run(rx));
            queues.push(tx);
            logs.push(failures);
        }
        Ok(Some(Arc::new(Self {
            queues,
            metrics,
            pending,
            failures: logs,
        })))
    }

    /// Hands `batch` to every endpoint's queue, at once; a full queue drops it (counted).
    pub fn purge(&self, batch: Batch) {
        if batch.urls.is_empty() {
            return;
        }
        tracing::debug!(site = %batch.site, urls = batch.urls.len(), "purging the changed URLs");
        let batch = Arc::new(batch);
        for queue in &self.queues {
            self.pending.send_modify(|n| *n += 1);
            if queue.try_send(batch.clone()).is_err() {
                self.pending.send_modify(|n| *n = n.saturating_sub(1));
                self.metrics.count("dropped", batch.urls.len());
                tracing::warn!(site = %batch.site, urls = batch.urls.len(), "cache purge queue full: these URLs stay cached until their shared TTL ends");
            }
        }
    }
}

impl Purger {
    /// When the process drains: waits until every queued list is sent (or given up), for at
    /// most `timeout`; what is left then is dropped, and those files stay cached until their
    /// shared TTL ends. Then logs each endpoint's failures not logged yet.
    pub async fn drain(&self, timeout: Duration) {
        let mut pending = self.pending.subscribe();
        let sent = pending.wait_for(|n| *n == 0);
        if tokio::time::timeout(timeout, sent).await.is_err() {
            let left = *self.pending.borrow();
            tracing::warn!(lists = left, "cache purges still pending at shutdown; those files stay cached until their shared TTL ends");
        }
        for failures in &self.failures {
            failures.log_now();
        }
    }
}

/// What a site's sweepers purge through: the site, the purger, and one lock so that the files
/// served before and after an install are taken around that install only (groups of one site
/// are swept side by side).
#[derive(Clone)]
pub struct SitePurge {
    site: Weak<Site>,
    purger: Arc<Purger>,
    installing: Arc<Mutex<()>>,
    /// Whether replicas follow the one that saves (see [`FOLLOWERS_CATCH_UP`]).
    replicas: bool,
}

impl SitePurge {
    pub fn new(site: &Arc<Site>, purger: Arc<Purger>, replicas: bool) -> Self {
        Self {
            site: Arc::downgrade(site),
            purger,
            installing: Arc::default(),
            replicas,
        }
    }

    /// Runs `install` (which replaces a group's snapshot with what `save` stored), then purges
    /// the URLs whose bytes that changed: none when it changed no byte.
    pub fn install(&self, save: Save<'_>, install: impl FnOnce()) {
        let Some(site) = self.site.upgrade() else {
            return install();
        };
        let _one_at_a_time = crate::sync::lock(&self.installing);
        let before = ServedFiles::of(&site);
        install();
        let after = ServedFiles::of(&site);
        let urls = before.changed_urls(&after, &site, save);
        self.purger.purge(Batch {
            site: site.key.clone(),
            urls,
            followers_caught_up: self.replicas.then(|| Instant::now() + FOLLOWERS_CATCH_UP),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_a_cache_to_purge_or_a_relay_to_post_to() {
        assert!(matches!(
            Endpoint::parse("http://127.0.0.1:6081"),
            Ok(Endpoint::Purge(_))
        ));
        assert!(matches!(
            Endpoint::parse(" post+https://relay.example/purge?zone=1 "),
            Ok(Endpoint::Post(_))
        ));
        for bad in [
            "",
            "varnish:6081",
            "ftp://cache",
            "post+ftp://x",
            "http://cache/?a=1",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_endpoint_is_shown_without_its_password() {
        let endpoint = Endpoint::parse("post+https://user:secret@relay.example/p").unwrap();
        assert_eq!(endpoint.shown(), "post+https://relay.example/p");
    }
}
