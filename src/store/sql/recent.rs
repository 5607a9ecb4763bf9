//! The entries the feeds list: the most recently modified, read along an index when one can
//! serve the order.
//!
//! A view's `lastmod` may be text (a CMS that stores times as strings), so its rows are ordered
//! by a tolerant key that parses text and casts anything else. No index serves that expression,
//! so on PostgreSQL every sweep of a view sorted the whole view for its feeds: with 10M rows,
//! seconds per sweep, even for one changed row (an UPDATE behind a view took 3.2 s to show
//! instead of 0.17 s). When the database says the column is a time (`timestamptz`, `timestamp`,
//! `date`), the rows are ordered by the column itself, which sorts the same and reads the
//! `lastmod` index of the table behind the view. The type is asked at each read (one catalog
//! row), so a view redefined with another type is read right from its next sweep.
//!
//! A sweep of a view now asks [`Sql::recent_in`] instead, one file's id range at a time (see
//! `sweep/feeds.rs`): a sort of one file's rows, whatever the column's type.

use super::super::{IdRange, RawEntry, StoreError};
use super::impl_sql;

/// Column types a `lastmod` is ordered by as it is: each sorts as the instants it holds.
const TIME_TYPES: [&str; 3] = [
    "timestamp with time zone",
    "timestamp without time zone",
    "date",
];

impl_sql! {
    /// Up to `limit` entries with a lastmod and an id in `range`, the most recently modified
    /// first: a view's feeds, read one file at a time (sorting a file's rows, not the view's).
    pub async fn recent_in(&self, range: IdRange, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        let rows = match &self.reads.recent_in_literal {
            Some(head) => {
                let sql = format!(
                    "{head}{} ORDER BY {} DESC, src.id DESC LIMIT {limit}",
                    super::reads::id_within("src.id", range),
                    self.reads.recent_key
                );
                sqlx::query::<DB>(&sql).persistent(false).fetch_all(&self.pool).await?
            }
            None => {
                sqlx::query::<DB>(&self.reads.recent_in)
                    .bind(range.first)
                    .bind(range.last)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        Ok(rows.iter().map(DB::raw_entry).collect())
    }

    /// Up to `limit` entries with a lastmod, the most recently modified first.
    pub async fn recent(&self, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        let statement = match self.lastmod_is_a_time().await? {
            true => &self.reads.recent_by_column,
            false => &self.reads.recent,
        };
        let rows = sqlx::query::<DB>(statement)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(DB::raw_entry).collect())
    }

    /// Whether the source's `lastmod` column is of a time type, as far as the database tells.
    async fn lastmod_is_a_time(&self) -> Result<bool, StoreError> {
        let Some(query) = DB::lastmod_type_query() else {
            return Ok(false);
        };
        let found: Option<String> = sqlx::query_scalar::<DB, String>(query)
            .bind(self.reads.source.as_str())
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some_and(|kind| TIME_TYPES.contains(&kind.as_str())))
    }
}
