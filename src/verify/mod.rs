//! Crawler verification: whether a request proves the registry crawler it claims to be — by its
//! client address (the operator's published IP ranges, or reverse DNS under an allowed suffix
//! confirmed by a forward lookup) or by its Web Bot Auth signature ([`signature`]), verified
//! when either method says so. Checks run off the request path; [`Verifier::cached`] and
//! [`Verifier::claim_cached`] answer without waiting, [`Verifier::verdict`] and
//! [`Verifier::claim_verdict`] wait for the lookups and key directories (bounded in time and
//! rate). A request (the ledger's) and an access-log line (the crawl log's) get their verdict
//! the same way, [`Verifier::decide`]: now, later, or `unverified` when too many wait.
//!
//! Client addresses are kept only in the bounded in-memory cache ([`cache`]), for their TTL:
//! never written to the database or the logs.

mod cache;
mod claim;
pub mod dns;
mod lists;
pub mod ranges;
pub mod signature;
pub mod summary;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::{watch, Semaphore};

use crate::crawlers::{CrawlerId, Registry, Trust};
use crate::sitemap::BaseUrl;
use crate::store::Store;
use crate::sync::lock;
use cache::{Bucket, Cache, Key};
pub use claim::{Claim, Decided, Method, Verdict, VerifiedBy};
use dns::Dns;
pub use dns::DnsOutcome;
pub use lists::{fetch_client, get_bounded, FetchError as ListFetchError};
use lists::{Lists, RangeAnswer};
use signature::{directory::DirectoryStatus, Signatures};
pub use signature::{Message, SignatureHeaders, Signed};

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

/// How often the published range lists are fetched again.
const RANGES_REFRESH: Duration = Duration::from_secs(24 * 60 * 60);
/// DNS outcomes kept at most (the oldest go first).
const CACHE_CAP: usize = 10_000;
/// How long a verified or forged outcome is kept at most (less when its DNS TTL says so).
const DECIDED_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a decided outcome is kept at least (a TTL of 0 would ask again at every request).
const DECIDED_TTL_FLOOR: Duration = Duration::from_secs(5 * 60);
/// How long a failed or timed-out lookup is kept before it is tried again.
const FAILED_TTL: Duration = Duration::from_secs(5 * 60);
/// Lookups in flight at most.
const IN_FLIGHT: usize = 16;
/// Lookups started per second at most.
const PER_SECOND: u32 = 50;
/// Claims waiting for their verdict at once, at most ([`Verifier::decide`]), each a few hundred
/// bytes: the request path's and the crawl log's together.
pub const PENDING_VERDICTS: usize = 4096;

/// The limits of the engine (the defaults are the service's; tests may lower them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// DNS outcomes kept at most.
    pub cache_cap: usize,
    /// Lookups in flight at most.
    pub in_flight: usize,
    /// Lookups started per second at most.
    pub per_second: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cache_cap: CACHE_CAP,
            in_flight: IN_FLIGHT,
            per_second: PER_SECOND,
        }
    }
}

/// Counts of the engine's work, for tests and debugging.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyStats {
    /// Addresses looked up in DNS (one lookup: a PTR query and its forward queries).
    pub lookups: u64,
    /// Verdicts answered `Unverified` at once because the lookup limits were reached.
    pub limited: u64,
    /// DNS outcomes cached now.
    pub cached: usize,
}

/// Tells true crawlers from forged ones. Shared as `Arc<Verifier>`.
pub struct Verifier {
    registry: Arc<Registry>,
    settings: VerifySettings,
    engine: Arc<Engine>,
    /// Per crawler, the index of its suffix set (`None`: no DNS method).
    dns_group: Vec<Option<u16>>,
    fetcher: Option<tokio::task::JoinHandle<()>>,
    /// Permits for the claims waiting in [`Verifier::decide`].
    waiting: Arc<Semaphore>,
    /// The registry's signers, their key directories and the replays seen.
    signatures: Arc<Signatures>,
    /// Per crawler, the requests each method verified ([`Verifier::tally`]).
    verified_by: Box<[[AtomicU64; 3]]>,
}

