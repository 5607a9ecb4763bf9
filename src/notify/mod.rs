//! Change notification: tells IndexNow search engines which URLs changed, and pings a webhook
//! when the sitemap index changed.
//!
//! Each destination has a background task of its own, fed through a channel, so the sweep that
//! finds changes never waits on the network. Both tasks follow the same delivery rules
//! ([`delivery`]): at most one request per interval (what arrives meanwhile is coalesced into the
//! next request), retries with exponential backoff that honour `Retry-After`, a bounded number of
//! attempts, bounded memory, and a flush of what is pending when the process drains (paced
//! like any other request: what cannot wait for its turn within the drain is dropped).
//!
//! # Use
//!
//! ```no_run
//! # async fn example(config: sitemapd::config::Config) -> Result<(), sitemapd::notify::NotifyError> {
//! use std::time::Duration;
//! use sitemapd::metrics::Metrics;
//! use sitemapd::notify::Notifier;
//!
//! let metrics = Metrics::new();
//! let notifier = Notifier::start(&config.notify, metrics.notify.clone())?;
//!
//! // The key file route: serve `key.as_str()` as text/plain at `<base>/<key>.txt`.
//! if let Some(key) = notifier.indexnow_key() {
//!     let _path = format!("{}{}", config.base_url.path(), key.file_name());
//! }
//!
//! // After a sweep: the absolute URLs whose entries changed, and the index if it changed.
//! if let Some(hosts) = notifier.host_set(&config.base_url) {
//!     notifier.submit(&hosts, vec!["https://www.example.com/a".to_string()])?;
//! }
//! notifier.ping(&config.index_url())?;
//!
//! // When the process drains: send what is pending, for at most 10 s.
//! notifier.shutdown(Duration::from_secs(10)).await;
//! # Ok(()) }
//! ```

pub(crate) mod delivery;
pub mod indexnow;
pub mod keys;
pub mod ping;
pub mod summary;

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::sitemap::BaseUrl;
use delivery::{Command, Drain, Policy};

pub use indexnow::HostSet;
pub use keys::{IndexNowConfig, IndexNowKey, NotifyConfig, PingTemplate};

/// What the notifier can fail with.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The HTTP client could not be built (TLS setup); the service should not start.
    #[error("cannot set up the HTTP client for notifications: {0}")]
    Client(#[source] reqwest::Error),
    /// The notifier was shut down (or its task ended); nothing more is sent.
    #[error("the {0} notifier has stopped")]
    Stopped(&'static str),
    /// A keyLocation URL that IndexNow cannot use.
    #[error("keyLocation {url:?}: {expected}")]
    KeyLocation { url: String, expected: &'static str },
}

/// Which destination a metric is about.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    pub target: &'static str,
}

/// Counters of the notifier; [`crate::metrics::Metrics`] registers them with the service's own.
#[derive(Clone, Debug, Default)]
pub struct NotifyMetrics {
    /// URLs in IndexNow requests the endpoint accepted.
    pub submitted_urls: Counter,
    /// URLs given up on: over the pending cap, refused (another host, not http), rejected by the
    /// endpoint, out of attempts, or still pending when the drain deadline passed.
    pub dropped_urls: Counter,
    /// Requests that failed (each attempt counts), by target (`indexnow`, `ping`).
    pub failed_requests: Family<TargetLabels, Counter>,
    /// Pings the webhook accepted.
    pub pings: Counter,
    /// Unix time of the last request each target accepted (0: none yet).
    pub last_success: Family<TargetLabels, Gauge>,
    /// Items waiting to be sent (URLs for IndexNow, index URLs for pings), by target.
    pub pending: Family<TargetLabels, Gauge>,
}

impl NotifyMetrics {
    /// Adds these counters to `registry` (names get the registry's prefix and `_total`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "indexnow_submitted_urls",
            "URLs accepted by the IndexNow endpoint",
            self.submitted_urls.clone(),
        );
        registry.register(
            "indexnow_dropped_urls",
            "URLs not submitted to IndexNow: over the cap, refused, rejected or out of attempts",
            self.dropped_urls.clone(),
        );
        registry.register(
            "notify_failed_requests",
            "Failed notification requests (each attempt), by target",
            self.failed_requests.clone(),
        );
        registry.register(
            "pings",
            "Pings of SITEMAP_PING_URL the webhook accepted",
            self.pings.clone(),
        );
        registry.register(
            "notify_last_success_seconds",
            "Unix time of the last notification request accepted, by target",
            self.last_success.clone(),
        );
        registry.register(
            "notify_pending",
            "Notifications waiting to be sent, by target",
            self.pending.clone(),
        );
    }

    fn succeeded(&self, target: &'static str) {
        self.last_success
            .get_or_create(&TargetLabels { target })
            .set(chrono::Utc::now().timestamp());
    }

    fn waiting(&self, target: &'static str, pending: usize) {
        self.pending
            .get_or_create(&TargetLabels { target })
            .set(pending as i64);
    }

    fn failed(&self, target: &'static str) {
        self.failed_requests
            .get_or_create(&TargetLabels { target })
            .inc();
    }
}

