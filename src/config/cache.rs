//! What a cache in front is told besides `SITEMAP_CACHE_CONTROL` (see [`super::settings`]):
//! `CACHE_PURGE`, the endpoints told of every URL whose bytes a save changed (see
//! [`crate::purge`]).

use super::{split_list, ConfigError, Vars};
use crate::purge::Endpoint;
use crate::store::database_url::redact_password;

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
