//! The writer: crawlers' requests in batches (up to [`BATCH_LINES`] or [`BATCH_WAIT`]) become
//! rows of `sitemapd_crawls` (fetches of listed URLs by search crawlers), and counts of paths
//! outside the sitemaps and of robots.txt violations in `sitemapd_crawl_paths`.
//!
//! A request is matched to its site by the logged host, to a listed entry by looking its URL
//! up in each group's source (`loc IN (…)`: absolute or a path, as requested and
//! percent-decoded; once a group's source is seen to spell its locs one way, that way first
//! and the other only for the requests not found), and checked against the robots.txt the site
//! serves now. Per batch and group: one or two lookups and one upsert that joins the batch's
//! fetches with the stored ones in the database (no read first); one upsert of paths per site.
//! Rows go to the database in key order, so concurrent batches lock them in the same order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::crawls::{merge, EntryFetch};
use super::metrics::CrawlLogMetrics;
use super::paths::{PathCounts, PathKind};
use super::receiver::Seen;
use crate::crawlers::Registry;
use crate::files;
use crate::robots::RobotsTxt;
use crate::site::Site;
use crate::store::StoreError;

/// Most lines written in one batch.
pub const BATCH_LINES: usize = 5000;
/// Longest a line waits for its batch to fill.
pub const BATCH_WAIT: Duration = Duration::from_secs(1);
/// Most paths kept per site and kind (outside the sitemaps, disallowed); the least fetched
/// go first.
pub const PATHS_PER_SITE: i64 = 10_000;
/// How often the paths tables are trimmed to [`PATHS_PER_SITE`].
const TRIM_EVERY: Duration = Duration::from_secs(60);
/// Writers taking batches from the queue: while one writes a batch, the next looks up its
/// entries (on another connection, on the other core).
pub const WRITERS: usize = 2;

/// The queue the writers share: each takes a whole batch at a time.
pub type Queue = Arc<tokio::sync::Mutex<mpsc::Receiver<Seen>>>;

/// What the writer needs of the service.
pub struct Writer {
    pub sites: Vec<Arc<Site>>,
    /// Names the crawlers: their names, tokens and purposes.
    pub registry: Arc<Registry>,
    /// Whether client addresses are checked (`CRAWLER_VERIFY`): then only verified fetches
    /// count as a crawler's own.
    pub verifying: bool,
    pub metrics: CrawlLogMetrics,
    /// Whether the requests' Host chooses the site (several sites); one site takes every line.
    pub routed_by_host: bool,
    robots: Vec<Option<(Bytes, Arc<RobotsTxt>)>>,
    spellings: Arc<Spellings>,
}

/// How each site's groups spell their locs, learnt by whichever writer first finds one.
#[derive(Debug, Default)]
pub struct Spellings(std::sync::Mutex<HashMap<GroupAt, Spelling>>);

/// A group by position: its site's among the service's sites, its own among the site's groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct GroupAt {
    site: usize,
    group: usize,
}

impl Spellings {
    /// Site `site`'s groups, in order: how each spells its locs, if known.
    fn of_site(&self, site: usize, groups: usize) -> Vec<Option<Spelling>> {
        let known = crate::sync::lock(&self.0);
        (0..groups)
            .map(|group| known.get(&GroupAt { site, group }).copied())
            .collect()
    }

    fn learn(&self, site: usize, group: usize, spelling: Spelling) {
        let mut known = crate::sync::lock(&self.0);
        known.entry(GroupAt { site, group }).or_insert(spelling);
    }
}

impl Writer {
    pub fn new(
        sites: Vec<Arc<Site>>,
        registry: Arc<Registry>,
        verifying: bool,
        metrics: CrawlLogMetrics,
        routed_by_host: bool,
        spellings: Arc<Spellings>,
    ) -> Self {
        let robots = vec![None; sites.len()];
        Self {
            sites,
            registry,
            verifying,
            metrics,
            routed_by_host,
            robots,
            spellings,
        }
    }

