//! A site's files as id ranges: which ids each sitemap file holds, its validators, and the
//! sitemap index that lists them.
//!
//! Files are id ranges with stored boundaries, like the leaves of a B-tree. A boundary never
//! moves because of rows elsewhere, so an insert, update or delete changes the bytes of the one
//! file whose range holds the id. How files are measured, split and merged is the write side's
//! ([`crate::sweep`]); this is only their shape, shared by both sides.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::sitemap::{
    Block, DocumentStyle, Fingerprint, Namespaces, PageBuilder, SkipCounts, MAX_SITEMAPS_PER_INDEX,
};
use crate::store::{IdRange, PageRecord};

use super::{Publication, Validators};

/// One sitemap file: its number in URLs, its id range and validators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// K in `sitemap-K.xml.gz`: stable for the life of the file, not its position.
    pub no: i64,
    pub first_id: i64,
    pub urls: usize,
    pub bytes: usize,
    pub fingerprint: Fingerprint,
    /// Unix seconds of the last change of the file's bytes.
    pub changed_at: i64,
    /// Extension namespaces its root declares: those its entries used when it was measured.
    pub namespaces: Namespaces,
    /// Rows in the range left out, by reason (known once the page has been scanned).
    pub skipped: SkipCounts,
    /// What the database said of the page's rows when they were measured, to tell whether they
    /// changed without reading them; `None` when not known.
    pub summary: Option<String>,
    /// The blocks the page was measured as (see [`crate::sitemap::blocks`]), so a change to
    /// a few rows re-reads only their blocks; `None` for a page loaded from storage.
    pub blocks: Option<Arc<[Block]>>,
}

impl Page {
    pub fn validators(&self) -> Validators {
        Validators {
            fingerprint: self.fingerprint,
            changed_at: self.changed_at,
        }
    }

    /// The page as stored in `sitemapd_pages` (skip counts are not stored).
    pub fn to_record(&self) -> PageRecord {
        PageRecord {
            page_no: self.no,
            first_id: self.first_id,
            urls: self.urls as i64,
            bytes: self.bytes as i64,
            fingerprint: self.fingerprint,
            changed_at: self.changed_at,
            extensions: self.namespaces.bits(),
            summary: self.summary.clone(),
        }
    }

    /// A stored page; its skip counts are unknown until it is scanned again.
    pub fn from_record(r: &PageRecord) -> Self {
        Page {
            no: r.page_no,
            first_id: r.first_id,
            urls: r.urls.max(0) as usize,
            bytes: r.bytes.max(0) as usize,
            fingerprint: r.fingerprint,
            changed_at: r.changed_at,
            namespaces: Namespaces::from_bits(r.extensions),
            skipped: SkipCounts::default(),
            summary: r.summary.clone(),
            blocks: None,
        }
    }
}

/// The files of a site in id order; the first one's range starts at the lowest id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// In first-id order, never empty once measured ([`Layout::empty`] has page 1).
    pages: Vec<Page>,
}

impl Layout {
    /// A layout of `pages`, in first-id order.
    pub fn new(pages: Vec<Page>) -> Self {
        Self { pages }
    }

    /// The pages in first-id order (their position is the index the other methods take).
    pub fn pages(&self) -> &[Page] {
        &self.pages
    }

    /// The pages to change in place (their validators, counts); their number and order stay.
    pub fn pages_mut(&mut self) -> &mut [Page] {
        &mut self.pages
    }

    /// How many files the layout has.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The position of every page, first to last.
    pub fn indexes(&self) -> std::ops::Range<usize> {
        0..self.pages.len()
    }

    /// The numbers of the pages (K in their names), in first-id order.
    pub fn page_numbers(&self) -> Vec<i64> {
        self.pages.iter().map(|p| p.no).collect()
    }

    /// The one page, when a single file holds every entry.
    pub fn only_page(&self) -> Option<&Page> {
        match self.pages.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }

    /// The layout of a site with no entries: page 1 over every id, an empty urlset.
    pub fn empty(style: &DocumentStyle, now: i64) -> Self {
        let digest = PageBuilder::measuring(style, 1).finish();
        Self::new(vec![Page {
            no: 1,
            first_id: i64::MIN,
            urls: 0,
            bytes: digest.bytes,
            fingerprint: digest.fingerprint,
            changed_at: now,
            namespaces: digest.namespaces,
            skipped: SkipCounts::default(),
            summary: None,
            blocks: None,
        }])
    }

    /// The layout stored in `sitemapd_pages`, in first-id order.
    pub fn from_records(records: &[PageRecord]) -> Self {
        Self::new(records.iter().map(Page::from_record).collect())
    }

    pub fn to_records(&self) -> Vec<PageRecord> {
        self.pages.iter().map(Page::to_record).collect()
    }

    pub fn range(&self, index: usize) -> IdRange {
        let first = if index == 0 {
            i64::MIN
        } else {
            self.pages[index].first_id
        };
        let last = self
            .pages
            .get(index + 1)
            .map_or(i64::MAX, |next| next.first_id - 1);
        IdRange { first, last }
    }

