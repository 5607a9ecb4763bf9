//! Each URL once per file: a view or a UNION may yield the same page twice (`/a` and
//! `https://host/a`), and engines take a repeated URL as a sign of a careless sitemap. URLs are
//! compared once normalised (as [`Loc`]), by a 64-bit hash of their text.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use super::Loc;

/// A normalised URL, as compared: the XXH3 hash of its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UrlKey(u64);

impl UrlKey {
    pub fn of(loc: &Loc) -> Self {
        Self(xxhash_rust::xxh3::xxh3_64(loc.as_str().as_bytes()))
    }

    pub fn hash(self) -> u64 {
        self.0
    }

    /// The key of a URL given as text (tests).
    #[cfg(test)]
    pub fn of_text(url: &[u8]) -> Self {
        Self(xxhash_rust::xxh3::xxh3_64(url))
    }
}

/// The URLs of one file so far, and how many came again.
#[derive(Debug, Default)]
pub struct SeenUrls {
    keys: HashSet<u64, BuildHasherDefault<AlreadyHashed>>,
    /// URLs met again (each left out).
    pub again: u64,
}

impl SeenUrls {
    /// Whether `url` is new to this file; if not, it is counted in [`SeenUrls::again`].
    pub fn first_time(&mut self, url: UrlKey) -> bool {
        let new = self.keys.insert(url.0);
        if !new {
            self.again += 1;
        }
        new
    }
}

/// The keys are hashes already: the set uses them as they are.
#[derive(Default)]
struct AlreadyHashed(u64);

impl Hasher for AlreadyHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitemap::BaseUrl;

    #[test]
    fn a_url_is_the_same_written_as_a_path_or_absolute() {
        let base = BaseUrl::parse("https://e.com/").unwrap();
        let mut seen = SeenUrls::default();
        let path = Loc::parse("/a b", &base).unwrap();
        let absolute = Loc::parse("https://e.com/a%20b", &base).unwrap();
        let other = Loc::parse("/b", &base).unwrap();
        assert!(seen.first_time(UrlKey::of(&path)));
        assert!(!seen.first_time(UrlKey::of(&absolute)));
        assert!(seen.first_time(UrlKey::of(&other)));
        assert_eq!(seen.again, 1);
    }
}
