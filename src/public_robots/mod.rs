//! The robots.txt the public gets: fetched from the site's own origin as a crawler fetches it
//! (a crawler's User-Agent, no redirect followed, through whatever is in front), and set beside
//! the file sitemapd serves ([`compare`]). `sitemapd check --public` runs it once; with
//! `ROBOTS_PUBLIC_CHECK=on` the service runs it at most hourly for the status page ([`watch`]).

pub mod compare;
mod fetch;
pub mod watch;

pub use compare::{compare, Answer, Difference};
pub use fetch::{fetch_public, PublicFetchError, CRAWLER_USER_AGENT};

use serde::Serialize;

/// One check of a site: when, what was fetched, and what differs (empty: the same file).
#[derive(Debug, Clone, Serialize)]
pub struct PublicCheck {
    pub url: String,
    pub checked_at: String,
    /// Why the public file could not be fetched; then `differences` is empty.
    pub error: Option<String>,
    pub differences: Vec<Difference>,
}

impl PublicCheck {
    /// Fetches `url` and compares it with `served`.
    pub async fn run(url: &str, served: &str) -> PublicCheck {
        let checked_at = chrono::Utc::now().to_rfc3339();
        match fetch_public(url).await {
            Ok(answer) => PublicCheck {
                url: url.to_string(),
                checked_at,
                error: None,
                differences: compare(served, &answer),
            },
            Err(e) => PublicCheck {
                url: url.to_string(),
                checked_at,
                error: Some(crate::error::Chain(&e).to_string()),
                differences: Vec::new(),
            },
        }
    }

    /// Whether the public gets sitemapd's file.
    pub fn same(&self) -> bool {
        self.error.is_none() && self.differences.is_empty()
    }
}

/// Where the public robots.txt of a site with base URL `base` is: the root of its origin.
pub fn public_url(base: &url::Url) -> String {
    let mut url = base.clone();
    url.set_path("/robots.txt");
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}
