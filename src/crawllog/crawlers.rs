//! Which registry crawler a logged request came from, and whether its client address proves it.
//!
//! Classification is the crawler registry's ([`Registry::classify`]); crawlers it marks
//! purpose `search` get coverage, recrawl and freshness, from the fetches its verdict
//! ([`crate::crawlers::Trust::counts_as_own`]) lets count. Crawlers whose operators document that
//! they ignore robots.txt (`obeys_robots = false`) are exempt from the compliance report.

use std::sync::Arc;

use crate::crawlers::{CrawlerId, Purpose, Registry};

/// A crawler the crawl log keeps (cheap to clone).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Known {
    pub id: CrawlerId,
    /// Its display name (the reports' key).
    pub name: Arc<str>,
    /// The robots.txt product token it obeys (its own, the first of its tokens).
    pub token: Arc<str>,
    /// Whether it crawls for a search engine: coverage, recrawl and freshness are kept for it.
    pub search: bool,
}

/// The crawlers the log recognises: the registry's, each described once.
#[derive(Debug)]
pub struct Crawlers {
    registry: Arc<Registry>,
    known: Vec<Known>,
}

impl Crawlers {
    pub fn new(registry: Arc<Registry>) -> Self {
        let known = registry
            .ids()
            .map(|id| {
                let info = registry.get(id);
                Known {
                    id,
                    name: Arc::from(info.name.as_str()),
                    token: Arc::from(info.tokens.first().unwrap_or(&info.name).as_str()),
                    search: info.purpose == Purpose::Search,
                }
            })
            .collect();
        Self { registry, known }
    }

    /// The crawler a User-Agent names; `None`: no registry crawler (the line is ignored).
    pub fn classify(&self, user_agent: &str) -> Option<Known> {
        let id = self.registry.classify(user_agent)?;
        self.known.get(id.index()).cloned()
    }

    /// Whether the crawler named `name` is one whose operator documents that it ignores robots.txt
    /// (`obeys_robots = false`, e.g. fetches a person asked for): its fetches of disallowed paths
    /// are exempt, not violations. A name the registry does not know is not exempt.
    pub fn exempt_from_robots(&self, name: &str) -> bool {
        self.registry
            .by_name(name)
            .is_some_and(|id| !self.registry.get(id).obeys_robots)
    }

    /// The crawler of registry id `id` (a signed line's signer).
    pub fn by_id(&self, id: CrawlerId) -> Option<Known> {
        self.known.get(id.index()).cloned()
    }

    /// The search crawlers that fetch, in registry order.
    pub fn search(&self) -> impl Iterator<Item = &Known> {
        self.known
            .iter()
            .filter(|k| k.search && self.registry.get(k.id).fetches())
    }
}
