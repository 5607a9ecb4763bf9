//! Long reads of a view as id windows: `WHERE id BETWEEN lo AND hi`, each window sized from what
//! the one before it returned, so that every statement reads about [`WINDOW_ROWS`] rows.
//!
//! A keyset read (`WHERE id > ? ORDER BY id LIMIT n`) is bounded on a table, but a view the
//! engine cannot merge into the query (MariaDB and MySQL: any `UNION`, recursive CTE, window
//! function, `GROUP BY`) is built for every row the `WHERE` lets through before the `LIMIT`
//! applies: at a million rows each such statement builds the rest of the view. Both ends of an id
//! range are pushed into every branch of such a view, so a window costs the rows it holds.
//!
//! Ids are usually dense from 1 (auto-increment), sometimes sparse (one kind of post among
//! others): a window that came back thin doubles, an empty one grows fourfold (past the last id
//! the windows reach `i64::MAX` in a few dozen empty, index-only statements), a full one shrinks.
//! Where ids suddenly get denser, one window holds the target times that jump, then the windows
//! narrow. Negative ids, rare, are read as one window.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use super::{IdRange, Store, StoreError};
use crate::sitemap::RawEntry;

/// Rows one window of a long plain read aims at.
pub(super) const WINDOW_ROWS: i64 = 50_000;

/// Rows a window aims at where each is a statement of its own text, read whole before its rows
/// go on (MariaDB/MySQL views, see `Dialect::RANGES_AS_LITERALS`): memory stays at a few MB.
const LITERAL_WINDOW_ROWS: i64 = 10_000;

/// The windows of one read of `range`, each sized from the rows the previous one held.
#[derive(Debug, Clone)]
pub(super) struct Windows {
    range: IdRange,
    /// Rows a window aims at.
    target: i64,
    /// Where the next window starts; `None` once the range is read.
    next: Option<i64>,
    /// How many ids the next window spans.
    width: i64,
    /// Whether the previous window's rows say anything of the next one's (the window of the
    /// negative ids does not).
    sized_by_previous: bool,
    /// Ids left that are read as one last window rather than several.
    whole_tail: i64,
}

impl Windows {
    /// Windows whose rows are streamed: the rest of the range goes in one window once it spans
    /// fewer than four targets' ids, sparing statements.
    pub(super) fn new(range: IdRange, target: i64) -> Self {
        let target = target.max(1);
        Self::with_tail(range, target, target.saturating_mul(4))
    }

    /// Windows each read whole before its rows go on: the last one spans at most one and a
    /// half targets' ids, so memory stays at about a window whatever the range (a file of
    /// 50,000 rows of a MariaDB view was read as 10,000 then 40,000 rows, 24 MB held at once).
    pub(super) fn held(range: IdRange, target: i64) -> Self {
        let target = target.max(1);
        Self::with_tail(range, target, target.saturating_add(target / 2))
    }

    /// `target` at least 1.
    fn with_tail(range: IdRange, target: i64, whole_tail: i64) -> Self {
        Self {
            range,
            target,
            next: (range.first <= range.last).then_some(range.first),
            width: target,
            sized_by_previous: false,
            whole_tail,
        }
    }

    /// The next window, once the previous one (if any) returned `previous_rows` rows.
    pub(super) fn advance(&mut self, previous_rows: Option<i64>) -> Option<IdRange> {
        let first = self.next?;
        if let Some(rows) = previous_rows.filter(|_| self.sized_by_previous) {
            self.width = next_width(self.width, rows, self.target);
        }
        self.sized_by_previous = first >= 0;
        let last = if first < 0 {
            // Negative ids (rare): all of them in one window.
            self.range.last.min(-1)
        } else if self.range.last - first < self.whole_tail {
            // What is left is narrow enough to go in one window.
            self.range.last
        } else {
            first.saturating_add(self.width - 1).min(self.range.last)
        };
        self.next = (last < self.range.last).then(|| last + 1);
        Some(IdRange { first, last })
    }
}

