//! URLs that left the built-in table, for IndexNow: the rows its triggers note
//! (`sitemapd_removed`) are read from the source database, and how far each reader read is kept
//! in the state database. On a source database of its own nothing is cleared (sitemapd writes
//! nothing there; docs/operations.md says how the primary's rows are trimmed). Statements:
//! `sql/removed.rs`.

use super::{sql, Store, StoreError};

impl Store {
    /// Notes `reader` (a group's key) as a reader of the URLs that leave the built-in table
    /// (deleted, or their loc changed), unless it is one already, and says it is alive.
    pub async fn register_removed_reader(&self, reader: &str, now: i64) -> Result<(), StoreError> {
        on!(&self.state, s => s.register_removed_reader(reader, now).await)
    }

    /// How far `reader` has read the removed URLs; `None` if it is no reader.
    pub async fn removed_read_through(&self, reader: &str) -> Result<Option<i64>, StoreError> {
        on!(&self.state, s => s.removed_read_through(reader).await)
    }

    /// Up to `limit` removed URLs with ids above `after`, oldest first, with their ids. A
    /// source database of its own without the table (its primary never had our migrations)
    /// has none.
    pub async fn removed_after(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        from_source!(self, s => s.removed_after(after, limit).await)
    }

    /// Moves `reader` past the removed URLs through `to`; false when another replica did.
    pub async fn advance_removed_read(
        &self,
        reader: &str,
        from: i64,
        to: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        on!(&self.state, s => s.advance_removed_read(reader, from, to, now).await)
    }

    /// Clears the removed URLs every living reader has read (all when nobody reads); nothing
    /// on a source database of its own.
    pub async fn forget_removed_read_by_all(&self, now: i64) -> Result<(), StoreError> {
        if self.replica.is_some() {
            return Ok(());
        }
        let forgotten_before = now - sql::removed::READER_FORGOTTEN_SECS;
        on!(&self.state, s => s.forget_removed_read_by_all(forgotten_before).await)
    }
}
