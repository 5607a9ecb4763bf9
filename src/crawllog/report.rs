//! The crawl log's report, per site and group: coverage over 30 days, URLs waiting for a
//! recrawl, freshness, paths outside the sitemaps and robots.txt violations (apart from them, the
//! same fetches by crawlers whose operators document that they ignore robots.txt, such as fetches
//! a person asked for: exempt, never violations). Computed in SQL
//! (indexed counts, one join with each group's source) in the background and kept as a
//! summary: the status page and `/status.json` read the last one, never the database. It is
//! remade after a pause of ten times its own cost, from 2 seconds to 10 minutes: a small site's
//! report is seconds old, and one of 10M URLs (seconds of the database's work: a count over
//! each crawler's fetches and a join with the source) costs the database at most a tenth of
//! its time, whatever its size.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde::Serialize;

use super::metrics::{CrawlLogMetrics, CrawlerLabels, QuantileLabels, ViolationLabels};
use super::paths::PathKind;
use crate::crawlers::Registry;
use crate::site::{Group, Site};
use crate::store::StoreError;
use crate::summary::time;

/// Coverage and freshness look this far back.
pub const WINDOW_SECS: i64 = 30 * 24 * 3600;
/// URLs listed as waiting for a recrawl, per crawler and group.
const WAITING_EXAMPLES: i64 = 10;
/// Paths outside the sitemaps shown per site.
const OUTSIDE_SHOWN: i64 = 100;
/// Examples of violations per crawler.
const VIOLATION_EXAMPLES: usize = 5;
/// Search crawlers every group's report lists, fetched or not.
const ALWAYS_SHOWN: [&str; 2] = ["Googlebot", "bingbot"];
/// The pause between reports is ten times the last one's cost, within these bounds.
const MAX_PERIOD: Duration = Duration::from_secs(600);
const MIN_PERIOD: Duration = Duration::from_secs(2);

