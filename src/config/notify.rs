//! Change notification settings: `INDEXNOW_KEY`, `INDEXNOW_ENDPOINT`, `INDEXNOW_INTERVAL_SECS`
//! and `SITEMAP_PING_URL`, parsed into the types the notifier uses.

use url::Url;

use super::settings::INDEXNOW_INTERVAL_SECS;
use super::{ConfigError, Vars};
use crate::notify::{IndexNowConfig, IndexNowKey, NotifyConfig, PingTemplate};
use crate::store::database_url::redact_password;

/// IndexNow endpoint used when `INDEXNOW_KEY` is set and `INDEXNOW_ENDPOINT` is not.
pub const DEFAULT_INDEXNOW_ENDPOINT: &str = "https://api.indexnow.org/indexnow";

pub(super) fn notify_config(vars: &Vars) -> Result<NotifyConfig, ConfigError> {
    Ok(NotifyConfig {
        indexnow: indexnow_config(vars)?,
        ping: ping_template(vars)?,
        interval: INDEXNOW_INTERVAL_SECS.read(vars)?,
    })
}

fn indexnow_config(vars: &Vars) -> Result<Option<IndexNowConfig>, ConfigError> {
    const KEY: &str = "INDEXNOW_KEY";
    const ENDPOINT: &str = "INDEXNOW_ENDPOINT";
    let endpoint = vars.get(ENDPOINT).map(str::trim);
    let Some(key) = vars.get(KEY).map(str::trim) else {
        // An endpoint alone would silently do nothing: say so rather than start without IndexNow.
        return match endpoint {
            Some(value) => Err(ConfigError::new(
                ENDPOINT,
                value,
                "set INDEXNOW_KEY too (IndexNow is off without a key)",
            )),
            None => Ok(None),
        };
    };
    let key = IndexNowKey::parse(key).map_err(|expected| ConfigError::new(KEY, key, expected))?;
    let endpoint = endpoint.unwrap_or(DEFAULT_INDEXNOW_ENDPOINT);
    let endpoint = http_url(endpoint).map_err(|expected| ConfigError {
        variable: ENDPOINT,
        shown: format!("{:?}", redact_password(endpoint)),
        expected,
    })?;
    Ok(Some(IndexNowConfig { key, endpoint }))
}

fn ping_template(vars: &Vars) -> Result<Option<PingTemplate>, ConfigError> {
    const NAME: &str = "SITEMAP_PING_URL";
    vars.get(NAME)
        .map(|value| {
            PingTemplate::parse(value).map_err(|expected| ConfigError {
                variable: NAME,
                shown: format!("{:?}", redact_password(value.trim())),
                expected,
            })
        })
        .transpose()
}

/// An absolute http(s) URL with a host.
fn http_url(value: &str) -> Result<Url, String> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(url),
        _ => Err("an absolute http:// or https:// URL".into()),
    }
}
