//! What the status page shows, as data: per site and group, the files (URLs, bytes, share of
//! the protocol's limits, last change), rows left out by reason, the audit's findings; what
//! each crawler fetched and is behind on; IndexNow and ping deliveries. Read from the served
//! snapshots, the crawler ledger and the metrics: nothing here touches the database.

use chrono::Utc;
use serde::Serialize;

use super::finding::time;
pub use super::finding::Finding;
use super::verification::{verification, Verification};
use crate::crawlers::Purpose;
use crate::files::page_name;
use crate::ledger::files::ChangeTimes;
use crate::ledger::summary::{crawlers, purposes};
pub use crate::ledger::summary::{CrawlerStatus, KnownCrawler, PurposeStatus};
pub use crate::notify::summary::Deliveries;
use crate::site::{Group, Readiness, Site};
use crate::sitemap::MAX_URLS_PER_FILE;
use crate::sitemap::{SkipReason, MAX_FILE_BYTES, MAX_SITEMAPS_PER_INDEX as MAX_FILES_PER_INDEX};
use crate::state::App;

/// A file past this share of its bytes, or an index past this share of the files it may list, is
/// reported. A file full of URLs is not: that is how every file of a large site looks.
const NEAR_LIMIT: f64 = 0.9;

#[derive(Debug, Serialize)]
pub struct Status {
    pub generated_at: String,
    pub version: &'static str,
    pub sites: Vec<SiteStatus>,
    /// The crawlers that came since the start, by purpose then registry order, and "other" last.
    pub crawlers: Vec<CrawlerStatus>,
    /// Every registry crawler, by purpose: who read robots.txt, and the tester's choices.
    pub purposes: Vec<PurposeStatus>,
    /// How current the crawler registry is: the built-in file's date or CRAWLERS_FILE's time.
    pub registry: crate::crawlers::Dated,
    /// The User-Agents of requests no registry crawler made, seen most first (bounded).
    pub unknown_agents: Vec<crate::ledger::unknown::UnknownAgent>,
    /// The most requests any crawler made on one day of the last two weeks (the chart's scale).
    pub busiest_day: u64,
    /// Crawler verification: whether it is on, the published range lists, forged traffic.
    pub verification: Verification,
    pub deliveries: Deliveries,
    /// Crawl log (ACCESS_LOG_ADDR): what came in and what was lost where; `None` when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_log: Option<crate::crawllog::metrics::Intake>,
}

