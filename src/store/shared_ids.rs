//! Rows that share an id: ids order the files and cut them, so rows with the same id cannot be
//! placed (a file boundary cannot fall between them, and which of them comes first is up to
//! the database). Every row of a shared id is marked rejected, to be skipped and counted.

use futures::stream::{self, BoxStream, StreamExt};

use super::StoreError;
use crate::sitemap::{RawEntry, SkipReason};

type Rows<'a> = BoxStream<'a, Result<RawEntry, StoreError>>;

/// `rows` (in id order) with every row whose id another row shares marked
/// [`SkipReason::DuplicateId`].
pub(super) fn reject_shared_ids(rows: Rows<'_>) -> Rows<'_> {
    let state = (rows.fuse(), None::<RawEntry>, false);
    stream::unfold(state, |(mut rows, held, held_shared)| async move {
        let held = match held {
            Some(row) => row,
            None => match rows.next().await? {
                Ok(row) => row,
                Err(e) => return Some((Err(e), (rows, None, false))),
            },
        };
        match rows.next().await {
            Some(Ok(next)) => {
                let shares = next.id == held.id;
                let out = rejected_if(held, held_shared || shares);
                Some((Ok(out), (rows, Some(next), shares)))
            }
            Some(Err(e)) => Some((Err(e), (rows, None, false))),
            None => Some((Ok(rejected_if(held, held_shared)), (rows, None, false))),
        }
    })
    .boxed()
}

fn rejected_if(mut row: RawEntry, shared: bool) -> RawEntry {
    if shared {
        row.rejected = Some(SkipReason::DuplicateId);
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    #[tokio::test]
    async fn every_row_of_a_shared_id_is_rejected_and_no_other() {
        let ids = [1, 5, 5, 5, 6, 7, 7];
        let rows = stream::iter(ids.map(|id| {
            Ok(RawEntry {
                id,
                ..RawEntry::default()
            })
        }))
        .boxed();
        let marked: Vec<(i64, bool)> = reject_shared_ids(rows)
            .map_ok(|r| (r.id, r.rejected.is_some()))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            marked,
            [
                (1, false),
                (5, true),
                (5, true),
                (5, true),
                (6, false),
                (7, true),
                (7, true)
            ]
        );
    }
}
