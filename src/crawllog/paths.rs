//! The paths the crawl log counts beside the listed URLs: those a crawler fetched that no
//! sitemap lists ([`PathKind::Outside`]), and those robots.txt disallows it
//! ([`PathKind::Disallowed`]), one row per crawler, verdict, path and status.

use std::collections::HashMap;

use super::receiver::Seen;
use crate::crawlers::{Registry, Trust};
use crate::store::PathRow;

/// Which paths a row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathKind {
    /// Fetched by a search crawler, listed in no sitemap.
    Outside,
    /// Fetched although the site's robots.txt disallows it for the crawler.
    Disallowed,
}

impl PathKind {
    pub const ALL: [PathKind; 2] = [PathKind::Outside, PathKind::Disallowed];

    /// The kind as `sitemapd_crawl_paths.kind` stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            PathKind::Outside => "outside",
            PathKind::Disallowed => "disallowed",
        }
    }
}

/// What one path row is counted under in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PathKey<'a> {
    kind: PathKind,
    crawler: &'a str,
    trust: Trust,
    /// [`path_key`] of the path (0: the crawler's total of this kind).
    path: i64,
    status: u16,
}

/// Counts of paths by key, for one site and batch (one row per key: an upsert may not touch
/// a row twice).
pub(super) struct PathCounts<'a> {
    registry: &'a Registry,
    rows: HashMap<PathKey<'a>, PathRow>,
}

impl<'a> PathCounts<'a> {
    pub(super) fn new(registry: &'a Registry) -> Self {
        Self {
            registry,
            rows: HashMap::new(),
        }
    }

    /// Counts `seen`'s path as `kind`, with the robots.txt rule that decided it, if any.
    pub(super) fn add(&mut self, kind: PathKind, seen: &'a Seen, rule: Option<String>) {
        let path = &seen.fetch.target;
        let key = PathKey {
            kind,
            crawler: self.registry.get(seen.crawler).name.as_str(),
            trust: seen.trust,
            path: path_key(path),
            status: seen.fetch.status,
        };
        self.bump(key, seen, path, rule);
        if kind == PathKind::Disallowed {
            // The crawler's total, kept whatever paths are evicted.
            let total = PathKey {
                path: 0,
                status: 0,
                ..key
            };
            self.bump(total, seen, "", None);
        }
    }

    fn bump(&mut self, key: PathKey<'a>, seen: &Seen, path: &str, rule: Option<String>) {
        let row = self.rows.entry(key).or_insert_with(|| PathRow {
            kind: key.kind.as_str(),
            crawler: key.crawler.to_string(),
            verification: key.trust.as_str().to_string(),
            path_key: key.path,
            status: i64::from(key.status),
            path: path.to_string(),
            fetches: 0,
            last_fetch: seen.fetch.at,
            rule,
        });
        row.fetches += 1;
        row.last_fetch = row.last_fetch.max(seen.fetch.at);
    }

    /// The rows in key order.
    pub(super) fn into_rows(self) -> Vec<PathRow> {
        let mut rows: Vec<PathRow> = self.rows.into_values().collect();
        rows.sort_by(|a, b| a.key().cmp(&b.key()));
        rows
    }
}

/// A stable, non-zero 63-bit key of a path (0 is the totals' key).
fn path_key(path: &str) -> i64 {
    let hash = xxhash_rust::xxh3::xxh3_64(path.as_bytes()) >> 1;
    (hash as i64).max(1)
}
