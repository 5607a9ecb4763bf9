//! `sitemapd check`: every entry of every group read as the service reads it; what is served
//! and what is left out, by reason, with examples; exit 1 when anything is left out.

use std::collections::BTreeMap;

use futures::stream::BoxStream;
use futures::TryStreamExt;

use super::progress::Progress;
use crate::app::{self, StartError};
use crate::config::{Config, SiteConfig};
use crate::site::Group;
use crate::sitemap::audit::{repeat_example, GroupAudit};
use crate::sitemap::{EntryRules, Namespaces, RawEntry, SkipCounts, SkipReason};
use crate::store::{IdRange, Store, StoreError};

/// Rows shown per skip reason by `check`.
const EXAMPLES_PER_REASON: usize = 5;

/// Counts entries served and skipped by reason, with examples, for every site; exit 1 when
/// anything is wrong.
/// With `public`, also compares the robots.txt the public gets with the one sitemapd serves.
pub async fn check(config: &Config, public: bool) -> Result<i32, StartError> {
    let mut worst = 0;
    for site in &config.sites {
        if config.sites.len() > 1 {
            println!("site {}", site.base_url.as_str());
        }
        worst = worst.max(check_site(config, site).await?);
        if public {
            worst = worst.max(check_public_robots(config, site).await);
        }
    }
    Ok(worst)
}

/// Fetches the site's public robots.txt as a crawler would and says what differs from
/// sitemapd's; 1 when it differs or cannot be fetched.
async fn check_public_robots(config: &Config, site: &SiteConfig) -> i32 {
    use crate::public_robots::{public_url, PublicCheck};
    let Ok(served) = app::served_robots(config, site) else {
        return 1;
    };
    let url = public_url(site.base_url.url());
    let check = PublicCheck::run(&url, &served.body).await;
    if let Some(error) = &check.error {
        println!("public robots.txt {url}: cannot fetch it: {error}");
        return 1;
    }
    if check.same() {
        println!("public robots.txt {url}: the file sitemapd serves");
        return 0;
    }
    println!("public robots.txt {url}: DIFFERS from the file sitemapd serves:");
    for difference in &check.differences {
        println!("  {}: {}", difference.kind, difference.message);
    }
    1
}

async fn check_site(config: &Config, site: &SiteConfig) -> Result<i32, StartError> {
    let robots = match app::served_robots(config, site) {
        Ok(robots) => robots,
        Err(e) => {
            println!("robots.txt: INVALID: {e}");
            return Ok(1);
        }
    };
    println!("robots.txt: valid");
    for warning in &robots.warnings {
        println!("warning: {warning}");
    }
    let store = Store::connect(&config.database())
        .await?
        .for_site(site.source_database_url.as_ref())
        .await?;
    let mut worst = 0;
    for group_config in &site.groups {
        if let Some(name) = &group_config.name {
            println!("group {name} ({})", group_config.source);
        }
        // The group as the service reads it: the same rows, rules and news window.
        let settings = app::group_settings(config, site, group_config, &robots);
        let now = chrono::Utc::now().timestamp();
        let reader = store.for_source(&group_config.source);
        worst = worst.max(check_watched(&reader, &group_config.source).await);
        let (group, _) = Group::new(settings, reader, now);
        let rows = group.rows(IdRange::ALL, Namespaces::ALL, None);
        worst = worst.max(check_group(rows, &group.rules).await?);
        if let Some(llms) = &group.llms {
            check_llms_titles(&group, llms).await?;
        }
    }
    Ok(worst)
}

/// Says when tables behind a watched source have lost the triggers that log their changes
/// (exit 1: its changes would show only at the hourly check); nothing for a source not watched.
async fn check_watched(store: &Store, source: &str) -> i32 {
    match store.unwatched_tables(source).await {
        Ok(lost) if lost.is_empty() => 0,
        Ok(lost) => {
            println!(
                "warning: {source}: no longer watched: {} lost the triggers that log their \
                 changes; run `sitemapd migrate` to put them back",
                lost.join(", ")
            );
            1
        }
        Err(e) => {
            println!(
                "warning: {source}: cannot tell whether its tables are watched: {}",
                crate::error::Chain(&e)
            );
            0
        }
    }
}

