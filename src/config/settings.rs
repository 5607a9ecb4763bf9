//! The variables read with a fixed default and parser, each declared once: its name, its default,
//! what its error line says is expected, and its parser; and the small parsers several share
//! (on/off switches, integers in a range, seconds). The modules of `config` read these
//! variables through their declarations, and [`ALL`] lists them for the configuration
//! reference's test. Variables read another way (lists, files, secrets and URLs that are never
//! shown whole) stay with the module that reads them.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use super::{ConfigError, LogFormat, Vars};
use crate::robots::{ContentSignal, Environment, CONTENT_SIGNAL_EXPECTED};
use crate::sitemap::MAX_URLS_PER_FILE;

/// One variable: read from [`Vars`], else from its default, trimmed, then parsed; a value the
/// parser refuses is a [`ConfigError`] naming the variable, the value and `expected`.
pub struct Setting<T> {
    pub name: &'static str,
    /// `None`: the variable may be unset ([`Setting::read_optional`]).
    pub default: Option<&'static str>,
    pub expected: &'static str,
    parse: fn(&str) -> Option<T>,
}

impl<T> Setting<T> {
    /// The value set, else the default; neither is an error saying what is expected.
    pub fn read(&self, vars: &Vars) -> Result<T, ConfigError> {
        let Some(value) = vars.get(self.name).or(self.default) else {
            return Err(ConfigError::missing(self.name, self.expected));
        };
        let value = value.trim();
        (self.parse)(value).ok_or_else(|| ConfigError::new(self.name, value, self.expected))
    }

    /// The value of a variable without default, `None` when unset; a refused value is shown as
    /// it was set.
    pub fn read_optional(&self, vars: &Vars) -> Result<Option<T>, ConfigError> {
        vars.get(self.name)
            .map(|raw| {
                (self.parse)(raw.trim())
                    .ok_or_else(|| ConfigError::new(self.name, raw, self.expected))
            })
            .transpose()
    }

    /// Its name and default, for [`ALL`].
    pub const fn declared(&self) -> (&'static str, Option<&'static str>) {
        (self.name, self.default)
    }
}

/// Every declaration of this module: name and default.
pub const ALL: &[(&str, Option<&str>)] = &[
    BIND_ADDR.declared(),
    ADMIN_BIND_ADDR.declared(),
    ACCESS_LOG_ADDR.declared(),
    ACCESS_LOG_MAX_SKEW_SECS.declared(),
    SITEMAP_SOURCE.declared(),
    SITEMAP_PAGE_SIZE.declared(),
    SITEMAP_REFRESH_SECS.declared(),
    SITEMAP_NEWS_WINDOW_SECS.declared(),
    SITEMAP_FEED_SIZE.declared(),
    SITEMAP_STYLESHEET.declared(),
    SITEMAP_ENV.declared(),
    SITEMAP_CACHE_CONTROL.declared(),
    SITEMAP_CACHE_MB.declared(),
    DATABASE_MAX_CONNECTIONS.declared(),
    DATABASE_STATEMENT_TIMEOUT_SECS.declared(),
    REPLICA_LEASE.declared(),
    LOG_FORMAT.declared(),
    SHUTDOWN_GRACE_SECS.declared(),
    REQUEST_TIMEOUT_SECS.declared(),
    MAX_CONCURRENT_REQUESTS.declared(),
    INDEXNOW_INTERVAL_SECS.declared(),
    ROBOTS_CONTENT_SIGNAL.declared(),
    ROBOTS_LICENSE.declared(),
    ROBOTS_PUBLIC_CHECK.declared(),
    CRAWLER_VERIFY.declared(),
    DNS_SERVER.declared(),
    LLMS_TXT.declared(),
    LLMS_TXT_PER_GROUP.declared(),
];

// Where sitemapd listens.

pub const BIND_ADDR: Setting<SocketAddr> = Setting {
    name: "BIND_ADDR",
    default: Some("127.0.0.1:8080"),
    expected: "a socket address like 127.0.0.1:8080",
    parse: |v| v.parse().ok(),
};

/// The status page's address; checked further against `BIND_ADDR` and `ADMIN_TOKEN`.
pub const ADMIN_BIND_ADDR: Setting<SocketAddr> = Setting {
    name: "ADMIN_BIND_ADDR",
    default: None,
    expected: "a socket address like 127.0.0.1:8081",
    parse: |v| v.parse().ok(),
};

pub const ACCESS_LOG_ADDR: Setting<SocketAddr> = Setting {
    name: "ACCESS_LOG_ADDR",
    default: None,
    expected: "a UDP socket address like 127.0.0.1:5140",
    parse: |v| v.parse().ok(),
};

