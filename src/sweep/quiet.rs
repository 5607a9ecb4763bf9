//! Refreshes that read nothing: before a periodic sweep summarises a view's files (a pass over
//! every row), the database's own record of the last change to the tables behind it is read
//! (see [`crate::store::SourceStamp`]); when it is where the last completed sweep left it,
//! nothing changed and the sweep ends there. Once an hour the files are summarised anyway, for
//! what no table write shows (a view that reads the clock).
//!
//! The same stamps spare the pass after a first sweep: files measured with no summary would
//! each be read again to have one taken before their rows. When no table behind the view was
//! written since the sweep that measured them began, the summaries taken now describe the rows
//! they were measured from, and are kept as they are (see [`Quiet::adoptable`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::site::Group;
use crate::store::{SourceStamp, StoreError};
use crate::sync::lock;

/// The longest a view's files go unsummarised, whatever the stamps say.
const SUMMARISE_AT_LEAST_EVERY: Duration = Duration::from_secs(3600);

/// The stamp the last completed sweep started from, and when files were last summarised.
#[derive(Default)]
pub(super) struct Quiet {
    last: Mutex<Option<(SourceStamp, Instant)>>,
    /// The stamp the last full sweep that saved started from: every file with no summary was
    /// measured after it was read. Forgotten when files come from the store instead.
    measured_from: Mutex<Option<SourceStamp>>,
}

/// What a sweep found before reading: the stamp it starts from, and whether that is reason
/// enough to read nothing.
pub(super) struct Look {
    stamp: Option<SourceStamp>,
    pub(super) nothing_changed: bool,
}

impl Quiet {
    /// Reads the source's stamp. A stamp the server cannot give (or an error reading it)
    /// means: read as before.
    pub(super) async fn look(&self, group: &Group) -> Look {
        let stamp = match stamp_of(group).await {
            Ok(stamp) => stamp,
            Err(e) => {
                tracing::debug!(error = %crate::error::Chain(&e), "cannot read the source's change stamp");
                None
            }
        };
        let nothing_changed = match (&stamp, *lock(&self.last)) {
            (Some(now), Some((earlier, summarised))) => {
                now.unchanged_since(&earlier) && summarised.elapsed() < SUMMARISE_AT_LEAST_EVERY
            }
            _ => false,
        };
        Look {
            stamp,
            nothing_changed,
        }
    }

    /// A full sweep that started from `look` saved what it measured.
    pub(super) fn measured(&self, look: &Look) {
        *lock(&self.measured_from) = look.stamp;
    }

    /// Files were installed from the store (another replica's, or an earlier process's): when
    /// they were measured is not known.
    pub(super) fn forget_measured(&self) {
        *lock(&self.measured_from) = None;
    }

    /// Whether the files measured with no summary may take the summaries read after `look`
    /// without being read again: no table behind the source was written since the sweep that
    /// measured them began. Confirmed once the summaries are read ([`Quiet::still_unwritten`]).
    /// (A view that reads the clock could change unseen meanwhile; a render that meets other
    /// rows than were measured reports the file stale.)
    pub(super) fn adoptable(&self, look: &Look) -> bool {
        look.stamp.is_some_and(|now| self.unwritten_at(now))
    }

    /// Whether, read now, after the summaries, the stamp still says no table was written since
    /// the files were measured: a write during the pass could be in some summaries and not in
    /// the files' bytes.
    pub(super) async fn still_unwritten(&self, group: &Group) -> bool {
        matches!(stamp_of(group).await, Ok(Some(now)) if self.unwritten_at(now))
    }

    fn unwritten_at(&self, now: SourceStamp) -> bool {
        lock(&self.measured_from).is_some_and(|earlier| now.unchanged_since(&earlier))
    }

    /// A sweep that started from `look` completed: its stamp is where the files now are.
    pub(super) fn completed(&self, look: &Look) {
        let mut last = lock(&self.last);
        *last = match (look.stamp, look.nothing_changed, *last) {
            (_, true, last) => last,
            (Some(stamp), false, _) => Some((stamp, Instant::now())),
            (None, false, _) => None,
        };
    }
}

/// The stamp of every table whose rows `group`'s files hold: its source's, and the extension
/// tables' when it merges their rows in (an image added changes a file as much as a post).
async fn stamp_of(group: &Group) -> Result<Option<SourceStamp>, StoreError> {
    group.store.source_stamp(group.extensions).await
}
