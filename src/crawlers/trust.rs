//! What a request's client address proves of the crawler its User-Agent claims: the verdict the
//! ledger, the crawl log and the metrics count requests under.

/// What a request's client address says of the crawler its User-Agent claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Trust {
    /// A method says yes: the address is in a published range, or its PTR name is under an
    /// allowed suffix and resolves back to it.
    Verified,
    /// No method, or a lookup timed out or failed.
    Unverified,
    /// Every method the crawler has says no (a missing PTR is a no).
    Forged,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Verified => "verified",
            Trust::Unverified => "unverified",
            Trust::Forged => "forged",
        }
    }
}
