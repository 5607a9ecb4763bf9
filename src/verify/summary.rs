//! What crawler verification does, as the status page shows it: whether it is on, the
//! operators' published range lists and the signer origins' key directories (Web Bot Auth).

use serde::Serialize;

use super::Verifier;
use crate::summary::time;

/// Whether verification is on, its range lists and its key directories.
#[derive(Debug, Serialize)]
pub struct VerifierSummary {
    /// `CRAWLER_VERIFY`.
    pub on: bool,
    /// The operators' published IP range lists, when each was fetched, and the last error.
    pub range_lists: Vec<RangeListStatus>,
    /// The key directories of the registry's Web Bot Auth signers: keys in use, when fetched,
    /// the last error.
    pub signature_directories: Vec<SignatureDirectoryStatus>,
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

/// One signer's key directory, for people.
#[derive(Debug, Serialize)]
pub struct SignatureDirectoryStatus {
    /// The origin of its URL.
    pub origin: String,
    /// The URL it is fetched from, which names the signers verified with it.
    pub url: String,
    /// Its Ed25519 keys in use.
    pub keys: usize,
    /// When the keys in use were fetched (RFC 3339); `None`: never (fetched at a signed
    /// request's first check).
    pub fetched_at: Option<String>,
    pub error: Option<String>,
}

impl Verifier {
    /// What verification does now, for the status page.
    pub fn summary(&self) -> VerifierSummary {
        let range_lists = self
            .range_lists()
            .into_iter()
            .map(|list| RangeListStatus {
                url: list.url,
                fetched_at: list.fetched_at.map(time),
                prefixes: list.prefixes,
                error: list.error,
            })
            .collect();
        let signature_directories = self
            .signature_directories()
            .into_iter()
            .map(|directory| SignatureDirectoryStatus {
                origin: directory.origin,
                url: directory.url,
                keys: directory.keys,
                fetched_at: directory.fetched_at.map(time),
                error: directory.error,
            })
            .collect();
        VerifierSummary {
            on: self.is_on(),
            range_lists,
            signature_directories,
        }
    }
}
