//! Compaction: neighbouring files that together fit in one are merged, so a group that prunes
//! old pages, or whose `SITEMAP_PAGE_SIZE` grew, does not keep half-empty files forever.
//!
//! Files merge when their URLs together stay within the page size and their bytes within the
//! file limit. After a compaction no two neighbours fit in one file, so any two neighbours hold
//! more than one file's worth: a group never has more than ⌈2 × entries / page size⌉ + 1 files
//! (the same in bytes when long URLs make the byte limit bind). Merging is the mirror of a split:
//! a split leaves two parts that together overflow, so an ordinary insert, update or delete
//! still changes the bytes of the one file that holds its id, unless that file and a neighbour
//! now fit in one.
//!
//! The merged file keeps the number and first id of the lowest file of its run, and is measured
//! again (its bytes changed); the others leave the index.

use crate::site::{Layout, Page};
use crate::sitemap::MAX_FILE_BYTES;

/// Runs of neighbouring files (first and last index, at least two files) that fit in one file
/// of `page_size` URLs, taken greedily from the first file on.
pub fn mergeable_runs(layout: &Layout, page_size: usize) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let pages = layout.pages();
    let mut start = 0;
    while start < pages.len() {
        let (mut urls, mut bytes) = (pages[start].urls, pages[start].bytes);
        let mut end = start;
        while let Some(next) = pages.get(end + 1) {
            if !fits_together(urls, bytes, next, page_size) {
                break;
            }
            urls += next.urls;
            bytes += next.bytes;
            end += 1;
        }
        if end > start {
            runs.push((start, end));
        }
        start = end + 1;
    }
    runs
}

/// Whether `next` fits in one file with files holding `urls` and `bytes` so far. Bytes are
/// counted with every file's urlset frame, which leaves a little room.
fn fits_together(urls: usize, bytes: usize, next: &Page, page_size: usize) -> bool {
    urls + next.urls <= page_size && bytes + next.bytes <= MAX_FILE_BYTES
}

/// `layout` with each run merged into its first file, and the indexes of the merged files in
/// the result (to be measured again).
pub fn merge(layout: &Layout, runs: &[(usize, usize)]) -> (Layout, Vec<usize>) {
    let mut pages = Vec::with_capacity(layout.len());
    let mut merged = Vec::with_capacity(runs.len());
    let mut runs = runs.iter().peekable();
    let mut i = 0;
    while i < layout.len() {
        match runs.peek() {
            Some(&&(start, end)) if start == i => {
                merged.push(pages.len());
                pages.push(layout.pages()[start].clone());
                runs.next();
                i = end + 1;
            }
            _ => {
                pages.push(layout.pages()[i].clone());
                i += 1;
            }
        }
    }
    (Layout::new(pages), merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::test_layout;

    fn with_urls(urls: &[usize]) -> Layout {
        let firsts: Vec<(i64, i64)> = (0..urls.len() as i64).map(|i| (i + 1, i * 100)).collect();
        let mut layout = test_layout(&firsts);
        for (page, &n) in layout.pages_mut().iter_mut().zip(urls) {
            page.urls = n;
        }
        layout
    }

    #[test]
    fn neighbours_that_fit_in_one_file_merge_greedily() {
        let layout = with_urls(&[3, 3, 3, 9, 2, 2, 10]);
        assert_eq!(mergeable_runs(&layout, 10), vec![(0, 2), (4, 5)]);
        let (merged, at) = merge(&layout, &mergeable_runs(&layout, 10));
        let numbers = merged.page_numbers();
        assert_eq!(numbers, vec![1, 4, 5, 7]);
        assert_eq!(at, vec![0, 2]);
    }

    #[test]
    fn full_neighbours_stay_apart() {
        assert!(mergeable_runs(&with_urls(&[6, 5, 6, 5]), 10).is_empty());
        assert!(mergeable_runs(&with_urls(&[10]), 10).is_empty());
    }

    #[test]
    fn after_compaction_no_more_than_twice_the_files_the_entries_need_plus_one() {
        for urls in [
            vec![1; 40],
            vec![5, 6, 5, 6, 5, 6, 5],
            vec![10, 1, 10, 1, 10, 1],
            vec![0, 0, 7, 0, 4],
        ] {
            let layout = with_urls(&urls);
            let (merged, _) = merge(&layout, &mergeable_runs(&layout, 10));
            let mut counts: Vec<usize> = Vec::new();
            let mut i = 0;
            let pages = layout.pages();
            for page in merged.pages() {
                while pages[i].no != page.no {
                    i += 1;
                }
                let mut n = pages[i].urls;
                let mut j = i + 1;
                while j < pages.len() && merged.find(pages[j].no).is_none() {
                    n += pages[j].urls;
                    j += 1;
                }
                counts.push(n);
            }
            let entries: usize = urls.iter().sum();
            assert!(
                merged.len() <= (2 * entries).div_ceil(10) + 1,
                "{urls:?} → {counts:?}"
            );
            assert!(counts.iter().all(|&n| n <= 10), "{counts:?}");
        }
    }
}
