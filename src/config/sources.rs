//! Where a site's entries come from: `DATABASE_URL`, `SITEMAP_BASE_URL`, `SITEMAP_SOURCE` and
//! `SITEMAP_GROUPS` (the groups of a site that names none of its own).

use std::net::SocketAddr;

use super::settings::SITEMAP_SOURCE;
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

/// The groups of a site that names none of its own: those of SITEMAP_GROUPS, or one unnamed
/// group read from SITEMAP_SOURCE. Setting both is an error: which would win is not obvious.
pub(super) fn default_groups(vars: &Vars) -> Result<Vec<GroupConfig>, ConfigError> {
    const NAME: &str = "SITEMAP_GROUPS";
    let Some(raw) = vars.get(NAME) else {
        return Ok(vec![GroupConfig::unnamed(&SITEMAP_SOURCE.read(vars)?)]);
    };
    if vars.get(SITEMAP_SOURCE.name).is_some() {
        return Err(ConfigError::new(
            NAME,
            raw,
            "unset when SITEMAP_SOURCE is set: a site reads either one source or one per group",
        ));
    }
    groups::parse_group_list(raw).map_err(|expected| ConfigError::new(NAME, raw, expected))
}