#[derive(Debug, Serialize)]
pub struct SiteStatus {
    pub base_url: String,
    pub index_url: String,
    pub readiness: &'static str,
    /// The crawler policy: per purpose its rule and crawlers, and whether each may fetch `/`.
    pub policy: Option<crate::robots::PolicySummary>,
    /// Which replica keeps the site's files current (holds its lease), as far as this one knows.
    pub kept_current_by: Option<crate::site::Keeper>,
    /// The database the entries are read from, when it is not the state's (its role and lag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_database: Option<crate::store::SourceStatus>,
    pub groups: Vec<GroupStatus>,
    /// Where the site's llms.txt is served; `None` when it serves none.
    pub llms_url: Option<String>,
    /// Crawl log (ACCESS_LOG_ADDR): paths search crawlers fetched that no sitemap lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_sitemaps: Option<Vec<crate::crawllog::report::OutsidePath>>,
    /// Crawl log: fetches robots.txt disallowed, per crawler.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robots_violations: Option<Vec<crate::crawllog::report::Violations>>,
    /// Crawl log: the same fetches by crawlers that ignore robots.txt by design (a person's
    /// fetch, `obeys_robots = false`): exempt, never violations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robots_exempt: Option<Vec<crate::crawllog::report::Violations>>,
    /// `ROBOTS_PUBLIC_CHECK=on`: the last comparison of the public robots.txt with sitemapd's
    /// (`None` when off or before the first one ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_robots: Option<crate::public_robots::PublicCheck>,
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
    /// Crawl log: per search crawler, coverage, waiting for recrawl, freshness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crawl_log:
        Option<std::collections::BTreeMap<String, crate::crawllog::report::CrawlerCrawls>>,
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

impl Status {
    pub fn of(app: &App) -> Self {
        let changed = ChangeTimes::of(&app.sites);
        let crawlers = crawlers(&app.ledger, &app.verifier, &changed);
        let purposes = purposes(&app.ledger);
        let busiest_day = crawlers
            .iter()
            .flat_map(|c| c.per_day.iter().map(|d| d.requests))
            .max()
            .unwrap_or_default();
        let mut sites: Vec<SiteStatus> = app
            .sites
            .iter()
            .enumerate()
            .map(|(i, site)| site_status(site, app.policies.get(i).cloned()))
            .collect();
        if let Some(log) = &app.crawl_log {
            attach_crawl_log(&mut sites, &log.report());
        }
        if let Some(watch) = &app.public_robots {
            for (i, site) in sites.iter_mut().enumerate() {
                site.public_robots = watch.last(i);
            }
        }
        let verification = verification(&app.verifier, forged_findings(&crawlers));
        Status {
            generated_at: Utc::now().to_rfc3339(),
            version: env!("CARGO_PKG_VERSION"),
            sites,
            crawlers,
            purposes,
            registry: app.ledger.registry().dated().clone(),
            unknown_agents: app.ledger.unknown_agents(),
            busiest_day,
            verification,
            deliveries: crate::notify::summary::deliveries(&app.metrics.notify),
            access_log: app
                .crawl_log
                .as_ref()
                .map(|_| app.metrics.crawl_log.intake()),
        }
    }
}

fn site_status(site: &Site, policy: Option<crate::robots::PolicySummary>) -> SiteStatus {
    let mut groups: Vec<GroupStatus> = site.groups.iter().map(|g| group_status(g)).collect();
    let files: usize = groups.iter().map(|g| g.files.len()).sum();
    if let (Some(finding), Some(first)) = (index_near_limit(files), groups.first_mut()) {
        first.findings.push(finding);
    }
    SiteStatus {
        base_url: site.base().as_str().to_string(),
        index_url: site.files().file_url(crate::files::INDEX),
        readiness: readiness(site.readiness()),
        kept_current_by: site.keeper(),
        source_database: site.first().store.source_status(),
        policy,
        groups,
        llms_url: site.first().llms.as_ref().and_then(|_| {
            let url = site.base().url().join(crate::files::LLMS_PATHS[0]).ok()?;
            Some(url.to_string())
        }),
        outside_sitemaps: None,
        robots_violations: None,
        robots_exempt: None,
        public_robots: None,
    }
}

/// The crawl log's last report, in each site and group it covers.
fn attach_crawl_log(sites: &mut [SiteStatus], report: &crate::crawllog::report::CrawlReport) {
    for (status, crawls) in sites.iter_mut().zip(&report.sites) {
        status.outside_sitemaps = Some(crawls.outside_sitemaps.clone());
        status.robots_violations = Some(crawls.robots_violations.clone());
        status.robots_exempt = Some(crawls.robots_exempt.clone());
        for (group, crawls) in status.groups.iter_mut().zip(&crawls.groups) {
            group.crawl_log = Some(crawls.crawl_log.clone());
        }
    }
}

/// A file past 90 % of the bytes a file may hold: longer URLs or more extensions split it soon.
fn near_byte_limit(file: &FileStatus) -> Option<Finding> {
    (file.bytes_percent >= NEAR_LIMIT * 100.0).then(|| Finding {
        level: "warning",
        message: format!(
            "{} holds {:.0} % of the 50 MiB a file may hold",
            file.name, file.bytes_percent
        ),
    })
}

/// An index past 90 % of the 50,000 files it may list: the site outgrows one index.
fn index_near_limit(files: usize) -> Option<Finding> {
    (files as f64 >= NEAR_LIMIT * MAX_FILES_PER_INDEX as f64).then(|| Finding {
        level: "warning",
        message: format!(
            "the index lists {files} files, {:.0} % of the {MAX_FILES_PER_INDEX} it may list",
            percent(files, MAX_FILES_PER_INDEX)
        ),
    })
}

fn group_status(group: &Group) -> GroupStatus {
    let snapshot = group.snapshot();
    let layout = &snapshot.layout;
    let files: Vec<FileStatus> = layout
        .pages()
        .iter()
        .map(|page| {
            let name = page_name(group.name.as_deref(), page.no);
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
    findings.extend(files.iter().filter_map(near_byte_limit));
    let unwatched = group.unwatched();
    if !unwatched.is_empty() {
        findings.push(Finding {
            level: "warning",
            message: format!(
                "no longer watched: {} lost the triggers that log their changes (a table made \
                 again, or a view that now reads another), and sitemapd could not put them back: \
                 changes there show only at the hourly check. Run `sitemapd migrate` as a user \
                 with the TRIGGER privilege on them",
                unwatched.join(", ")
            ),
        });
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
        crawl_log: None,
    }
}

fn readiness(readiness: Readiness) -> &'static str {
    match readiness {
        Readiness::FirstSweep => "first sweep under way",
        Readiness::Verifying => "serving stored files, verifying them",
        Readiness::Current => "current",
    }
}

/// A finding for each search crawler whose name forged requests claimed.
fn forged_findings(crawlers: &[CrawlerStatus]) -> Vec<Finding> {
    crawlers
        .iter()
        .filter(|c| c.forged > 0 && c.purpose == Some(Purpose::Search.as_str()))
        .map(|c| Finding {
            level: "warning",
            message: format!(
                "{} forged request{} claimed to be {}: their addresses are not {}'s (those requests are not counted as its fetches)",
                c.forged,
                if c.forged == 1 { "" } else { "s" },
                c.crawler,
                if c.operator.is_empty() { "its operator" } else { c.operator.as_str() },
            ),
        })
        .collect()
}

fn percent(part: usize, whole: usize) -> f64 {
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(urls: usize, bytes: usize) -> FileStatus {
        FileStatus {
            name: "sitemap-1.xml.gz".into(),
            url: String::new(),
            urls,
            bytes,
            urls_percent: percent(urls, MAX_URLS_PER_FILE),
            bytes_percent: percent(bytes, MAX_FILE_BYTES),
            changed_at: String::new(),
        }
    }

    #[test]
    fn a_file_full_of_urls_is_not_a_finding() {
        assert!(near_byte_limit(&file(MAX_URLS_PER_FILE, 4_000_000)).is_none());
    }

    #[test]
    fn a_file_past_ninety_percent_of_its_bytes_is_a_finding() {
        let finding = near_byte_limit(&file(20_000, MAX_FILE_BYTES / 10 * 9 + 1)).unwrap();
        assert!(
            finding.message.contains("% of the 50 MiB"),
            "{}",
            finding.message
        );
    }

    #[test]
    fn an_index_past_ninety_percent_of_its_files_is_a_finding() {
        assert!(index_near_limit(44_999).is_none());
        assert!(index_near_limit(45_000).is_some());
    }
}
