//! A whole claim — the crawler a request names (by its signature's origin, else its
//! User-Agent), its client address and its signature — judged by every method it offers: verified
//! when either the signature or the address says so, forged when every method says no, else
//! unverified. Also the tally of which method verified each crawler's requests, for the status
//! page.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Serialize;

use super::signature::{Message, Seen, SignatureHeaders, Signed};
use super::{DirectoryStatus, Verifier};
use crate::crawlers::{CrawlerId, Trust};

/// The method that proved a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Its Web Bot Auth signature checked with its signer's key.
    Signature,
    /// Its address is in a range list the operator publishes.
    Ranges,
    /// Its address's PTR name is under an allowed suffix and resolves back to it.
    Dns,
}

/// A verdict, and the method that proved it when it is `verified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub trust: Trust,
    pub by: Option<Method>,
}

impl Verdict {
    pub const UNVERIFIED: Verdict = Verdict {
        trust: Trust::Unverified,
        by: None,
    };
    pub const FORGED: Verdict = Verdict {
        trust: Trust::Forged,
        by: None,
    };

    /// Verified by `method`.
    pub fn by(method: Method) -> Verdict {
        Verdict {
            trust: Trust::Verified,
            by: Some(method),
        }
    }
}

/// What one request (or access-log line) offers as proof of the crawler it claims to be.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The crawler its signature's origin names, else its User-Agent.
    pub crawler: CrawlerId,
    /// Its client address.
    pub addr: IpAddr,
    /// Its Web Bot Auth signature, when it names a registry signer.
    pub signed: Option<Signed>,
    /// When it was made (unix seconds): the time its signature is checked at.
    pub at: i64,
}

/// How [`Verifier::decide`] gave a claim its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Known at once (verification off, no method, a cached answer): given before returning.
    Now,
    /// Looked up in a task of its own: given when it ends.
    Later,
    /// Too many claims already wait: `unverified` given at once, for the caller to count.
    Busy,
}

/// How many of a crawler's requests each method verified.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerifiedBy {
    pub signature: u64,
    pub ranges: u64,
    pub reverse_dns: u64,
}

impl Verifier {
    /// The Web Bot Auth signatures of a request to sitemapd, when its headers carry one that
    /// names a registry signer (`None` too with verification off). Costs nothing without
    /// `Signature-Input`: the caller passes headers only when it is there.
    pub fn signed_request(
        &self,
        headers: SignatureHeaders<'_>,
        message: &Message<'_>,
    ) -> Option<Signed> {
        self.read_signed(headers, message, Seen::Request)
    }

    /// [`Verifier::signed_request`] for a request as a line of the web server's access log
    /// kept it (the crawl log): its replays are counted apart from sitemapd's own requests, which
    /// the same fetch may also be.
    pub fn signed(&self, headers: SignatureHeaders<'_>, message: &Message<'_>) -> Option<Signed> {
        self.read_signed(headers, message, Seen::Line)
    }

    fn read_signed(
        &self,
        headers: SignatureHeaders<'_>,
        message: &Message<'_>,
        seen: Seen,
    ) -> Option<Signed> {
        if !self.settings.on {
            return None;
        }
        self.signatures.read(headers, message, seen)
    }

    /// The verdict on `claim` known now, without fetching or looking anything up.
    pub fn claim_cached(&self, claim: &Claim) -> Option<Verdict> {
        if !self.settings.on {
            return Some(Verdict::UNVERIFIED);
        }
        let signature = match &claim.signed {
            Some(signed) => Some(self.signatures.cached(signed, claim.addr, claim.at)?),
            None => None,
        };
        if signature == Some(Trust::Verified) {
            return Some(Verdict::by(Method::Signature));
        }
        let address = match self.address_applies(claim) {
            true => Some(self.address_cached(claim.crawler, claim.addr)?),
            false => None,
        };
        Some(either(signature, address))
    }

    /// The verdict on `claim`, fetching its signer's keys and looking its address up as needed.
    pub async fn claim_verdict(&self, claim: &Claim) -> Verdict {
        if !self.settings.on {
            return Verdict::UNVERIFIED;
        }
        let signature = match &claim.signed {
            Some(signed) => Some(self.signatures.verdict(signed, claim.addr, claim.at).await),
            None => None,
        };
        if signature == Some(Trust::Verified) {
            return Verdict::by(Method::Signature);
        }
        let address = match self.address_applies(claim) {
            true => Some(self.address_verdict(claim.crawler, claim.addr).await),
            false => None,
        };
        either(signature, address)
    }