    /// The first ids of every file but the first: where the database's summaries cut.
    pub fn thresholds(&self) -> Vec<i64> {
        self.pages.iter().skip(1).map(|p| p.first_id).collect()
    }

    pub fn find(&self, no: i64) -> Option<(usize, &Page)> {
        self.pages.iter().enumerate().find(|(_, p)| p.no == no)
    }

    /// Indexes of the pages whose ranges meet `range`.
    pub fn overlapping(&self, range: IdRange) -> Vec<usize> {
        self.indexes()
            .filter(|&i| self.range(i).overlaps(&range))
            .collect()
    }

    /// Indexes of the pages whose ranges meet any of `ranges`.
    pub fn overlapping_any(&self, ranges: &[IdRange]) -> Vec<usize> {
        self.indexes()
            .filter(|&i| ranges.iter().any(|r| self.range(i).overlaps(r)))
            .collect()
    }

    /// The number a new file gets: one past the highest in use.
    pub fn next_page_no(&self) -> i64 {
        self.pages.iter().map(|p| p.no).max().unwrap_or(0) + 1
    }

    /// The boundaries alone, to tell whether another writer changed them.
    pub fn boundaries(&self) -> Vec<(i64, i64)> {
        self.pages.iter().map(|p| (p.no, p.first_id)).collect()
    }

    /// Rows left out of every file, by reason.
    pub fn skipped(&self) -> SkipCounts {
        self.pages.iter().fold(SkipCounts::default(), |mut acc, p| {
            acc.merge(&p.skipped);
            acc
        })
    }

    /// URLs listed by every file.
    pub fn served(&self) -> usize {
        self.pages.iter().map(|p| p.urls).sum()
    }

    /// Skip counts and blocks are not stored: they carry over from the layout that measured
    /// them, blocks only to a page of the same range and bytes.
    pub fn with_measures_of(mut self, measured: &Layout) -> Self {
        for i in 0..self.pages.len() {
            let range = self.range(i);
            let page = &mut self.pages[i];
            if let Some((j, m)) = measured.find(page.no) {
                page.skipped = m.skipped.clone();
                if m.fingerprint == page.fingerprint && measured.range(j) == range {
                    page.blocks = m.blocks.clone();
                }
            }
        }
        self
    }

    /// The sitemap index of this layout alone (a group's part of its site's index).
    pub fn index_document(&self, publication: Publication<'_>) -> Bytes {
        index_document(publication.style, self.index_entries(publication))
    }

    /// What the index lists of this layout: every page where the group's files are published,
    /// with the time its bytes last changed.
    pub fn index_entries(&self, publication: Publication<'_>) -> Vec<(String, DateTime<Utc>)> {
        self.pages
            .iter()
            .map(|p| {
                let name = crate::files::page_name(publication.group, p.no);
                (publication.files.file_url(&name), to_datetime(p.changed_at))
            })
            .collect()
    }
}

/// A sitemap index of `entries`, the first 50,000 of them.
pub fn index_document(style: &DocumentStyle, entries: Vec<(String, DateTime<Utc>)>) -> Bytes {
    if entries.len() > MAX_SITEMAPS_PER_INDEX {
        tracing::error!(
            files = entries.len(),
            "more sitemap files than one index may list; listing the first 50000"
        );
    }
    let listed = entries.iter().take(MAX_SITEMAPS_PER_INDEX);
    Bytes::from(style.index(listed.map(|(u, t)| (u.as_str(), *t))))
}

fn to_datetime(unix: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(unix, 0).unwrap_or_default()
}

/// A layout of one-URL pages `(no, first_id)`, each fingerprinted by its number, dated 10.
#[cfg(test)]
pub fn test_layout(firsts: &[(i64, i64)]) -> Layout {
    Layout::new(
        firsts
            .iter()
            .map(|&(no, first_id)| Page {
                no,
                first_id,
                urls: 1,
                bytes: 100,
                fingerprint: Fingerprint(no as u128),
                changed_at: 10,
                namespaces: Namespaces::NONE,
                skipped: SkipCounts::default(),
                summary: None,
                blocks: None,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::test_layout as layout;
    use super::*;

    #[test]
    fn ranges_cover_every_id_without_overlap() {
        let l = layout(&[(1, 5), (3, 100), (2, 200)]);
        assert_eq!(
            l.range(0),
            IdRange {
                first: i64::MIN,
                last: 99
            }
        );
        assert_eq!(
            l.range(1),
            IdRange {
                first: 100,
                last: 199
            }
        );
        assert_eq!(
            l.range(2),
            IdRange {
                first: 200,
                last: i64::MAX
            }
        );
        assert_eq!(
            l.overlapping(IdRange {
                first: 150,
                last: 250
            }),
            vec![1, 2]
        );
    }

    #[test]
    fn a_page_survives_the_trip_through_its_record() {
        let page = layout(&[(7, 42)]).pages()[0].clone();
        assert_eq!(Page::from_record(&page.to_record()), page);
    }
}
