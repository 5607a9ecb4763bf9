//! What the ledger tells the status page: every crawler that came (its requests, verdicts,
//! files fetched and behind, requests per day), and every registry crawler by purpose with its
//! last read of robots.txt.

use serde::Serialize;

use super::files::ChangeTimes;
use super::{DayCount, Ledger};
use crate::crawlers::{CrawlerId, Purpose, Registry};
use crate::summary::time;
use crate::verify::{VerifiedBy, Verifier};

/// Files a crawler is behind on, listed by name (the count is always whole).
const BEHIND_LISTED: usize = 20;

/// One crawler that came since the start (or "other").
#[derive(Debug, Serialize)]
pub struct CrawlerStatus {
    /// The registry crawler's name, or `other` for User-Agents the registry does not know.
    pub crawler: String,
    /// Its purpose (`search`, `ai-training`, ...); `None` for `other`.
    pub purpose: Option<&'static str>,
    /// The purpose for people ("AI training"), or "Not in the registry" for `other`.
    pub purpose_label: &'static str,
    pub operator: String,
    pub last_fetch: Option<String>,
    pub ok: u64,
    pub not_modified: u64,
    /// Requests (any status) whose signature or client address proved the crawler.
    pub verified: u64,
    /// Requests no method decided: a crawler without one, a lookup that failed, or
    /// verification off.
    pub unverified: u64,
    /// Requests every method the crawler offered refuted: its address, or its signature.
    pub forged: u64,
    /// Of the verified requests, how many each method proved: its Web Bot Auth signature, a
    /// published address range, reverse DNS.
    pub verified_by: VerifiedBy,
    /// Whether the registry gives the crawler a verification method.
    pub verifiable: bool,
    /// Its latest read of robots.txt (a 200 or 304), any site.
    pub robots_txt_last_fetch: Option<String>,
    pub files_fetched: usize,
    pub files_behind: usize,
    /// `site file` of up to 20 files changed since this crawler last fetched them.
    pub behind: Vec<String>,
    /// Requests per day, the last two weeks, oldest first.
    pub per_day: Vec<DayCount>,
}

/// The registry's crawlers of one purpose.
#[derive(Debug, Serialize)]
pub struct PurposeStatus {
    /// `search`, `ai-training`, ...
    pub purpose: &'static str,
    /// For people: "AI training".
    pub label: &'static str,
    pub crawlers: Vec<KnownCrawler>,
    /// How many of them read robots.txt since the start.
    pub read_robots_txt: usize,
}

/// One registry crawler, whether it came or not.
#[derive(Debug, Serialize)]
pub struct KnownCrawler {
    pub name: String,
    pub operator: String,
    /// The robots.txt product tokens it obeys.
    pub tokens: Vec<String>,
    /// Whether it fetches at all (Google-Extended and Applebot-Extended are tokens only).
    pub fetches: bool,
    /// Whether its operator documents how to verify it (reverse DNS or published ranges).
    pub verifiable: bool,
    /// Its latest read of robots.txt since the start; `None`: it cannot know the site's policy
    /// from this process's robots.txt.
    pub robots_txt_last_fetch: Option<String>,
}

/// The crawlers that came since the start, by purpose then registry order, and "other" last:
/// what each did, how `verifier` proved its requests, and the files `changed` since it fetched
/// them.
pub fn crawlers(ledger: &Ledger, verifier: &Verifier, changed: &ChangeTimes) -> Vec<CrawlerStatus> {
    let registry = ledger.registry();
    let mut activities = ledger.snapshot();
    // By purpose, then registry order (the snapshot's, kept by the stable sort); other last.
    activities.sort_by_key(|a| {
        a.crawler
            .map_or(Purpose::ALL.len(), |id| purpose_rank(registry, id))
    });
    activities
        .into_iter()
        .map(|activity| {
            let behind =
                ledger.files_changed_since(activity.crawler, |site, file| changed.get(site, file));
            let info = activity.crawler.map(|id| registry.get(id));
            CrawlerStatus {
                crawler: activity.name,
                purpose: info.map(|c| c.purpose.as_str()),
                purpose_label: info.map_or("Not in the registry", |c| c.purpose.label()),
                operator: info.map(|c| c.operator.clone()).unwrap_or_default(),
                last_fetch: activity.last_fetch.map(time),
                ok: activity.ok,
                not_modified: activity.not_modified,
                verified: activity.verified,
                unverified: activity.unverified,
                forged: activity.forged,
                verified_by: activity
                    .crawler
                    .map(|id| verifier.verified_by(id))
                    .unwrap_or_default(),
                verifiable: info.is_some_and(|c| c.is_verifiable()),
                robots_txt_last_fetch: activity.robots_txt.map(time),
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

fn purpose_rank(registry: &Registry, id: CrawlerId) -> usize {
    let purpose = registry.get(id).purpose;
    Purpose::ALL
        .iter()
        .position(|p| *p == purpose)
        .unwrap_or_default()
}

/// Every registry crawler by purpose, with its last read of robots.txt.
pub fn purposes(ledger: &Ledger) -> Vec<PurposeStatus> {
    let registry = ledger.registry();
    Purpose::ALL
        .into_iter()
        .map(|purpose| {
            let crawlers: Vec<KnownCrawler> = registry
                .by_purpose(purpose)
                .map(|id| {
                    let info = registry.get(id);
                    KnownCrawler {
                        name: info.name.clone(),
                        operator: info.operator.clone(),
                        tokens: info.tokens.clone(),
                        fetches: info.fetches(),
                        verifiable: info.is_verifiable(),
                        robots_txt_last_fetch: ledger.robots_txt_fetch(Some(id)).map(time),
                    }
                })
                .collect();
            PurposeStatus {
                purpose: purpose.as_str(),
                label: purpose.label(),
                read_robots_txt: crawlers
                    .iter()
                    .filter(|c| c.robots_txt_last_fetch.is_some())
                    .count(),
                crawlers,
            }
        })
        .collect()
}
