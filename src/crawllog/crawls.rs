//! The rows of `sitemapd_crawls` a batch makes: one per crawler and listed entry, with its
//! fetches, last status and freshness (how long after a lastmod the crawler first got the page).

use std::collections::BTreeMap;

use super::receiver::Seen;
use crate::crawlers::Registry;
use crate::store::CrawlRow;

/// A crawler's fetch of a listed entry.
#[derive(Clone, Copy)]
pub(super) struct EntryFetch<'a> {
    pub seen: &'a Seen,
    pub entry: i64,
    pub lastmod: Option<i64>,
}

/// A batch's fetches of one group's entries, one row per crawler and entry (as if nothing
/// were stored: the database joins them with the stored rows), in key order.
pub(super) fn merge(registry: &Registry, updates: &[EntryFetch]) -> Vec<CrawlRow> {
    let mut ordered: Vec<&EntryFetch> = updates.iter().collect();
    ordered.sort_by_key(|fetch| fetch.seen.fetch.at);
    // Keyed by crawler name, then entry: the order rows are locked in.
    let mut rows: BTreeMap<(&str, i64), CrawlRow> = BTreeMap::new();
    for fetch in ordered {
        let name = registry.get(fetch.seen.crawler).name.as_str();
        let row = rows
            .entry((name, fetch.entry))
            .or_insert_with(|| new_row(name, fetch.entry));
        apply(row, fetch.seen, fetch.lastmod);
    }
    rows.into_values().collect()
}

fn new_row(crawler: &str, entry_id: i64) -> CrawlRow {
    CrawlRow {
        crawler: crawler.to_string(),
        entry_id,
        path: String::new(),
        fetches: 0,
        last_fetch: i64::MIN,
        last_status: 0,
        lastmod: None,
        fresh_at: None,
        freshness: None,
    }
}

/// One fetch of an entry whose lastmod is `lastmod` now. A new lastmod starts a new wait for
/// the first fetch after it; only a fetch that got the page (status below 400) ends it.
fn apply(row: &mut CrawlRow, seen: &Seen, lastmod: Option<i64>) {
    let at = seen.fetch.at;
    row.fetches += 1;
    if at >= row.last_fetch {
        row.last_fetch = at;
        row.last_status = i64::from(seen.fetch.status);
        row.path = seen.fetch.target.clone();
    }
    let Some(lastmod) = lastmod else {
        return;
    };
    if row.lastmod != Some(lastmod) {
        row.lastmod = Some(lastmod);
        row.fresh_at = None;
        row.freshness = None;
    }
    let got_it = seen.fetch.status < 400;
    let earlier = row.fresh_at.is_none_or(|first| at < first);
    if got_it && at >= lastmod && earlier {
        row.fresh_at = Some(at);
        row.freshness = Some(at - lastmod);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawllog::line::Fetch;

    fn seen(at: i64, status: u16) -> Seen {
        Seen {
            fetch: Fetch {
                at,
                client: "66.249.66.1".parse().unwrap(),
                host: "example.com".into(),
                method: "GET".into(),
                target: "/a".into(),
                status,
                user_agent: "Googlebot".into(),
            },
            crawler: crate::crawlers::CrawlerId(0),
            trust: crate::crawlers::Trust::Verified,
        }
    }

    #[test]
    fn the_first_successful_fetch_after_a_lastmod_measures_freshness() {
        let mut row = new_row("Googlebot", 1);
        apply(&mut row, &seen(100, 200), Some(150));
        assert_eq!((row.fresh_at, row.last_fetch), (None, 100));
        apply(&mut row, &seen(200, 500), Some(150));
        assert_eq!(row.fresh_at, None);
        apply(&mut row, &seen(300, 304), Some(150));
        assert_eq!((row.fresh_at, row.freshness), (Some(300), Some(150)));
        apply(&mut row, &seen(400, 200), Some(150));
        assert_eq!(row.fresh_at, Some(300));
        apply(&mut row, &seen(500, 200), Some(450));
        assert_eq!(
            (row.fresh_at, row.freshness, row.fetches),
            (Some(500), Some(50), 5)
        );
    }
}
