//! Telling the world the sitemaps changed: the ping webhook gets the index URL, IndexNow the URLs
//! of entries modified since the last submission, of entries that left the built-in table or a
//! view (see [`super::relist`]), and of entries robots.txt leaves out since its rules changed.
//! Failures are logged, never fatal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use chrono::Utc;
use futures::TryStreamExt;

use crate::notify::{HostSet, Notifier};
use crate::site::{Group, Layout};
use crate::sitemap::{Loc, Namespaces};
use crate::store::{IdRange, StoreError, SubmittedThrough, BUILTIN_SOURCE};

/// Entries read per query when changed URLs are gathered for IndexNow.
const SUBMIT_BATCH: i64 = 10_000;
/// Most batches one sweep submits; the rest wait for the next sweep.
const SUBMIT_BATCHES_PER_SWEEP: usize = 10;

/// Announces that `group`'s index changed.
pub async fn index_changed(group: &Group, notifier: &Notifier) {
    let _ = notifier.ping(&group.files.file_url(crate::files::INDEX));
    // A news group's rows carry no lastmod to submit by; its articles are entries of the
    // site's other groups too, and are submitted from there.
    let submits = group.news.is_none();
    let hosts = notifier.host_set(&group.base);
    if hosts.is_none() && group.source == BUILTIN_SOURCE {
        // Nobody to tell here: what left the table is kept only for the sites that read it.
        let now = Utc::now().timestamp();
        if let Err(e) = group.store.forget_removed_read_by_all(now).await {
            tracing::debug!(error = %crate::error::Chain(&e), "could not clear the removed URLs");
        }
    }
    if let Some(hosts) = hosts.filter(|_| submits) {
        if let Err(e) = submit_modified_entries(group, notifier, &hosts).await {
            tracing::warn!(error = %crate::error::Chain(&e), "could not read the entries to submit to IndexNow; the next change retries");
        }
        if group.source == BUILTIN_SOURCE {
            if let Err(e) = submit_removed_urls(group, notifier, &hosts).await {
                tracing::warn!(error = %crate::error::Chain(&e), "could not read the removed URLs to submit to IndexNow; the next change retries");
            }
        }
    }
}

/// Submits entries whose lastmod moved past what was submitted before (up to now: a lastmod in
/// the future waits for its time). Progress is stored per group and advanced with a
/// compare-and-set, so among replicas exactly one submits each batch. The first time, what
/// already exists is not news: progress starts at now.
async fn submit_modified_entries(
    group: &Group,
    notifier: &Notifier,
    hosts: &HostSet,
) -> Result<(), StoreError> {
    let now = Utc::now();
    let store = &group.store;
    let Some(mut from) = store.load_submitted(&group.key).await? else {
        let start = SubmittedThrough {
            lastmod_us: now.timestamp_micros(),
            id: i64::MAX,
        };
        store.advance_submitted(&group.key, None, start).await?;
        return Ok(());
    };
    for _ in 0..SUBMIT_BATCHES_PER_SWEEP {
        let modified = store.modified_after(from, now, SUBMIT_BATCH).await?;
        let (rows, Some(to)) = (modified.entries, modified.through) else {
            break;
        };
        if !store.advance_submitted(&group.key, Some(from), to).await? {
            break; // Another replica took this batch.
        }
        let urls = rows
            .iter()
            .filter_map(|raw| group.rules.accept(raw).ok())
            .map(|entry| entry.loc.as_str().to_string());
        let _ = notifier.submit(hosts, urls);
        if (rows.len() as i64) < SUBMIT_BATCH {
            break;
        }
        from = to;
    }
    Ok(())
}

/// Notes `group` as a reader of the URLs that leave the built-in table, before its first sweep,
/// so no other site sharing the table clears them unread. Only where IndexNow is on for it.
pub async fn register_removed_reader(group: &Group, notifier: &Notifier) {
    if group.source != BUILTIN_SOURCE || group.news.is_some() {
        return;
    }
    if notifier.host_set(&group.base).is_none() {
        return;
    }
    let now = Utc::now().timestamp();
    if let Err(e) = group.store.register_removed_reader(&group.key, now).await {
        tracing::warn!(error = %crate::error::Chain(&e), "could not note this site as a reader of removed URLs");
    }
}

/// Submits the URLs that left the built-in table (a deleted row, a changed loc) under this
/// group's base URL: IndexNow takes removed URLs too, and the engine then finds them gone. Each
/// site reads every removed URL from where it stopped (several sites may share the table), and
/// moves on with a compare-and-set, so among replicas one submits each batch; rows every site
/// has read are cleared.
async fn submit_removed_urls(
    group: &Group,
    notifier: &Notifier,
    hosts: &HostSet,
) -> Result<(), StoreError> {
    let store = &group.store;
    let now = Utc::now().timestamp();
    store.register_removed_reader(&group.key, now).await?;
    for _ in 0..SUBMIT_BATCHES_PER_SWEEP {
        let Some(from) = store.removed_read_through(&group.key).await? else {
            break;
        };
        let removed = store.removed_after(from, SUBMIT_BATCH).await?;
        let Some(&(to, _)) = removed.last() else {
            break;
        };
        if !store
            .advance_removed_read(&group.key, from, to, now)
            .await?
        {
            break; // Another replica took this batch.
        }
        let urls = removed
            .iter()
            .filter_map(|(_, loc)| Loc::parse(loc, &group.base).ok())
            .map(|loc| loc.as_str().to_string());
        let _ = notifier.submit(hosts, urls);
        if (removed.len() as i64) < SUBMIT_BATCH {
            break;
        }
    }
    store.forget_removed_read_by_all(now).await
}

