//! The site's base URL (origin and mount path): every URL a sitemap lists is built from it and
//! must fall under it.

use url::Url;

/// The public origin and mount path every URL is built from.
///
/// Always ends with `/`, so "under the base" is a plain prefix test on the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(Url);

impl BaseUrl {
    /// Parses an absolute http(s) URL without query, fragment or credentials.
    pub fn parse(value: &str) -> Result<Self, String> {
        let mut url = Url::parse(value.trim()).map_err(|e| format!("an absolute URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("an http:// or https:// URL".into());
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("a URL with a host".into());
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err("a URL without query or fragment".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a URL without user or password".into());
        }
        if !url.path().ends_with('/') {
            let path = format!("{}/", url.path());
            url.set_path(&path);
        }
        Ok(Self(url))
    }

    /// Scheme, host and port as the URL is written (`https://www.example.com`): what every
    /// URL under it starts with.
    pub fn origin_text(&self) -> &str {
        &self.0[..url::Position::BeforePath]
    }

    pub fn url(&self) -> &Url {
        &self.0
    }

    /// The base as text, always ending with `/`.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The host name (parse guarantees there is one).
    pub fn host(&self) -> &str {
        self.0.host_str().unwrap_or_default()
    }

    /// The mount path, e.g. `/` or `/catalog/`.
    pub fn path(&self) -> &str {
        self.0.path()
    }

    /// Absolute URL of a file served under the mount path.
    pub fn file_url(&self, file_name: &str) -> String {
        format!("{}{}", self.as_str(), file_name)
    }

    /// Whether a Host header value names this site (any case, with or without the default
    /// port, a trailing dot allowed).
    pub fn is_named_by(&self, host: &str) -> bool {
        let Ok(authority) = host.trim().parse::<axum::http::uri::Authority>() else {
            return false;
        };
        let name = authority.host().trim_end_matches('.');
        let port_ok = match authority.port_u16() {
            Some(port) => Some(port) == self.0.port_or_known_default(),
            None => self.0.port().is_none(),
        };
        port_ok && name.eq_ignore_ascii_case(self.0.host_str().unwrap_or_default())
    }

    /// Whether some Host header value would name both `self` and `other` (same host name, and
    /// the same explicit port or none on both), so requests could not tell them apart.
    pub fn shares_host_with(&self, other: &BaseUrl) -> bool {
        let same_port = match (self.0.port(), other.0.port()) {
            (None, None) => true,
            _ => self.0.port_or_known_default() == other.0.port_or_known_default(),
        };
        same_port && self.host().eq_ignore_ascii_case(other.host())
    }

    /// `host` or `host:port` as a Host header names this site: lower case, without the
    /// scheme's default port.
    pub fn authority(&self) -> String {
        let host = self.0.host_str().unwrap_or_default().to_ascii_lowercase();
        match self.0.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        }
    }
}
