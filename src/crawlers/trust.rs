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

    /// Whether a fetch of this trust counts as the claimed crawler's own (files behind,
    /// coverage, recrawl, freshness): a verified one always; an unverified one only when
    /// addresses are not checked (`verifying` off); a forged one never.
    pub fn counts_as_own(self, verifying: bool) -> bool {
        match self {
            Trust::Verified => true,
            Trust::Unverified => !verifying,
            Trust::Forged => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unverified_claim_counts_only_when_nothing_is_checked() {
        assert!(Trust::Verified.counts_as_own(true));
        assert!(!Trust::Unverified.counts_as_own(true));
        assert!(!Trust::Forged.counts_as_own(true));
        assert!(Trust::Unverified.counts_as_own(false));
        assert!(!Trust::Forged.counts_as_own(false));
    }
}
