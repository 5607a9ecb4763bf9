//! The robots settings of a site: `ROBOTS_POLICY` and `ROBOTS_CONTENT_SIGNAL`, overridable per
//! site by `[site.robots]` (`policy`, `content_signal`) in SITEMAP_SITES_FILE.

use crate::crawlers::registry::Registry;
use crate::robots::{ContentSignal, Policy, CONTENT_SIGNAL_EXPECTED};

use super::{ConfigError, Vars};

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
pub(super) fn site_robots(vars: &Vars) -> Result<SiteRobots, ConfigError> {
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
            if let Some(registry) = registry(vars) {
                policy.check_names(&registry).map_err(|e| ConfigError {
                    variable: POLICY,
                    shown: format!("{raw:?}"),
                    expected: format!("rule {:?}: {}", e.rule, e.problem),
                })?;
            }
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

/// The registry crawler names are checked against before anything starts: the built-in one
/// with CRAWLERS_FILE. `None` when that file cannot be read: its own check reports it, and the
/// names are checked again when robots.txt is compiled.
pub(super) fn registry(vars: &Vars) -> Option<Registry> {
    match vars.get("CRAWLERS_FILE") {
        None => Some(Registry::builtin()),
        Some(path) => Registry::with_file(std::path::Path::new(path)).ok(),
    }
}

/// A site's `[site.robots]` over the defaults; the error completes "site N: ...".
pub(super) fn with_entry(
    defaults: &SiteRobots,
    entry: Option<RobotsEntry>,
    site: usize,
    registry: Option<&Registry>,
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
                if let Some(registry) = registry {
                    policy.check_names(registry).map_err(describe)?;
                }
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