pub const ACCESS_LOG_MAX_SKEW_SECS: Setting<Duration> = Setting {
    name: "ACCESS_LOG_MAX_SKEW_SECS",
    default: Some("300"),
    expected: "an integer number of seconds from 1 to 2592000 (30 days)",
    parse: |v| seconds_in(v, 1, 2_592_000),
};

// What is served.

/// The table or view of a site without groups.
pub const SITEMAP_SOURCE: Setting<String> = Setting {
    name: "SITEMAP_SOURCE",
    default: Some("sitemap_entries"),
    expected: SOURCE_EXPECTED,
    parse: |v| is_source_name(v).then(|| v.to_string()),
};

pub const SITEMAP_PAGE_SIZE: Setting<usize> = Setting {
    name: "SITEMAP_PAGE_SIZE",
    default: Some("50000"),
    expected: "an integer from 1 to 50000",
    parse: |v| integer_in(v, 1, MAX_URLS_PER_FILE),
};

pub const SITEMAP_REFRESH_SECS: Setting<Duration> = Setting {
    name: "SITEMAP_REFRESH_SECS",
    default: Some("60"),
    expected: "an integer number of seconds from 1 to 86400",
    parse: |v| seconds_in(v, 1, 86_400),
};

pub const SITEMAP_NEWS_WINDOW_SECS: Setting<Duration> = Setting {
    name: "SITEMAP_NEWS_WINDOW_SECS",
    default: Some("172800"),
    expected: "an integer number of seconds from 1 to 172800 (48 hours)",
    parse: |v| seconds_in(v, 1, 172_800),
};

pub const SITEMAP_FEED_SIZE: Setting<usize> = Setting {
    name: "SITEMAP_FEED_SIZE",
    default: Some("100"),
    expected: "an integer from 0 (no feeds) to 10000",
    parse: |v| integer_in(v, 0, 10_000),
};

pub const SITEMAP_STYLESHEET: Setting<bool> = Setting {
    name: "SITEMAP_STYLESHEET",
    default: Some("false"),
    expected: "true or false",
    parse: true_false,
};

pub const SITEMAP_ENV: Setting<Environment> = Setting {
    name: "SITEMAP_ENV",
    default: Some("production"),
    expected: "production or staging",
    parse: |v| match v {
        "production" => Some(Environment::Production),
        "staging" => Some(Environment::Staging),
        _ => None,
    },
};

// Caching, the database, the process.

pub const SITEMAP_CACHE_CONTROL: Setting<String> = Setting {
    name: "SITEMAP_CACHE_CONTROL",
    default: Some("public, max-age=300"),
    expected: "a Cache-Control header value",
    parse: |v| {
        let header = !v.is_empty() && v.chars().all(|c| c.is_ascii() && !c.is_control());
        header.then(|| v.to_string())
    },
};

/// Read in MiB, kept in bytes.
pub const SITEMAP_CACHE_MB: Setting<usize> = Setting {
    name: "SITEMAP_CACHE_MB",
    default: Some("32"),
    expected: "an integer number of MiB from 0 to 65536",
    parse: |v| integer_in(v, 0, 65_536).map(|mib: usize| mib << 20),
};

pub const DATABASE_MAX_CONNECTIONS: Setting<u32> = Setting {
    name: "DATABASE_MAX_CONNECTIONS",
    default: Some("8"),
    expected: "an integer from 1 to 1000",
    parse: |v| integer_in(v, 1, 1000),
};

pub const DATABASE_STATEMENT_TIMEOUT_SECS: Setting<Duration> = Setting {
    name: "DATABASE_STATEMENT_TIMEOUT_SECS",
    default: Some("30"),
    expected: UP_TO_AN_HOUR,
    parse: |v| seconds_in(v, 1, 3600),
};

pub const REPLICA_LEASE: Setting<bool> = Setting {
    name: "REPLICA_LEASE",
    default: Some("on"),
    expected: "on or off",
    parse: on_off_any_case,
};

pub const LOG_FORMAT: Setting<LogFormat> = Setting {
    name: "LOG_FORMAT",
    default: Some("text"),
    expected: "text or json",
    parse: |v| match v {
        "text" => Some(LogFormat::Text),
        "json" => Some(LogFormat::Json),
        _ => None,
    },
};

pub const SHUTDOWN_GRACE_SECS: Setting<Duration> = Setting {
    name: "SHUTDOWN_GRACE_SECS",
    default: Some("30"),
    expected: UP_TO_AN_HOUR,
    parse: |v| seconds_in(v, 1, 3600),
};

pub const REQUEST_TIMEOUT_SECS: Setting<Duration> = Setting {
    name: "REQUEST_TIMEOUT_SECS",
    default: Some("120"),
    expected: UP_TO_AN_HOUR,
    parse: |v| seconds_in(v, 1, 3600),
};

