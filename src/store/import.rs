//! `sitemapd import`'s writes: entries read from sitemap files, what one batch does (planned
//! once for every backend), and the extension rows it replaces. The statements are written by
//! each backend's `import_batch`.

use std::collections::HashMap;

use crate::sitemap::entry::{ChangeFreq, Lastmod, Priority};
use crate::sitemap::rich::RawVideo;

/// An entry read from a sitemap file by `sitemapd import`, already validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedEntry {
    /// The URL as the file had it (trimmed): the key entries are matched by.
    pub loc: String,
    /// `None` for a line of a text sitemap: that format carries only URLs, so an entry that
    /// exists already keeps its fields and extensions.
    pub details: Option<EntryDetails>,
}

/// What an XML sitemap says about an entry besides its URL; a tag that was invalid is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryDetails {
    pub lastmod: Option<Lastmod>,
    pub changefreq: Option<ChangeFreq>,
    pub priority: Option<Priority>,
    /// `xhtml:link rel="alternate"`, at most one per hreflang.
    pub alternates: Vec<Alternate>,
    /// `image:loc` of each `image:image`, in file order.
    pub images: Vec<String>,
    /// Each `video:video` that has what Google requires, in file order.
    pub videos: Vec<RawVideo>,
}

/// One alternate language version of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternate {
    pub hreflang: String,
    pub href: String,
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCounts {
    /// New entries (new ids).
    pub inserted: u64,
    /// Entries that existed: same id, fields and extensions from the file.
    pub updated: u64,
    /// Text sitemap lines whose URL existed: left as they were.
    pub unchanged: u64,
    /// Extension rows written.
    pub alternates: u64,
    pub images: u64,
    pub videos: u64,
}

impl ImportCounts {
    pub fn add(&mut self, other: ImportCounts) {
        self.inserted += other.inserted;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.alternates += other.alternates;
        self.images += other.images;
        self.videos += other.videos;
    }

    /// Entries the import went through, for progress reports.
    pub fn entries(&self) -> u64 {
        self.inserted + self.updated + self.unchanged
    }
}

/// Most rows one statement of an import carries: well within every backend's parameter limit.
pub(super) const IMPORT_ROWS_PER_STATEMENT: usize = 500;

/// What one import batch does, decided from which of its URLs exist already: the same
/// decisions for every backend, so only the SQL differs between them.
pub(super) struct ImportPlan<'a> {
    /// Entries the upsert writes, in batch order: every new one, and existing ones that take
    /// the file's fields (all but text sitemap lines).
    pub(super) upserts: Vec<&'a ImportedEntry>,
    updated: u64,
    unchanged: u64,
}

impl<'a> ImportPlan<'a> {
    pub(super) fn new(batch: &'a [ImportedEntry], existing: &HashMap<String, i64>) -> Self {
        let mut plan = Self {
            upserts: Vec::with_capacity(batch.len()),
            updated: 0,
            unchanged: 0,
        };
        for entry in batch {
            match (existing.contains_key(&entry.loc), &entry.details) {
                (true, None) => plan.unchanged += 1,
                (true, Some(_)) => {
                    plan.updated += 1;
                    plan.upserts.push(entry);
                }
                (false, _) => plan.upserts.push(entry),
            }
        }
        plan
    }

    /// The upserted entries with their ids: their extension rows are replaced (for new ids
    /// too, so rows a deleted entry left under a reused id cannot attach to the new one).
    pub(super) fn extension_owners(
        &self,
        ids: &HashMap<String, i64>,
    ) -> Vec<(i64, Option<&'a EntryDetails>)> {
        self.upserts
            .iter()
            .filter_map(|e| Some((*ids.get(&e.loc)?, e.details.as_ref())))
            .collect()
    }

    pub(super) fn counts(&self, owners: &[(i64, Option<&EntryDetails>)]) -> ImportCounts {
        let details = || owners.iter().filter_map(|(_, d)| *d);
        ImportCounts {
            inserted: self.upserts.len() as u64 - self.updated,
            updated: self.updated,
            unchanged: self.unchanged,
            alternates: details().map(|d| d.alternates.len() as u64).sum(),
            images: details().map(|d| d.images.len() as u64).sum(),
            videos: details().map(|d| d.videos.len() as u64).sum(),
        }
    }
}

/// Alternate rows to write for `owners`, as `(entry_id, alternate)`.
pub(super) fn alternate_rows<'a>(
    owners: &[(i64, Option<&'a EntryDetails>)],
) -> Vec<(i64, &'a Alternate)> {
    owners
        .iter()
        .filter_map(|(id, d)| Some((*id, (*d)?)))
        .flat_map(|(id, d)| d.alternates.iter().map(move |a| (id, a)))
        .collect()
}

/// Image rows to write for `owners`, as `(entry_id, loc)`, in file order.
pub(super) fn image_rows<'a>(owners: &[(i64, Option<&'a EntryDetails>)]) -> Vec<(i64, &'a str)> {
    owners
        .iter()
        .filter_map(|(id, d)| Some((*id, (*d)?)))
        .flat_map(|(id, d)| d.images.iter().map(move |loc| (id, loc.as_str())))
        .collect()
}

/// Video rows to write for `owners`, as `(entry_id, video)`, in file order.
pub(super) fn video_rows<'a>(
    owners: &[(i64, Option<&'a EntryDetails>)],
) -> Vec<(i64, &'a RawVideo)> {
    owners
        .iter()
        .filter_map(|(id, d)| Some((*id, (*d)?)))
        .flat_map(|(id, d)| d.videos.iter().map(move |v| (id, v)))
        .collect()
}

/// The columns an imported entry writes: `None`s for a text sitemap line.
pub(super) fn entry_columns(
    entry: &ImportedEntry,
) -> (
    Option<chrono::DateTime<chrono::Utc>>,
    Option<&'static str>,
    Option<f64>,
) {
    let details = entry.details.as_ref();
    (
        details.and_then(|d| d.lastmod).map(|l| l.at()),
        details.and_then(|d| d.changefreq).map(ChangeFreq::as_str),
        details.and_then(|d| d.priority).map(Priority::value),
    )
}
