//! Crawler verification: whether a client address proves the registry crawler its User-Agent
//! claims — by the operator's published IP ranges, or by reverse DNS under an allowed suffix
//! confirmed by a forward lookup. Checks run off the request path; [`Verifier::cached`] answers
//! without waiting, [`Verifier::verdict`] waits for the lookups (bounded in time and rate).
//!
//! INTERFACE STUB: the engine is being built; until then every claim is unverified.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use crate::crawlers::{CrawlerId, Registry, Trust};
use crate::store::Store;

/// What `CRAWLER_VERIFY` and `DNS_SERVER` say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifySettings {
    /// `CRAWLER_VERIFY`: check crawlers that claim a verifiable name (default on).
    pub on: bool,
    /// `DNS_SERVER`: the resolver to ask; `None`: the system's.
    pub dns_server: Option<SocketAddr>,
}

impl Default for VerifySettings {
    fn default() -> Self {
        Self {
            on: true,
            dns_server: None,
        }
    }
}

/// The state of one published range list, for the status page.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RangeList {
    pub url: String,
    /// When the list in use was fetched (unix seconds); `None`: never.
    pub fetched_at: Option<i64>,
    /// How many prefixes it holds.
    pub prefixes: usize,
    /// The last fetch's error, if it failed.
    pub error: Option<String>,
}

/// Tells true crawlers from forged ones. Shared as `Arc<Verifier>`.
#[derive(Debug)]
pub struct Verifier {
    registry: Arc<Registry>,
    settings: VerifySettings,
}

impl Verifier {
    /// Loads the stored range lists, starts fetching them (at once, then daily) and returns.
    /// Never fails the start: a list that cannot be fetched is shown on the status page.
    pub async fn start(
        registry: Arc<Registry>,
        settings: VerifySettings,
        _store: Option<Store>,
    ) -> Arc<Self> {
        Arc::new(Self { registry, settings })
    }

    /// Whether verification is on (`CRAWLER_VERIFY`).
    pub fn is_on(&self) -> bool {
        self.settings.on
    }

    /// The verdict known now for `addr` claiming `crawler`, without waiting: `Some` when it is
    /// decided (verification off, a crawler with no method, a published range, a cached
    /// lookup); `None` when [`Verifier::verdict`] must look it up.
    pub fn cached(&self, crawler: CrawlerId, _addr: IpAddr) -> Option<Trust> {
        if !self.settings.on || !self.registry.get(crawler).is_verifiable() {
            return Some(Trust::Unverified);
        }
        None
    }

    /// The verdict for `addr` claiming `crawler`, looking it up when it is not cached. Bounded:
    /// a lookup times out, lookups beyond the rate limit answer `Unverified` at once.
    pub async fn verdict(&self, crawler: CrawlerId, addr: IpAddr) -> Trust {
        self.cached(crawler, addr).unwrap_or(Trust::Unverified)
    }

    /// The published range lists and when each was fetched.
    pub fn range_lists(&self) -> Vec<RangeList> {
        Vec::new()
    }
}