/// Submits the URLs a view-fed group no longer lists in the files a sweep re-measured (`files`
/// of the layout it started from) and rewrote (see [`super::relist`]). Until `listed_known`,
/// the group's listed URLs may be missing: when none are stored, every file's range is read
/// to note them (and nothing is submitted). That first reading of every row runs in the
/// background, so the sweep that installed the files ends (and they are served) without
/// waiting for it.
pub async fn left_view(
    group: &Arc<Group>,
    notifier: &Arc<Notifier>,
    (before, files, patched): (&Layout, &[usize], &[IdRange]),
    listed_known: &Arc<AtomicBool>,
) {
    if group.source == BUILTIN_SOURCE || group.news.is_some() {
        return; // The built-in table's triggers note what leaves it; news is never submitted.
    }
    let Some(hosts) = notifier.host_set(&group.base) else {
        return;
    };
    let after = group.snapshot();
    let mut measured = super::relist::rewritten_ranges(before, &after.layout, files);
    measured.extend_from_slice(patched);
    if !listed_known.load(Ordering::Relaxed) {
        match group.store.any_listed(&group.key).await {
            Ok(true) => {}
            Ok(false) => {
                let every_file = after
                    .layout
                    .indexes()
                    .map(|i| after.layout.range(i))
                    .collect();
                note_listed_in_background(group.clone(), every_file, listed_known.clone());
                return;
            }
            Err(e) => {
                tracing::warn!(error = %crate::error::Chain(&e), "could not read the URLs the view listed; its removed URLs are not submitted");
                return;
            }
        }
    }
    match super::relist::removed_in(group, &measured).await {
        Ok(removed) => {
            listed_known.store(true, Ordering::Relaxed);
            let _ = notifier.submit(&hosts, removed);
        }
        Err(e) => {
            tracing::warn!(error = %crate::error::Chain(&e), "could not compare the view with the URLs it listed; its removed URLs are not submitted");
        }
    }
}

/// Notes every URL the group lists, reading `ranges` (every file) once, in the background.
/// Later sweeps compare only what they rewrite meanwhile (a row not noted yet is noted then);
/// if the reading fails, the next sweep starts it again.
fn note_listed_in_background(group: Arc<Group>, ranges: Vec<IdRange>, known: Arc<AtomicBool>) {
    known.store(true, Ordering::Relaxed);
    tokio::spawn(async move {
        if let Err(e) = super::relist::removed_in(&group, &ranges).await {
            known.store(false, Ordering::Relaxed);
            tracing::warn!(error = %crate::error::Chain(&e), "could not note the URLs the view lists; trying again at the next change");
        }
    });
}

/// With IndexNow off, forgets what a view-fed group listed: nobody would be told what leaves
/// it, and nothing notes it meanwhile (see [`super::relist`]).
pub async fn forget_listed_unless_told(group: &Group, notifier: &Notifier) {
    if notifier.host_set(&group.base).is_some() || group.source == BUILTIN_SOURCE {
        return;
    }
    if let Err(e) = group.store.forget_all_listed(&group.key).await {
        tracing::debug!(error = %crate::error::Chain(&e), "could not clear the listed URLs");
    }
}

/// Announces that robots.txt's rules (or the agents they are checked for) changed: the entries
/// they leave out now are submitted, as removed URLs are, so engines recrawl them and find them
/// disallowed. Entries it left out before are among them; the rules that were in force then
/// are not kept, and the engines take a URL twice. At most what [`SUBMIT_BATCHES_PER_SWEEP`]
/// batches hold.
pub async fn robots_rules_changed(group: &Group, notifier: &Notifier) {
    let Some(hosts) = notifier.host_set(&group.base) else {
        return;
    };
    if group.news.is_some() {
        return; // Its articles are entries of the site's other groups, submitted from there.
    }
    match disallowed_urls(group, SUBMIT_BATCH as usize * SUBMIT_BATCHES_PER_SWEEP).await {
        Ok(urls) => {
            tracing::info!(group = %group.key, urls = urls.len(), "robots.txt rules changed; submitting the entries they leave out");
            let _ = notifier.submit(&hosts, urls);
        }
        Err(e) => {
            tracing::warn!(error = %crate::error::Chain(&e), "could not read the entries robots.txt leaves out; they are not submitted to IndexNow");
        }
    }
}

/// The URLs of up to `most` of the group's entries robots.txt leaves out, in id order.
async fn disallowed_urls(group: &Group, most: usize) -> Result<Vec<String>, StoreError> {
    let mut urls = Vec::new();
    let mut rows = group.rows(IdRange::ALL, Namespaces::NONE, None);
    while let Some(raw) = rows.try_next().await? {
        let Ok(loc) = Loc::parse(raw.loc.as_deref().unwrap_or(""), &group.base) else {
            continue;
        };
        if group.rules.disallowed_by_robots(&loc) {
            urls.push(loc.as_str().to_string());
            if urls.len() == most {
                break;
            }
        }
    }
    Ok(urls)
}
