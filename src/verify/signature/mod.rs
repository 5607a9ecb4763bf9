//! Signed requests (Web Bot Auth, draft-ietf-webbotauth-httpsig-protocol): a request whose
//! `Signature-Input` has signatures tagged `web-bot-auth`, and whose `Signature-Agent` names the
//! key directory of a registry entry's `signature_agent` (an origin, its well-known URL or any
//! URL of a JWKS: [`crate::crawlers::signer`]), is that crawler; each such signature is checked
//! (its RFC 9421 signature over the components it covers, with the key of that directory whose
//! RFC 7638 thumbprint is its `keyid`), and the request is `verified` when one verifies.
//!
//! Reading a request ([`Signatures::read`]) is cheap and needs no I/O: a request without
//! `Signature-Input` is never parsed at all. The keys may have to be fetched
//! ([`directory`]): [`Signatures::cached`] answers when they need not be, and
//! [`Signatures::verdict`] waits for them. A verified signature counted from one client address
//! is not counted again from another ([`replays`]).

pub mod base;
pub mod directory;
pub mod input;
pub mod keys;
pub mod replays;
mod resolver;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::crawlers::{CrawlerId, Registry, Trust};
use crate::sitemap::BaseUrl;
use crate::sync::lock;
pub use base::{BaseError, Message};
use directory::{Directories, DirectoryStatus, Lookup};
pub use input::SignatureHeaders;
use keys::Keys;
use replays::{replay_key, ReplayKey, Replays};

/// How far in the future `created` may be (clocks differ).
pub const CLOCK_SKEW: i64 = 60;
/// The longest a signature may be valid: `expires` at most this long after `created`.
pub const LONGEST_VALIDITY: i64 = 24 * 60 * 60;

/// Where a signed request was seen: each keeps its own count of replays, since the same request
/// may reach sitemapd and then its web server's access log, each with the client address it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A request to sitemapd itself.
    Request = 0,
    /// A line of the web server's access log (the crawl log).
    Line = 1,
}

/// A request's Web Bot Auth signatures naming one registry crawler's signers, read and ready to
/// check.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The registry crawler whose `signature_agent` the first listed signature names.
    pub crawler: CrawlerId,
    /// Its signatures from that crawler's signers, in their order.
    signatures: Vec<Candidate>,
    seen: Seen,
}

#[derive(Debug, Clone)]
struct Candidate {
    /// The URL of the key directory it names.
    directory: String,
    check: Check,
}

#[derive(Debug, Clone)]
enum Check {
    /// What the check needs besides the time and the key.
    Ready(Ready),
    /// A signature that does not cover `@authority` (or `@target-uri`) and `signature-agent`
    /// proves nothing of this request: forged.
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
    replay: ReplayKey,
}

/// The registry's signers and their key directories.
pub struct Signatures {
    /// Each directory URL a registry entry names, and the first crawler that names it.
    signers: HashMap<String, CrawlerId>,
    directories: Arc<Directories>,
    /// The origins the sites are served at, for `@target-uri`.
    public: Vec<BaseUrl>,
    /// The replays of each [`Seen`].
    replays: [Mutex<Replays>; 2],
}

impl Signatures {
    /// The signers of `registry` (each directory names the first crawler that lists it), for
    /// sites served at `public` (their base URLs).
    pub fn new(registry: &Registry, public: &[BaseUrl]) -> Self {
        let mut signers = HashMap::new();
        for id in registry.ids() {
            for agent in &registry.get(id).signature_agent {
                if let Ok(url) = crate::crawlers::signer::directory_url(agent) {
                    signers.entry(url).or_insert(id);
                }
            }
        }
        let directories = Arc::new(Directories::new(signers.keys().cloned()));
        let mut origins: Vec<BaseUrl> = Vec::new();
        for base in public {
            if !origins
                .iter()
                .any(|o| o.origin_text() == base.origin_text())
            {
                origins.push(base.clone());
            }
        }
        Self {
            signers,
            directories,
            public: origins,
            replays: [(); 2].map(|_| Mutex::new(Replays::new(replays::MOST_KEPT))),
        }
    }