/// The handle the service keeps: cheap to clone; each clone feeds the same background tasks.
///
/// A destination that is not configured makes its calls no-ops, so callers need not check.
#[derive(Clone, Debug)]
pub struct Notifier {
    indexnow: Option<Worker<indexnow::Submission>>,
    key: Option<IndexNowKey>,
    ping: Option<Worker<String>>,
}

#[derive(Debug)]
struct Worker<T> {
    target: &'static str,
    commands: UnboundedSender<Command<T>>,
}

impl<T> Clone for Worker<T> {
    fn clone(&self) -> Self {
        Self {
            target: self.target,
            commands: self.commands.clone(),
        }
    }
}

impl<T> Worker<T> {
    fn send(&self, item: T) -> Result<(), NotifyError> {
        self.commands
            .send(Command::Add(item))
            .map_err(|_| NotifyError::Stopped(self.target))
    }

    /// Asks the task to flush by `deadline`; the receiver fires when it is done (or gone).
    fn drain(&self, deadline: tokio::time::Instant) -> oneshot::Receiver<()> {
        let (done, finished) = oneshot::channel();
        // A task already gone drops `done`, which ends the wait at once.
        let _ = self.commands.send(Command::Drain(Drain { deadline, done }));
        finished
    }
}

impl Notifier {
    /// A notifier that sends nothing (nothing configured).
    pub fn disabled() -> Self {
        Self {
            indexnow: None,
            key: None,
            ping: None,
        }
    }

    /// Starts the background tasks the configuration asks for. Needs a Tokio runtime.
    pub fn start(config: &NotifyConfig, metrics: NotifyMetrics) -> Result<Self, NotifyError> {
        if config.indexnow.is_none() && config.ping.is_none() {
            return Ok(Self::disabled());
        }
        let client = delivery::client().map_err(NotifyError::Client)?;
        let policy = Policy::with_interval(config.interval);
        let indexnow = config.indexnow.as_ref().map(|settings| {
            let outbox = indexnow::Outbox::new(
                client.clone(),
                settings.endpoint.clone(),
                indexnow::PENDING_CAP,
                metrics.clone(),
            );
            spawn(outbox, policy.clone())
        });
        let ping = config.ping.as_ref().map(|template| {
            let outbox = ping::Outbox::new(client.clone(), template.clone(), metrics.clone());
            spawn(outbox, Policy::for_pings(config.interval))
        });
        Ok(Self {
            indexnow,
            key: config.indexnow.as_ref().map(|s| s.key.clone()),
            ping,
        })
    }

    /// The IndexNow key, when IndexNow is on: serve it at `<base>/<key>.txt`
    /// ([`IndexNowKey::file_name`]) with the key as the whole body.
    pub fn indexnow_key(&self) -> Option<&IndexNowKey> {
        self.key.as_ref()
    }

    /// The host set of a site (its host, the key, keyLocation `<base>/<key>.txt`), when
    /// IndexNow is on.
    pub fn host_set(&self, base: &BaseUrl) -> Option<HostSet> {
        self.key.as_ref().map(|key| HostSet::for_site(base, key))
    }

    /// Queues changed URLs (absolute, of `hosts`' host) for IndexNow; returns at once.
    ///
    /// Duplicates of URLs still pending are ignored; URLs of another host, or not http(s), are
    /// dropped with a warning. A no-op when IndexNow is off. Errs only after [`Self::shutdown`].
    pub fn submit(
        &self,
        hosts: &HostSet,
        urls: impl IntoIterator<Item = String>,
    ) -> Result<(), NotifyError> {
        match &self.indexnow {
            Some(worker) => worker.send(indexnow::Submission {
                hosts: hosts.clone(),
                urls: urls.into_iter().collect(),
            }),
            None => Ok(()),
        }
    }

    /// Queues a ping of `SITEMAP_PING_URL` for a changed sitemap index (its absolute URL);
    /// returns at once. Pings of the same index waiting for their turn collapse into one.
    /// A no-op when no ping URL is configured. Errs only after [`Self::shutdown`].
    pub fn ping(&self, index_url: &str) -> Result<(), NotifyError> {
        match &self.ping {
            Some(worker) => worker.send(index_url.to_string()),
            None => Ok(()),
        }
    }

    /// Flushes what is pending, then stops the tasks; returns within about `timeout`.
    ///
    /// The flush does not wait out the pacing interval (the process is leaving), but it does
    /// honour a backoff or `Retry-After` in progress; whatever cannot be sent by the deadline is
    /// logged and dropped.
    pub async fn shutdown(&self, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut waits = Vec::new();
        if let Some(worker) = &self.indexnow {
            waits.push(worker.drain(deadline));
        }
        if let Some(worker) = &self.ping {
            waits.push(worker.drain(deadline));
        }
        // The tasks keep the deadline themselves; this bound only guards against a stuck one.
        let all = futures::future::join_all(waits);
        if tokio::time::timeout_at(deadline + DRAIN_SLACK, all)
            .await
            .is_err()
        {
            tracing::warn!("notifications did not finish draining in time");
        }
    }
}

/// Time a draining task gets past its deadline to notice it and log what it drops.
const DRAIN_SLACK: Duration = Duration::from_secs(1);

fn spawn<O: delivery::Outbox>(outbox: O, policy: Policy) -> Worker<O::Item> {
    let (commands, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(delivery::run(outbox, receiver, policy));
    Worker {
        target: O::TARGET,
        commands,
    }
}
