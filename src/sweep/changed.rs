//! Which files a sweep reads: those a logged change overlaps, or, for a full sweep, those whose
//! summary (count and hash of their rows, computed by the database) moved since they were
//! measured; and which files only take the summary just read, when the source's stamps say
//! their rows are the ones they were measured from (see [`super::quiet`]).

use super::patch::{self, Patched};
use super::quiet::Look;
use super::Sweeper;
use crate::site::{Layout, Readiness};
use crate::store::{IdRange, StoreError, SummaryPace, BUILTIN_SOURCE};

/// What a sweep reads: the files a change may have touched, and those that only take the
/// summary read now (see [`super::quiet::Quiet::adoptable`]).
pub(super) struct Changed {
    /// Files read whole.
    pub(super) files: Vec<usize>,
    /// Files whose changed blocks were read again, that changed (see [`super::patch`]).
    pub(super) patched: Vec<Patched>,
    pub(super) adopted: Vec<usize>,
    /// Every file's summary, read before any file was measured; `None` when not read.
    pub(super) summaries: Option<Vec<String>>,
    /// Whether the database was asked which files changed (so none listed means none did).
    checked: bool,
}

impl Changed {
    /// `files`, with no summary read.
    pub(super) fn only(files: Vec<usize>) -> Self {
        Self {
            files,
            patched: Vec::new(),
            adopted: Vec::new(),
            summaries: None,
            checked: false,
        }
    }

    /// Whether the database said no file's rows changed: there is nothing to read or save.
    pub(super) fn is_nothing(&self) -> bool {
        self.files.is_empty() && self.patched.is_empty() && self.adopted.is_empty() && self.checked
    }

    /// The ids the patches read again.
    pub(super) fn patched_ids(&self) -> Vec<IdRange> {
        self.patched
            .iter()
            .flat_map(|p| p.read.iter().copied())
            .collect()
    }

    /// Gives each measured or adopted file that kept its id range the summary taken before it
    /// was measured: rows changed since then make the next summary differ, so no change is
    /// missed.
    pub(super) fn keep_summaries(&self, measured: &mut Layout, before: &Layout) {
        let Some(summaries) = &self.summaries else {
            return;
        };
        for &i in self.files.iter().chain(&self.adopted) {
            let Some((j, _)) = measured.find(before.pages()[i].no) else {
                continue;
            };
            if measured.range(j) == before.range(i) {
                measured.pages_mut()[j].summary = summaries.get(i).cloned();
            }
        }
    }
}

impl Sweeper {
    /// The files a change log's `keys` may have touched. A file measured by this process has
    /// the blocks holding them read again ([`super::patch`]). Otherwise, the built-in table's
    /// keys are its rows' ids: each file holding one is read. Behind a view they are the keys
    /// of the tables its ids come from, and may name no row of it (a revision, a draft): each
    /// file holding one is summarised first, and read only when its summary moved.
    pub(super) async fn keyed_files(
        &self,
        layout: &Layout,
        keys: &[IdRange],
    ) -> Result<Changed, StoreError> {
        let files = layout.overlapping_any(keys);
        if self.group.news.is_some() || self.group.readiness() == Readiness::FirstSweep {
            return Ok(Changed::only(files));
        }
        let (patched, files) = self.patch_files(layout, files, keys).await?;
        let mut changed = self.keyed_whole_files(layout, files).await?;
        changed.checked |= changed.files.is_empty();
        changed.patched = patched;
        Ok(changed)
    }

