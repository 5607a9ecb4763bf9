//! Where a site's entries come from: `DATABASE_URL`, `SITEMAP_BASE_URL`, `SITEMAP_SOURCE` and
//! `SITEMAP_GROUPS` (the groups of a site that names none of its own).

use std::net::SocketAddr;

use super::{groups, BaseUrl, ConfigError, DatabaseUrl, Defaults, GroupConfig, Vars};
use crate::store::database_url::redact_password;

pub(super) fn base_url(
    vars: &Vars,
    defaults: &Defaults,
    bind: SocketAddr,
) -> Result<BaseUrl, ConfigError> {
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

pub(super) fn database_url(vars: &Vars, defaults: &Defaults) -> Result<DatabaseUrl, ConfigError> {
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
pub(super) fn default_groups(vars: &Vars) -> Result<Vec<GroupConfig>, ConfigError> {
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
