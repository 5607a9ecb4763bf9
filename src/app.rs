//! Wiring: from a [`Config`] to a running service (store, robots.txt, site, HTTP app).

use std::sync::Arc;

use axum::http::HeaderValue;

use crate::cache::PageCache;
use crate::config::Config;
use crate::http::App;
use crate::metrics::Metrics;
use crate::notify::Notifier;
use crate::robots::{self, Environment, RobotsContext, RobotsError, RobotsTxt};
use crate::site::Site;
use crate::sitemap::EntryRules;
use crate::store::{Store, StoreError};

/// Why the service could not start. Configuration problems exit 2, the rest 1.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("ROBOTS_TEMPLATE={path:?}: cannot read it ({reason})")]
    TemplateUnreadable { path: String, reason: String },
    #[error("{0}")]
    Robots(#[from] RobotsError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Sweep(#[from] crate::site::SweepError),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("cannot listen on {addr}: {reason}")]
    Bind { addr: String, reason: String },
    #[error("{0}")]
    Notify(crate::notify::NotifyError),
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
    /// The template's rules (equal to the served file's, except on staging).
    pub rules: Arc<RobotsTxt>,
}

/// Keeps every site current, each in a task of its own, for as long as the process lives.
pub fn keep_current(app: &App, refresh: std::time::Duration) {
    for site in &app.sites {
        tokio::spawn(site.clone().keep_current(refresh));
    }
}

/// Renders and validates robots.txt; a template error stops the start with its line number.
pub fn served_robots(config: &Config) -> Result<ServedRobots, StartError> {
    let template = match &config.robots_template {
        None => robots::BUILTIN_TEMPLATE.to_string(),
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| StartError::TemplateUnreadable {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?
        }
    };
    let context = RobotsContext {
        base_url: config.base_url.as_str().to_string(),
        sitemap_index_url: config.index_url(),
        environment: config.environment,
        extra_sitemaps: config.extra_sitemaps.clone(),
    };
    let body = robots::render(&template, &context)?;
    // Entries are checked against the template's own rules: on staging the served file
    // disallows everything, and the sitemaps should still show what production would list.
    let rules = Arc::new(RobotsTxt::parse(&robots::render_template(
        &template, &context,
    )?)?);
    Ok(ServedRobots { body, rules })
}

/// The rules every entry passes, with robots.txt consistency applied.
pub fn entry_rules(config: &Config, robots: &ServedRobots) -> EntryRules {
    EntryRules::new(
        config.base_url.clone(),
        Some(robots.rules.clone()),
        config.check_agents.clone(),
    )
}

/// Connects, migrates, measures every page of every site once, and returns the HTTP app.
pub async fn build(config: &Config) -> Result<Arc<App>, StartError> {
    // Every template is checked before anything else happens.
    let mut prepared = Vec::with_capacity(config.sites.len());
    for site in &config.sites {
        let config = config.for_site(site);
        let robots = served_robots(&config)?;
        prepared.push((config, robots));
    }
    let store = Store::connect(config).await?;
    store.migrate().await?;
    let metrics = Arc::new(Metrics::new());
    let notifier = Arc::new(
        Notifier::start(&config.notify, metrics.notify.clone()).map_err(StartError::Notify)?,
    );
    let mut sites = Vec::with_capacity(prepared.len());
    for (config, robots) in prepared {
        let rules = entry_rules(&config, &robots);
        let store = store.for_source(&config.source);
        let site = Site::open(
            &config,
            store,
            rules,
            robots.body,
            notifier.clone(),
            metrics.sweep_failures.clone(),
        )
        .await?;
        sites.push(site);
    }
    Ok(Arc::new(App {
        sites,
        routed_by_host: config.routed_by_host,
        notifier,
        cache: PageCache::new(config.cache_budget_bytes),
        metrics,
        cache_control: HeaderValue::from_str(&config.cache_control)
            .unwrap_or(HeaderValue::from_static("public, max-age=300")),
        staging: config.environment == Environment::Staging,
    }))
}