/// The width of the window after one of `width` ids that held `rows` rows, aiming at `target`.
fn next_width(width: i64, rows: i64, target: i64) -> i64 {
    let width = i128::from(width);
    let next = match rows {
        0 => width * 4,
        rows => (width * i128::from(target) / i128::from(rows)).clamp(width / 4, width * 2),
    };
    next.clamp(1, i128::from(i64::MAX)) as i64
}

impl Store {
    /// Entries with ids in `range`, in id order, streamed, read window by window (see the
    /// module's documentation): each statement holds about [`WINDOW_ROWS`] rows, whatever the
    /// source's shape, so a statement timeout bounds one window.
    pub(super) fn entries_in_windows(
        &self,
        range: IdRange,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        // Windows read whole: where ranges go as literals, and on a source database of its own
        // (a window cancelled by replication is read again).
        let read_whole = on!(&self.source, s => s.ranges_as_literals()) || self.replica.is_some();
        if read_whole {
            if range.first > range.last {
                // Still one statement: `/readyz` reads an empty range to learn the source is there.
                return stream::once(async move {
                    from_source!(self, s => s.entries_listed(range).await)
                })
                .map_ok(|rows| stream::iter(rows.into_iter().map(Ok)))
                .try_flatten()
                .boxed();
            }
            return self
                .chunks_in_windows(range, LITERAL_WINDOW_ROWS)
                .map_ok(|(_, chunk)| stream::iter(chunk.into_iter().map(Ok)))
                .try_flatten()
                .boxed();
        }
        if range.first > range.last {
            // Still one statement: `/readyz` reads an empty range to learn the source is there.
            return on!(&self.source, s => s.entries(range));
        }
        let rows = Arc::new(AtomicI64::new(0));
        stream::unfold(
            (Windows::new(range, WINDOW_ROWS), None),
            move |(mut windows, previous): (Windows, Option<i64>)| {
                let rows = rows.clone();
                async move {
                    // The outer stream is polled again only once the previous window has ended.
                    let previous = previous.map(|_| rows.swap(0, Ordering::Relaxed));
                    let window = windows.advance(previous)?;
                    let counted = rows.clone();
                    let part = on!(&self.source, s => s.entries(window))
                        .inspect_ok(move |_| {
                            counted.fetch_add(1, Ordering::Relaxed);
                        })
                        .boxed();
                    Some((part, (windows, Some(0))))
                }
            },
        )
        .flatten()
        .boxed()
    }

    /// Entries with ids in `range`, in id order, in chunks of about `target` rows (whole ids
    /// each), one window per chunk.
    pub(super) fn chunks_in_windows(
        &self,
        range: IdRange,
        target: i64,
    ) -> BoxStream<'_, Result<(IdRange, Vec<RawEntry>), StoreError>> {
        stream::try_unfold(
            (Windows::held(range, target), None),
            move |(mut windows, previous): (Windows, Option<i64>)| async move {
                let Some(window) = windows.advance(previous) else {
                    return Ok(None);
                };
                let chunk = from_source!(self, s => s.entries_listed(window).await)?;
                let rows = chunk.len() as i64;
                Ok(Some(((window, chunk), (windows, Some(rows)))))
            },
        )
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The windows of reading `range` from a source holding `ids` (sorted).
    fn read(range: IdRange, ids: &[i64], target: i64) -> Vec<(IdRange, i64)> {
        let mut windows = Windows::new(range, target);
        let mut read = Vec::new();
        let mut previous = None;
        while let Some(window) = windows.advance(previous) {
            let rows = ids.iter().filter(|id| window.contains(**id)).count() as i64;
            read.push((window, rows));
            previous = Some(rows);
            assert!(read.len() < 1_000, "the windows end");
        }
        read
    }

