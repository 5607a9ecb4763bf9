//! What a cache in front is told: `SITEMAP_CACHE_CONTROL` (the `Cache-Control` sitemaps and
//! robots.txt are sent with, before the shared-cache part, see [`crate::cache_headers`]) and
//! `CACHE_PURGE` (the endpoints told of every URL whose bytes a save changed, see
//! [`crate::purge`]).

use super::{split_list, ConfigError, Vars};
use crate::purge::Endpoint;
use crate::store::database_url::redact_password;

pub(super) fn cache_control(vars: &Vars) -> Result<String, ConfigError> {
    const NAME: &str = "SITEMAP_CACHE_CONTROL";
    let value = vars.get(NAME).unwrap_or("public, max-age=300").trim();
    if value.is_empty() || value.chars().any(|c| c.is_control() || !c.is_ascii()) {
        return Err(ConfigError::new(
            NAME,
            value,
            "a Cache-Control header value",
        ));
    }
    Ok(value.to_string())
}

/// `CACHE_PURGE`: comma-separated endpoints; unset or empty: none.
pub(super) fn cache_purge(vars: &Vars) -> Result<Vec<Endpoint>, ConfigError> {
    const NAME: &str = "CACHE_PURGE";
    split_list(vars.get(NAME).unwrap_or(""))
        .map(|item| {
            Endpoint::parse(item).map_err(|expected| ConfigError {
                variable: NAME,
                // An endpoint may carry a relay's credentials.
                shown: format!("{:?}", redact_password(item)),
                expected: expected.into(),
            })
        })
        .collect()
}