/// Counts one group's entries served and skipped by reason, with examples; exit 1 when any
/// row, tag or extension row is left out, and when a URL comes twice (the files list it once
/// each; twice in the group is one URL submitted twice, also across files).
async fn check_group(
    mut rows: BoxStream<'_, Result<RawEntry, StoreError>>,
    rules: &EntryRules,
) -> Result<i32, StartError> {
    let mut served = 0u64;
    let mut tally = Tally::default();
    let mut audit = GroupAudit::default();
    let mut progress = Progress::new("checked");
    while let Some(raw) = rows.try_next().await? {
        match rules.accept(&raw) {
            Ok(entry) => {
                if let Err(first) = audit.add(&entry) {
                    tally.note(SkipReason::Duplicate, 1, || {
                        repeat_example(raw.id, &entry, first)
                    });
                    continue;
                }
                served += 1;
                for (reason, n) in entry.dropped.iter().filter(|(_, n)| *n > 0) {
                    tally.note(reason, n, || match (reason, raw.lastmod) {
                        (SkipReason::FutureLastmod, Some(at)) => {
                            format!("entry id {}: lastmod {} left out", raw.id, at.to_rfc3339())
                        }
                        _ => match entry.dropped.examples_of(reason).next() {
                            Some(example) => example.to_string(),
                            None => format!("entry id {}: {n} row(s) left out", raw.id),
                        },
                    });
                }
            }
            Err(reason) => tally.note(reason, 1, || {
                format!(
                    "id {}: {:?}",
                    raw.id_text(),
                    raw.loc.as_deref().unwrap_or("NULL")
                )
            }),
        }
        progress.tick(served + tally.skipped.total());
    }
    println!("entries served: {served}");
    tally.print();
    // Warnings: engines distrust these, but nothing is left out for them.
    for warning in audit.warnings() {
        println!("warning: {}", warning.message);
        for example in &warning.examples {
            println!("    {example}");
        }
    }
    Ok(if tally.skipped.total() > 0 { 1 } else { 0 })
}

/// Says how many of the entries llms.txt lists for the group have no title (they show their
/// URL's path instead); a warning, not a failure.
async fn check_llms_titles(group: &Group, llms: &crate::llms::GroupLlms) -> Result<(), StartError> {
    if !llms.listed {
        return Ok(());
    }
    let links = crate::llms::read_links(&group.store, &group.rules, llms).await?;
    let untitled: Vec<&crate::llms::Link> = links
        .iter()
        .filter(|l| l.title.as_deref().is_none_or(|t| t.trim().is_empty()))
        .collect();
    println!(
        "llms.txt: {} entries in section {:?}, {} without a title",
        links.len(),
        llms.title,
        untitled.len()
    );
    if !untitled.is_empty() {
        println!(
            "warning: llms.txt entries without a title (shown by their path; add a title \
             column to the source)"
        );
        for link in untitled.iter().take(EXAMPLES_PER_REASON) {
            println!("    {}", link.url);
        }
    }
    Ok(())
}

/// What `check` left out, by reason, with the first few examples of each.
#[derive(Default)]
struct Tally {
    skipped: SkipCounts,
    examples: BTreeMap<SkipReason, Vec<String>>,
}

impl Tally {
    fn note(&mut self, reason: SkipReason, n: u64, example: impl FnOnce() -> String) {
        self.skipped.add_n(reason, n);
        let list = self.examples.entry(reason).or_default();
        if list.len() < EXAMPLES_PER_REASON {
            list.push(example());
        }
    }

    fn print(&self) {
        let (entries, parts): (Vec<_>, Vec<_>) = self
            .skipped
            .iter()
            .partition(|(reason, _)| reason.drops_entry());
        let sum = |list: &[(SkipReason, u64)]| list.iter().map(|(_, n)| n).sum::<u64>();
        println!("entries skipped: {}", sum(&entries));
        println!("extension rows and tags skipped: {}", sum(&parts));
        for (reason, count) in self.skipped.iter().filter(|(_, n)| *n > 0) {
            println!("  {}: {count}", reason.as_str());
            for example in self.examples.get(&reason).into_iter().flatten() {
                println!("    {example}");
            }
        }
    }
}
