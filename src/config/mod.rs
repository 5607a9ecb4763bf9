//! Configuration: the environment (and `.env`) turned into a validated [`Config`].
//!
//! Every variable of SPEC.md is read here and nowhere else. A bad value becomes a
//! [`ConfigError`] whose one-line message names the variable, the value and what was expected;
//! the binary prints it and exits 2 before listening. Values that may hold a secret
//! (`DATABASE_URL`) are shown redacted.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use crate::robots::Environment;

mod admin_token;
mod cache;
mod groups;
mod llms;
mod not_yet;
mod notify;
mod robots;
mod sites_file;
mod verify;

pub use crate::notify::{IndexNowConfig, IndexNowKey, NotifyConfig, PingTemplate};
pub use crate::sitemap::publication::{is_news_language, NewsPublication};
pub use crate::sitemap::{BaseUrl, MAX_URLS_PER_FILE};
use crate::store::database_url::redact_password;
pub use crate::store::database_url::{DatabaseKind, DatabaseUrl};
pub use admin_token::AdminToken;
pub use groups::{is_group_name, GroupConfig, GroupKind, NEWS_URLS_PER_FILE};
pub use llms::group_llms;
use notify::notify_config;
pub use notify::DEFAULT_INDEXNOW_ENDPOINT;
pub use robots::SiteRobots;
use sites_file::read_sites_file;
pub use sites_file::SiteConfig;

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
    /// `ACCESS_LOG_ADDR`: the UDP address the web server sends its access log to; `None`: off.
    pub access_log_addr: Option<SocketAddr>,
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
    /// `CRAWLERS_FILE`: a crawler registry that extends or overrides the built-in one (read and
    /// checked when the service starts).
    pub crawlers_file: Option<PathBuf>,
    /// `CRAWLER_VERIFY` and `DNS_SERVER`: how crawlers' claims are checked.
    pub verify: crate::verify::VerifySettings,
    /// `TRUSTED_PROXIES`: the peers whose forwarding headers give the client address.
    pub trusted_proxies: Vec<ipnet::IpNet>,
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
            max_connections: self.max_connections,
            statement_timeout: self.statement_timeout,
            first_source: &self.first_site().groups[0].source,
        }
    }

    pub fn from_vars(vars: &Vars, defaults: &Defaults) -> Result<Self, ConfigError> {
        not_yet::refuse_unimplemented(vars)?;
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
        let robots = robots::site_robots(vars)?;
        let sites = match &sites_file {
            Some(path) => {
                let registry = robots::registry(vars);
                read_sites_file(
                    path,
                    &groups,
                    robots_template.as_ref(),
                    &robots,
                    &llms,
                    registry.as_ref(),
                )?
            }
            None => {
                let base_url = base_url(vars, defaults, bind_addr)?;
                vec![SiteConfig {
                    sitemaps_url: base_url.clone(),
                    base_url,
                    groups,
                    robots_template: robots_template.clone(),
                    llms: llms::site_llms(&llms, None, None, None),
                    robots,
                }]
            }
        };
        Ok(Self {
            crawlers_file: vars.get("CRAWLERS_FILE").map(PathBuf::from),
            verify: verify::verify_settings(vars)?,
            trusted_proxies: verify::trusted_proxies(vars)?,
            database_url: database_url(vars, defaults)?,
            admin_addr: admin_addr(vars, bind_addr, AdminToken::from_vars(vars)?.is_some())?,
            admin_token: AdminToken::from_vars(vars)?,
            access_log_addr: access_log_addr(vars)?,
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
            extra_sitemaps: extra_sitemaps(vars)?,
            check_agents: check_agents(vars)?,
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

fn base_url(vars: &Vars, defaults: &Defaults, bind: SocketAddr) -> Result<BaseUrl, ConfigError> {
    const NAME: &str = "SITEMAP_BASE_URL";
    let value = match (vars.get(NAME), &defaults.base_url) {
        (Some(v), _) => v.to_string(),
        (None, Some(d)) => d.replace("<BIND_ADDR>", &bind.to_string()),
        (None, None) => {
            return Err(ConfigError::missing(
                NAME,
                "required: the public origin and mount path, e.g. https://www.example.com",
            ))
        }
    };
    BaseUrl::parse(&value).map_err(|expected| ConfigError::new(NAME, &value, expected))
}

fn database_url(vars: &Vars, defaults: &Defaults) -> Result<DatabaseUrl, ConfigError> {
    const NAME: &str = "DATABASE_URL";
    let value = vars
        .get(NAME)
        .map(str::to_string)
        .or_else(|| defaults.database_url.clone())
        .unwrap_or_else(|| "sqlite://sitemapd.db".into());
    DatabaseUrl::parse(&value).map_err(|expected| ConfigError {
        variable: NAME,
        shown: format!("{:?}", redact_password(&value)),
        expected,
    })
}

pub(super) const SOURCE_EXPECTED: &str =
    "a table or view name (letters, digits, _), optionally schema.name";

/// The source is an identifier, optionally schema-qualified; it is quoted when used, and
/// restricting it to plain identifier characters keeps error messages and logs readable.
fn source_name(vars: &Vars) -> Result<String, ConfigError> {
    const NAME: &str = "SITEMAP_SOURCE";
    let value = vars.get(NAME).unwrap_or("sitemap_entries").trim();
    if is_source_name(value) {
        Ok(value.to_string())
    } else {
        Err(ConfigError::new(NAME, value, SOURCE_EXPECTED))
    }
}

/// The groups of a site that names none of its own: those of SITEMAP_GROUPS, or one unnamed
/// group read from SITEMAP_SOURCE. Setting both is an error: which would win is not obvious.
fn default_groups(vars: &Vars) -> Result<Vec<GroupConfig>, ConfigError> {
    const NAME: &str = "SITEMAP_GROUPS";
    let Some(raw) = vars.get(NAME) else {
        return Ok(vec![GroupConfig::unnamed(&source_name(vars)?)]);
    };
    if vars.get("SITEMAP_SOURCE").is_some() {
        return Err(ConfigError::new(
            NAME,
            raw,
            "unset when SITEMAP_SOURCE is set: a site reads either one source or one per group",
        ));
    }
    groups::parse_group_list(raw).map_err(|expected| ConfigError::new(NAME, raw, expected))
}

/// `ACCESS_LOG_ADDR`: a UDP socket address, or unset.
fn access_log_addr(vars: &Vars) -> Result<Option<SocketAddr>, ConfigError> {
    const NAME: &str = "ACCESS_LOG_ADDR";
    vars.get(NAME)
        .map(|raw| {
            raw.trim().parse().map_err(|_| {
                ConfigError::new(NAME, raw, "a UDP socket address like 127.0.0.1:5140")
            })
        })
        .transpose()
}

/// `ADMIN_BIND_ADDR`: a socket address other than the public one (the status page shows what
/// the public must not see: skipped rows, crawler activity).
/// Beyond loopback it needs `ADMIN_TOKEN`: a DNS-rebinding page or anyone on the network could
/// read it otherwise.
fn admin_addr(
    vars: &Vars,
    public: SocketAddr,
    has_token: bool,
) -> Result<Option<SocketAddr>, ConfigError> {
    const NAME: &str = "ADMIN_BIND_ADDR";
    let Some(raw) = vars.get(NAME) else {
        return Ok(None);
    };
    let addr: SocketAddr = raw
        .trim()
        .parse()
        .map_err(|_| ConfigError::new(NAME, raw, "a socket address like 127.0.0.1:8081"))?;
    let overlaps = addr.port() == public.port()
        && (addr.ip() == public.ip() || addr.ip().is_unspecified() || public.ip().is_unspecified());
    if overlaps {
        return Err(ConfigError::new(
            NAME,
            raw,
            format!("an address other than BIND_ADDR ({public}): the status page is never public"),
        ));
    }
    if !addr.ip().is_loopback() && !has_token {
        return Err(ConfigError::new(
            NAME,
            raw,
            "a loopback address like 127.0.0.1:8081, or set ADMIN_TOKEN to require a token \
             and listen beyond loopback",
        ));
    }
    Ok(Some(addr))
}

pub(super) fn is_source_name(value: &str) -> bool {
    let valid_part = |p: &str| {
        !p.is_empty()
            && p.len() <= 63
            && !p.starts_with(|c: char| c.is_ascii_digit())
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() <= 2 && parts.iter().all(|p| valid_part(p))
}

fn extra_sitemaps(vars: &Vars) -> Result<Vec<String>, ConfigError> {
    const NAME: &str = "ROBOTS_EXTRA_SITEMAPS";
    split_list(vars.get(NAME).unwrap_or(""))
        .map(|item| match Url::parse(item) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url.to_string()),
            _ => Err(ConfigError::new(
                NAME,
                item,
                "comma-separated absolute http(s) URLs",
            )),
        })
        .collect()
}

fn check_agents(vars: &Vars) -> Result<Vec<String>, ConfigError> {
    const NAME: &str = "ROBOTS_CHECK_AGENTS";
    let raw = vars.get(NAME).unwrap_or("*");
    let agents: Vec<String> = split_list(raw).map(str::to_string).collect();
    let valid = |a: &String| {
        a == "*"
            || a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if agents.is_empty() || !agents.iter().all(valid) {
        return Err(ConfigError::new(
            NAME,
            raw,
            "comma-separated user-agent product tokens (letters, digits, _ and -) or *",
        ));
    }
    Ok(agents)
}

fn split_list(raw: &str) -> impl Iterator<Item = &str> {
    raw.split(',').map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(
            &Vars::from_pairs(pairs.iter().copied()),
            &Defaults::default(),
        )
    }

    #[test]
    fn base_url_is_required() {
        let err = config(&[]).unwrap_err();
        assert_eq!(err.variable, "SITEMAP_BASE_URL");
    }

    #[test]
    fn base_url_gets_a_trailing_slash() {
        let cfg = config(&[("SITEMAP_BASE_URL", "https://example.com/catalog")]).unwrap();
        assert_eq!(
            cfg.first_site().base_url.as_str(),
            "https://example.com/catalog/"
        );
        assert_eq!(
            cfg.first_site().index_url(),
            "https://example.com/catalog/sitemap_index.xml"
        );
    }

    #[test]
    fn bad_page_size_names_variable_value_and_expectation() {
        let err = config(&[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("SITEMAP_PAGE_SIZE", "50001"),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "SITEMAP_PAGE_SIZE=\"50001\": an integer from 1 to 50000"
        );
    }

    #[test]
    fn database_password_is_never_shown() {
        let err = config(&[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("DATABASE_URL", "mysqlx://user:hunter2@db/x"),
        ])
        .unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let url = DatabaseUrl::parse("postgres://u:hunter2@localhost/db").unwrap();
        assert!(!format!("{url} {url:?}").contains("hunter2"));
    }

    #[test]
    fn mysql_urls_must_name_a_database() {
        let url = DatabaseUrl::parse("mysql://wp:secret@localhost/wordpress").unwrap();
        assert_eq!(url.kind(), DatabaseKind::Mysql);
        assert_eq!(
            DatabaseUrl::parse("mariadb://root@127.0.0.1:3306/cms")
                .unwrap()
                .kind(),
            DatabaseKind::Mysql
        );
        let err = DatabaseUrl::parse("mysql://wp@localhost").unwrap_err();
        assert!(err.contains("names a database"), "{err}");
    }

    #[test]
    fn source_must_be_an_identifier() {
        let err = config(&[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("SITEMAP_SOURCE", "x; drop table y"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "SITEMAP_SOURCE");
        assert!(config(&[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("SITEMAP_SOURCE", "cms.pages_view")
        ])
        .is_ok());
    }

    fn with_base(pairs: &[(&'static str, &'static str)]) -> Result<Config, ConfigError> {
        let mut all = vec![("SITEMAP_BASE_URL", "https://e.com")];
        all.extend_from_slice(pairs);
        config(&all)
    }

    #[test]
    fn notification_is_off_by_default() {
        let notify = with_base(&[]).unwrap().notify;
        assert_eq!(notify.indexnow, None);
        assert_eq!(notify.ping, None);
        assert_eq!(notify.interval, Duration::from_secs(60));
    }

    #[test]
    fn an_indexnow_key_turns_indexnow_on_with_the_default_endpoint() {
        let notify = with_base(&[("INDEXNOW_KEY", "0123abcd-EF")])
            .unwrap()
            .notify;
        let indexnow = notify.indexnow.expect("IndexNow on");
        assert_eq!(indexnow.key.as_str(), "0123abcd-EF");
        assert_eq!(indexnow.endpoint.as_str(), DEFAULT_INDEXNOW_ENDPOINT);
    }

    #[test]
    fn indexnow_key_must_follow_the_protocol_rule() {
        for bad in [
            "short7c",
            "has space1",
            "under_score",
            "ключключключ",
            &"k".repeat(129),
        ] {
            let pairs = [("SITEMAP_BASE_URL", "https://e.com"), ("INDEXNOW_KEY", bad)];
            let err = config(&pairs).unwrap_err();
            assert_eq!(err.variable, "INDEXNOW_KEY", "{bad}");
            assert!(!err.to_string().contains('\n'));
        }
        assert!(with_base(&[("INDEXNOW_KEY", "abcdefgh")]).is_ok());
        let longest = "K".repeat(128);
        let pairs = [
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("INDEXNOW_KEY", &longest),
        ];
        assert!(config(&pairs).is_ok());
    }

    #[test]
    fn indexnow_endpoint_must_be_an_http_url() {
        let err = with_base(&[
            ("INDEXNOW_KEY", "abcdefgh"),
            ("INDEXNOW_ENDPOINT", "ftp://search.example/indexnow"),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "INDEXNOW_ENDPOINT=\"ftp://search.example/indexnow\": an absolute http:// or https:// URL"
        );
        let cfg = with_base(&[
            ("INDEXNOW_KEY", "abcdefgh"),
            ("INDEXNOW_ENDPOINT", "http://127.0.0.1:9/indexnow"),
        ])
        .unwrap();
        let endpoint = cfg.notify.indexnow.unwrap().endpoint;
        assert_eq!(endpoint.as_str(), "http://127.0.0.1:9/indexnow");
    }

    #[test]
    fn an_indexnow_endpoint_without_a_key_is_refused() {
        let err = with_base(&[("INDEXNOW_ENDPOINT", "https://bing.com/indexnow")]).unwrap_err();
        assert_eq!(err.variable, "INDEXNOW_ENDPOINT");
        assert!(err.to_string().contains("INDEXNOW_KEY"), "{err}");
    }

    #[test]
    fn notify_interval_is_at_least_one_second() {
        let err = with_base(&[("INDEXNOW_INTERVAL_SECS", "0")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "INDEXNOW_INTERVAL_SECS=\"0\": an integer number of seconds from 1 to 86400"
        );
        let cfg = with_base(&[("INDEXNOW_INTERVAL_SECS", "5")]).unwrap();
        assert_eq!(cfg.notify.interval, Duration::from_secs(5));
    }

    #[test]
    fn ping_url_is_a_template_with_only_the_sitemap_placeholder() {
        let cfg =
            with_base(&[("SITEMAP_PING_URL", "https://hooks.example/p?s={sitemap}")]).unwrap();
        let ping = cfg.notify.ping.expect("ping on");
        assert_eq!(
            ping.url_for("https://e.com/sitemap_index.xml"),
            "https://hooks.example/p?s=https%3A%2F%2Fe.com%2Fsitemap_index.xml"
        );
        for bad in [
            "hooks.example/p?s={sitemap}",
            "https://h.example/?s={sitemaps}",
            "mailto:x@e.com",
        ] {
            let pairs = [
                ("SITEMAP_BASE_URL", "https://e.com"),
                ("SITEMAP_PING_URL", bad),
            ];
            assert_eq!(
                config(&pairs).unwrap_err().variable,
                "SITEMAP_PING_URL",
                "{bad}"
            );
        }
    }

    #[test]
    fn a_password_in_a_notification_url_is_never_shown() {
        let err =
            with_base(&[("SITEMAP_PING_URL", "https://u:hunter2@h.example/{nope}")]).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn the_stylesheet_setting_is_a_bool() {
        let with = |value| {
            config(&[
                ("SITEMAP_BASE_URL", "https://e.com"),
                ("SITEMAP_STYLESHEET", value),
            ])
        };
        assert!(
            !config(&[("SITEMAP_BASE_URL", "https://e.com")])
                .unwrap()
                .stylesheet
        );
        assert!(with("true").unwrap().stylesheet);
        assert!(!with("FALSE").unwrap().stylesheet);
        assert_eq!(
            with("yes please").unwrap_err().to_string(),
            "SITEMAP_STYLESHEET=\"yes please\": true or false"
        );
    }

    fn sites(toml: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sites.toml");
        std::fs::write(&path, toml).unwrap();
        config(&[("SITEMAP_SITES_FILE", path.to_str().unwrap())])
    }

    #[test]
    fn sitemaps_url_defaults_to_the_base_url() {
        let cfg = sites("[[site]]\nbase_url = \"https://a.example.com/blog\"\n").unwrap();
        let site = &cfg.sites[0];
        assert_eq!(site.sitemaps_url, site.base_url);
        assert_eq!(
            cfg.first_site().index_url(),
            "https://a.example.com/blog/sitemap_index.xml"
        );
    }

    #[test]
    fn sitemaps_url_moves_the_files_not_the_base() {
        let cfg = sites(
            "[[site]]\nbase_url = \"https://a.example.com\"\n\
             [[site]]\nbase_url = \"https://b.example.org/\"\n\
             sitemaps_url = \"https://sitemaps.example.net/b\"\n",
        )
        .unwrap();
        let b = &cfg.sites[1];
        assert_eq!(b.base_url.as_str(), "https://b.example.org/");
        assert_eq!(b.sitemaps_url.as_str(), "https://sitemaps.example.net/b/");
        assert_eq!(
            b.index_url(),
            "https://sitemaps.example.net/b/sitemap_index.xml"
        );
    }

    #[test]
    fn sites_may_publish_on_one_host_under_different_paths_even_nested() {
        let cfg = sites(
            "[[site]]\nbase_url = \"https://a.example.com\"\n\
             sitemaps_url = \"https://sitemaps.example.net/shop/\"\n\
             [[site]]\nbase_url = \"https://b.example.org\"\n\
             sitemaps_url = \"https://sitemaps.example.net/shop/outlet/\"\n\
             [[site]]\nbase_url = \"https://c.example.org\"\n\
             sitemaps_url = \"https://a.example.com/c/\"\n",
        )
        .unwrap();
        assert_eq!(cfg.sites.len(), 3);
    }

    #[test]
    fn two_sites_may_not_publish_at_one_sitemaps_url() {
        for (toml, clash) in [
            // b's files where a's are by default (a's base URL).
            (
                "[[site]]\nbase_url = \"https://a.example.com\"\n\
                 [[site]]\nbase_url = \"https://b.example.org\"\n\
                 sitemaps_url = \"https://A.example.com:443/\"\n",
                "https://a.example.com/",
            ),
            // Same place in another spelling, or another scheme that one Host names too.
            (
                "[[site]]\nbase_url = \"https://a.example.com\"\n\
                 sitemaps_url = \"https://s.example.net/x\"\n\
                 [[site]]\nbase_url = \"https://b.example.org\"\n\
                 sitemaps_url = \"http://S.example.net/x/\"\n",
                "http://s.example.net/x/",
            ),
        ] {
            let err = sites(toml).unwrap_err().to_string();
            assert!(err.starts_with("SITEMAP_SITES_FILE="), "{err}");
            assert!(
                err.contains(&format!(
                    "site 2: its sitemaps are published at {clash}, like those of site 1"
                )),
                "{err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        let err = sites(
            "[[site]]\nbase_url = \"https://a.example.com\"\n\
             [[site]]\nbase_url = \"https://b.example.org\"\nsitemaps_url = \"/sitemaps/\"\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("site 2: sitemaps_url \"/sitemaps/\" must be"),
            "{err}"
        );
    }

    #[test]
    fn a_base_host_is_one_site_whatever_the_scheme_or_port_spelling() {
        let err = sites(
            "[[site]]\nbase_url = \"https://a.example.com\"\n\
             [[site]]\nbase_url = \"http://a.example.com:443/other/\"\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("one site per host"), "{err}");
        let a = BaseUrl::parse("https://a.example.com").unwrap();
        assert!(!a.shares_host_with(&BaseUrl::parse("https://a.example.com:8443").unwrap()));
        // `Host: a.example.com` names both.
        assert!(a.shares_host_with(&BaseUrl::parse("http://a.example.com:80").unwrap()));
    }

    #[test]
    fn base_url_rejects_other_schemes() {
        assert!(BaseUrl::parse("ftp://e.com/").is_err());
        assert!(BaseUrl::parse("/relative").is_err());
    }
}
