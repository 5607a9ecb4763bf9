//! What the status page's parts share: a finding for a site owner, and how a time is written.

use serde::Serialize;

/// Something the audit would have a site owner know.
#[derive(Debug, Serialize)]
pub struct Finding {
    /// `error` (engines distrust it; `check` exits 1) or `warning`.
    pub level: &'static str,
    pub message: String,
}

pub(super) use crate::summary::time;
