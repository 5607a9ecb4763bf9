//! The summary `sitemapd import` prints, and the exit code it implies.

use std::collections::BTreeMap;
use std::fmt;

use crate::store::ImportCounts;

/// Examples kept per reason or tag, as `sitemapd check` shows them.
const EXAMPLES: usize = 5;

/// Counts by name, each with its first few examples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally(BTreeMap<&'static str, (u64, Vec<String>)>);

impl Tally {
    /// Counts one more `name`; `example` is only made while few are kept.
    pub fn add(&mut self, name: &'static str, example: impl FnOnce() -> String) {
        let (count, examples) = self.0.entry(name).or_default();
        *count += 1;
        if examples.len() < EXAMPLES {
            examples.push(example());
        }
    }

    pub fn total(&self) -> u64 {
        self.0.values().map(|(n, _)| n).sum()
    }

    #[cfg(test)]
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).map_or(0, |(n, _)| *n)
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, (count, examples)) in &self.0 {
            writeln!(f, "  {name}: {count}")?;
            for example in examples {
                writeln!(f, "    {example}")?;
            }
        }
        Ok(())
    }
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// Files read to their end (an index and each file it lists count once each).
    pub files_read: u64,
    /// Files that could not be read, or only in part, each with the reason.
    pub files_failed: Vec<String>,
    pub written: ImportCounts,
    /// Entries not imported, by skip reason.
    pub skipped: Tally,
    /// Invalid tags left out of imported entries, by tag.
    pub dropped: Tally,
    /// Extension elements that were not understood (news, video, …).
    pub unknown_elements: u64,
    /// Listings of a file an index had listed already: each file is read once.
    pub files_listed_again: u64,
    /// The database error that ended the import early; what was committed before stays.
    pub stopped: Option<String>,
}

impl ImportReport {
    /// 0 when everything was imported, 1 when an entry was skipped or a file failed.
    pub fn exit_code(&self) -> i32 {
        let clean =
            self.skipped.total() == 0 && self.files_failed.is_empty() && self.stopped.is_none();
        if clean {
            0
        } else {
            1
        }
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.written;
        writeln!(f, "files read: {}", self.files_read)?;
        writeln!(f, "entries inserted: {}", w.inserted)?;
        writeln!(f, "entries updated: {}", w.updated)?;
        if w.unchanged > 0 {
            writeln!(
                f,
                "entries already present, left as they were (text sitemap lines): {}",
                w.unchanged
            )?;
        }
        writeln!(f, "entries skipped: {}", self.skipped.total())?;
        self.skipped.write(f)?;
        writeln!(f, "alternates: {}", w.alternates)?;
        writeln!(f, "images: {}", w.images)?;
        writeln!(f, "videos: {}", w.videos)?;
        if self.dropped.total() > 0 {
            writeln!(f, "invalid tags dropped: {}", self.dropped.total())?;
            self.dropped.write(f)?;
        }
        if self.unknown_elements > 0 {
            writeln!(
                f,
                "unknown extension elements ignored: {}",
                self.unknown_elements
            )?;
        }
        if self.files_listed_again > 0 {
            writeln!(
                f,
                "files listed again by the index (read once): {}",
                self.files_listed_again
            )?;
        }
        if !self.files_failed.is_empty() {
            writeln!(f, "files failed: {}", self.files_failed.len())?;
            for failure in &self.files_failed {
                writeln!(f, "  {failure}")?;
            }
        }
        if let Some(error) = &self.stopped {
            writeln!(f, "stopped early: {error}; entries written before it stay")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_keeps_counting_past_its_examples() {
        let mut tally = Tally::default();
        for i in 0..8 {
            tally.add("out_of_scope", || format!("example {i}"));
        }
        assert_eq!(tally.get("out_of_scope"), 8);
        assert_eq!(tally.0["out_of_scope"].1.len(), EXAMPLES);
    }

    #[test]
    fn anything_skipped_or_failed_exits_1() {
        let mut report = ImportReport::default();
        assert_eq!(report.exit_code(), 0);
        report.dropped.add("lastmod", String::new);
        assert_eq!(
            report.exit_code(),
            0,
            "a dropped tag is not a skipped entry"
        );
        report.files_failed.push("x: not found".into());
        assert_eq!(report.exit_code(), 1);
        let mut report = ImportReport::default();
        report.skipped.add("too_long", String::new);
        assert_eq!(report.exit_code(), 1);
    }
}
