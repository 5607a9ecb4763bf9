//! Wiring: from a [`Config`] to a running [`Service`]: the store, each site with its sweeper
//! (the write side), the reader (the read side) and the HTTP app in front. `sitemapd serve`
//! and the tests start it the same way: [`Service::start`], then [`Service::serve`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderValue;
use bytes::Bytes;
use chrono::Utc;
use tokio::net::TcpListener;

use crate::answer::Reader;
use crate::config::{Config, GroupConfig, GroupKind, SiteConfig};
use crate::http;
use crate::metrics::{Metrics, SiteLabels};
use crate::notify::Notifier;
use crate::robots::{self, Environment, RobotsContext, RobotsError, RobotsTxt};
use crate::site::fingerprint::{
    site_groups_fingerprint, ByteSettings, IndexedGroup, NamedGroup, RobotsRules,
};
use crate::site::{Group, GroupSettings, News, Site};
use crate::sitemap::{DocumentStyle, EntryRules};
use crate::state::App;
use crate::store::{Store, StoreError, Watch};
use crate::sweep::lease::SiteLease;
use crate::sweep::{SweepError, Sweeper};

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
    #[error("cannot listen on {addr}")]
    Bind {
        addr: String,
        #[source]
        cause: std::io::Error,
    },
    #[error(transparent)]
    Notify(crate::notify::NotifyError),
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

/// The robots.txt this configuration serves, and the rules entries are checked against.
pub struct ServedRobots {
    pub body: String,
    /// The template and policy as compiled for production: what entries are checked against.
    pub rules_text: String,
    /// The compiled file's rules (equal to the served file's, except on staging).
    pub rules: Arc<RobotsTxt>,
    /// What `check` reports about the template (lines crawlers ignore or misread).
    pub warnings: Vec<robots::Warning>,
}

/// Renders and validates robots.txt; a template error stops the start with its line number.
pub fn served_robots(config: &Config, site: &SiteConfig) -> Result<ServedRobots, StartError> {
    let template = match &site.robots_template {
        None => robots::BUILTIN_TEMPLATE.to_string(),
        Some(path) => {
            std::fs::read_to_string(path).map_err(|cause| StartError::TemplateUnreadable {
                path: path.display().to_string(),
                cause,
            })?
        }
    };
    let context = RobotsContext {
        base_url: site.base_url.as_str().to_string(),
        sitemap_index_url: site.index_url(),
        environment: config.environment,
        extra_sitemaps: config.extra_sitemaps.clone(),
    };
    let compiled = robots::compile_template(
        &template,
        &context,
        site.robots.policy.as_ref(),
        &site.robots.content_signal,
        &config.crawlers,
    )?;
    // Entries are checked against the production file: on staging the served file
    // disallows everything, and the sitemaps should still show what production would list.
    let rules = Arc::new(RobotsTxt::parse(&compiled.rules_text)?);
    Ok(ServedRobots {
        body: compiled.body,
        rules_text: compiled.rules_text,
        rules,
        warnings: compiled.warnings,
    })
}

/// The rules every entry passes, with robots.txt consistency applied.
pub fn entry_rules(config: &Config, site: &SiteConfig, robots: &ServedRobots) -> EntryRules {
    EntryRules::new(
        site.base_url.clone(),
        Some(robots.rules.clone()),
        config.check_agents.clone(),
    )
}

/// A started service: every site opened, ready to listen and to be kept current.
pub struct Service {
    pub app: Arc<App>,
    /// One per group of each site, in the order of [`App::sites`] and their groups.
    pub sweepers: Vec<Arc<Sweeper>>,
    pub notifier: Arc<Notifier>,
    refresh: Duration,
    /// Whether replicas share the work through a per-site lease (`REPLICA_LEASE`).
    replica_lease: bool,
    /// The crawl log's tasks, stopped with the service.
    _crawl_log: Option<crate::crawllog::CrawlLogTasks>,
    limits: http::server::Limits,
    shutdown_grace: Duration,
}

