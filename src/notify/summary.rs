//! What the change notifications delivered since the process started, as the status page
//! shows it.

use serde::Serialize;

use super::{NotifyMetrics, TargetLabels};
use crate::summary::time;

/// What IndexNow and the ping webhook delivered since the process started.
#[derive(Debug, Serialize)]
pub struct Deliveries {
    pub indexnow_submitted_urls: u64,
    pub indexnow_dropped_urls: u64,
    pub indexnow_failed_requests: u64,
    pub indexnow_pending_urls: i64,
    /// When the endpoint last accepted a request; `None`: not since the start.
    pub indexnow_last_success: Option<String>,
    pub pings: u64,
    pub ping_failed_requests: u64,
    pub pings_pending: i64,
    pub ping_last_success: Option<String>,
}

/// The deliveries `metrics` counted.
pub fn deliveries(metrics: &NotifyMetrics) -> Deliveries {
    let labels = |target: &'static str| TargetLabels { target };
    let failed = |target| metrics.failed_requests.get_or_create(&labels(target)).get();
    let pending = |target| metrics.pending.get_or_create(&labels(target)).get();
    let last = |target| {
        Some(metrics.last_success.get_or_create(&labels(target)).get())
            .filter(|t| *t > 0)
            .map(time)
    };
    Deliveries {
        indexnow_submitted_urls: metrics.submitted_urls.get(),
        indexnow_dropped_urls: metrics.dropped_urls.get(),
        indexnow_failed_requests: failed("indexnow"),
        indexnow_pending_urls: pending("indexnow"),
        indexnow_last_success: last("indexnow"),
        pings: metrics.pings.get(),
        ping_failed_requests: failed("ping"),
        pings_pending: pending("ping"),
        ping_last_success: last("ping"),
    }
}