    fn covers_exactly(range: IdRange, windows: &[(IdRange, i64)]) {
        assert_eq!(windows[0].0.first, range.first);
        assert_eq!(windows.last().unwrap().0.last, range.last);
        for pair in windows.windows(2) {
            assert_eq!(pair[0].0.last + 1, pair[1].0.first, "no gap, no overlap");
        }
    }

    #[test]
    fn windows_read_whole_end_within_one_and_a_half_targets() {
        let ids: Vec<i64> = (1..=50_000).collect();
        let range = IdRange {
            first: 1,
            last: 50_000,
        };
        let mut windows = Windows::held(range, 10_000);
        let mut previous = None;
        let mut widest = 0;
        while let Some(window) = windows.advance(previous) {
            let rows = ids.iter().filter(|id| window.contains(**id)).count() as i64;
            widest = widest.max(rows);
            previous = Some(rows);
        }
        assert!(widest <= 15_000, "a window of {widest} rows");
        let streamed = read(range, &ids, 10_000);
        assert!(streamed.iter().any(|w| w.1 > 15_000), "{streamed:?}");
    }

    #[test]
    fn dense_ids_from_one_are_read_in_windows_of_about_the_target() {
        let ids: Vec<i64> = (0..1_000_000).collect();
        let windows = read(IdRange::ALL, &ids, WINDOW_ROWS);
        covers_exactly(IdRange::ALL, &windows);
        assert_eq!(windows.iter().map(|w| w.1).sum::<i64>(), 1_000_000);
        assert!(windows.iter().all(|w| w.1 <= WINDOW_ROWS), "{windows:?}");
        assert!(windows.len() < 60, "{} windows", windows.len());
    }

    #[test]
    fn sparse_ids_widen_the_windows_and_a_denser_stretch_narrows_them() {
        let mut ids: Vec<i64> = (1..200_000).map(|i| i * 7).collect();
        ids.extend(1_400_000..1_600_000);
        let windows = read(IdRange::ALL, &ids, WINDOW_ROWS);
        covers_exactly(IdRange::ALL, &windows);
        assert_eq!(windows.iter().map(|w| w.1).sum::<i64>(), ids.len() as i64);
        // Where ids get 7 times denser, one window holds up to 7 times its aim, then narrows.
        let most = windows.iter().map(|w| w.1).max().unwrap();
        assert!(most <= 7 * WINDOW_ROWS, "{most}");
        let after_the_jump: Vec<i64> = windows
            .iter()
            .skip_while(|w| w.1 < 2 * WINDOW_ROWS)
            .skip(1)
            .map(|w| w.1)
            .collect();
        assert!(
            after_the_jump.iter().all(|rows| *rows <= 2 * WINDOW_ROWS),
            "{after_the_jump:?}"
        );
    }

    #[test]
    fn negative_ids_are_one_window_and_a_narrow_range_is_one_statement() {
        let windows = read(IdRange::ALL, &[-5, -1, 3], WINDOW_ROWS);
        assert_eq!(
            windows[0],
            (
                IdRange {
                    first: i64::MIN,
                    last: -1
                },
                2
            )
        );
        let file = IdRange {
            first: 100,
            last: 150_000,
        };
        assert_eq!(read(file, &[100, 200], WINDOW_ROWS), vec![(file, 2)]);
        let empty = IdRange { first: 5, last: 4 };
        assert!(Windows::new(empty, 10).advance(None).is_none());
    }

    #[test]
    fn widths_never_overflow() {
        assert_eq!(next_width(i64::MAX, 0, WINDOW_ROWS), i64::MAX);
        assert_eq!(next_width(1, 1_000_000, WINDOW_ROWS), 1);
        let top = IdRange {
            first: i64::MAX - 3,
            last: i64::MAX,
        };
        assert_eq!(read(top, &[i64::MAX], 1).last().unwrap().0.last, i64::MAX);
    }
}
