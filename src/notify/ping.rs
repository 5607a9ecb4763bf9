//! The sitemap ping: a GET of `SITEMAP_PING_URL`, a template whose `{sitemap}` becomes the
//! percent-encoded URL of the sitemap index that changed.
//!
//! Search engines have retired their ping endpoints (Google in 2023); this is for one's own
//! hooks and for services that still accept it. A burst of index changes gives one GET per
//! interval: pings of an index already waiting collapse into the waiting one.

use std::collections::VecDeque;

use futures::future::BoxFuture;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::Client;
use url::Url;

use super::delivery::{self, Attempt};
use super::NotifyMetrics;

/// Everything but RFC 3986 unreserved characters is encoded, so the sitemap URL fits anywhere
/// in the template (a query value, a path segment) as one opaque value.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Distinct index URLs that may wait at once (one per site; more means something is wrong).
const PENDING_CAP: usize = 1_000;

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
    fn host(&self) -> String {
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

/// One GET: the index it is for, and the filled-in URL.
#[derive(Debug, Clone)]
pub struct Ping {
    index_url: String,
    url: String,
}

/// The ping target of the delivery task.
pub struct Outbox {
    client: Client,
    template: PingTemplate,
    host: String,
    /// Index URLs waiting, oldest first, each once.
    pending: VecDeque<String>,
    metrics: NotifyMetrics,
}

impl Outbox {
    pub fn new(client: Client, template: PingTemplate, metrics: NotifyMetrics) -> Self {
        Self {
            client,
            host: template.host(),
            template,
            pending: VecDeque::new(),
            metrics,
        }
    }
}

impl delivery::Outbox for Outbox {
    type Item = String;
    type Batch = Ping;
    const TARGET: &'static str = "ping";

    fn add(&mut self, index_url: String) {
        if self.pending.contains(&index_url) {
            return;
        }
        if self.pending.len() >= PENDING_CAP {
            tracing::warn!(target: "sitemapd::notify", dropped = %self.pending[0], "too many pings waiting; the oldest was dropped");
            self.pending.pop_front();
        }
        self.pending.push_back(index_url);
    }

    fn take(&mut self) -> Option<Ping> {
        let index_url = self.pending.pop_front()?;
        Some(Ping {
            url: self.template.url_for(&index_url),
            index_url,
        })
    }

    fn pending(&self) -> usize {
        self.pending.len()
    }

    /// A newer ping of the same index replaces one waiting for its retry.
    fn supersedes(&self, ping: &Ping) -> bool {
        self.pending.contains(&ping.index_url)
    }

    fn deliver(&self, ping: &Ping) -> BoxFuture<'static, Attempt> {
        let request = self.client.get(&ping.url);
        Box::pin(async move { delivery::judge(request.send().await).await })
    }

    fn describe(&self, ping: &Ping) -> String {
        format!("ping to {} for {}", self.host, ping.index_url)
    }

    fn delivered(&mut self, _ping: &Ping) {
        self.metrics.pings.inc();
    }

    fn attempt_failed(&mut self) {
        self.metrics.failed(Self::TARGET);
    }

    fn dropped(&mut self, _ping: &Ping) {}

    fn drop_pending(&mut self) -> usize {
        std::mem::take(&mut self.pending).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
