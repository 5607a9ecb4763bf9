//! Patching a file by blocks: when a change log names a few keys, the blocks of ids holding
//! them (see [`crate::sitemap::blocks`]) are read again and put in place of their old selves,
//! and the file's fingerprint is worked out from its blocks. A change then costs a read of a
//! thousand ids or so, not of the file's fifty thousand rows.
//!
//! A file is patched only where that gives exactly what a read of the whole file would: its
//! blocks are known (it was measured by this process), it had no row left out, the blocks read
//! leave none out and list the same URLs as before (an edit: a new lastmod, an image; not a
//! URL added, renamed or removed, which could equal one in another block), and the file stays
//! within its limits. Any other file is read whole.

use std::collections::BTreeSet;

use futures::TryStreamExt;

use super::measure::{Part, ScannedPage};
use crate::site::{Group, Layout};
use crate::sitemap::MAX_FILE_BYTES;
use crate::sitemap::{blocks, Block, Namespaces, PageBuilder, SeenUrls, SkipCounts, UrlKey};
use crate::store::{IdRange, StoreError};

/// Most blocks one file's patch reads; past that, the file is read whole.
const MOST_BLOCKS: usize = 16;

/// A file patched: what it became, and the ids read again to make it.
#[derive(Debug)]
pub struct Patched {
    pub scanned: ScannedPage,
    pub read: Vec<IdRange>,
    /// Blocks read.
    pub blocks: usize,
}

/// Reads again the blocks of file `index` that `keys` touch and puts them in place; `None`
/// when the file must be read whole.
pub async fn patch(
    group: &Group,
    layout: &Layout,
    index: usize,
    keys: &[IdRange],
) -> Result<Option<Patched>, StoreError> {
    let page = &layout.pages()[index];
    let Some(old) = &page.blocks else {
        return Ok(None);
    };
    if page.skipped.total() > 0 || page.skipped.future_due().is_some() {
        return Ok(None);
    }
    let range = layout.range(index);
    let Some(touched) = touched_blocks(range, keys) else {
        return Ok(None);
    };
    let mut read = Vec::new();
    let mut fresh = Vec::new();
    for (first, last) in runs(&touched) {
        let (lo, hi) = Block::ids(first, last);
        let ids = IdRange {
            first: lo.max(range.first),
            last: hi.min(range.last),
        };
        let Some(blocks) = read_blocks(group, ids).await? else {
            return Ok(None);
        };
        if !same_urls(old, &blocks, (first, last)) {
            return Ok(None);
        }
        fresh.extend(blocks);
        read.push(ids);
    }
    let mut blocks: Vec<Block> = old
        .iter()
        .filter(|b| !touched.contains(&b.key))
        .copied()
        .chain(fresh)
        .collect();
    blocks.sort_by_key(|b| b.key);
    let digest = blocks::digest_of(&group.style, None, &blocks);
    if digest.urls > group.page_size || digest.bytes > MAX_FILE_BYTES {
        return Ok(None);
    }
    let part = Part {
        first: page.first_id,
        digest,
        blocks: blocks.into(),
    };
    Ok(Some(Patched {
        scanned: ScannedPage {
            index,
            parts: vec![part],
            skipped: SkipCounts::default(),
        },
        read,
        blocks: touched.len(),
    }))
}

/// The keys of the blocks of `range` that `keys` touch; `None` when there are too many to
/// patch.
fn touched_blocks(range: IdRange, keys: &[IdRange]) -> Option<BTreeSet<i64>> {
    let mut touched = BTreeSet::new();
    for key in keys.iter().filter(|key| key.overlaps(&range)) {
        let first = Block::key_of(key.first.max(range.first));
        let last = Block::key_of(key.last.min(range.last));
        if last - first >= MOST_BLOCKS as i64 {
            return None;
        }
        touched.extend(first..=last);
        if touched.len() > MOST_BLOCKS {
            return None;
        }
    }
    Some(touched)
}

/// Whether blocks `first..=last` read again list the URLs they listed before (their lastmods
/// and other tags may differ): only then can no URL of theirs equal one of another block of the
/// file, so a URL added, renamed or removed has the file read whole.
fn same_urls(old: &[Block], fresh: &[Block], (first, last): (i64, i64)) -> bool {
    let sums = |blocks: &[Block]| -> Vec<(i64, u64)> {
        blocks
            .iter()
            .filter(|b| (first..=last).contains(&b.key))
            .map(|b| (b.key, b.urls_sum))
            .collect()
    };
    sums(old) == sums(fresh)
}

/// Neighbouring block keys as `(first, last)` runs, each read with one statement.
fn runs(keys: &BTreeSet<i64>) -> Vec<(i64, i64)> {
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for &key in keys {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == key => *last = key,
            _ => runs.push((key, key)),
        }
    }
    runs
}

/// The blocks the rows of `ids` make; `None` when a row is left out or a URL comes twice,
/// which only a read of the whole file can place.
async fn read_blocks(group: &Group, ids: IdRange) -> Result<Option<Vec<Block>>, StoreError> {
    let mut page = PageBuilder::measuring(&group.style, usize::MAX);
    let mut seen = SeenUrls::default();
    let mut element = Vec::with_capacity(512);
    let mut rows = group.rows(ids, Namespaces::ALL, None);
    while let Some(raw) = rows.try_next().await? {
        let Ok(entry) = group.rules.write(&raw, &mut element, Namespaces::ALL) else {
            return Ok(None);
        };
        let url = UrlKey::of(&entry.loc);
        if entry.dropped.total() > 0
            || entry.dropped.future_due().is_some()
            || !seen.first_time(url)
        {
            return Ok(None);
        }
        page.add(raw.id, url, &element, entry.namespaces());
    }
    Ok(Some(page.finish_blocks().1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_touch_the_blocks_that_hold_them_within_the_file() {
        let file = IdRange {
            first: 1000,
            last: 5000,
        };
        let keys = [
            IdRange { first: 1, last: 1 },
            IdRange {
                first: 1500,
                last: 1500,
            },
            IdRange {
                first: 4999,
                last: 9000,
            },
        ];
        let touched = touched_blocks(file, &keys).unwrap();
        assert_eq!(touched.iter().copied().collect::<Vec<_>>(), [1, 4]);
        assert_eq!(runs(&touched), [(1, 1), (4, 4)]);
        let wide = [IdRange {
            first: 0,
            last: 5000,
        }];
        assert_eq!(
            touched_blocks(
                IdRange {
                    first: 0,
                    last: 1 << 20
                },
                &wide
            )
            .map(|t| t.len()),
            Some(5)
        );
        let wider = [IdRange {
            first: 0,
            last: 1 << 20,
        }];
        assert!(touched_blocks(
            IdRange {
                first: 0,
                last: 1 << 20
            },
            &wider
        )
        .is_none());
    }

    #[test]
    fn neighbouring_blocks_are_read_together() {
        let keys: BTreeSet<i64> = [3, 4, 5, 9].into_iter().collect();
        assert_eq!(runs(&keys), [(3, 5), (9, 9)]);
    }
}