    /// The signatures `headers` carry for `message`, seen as `seen`, when one is tagged
    /// `web-bot-auth` and names a registry signer: those naming that signer's crawler. `None`
    /// otherwise (the request is judged by its User-Agent, and nothing is fetched for the
    /// directories it names).
    pub fn read(
        &self,
        headers: SignatureHeaders<'_>,
        message: &Message<'_>,
        seen: Seen,
    ) -> Option<Signed> {
        if self.signers.is_empty() {
            return None;
        }
        let all = input::read(headers).ok()?;
        let listed = |s: &input::Signature| self.signers.get(&s.directory).copied();
        let crawler = all.iter().find_map(listed)?;
        let public = public_origin(&self.public, message.authority);
        let signatures = all
            .into_iter()
            .filter(|s| listed(s) == Some(crawler))
            .map(|signature| Candidate {
                check: check(&signature, message, public),
                directory: signature.directory,
            })
            .collect();
        Some(Signed {
            crawler,
            signatures,
            seen,
        })
    }

    /// The verdict on `signed` from `addr` at `now` (unix seconds) when no directory must be
    /// fetched: verified as soon as one signature verifies from what is known.
    pub fn cached(&self, signed: &Signed, addr: IpAddr, now: i64) -> Option<Trust> {
        let mut trusts = Vec::with_capacity(signed.signatures.len());
        let mut due = false;
        for candidate in &signed.signatures {
            let trust = match decided(candidate, now) {
                Ok(decided) => decided,
                Err(ready) => match self
                    .directories
                    .lookup(&candidate.directory, Instant::now())
                {
                    Lookup::Keys(keys) => self.judged(signed, ready, &keys, addr, now),
                    Lookup::Unreachable => Trust::Unverified,
                    Lookup::Fetch => {
                        due = true;
                        continue;
                    }
                },
            };
            if trust == Trust::Verified {
                return Some(trust);
            }
            trusts.push(trust);
        }
        (!due).then(|| none_verified(&trusts))
    }

    /// The verdict on `signed` from `addr` at `now`, fetching directories when due: each
    /// signature in turn until one verifies.
    pub async fn verdict(&self, signed: &Signed, addr: IpAddr, now: i64) -> Trust {
        let mut trusts = Vec::with_capacity(signed.signatures.len());
        for candidate in &signed.signatures {
            let trust = match decided(candidate, now) {
                Ok(decided) => decided,
                Err(ready) => match self.directories.keys(&candidate.directory).await {
                    Lookup::Keys(keys) => self.judged(signed, ready, &keys, addr, now),
                    Lookup::Unreachable | Lookup::Fetch => Trust::Unverified,
                },
            };
            if trust == Trust::Verified {
                return trust;
            }
            trusts.push(trust);
        }
        none_verified(&trusts)
    }

    /// The directories fetched so far, for tests and the status page.
    pub fn directory_fetches(&self) -> u64 {
        self.directories.fetches()
    }

    /// Each signer's directory.
    pub fn directories(&self) -> Vec<DirectoryStatus> {
        self.directories.states()
    }

    /// [`judge`], then not verified again when another address counted the signature.
    fn judged(&self, signed: &Signed, ready: &Ready, keys: &Keys, addr: IpAddr, now: i64) -> Trust {
        let trust = judge(ready, keys);
        if trust != Trust::Verified {
            return trust;
        }
        let expires = ready.expires.unwrap_or(now);
        let replays = &self.replays[signed.seen as usize];
        match lock(replays).count(ready.replay, addr.to_canonical(), expires, now) {
            true => Trust::Verified,
            false => Trust::Unverified,
        }
    }
}

/// The origin a request to `authority` was made to, of `public` (distinct origins): the one
/// whose base URL the Host names, else the only one (a single site answers any Host).
fn public_origin<'a>(public: &'a [BaseUrl], authority: &str) -> Option<&'a str> {
    let named = public.iter().find(|base| base.is_named_by(authority));
    match (named, public) {
        (Some(base), _) | (None, [base]) => Some(base.origin_text()),
        (None, _) => None,
    }
}

