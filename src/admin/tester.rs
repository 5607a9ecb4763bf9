//! What the robots.txt tester (status page, `/status.json`, `sitemapd robots test`) tests for a
//! URL: only http(s) URLs and paths are tested; robots.txt rules match paths, so the path is
//! what is tested, and a host other than the site's is said in the answer, never silently
//! ignored.

use serde::Serialize;

use crate::crawlers::Registry;
use crate::robots::{RobotsTxt, Verdict};
use crate::site::Site;

/// A robots.txt verdict for the tester.
#[derive(Debug, Serialize)]
pub struct RobotsAnswer {
    pub url: String,
    /// What was asked: a crawler's name, a product token or a whole User-Agent string.
    pub agent: String,
    /// The registry crawler `agent` means, if any.
    pub crawler: Option<String>,
    /// The product token the verdict is for (the crawler's own token when the registry knows it).
    pub token: String,
    pub allowed: bool,
    /// `line 4: Disallow: /admin/`, or why nothing decided.
    pub decided_by: String,
    /// The path (and query) the rules were matched against.
    pub tested_path: Option<String>,
    /// What the answer must say about the URL, e.g. that its host is not this site's.
    pub note: Option<String>,
    /// Why no verdict was given (a URL that is not http(s)); `allowed` means nothing then.
    pub refused: Option<String>,
}

/// The path the tester evaluates, and what the answer must say about the URL as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestedUrl {
    /// Path and query, as robots.txt rules match them.
    pub path: String,
    /// Set when the URL names another host: its rules are not this site's robots.txt.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TesterError {
    #[error(
        "only http and https URLs (or a path starting with /) can be tested, not a {scheme}: URL"
    )]
    NotHttp { scheme: String },
    #[error("give a URL or a path to test")]
    Empty,
}

/// Reads `url` (an absolute http(s) URL, a `//host/path` reference or a path) for the site
/// whose robots.txt is at `site_host`.
pub fn tested_url(url: &str, site_host: &str) -> Result<TestedUrl, TesterError> {
    let url = url.trim();
    if url.is_empty() {
        return Err(TesterError::Empty);
    }
    let absolute = match url.strip_prefix("//") {
        Some(rest) => url::Url::parse(&format!("http://{rest}")),
        None => url::Url::parse(url),
    };
    let Ok(parsed) = absolute else {
        let path = if url.starts_with('/') {
            url.to_string()
        } else {
            format!("/{url}")
        };
        return Ok(TestedUrl { path, note: None });
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(TesterError::NotHttp {
            scheme: parsed.scheme().to_string(),
        });
    }
    let path = match parsed.query() {
        Some(query) => format!("{}?{query}", parsed.path()),
        None => parsed.path().to_string(),
    };
    let host = parsed.host_str().unwrap_or_default();
    let note = (!host.trim_end_matches('.').eq_ignore_ascii_case(site_host)).then(|| {
        format!("tested the path {path}; the host {host} is not this site's ({site_host})")
    });
    Ok(TestedUrl { path, note })
}

/// The verdict of `site`'s served robots.txt for `agent` fetching `url`: `agent` is a registry
/// crawler's name, a product token or a whole User-Agent string, mapped through the registry to
/// the token that crawler would look for. The path of `url` is tested, and the answer says so
/// when `url` names another host; a URL that is not http(s) gets no verdict, only why.
pub fn robots_answer(site: &Site, registry: &Registry, url: &str, agent: &str) -> RobotsAnswer {
    let token = registry.robots_token(agent);
    let crawler = registry
        .resolve(agent)
        .map(|id| registry.get(id).name.clone());
    let tested = match tested_url(url, site.base().host()) {
        Ok(tested) => tested,
        Err(refused) => {
            return RobotsAnswer {
                url: url.to_string(),
                agent: agent.to_string(),
                crawler,
                token: token.to_string(),
                allowed: false,
                decided_by: String::new(),
                tested_path: None,
                note: None,
                refused: Some(refused.to_string()),
            }
        }
    };
    let body = site.first().snapshot().robots.body.clone();
    let text = String::from_utf8_lossy(&body);
    let verdict = RobotsTxt::parse(&text).map(|robots| robots.evaluate(token, &tested.path));
    let (allowed, decided_by) = match verdict {
        Ok(Verdict {
            allowed,
            decided_by: Some(rule),
        }) => (allowed, rule.to_string()),
        Ok(Verdict { allowed, .. }) => (allowed, "no rule matched".to_string()),
        Err(e) => (true, format!("robots.txt does not parse: {e}")),
    };
    RobotsAnswer {
        url: url.to_string(),
        agent: agent.to_string(),
        crawler: registry
            .resolve(agent)
            .map(|id| registry.get(id).name.clone()),
        token: token.to_string(),
        allowed,
        decided_by,
        tested_path: Some(tested.path),
        note: tested.note,
        refused: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_of_the_site_is_tested_by_its_path_and_query() {
        let tested = tested_url("https://www.example.com/a/b?x=1", "www.example.com").unwrap();
        assert_eq!(tested.path, "/a/b?x=1");
        assert_eq!(tested.note, None);
        assert_eq!(tested_url("/a", "e.com").unwrap().path, "/a");
        assert_eq!(tested_url("a", "e.com").unwrap().path, "/a");
    }

    #[test]
    fn another_host_is_named_in_the_answer() {
        for url in ["http://evil.example/x", "//evil.example/x"] {
            let tested = tested_url(url, "www.example.com").unwrap();
            assert_eq!(tested.path, "/x");
            let note = tested.note.expect("a note");
            assert!(note.contains("tested the path /x"), "{note}");
            assert!(
                note.contains("the host evil.example is not this site's"),
                "{note}"
            );
        }
    }

    #[test]
    fn urls_that_are_not_http_are_refused() {
        for url in [
            "javascript:alert(1)",
            "ftp://www.example.com/x",
            "data:text/html,x",
        ] {
            assert!(
                matches!(
                    tested_url(url, "www.example.com"),
                    Err(TesterError::NotHttp { .. })
                ),
                "{url}"
            );
        }
        assert_eq!(tested_url("  ", "e.com"), Err(TesterError::Empty));
    }
}
