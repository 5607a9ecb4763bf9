//! The feeds a sweep reads: the `SITEMAP_FEED_SIZE` most recently modified entries that would be
//! served, written as Atom and RSS.
//!
//! The built-in table is read along its `lastmod` index. A view has no such index: asking it for
//! its newest rows builds all of it and sorts it. Its feeds are read file by file instead, each
//! statement bounded by a file's id range: every file on the first sweep, then only the files a
//! sweep re-measured (every changed row lies in one), merged with the rows kept from before.
//! A reserve of rows beyond the feed's size is kept, so that rows leaving the feed are replaced
//! without reading every file again.

use std::sync::Arc;

use bytes::Bytes;

use crate::feed::{FeedEntry, FeedSite};
use crate::site::{FeedBodies, Feeds, Group, Layout};
use crate::sitemap::{RawEntry, SeenUrls, UrlKey};
use crate::store::{IdRange, StoreError};

/// Most reads for the feeds' rows per sweep: 2N + 50 rows, then four times as many each round
/// (N = 100: at most 16,000 rows). PostgreSQL and MySQL read them along the `lastmod` index;
/// SQLite, whose lastmod may be text in any form, sorts (an index on its time expression would
/// make an INSERT of the text `now` fail).
const FEED_READ_ROUNDS: usize = 4;

/// What a sweep re-measured: the files it read of the layout it started from, and the layout
/// they were measured into (whose files each hold at most a file's rows).
pub struct Reread<'a> {
    pub before: &'a Layout,
    pub files: &'a [usize],
    /// Ids read again by patches of files (see [`super::patch`]).
    pub patched: &'a [IdRange],
    pub after: &'a Layout,
}

/// The feeds' bodies as the database holds them now; `None` when the group has no feeds.
/// `known`: the feeds the snapshot serves, read before `measured` re-read some files.
pub async fn read(
    group: &Group,
    known: Option<&Feeds>,
    reread: Reread<'_>,
) -> Result<Option<FeedBodies>, StoreError> {
    if group.feed_size == 0 {
        return Ok(None);
    }
    let (entries, candidates) = match group.store.reads_built_in() {
        true => (recent_entries(group).await?, Vec::new()),
        false => view_entries(group, known, reread).await?,
    };
    let feed = FeedSite {
        base: &group.base,
        files: &group.files,
        license: group.license.as_ref().map(|(license, _)| license.as_ref()),
    };
    Ok(Some(FeedBodies {
        atom: Bytes::from(feed.atom(&entries)),
        rss: Bytes::from(feed.rss(&entries)),
        entries: Arc::new(entries),
        candidates: Arc::new(candidates),
    }))
}

/// The `feed_size` most recently modified rows that would be served. Rows that are skipped
/// (out of scope, undated, …) do not count: the read widens, four times over each round, until
/// enough are found, the table has no more, or [`FEED_READ_ROUNDS`] rounds were read.
async fn recent_entries(group: &Group) -> Result<Vec<FeedEntry>, StoreError> {
    let mut limit = reserve(group);
    let mut entries = Vec::new();
    for _ in 0..FEED_READ_ROUNDS {
        let rows = group.store.recent(limit).await?;
        let exhausted = (rows.len() as i64) < limit;
        entries = newest(group, &rows);
        if entries.len() == group.feed_size || exhausted {
            break;
        }
        limit = limit.saturating_mul(4);
    }
    Ok(entries)
}

/// Rows read for a feed of N: 2N + 50.
fn reserve(group: &Group) -> i64 {
    group.feed_size as i64 * 2 + 50
}

/// A view's feed entries and the rows they were chosen from: the rows kept from `known` that no
/// re-measured file holds, and the newest rows of each re-measured file; every file (as now
/// laid out: no statement reads more than a file's rows) when nothing is known, or when what is
/// kept no longer fills the feed.
async fn view_entries(
    group: &Group,
    known: Option<&Feeds>,
    reread: Reread<'_>,
) -> Result<(Vec<FeedEntry>, Vec<RawEntry>), StoreError> {
    let every_file: Vec<IdRange> = reread
        .after
        .indexes()
        .map(|i| reread.after.range(i))
        .collect();
    if let Some(known) = known {
        // The re-measured rows, as the files now hold them: a file that grew by a large append
        // is read in the files it was split into.
        let scanned: Vec<IdRange> = reread
            .files
            .iter()
            .map(|&i| reread.before.range(i))
            .collect();
        let read: Vec<IdRange> = every_file
            .iter()
            .filter(|file| scanned.iter().any(|range| range.overlaps(file)))
            .chain(reread.patched)
            .copied()
            .collect();
        let kept = known
            .candidates
            .iter()
            .filter(|row| !read.iter().any(|range| range.contains(row.id)))
            .cloned();
        let rows = newest_rows(group, kept.collect(), &read).await?;
        let entries = newest(group, &rows);
        // A full reserve that no longer fills the feed may have left rows unread behind it.
        let short =
            entries.len() < group.feed_size && known.candidates.len() as i64 >= reserve(group);
        if !short {
            return Ok((entries, rows));
        }
    }
    let rows = newest_rows(group, Vec::new(), &every_file).await?;
    Ok((newest(group, &rows), rows))
}

/// The newest [`reserve`] rows of `rows` and of the files of `ranges`, newest first.
async fn newest_rows(
    group: &Group,
    mut rows: Vec<RawEntry>,
    ranges: &[IdRange],
) -> Result<Vec<RawEntry>, StoreError> {
    let limit = reserve(group);
    for &range in ranges {
        rows.extend(group.store.recent_in(range, limit).await?);
        sort_newest_first(&mut rows);
        rows.truncate(limit as usize);
    }
    sort_newest_first(&mut rows);
    Ok(rows)
}

/// Newest lastmod first, ties by the highest id first, as the databases order them.
fn sort_newest_first(rows: &mut [RawEntry]) {
    rows.sort_by_key(|row| std::cmp::Reverse((row.lastmod, row.id)));
}

/// The feed's entries among `rows` (newest first): the first `feed_size` that would be served,
/// each URL once (a UNION may list `/a` and `https://host/a`).
fn newest(group: &Group, rows: &[RawEntry]) -> Vec<FeedEntry> {
    let mut seen = SeenUrls::default();
    rows.iter()
        .filter_map(|raw| {
            let entry = group.rules.accept(raw).ok()?;
            let lastmod = entry.lastmod?;
            seen.first_time(UrlKey::of(&entry.loc))
                .then(|| FeedEntry::new(entry.loc, lastmod.at()))
                .flatten()
        })
        .take(group.feed_size)
        .collect()
}
