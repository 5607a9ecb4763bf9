//! The bounded memory of verification: DNS outcomes per (suffix set, address) with their
//! expiry, evicting the oldest beyond a cap, and the limits on lookups (a token bucket per
//! second). Client addresses live here only, for their TTL: never in the database or the logs.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::dns::DnsOutcome;

/// Which DNS check: the index of a crawler's suffix set (crawlers sharing one share answers).
pub type Key = (u16, IpAddr);

#[derive(Debug)]
struct Entry {
    outcome: DnsOutcome,
    expires: Instant,
    /// The insertion this entry came from (the eviction queue may hold older ones).
    serial: u64,
}

/// Outcomes of finished lookups, at most `cap`, each until it expires.
#[derive(Debug)]
pub struct Cache {
    cap: usize,
    entries: HashMap<Key, Entry>,
    /// Keys in insertion order, with the serial they were inserted under.
    order: VecDeque<(Key, u64)>,
    serial: u64,
}

impl Cache {
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
            serial: 0,
        }
    }

    /// The outcome kept for `key`, unless it expired.
    pub fn get(&self, key: &Key, now: Instant) -> Option<DnsOutcome> {
        self.entries
            .get(key)
            .filter(|entry| entry.expires > now)
            .map(|entry| entry.outcome)
    }

    /// Keeps `outcome` for `ttl`, evicting the oldest entries beyond the cap.
    pub fn insert(&mut self, key: Key, outcome: DnsOutcome, ttl: Duration, now: Instant) {
        self.serial += 1;
        let serial = self.serial;
        let expires = now + ttl;
        self.entries.insert(
            key,
            Entry {
                outcome,
                expires,
                serial,
            },
        );
        self.order.push_back((key, serial));
        while self.entries.len() > self.cap {
            self.evict_oldest();
        }
        // Stale queue entries (a key inserted again) are dropped as they reach the front; bound
        // the queue so that re-inserting the same keys cannot grow it.
        while self.order.len() > self.cap * 2 {
            self.evict_oldest();
        }
    }

    fn evict_oldest(&mut self) {
        let Some((key, serial)) = self.order.pop_front() else {
            return;
        };
        if self.entries.get(&key).is_some_and(|e| e.serial == serial) {
            self.entries.remove(&key);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// At most `rate` lookups a second on average, `rate` at once after a quiet spell.
#[derive(Debug)]
pub struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub fn new(rate: u32, now: Instant) -> Self {
        Self {
            rate: f64::from(rate),
            tokens: f64::from(rate),
            last: now,
        }
    }

    /// Takes a token if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Key {
        (0, IpAddr::from(i.to_be_bytes()))
    }

    #[test]
    fn the_cache_keeps_at_most_its_cap_and_evicts_the_oldest() {
        let now = Instant::now();
        let mut cache = Cache::new(3);
        for i in 0..5 {
            cache.insert(key(i), DnsOutcome::Confirmed, Duration::from_secs(60), now);
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&key(0), now), None);
        assert_eq!(cache.get(&key(4), now), Some(DnsOutcome::Confirmed));
        for _ in 0..100 {
            cache.insert(key(4), DnsOutcome::Denied, Duration::from_secs(60), now);
        }
        assert!(cache.order.len() <= 6);
        assert_eq!(cache.get(&key(4), now), Some(DnsOutcome::Denied));
    }

    #[test]
    fn entries_expire() {
        let now = Instant::now();
        let mut cache = Cache::new(10);
        cache.insert(key(1), DnsOutcome::Failed, Duration::from_secs(5), now);
        assert_eq!(cache.get(&key(1), now), Some(DnsOutcome::Failed));
        assert_eq!(cache.get(&key(1), now + Duration::from_secs(6)), None);
    }

    #[test]
    fn the_bucket_refills_at_its_rate() {
        let now = Instant::now();
        let mut bucket = Bucket::new(2, now);
        assert!(bucket.take(now) && bucket.take(now));
        assert!(!bucket.take(now));
        assert!(bucket.take(now + Duration::from_millis(600)));
        assert!(!bucket.take(now + Duration::from_millis(600)));
    }
}
