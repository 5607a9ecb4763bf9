//! The feeds a sweep reads: the `SITEMAP_FEED_SIZE` most recently modified entries that would be
//! served, written as Atom and RSS.

use bytes::Bytes;

use crate::feed::{FeedEntry, FeedSite};
use crate::site::{FeedBodies, Group};
use crate::sitemap::{SeenUrls, UrlKey};
use crate::store::StoreError;

/// Most reads for the feeds' rows per sweep: 2N + 50 rows, then four times as many each round
/// (N = 100: at most 16,000 rows). PostgreSQL and MySQL read them along the `lastmod` index;
/// SQLite, whose lastmod may be text in any form, sorts (an index on its time expression would
/// make an INSERT of the text `now` fail).
const FEED_READ_ROUNDS: usize = 4;

/// The feeds' bodies as the database holds them now; `None` when the group has no feeds.
pub async fn read(group: &Group) -> Result<Option<FeedBodies>, StoreError> {
    if group.feed_size == 0 {
        return Ok(None);
    }
    let entries = recent_entries(group).await?;
    let feed = FeedSite {
        base: &group.base,
        files: &group.files,
    };
    Ok(Some(FeedBodies {
        atom: Bytes::from(feed.atom(&entries)),
        rss: Bytes::from(feed.rss(&entries)),
        entries: std::sync::Arc::new(entries),
    }))
}

/// The `feed_size` most recently modified rows that would be served. Rows that are skipped
/// (out of scope, undated, …) do not count: the read widens, four times over each round, until
/// enough are found, the table has no more, or [`FEED_READ_ROUNDS`] rounds were read.
async fn recent_entries(group: &Group) -> Result<Vec<FeedEntry>, StoreError> {
    let mut limit = group.feed_size as i64 * 2 + 50;
    let mut entries = Vec::new();
    for _ in 0..FEED_READ_ROUNDS {
        let rows = group.store.recent(limit).await?;
        let exhausted = (rows.len() as i64) < limit;
        // A URL twice (a UNION, `/a` and `https://host/a`) is in the feed once.
        let mut seen = SeenUrls::default();
        entries = rows
            .iter()
            .filter_map(|raw| {
                let entry = group.rules.accept(raw).ok()?;
                let lastmod = entry.lastmod?;
                seen.first_time(UrlKey::of(&entry.loc))
                    .then(|| FeedEntry::new(entry.loc, lastmod.at()))
                    .flatten()
            })
            .take(group.feed_size)
            .collect();
        if entries.len() == group.feed_size || exhausted {
            break;
        }
        limit = limit.saturating_mul(4);
    }
    Ok(entries)
}
