//! Configuration: the environment (and `.env`) turned into a validated [`Config`].
//!
//! Every variable of SPEC.md is read here and nowhere else. A bad value becomes a
//! [`ConfigError`] whose one-line message names the variable, the value and what was expected;
//! the binary prints it and exits 2 before listening. Values that may hold a secret
//! (`DATABASE_URL`) are shown redacted. The variables read with a fixed default and parser are
//! declared once, in [`settings`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::crawlers::Registry;
use crate::robots::Environment;

mod addresses;
mod admin_token;
mod cache;
mod crawlers;
mod groups;
mod llms;
mod notify;
mod robots;
pub mod settings;
mod sites_file;
mod source_database;
mod sources;
mod verify;

pub use crate::notify::{IndexNowConfig, IndexNowKey, NotifyConfig, PingTemplate};
pub use crate::sitemap::publication::{is_news_language, NewsPublication};
pub use crate::sitemap::{BaseUrl, MAX_URLS_PER_FILE};
pub use crate::store::database_url::{DatabaseKind, DatabaseUrl};
pub use admin_token::AdminToken;
pub use groups::{is_group_name, GroupConfig, GroupKind, NEWS_URLS_PER_FILE};
pub use llms::group_llms;
use notify::notify_config;
pub use notify::DEFAULT_INDEXNOW_ENDPOINT;
pub use robots::SiteRobots;
use sites_file::read_sites_file;
pub use sites_file::SiteConfig;
use sources::{base_url, database_url, default_groups};

/// A bad or missing setting; its Display is the single line printed before exiting 2.
#[derive(Debug, thiserror::Error)]
#[error("{variable}={shown}: {expected}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub shown: String,
    pub expected: String,
}

impl ConfigError {
    fn new(variable: &'static str, value: &str, expected: impl Into<String>) -> Self {
        Self {
            variable,
            shown: format!("{value:?}"),
            expected: expected.into(),
        }
    }

    fn missing(variable: &'static str, expected: impl Into<String>) -> Self {
        Self {
            variable,
            shown: "(unset)".into(),
            expected: expected.into(),
        }
    }
}

/// Output format of the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// The validated configuration of one process.
#[derive(Debug, Clone)]
pub struct Config {
    pub database_url: DatabaseUrl,
    pub bind_addr: SocketAddr,
    /// `ADMIN_BIND_ADDR`: where the status page listens; `None`: nowhere. Never `bind_addr`.
    pub admin_addr: Option<SocketAddr>,
    /// `ACCESS_LOG_ADDR` and `ACCESS_LOG_SENDERS`: the UDP address the web server sends its
    /// access log to, and the senders read there; `None`: off.
    pub access_log: Option<crate::crawllog::Listen>,
    /// `ADMIN_TOKEN`: required by the status page when set; needed to bind it beyond loopback.
    pub admin_token: Option<AdminToken>,
    pub page_size: usize,
    pub cache_control: String,
    /// `CACHE_PURGE`: the endpoints told of every URL whose bytes a save changed; empty: off.
    pub cache_purge: Vec<crate::purge::Endpoint>,
    pub refresh: Duration,
    /// `REPLICA_LEASE`: whether replicas share the work through a per-site lease (one keeps the
    /// files current, the others follow the stored state).
    pub replica_lease: bool,
    pub environment: Environment,
    pub extra_sitemaps: Vec<String>,
    pub check_agents: Vec<String>,
    pub max_connections: u32,
    pub log_format: LogFormat,
    pub cache_budget_bytes: usize,
    pub shutdown_grace: Duration,
    pub request_timeout: Duration,
    pub statement_timeout: Duration,
    pub max_concurrent_requests: usize,
    /// Change notification (IndexNow, ping); both off unless configured.
    pub notify: NotifyConfig,
    /// Entries in `/feed.atom` and `/feed.rss`; 0 turns the feeds off.
    pub feed_size: usize,
    /// How long an article stays in a news group's sitemap after its publication (48 hours;
    /// `SITEMAP_NEWS_WINDOW_SECS` shortens it, for tests and for publishers who want less).
    pub news_window: Duration,
    /// Every site this process serves, at least one: the one SITEMAP_BASE_URL, SITEMAP_SOURCE
    /// and ROBOTS_TEMPLATE describe, or those of SITEMAP_SITES_FILE. Everything else above is
    /// shared by all.
    pub sites: Vec<SiteConfig>,
    /// Whether requests are routed by their Host header (SITEMAP_SITES_FILE is set).
    pub routed_by_host: bool,
    /// `SITEMAP_STYLESHEET`: announce `/sitemap.xsl` in every sitemap and index.
    pub stylesheet: bool,
    /// The crawler registry: the built-in one, extended by `CRAWLERS_FILE`; parsed here once,
    /// and shared by everything that names crawlers.
    pub crawlers: Arc<Registry>,
    /// `CRAWLER_VERIFY` and `DNS_SERVER`: how crawlers' claims are checked.
    pub verify: crate::verify::VerifySettings,
    /// `TRUSTED_PROXIES`: the peers whose forwarding headers give the client address.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// `ROBOTS_PUBLIC_CHECK=on`: the service compares each site's public robots.txt with its own
    /// hourly, for the status page (off by default: it fetches the site's public address).
    pub public_robots_check: bool,
}

/// Where variables come from: the process environment over a `.env` file.
pub struct Vars(HashMap<String, String>);

