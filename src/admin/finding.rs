//! What the status page's parts share: a finding for a site owner, and how a time is written.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Something the audit would have a site owner know.
#[derive(Debug, Serialize)]
pub struct Finding {
    /// `error` (engines distrust it; `check` exits 1) or `warning`.
    pub level: &'static str,
    pub message: String,
}

/// A unix time as RFC 3339 (empty when out of range).
pub(super) fn time(unix: i64) -> String {
    DateTime::<Utc>::from_timestamp(unix, 0)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default()
}