/// The parts shared with the lookups and the fetcher running in their own tasks.
struct Engine {
    lists: Lists,
    dns: Dns,
    /// Each suffix set, by its index.
    suffixes: Vec<Vec<String>>,
    cache: Mutex<Cache>,
    in_flight: Mutex<HashMap<Key, watch::Receiver<Option<DnsOutcome>>>>,
    permits: Arc<Semaphore>,
    bucket: Mutex<Bucket>,
    lookups: Counter,
    limited: Counter,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("settings", &self.settings)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Drop for Verifier {
    fn drop(&mut self) {
        if let Some(fetcher) = self.fetcher.take() {
            fetcher.abort();
        }
    }
}

impl Verifier {
    /// Loads the stored range lists, starts fetching them (at once, then daily) and returns.
    /// Never fails the start: a list that cannot be fetched is shown on the status page.
    /// `public`: the base URLs the sites are served at, for signatures covering `@target-uri`.
    pub async fn start(
        registry: Arc<Registry>,
        settings: VerifySettings,
        store: Option<Store>,
        public: &[BaseUrl],
    ) -> Arc<Self> {
        let mut verifier = Self::new(registry, settings, store, Limits::default(), public);
        if verifier.settings.on {
            verifier.engine.lists.load().await;
            let engine = verifier.engine.clone();
            verifier.fetcher = Some(tokio::spawn(async move {
                loop {
                    engine.lists.fetch_all().await;
                    tokio::time::sleep(RANGES_REFRESH).await;
                }
            }));
        }
        Arc::new(verifier)
    }

    /// A verifier that fetches nothing by itself: its stored lists are loaded, and
    /// [`Verifier::fetch_ranges`] fetches them. For tests and tools that want the fetches in
    /// their hands, and limits of their own. It knows no site: a signature covering
    /// `@target-uri` is unverified.
    pub async fn with_limits(
        registry: Arc<Registry>,
        settings: VerifySettings,
        store: Option<Store>,
        limits: Limits,
    ) -> Arc<Self> {
        let verifier = Self::new(registry, settings, store, limits, &[]);
        if verifier.settings.on {
            verifier.engine.lists.load().await;
        }
        Arc::new(verifier)
    }

    fn new(
        registry: Arc<Registry>,
        settings: VerifySettings,
        store: Option<Store>,
        limits: Limits,
        public: &[BaseUrl],
    ) -> Self {
        let mut urls: Vec<String> = Vec::new();
        let mut suffixes: Vec<Vec<String>> = Vec::new();
        let mut dns_group = Vec::with_capacity(registry.len());
        for info in registry.crawlers() {
            urls.extend(info.verify_ranges.iter().cloned());
            dns_group.push(match info.verify_dns.is_empty() {
                true => None,
                false => Some(match suffixes.iter().position(|s| *s == info.verify_dns) {
                    Some(at) => at as u16,
                    None => {
                        suffixes.push(info.verify_dns.clone());
                        (suffixes.len() - 1) as u16
                    }
                }),
            });
        }
        let engine = Engine {
            lists: Lists::new(urls, store),
            dns: Dns::new(settings.dns_server),
            suffixes,
            cache: Mutex::new(Cache::new(limits.cache_cap)),
            in_flight: Mutex::new(HashMap::new()),
            permits: Arc::new(Semaphore::new(limits.in_flight.max(1))),
            bucket: Mutex::new(Bucket::new(limits.per_second.max(1), Instant::now())),
            lookups: Counter::default(),
            limited: Counter::default(),
        };
        let signatures = Arc::new(Signatures::new(&registry, public));
        let verified_by = registry.ids().map(|_| Default::default()).collect();
        Self {
            registry,
            settings,
            engine: Arc::new(engine),
            dns_group,
            fetcher: None,
            waiting: Arc::new(Semaphore::new(PENDING_VERDICTS)),
            signatures,
            verified_by,
        }
    }

    /// Whether verification is on (`CRAWLER_VERIFY`).
    pub fn is_on(&self) -> bool {
        self.settings.on
    }

    /// The verdict known now for `addr` claiming `crawler`, without waiting: `Some` when it is
    /// decided (verification off, a crawler with no method, a published range, a cached
    /// lookup); `None` when [`Verifier::verdict`] must look it up.
    pub fn cached(&self, crawler: CrawlerId, addr: IpAddr) -> Option<Trust> {
        self.address_cached(crawler, addr).map(|v| v.trust)
    }

    /// The verdict for `addr` claiming `crawler`, looking it up when it is not cached. Bounded:
    /// a lookup times out, lookups beyond the rate limit answer `Unverified` at once.
    pub async fn verdict(&self, crawler: CrawlerId, addr: IpAddr) -> Trust {
        self.address_verdict(crawler, addr).await.trust
    }

    /// [`Verifier::cached`], with the method that proved it.
    fn address_cached(&self, crawler: CrawlerId, addr: IpAddr) -> Option<Verdict> {
        let addr = addr.to_canonical();
        let (ranges, group) = match self.methods(crawler, addr) {
            Ok(decided) => return Some(decided),
            Err(pending) => pending,
        };
        let outcome = lock(&self.engine.cache).get(&(group, addr), Instant::now())?;
        Some(combine(outcome, ranges))
    }