    /// Writes batches until the queue closes; `trims`: this writer also trims the paths.
    pub async fn run(mut self, queue: Queue, trims: bool) {
        let mut batch = Vec::with_capacity(BATCH_LINES);
        let mut trimmed = Instant::now();
        loop {
            if !take_batch(&queue, &mut batch).await {
                return;
            }
            match self.write(&batch).await {
                Ok(()) => {
                    self.metrics.written.inc_by(batch.len() as u64);
                }
                Err(e) => {
                    self.metrics.write_failures.inc();
                    tracing::warn!(error = %crate::error::Chain(&e), lines = batch.len(), "could not write crawler fetches");
                }
            }
            batch.clear();
            if trims && trimmed.elapsed() >= TRIM_EVERY {
                trimmed = Instant::now();
                self.trim().await;
            }
        }
    }

    async fn trim(&self) {
        for site in &self.sites {
            for kind in PathKind::ALL {
                if let Err(e) = site
                    .first()
                    .store
                    .trim_paths(&site.key, kind.as_str(), PATHS_PER_SITE)
                    .await
                {
                    tracing::warn!(error = %crate::error::Chain(&e), "could not trim the crawl log's paths");
                }
            }
        }
    }

    /// Writes one batch, site by site.
    pub async fn write(&mut self, batch: &[Seen]) -> Result<(), StoreError> {
        let mut by_site: BTreeMap<usize, Vec<&Seen>> = BTreeMap::new();
        for seen in batch {
            if let Some(site) = self.site_of(&seen.fetch.host) {
                by_site.entry(site).or_default().push(seen);
            }
        }
        for (site, seen) in by_site {
            self.write_site(site, &seen).await?;
        }
        Ok(())
    }

    /// The site whose host the request named; with one site (not routed by host), that site.
    fn site_of(&self, host: &str) -> Option<usize> {
        if !self.routed_by_host {
            return Some(0);
        }
        self.sites.iter().position(|site| {
            let base = site.base();
            base.is_named_by(host) || strip_port(host).eq_ignore_ascii_case(base.host())
        })
    }

    async fn write_site(&mut self, index: usize, seen: &[&Seen]) -> Result<(), StoreError> {
        let site = self.sites[index].clone();
        let robots = self.robots_of(index);
        let registry = self.registry.clone();
        let mut paths = PathCounts::new(&registry);
        let mut counted = Vec::new();
        for seen in seen {
            let crawler = registry.get(seen.crawler);
            let verdict = robots.evaluate(crawler.token(), &seen.fetch.target);
            if !verdict.allowed {
                let rule = verdict.decided_by.map(|r| r.to_string());
                paths.add(PathKind::Disallowed, seen, rule);
            }
            if crawler.crawls_for_search() && seen.trust.counts_as_own(self.verifying) {
                counted.push(*seen);
            }
        }
        let mut targets: Vec<&str> = counted.iter().map(|s| &*s.fetch.target).collect();
        targets.sort_unstable();
        targets.dedup();
        let listed = Listed::find(&site, index, &self.spellings, &targets).await?;
        let mut updates: Vec<Vec<EntryFetch>> = vec![Vec::new(); site.groups.len()];
        for seen in &counted {
            match listed.of(&seen.fetch.target) {
                Some(hit) => updates[hit.group].push(EntryFetch {
                    seen,
                    entry: hit.entry,
                    lastmod: hit.lastmod,
                }),
                None if !is_own_file(&seen.fetch.target) => {
                    paths.add(PathKind::Outside, seen, None)
                }
                None => {}
            }
        }
        for (group, updates) in site.groups.iter().zip(updates) {
            if updates.is_empty() {
                continue;
            }
            let label = group.name.clone().unwrap_or_default();
            let rows = merge(&registry, &updates);
            group.store.add_crawls(&site.key, &label, &rows).await?;
        }
        let rows = paths.into_rows();
        if !rows.is_empty() {
            site.first().store.add_paths(&site.key, &rows).await?;
        }
        Ok(())
    }

