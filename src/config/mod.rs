//! Configuration: the environment (and `.env`) turned into a validated [`Config`].
//!
//! Every variable of SPEC.md is read here and nowhere else. A bad value becomes a
//! [`ConfigError`] whose one-line message names the variable, the value and what was expected;
//! the binary prints it and exits 2 before listening. Values that may hold a secret
//! (`DATABASE_URL`) are shown redacted.

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
use sources::{is_source_name, SOURCE_EXPECTED};

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
    /// `CRAWLERS_FILE`: a crawler registry that extends or overrides the built-in one.
    pub crawlers_file: Option<PathBuf>,
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

    /// `CRAWLERS_FILE` when it names a file that does not exist yet: taken out of the variables
    /// (the built-in registry is read) and returned, for `crawlers update` to create it.
    pub fn take_missing_crawlers_file(&mut self) -> Option<PathBuf> {
        let path = PathBuf::from(self.get("CRAWLERS_FILE")?);
        if path.exists() {
            return None;
        }
        self.0.remove("CRAWLERS_FILE");
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

    pub fn from_vars(vars: &Vars, defaults: &Defaults) -> Result<Self, ConfigError> {
        let bind_addr = parse_with(
            vars,
            "BIND_ADDR",
            "127.0.0.1:8080",
            "a socket address like 127.0.0.1:8080",
            |v| v.parse::<SocketAddr>().ok(),
        )?;
        let groups = default_groups(vars)?;
        let robots_template = vars.get("ROBOTS_TEMPLATE").map(PathBuf::from);
        let sites_file = vars.get("SITEMAP_SITES_FILE").map(PathBuf::from);
        let llms = llms::llms_env(vars)?;
        let crawlers = crawlers::crawler_registry(vars)?;
        let robots = robots::site_robots(vars, &crawlers)?;
        let sites = match &sites_file {
            Some(path) => read_sites_file(
                path,
                &groups,
                robots_template.as_ref(),
                &robots,
                &llms,
                &crawlers,
            )?,
            None => {
                let base_url = base_url(vars, defaults, bind_addr)?;
                vec![SiteConfig {
                    sitemaps_url: base_url.clone(),
                    base_url,
                    groups,
                    robots_template: robots_template.clone(),
                    llms: llms::site_llms(&llms, None, None, None),
                    robots,
                    source_database_url: None,
                }]
            }
        };
        let sites =
            source_database::with_source_databases(vars, sites, &database_url(vars, defaults)?)?;
        Ok(Self {
            crawlers_file: vars.get("CRAWLERS_FILE").map(PathBuf::from),
            crawlers,
            verify: verify::verify_settings(vars)?,
            trusted_proxies: verify::trusted_proxies(vars)?,
            public_robots_check: parse_with(
                vars,
                "ROBOTS_PUBLIC_CHECK",
                "off",
                "on or off",
                |v| match v.to_ascii_lowercase().as_str() {
                    "on" | "true" | "1" => Some(true),
                    "off" | "false" | "0" => Some(false),
                    _ => None,
                },
            )?,
            database_url: database_url(vars, defaults)?,
            admin_addr: addresses::admin_addr(
                vars,
                bind_addr,
                AdminToken::from_vars(vars)?.is_some(),
            )?,
            admin_token: AdminToken::from_vars(vars)?,
            access_log: addresses::access_log(vars)?,
            bind_addr,
            page_size: parse_with(
                vars,
                "SITEMAP_PAGE_SIZE",
                "50000",
                "an integer from 1 to 50000",
                |v| {
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_URLS_PER_FILE).contains(n))
                },
            )?,
            cache_control: cache::cache_control(vars)?,
            cache_purge: cache::cache_purge(vars)?,
            refresh: Duration::from_secs(parse_with(
                vars,
                "SITEMAP_REFRESH_SECS",
                "60",
                "an integer number of seconds from 1 to 86400",
                |v| v.parse::<u64>().ok().filter(|n| (1..=86_400).contains(n)),
            )?),
            environment: parse_with(
                vars,
                "SITEMAP_ENV",
                "production",
                "production or staging",
                |v| match v {
                    "production" => Some(Environment::Production),
                    "staging" => Some(Environment::Staging),
                    _ => None,
                },
            )?,
            extra_sitemaps: robots::extra_sitemaps(vars)?,
            check_agents: robots::check_agents(vars)?,
            max_connections: parse_with(
                vars,
                "DATABASE_MAX_CONNECTIONS",
                "8",
                "an integer from 1 to 1000",
                |v| v.parse::<u32>().ok().filter(|n| (1..=1000).contains(n)),
            )?,
            log_format: parse_with(vars, "LOG_FORMAT", "text", "text or json", |v| match v {
                "text" => Some(LogFormat::Text),
                "json" => Some(LogFormat::Json),
                _ => None,
            })?,
            cache_budget_bytes: parse_with(
                vars,
                "SITEMAP_CACHE_MB",
                "32",
                "an integer number of MiB from 0 to 65536",
                |v| {
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| *n <= 65_536)
                        .map(|n| n << 20)
                },
            )?,
            shutdown_grace: seconds(vars, "SHUTDOWN_GRACE_SECS", "30")?,
            request_timeout: seconds(vars, "REQUEST_TIMEOUT_SECS", "120")?,
            statement_timeout: seconds(vars, "DATABASE_STATEMENT_TIMEOUT_SECS", "30")?,
            max_concurrent_requests: parse_with(
                vars,
                "MAX_CONCURRENT_REQUESTS",
                "1024",
                "an integer from 1 to 100000",
                |v| {
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| (1..=100_000).contains(n))
                },
            )?,
            news_window: Duration::from_secs(parse_with(
                vars,
                "SITEMAP_NEWS_WINDOW_SECS",
                "172800",
                "an integer number of seconds from 1 to 172800 (48 hours)",
                |v| v.parse::<u64>().ok().filter(|n| (1..=172_800).contains(n)),
            )?),
            feed_size: parse_with(
                vars,
                "SITEMAP_FEED_SIZE",
                "100",
                "an integer from 0 (no feeds) to 10000",
                |v| v.parse::<usize>().ok().filter(|n| *n <= 10_000),
            )?,
            routed_by_host: sites_file.is_some(),
            sites,
            notify: notify_config(vars)?,
            replica_lease: parse_with(vars, "REPLICA_LEASE", "on", "on or off", |v| {
                match v.to_ascii_lowercase().as_str() {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                }
            })?,
            stylesheet: parse_with(
                vars,
                "SITEMAP_STYLESHEET",
                "false",
                "true or false",
                |v| match v.to_ascii_lowercase().as_str() {
                    "true" | "1" => Some(true),
                    "false" | "0" => Some(false),
                    _ => None,
                },
            )?,
        })
    }

    /// The first (with no sites file, the only) site.
    pub fn first_site(&self) -> &SiteConfig {
        &self.sites[0]
    }
}

pub(super) fn parse_with<T>(
    vars: &Vars,
    name: &'static str,
    default: &str,
    expected: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, ConfigError> {
    let value = vars.get(name).unwrap_or(default).trim();
    parse(value).ok_or_else(|| ConfigError::new(name, value, expected))
}

fn seconds(vars: &Vars, name: &'static str, default: &str) -> Result<Duration, ConfigError> {
    parse_with(
        vars,
        name,
        default,
        "an integer number of seconds from 1 to 3600",
        |v| {
            v.parse::<u64>()
                .ok()
                .filter(|n| (1..=3600).contains(n))
                .map(Duration::from_secs)
        },
    )
}

/// The items of a comma-separated setting, trimmed, empty ones left out.
fn split_list(raw: &str) -> impl Iterator<Item = &str> {
    raw.split(',').map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