/// The last report made.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CrawlReport {
    /// When it was made; `None` until the first one.
    pub generated_at: Option<String>,
    /// How long it took to make, in milliseconds.
    pub cost_ms: u64,
    pub sites: Vec<SiteCrawls>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SiteCrawls {
    pub base_url: String,
    pub groups: Vec<GroupCrawls>,
    pub outside_sitemaps: Vec<OutsidePath>,
    pub robots_violations: Vec<Violations>,
    /// Fetches of disallowed paths by crawlers with `obeys_robots = false` (a person's fetch):
    /// counted like violations, but they are none.
    pub robots_exempt: Vec<Violations>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupCrawls {
    /// Empty for the unnamed group.
    pub name: String,
    /// Per search crawler, by name.
    pub crawl_log: BTreeMap<String, CrawlerCrawls>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CrawlerCrawls {
    pub coverage: Coverage,
    pub waiting_for_recrawl: WaitingForRecrawl,
    pub freshness_seconds: Freshness,
}

#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// Listed URLs fetched in the last 30 days.
    pub fetched: u64,
    /// URLs the group lists now.
    pub listed: u64,
    pub percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WaitingForRecrawl {
    pub count: u64,
    /// The oldest lastmod still waiting.
    pub oldest: Option<String>,
    pub examples: Vec<WaitingExample>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WaitingExample {
    pub path: String,
    pub lastmod: Option<String>,
    pub last_fetch: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Freshness {
    pub p50: Option<i64>,
    pub p90: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OutsidePath {
    pub crawler: String,
    pub path: String,
    pub status: i64,
    pub fetches: i64,
    pub last_fetch: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Violations {
    pub crawler: String,
    pub verified: i64,
    pub unverified: i64,
    pub forged: i64,
    pub examples: Vec<ViolationExample>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ViolationExample {
    pub path: String,
    pub status: i64,
    pub verification: String,
    pub rule: Option<String>,
    pub fetches: i64,
    pub last_fetch: String,
}

/// Where the last report is kept, and what remakes it.
pub struct Reporter {
    pub sites: Vec<Arc<Site>>,
    pub registry: Arc<Registry>,
    pub metrics: CrawlLogMetrics,
    pub last: Arc<RwLock<Arc<CrawlReport>>>,
}

/// Whether a group lists no URL yet (its first sweep has not ended).
fn lists_nothing(group: &Group) -> bool {
    group.snapshot().layout.served() == 0
}

impl Reporter {
    /// Remakes the report for as long as the service runs.
    pub async fn run(self) {
        loop {
            let started = Instant::now();
            let empty = self.empty_groups();
            match self.make().await {
                Ok(mut report) => {
                    report.cost_ms = started.elapsed().as_millis() as u64;
                    self.metrics.report_ms.set(report.cost_ms as i64);
                    self.export(&report);
                    *crate::sync::write(&self.last) = Arc::new(report);
                }
                Err(e) => {
                    tracing::warn!(error = %crate::error::Chain(&e), "could not make the crawl log's report")
                }
            }
            let pause = (started.elapsed() * 10).clamp(MIN_PERIOD, MAX_PERIOD);
            Self::pause(pause, &empty).await;
        }
    }

    /// The groups that list nothing yet (their first sweep has not ended).
    fn empty_groups(&self) -> Vec<Arc<Group>> {
        self.sites
            .iter()
            .flat_map(|site| site.groups.iter())
            .filter(|group| lists_nothing(group))
            .cloned()
            .collect()
    }

    /// Waits `pause`, or less once one of the `empty` groups lists URLs: a report made
    /// before a first sweep ended is remade when it ends, not up to ten minutes later.
    async fn pause(pause: Duration, empty: &[Arc<Group>]) {
        if empty.is_empty() {
            return tokio::time::sleep(pause).await;
        }
        let until = Instant::now() + pause;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(MIN_PERIOD)).await;
            if !empty.iter().all(|group| lists_nothing(group)) {
                return;
            }
        }
    }

    pub async fn make(&self) -> Result<CrawlReport, StoreError> {
        let now = Utc::now().timestamp();
        let mut sites = Vec::with_capacity(self.sites.len());
        for site in &self.sites {
            sites.push(self.site(site, now).await?);
        }
        Ok(CrawlReport {
            generated_at: Some(Utc::now().to_rfc3339()),
            cost_ms: 0,
            sites,
        })
    }

    async fn site(&self, site: &Site, now: i64) -> Result<SiteCrawls, StoreError> {
        let mut groups = Vec::with_capacity(site.groups.len());
        for group in &site.groups {
            groups.push(self.group(site, group, now).await?);
        }
        let store = &site.first().store;
        let outside = store
            .crawl_paths(&site.key, PathKind::Outside.as_str(), false, OUTSIDE_SHOWN)
            .await?
            .into_iter()
            .map(|row| OutsidePath {
                crawler: row.crawler,
                path: row.path,
                status: row.status,
                fetches: row.fetches,
                last_fetch: time(row.last_fetch),
            })
            .collect();
        let mut violations: BTreeMap<String, Violations> = BTreeMap::new();
        for total in store
            .crawl_paths(&site.key, PathKind::Disallowed.as_str(), true, 10_000)
            .await?
        {
            let entry = violations
                .entry(total.crawler.clone())
                .or_insert_with(|| Violations {
                    crawler: total.crawler.clone(),
                    verified: 0,
                    unverified: 0,
                    forged: 0,
                    examples: Vec::new(),
                });
            match total.verification.as_str() {
                "verified" => entry.verified += total.fetches,
                "forged" => entry.forged += total.fetches,
                _ => entry.unverified += total.fetches,
            }
        }
        for row in store
            .crawl_paths(&site.key, PathKind::Disallowed.as_str(), false, 1000)
            .await?
        {
            if let Some(entry) = violations.get_mut(&row.crawler) {
                if entry.examples.len() < VIOLATION_EXAMPLES {
                    entry.examples.push(ViolationExample {
                        path: row.path,
                        status: row.status,
                        verification: row.verification,
                        rule: row.rule,
                        fetches: row.fetches,
                        last_fetch: time(row.last_fetch),
                    });
                }
            }
        }
        let (exempt, violations): (Vec<Violations>, Vec<Violations>) = violations
            .into_values()
            .partition(|v| self.registry.exempt_from_robots(&v.crawler));
        Ok(SiteCrawls {
            base_url: site.key.clone(),
            groups,
            outside_sitemaps: outside,
            robots_violations: violations,
            robots_exempt: exempt,
        })
    }

    async fn group(&self, site: &Site, group: &Group, now: i64) -> Result<GroupCrawls, StoreError> {
        let label = group.name.clone().unwrap_or_default();
        let store = &group.store;
        let listed = group.snapshot().layout.served() as u64;
        let fetched: BTreeMap<String, i64> = store
            .crawl_coverage(&site.key, &label, now - WINDOW_SECS)
            .await?
            .into_iter()
            .collect();
        let waiting: BTreeMap<String, i64> = store
            .crawl_waiting_counts(&group.source, &site.key, &label)
            .await?
            .into_iter()
            .collect();
        let mut crawl_log = BTreeMap::new();
        // Every search crawler that fetched, and the two every site owner asks about.
        let shown = self
            .registry
            .fetching_search_crawlers()
            .map(|id| self.registry.get(id).name.as_str())
            .filter(|name| {
                ALWAYS_SHOWN.contains(name)
                    || fetched.contains_key(*name)
                    || waiting.contains_key(*name)
            });
        for crawler in shown {
            let count = waiting.get(crawler).copied().unwrap_or(0);
            let examples = if count > 0 {
                store
                    .crawl_waiting_examples(
                        &group.source,
                        &site.key,
                        &label,
                        crawler,
                        WAITING_EXAMPLES,
                    )
                    .await?
            } else {
                Vec::new()
            };
            let quantiles = store
                .crawl_freshness(&site.key, &label, crawler, now - WINDOW_SECS, &[0.5, 0.9])
                .await?;
            let fetched = fetched.get(crawler).copied().unwrap_or(0) as u64;
            crawl_log.insert(
                crawler.to_string(),
                CrawlerCrawls {
                    coverage: Coverage {
                        fetched,
                        listed,
                        percent: if listed == 0 {
                            0.0
                        } else {
                            (fetched.min(listed) as f64 * 1000.0 / listed as f64).round() / 10.0
                        },
                    },
                    waiting_for_recrawl: WaitingForRecrawl {
                        count: count as u64,
                        oldest: examples
                            .first()
                            .and_then(|e| e.lastmod)
                            .map(|t| t.to_rfc3339()),
                        examples: examples
                            .into_iter()
                            .map(|e| WaitingExample {
                                path: e.path,
                                lastmod: e.lastmod.map(|t| t.to_rfc3339()),
                                last_fetch: time(e.last_fetch),
                            })
                            .collect(),
                    },
                    freshness_seconds: Freshness {
                        p50: quantiles.first().copied().flatten(),
                        p90: quantiles.get(1).copied().flatten(),
                    },
                },
            );
        }
        Ok(GroupCrawls {
            name: label,
            crawl_log,
        })
    }

    /// The report as gauges.
    fn export(&self, report: &CrawlReport) {
        let m = &self.metrics;
        for site in &report.sites {
            for group in &site.groups {
                for (crawler, c) in &group.crawl_log {
                    let labels = CrawlerLabels {
                        site: site.base_url.clone(),
                        group: group.name.clone(),
                        crawler: crawler.clone(),
                    };
                    m.fetched
                        .get_or_create(&labels)
                        .set(c.coverage.fetched as i64);
                    m.listed
                        .get_or_create(&labels)
                        .set(c.coverage.listed as i64);
                    m.waiting
                        .get_or_create(&labels)
                        .set(c.waiting_for_recrawl.count as i64);
                    for (quantile, value) in [
                        ("0.5", c.freshness_seconds.p50),
                        ("0.9", c.freshness_seconds.p90),
                    ] {
                        if let Some(value) = value {
                            m.freshness
                                .get_or_create(&QuantileLabels {
                                    site: site.base_url.clone(),
                                    group: group.name.clone(),
                                    crawler: crawler.clone(),
                                    quantile,
                                })
                                .set(value);
                        }
                    }
                }
            }
            for v in &site.robots_violations {
                for (verified, count) in [
                    ("true", v.verified),
                    ("false", v.unverified),
                    ("forged", v.forged),
                ] {
                    m.violations
                        .get_or_create(&ViolationLabels {
                            site: site.base_url.clone(),
                            crawler: v.crawler.clone(),
                            verified,
                        })
                        .set(count);
                }
            }
        }
    }
}