    /// [`Verifier::verdict`], with the method that proved it.
    async fn address_verdict(&self, crawler: CrawlerId, addr: IpAddr) -> Verdict {
        let addr = addr.to_canonical();
        let (ranges, group) = match self.methods(crawler, addr) {
            Ok(decided) => return decided,
            Err(pending) => pending,
        };
        match self.engine.clone().lookup((group, addr)).await {
            Some(outcome) => combine(outcome, ranges),
            None => Verdict::UNVERIFIED,
        }
    }

    /// The published range lists and when each was fetched.
    pub fn range_lists(&self) -> Vec<RangeList> {
        self.engine.lists.states()
    }

    /// Fetches every published range list now (the service does so at start and daily).
    pub async fn fetch_ranges(&self) {
        self.engine.lists.fetch_all().await;
    }

    /// Counts of lookups and of the cache.
    pub fn stats(&self) -> VerifyStats {
        VerifyStats {
            lookups: self.engine.lookups.get(),
            limited: self.engine.limited.get(),
            cached: lock(&self.engine.cache).len(),
        }
    }

    /// The verdict when the ranges or the lack of a method decide it (`Ok`), else what the
    /// ranges said and the suffix set to look the address up under (`Err`).
    fn methods(&self, crawler: CrawlerId, addr: IpAddr) -> Result<Verdict, (RangeAnswer, u16)> {
        let info = self.registry.get(crawler);
        if !self.settings.on || !info.is_verifiable() {
            return Ok(Verdict::UNVERIFIED);
        }
        let ranges = self.engine.lists.check(&info.verify_ranges, addr);
        if ranges == RangeAnswer::Inside {
            return Ok(Verdict::by(Method::Ranges));
        }
        match self.dns_group.get(crawler.index()).copied().flatten() {
            Some(group) => Err((ranges, group)),
            None if ranges == RangeAnswer::Outside => Ok(Verdict::FORGED),
            None => Ok(Verdict::UNVERIFIED),
        }
    }
}

impl Engine {
    /// The DNS outcome for `key`: cached, awaited from a lookup in flight, or looked up now if
    /// the limits allow (`None`: they do not).
    async fn lookup(self: Arc<Self>, key: Key) -> Option<DnsOutcome> {
        let mut waiting = {
            let mut in_flight = lock(&self.in_flight);
            if let Some(outcome) = lock(&self.cache).get(&key, Instant::now()) {
                return Some(outcome);
            }
            match in_flight.get(&key) {
                Some(waiting) => waiting.clone(),
                None => {
                    let permit = self.admit()?;
                    let (done, waiting) = watch::channel(None);
                    in_flight.insert(key, waiting.clone());
                    tokio::spawn(self.clone().run(key, done, permit));
                    waiting
                }
            }
        };
        let outcome = waiting.wait_for(Option::is_some).await.ok()?;
        *outcome
    }

    /// A permit to look up, if fewer than the limit are in flight and the rate allows.
    fn admit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let permit = self.permits.clone().try_acquire_owned().ok();
        let permit = permit.filter(|_| lock(&self.bucket).take(Instant::now()));
        if permit.is_none() {
            self.limited.inc();
        }
        permit
    }

    async fn run(
        self: Arc<Self>,
        key: Key,
        done: watch::Sender<Option<DnsOutcome>>,
        _permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        self.lookups.inc();
        let (group, addr) = key;
        let suffixes = &self.suffixes[usize::from(group)];
        let (outcome, dns_ttl) = self.dns.check(addr, suffixes).await;
        let ttl = match outcome {
            DnsOutcome::Failed => FAILED_TTL,
            DnsOutcome::Confirmed | DnsOutcome::Denied => dns_ttl
                .map_or(DECIDED_TTL, |ttl| Duration::from_secs(u64::from(ttl)))
                .clamp(DECIDED_TTL_FLOOR, DECIDED_TTL),
        };
        lock(&self.cache).insert(key, outcome, ttl, Instant::now());
        lock(&self.in_flight).remove(&key);
        done.send_replace(Some(outcome));
    }
}

/// The verdict from the DNS outcome and what the ranges said (not inside: that decided already).
fn combine(outcome: DnsOutcome, ranges: RangeAnswer) -> Verdict {
    match (outcome, ranges) {
        (DnsOutcome::Confirmed, _) => Verdict::by(Method::Dns),
        // Every method says no: the lists are loaded and lack it, or there are none.
        (DnsOutcome::Denied, RangeAnswer::Outside | RangeAnswer::NoLists) => Verdict::FORGED,
        // A list never fetched says nothing.
        (DnsOutcome::Denied, RangeAnswer::Unknown) => Verdict::UNVERIFIED,
        (DnsOutcome::Denied, RangeAnswer::Inside) => Verdict::by(Method::Ranges),
        (DnsOutcome::Failed, _) => Verdict::UNVERIFIED,
    }
}