impl Vars {
    /// Reads `.env` from the working directory (if any), then the environment, which wins.
    pub fn from_env() -> Self {
        let mut map = HashMap::new();
        if let Ok(iter) = dotenvy::from_filename_iter(".env") {
            map.extend(iter.flatten());
        }
        map.extend(std::env::vars());
        Self(map)
    }

    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// `CRAWLERS_FILE`, the file `crawlers update` writes unless told another; one that does not
    /// exist yet is taken out of the variables (the built-in registry is read instead).
    pub fn crawlers_file_to_update(&mut self) -> Option<PathBuf> {
        let path = PathBuf::from(self.get(crawlers::CRAWLERS_FILE)?);
        if !path.exists() {
            self.0.remove(crawlers::CRAWLERS_FILE);
        }
        Some(path)
    }
}

/// Defaults that a command may supply for variables the user left unset (the demo).
#[derive(Default)]
pub struct Defaults {
    pub base_url: Option<String>,
    pub database_url: Option<String>,
}

impl Config {
    /// How the store reaches the database.
    pub fn database(&self) -> crate::store::Connection<'_> {
        crate::store::Connection {
            database_url: &self.database_url,
            source_database_url: self.first_site().source_database_url.as_ref(),
            max_connections: self.max_connections,
            statement_timeout: self.statement_timeout,
            first_source: &self.first_site().groups[0].source,
        }
    }

    /// Reads every variable, always in this order: of several bad values, the first one is told.
    pub fn from_vars(vars: &Vars, defaults: &Defaults) -> Result<Self, ConfigError> {
        let bind_addr = settings::BIND_ADDR.read(vars)?;
        let groups = default_groups(vars)?;
        let llms = llms::llms_env(vars)?;
        let crawlers = crawlers::crawler_registry(vars)?;
        let sites_file = vars.get("SITEMAP_SITES_FILE").map(PathBuf::from);
        let sites = sites(
            vars,
            defaults,
            bind_addr,
            sites_file.as_ref(),
            groups,
            &llms,
            &crawlers,
        )?;
        let database_url = database_url(vars, defaults)?;
        let sites = source_database::with_source_databases(vars, sites, &database_url)?;
        let verify = verify::verify_settings(vars)?;
        let trusted_proxies = verify::trusted_proxies(vars)?;
        let public_robots_check = settings::ROBOTS_PUBLIC_CHECK.read(vars)?;
        let admin_token = AdminToken::from_vars(vars)?;
        Ok(Self {
            crawlers,
            verify,
            trusted_proxies,
            public_robots_check,
            database_url,
            admin_addr: addresses::admin_addr(vars, bind_addr, admin_token.is_some())?,
            admin_token,
            access_log: addresses::access_log(vars)?,
            bind_addr,
            page_size: settings::SITEMAP_PAGE_SIZE.read(vars)?,
            cache_control: settings::SITEMAP_CACHE_CONTROL.read(vars)?,
            cache_purge: cache::cache_purge(vars)?,
            refresh: settings::SITEMAP_REFRESH_SECS.read(vars)?,
            environment: settings::SITEMAP_ENV.read(vars)?,
            extra_sitemaps: robots::extra_sitemaps(vars)?,
            check_agents: robots::check_agents(vars)?,
            max_connections: settings::DATABASE_MAX_CONNECTIONS.read(vars)?,
            log_format: settings::LOG_FORMAT.read(vars)?,
            cache_budget_bytes: settings::SITEMAP_CACHE_MB.read(vars)?,
            shutdown_grace: settings::SHUTDOWN_GRACE_SECS.read(vars)?,
            request_timeout: settings::REQUEST_TIMEOUT_SECS.read(vars)?,
            statement_timeout: settings::DATABASE_STATEMENT_TIMEOUT_SECS.read(vars)?,
            max_concurrent_requests: settings::MAX_CONCURRENT_REQUESTS.read(vars)?,
            news_window: settings::SITEMAP_NEWS_WINDOW_SECS.read(vars)?,
            feed_size: settings::SITEMAP_FEED_SIZE.read(vars)?,
            routed_by_host: sites_file.is_some(),
            sites,
            notify: notify_config(vars)?,
            replica_lease: settings::REPLICA_LEASE.read(vars)?,
            stylesheet: settings::SITEMAP_STYLESHEET.read(vars)?,
        })
    }

    /// The first (with no sites file, the only) site.
    pub fn first_site(&self) -> &SiteConfig {
        &self.sites[0]
    }
}

/// Every site served: those of SITEMAP_SITES_FILE, else the one of SITEMAP_BASE_URL; each with
/// the environment's groups, ROBOTS_TEMPLATE, robots settings and llms.txt unless it has its own.
fn sites(
    vars: &Vars,
    defaults: &Defaults,
    bind_addr: SocketAddr,
    sites_file: Option<&PathBuf>,
    groups: Vec<GroupConfig>,
    llms: &llms::LlmsEnv,
    crawlers: &Registry,
) -> Result<Vec<SiteConfig>, ConfigError> {
    let robots_template = vars.get("ROBOTS_TEMPLATE").map(PathBuf::from);
    let robots = robots::site_robots(vars, crawlers)?;
    if let Some(path) = sites_file {
        return read_sites_file(
            path,
            &groups,
            robots_template.as_ref(),
            &robots,
            llms,
            crawlers,
        );
    }
    let base_url = base_url(vars, defaults, bind_addr)?;
    Ok(vec![SiteConfig {
        sitemaps_url: base_url.clone(),
        base_url,
        groups,
        robots_template,
        llms: llms::site_llms(llms, None, None, None),
        robots,
        source_database_url: None,
    }])
}

/// The items of a comma-separated setting, trimmed, empty ones left out.
fn split_list(raw: &str) -> impl Iterator<Item = &str> {
    raw.split(',').map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