    /// Calls `then` with the verdict on `claim`: at once when it is known, else from a task of
    /// its own once [`Verifier::claim_verdict`] gives it, so the caller never waits; `unverified`
    /// at once when too many claims already wait ([`super::PENDING_VERDICTS`]). The one way a
    /// request or an access-log line gets its verdict: the answer says which of the three it was.
    pub fn decide(
        self: &Arc<Self>,
        claim: Claim,
        then: impl FnOnce(Verdict) + Send + 'static,
    ) -> Decided {
        if let Some(verdict) = self.claim_cached(&claim) {
            then(verdict);
            return Decided::Now;
        }
        let Ok(permit) = self.waiting.clone().try_acquire_owned() else {
            then(Verdict::UNVERIFIED);
            return Decided::Busy;
        };
        let verifier = self.clone();
        tokio::spawn(async move {
            then(verifier.claim_verdict(&claim).await);
            drop(permit);
        });
        Decided::Later
    }

    /// Counts a request of `crawler` verified by `verdict`'s method (the ledger's requests: the
    /// status page says how each crawler was verified).
    pub fn tally(&self, crawler: CrawlerId, verdict: Verdict) {
        let Some(method) = verdict.by else { return };
        if let Some(counts) = self.verified_by.get(crawler.index()) {
            counts[method as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How many of `crawler`'s requests each method verified.
    pub fn verified_by(&self, crawler: CrawlerId) -> VerifiedBy {
        let Some(counts) = self.verified_by.get(crawler.index()) else {
            return VerifiedBy::default();
        };
        let count = |method: Method| counts[method as usize].load(Ordering::Relaxed);
        VerifiedBy {
            signature: count(Method::Signature),
            ranges: count(Method::Ranges),
            reverse_dns: count(Method::Dns),
        }
    }

    /// The signer origins' key directories: keys in use, when fetched, the last error.
    pub fn signature_directories(&self) -> Vec<DirectoryStatus> {
        self.signatures.directories()
    }

    /// Key directory fetches started since the start.
    pub fn directory_fetches(&self) -> u64 {
        self.signatures.directory_fetches()
    }

    /// Whether the address is checked too: always for an unsigned claim (as before signatures),
    /// and for a signed one when the crawler publishes ranges or reverse-DNS names.
    fn address_applies(&self, claim: &Claim) -> bool {
        let info = self.registry.get(claim.crawler);
        claim.signed.is_none() || !info.verify_ranges.is_empty() || !info.verify_dns.is_empty()
    }
}

/// Verified when either method says so (the caller returned already for a verified
/// signature), forged when every method the claim offers says no, else unverified.
fn either(signature: Option<Trust>, address: Option<Verdict>) -> Verdict {
    if let Some(verified) = address.filter(|a| a.trust == Trust::Verified) {
        return verified;
    }
    let offered = [signature, address.map(|a| a.trust)];
    let mut offered = offered.into_iter().flatten().peekable();
    let any = offered.peek().is_some();
    match any && offered.all(|trust| trust == Trust::Forged) {
        true => Verdict::FORGED,
        false => Verdict::UNVERIFIED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_method_verifies_and_only_all_of_them_forge() {
        let ranges = Verdict::by(Method::Ranges);
        assert_eq!(either(Some(Trust::Forged), Some(ranges)), ranges);
        assert_eq!(
            either(Some(Trust::Forged), Some(Verdict::FORGED)),
            Verdict::FORGED
        );
        assert_eq!(either(Some(Trust::Forged), None), Verdict::FORGED);
        assert_eq!(
            either(Some(Trust::Forged), Some(Verdict::UNVERIFIED)),
            Verdict::UNVERIFIED
        );
        assert_eq!(
            either(Some(Trust::Unverified), Some(Verdict::FORGED)),
            Verdict::UNVERIFIED
        );
        assert_eq!(either(None, None), Verdict::UNVERIFIED);
    }
}
