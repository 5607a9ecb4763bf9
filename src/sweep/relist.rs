//! What a view-fed group stopped listing. A view has no triggers to note a deleted row, so
//! while IndexNow is on the URLs each such group lists are kept by id (`sitemapd_listed`).
//! After a sweep, the id ranges it re-measured are read again and compared with what was
//! listed there: the URL of a row that left the view, is now skipped, or has another loc, was
//! removed.

use futures::TryStreamExt;

use crate::site::{Group, Layout};
use crate::sitemap::{Fingerprint, Namespaces};
use crate::store::{IdRange, StoreError};

/// How the listed URLs of one range change.
#[derive(Debug, Default, PartialEq, Eq)]
struct Relisting {
    /// URLs listed before that are listed no more.
    removed: Vec<String>,
    /// Ids whose listed URL is forgotten (removed, or replaced by `note`).
    forget: Vec<i64>,
    /// Ids with the URL they list now, where it is new.
    note: Vec<(i64, String)>,
}

/// The id ranges of the measured `files` of `before` whose bytes are not what `after` serves
/// there (a file whose bytes are the same lists the same URLs).
pub fn rewritten_ranges(before: &Layout, after: &Layout, files: &[usize]) -> Vec<IdRange> {
    files
        .iter()
        .map(|&i| (i, before.range(i)))
        .filter(|&(i, range)| {
            let now: Vec<Fingerprint> = after
                .overlapping(range)
                .into_iter()
                .map(|j| after.pages()[j].fingerprint)
                .collect();
            now != [before.pages()[i].fingerprint]
        })
        .map(|(_, range)| range)
        .collect()
}

/// Brings `sitemapd_listed` up to date for `ranges` of `group` and returns the URLs that are
/// no longer listed there.
pub async fn removed_in(group: &Group, ranges: &[IdRange]) -> Result<Vec<String>, StoreError> {
    let mut removed = Vec::new();
    for &range in ranges {
        let before = group.store.listed(&group.key, range).await?;
        let now = listed_now(group, range).await?;
        let relisting = compare(before, now);
        group
            .store
            .relist(&group.key, &relisting.forget, &relisting.note)
            .await?;
        removed.extend(relisting.removed);
    }
    Ok(removed)
}

/// The URLs the group lists with ids in `range`, in id order.
async fn listed_now(group: &Group, range: IdRange) -> Result<Vec<(i64, String)>, StoreError> {
    let mut listed = Vec::new();
    let mut rows = group.rows(range, Namespaces::NONE, None);
    while let Some(raw) = rows.try_next().await? {
        if let Ok(entry) = group.rules.accept(&raw) {
            listed.push((raw.id, entry.loc.as_str().to_string()));
        }
    }
    Ok(listed)
}

/// Compares what was listed with what is listed now (both in id order).
fn compare(before: Vec<(i64, String)>, now: Vec<(i64, String)>) -> Relisting {
    let mut relisting = Relisting::default();
    let mut before = before.into_iter().peekable();
    let mut now = now.into_iter().peekable();
    loop {
        let order = match (before.peek(), now.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((old, _)), Some((new, _))) => old.cmp(new),
        };
        match order {
            std::cmp::Ordering::Less => {
                let (id, loc) = before.next().expect("peeked");
                relisting.forget.push(id);
                relisting.removed.push(loc);
            }
            std::cmp::Ordering::Greater => relisting.note.push(now.next().expect("peeked")),
            std::cmp::Ordering::Equal => {
                let (id, old) = before.next().expect("peeked");
                let (_, new) = now.next().expect("peeked");
                if old != new {
                    relisting.forget.push(id);
                    relisting.note.push((id, new));
                    relisting.removed.push(old);
                }
            }
        }
    }
    relisting
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[(i64, &str)]) -> Vec<(i64, String)> {
        rows.iter()
            .map(|(id, loc)| (*id, loc.to_string()))
            .collect()
    }

    #[test]
    fn a_row_gone_or_moved_is_removed_and_a_new_one_noted() {
        let before = rows(&[(1, "/a"), (2, "/b"), (3, "/c"), (5, "/e")]);
        let now = rows(&[(1, "/a"), (3, "/c2"), (4, "/d"), (5, "/e")]);
        assert_eq!(
            compare(before, now),
            Relisting {
                removed: vec!["/b".into(), "/c".into()],
                forget: vec![2, 3],
                note: rows(&[(3, "/c2"), (4, "/d")]),
            }
        );
    }

    #[test]
    fn nothing_listed_before_notes_everything_and_removes_nothing() {
        let now = rows(&[(1, "/a"), (2, "/b")]);
        let relisting = compare(Vec::new(), now.clone());
        assert!(relisting.removed.is_empty() && relisting.forget.is_empty());
        assert_eq!(relisting.note, now);
        assert_eq!(compare(now.clone(), now), Relisting::default());
    }
}
