//! Who the crawlers are, and what a request's client address proves of one: pure rules, the
//! ground floor every crawler feature stands on.
//!
//! - [`registry`]: the crawler registry (data/crawlers.toml, extended by `CRAWLERS_FILE`):
//!   names, robots.txt tokens, purposes, verification methods; parsed once, by the
//!   configuration ([`crate::config::Config::crawlers`]), and shared as `Arc<Registry>`.
//! - [`user_agent`]: the classification rule, which registry crawler a User-Agent names.
//! - [`signer`]: what names a Web Bot Auth signer's key directory (origin or URL).
//! - [`Trust`]: the verdict a request is counted under (verified, unverified, forged).
//!
//! Nothing here locks, counts or does I/O beyond reading the registry file: what crawlers did
//! is the [`crate::ledger`]'s (requests to sitemapd) and the [`crate::crawllog`]'s (the whole
//! site).

pub mod registry;
pub mod signer;
mod trust;
pub mod user_agent;

pub use registry::{CrawlerId, CrawlerInfo, Dated, Purpose, Registry, RegistryError};
pub use trust::Trust;

/// The name requests of no registry crawler are shown and counted under.
pub const OTHER: &str = "other";