    /// Patches each of `files` that can be; returns the patched files that changed, and those
    /// to read whole.
    async fn patch_files(
        &self,
        layout: &Layout,
        files: Vec<usize>,
        keys: &[IdRange],
    ) -> Result<(Vec<Patched>, Vec<usize>), StoreError> {
        let (mut patched, mut whole) = (Vec::new(), Vec::new());
        for i in files {
            let patch = patch::patch(&self.group, layout, i, keys).await?;
            if let Some(p) = &patch {
                self.metrics.blocks_read.inc_by(p.blocks as u64);
            }
            match patch {
                Some(p)
                    if p.scanned.parts[0].digest.fingerprint == layout.pages()[i].fingerprint => {}
                Some(p) => patched.push(p),
                None => whole.push(i),
            }
        }
        tracing::debug!(group = %self.group.key, patched = patched.len(), whole = ?whole, "files a change log's keys name");
        Ok((patched, whole))
    }

    /// Which of `files`, named by a change log's keys and not patched, are read whole.
    async fn keyed_whole_files(
        &self,
        layout: &Layout,
        files: Vec<usize>,
    ) -> Result<Changed, StoreError> {
        if self.group.source == BUILTIN_SOURCE || files.is_empty() {
            return Ok(Changed::only(files));
        }
        let ranges: Vec<IdRange> = files.iter().map(|&i| layout.range(i)).collect();
        let Some(now) = self.group.store.summaries_of(&ranges).await? else {
            return Ok(Changed::only(files));
        };
        self.metrics.summary_checks.inc();
        let settings = self.group.settings.fingerprint.hex();
        let mut summaries = vec![String::new(); layout.len()];
        let mut moved = Vec::new();
        for (&i, now) in files.iter().zip(now) {
            let now = format!("{settings} {now}");
            if layout.pages()[i].summary.as_ref() != Some(&now) {
                moved.push(i);
            }
            summaries[i] = now;
        }
        tracing::debug!(group = %self.group.key, summarised = ?files, read = ?moved, "files summarised for a change log's keys");
        Ok(Changed {
            files: moved,
            patched: Vec::new(),
            adopted: Vec::new(),
            summaries: Some(summaries),
            checked: true,
        })
    }

    /// The files whose rows the database summarises differently than when they were measured
    /// (under this configuration), with every file's summary now; every file where the
    /// database cannot summarise. When `look` finds the files measured with no summary still
    /// describing the source ([`super::quiet::Quiet::adoptable`]), they take the summary read
    /// now instead of being read again.
    pub(super) async fn changed_files(
        &self,
        layout: &Layout,
        look: Option<&Look>,
    ) -> Result<Changed, StoreError> {
        let every_file = || Changed::only(layout.indexes().collect());
        if self.group.news.is_some() {
            // A summary cannot see articles age out of the window.
            return Ok(every_file());
        }
        if self.group.readiness() == Readiness::FirstSweep {
            // Nothing to compare with, and one file holding every id: its summary would be one
            // statement over the whole source.
            return Ok(every_file());
        }
        let adopt = look.is_some_and(|look| self.quiet.adoptable(look));
        // A pass that only takes first summaries leaves the database a core for the renders.
        let pace = match adopt && layout.pages().iter().all(|p| p.summary.is_none()) {
            true => SummaryPace::Gentle,
            false => SummaryPace::Quick,
        };
        let Some(summaries) = self
            .group
            .store
            .file_summaries(&layout.thresholds(), pace)
            .await?
        else {
            return Ok(every_file());
        };
        self.metrics.summary_checks.inc();
        let adopt = adopt && self.quiet.still_unwritten(&self.group).await;
        let settings = self.group.settings.fingerprint.hex();
        let summaries: Vec<String> = summaries
            .iter()
            .map(|s| format!("{settings} {s}"))
            .collect();
        let (mut files, mut adopted) = (Vec::new(), Vec::new());
        for (i, (page, now)) in layout.pages().iter().zip(&summaries).enumerate() {
            match &page.summary {
                Some(then) if then == now => {}
                None if adopt => adopted.push(i),
                _ => files.push(i),
            }
        }
        Ok(Changed {
            files,
            patched: Vec::new(),
            adopted,
            summaries: Some(summaries),
            checked: true,
        })
    }
}
