//! The robots settings of a site: `ROBOTS_POLICY` and `ROBOTS_CONTENT_SIGNAL`, overridable per
//! site by `[site.robots]` (`policy`, `content_signal`) in SITEMAP_SITES_FILE; and what every
//! site's robots.txt shares: `ROBOTS_EXTRA_SITEMAPS` and `ROBOTS_CHECK_AGENTS`.

use crate::crawlers::registry::Registry;
use crate::robots::{ContentSignal, LicenseSetting, LicenseTerms, Policy, CONTENT_SIGNAL_EXPECTED};

use url::Url;

use super::settings::{ROBOTS_CONTENT_SIGNAL, ROBOTS_LICENSE};
use super::{split_list, ConfigError, Vars};

/// What the site's robots.txt adds to its template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteRobots {
    /// `None`: robots.txt is the template alone (and the Content-Signal line, if set).
    pub policy: Option<Policy>,
    pub content_signal: ContentSignal,
    /// `ROBOTS_LICENSE` and `ROBOTS_LICENSE_*`: `/license.xml` and the owner's terms in it.
    pub license: LicenseSetting,
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
    Ok(SiteRobots {
        policy,
        content_signal: ROBOTS_CONTENT_SIGNAL
            .read_optional(vars)?
            .unwrap_or(ContentSignal::Derived),
        license: license(vars)?,
    })
}

/// `ROBOTS_LICENSE` (`on`, the default, or `off`) and the terms of `ROBOTS_LICENSE_TERMS`,
/// `ROBOTS_LICENSE_PAYMENT` (http(s) URLs) and `ROBOTS_LICENSE_CONTACT` (an e-mail address or
/// an http(s) URL).
fn license(vars: &Vars) -> Result<LicenseSetting, ConfigError> {
    if !ROBOTS_LICENSE.read(vars)? {
        return Ok(LicenseSetting::Off);
    }
    let url = |name: &'static str| -> Result<Option<String>, ConfigError> {
        let Some(raw) = vars.get(name) else {
            return Ok(None);
        };
        match Url::parse(raw.trim()) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(Some(url.to_string())),
            _ => Err(ConfigError::new(name, raw, "an absolute http(s) URL")),
        }
    };
    const CONTACT: &str = "ROBOTS_LICENSE_CONTACT";
    let contact = match vars.get(CONTACT).map(str::trim) {
        None => None,
        Some(raw) if is_email(raw) => Some(raw.to_string()),
        Some(_) => url(CONTACT).map_err(|e| ConfigError {
            expected: "an e-mail address or an absolute http(s) URL".into(),
            ..e
        })?,
    };
    Ok(LicenseSetting::On(LicenseTerms {
        terms: url("ROBOTS_LICENSE_TERMS")?,
        payment: url("ROBOTS_LICENSE_PAYMENT")?,
        contact,
    }))
}

/// `local@domain`, with nothing XML or a URL would need to escape.
fn is_email(text: &str) -> bool {
    let ok = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
    };
    matches!(text.split_once('@'), Some((local, domain)) if ok(local) && ok(domain) && domain.contains('.'))
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
