//! The crawl log's tables: `sitemapd_crawls` (each search crawler's last fetch of each listed
//! URL, and the first fetch after its lastmod) and `sitemapd_crawl_paths` (bounded per site:
//! paths fetched that no sitemap lists, and fetches robots.txt disallowed), with the lookups
//! of listed URLs by loc and the reports' queries. Times are unix seconds, except
//! `last_fetch_at`, stored as the database compares lastmods, so that "changed since the last
//! fetch" is one indexed join with the source. Statements: `sql/crawls.rs`.

use chrono::{DateTime, Utc};

use super::error::retry_on_conflict;
use super::{Store, StoreError};

/// One search crawler's fetches of one listed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlRow {
    pub crawler: String,
    pub entry_id: i64,
    /// The request path as logged (for examples).
    pub path: String,
    pub fetches: i64,
    pub last_fetch: i64,
    pub last_status: i64,
    /// The entry's lastmod as of its last fetch.
    pub lastmod: Option<i64>,
    /// The first fetch at or after `lastmod`; `None` while it waits for one.
    pub fresh_at: Option<i64>,
    /// `fresh_at - lastmod`.
    pub freshness: Option<i64>,
}

/// A path fetched and counted for a site: outside the sitemaps, or disallowed by robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRow {
    /// `outside` or `disallowed`.
    pub kind: &'static str,
    pub crawler: String,
    /// `verified`, `unverified` or `forged`.
    pub verification: String,
    /// A hash of `path` (0: the crawler's total of this kind, never evicted).
    pub path_key: i64,
    pub status: i64,
    pub path: String,
    pub fetches: i64,
    pub last_fetch: i64,
    /// The robots.txt rule that disallowed the path.
    pub rule: Option<String>,
}

impl PathRow {
    /// The row's key in its table (beside the site).
    pub fn key(&self) -> (&str, &str, &str, i64, i64) {
        (
            self.kind,
            &self.crawler,
            &self.verification,
            self.path_key,
            self.status,
        )
    }
}

/// A listed entry found by its loc.
#[derive(Debug, Clone)]
pub struct ListedLoc {
    pub loc: String,
    pub id: i64,
    pub lastmod: Option<DateTime<Utc>>,
}

/// A listed URL changed since a crawler last fetched it.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub path: String,
    pub lastmod: Option<DateTime<Utc>>,
    pub last_fetch: i64,
}

impl Store {
    /// The entries of `source` (this store's group) whose loc is one of `locs`. The built-in
    /// table finds them through its unique index; a view is asked the same `loc IN (…)`, which
    /// costs what its own indexes allow.
    pub async fn listed_by_loc(
        &self,
        source: &str,
        locs: &[String],
    ) -> Result<Vec<ListedLoc>, StoreError> {
        from_source!(self, s => s.listed_by_loc(source, locs).await)
    }

    /// Adds a batch's fetches to what is stored: each row holds one crawler's fetches of one
    /// entry in the batch (as [`CrawlRow`] would read had nothing been stored), joined with
    /// the stored row in the database, so the batch needs no read first (see [`crawl_join`]).
    /// Rows in key order keep writers adding at once from deadlocking; a transaction the
    /// database gave up for another is run again.
    pub async fn add_crawls(
        &self,
        site: &str,
        group: &str,
        rows: &[CrawlRow],
    ) -> Result<(), StoreError> {
        retry_on_conflict(|| async { on!(&self.state, s => s.add_crawls(site, group, rows).await) })
            .await
    }

    /// Adds `rows`' fetches to what is stored for their keys (see [`path_join`]); retried
    /// as [`Store::add_crawls`].
    pub async fn add_paths(&self, site: &str, rows: &[PathRow]) -> Result<(), StoreError> {
        retry_on_conflict(|| async { on!(&self.state, s => s.add_paths(site, rows).await) }).await
    }

    /// Keeps at most about `keep` paths of `kind` for `site`, the most fetched (totals stay).
    pub async fn trim_paths(&self, site: &str, kind: &str, keep: i64) -> Result<(), StoreError> {
        on!(&self.state, s => s.trim_paths(site, kind, keep).await)
    }

    /// Per crawler: listed URLs of the group it fetched at or after `since`.
    pub async fn crawl_coverage(
        &self,
        site: &str,
        group: &str,
        since: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        on!(&self.state, s => s.crawl_coverage(site, group, since).await)
    }

    /// Per crawler: fetched URLs of `source` whose lastmod is newer than the crawler's last fetch.
    pub async fn crawl_waiting_counts(
        &self,
        source: &str,
        site: &str,
        group: &str,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        if self.replica.is_some() {
            // The fetches are in the state database, the lastmods in the source's: no join.
            return Ok(Vec::new());
        }
        on!(&self.state, s => s.crawl_waiting_counts(source, site, group).await)
    }

    /// The `limit` URLs waiting longest for `crawler` to fetch them again, oldest lastmod first.
    pub async fn crawl_waiting_examples(
        &self,
        source: &str,
        site: &str,
        group: &str,
        crawler: &str,
        limit: i64,
    ) -> Result<Vec<Waiting>, StoreError> {
        if self.replica.is_some() {
            return Ok(Vec::new());
        }
        on!(&self.state, s => s.crawl_waiting_examples(source, site, group, crawler, limit).await)
    }

    /// The `quantiles` (0 to 1) of the time from lastmod to the first fetch after it, for
    /// first fetches at or after `since`; `None` when there were none.
    pub async fn crawl_freshness(
        &self,
        site: &str,
        group: &str,
        crawler: &str,
        since: i64,
        quantiles: &[f64],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        on!(&self.state, s => s.crawl_freshness(site, group, crawler, since, quantiles).await)
    }

    /// Up to `limit` paths of `kind` counted for `site`, 404s and redirects first, then the
    /// most fetched; `totals`: the crawlers' totals instead of paths.
    pub async fn crawl_paths(
        &self,
        site: &str,
        kind: &str,
        totals: bool,
        limit: i64,
    ) -> Result<Vec<PathRow>, StoreError> {
        on!(&self.state, s => s.crawl_paths(site, kind, totals, limit).await)
    }
}
