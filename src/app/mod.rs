//! Wiring: from a [`Config`] to a running [`Service`].
//!
//! [`Sites::open`] (`open.rs`) is the one way to open the sites: robots.txt, the store, each
//! group with its sweeper (the write side). The one-shot commands stop there. `sitemapd serve`
//! and the tests start the whole service the same way, [`Service::start`] then
//! [`Service::serve`]: the opened sites plus what only a running service needs — the verifier,
//! the crawl log (`ACCESS_LOG_ADDR`), the ledger, the reader (the read side), the HTTP app in
//! front and the replicas' leases. `settings.rs` makes a group's settings from its configuration.

mod open;
mod settings;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::answer::Reader;
use crate::config::Config;
use crate::http;
use crate::metrics::Metrics;
use crate::notify::Notifier;
use crate::robots::{Environment, RobotsError};
use crate::state::App;
use crate::store::StoreError;
use crate::sweep::lease::LeaseHolder;
use crate::sweep::{SweepError, Sweeper};

pub use open::{entry_rules, license_url, served_robots, watch_sources, ServedRobots, Sites};
pub use settings::{group_settings, links, links_by_prefix};

/// Why the service could not start. Configuration problems exit 2, the rest 1.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("ROBOTS_TEMPLATE={path:?}: cannot read it")]
    TemplateUnreadable {
        path: String,
        #[source]
        cause: std::io::Error,
    },
    #[error(transparent)]
    Robots(#[from] RobotsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Sweep(#[from] SweepError),
    #[error("{path}")]
    Io {
        path: String,
        #[source]
        cause: std::io::Error,
    },
    /// A file `export` writes could not be read as the server would send it.
    #[error("{path}: cannot be exported")]
    Unreadable {
        path: String,
        #[source]
        cause: crate::answer::AnswerError,
    },
    #[error("cannot listen on {addr}")]
    Bind {
        addr: String,
        #[source]
        cause: std::io::Error,
    },
    #[error(transparent)]
    Notify(crate::notify::NotifyError),
    #[error("CACHE_PURGE: cannot make the HTTP client")]
    Purge(#[source] reqwest::Error),
    #[error(transparent)]
    CrawlLog(#[from] crate::crawllog::CrawlLogError),
}

impl StartError {
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Config(_) | Self::TemplateUnreadable { .. } | Self::Robots(_) => 2,
            _ => 1,
        }
    }
}

/// A started service: every site opened, ready to listen and to be kept current.
pub struct Service {
    pub app: Arc<App>,
    /// One per group of each site, in the order of [`App::sites`] and their groups.
    pub sweepers: Vec<Arc<Sweeper>>,
    pub notifier: Arc<Notifier>,
    /// `CACHE_PURGE`'s queues, drained at shutdown like the notifier's.
    purger: Option<Arc<crate::purge::Purger>>,
    refresh: Duration,
    /// What takes each site's lease when replicas share the work (`REPLICA_LEASE`).
    leases: Vec<LeaseHolder>,
    /// The crawl log's tasks, stopped with the service.
    _crawl_log: Option<crate::crawllog::CrawlLogTasks>,
    limits: http::server::Limits,
    shutdown_grace: Duration,
}

