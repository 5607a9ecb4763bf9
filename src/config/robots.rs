//! The robots settings of a site: `ROBOTS_POLICY` and `ROBOTS_CONTENT_SIGNAL`, overridable per
//! site by `[site.robots]` (`policy`, `content_signal`) in SITEMAP_SITES_FILE; and what every
//! site's robots.txt shares: `ROBOTS_EXTRA_SITEMAPS` and `ROBOTS_CHECK_AGENTS`.

use crate::crawlers::registry::Registry;
use crate::robots::{ContentSignal, Policy, CONTENT_SIGNAL_EXPECTED};

use url::Url;

use super::{split_list, ConfigError, Vars};

/// What the site's robots.txt adds to its template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteRobots {
    /// `None`: robots.txt is the template alone (and the Content-Signal line, if set).
    pub policy: Option<Policy>,
    pub content_signal: ContentSignal,
}

/// `[site.robots]` as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RobotsEntry {
    policy: Option<String>,
    content_signal: Option<String>,
}

/// From ROBOTS_POLICY and ROBOTS_CONTENT_SIGNAL: every site's unless its `[site.robots]` says
/// otherwise.
pub(super) fn site_robots(vars: &Vars, registry: &Registry) -> Result<SiteRobots, ConfigError> {
    const POLICY: &str = "ROBOTS_POLICY";
    const SIGNAL: &str = "ROBOTS_CONTENT_SIGNAL";
    let policy = match vars.get(POLICY) {
        None => None,
        Some(raw) => {
            let policy = Policy::parse(raw, POLICY).map_err(|e| ConfigError {
                variable: POLICY,
                shown: format!("{raw:?}"),
                expected: format!("rule {:?}: {}", e.rule, e.problem),
            })?;
            policy.check_names(registry).map_err(|e| ConfigError {
                variable: POLICY,
                shown: format!("{raw:?}"),
                expected: format!("rule {:?}: {}", e.rule, e.problem),
            })?;
            Some(policy)
        }
    };
    let content_signal = match vars.get(SIGNAL) {
        None => ContentSignal::Derived,
        Some(raw) => ContentSignal::parse(raw)
            .ok_or_else(|| ConfigError::new(SIGNAL, raw, CONTENT_SIGNAL_EXPECTED))?,
    };
    Ok(SiteRobots {
        policy,
        content_signal,
    })
}

/// A site's `[site.robots]` over the defaults; the error completes "site N: ...".
pub(super) fn with_entry(
    defaults: &SiteRobots,
    entry: Option<RobotsEntry>,
    site: usize,
    registry: &Registry,
) -> Result<SiteRobots, String> {
    let Some(entry) = entry else {
        return Ok(defaults.clone());
    };
    let mut robots = defaults.clone();
    if let Some(raw) = entry.policy {
        let origin = format!("SITEMAP_SITES_FILE site {site} [site.robots] policy");
        robots.policy = match raw.trim() {
            "" => None,
            _ => {
                let describe = |e: crate::robots::PolicyError| {
                    format!(
                        "[site.robots] policy {raw:?}: rule {:?}: {}",
                        e.rule, e.problem
                    )
                };
                let policy = Policy::parse(&raw, &origin).map_err(describe)?;
                policy.check_names(registry).map_err(describe)?;
                Some(policy)
            }
        };
    }
    if let Some(raw) = entry.content_signal {
        robots.content_signal = ContentSignal::parse(&raw).ok_or_else(|| {
            format!("[site.robots] content_signal {raw:?} must be {CONTENT_SIGNAL_EXPECTED}")
        })?;
    }
    Ok(robots)
}

pub(super) fn extra_sitemaps(vars: &Vars) -> Result<Vec<String>, ConfigError> {
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

pub(super) fn check_agents(vars: &Vars) -> Result<Vec<String>, ConfigError> {
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