pub const MAX_CONCURRENT_REQUESTS: Setting<usize> = Setting {
    name: "MAX_CONCURRENT_REQUESTS",
    default: Some("1024"),
    expected: "an integer from 1 to 100000",
    parse: |v| integer_in(v, 1, 100_000),
};

/// Least time between two IndexNow requests, and between two pings.
pub const INDEXNOW_INTERVAL_SECS: Setting<Duration> = Setting {
    name: "INDEXNOW_INTERVAL_SECS",
    default: Some("60"),
    expected: "an integer number of seconds from 1 to 86400",
    parse: |v| seconds_in(v, 1, 86_400),
};

// Robots and crawlers.

/// Unset: derived from the policy.
pub const ROBOTS_CONTENT_SIGNAL: Setting<ContentSignal> = Setting {
    name: "ROBOTS_CONTENT_SIGNAL",
    default: None,
    expected: CONTENT_SIGNAL_EXPECTED,
    parse: ContentSignal::parse,
};

pub const ROBOTS_LICENSE: Setting<bool> = Setting {
    name: "ROBOTS_LICENSE",
    default: Some("on"),
    expected: "on or off",
    parse: on_off,
};

pub const ROBOTS_PUBLIC_CHECK: Setting<bool> = Setting {
    name: "ROBOTS_PUBLIC_CHECK",
    default: Some("off"),
    expected: "on or off",
    parse: on_off_or_bool,
};

pub const CRAWLER_VERIFY: Setting<bool> = Setting {
    name: "CRAWLER_VERIFY",
    default: Some("on"),
    expected: "on or off",
    parse: on_off,
};

/// The resolver verification asks; unset: the system's.
pub const DNS_SERVER: Setting<SocketAddr> = Setting {
    name: "DNS_SERVER",
    default: None,
    expected: "an IP address, with a port or not",
    parse: |v| {
        v.parse::<SocketAddr>()
            .ok()
            .or_else(|| v.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 53)))
    },
};

// llms.txt.

pub const LLMS_TXT: Setting<bool> = Setting {
    name: "LLMS_TXT",
    default: Some("off"),
    expected: "on or off",
    parse: on_off_or_bool,
};

/// Most links per group: the file stays small whatever the groups hold.
pub const LLMS_TXT_PER_GROUP: Setting<usize> = Setting {
    name: "LLMS_TXT_PER_GROUP",
    default: Some("50"),
    expected: "an integer from 1 to 1000",
    parse: |v| integer_in(v, 1, 1000),
};

// The parsers several settings share.

const UP_TO_AN_HOUR: &str = "an integer number of seconds from 1 to 3600";

/// What a source (`SITEMAP_SOURCE`, a group's, a site's) must be.
pub const SOURCE_EXPECTED: &str =
    "a table or view name (letters, digits, _), optionally schema.name";

/// A source is an identifier, optionally schema-qualified; it is quoted when used, and
/// restricting it to plain identifier characters keeps error messages and logs readable.
pub fn is_source_name(value: &str) -> bool {
    let valid_part = |p: &str| {
        !p.is_empty()
            && p.len() <= 63
            && !p.starts_with(|c: char| c.is_ascii_digit())
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() <= 2 && parts.iter().all(|p| valid_part(p))
}

/// A decimal integer from `min` to `max`.
fn integer_in<T: FromStr + PartialOrd>(value: &str, min: T, max: T) -> Option<T> {
    value.parse::<T>().ok().filter(|n| (min..=max).contains(n))
}

/// A whole number of seconds from `min` to `max`.
fn seconds_in(value: &str, min: u64, max: u64) -> Option<Duration> {
    integer_in(value, min, max).map(Duration::from_secs)
}

/// `true` for one of the words `on`, `false` for one of `off`; `any_case`: in upper or lower
/// case.
fn switch(value: &str, on: &[&str], off: &[&str], any_case: bool) -> Option<bool> {
    let is = |word: &&str| {
        if any_case {
            word.eq_ignore_ascii_case(value)
        } else {
            *word == value
        }
    };
    if on.iter().any(is) {
        Some(true)
    } else if off.iter().any(is) {
        Some(false)
    } else {
        None
    }
}

/// `on` or `off`, in lower case.
fn on_off(value: &str) -> Option<bool> {
    switch(value, &["on"], &["off"], false)
}

/// `on` or `off`, in any case.
fn on_off_any_case(value: &str) -> Option<bool> {
    switch(value, &["on"], &["off"], true)
}

/// `on`, `true` or `1`; `off`, `false` or `0`; in any case.
fn on_off_or_bool(value: &str) -> Option<bool> {
    switch(value, &["on", "true", "1"], &["off", "false", "0"], true)
}

/// `true` or `1`; `false` or `0`; in any case.
fn true_false(value: &str) -> Option<bool> {
    switch(value, &["true", "1"], &["false", "0"], true)
}
