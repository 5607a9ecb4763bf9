//! What every feature's summary for the status page shares: how a time is written. Each
//! feature makes its own summary (`robots::summary`, `crawllog::report`, `ledger::summary`,
//! `verify::summary`, `notify::summary`); the status page ([`crate::admin`]) only puts them
//! together.

use chrono::{DateTime, Utc};

/// A unix time as RFC 3339 (empty when out of range).
pub fn time(unix: i64) -> String {
    DateTime::<Utc>::from_timestamp(unix, 0)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default()
}
