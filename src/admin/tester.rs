//! What the robots.txt tester (status page, `/status.json`, `sitemapd robots test`) tests for a
//! URL: only http(s) URLs and paths are tested; robots.txt rules match paths, so the path is
//! what is tested, and a host other than the site's is said in the answer, never silently
//! ignored.

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
