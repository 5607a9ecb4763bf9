//! The ledger's metrics: `sitemapd_crawler_requests_total{crawler,status,verified}`,
//! `sitemapd_crawler_files_behind{crawler}` and `sitemapd_crawler_verdicts_dropped_total`, with
//! their label types.

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry as MetricsRegistry;

use crate::crawlers::Trust;

/// A crawler's name as a metrics label value: shared, so counting a request copies a pointer.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct CrawlerName(Arc<str>);

impl CrawlerName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for CrawlerName {
    fn from(name: &str) -> Self {
        Self(Arc::from(name))
    }
}

impl EncodeLabelValue for CrawlerName {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

/// Labels of `sitemapd_crawler_requests_total`: who claimed to ask, the status sent, and what
/// verification found.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CrawlerStatusLabels {
    /// The registry crawler's name, or [`crate::crawlers::OTHER`].
    pub crawler: CrawlerName,
    /// The HTTP status code of the response (a label value like `200`).
    pub status: u16,
    /// `true` (verified), `false` (unverified) or `forged`.
    pub verified: Verified,
}

/// [`Trust`] as the `verified` label writes it: `true`, `false` or `forged`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Verified(pub Trust);

impl EncodeLabelValue for Verified {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        let value = match self.0 {
            Trust::Verified => "true",
            Trust::Unverified => "false",
            Trust::Forged => "forged",
        };
        EncodeLabelValue::encode(&value, encoder)
    }
}

/// Labels of `sitemapd_crawler_files_behind`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CrawlerLabels {
    /// The registry crawler's name, or [`crate::crawlers::OTHER`].
    pub crawler: CrawlerName,
}

/// The ledger's metrics; [`CrawlerMetrics::register`] adds them to the service's registry, and a
/// clone goes to [`super::Ledger::new`] (clones share their values).
#[derive(Clone, Debug, Default)]
pub struct CrawlerMetrics {
    /// Requests by crawler and status, every status (a 404 storm from one bot shows here).
    pub requests: Family<CrawlerStatusLabels, Counter>,
    /// Files each crawler fetched that changed since; set by [`super::Ledger::refresh_files_behind`],
    /// since only the caller knows the files' change times.
    pub files_behind: Family<CrawlerLabels, Gauge>,
    /// Requests counted as unverified without a check because too many claims already waited.
    pub verdicts_dropped: Counter,
}

impl CrawlerMetrics {
    /// Adds these metrics to `registry` (names get the registry's prefix, and `_total` for the
    /// counter): `crawler_requests` and `crawler_files_behind`.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "crawler_requests",
            "Requests by the crawler their User-Agent claims, response status and verification verdict",
            self.requests.clone(),
        );
        registry.register(
            "crawler_verdicts_dropped",
            "Crawler requests counted unverified unchecked: too many claims already waited for a verdict",
            self.verdicts_dropped.clone(),
        );
        registry.register(
            "crawler_files_behind",
            "Files a crawler fetched that changed since it last fetched them",
            self.files_behind.clone(),
        );
    }
}