impl Service {
    /// Connects, migrates and opens every site: stored files are served at once; the first
    /// sweep (or the verification of what is stored) runs once [`Service::serve`] does.
    pub async fn start(config: &Config) -> Result<Self, StartError> {
        let crawlers = config.crawlers.clone();
        let metrics = Arc::new(Metrics::new());
        let notifier = Arc::new(
            Notifier::start(&config.notify, metrics.notify.clone()).map_err(StartError::Notify)?,
        );
        let purger = crate::purge::Purger::start(&config.cache_purge, metrics.purge.clone())
            .map_err(StartError::Purge)?;
        let Sites {
            store,
            sites,
            sweepers,
            policies,
            leases,
        } = Sites::open(config, &notifier, purger.as_ref(), &metrics).await?;
        let indexnow_key = notifier.indexnow_key().cloned();
        // The URLs the sites are served at, for signatures covering `@target-uri`.
        let public: Vec<_> = (sites.iter())
            .flat_map(|site| [site.base().clone(), site.files().clone()])
            .collect();
        // One verifier serves the request path's ledger and the crawl log.
        let verifier = crate::verify::Verifier::start(
            crawlers.clone(),
            config.verify.clone(),
            Some(store.clone()),
            &public,
        )
        .await;
        let (crawl_log, crawl_log_tasks) = match &config.access_log {
            Some(listen) => {
                let (log, tasks) = crate::crawllog::CrawlLog::start(
                    listen.clone(),
                    sites.clone(),
                    config.routed_by_host,
                    crawlers.clone(),
                    verifier.clone(),
                    metrics.crawl_log.clone(),
                )
                .await?;
                (Some(log), Some(tasks))
            }
            None => (None, None),
        };
        let ledger = Arc::new(
            crate::ledger::Ledger::new(crawlers, metrics.crawlers.clone())
                .verifying(verifier.is_on()),
        );
        let app = Arc::new(App {
            sites,
            routed_by_host: config.routed_by_host,
            indexnow_key_file: indexnow_key.as_ref().map(|key| key.file_name()),
            reader: Arc::new(Reader::new(
                config.cache_budget_bytes,
                metrics.clone(),
                indexnow_key,
            )),
            verifier,
            trusted_proxies: config.trusted_proxies.clone(),
            ledger,
            crawl_log,
            metrics,
            cache_headers: crate::cache_headers::CacheHeaders::new(
                &config.cache_control,
                purger.is_some(),
            ),
            staging: config.environment == Environment::Staging,
            sources: Default::default(),
            policies,
            public_robots: config
                .public_robots_check
                .then(|| Arc::new(crate::public_robots::watch::PublicWatch::default())),
        });
        Ok(Self {
            app,
            sweepers,
            notifier,
            purger,
            refresh: config.refresh,
            leases,
            _crawl_log: crawl_log_tasks,
            limits: http::server::Limits {
                request: config.request_timeout,
                concurrency: config.max_concurrent_requests,
                ..Default::default()
            },
            shutdown_grace: config.shutdown_grace,
        })
    }

    /// Keeps every site current and serves `listener` until `shutdown` completes; then lets
    /// downloads, pending notifications and cache purges finish, side by side, within the grace
    /// period.
    pub async fn serve(
        mut self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        // Sweeps stop with the server, also when this future is dropped, and the leases
        // with them (another replica takes over at once).
        let mut tasks: Vec<_> = self.leases.drain(..).map(LeaseHolder::start).collect();
        tasks.extend(
            self.sweepers
                .iter()
                .map(|sweeper| tokio::spawn(sweeper.clone().keep_current(self.refresh))),
        );
        if let Some(watch) = &self.app.public_robots {
            tasks.push(tokio::spawn(
                watch.clone().keep_checking(self.app.sites.clone()),
            ));
        }
        let _sweeping = AbortOnDrop(tasks);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = http::serve(listener, self.app.clone(), self.limits, async {
            let _ = stop_rx.await;
        });
        tokio::pin!(server);
        tokio::select! {
            _ = &mut server => return,
            () = shutdown => {}
        }
        tracing::info!(
            grace_secs = self.shutdown_grace.as_secs(),
            "shutting down; letting downloads finish"
        );
        let deadline = Instant::now() + self.shutdown_grace.saturating_sub(TEARDOWN);
        let _ = stop_tx.send(());
        let waits = drain_within(deadline, server, &self.notifier, self.purger.as_deref());
        if tokio::time::timeout_at(deadline, waits).await.is_err() {
            tracing::warn!("grace period over; stopping what is still under way");
        }
    }
}

/// What the grace period keeps, after every wait, to close the pools and flush the log: the
/// process ends within `SHUTDOWN_GRACE_SECS` of the signal, whatever an endpoint does.
pub const TEARDOWN: Duration = Duration::from_millis(250);

/// Lets downloads, notifications and cache purges finish side by side until `deadline`.
async fn drain_within(
    deadline: Instant,
    server: impl Future,
    notifier: &Notifier,
    purger: Option<&crate::purge::Purger>,
) {
    let left = deadline.saturating_duration_since(Instant::now());
    let purges = async {
        if let Some(purger) = purger {
            purger.drain(left).await;
        }
    };
    let (served, (), ()) = tokio::join!(
        tokio::time::timeout_at(deadline, server),
        notifier.shutdown(left),
        purges
    );
    if served.is_err() {
        tracing::warn!("grace period over; closing remaining connections");
    }
}

/// Background tasks that end when this is dropped.
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}