    /// The robots.txt the site serves now, parsed once per change of its bytes.
    fn robots_of(&mut self, index: usize) -> Arc<RobotsTxt> {
        let body = self.sites[index].first().snapshot().robots.body.clone();
        if let Some((cached, parsed)) = &self.robots[index] {
            if *cached == body {
                return parsed.clone();
            }
        }
        let parsed = Arc::new(
            RobotsTxt::parse(&String::from_utf8_lossy(&body))
                .unwrap_or_else(|_| RobotsTxt::parse("").expect("an empty robots.txt parses")),
        );
        self.robots[index] = Some((body, parsed.clone()));
        parsed
    }
}

/// Fills `batch` from the queue: waits for a first line, then up to [`BATCH_LINES`] or
/// [`BATCH_WAIT`]; false when the queue has closed.
async fn take_batch(queue: &Queue, batch: &mut Vec<Seen>) -> bool {
    let mut queue = queue.lock().await;
    if queue.recv_many(batch, BATCH_LINES).await == 0 {
        return false;
    }
    let deadline = tokio::time::Instant::now() + BATCH_WAIT;
    while batch.len() < BATCH_LINES {
        let room = BATCH_LINES - batch.len();
        match tokio::time::timeout_at(deadline, queue.recv_many(batch, room)).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    true
}

/// `host:port` → `host` (an IPv6 literal keeps its brackets).
fn strip_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']')) =>
        {
            name
        }
        _ => host,
    }
}

/// sitemapd's own files (robots.txt, sitemaps, feeds) are no pages: never "outside".
fn is_own_file(target: &str) -> bool {
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or_default();
    path == files::ROBOTS_PATH || path == files::LLMS_PATHS[0] || files::looks_like_a_sitemap(name)
}

/// How a source spells its locs: absolute URLs or paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    Absolute,
    Path,
}

impl Spelling {
    fn of(loc: &str) -> Self {
        if loc.starts_with('/') {
            Spelling::Path
        } else {
            Spelling::Absolute
        }
    }

    fn other(self) -> Self {
        match self {
            Spelling::Absolute => Spelling::Path,
            Spelling::Path => Spelling::Absolute,
        }
    }
}

/// The listed entry a request names: (group, id, lastmod in unix seconds).
/// A listed entry a request names.
#[derive(Debug, Clone, Copy)]
struct Hit {
    /// The position of its group in the site.
    group: usize,
    /// Its id in the group's source.
    entry: i64,
    /// Its lastmod (unix seconds), when it has one.
    lastmod: Option<i64>,
}

/// The listed entries a batch's requests name.
struct Listed<'t> {
    /// request target → the entry it names (in the first group whose source lists it).
    by_target: HashMap<&'t str, Hit>,
}

