//! What the status page says of crawler verification: whether it is on, the operators'
//! published range lists, the signer origins' key directories (Web Bot Auth), and a finding for
//! each search crawler whose name forged requests claimed.

use serde::Serialize;

use super::finding::{time, Finding};
use crate::state::App;

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

/// One published range list, for people.
#[derive(Debug, Serialize)]
pub struct RangeListStatus {
    pub url: String,
    /// When the list in use was fetched (RFC 3339); `None`: never.
    pub fetched_at: Option<String>,
    pub prefixes: usize,
    pub error: Option<String>,
}

/// One signer origin's key directory, for people.
#[derive(Debug, Serialize)]
pub struct SignatureDirectoryStatus {
    pub origin: String,
    /// Its Ed25519 keys in use.
    pub keys: usize,
    /// When the keys in use were fetched (RFC 3339); `None`: never (fetched at a signed
    /// request's first check).
    pub fetched_at: Option<String>,
    pub error: Option<String>,
}

/// Whether verification is on, its range lists and key directories, with `findings` (the
/// status page's, of crawlers whose names forged requests claimed).
pub fn verification(app: &App, findings: Vec<Finding>) -> Verification {
    let verifier = &app.verifier;
    let range_lists = verifier
        .range_lists()
        .into_iter()
        .map(|list| RangeListStatus {
            url: list.url,
            fetched_at: list.fetched_at.map(time),
            prefixes: list.prefixes,
            error: list.error,
        })
        .collect();
    let signature_directories = verifier
        .signature_directories()
        .into_iter()
        .map(|directory| SignatureDirectoryStatus {
            origin: directory.origin,
            keys: directory.keys,
            fetched_at: directory.fetched_at.map(time),
            error: directory.error,
        })
        .collect();
    Verification {
        on: verifier.is_on(),
        range_lists,
        signature_directories,
        findings,
    }
}
