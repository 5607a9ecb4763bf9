//! Long plain reads of the built-in table as many short statements: at most [`READ_PART`] rows
//! per statement (keyset), so a statement timeout bounds one part of a first sweep, not the
//! whole table. Any other source is read in id windows instead (`windows.rs`).

use std::sync::{Arc, Mutex};

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use super::{IdRange, Store, StoreError};
use crate::sitemap::RawEntry;
use crate::sync::lock;

/// Rows one statement of a long plain read returns at most (see [`Store::entries_in_parts`]).
const READ_PART: i64 = 100_000;

/// Where a part of a long read starts: at `first`, whose first `sent` rows went out already.
#[derive(Debug, Clone, Copy)]
struct PartStart {
    first: i64,
    sent: i64,
}

impl PartStart {
    fn limit(self) -> i64 {
        READ_PART.saturating_add(self.sent)
    }
}

/// What a part's statement returned: its rows, its last id and how many rows had that id.
#[derive(Debug, Default)]
struct PartSeen {
    rows: i64,
    last: Option<i64>,
    of_last: i64,
}

impl PartSeen {
    fn add(&mut self, id: i64) {
        self.rows += 1;
        match self.last == Some(id) {
            true => self.of_last += 1,
            false => {
                self.last = Some(id);
                self.of_last = 1;
            }
        }
    }

    /// The part after `previous`, whose rows these were; `None` when it was not full.
    fn next_after(&self, previous: PartStart) -> Option<PartStart> {
        let last = self.last.filter(|_| self.rows >= previous.limit())?;
        Some(PartStart {
            first: last,
            sent: self.of_last,
        })
    }
}

impl Store {
    /// Entries with ids in `range`, in id order, streamed, at most [`READ_PART`] rows (plus the
    /// rows of one id carried over) per statement: a first sweep reads the whole table, and a
    /// statement timeout covers each statement whole, so a long read is many short statements.
    /// A part that came back full may end inside the rows of its last id: the next part starts
    /// at that id and passes over as many of its rows as were sent. A file's render (one page,
    /// at most 50,000 rows) stays one statement.
    pub(super) fn entries_in_parts(
        &self,
        range: IdRange,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        // A source database of its own is read in windows too: each a statement read whole,
        // which can be run again when replication cancels it.
        if !self.reads_built_in() || self.replica.is_some() {
            return self.entries_in_windows(range);
        }
        let seen = Arc::new(Mutex::new(PartSeen::default()));
        stream::unfold(None, move |previous: Option<PartStart>| {
            let seen = seen.clone();
            async move {
                // The outer stream is polled again only once the previous part has ended.
                let start = match previous {
                    None => PartStart {
                        first: range.first,
                        sent: 0,
                    },
                    Some(previous) => lock(&seen).next_after(previous)?,
                };
                *lock(&seen) = PartSeen::default();
                let rest = IdRange {
                    first: start.first,
                    last: range.last,
                };
                let counted = seen.clone();
                let mut passing = start.sent;
                let part = on!(&self.source, s => s.entries_limited(rest, start.limit()))
                    .inspect_ok(move |entry| lock(&counted).add(entry.id))
                    .try_filter(move |entry| {
                        let pass = passing > 0 && entry.id == start.first;
                        passing -= i64::from(pass);
                        std::future::ready(!pass)
                    })
                    .boxed();
                Some((part, Some(start)))
            }
        })
        .flatten()
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(ids: &[i64]) -> PartSeen {
        let mut seen = PartSeen::default();
        ids.iter().for_each(|id| seen.add(*id));
        seen
    }

    #[test]
    fn a_part_that_is_not_full_is_the_last() {
        let start = PartStart { first: 1, sent: 0 };
        assert!(seen(&[1, 2, 3]).next_after(start).is_none());
        assert!(seen(&[]).next_after(start).is_none());
    }

    #[test]
    fn a_full_part_goes_on_from_its_last_id_past_the_rows_sent() {
        let start = PartStart { first: 1, sent: 0 };
        let mut ids: Vec<i64> = (1..READ_PART - 1).collect();
        ids.extend([READ_PART, READ_PART]);
        let next = seen(&ids).next_after(start).unwrap();
        assert_eq!((next.first, next.sent), (READ_PART, 2));
        assert_eq!(next.limit(), READ_PART + 2, "room for the rows passed over");
    }

    #[test]
    fn a_part_of_one_id_carries_all_its_rows_over() {
        let start = PartStart { first: 7, sent: 3 };
        let ids = vec![7; (READ_PART + 3) as usize];
        let next = seen(&ids).next_after(start).unwrap();
        assert_eq!((next.first, next.sent), (7, READ_PART + 3));
    }
}