impl Service {
    /// Connects, migrates and opens every site: stored files are served at once; the first
    /// sweep (or the verification of what is stored) runs once [`Service::serve`] does.
    pub async fn start(config: &Config) -> Result<Self, StartError> {
        // Every template is checked before anything else happens.
        let crawlers = config.crawlers.clone();
        let mut prepared = Vec::with_capacity(config.sites.len());
        for site in &config.sites {
            let robots = served_robots(config, site)?;
            for warning in &robots.warnings {
                tracing::warn!(site = %site.base_url.as_str(), "{warning}");
            }
            prepared.push((site, robots));
        }
        let store = Store::connect(&config.database()).await?;
        store.migrate().await?;
        for (source, watch) in watch_sources(&store, config).await {
            match watch {
                Watch::Failed(_) => tracing::warn!("{}", watch.describe(&source)),
                _ => tracing::info!("{}", watch.describe(&source)),
            }
            if let Some(warning) = store.range_reads(&source).await.warning(&source) {
                tracing::warn!("{warning}");
            }
        }
        let metrics = Arc::new(Metrics::new());
        let notifier = Arc::new(
            Notifier::start(&config.notify, metrics.notify.clone()).map_err(StartError::Notify)?,
        );
        let mut sites = Vec::with_capacity(prepared.len());
        let mut policies = Vec::with_capacity(prepared.len());
        let mut sweepers = Vec::new();
        for (site_config, robots) in prepared {
            policies.push(robots::summary(
                site_config.robots.policy.as_ref(),
                &robots.rules,
                &crawlers,
            ));
            let mut groups = Vec::with_capacity(site_config.groups.len());
            for group_config in &site_config.groups {
                let settings = group_settings(config, site_config, group_config, &robots);
                let (group, stale) = Group::new(
                    settings,
                    store.for_source(&group_config.source),
                    Utc::now().timestamp(),
                );
                // Before any sweep of any site: no site clears removed URLs another reads.
                crate::sweep::register_removed_reader(&group, &notifier).await;
                let sweeper = Sweeper::open(
                    group.clone(),
                    stale,
                    notifier.clone(),
                    metrics.sweep.clone(),
                )
                .await?;
                groups.push(group);
                sweepers.push(sweeper);
            }
            sites.push(Site::new(groups));
        }
        let indexnow_key = notifier.indexnow_key().cloned();
        // One verifier serves the request path's ledger and the crawl log.
        let verifier = crate::verify::Verifier::start(
            crawlers.clone(),
            config.verify.clone(),
            Some(store.clone()),
        )
        .await;
        let (crawl_log, crawl_log_tasks) = match config.access_log_addr {
            Some(addr) => {
                let (log, tasks) = crate::crawllog::CrawlLog::start(
                    addr,
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
            cache_control: HeaderValue::from_str(&config.cache_control)
                .unwrap_or(HeaderValue::from_static("public, max-age=300")),
            staging: config.environment == Environment::Staging,
            sources: Default::default(),
            policies,
        });
        Ok(Self {
            app,
            sweepers,
            notifier,
            refresh: config.refresh,
            replica_lease: config.replica_lease,
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
    /// downloads and pending notifications finish, side by side, within the grace period.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        // Sweeps stop with the server, also when this future is dropped, and the leases
        // with them (another replica takes over at once).
        let shared = self
            .app
            .sites
            .first()
            .is_some_and(|site| site.first().store.shared_by_replicas());
        let mut tasks = match self.replica_lease && shared {
            true => self.share_with_replicas(),
            false => Vec::new(),
        };
        tasks.extend(
            self.sweepers
                .iter()
                .map(|sweeper| tokio::spawn(sweeper.clone().keep_current(self.refresh))),
        );
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
        let _ = stop_tx.send(());
        let (served, ()) = tokio::join!(
            tokio::time::timeout(self.shutdown_grace, server),
            self.notifier.shutdown(self.shutdown_grace)
        );
        if served.is_err() {
            tracing::warn!("grace period over; closing remaining connections");
        }
    }
}

impl Service {
    /// Starts each site's lease: its groups are kept current by one replica at a time (see
    /// [`crate::sweep::lease`]). The lease tasks, to stop with the server.
    fn share_with_replicas(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let replica: Arc<str> = crate::sweep::lease::replica_name().into();
        let mut sweepers = self.sweepers.iter();
        let mut tasks = Vec::with_capacity(self.app.sites.len());
        for site in &self.app.sites {
            let held = self.app.metrics.lease_held.get_or_create(&SiteLabels {
                site: site.key.clone(),
            });
            let store = site.first().store.clone();
            let (lease, task) =
                SiteLease::start(store, site.clone(), held.clone(), replica.clone());
            for sweeper in sweepers.by_ref().take(site.groups.len()) {
                sweeper.share_with_replicas(lease.clone());
            }
            tasks.push(task);
        }
        tasks
    }
}

/// Has the changes behind each group's source logged where the database allows it (once per
/// source, in the order of the sites and their groups); says what was done for each.
pub async fn watch_sources(store: &Store, config: &Config) -> Vec<(String, Watch)> {
    let mut done: Vec<(String, Watch)> = Vec::new();
    for group in config.sites.iter().flat_map(|site| &site.groups) {
        if done.iter().all(|(source, _)| *source != group.source) {
            done.push((group.source.clone(), store.watch(&group.source).await));
        }
    }
    done
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

/// What a group is, from its site's configuration and robots.txt.
pub fn group_settings(
    config: &Config,
    site: &SiteConfig,
    group: &GroupConfig,
    robots: &ServedRobots,
) -> GroupSettings {
    let page_size = group.page_size(config.page_size);
    let news = match &group.kind {
        GroupKind::Urls => None,
        GroupKind::News(publication) => Some(News {
            publication: publication.clone(),
            window_secs: config.news_window.as_secs() as i64,
        }),
    };
    let robots_rules = RobotsRules {
        check_agents: &config.check_agents,
        rules_text: &robots.rules_text,
    };
    let settings = ByteSettings {
        base_url: site.base_url.as_str(),
        files_url: site.sitemaps_url.as_str(),
        page_size,
        stylesheet: config.stylesheet,
        robots: robots_rules,
        source: &group.source,
        named: group.name.as_deref().map(|name| NamedGroup {
            name,
            news: news.as_ref().map(|news| {
                (
                    news.publication.name.as_str(),
                    news.publication.language.as_str(),
                    news.window_secs,
                )
            }),
            extensions: group.extensions,
        }),
    }
    .fingerprint();
    GroupSettings {
        name: group.name.clone(),
        news,
        fingerprint: settings,
        rules: entry_rules(config, site, robots),
        style: DocumentStyle {
            stylesheet: config
                .stylesheet
                .then(|| site.sitemaps_url.file_url(crate::files::STYLESHEET)),
        },
        base: site.base_url.clone(),
        files: site.sitemaps_url.clone(),
        page_size,
        // A news group's articles are not entries with a lastmod: they are in no feed.
        feed_size: match group.kind {
            GroupKind::Urls => config.feed_size,
            GroupKind::News(_) => 0,
        },
        source: group.source.clone(),
        extensions: group.extensions,
        site_groups: group.name.is_some().then(|| {
            let groups: Vec<IndexedGroup> = site.groups.iter().map(indexed_group).collect();
            site_groups_fingerprint(&groups)
        }),
        robots_body: Bytes::from(robots.body.clone()),
        robots_rules: robots_rules.fingerprint(),
        llms: crate::config::group_llms(site, group, robots.rules.clone(), &config.crawlers),
    }
}

/// A group as the site's index dates the site's groups.
fn indexed_group(group: &GroupConfig) -> IndexedGroup<'_> {
    IndexedGroup {
        name: group.name.as_deref(),
        source: &group.source,
        kind: match &group.kind {
            GroupKind::Urls => ("urls", None),
            GroupKind::News(publication) => (
                "news",
                Some((publication.name.as_str(), publication.language.as_str())),
            ),
        },
    }
}