impl<'t> Listed<'t> {
    /// Looks `targets` up in each group: in the spelling the group's source was seen to use
    /// (every spelling until one was found; `learnt` learns it), then the targets found in
    /// no group in the other spelling, so a source that mixes both still finds every entry.
    /// Each target's spellings are made once.
    async fn find(
        site: &Site,
        index: usize,
        learnt: &Spellings,
        targets: &[&'t str],
    ) -> Result<Self, StoreError> {
        let spelt: Vec<(&'t str, Vec<(Spelling, String)>)> = targets
            .iter()
            .map(|target| (*target, spellings(site, target)))
            .collect();
        let mut by_loc = HashMap::new();
        let known = learnt.of_site(index, site.groups.len());
        for (position, group) in site.groups.iter().enumerate() {
            let locs = locs_of(spelt.iter().map(|(_, locs)| locs), known[position]);
            let found = look_up(&mut by_loc, position, group, &locs).await?;
            if let Some(spelling) = found.filter(|_| known[position].is_none()) {
                learnt.learn(index, position, spelling);
            }
        }
        let missing: Vec<&Vec<(Spelling, String)>> = spelt
            .iter()
            .map(|(_, locs)| locs)
            .filter(|locs| hit(&by_loc, locs).is_none())
            .collect();
        for (position, group) in site.groups.iter().enumerate() {
            if let Some(spelling) = known[position] {
                let locs = locs_of(missing.iter().copied(), Some(spelling.other()));
                look_up(&mut by_loc, position, group, &locs).await?;
            }
        }
        let by_target = spelt
            .iter()
            .filter_map(|(target, locs)| Some((*target, hit(&by_loc, locs)?)))
            .collect();
        Ok(Self { by_target })
    }

    fn of(&self, target: &str) -> Option<Hit> {
        self.by_target.get(target).copied()
    }
}

/// Looks `locs` up in `group`'s source into `by_loc` (loc as the source spells it → entry);
/// returns how the first loc found is spelt.
async fn look_up(
    by_loc: &mut HashMap<String, Hit>,
    position: usize,
    group: &crate::site::Group,
    locs: &[String],
) -> Result<Option<Spelling>, StoreError> {
    if locs.is_empty() {
        return Ok(None);
    }
    let mut spelt = None;
    for found in group.store.listed_by_loc(&group.source, locs).await? {
        spelt = spelt.or(Some(Spelling::of(&found.loc)));
        by_loc.entry(found.loc).or_insert(Hit {
            group: position,
            entry: found.id,
            lastmod: found.lastmod.map(|t| t.timestamp()),
        });
    }
    Ok(spelt)
}

/// The entry the first of a target's `locs` found names.
fn hit(by_loc: &HashMap<String, Hit>, locs: &[(Spelling, String)]) -> Option<Hit> {
    locs.iter().find_map(|(_, loc)| by_loc.get(loc).copied())
}

/// The locs to look targets up by, from each target's spellings: in `spelling`, or every
/// spelling.
fn locs_of<'a>(
    spelt: impl Iterator<Item = &'a Vec<(Spelling, String)>>,
    spelling: Option<Spelling>,
) -> Vec<String> {
    let mut locs: Vec<String> = spelt
        .flatten()
        .filter(|(s, _)| spelling.is_none_or(|wanted| *s == wanted))
        .map(|(_, loc)| loc.clone())
        .collect();
    locs.sort_unstable();
    locs.dedup();
    locs
}

/// The locs a listed entry for `target` may have: absolute or a path, as requested or
/// percent-decoded. Nothing outside the site's base path.
fn spellings(site: &Site, target: &str) -> Vec<(Spelling, String)> {
    let base = site.base();
    if !target.starts_with(base.path()) && target != base.path().trim_end_matches('/') {
        return Vec::new();
    }
    let origin = base
        .as_str()
        .strip_suffix(base.path())
        .unwrap_or(base.as_str())
        .to_string();
    let mut out = vec![
        (Spelling::Absolute, format!("{origin}{target}")),
        (Spelling::Path, target.to_string()),
    ];
    if target.contains('%') {
        if let Ok(decoded) = percent_encoding::percent_decode_str(target).decode_utf8() {
            if decoded != target {
                out.push((Spelling::Absolute, format!("{origin}{decoded}")));
                out.push((Spelling::Path, decoded.into_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_files_are_never_outside_the_sitemaps() {
        assert!(is_own_file("/robots.txt"));
        assert!(is_own_file("/sitemap-2.xml.gz"));
        assert!(is_own_file("/shop/sitemap_index.xml?x=1"));
        assert!(!is_own_file("/about"));
    }

    #[test]
    fn ports_are_stripped_from_hosts() {
        assert_eq!(strip_port("example.com:8080"), "example.com");
        assert_eq!(strip_port("example.com"), "example.com");
        assert_eq!(strip_port("[::1]:80"), "[::1]");
        // Caddy logs the Host header as sent.
        assert_eq!(strip_port("www.example.com:8080"), "www.example.com");
        assert_eq!(strip_port("www.example.com"), "www.example.com");
        assert_eq!(strip_port("[::1]:8080"), "[::1]");
        assert_eq!(strip_port("::1"), "::1");
    }
}
