//! Signed requests (Web Bot Auth, draft-ietf-webbotauth-httpsig-protocol): a request whose
//! `Signature-Input` has a signature tagged `web-bot-auth`, and whose `Signature-Agent` names an
//! origin of a registry entry's `signature_agent`, is that crawler; its RFC 9421 signature over
//! the components it covers, checked with the key of that origin's directory whose RFC 7638
//! thumbprint is its `keyid`, says whether it is `verified` or `forged`.
//!
//! Reading a request ([`Signatures::read`]) is cheap and needs no I/O: a request without
//! `Signature-Input` is never parsed at all. The keys may have to be fetched
//! ([`directory`]): [`Signatures::cached`] answers when they need not be, and
//! [`Signatures::verdict`] waits for them.

pub mod base;
pub mod directory;
pub mod input;
pub mod keys;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::crawlers::{CrawlerId, Registry, Trust};
pub use base::{BaseError, Message};
use directory::{Directories, DirectoryStatus, Lookup};
pub use input::SignatureHeaders;
use keys::Keys;

/// How far in the future `created` may be (clocks differ).
pub const CLOCK_SKEW: i64 = 60;
/// The longest a signature may be valid: `expires` at most this long after `created`.
pub const LONGEST_VALIDITY: i64 = 24 * 60 * 60;

/// A request's Web Bot Auth signature, read and ready to check.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The registry crawler whose `signature_agent` the request names.
    pub crawler: CrawlerId,
    origin: String,
    check: Check,
}

#[derive(Debug, Clone)]
enum Check {
    /// What the check needs besides the time and the key.
    Ready(Ready),
    /// A signature that does not cover `@authority` and `signature-agent` proves nothing of
    /// this request: forged.
    Refused,
    /// The request (or its log line) lacks a component the signature covers: unverified.
    Unverifiable,
}

#[derive(Debug, Clone)]
struct Ready {
    base: String,
    keyid: Option<String>,
    created: Option<i64>,
    expires: Option<i64>,
    alg: Option<String>,
    bytes: Vec<u8>,
}

/// The registry's signer origins and their key directories.
pub struct Signatures {
    signers: HashMap<String, CrawlerId>,
    directories: Arc<Directories>,
}

impl Signatures {
    /// The signers of `registry` (each origin names the first crawler that lists it).
    pub fn new(registry: &Registry) -> Self {
        let mut signers = HashMap::new();
        for id in registry.ids() {
            for origin in &registry.get(id).signature_agent {
                signers.entry(origin.clone()).or_insert(id);
            }
        }
        let directories = Arc::new(Directories::new(signers.keys().cloned()));
        Self {
            signers,
            directories,
        }
    }

    /// The signature `headers` carry for `message`, when it is tagged `web-bot-auth` and names a
    /// registry signer's origin; `None` otherwise (the request is judged by its User-Agent, and
    /// nothing is fetched for the origin it names).
    pub fn read(&self, headers: SignatureHeaders<'_>, message: &Message<'_>) -> Option<Signed> {
        if self.signers.is_empty() {
            return None;
        }
        let signature = input::read(headers).ok()?;
        let crawler = *self.signers.get(&signature.origin)?;
        let covers = |name: &str| signature.components.iter().any(|c| c.name == name);
        let check = if !covers("@authority") || !covers("signature-agent") {
            Check::Refused
        } else {
            match base::signature_base(&signature, message) {
                Ok(base) => Check::Ready(Ready {
                    base,
                    keyid: signature.keyid,
                    created: signature.created,
                    expires: signature.expires,
                    alg: signature.alg,
                    bytes: signature.bytes,
                }),
                Err(_) => Check::Unverifiable,
            }
        };
        Some(Signed {
            crawler,
            origin: signature.origin,
            check,
        })
    }

    /// The verdict on `signed` at `now` (unix seconds) when no directory must be fetched.
    pub fn cached(&self, signed: &Signed, now: i64) -> Option<Trust> {
        let ready = match self.decided(signed, now) {
            Ok(decided) => return Some(decided),
            Err(ready) => ready,
        };
        match self.directories.lookup(&signed.origin, Instant::now()) {
            Lookup::Keys(keys) => Some(judge(ready, &keys)),
            Lookup::Unreachable => Some(Trust::Unverified),
            Lookup::Fetch => None,
        }
    }

    /// The verdict on `signed` at `now`, fetching its origin's directory when due.
    pub async fn verdict(&self, signed: &Signed, now: i64) -> Trust {
        let ready = match self.decided(signed, now) {
            Ok(decided) => return decided,
            Err(ready) => ready,
        };
        match self.directories.keys(&signed.origin).await {
            Lookup::Keys(keys) => judge(ready, &keys),
            Lookup::Unreachable | Lookup::Fetch => Trust::Unverified,
        }
    }