/// What checking `signature` over `message` needs, or the verdict it has already.
fn check(signature: &input::Signature, message: &Message<'_>, public: Option<&str>) -> Check {
    let covers = |name: &str| signature.components.iter().any(|c| c.name == name);
    if !(covers("@authority") || covers("@target-uri")) || !covers("signature-agent") {
        return Check::Refused;
    }
    match base::signature_base(signature, message, public) {
        Ok(base) => Check::Ready(Ready {
            base,
            keyid: signature.keyid.clone(),
            created: signature.created,
            expires: signature.expires,
            alg: signature.alg.clone(),
            bytes: signature.bytes.clone(),
            replay: replay_key(
                &signature.directory,
                signature.nonce.as_deref(),
                &signature.bytes,
            ),
        }),
        Err(_) => Check::Unverifiable,
    }
}

/// The verdict when the signature alone decides it (`Ok`), else what the key check needs.
fn decided(candidate: &Candidate, now: i64) -> Result<Trust, &Ready> {
    let ready = match &candidate.check {
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

/// The verdict when no signature verified: forged when each is, else unverified.
fn none_verified(trusts: &[Trust]) -> Trust {
    match !trusts.is_empty() && trusts.iter().all(|t| *t == Trust::Forged) {
        true => Trust::Forged,
        false => Trust::Unverified,
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

    #[test]
    fn the_public_origin_is_the_one_the_host_names_or_the_only_one() {
        let base = |url: &str| BaseUrl::parse(url).unwrap();
        let one = [base("https://www.example.com/catalog/")];
        let two = [base("https://a.example/"), base("http://b.example:8080/")];
        let cases: &[(&[BaseUrl], &str, Option<&str>)] = &[
            (&one, "www.example.com", Some("https://www.example.com")),
            (&one, "127.0.0.1:8080", Some("https://www.example.com")),
            (&two, "A.example:443", Some("https://a.example")),
            (&two, "b.example:8080", Some("http://b.example:8080")),
            (&two, "c.example", None),
            (&[], "a.example", None),
        ];
        for (public, authority, origin) in cases {
            assert_eq!(public_origin(public, authority), *origin, "{authority}");
        }
    }

    /// A signer is the directory URL it names: an origin and its well-known URL are one signer,
    /// another path of the same origin is none of the registry's.
    #[test]
    fn a_signer_is_named_by_its_directory_url() {
        let registry = Registry::builtin();
        let signatures = Signatures::new(&registry, &[]);
        let input = r#"sig1=("@authority" "signature-agent");created=1;keyid="k";expires=2;tag="web-bot-auth""#;
        let chatgpt = registry.by_name("ChatGPT Agent");
        let field = |_: &str| None;
        let message = Message {
            method: "GET",
            authority: "example.com",
            target: "/",
            field: &field,
        };
        let cases = [
            (r#""https://chatgpt.com""#, chatgpt),
            (
                r#"sig1="https://chatgpt.com/.well-known/http-message-signatures-directory""#,
                chatgpt,
            ),
            (r#"sig1="https://chatgpt.com/keys.json""#, None),
            (r#"sig1="http://chatgpt.com""#, None),
        ];
        for (agent, crawler) in cases {
            let headers = SignatureHeaders {
                agent: Some(agent),
                input,
                signature: None,
            };
            let read = signatures.read(headers, &message, Seen::Request);
            assert_eq!(read.map(|s| s.crawler), crawler, "{agent}");
        }
    }

    #[test]
    fn without_a_verified_signature_forged_needs_every_one_forged() {
        use Trust::{Forged, Unverified};
        let cases: &[(&[Trust], Trust)] = &[
            (&[Forged], Forged),
            (&[Forged, Forged], Forged),
            (&[Forged, Unverified], Unverified),
            (&[Unverified], Unverified),
            (&[], Unverified),
        ];
        for (trusts, expected) in cases {
            assert_eq!(none_verified(trusts), *expected, "{trusts:?}");
        }
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
        .unwrap()
        .remove(0);
        let field = |name: &str| (name == "signature-agent").then(|| agent.to_string());
        let message = Message {
            method: "GET",
            authority: "example.com:8080",
            target: "/sitemap.xml",
            field: &field,
        };
        let base = base::signature_base(&read, &message, None).unwrap();
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
        let base = base::signature_base(&read, &other, None).unwrap();
        assert!(!keys::ed25519_checks(&key, base.as_bytes(), &read.bytes));
    }
}
