//! What the notifier is configured with, valid by construction: where and how often changes are
//! announced, the IndexNow key (served as its key file) and the ping URL template.

use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use url::Url;

/// Where and how often changes are announced (`INDEXNOW_*`, `SITEMAP_PING_URL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// `None` when `INDEXNOW_KEY` is unset: IndexNow is off.
    pub indexnow: Option<IndexNowConfig>,
    /// `None` when `SITEMAP_PING_URL` is unset: no ping.
    pub ping: Option<PingTemplate>,
    /// Least time between two requests to the same destination.
    pub interval: Duration,
}

/// The IndexNow key this site proves ownership with, and where submissions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexNowConfig {
    pub key: IndexNowKey,
    pub endpoint: Url,
}

const KEY_LENGTHS: std::ops::RangeInclusive<usize> = 8..=128;

/// An IndexNow key: 8 to 128 characters, each a letter, a digit or `-` (the protocol's rule).
///
/// Not a secret: the key file publishes it. Serve [`Self::as_str`] as the whole body of
/// `<base>/` + [`Self::file_name`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexNowKey(String);

impl IndexNowKey {
    /// Parses a key; the error says what is expected.
    pub fn parse(value: &str) -> Result<Self, String> {
        let valid_chars = value.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid_chars || !KEY_LENGTHS.contains(&value.len()) {
            return Err("8 to 128 characters, each a letter, a digit or -".into());
        }
        // `sitemap-1.txt` is the text sitemap of file 1: a key file of that name would hide it.
        if value.starts_with(crate::files::SITEMAP_STEM) {
            return Err(
                "a key not starting with \"sitemap\" (its file would hide a text sitemap)".into(),
            );
        }
        Ok(Self(value.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Name of the key file: `<key>.txt`.
    pub fn file_name(&self) -> String {
        crate::files::key_file_name(&self.0)
    }
}

impl std::fmt::Display for IndexNowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Everything but RFC 3986 unreserved characters is encoded, so the sitemap URL fits anywhere
/// in the template (a query value, a path segment) as one opaque value.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A validated ping URL template.
#[derive(Clone, PartialEq, Eq)]
pub struct PingTemplate(String);

impl PingTemplate {
    pub const PLACEHOLDER: &'static str = "{sitemap}";

    /// Parses a template: an absolute http(s) URL once `{sitemap}` is filled in, with no other
    /// `{…}` (a misspelt placeholder). `{sitemap}` may be left out for a hook that needs no URL.
    pub fn parse(value: &str) -> Result<Self, String> {
        let value = value.trim();
        let filled = value.replace(Self::PLACEHOLDER, "x");
        if filled.contains(['{', '}']) {
            return Err("a URL whose only placeholder is {sitemap}".into());
        }
        match Url::parse(&filled) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
                Ok(Self(value.to_string()))
            }
            _ => Err("an absolute http:// or https:// URL, with {sitemap} where the sitemap index URL goes".into()),
        }
    }

    /// The URL to GET for a change of the index at `index_url`.
    pub fn url_for(&self, index_url: &str) -> String {
        let encoded = utf8_percent_encode(index_url, COMPONENT).to_string();
        self.0.replace(Self::PLACEHOLDER, &encoded)
    }

    /// The host, for logs: the template's path or query may hold a token.
    pub(crate) fn host(&self) -> String {
        Url::parse(&self.url_for(""))
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Shows the host only: the rest of a webhook URL may be a secret.
impl std::fmt::Debug for PingTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PingTemplate(https?://{}/…)", self.host())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_whose_file_would_hide_a_text_sitemap_is_refused() {
        for key in ["sitemap-1", "sitemap-12", "sitemap_index", "sitemapfile"] {
            assert!(IndexNowKey::parse(key).is_err(), "{key}");
        }
        assert!(IndexNowKey::parse("my-sitemap-key").is_ok());
    }

    #[test]
    fn the_sitemap_url_is_encoded_as_one_opaque_value() {
        let template =
            PingTemplate::parse("https://hooks.example/ping?sitemap={sitemap}&v=1").unwrap();
        assert_eq!(
            template.url_for("https://e.com/caf%C3%A9/sitemap_index.xml?a=b&c=d"),
            "https://hooks.example/ping?sitemap=https%3A%2F%2Fe.com%2Fcaf%25C3%25A9%2Fsitemap_index.xml%3Fa%3Db%26c%3Dd&v=1"
        );
    }

    #[test]
    fn the_placeholder_may_appear_in_the_path_or_not_at_all() {
        let in_path = PingTemplate::parse("http://127.0.0.1:9/hook/{sitemap}").unwrap();
        assert_eq!(
            in_path.url_for("https://e.com/sitemap_index.xml"),
            "http://127.0.0.1:9/hook/https%3A%2F%2Fe.com%2Fsitemap_index.xml"
        );
        let fixed = PingTemplate::parse("https://ci.example/rebuild?token=s3cret").unwrap();
        assert_eq!(
            fixed.url_for("https://e.com/sitemap_index.xml"),
            "https://ci.example/rebuild?token=s3cret"
        );
    }

    #[test]
    fn templates_that_are_not_http_urls_or_misspell_the_placeholder_are_refused() {
        for bad in [
            "",
            "{sitemap}",
            "hooks.example/?s={sitemap}",
            "ftp://hooks.example/{sitemap}",
            "https://hooks.example/?s={Sitemap}",
            "https://hooks.example/?s={sitemap",
        ] {
            assert!(PingTemplate::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn debug_output_hides_everything_but_the_host() {
        let template =
            PingTemplate::parse("https://hooks.example/t0ken?key=s3cret&s={sitemap}").unwrap();
        let shown = format!("{template:?}");
        assert!(shown.contains("hooks.example"), "{shown}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("t0ken"),
            "{shown}"
        );
    }
}
