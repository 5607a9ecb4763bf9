//! Which crawler a logged request came from, and whether its client address proves it.
//!
//! Classification reads the User-Agent through the crawler ledger's tokens until the crawler
//! registry (`crate::crawlers::registry`) is merged here; then [`Crawlers`] wraps the registry
//! and marks as `search` what it marks purpose `search`. Verification plugs in at
//! [`Verifier::trust`]: until the verification engine is merged, every crawler is
//! claimed-but-unverified and the reports count claimed fetches (as `CRAWLER_VERIFY=off`
//! does for the ledger).

use std::net::IpAddr;

use crate::crawlers::Crawler;

/// A crawler the crawl log keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Known {
    /// Its display name (the reports' key).
    pub name: &'static str,
    /// The robots.txt product token it obeys.
    pub token: &'static str,
    /// Whether it crawls for a search engine: coverage, recrawl and freshness are kept for it.
    pub search: bool,
}

/// The crawlers the log recognises.
#[derive(Debug, Clone, Default)]
pub struct Crawlers;

impl Crawlers {
    /// The crawler a User-Agent names; `None`: not a known crawler (the line is ignored).
    pub fn classify(&self, user_agent: &str) -> Option<Known> {
        match Crawler::classify(user_agent) {
            Crawler::Other => None,
            crawler => Some(Known {
                name: crawler.as_str(),
                token: crawler.as_str(),
                // Every crawler the ledger names is a search engine's.
                search: true,
            }),
        }
    }

    /// The search crawlers the reports list, Googlebot and bingbot first.
    pub fn search(&self) -> Vec<Known> {
        Crawler::ALL
            .iter()
            .filter(|c| **c != Crawler::Other)
            .map(|c| Known {
                name: c.as_str(),
                token: c.as_str(),
                search: true,
            })
            .collect()
    }
}

/// What a request's client address says of the crawler its User-Agent claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Trust {
    Verified,
    Unverified,
    Forged,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Verified => "verified",
            Trust::Unverified => "unverified",
            Trust::Forged => "forged",
        }
    }
}

/// Tells true crawlers from forged ones by their logged client address.
#[derive(Debug, Clone, Default)]
pub struct Verifier {
    /// Whether an engine checks addresses (then only verified fetches count as the crawler's).
    checking: bool,
}

impl Verifier {
    /// VERIFICATION PLUGS IN HERE: ask the verification engine about `client` for `crawler`
    /// (cached, bounded). Until it is merged, nothing is checked and every claim stays
    /// unverified.
    pub fn trust(&self, _crawler: Known, _client: IpAddr) -> Trust {
        Trust::Unverified
    }

    /// Whether a fetch of this trust counts as the crawler's own (coverage, recrawl, freshness,
    /// outside the sitemaps): verified ones when addresses are checked, claimed ones otherwise;
    /// a forged one never.
    pub fn counts(&self, trust: Trust) -> bool {
        match trust {
            Trust::Verified => true,
            Trust::Unverified => !self.checking,
            Trust::Forged => false,
        }
    }
}
