//! Settling: dating what a sweep measured against what is stored. A file whose bytes did not
//! change keeps its stored time; a changed one gets now, but always after its stored time, so
//! `If-Modified-Since` can never hide a change. Pure: the store only compares and writes.

use crate::files::{FEED_ATOM, FEED_RSS, LLMS};
use crate::site::{
    FeedBodies, Group, Layout, INDEX_FILE, ROBOTS_FILE, ROBOTS_RULES_FILE, SETTINGS_FILE,
};
use crate::sitemap::Fingerprint;
use crate::store::{FileRecord, SavedState};

/// A file other than the sitemap pages whose validators are stored (robots.txt, feeds).
#[derive(Debug, Clone, Copy)]
pub struct WholeFile {
    pub name: &'static str,
    pub fingerprint: Fingerprint,
}

impl WholeFile {
    /// The whole files a sweep of `group` stores: robots.txt (`robots`), the settings and the
    /// robots rules the files were made under, the feeds and llms.txt where the group has them.
    pub fn of_group(
        group: &Group,
        robots: Fingerprint,
        feeds: Option<&FeedBodies>,
        llms: Option<Fingerprint>,
    ) -> Vec<Self> {
        let file = |name, fingerprint| Self { name, fingerprint };
        let mut files = vec![
            file(ROBOTS_FILE, robots),
            file(SETTINGS_FILE, group.settings.fingerprint),
            file(ROBOTS_RULES_FILE, group.robots_rules),
        ];
        if let Some(feeds) = feeds {
            files.push(file(FEED_ATOM, Fingerprint::of(&feeds.atom)));
            files.push(file(FEED_RSS, Fingerprint::of(&feeds.rss)));
        }
        files.extend(llms.map(|fingerprint| file(LLMS, fingerprint)));
        files
    }
}

/// What a sweep measured, before it is dated against what is stored.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The layout after the scan, its changed pages dated `now`.
    pub layout: Layout,
    pub whole_files: Vec<WholeFile>,
}

impl Proposal {
    /// The state to store: this proposal's pages and files dated against `stored`, and the
    /// index of the dated pages (whose lastmods are those times).
    pub fn settle(&self, group: &Group, stored: &SavedState, now: i64) -> SavedState {
        let SavedState {
            pages: stored_pages,
            files: stored_files,
        } = stored;
        let mut layout = self.layout.clone();
        for page in layout.pages_mut() {
            let before = stored_pages
                .iter()
                .find(|s| s.page_no == page.no)
                .map(|s| (s.fingerprint, s.changed_at));
            page.changed_at = settle_time(before, page.fingerprint, now);
        }
        let index = layout.index_document(group.publication());
        let file = |name: &str, fingerprint: Fingerprint| {
            let before = stored_files
                .iter()
                .find(|f| f.name == name)
                .map(|s| (s.fingerprint, s.changed_at));
            FileRecord {
                name: name.to_string(),
                fingerprint,
                changed_at: settle_time(before, fingerprint, now),
            }
        };
        let files = std::iter::once(file(INDEX_FILE, group.index_fingerprint(&index)))
            .chain(self.whole_files.iter().map(|f| file(f.name, f.fingerprint)))
            .collect();
        SavedState {
            pages: layout.to_records(),
            files,
        }
    }
}

/// Unchanged bytes keep their time; changed bytes get `now`, but always after the stored time.
fn settle_time(stored: Option<(Fingerprint, i64)>, fingerprint: Fingerprint, now: i64) -> i64 {
    match stored {
        Some((fp, at)) if fp == fingerprint => at,
        Some((_, at)) => now.max(at + 1),
        None => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_moves_forward_even_within_the_same_second() {
        let fp = Fingerprint(1);
        let other = Fingerprint(2);
        assert_eq!(settle_time(Some((fp, 50)), fp, 60), 50);
        assert_eq!(settle_time(Some((other, 60)), fp, 60), 61);
        assert_eq!(settle_time(Some((other, 10)), fp, 60), 60);
        assert_eq!(settle_time(None, fp, 60), 60);
    }
}
