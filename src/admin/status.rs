//! What the status page shows, as data: per site and group, the files (URLs, bytes, share of
//! the protocol's limits, last change), rows left out by reason, the audit's findings; what
//! each crawler fetched and is behind on; IndexNow and ping deliveries. Read from the served
//! snapshots, the crawler ledger and the metrics: nothing here touches the database.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::tester::tested_url;
use crate::config::MAX_URLS_PER_FILE;
use crate::crawlers::{Crawler, DayCount, Ledger};
use crate::http::ledger::ChangeTimes;
use crate::http::App;
use crate::robots::{RobotsTxt, Verdict};
use crate::site::{page_file_name, Group, Readiness, Site};
use crate::sitemap::{SkipReason, MAX_FILE_BYTES};

/// A file past this share of a limit is reported: it is about to split.
const NEAR_LIMIT: f64 = 0.9;
/// Files a crawler is behind on, listed by name (the count is always whole).
const BEHIND_LISTED: usize = 20;

#[derive(Debug, Serialize)]
pub struct Status {
    pub generated_at: String,
    pub version: &'static str,
    pub sites: Vec<SiteStatus>,
    pub crawlers: Vec<CrawlerStatus>,
    /// The most requests any crawler made on one day of the last two weeks (the chart's scale).
    pub busiest_day: u64,
    pub deliveries: Deliveries,
}

#[derive(Debug, Serialize)]
pub struct SiteStatus {
    pub base_url: String,
    pub index_url: String,
    pub readiness: &'static str,
    pub groups: Vec<GroupStatus>,
}

#[derive(Debug, Serialize)]
pub struct GroupStatus {
    /// Empty for the unnamed group of a site without groups.
    pub name: String,
    pub source: String,
    pub kind: &'static str,
    pub readiness: &'static str,
    pub entries: usize,
    pub files: Vec<FileStatus>,
    pub skipped: Vec<Skipped>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Serialize)]
pub struct FileStatus {
    pub name: String,
    pub url: String,
    pub urls: usize,
    pub bytes: usize,
    /// Percent of the 50,000 URLs and of the 50 MiB a file may hold.
    pub urls_percent: f64,
    pub bytes_percent: f64,
    pub changed_at: String,
}

#[derive(Debug, Serialize)]
pub struct Skipped {
    pub reason: &'static str,
    pub count: u64,
    /// A few of them (rows measured by this process; `sitemapd check` lists more).
    pub examples: Vec<String>,
    /// Whether the reason leaves the entry out (else one tag or extension row).
    pub drops_entry: bool,
}

/// Something the audit would have a site owner know.
#[derive(Debug, Serialize)]
pub struct Finding {
    /// `error` (engines distrust it; `check` exits 1) or `warning`.
    pub level: &'static str,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct CrawlerStatus {
    pub crawler: &'static str,
    pub last_fetch: Option<String>,
    pub ok: u64,
    pub not_modified: u64,
    pub files_fetched: usize,
    pub files_behind: usize,
    /// `site file` of up to 20 files changed since this crawler last fetched them.
    pub behind: Vec<String>,
    /// Requests per day, the last two weeks, oldest first.
    pub per_day: Vec<DayCount>,
}

/// What the change notifications delivered since the process started.
#[derive(Debug, Serialize)]
pub struct Deliveries {
    pub indexnow_submitted_urls: u64,
    pub indexnow_dropped_urls: u64,
    pub indexnow_failed_requests: u64,
    pub indexnow_pending_urls: i64,
    /// When the endpoint last accepted a request; `None`: not since the start.
    pub indexnow_last_success: Option<String>,
    pub pings: u64,
    pub ping_failed_requests: u64,
    pub pings_pending: i64,
    pub ping_last_success: Option<String>,
}

/// A robots.txt verdict for the tester.
#[derive(Debug, Serialize)]
pub struct RobotsAnswer {
    pub url: String,
    pub agent: String,
    pub allowed: bool,
    /// `line 4: Disallow: /admin/`, or why nothing decided.
    pub decided_by: String,
    /// The path (and query) the rules were matched against.
    pub tested_path: Option<String>,
    /// What the answer must say about the URL, e.g. that its host is not this site's.
    pub note: Option<String>,
    /// Why no verdict was given (a URL that is not http(s)); `allowed` means nothing then.
    pub refused: Option<String>,
}

impl Status {
    pub fn of(app: &App) -> Self {
        let changed = ChangeTimes::of(&app.sites);
        let crawlers = crawlers(&app.ledger, &changed);
        let busiest_day = crawlers
            .iter()
            .flat_map(|c| c.per_day.iter().map(|d| d.requests))
            .max()
            .unwrap_or_default();
        Status {
            generated_at: Utc::now().to_rfc3339(),
            version: env!("CARGO_PKG_VERSION"),
            sites: app.sites.iter().map(|site| site_status(site)).collect(),
            crawlers,
            busiest_day,
            deliveries: deliveries(app),
        }
    }
}

fn site_status(site: &Site) -> SiteStatus {
    SiteStatus {
        base_url: site.base().as_str().to_string(),
        index_url: site.files().file_url("sitemap_index.xml"),
        readiness: readiness(site.readiness()),
        groups: site.groups.iter().map(|g| group_status(g)).collect(),
    }
}