    /// The directories fetched so far, for tests and the status page.
    pub fn directory_fetches(&self) -> u64 {
        self.directories.fetches()
    }

    /// Each signer origin's directory.
    pub fn directories(&self) -> Vec<DirectoryStatus> {
        self.directories.states()
    }

    /// The verdict when the signature alone decides it (`Ok`), else what the key check needs.
    fn decided<'a>(&self, signed: &'a Signed, now: i64) -> Result<Trust, &'a Ready> {
        let ready = match &signed.check {
            Check::Ready(ready) => ready,
            Check::Refused => return Ok(Trust::Forged),
            Check::Unverifiable => return Ok(Trust::Unverified),
        };
        let ed25519 = ready.alg.as_deref().is_none_or(|alg| alg == "ed25519");
        if !ed25519 || !in_time(ready.created, ready.expires, now) || ready.keyid.is_none() {
            return Ok(Trust::Forged);
        }
        Err(ready)
    }
}

/// `created` not more than [`CLOCK_SKEW`] ahead of `now`, `expires` not passed, and at most
/// [`LONGEST_VALIDITY`] after `created`.
fn in_time(created: Option<i64>, expires: Option<i64>, now: i64) -> bool {
    let (Some(created), Some(expires)) = (created, expires) else {
        return false;
    };
    created <= now.saturating_add(CLOCK_SKEW)
        && expires >= now
        && expires >= created
        && expires - created <= LONGEST_VALIDITY
}

/// Verified when the directory has the signature's key and the signature checks with it.
fn judge(ready: &Ready, keys: &Keys) -> Trust {
    let key = ready.keyid.as_deref().and_then(|keyid| keys.get(keyid));
    match key {
        Some(key) if keys::ed25519_checks(key, ready.base.as_bytes(), &ready.bytes) => {
            Trust::Verified
        }
        _ => Trust::Forged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_in_time_within_the_skew_and_a_day() {
        let now = 1_800_000_000;
        assert!(in_time(Some(now - 10), Some(now + 60), now));
        assert!(in_time(Some(now + 60), Some(now + 120), now));
        assert!(!in_time(Some(now + 61), Some(now + 120), now));
        assert!(!in_time(Some(now - 120), Some(now - 1), now));
        assert!(!in_time(Some(now), Some(now + LONGEST_VALIDITY + 1), now));
        assert!(!in_time(None, Some(now + 60), now));
        assert!(!in_time(Some(now), None, now));
    }

    /// A request signed by Cloudflare's `web-bot-auth` npm package (0.1.3, Node 20) with the
    /// RFC 9421 test key: the base rebuilt here is the one it signed.
    #[test]
    fn the_base_is_the_one_an_independent_signer_signed() {
        use base64::Engine as _;
        let agent = r#"sig1="https://chatgpt.com""#;
        let input = r#"sig1=("@authority" "signature-agent");created=1795851708;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1795851768;nonce="lia4wwawMJhG3qLfSmVxugmEG8a0QB+y/kVLLYgpxnzegMSkuwEwVdUyCd9gp8kIy7S2G/OjMsFXcbMIfFjwYg==";tag="web-bot-auth""#;
        let signature = "sig1=:BNhvGkfy4+xm2gqItklyzaQaq3qiidmj/x1mibZVVTgQnEu22VALM+VoOPwCZbtptEt/Tx6TUWLzYULgQfOkDg==:";
        let read = input::read(SignatureHeaders {
            agent: Some(agent),
            input,
            signature: Some(signature),
        })
        .unwrap();
        let field = |name: &str| (name == "signature-agent").then(|| agent.to_string());
        let message = Message {
            method: "GET",
            authority: "example.com:8080",
            target: "/sitemap.xml",
            field: &field,
        };
        let base = base::signature_base(&read, &message).unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(keys::RFC9421_TEST_KEY_X)
            .unwrap();
        let key: [u8; 32] = x.try_into().unwrap();
        assert!(
            keys::ed25519_checks(&key, base.as_bytes(), &read.bytes),
            "{base}"
        );
        assert_eq!(
            read.keyid.as_deref(),
            Some(keys::thumbprint(keys::RFC9421_TEST_KEY_X).as_str())
        );
        let other = Message {
            authority: "other.example:8080",
            ..message
        };
        let base = base::signature_base(&read, &other).unwrap();
        assert!(!keys::ed25519_checks(&key, base.as_bytes(), &read.bytes));
    }
}
