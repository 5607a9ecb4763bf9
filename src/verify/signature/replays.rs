//! Replayed signatures: the first client address each verified Web Bot Auth signature was counted
//! from, until the signature expires, so that the same signature (its nonce, or its bytes when it
//! has none) from another address is not counted as verified again. At most [`MOST_KEPT`]
//! signatures are kept, each as a 16-byte digest with its address and expiry; beyond that the one
//! that expires first goes first. Client addresses live here only, never in the database or logs.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;

/// Signatures kept at most (each about 100 bytes with the maps' overhead).
pub const MOST_KEPT: usize = 100_000;

/// A signature's identity: the first 16 bytes of SHA-256 over its signer's directory and its
/// nonce (or its bytes).
pub type ReplayKey = [u8; 16];

/// The key of a signature from the directory at `directory`, by its nonce when it has one.
pub fn replay_key(directory: &str, nonce: Option<&str>, bytes: &[u8]) -> ReplayKey {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(directory.as_bytes());
    match nonce {
        Some(nonce) => {
            context.update(b"\0nonce\0");
            context.update(nonce.as_bytes());
        }
        None => {
            context.update(b"\0bytes\0");
            context.update(bytes);
        }
    }
    let digest = context.finish();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest.as_ref()[..16]);
    key
}

/// The signatures counted as verified, with the address each was first counted from.
#[derive(Debug)]
pub struct Replays {
    cap: usize,
    first: HashMap<ReplayKey, (IpAddr, i64)>,
    /// `(expires, key)`: the order they leave in.
    by_expiry: BTreeSet<(i64, ReplayKey)>,
    /// The latest check time seen: signatures that expired before it are dropped.
    horizon: i64,
}

impl Replays {
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            first: HashMap::new(),
            by_expiry: BTreeSet::new(),
            horizon: i64::MIN,
        }
    }

    /// Whether a verified signature `key`, valid until `expires`, counts as verified from `addr`
    /// at `now` (unix seconds): yes when no other address counted it within its validity (it is
    /// then kept with `addr`), or `addr` is the one that did.
    pub fn count(&mut self, key: ReplayKey, addr: IpAddr, expires: i64, now: i64) -> bool {
        self.forget_expired(now);
        if let Some(&(first, until)) = self.first.get(&key) {
            if until >= now {
                return first == addr;
            }
            self.by_expiry.remove(&(until, key));
            self.first.remove(&key);
        }
        while self.first.len() >= self.cap {
            let Some(oldest) = self.by_expiry.pop_first() else {
                break;
            };
            self.first.remove(&oldest.1);
        }
        self.first.insert(key, (addr, expires));
        self.by_expiry.insert((expires, key));
        true
    }

    /// Drops what expired before the latest check time.
    fn forget_expired(&mut self, now: i64) {
        self.horizon = self.horizon.max(now);
        while let Some(&(expires, key)) = self.by_expiry.first() {
            if expires >= self.horizon {
                break;
            }
            self.by_expiry.pop_first();
            self.first.remove(&key);
        }
    }

    /// Signatures kept now.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_signature_counts_from_its_first_address_only_while_it_is_valid() {
        let key = replay_key("https://a.example/k", Some("n1"), b"");
        let mut replays = Replays::new(10);
        // (address, check time, counted)
        let steps = [
            (1, 100, true),
            (1, 110, true),
            (2, 120, false),
            (2, 200, false),
            (3, 201, true),
            (3, 202, true),
            (1, 203, false),
        ];
        let mut expires = 200;
        for (i, (from, now, counted)) in steps.into_iter().enumerate() {
            if now > 200 {
                expires = 400;
            }
            assert_eq!(
                replays.count(key, addr(from), expires, now),
                counted,
                "step {i}: from {from} at {now}"
            );
        }
        assert_eq!(replays.len(), 1);
    }

    #[test]
    fn the_nonce_or_else_the_bytes_name_the_signature() {
        let nonce = |n: &str, bytes: &[u8]| replay_key("https://a.example/k", Some(n), bytes);
        assert_eq!(nonce("n1", b"x"), nonce("n1", b"y"));
        assert_ne!(nonce("n1", b"x"), nonce("n2", b"x"));
        let bytes = |b: &[u8]| replay_key("https://a.example/k", None, b);
        assert_eq!(bytes(b"x"), bytes(b"x"));
        assert_ne!(bytes(b"x"), bytes(b"y"));
        assert_ne!(
            replay_key("https://a.example/k", Some("n1"), b""),
            replay_key("https://b.example/k", Some("n1"), b""),
            "signers' nonces are their own"
        );
    }

    #[test]
    fn at_most_the_cap_is_kept_the_first_to_expire_going_first() {
        let mut replays = Replays::new(3);
        let key = |i: u8| replay_key("d", Some(&i.to_string()), b"");
        for (i, expires) in [(1, 500), (2, 300), (3, 400), (4, 600)] {
            assert!(replays.count(key(i), addr(1), expires, 100));
        }
        assert_eq!(replays.len(), 3);
        assert!(
            replays.count(key(2), addr(2), 300, 100),
            "the first to expire was dropped: a new address counts"
        );
        assert!(!replays.count(key(1), addr(2), 500, 100), "still kept");
    }

    #[test]
    fn expired_signatures_are_dropped() {
        let mut replays = Replays::new(10);
        let key = |i: u8| replay_key("d", Some(&i.to_string()), b"");
        assert!(replays.count(key(1), addr(1), 150, 100));
        assert!(replays.count(key(2), addr(1), 500, 100));
        assert!(replays.count(key(3), addr(1), 500, 200));
        assert_eq!(replays.len(), 2);
    }
}
