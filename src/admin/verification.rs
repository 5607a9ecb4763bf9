//! What the status page says of crawler verification: the verifier's own summary
//! ([`Verifier::summary`](crate::verify::Verifier::summary)), and a finding for each search
//! crawler whose name forged requests claimed.

use serde::Serialize;

use super::finding::Finding;
pub use crate::verify::summary::{RangeListStatus, SignatureDirectoryStatus};
use crate::verify::Verifier;

/// What crawler verification does and found.
#[derive(Debug, Serialize)]
pub struct Verification {
    /// `CRAWLER_VERIFY`.
    pub on: bool,
    /// The operators' published IP range lists, when each was fetched, and the last error.
    pub range_lists: Vec<RangeListStatus>,
    /// The key directories of the registry's Web Bot Auth signers: keys in use, when fetched,
    /// the last error.
    pub signature_directories: Vec<SignatureDirectoryStatus>,
    /// Forged requests claiming a search crawler, one finding per crawler.
    pub findings: Vec<Finding>,
}

/// The verifier's summary with `findings` (the status page's, of crawlers whose names forged
/// requests claimed).
pub fn verification(verifier: &Verifier, findings: Vec<Finding>) -> Verification {
    let summary = verifier.summary();
    Verification {
        on: summary.on,
        range_lists: summary.range_lists,
        signature_directories: summary.signature_directories,
        findings,
    }
}