fn group_status(group: &Group) -> GroupStatus {
    let snapshot = group.snapshot();
    let layout = &snapshot.layout;
    let files: Vec<FileStatus> = layout
        .0
        .iter()
        .map(|page| {
            let name = page_file_name(group.name.as_deref(), page.no);
            FileStatus {
                url: group.files.file_url(&name),
                name,
                urls: page.urls,
                bytes: page.bytes,
                urls_percent: percent(page.urls, MAX_URLS_PER_FILE),
                bytes_percent: percent(page.bytes, MAX_FILE_BYTES),
                changed_at: time(page.changed_at),
            }
        })
        .collect();
    let counts = layout.skipped();
    let skipped: Vec<Skipped> = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(reason, count)| Skipped {
            reason: reason.as_str(),
            count,
            examples: counts.examples_of(reason).map(str::to_string).collect(),
            drops_entry: reason.drops_entry(),
        })
        .collect();
    let mut findings = Vec::new();
    for (reason, what) in [
        (
            SkipReason::FutureLastmod,
            "lastmod in the future, left out (engines distrust a site's lastmods for it)",
        ),
        (
            SkipReason::Duplicate,
            "URL listed twice in one file, listed once (`sitemapd check` shows repeats across files)",
        ),
    ] {
        let n = counts.get(reason);
        if n > 0 {
            findings.push(Finding {
                level: "error",
                message: format!("{n} {what}"),
            });
        }
    }
    for file in &files {
        if file.urls_percent >= NEAR_LIMIT * 100.0 || file.bytes_percent >= NEAR_LIMIT * 100.0 {
            findings.push(Finding {
                level: "warning",
                message: format!(
                    "{} holds {:.0} % of the URLs and {:.0} % of the bytes a file may hold",
                    file.name, file.urls_percent, file.bytes_percent
                ),
            });
        }
    }
    GroupStatus {
        name: group.name.clone().unwrap_or_default(),
        source: group.source.clone(),
        kind: if group.news.is_some() { "news" } else { "urls" },
        readiness: readiness(group.readiness()),
        entries: layout.served(),
        files,
        skipped,
        findings,
    }
}

fn crawlers(ledger: &Ledger, changed: &ChangeTimes) -> Vec<CrawlerStatus> {
    ledger
        .snapshot()
        .into_iter()
        .map(|activity| {
            let behind =
                ledger.files_changed_since(activity.crawler, |site, file| changed.get(site, file));
            CrawlerStatus {
                crawler: activity.crawler.as_str(),
                last_fetch: activity.last_fetch.map(time),
                ok: activity.ok,
                not_modified: activity.not_modified,
                files_fetched: activity.files.len(),
                files_behind: behind.len(),
                behind: behind
                    .into_iter()
                    .take(BEHIND_LISTED)
                    .map(|(site, file)| format!("{site} {file}"))
                    .collect(),
                per_day: activity.per_day,
            }
        })
        .collect()
}

fn deliveries(app: &App) -> Deliveries {
    let notify = &app.metrics.notify;
    let failed = |target: &'static str| {
        notify
            .failed_requests
            .get_or_create(&crate::notify::TargetLabels { target })
            .get()
    };
    let gauge = |family: &prometheus_client::metrics::family::Family<
        _,
        prometheus_client::metrics::gauge::Gauge,
    >,
                 target: &'static str| {
        family
            .get_or_create(&crate::notify::TargetLabels { target })
            .get()
    };
    let last = |target| {
        Some(gauge(&notify.last_success, target))
            .filter(|t| *t > 0)
            .map(time)
    };
    Deliveries {
        indexnow_submitted_urls: notify.submitted_urls.get(),
        indexnow_dropped_urls: notify.dropped_urls.get(),
        indexnow_failed_requests: failed("indexnow"),
        indexnow_pending_urls: gauge(&notify.pending, "indexnow"),
        indexnow_last_success: last("indexnow"),
        pings: notify.pings.get(),
        ping_failed_requests: failed("ping"),
        pings_pending: gauge(&notify.pending, "ping"),
        ping_last_success: last("ping"),
    }
}

/// The verdict of `site`'s served robots.txt for `agent` fetching `url`: the path of `url` is
/// tested, and the answer says so when `url` names another host; a URL that is not http(s)
/// gets no verdict, only why.
pub fn robots_answer(site: &Site, url: &str, agent: &str) -> RobotsAnswer {
    let tested = match tested_url(url, site.base().host()) {
        Ok(tested) => tested,
        Err(refused) => {
            return RobotsAnswer {
                url: url.to_string(),
                agent: agent.to_string(),
                allowed: false,
                decided_by: String::new(),
                tested_path: None,
                note: None,
                refused: Some(refused.to_string()),
            }
        }
    };
    let body = site.first().snapshot().robots.body.clone();
    let text = String::from_utf8_lossy(&body);
    let verdict = RobotsTxt::parse(&text).map(|robots| robots.evaluate(agent, &tested.path));
    let (allowed, decided_by) = match verdict {
        Ok(Verdict {
            allowed,
            decided_by: Some(rule),
        }) => (allowed, rule.to_string()),
        Ok(Verdict { allowed, .. }) => (allowed, "no rule matched".to_string()),
        Err(e) => (true, format!("robots.txt does not parse: {e}")),
    };
    RobotsAnswer {
        url: url.to_string(),
        agent: agent.to_string(),
        allowed,
        decided_by,
        tested_path: Some(tested.path),
        note: tested.note,
        refused: None,
    }
}

/// The crawler names the tester offers, with a full User-Agent each would send.
pub fn known_agents() -> Vec<&'static str> {
    Crawler::ALL
        .iter()
        .filter(|c| **c != Crawler::Other)
        .map(|c| c.as_str())
        .collect()
}

fn readiness(readiness: Readiness) -> &'static str {
    match readiness {
        Readiness::FirstSweep => "first sweep under way",
        Readiness::Verifying => "serving stored files, verifying them",
        Readiness::Current => "current",
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

fn time(unix: i64) -> String {
    DateTime::<Utc>::from_timestamp(unix, 0)
        .map(|t| t.to_rfc3339())
        .unwrap_or_default()
}
