//! Per-file summaries computed by the database: for each file's id range, the count and a sum
//! of row hashes of the source's rows and of their extension rows. Comparing them with those
//! stored when the files were measured tells which files changed, without sending a row.
//!
//! One statement per file, bounded by the file's id range: a view the engine cannot merge into
//! the query (a `UNION`, a recursive CTE) is built only for the rows of that range, where one
//! statement grouping the whole source by file built all of it at once.

use futures::{StreamExt, TryStreamExt};
use sqlx::Row;

use super::super::{
    IdRange, StoreError, SummaryPace, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE,
};
use super::{impl_sql, Dialect};

/// Files summarised at once, where the pool has room.
const SUMMARIES_AT_ONCE: usize = 2;

/// One part of a file's summary: rows of `table` (aliased `src`) whose `id` is in the file.
/// The first file also holds the rows no id range holds (a NULL id, one beyond 64 bits).
fn part<DB: Dialect>(tag: &str, table: &str, id: &str, values: &str, file: IdRange) -> String {
    let unplaced = match file.first == i64::MIN {
        true => format!(" OR {id} IS NULL OR {id} > 9223372036854775807"),
        false => String::new(),
    };
    format!(
        "SELECT CONCAT('{tag}', COUNT(*), ':', COALESCE(SUM({}), 0)) AS part \
         FROM {table} AS src WHERE ({}{unplaced}) HAVING COUNT(*) > 0",
        DB::row_hash(values),
        in_range(id, file),
    )
}

/// `id` within `file`, the open ends left out: an id compares with 64-bit literals only
/// (PostgreSQL reads -9223372036854775808 as a numeric, which no index on the id serves).
fn in_range(id: &str, file: IdRange) -> String {
    match (file.first == i64::MIN, file.last == i64::MAX) {
        (true, true) => format!("{id} = {id} OR {id} IS NULL"),
        (true, false) => format!("{id} <= {}", file.last),
        (false, true) => format!("{id} >= {}", file.first),
        (false, false) => format!("{id} BETWEEN {} AND {}", file.first, file.last),
    }
}

/// The summary of the file holding the ids of `file`, from `source` and the extension tables
/// (where the database has them: a source database of its own may not).
fn statement<DB: Dialect>(source: &str, file: IdRange, extension_tables: bool) -> String {
    let mut parts = vec![part::<DB>(
        "e",
        source,
        "src.id",
        "src.id, src.loc, src.lastmod, src.changefreq, src.priority",
        file,
    )];
    let extensions = [
        part::<DB>(
            "a",
            ALTERNATES_TABLE,
            "src.entry_id",
            "src.entry_id, src.hreflang, src.href",
            file,
        ),
        part::<DB>(
            "i",
            IMAGES_TABLE,
            "src.entry_id",
            "src.entry_id, src.id, src.loc",
            file,
        ),
        // Files without videos summarise as they did before the table existed.
        part::<DB>(
            "v",
            VIDEOS_TABLE,
            "src.entry_id",
            "src.entry_id, src.id, src.thumbnail_loc, src.title, src.description, \
             src.content_loc, src.player_loc, src.duration, src.publication_date",
            file,
        ),
    ];
    if extension_tables {
        parts.extend(extensions);
    }
    format!(
        "SELECT {} AS summary FROM ({}) AS parts",
        DB::text(&DB::ordered_join("part")),
        parts.join(" UNION ALL ")
    )
}

/// The id ranges of the files cut at `thresholds` (the first ids of every file but the first).
pub(in crate::store) fn file_ranges(thresholds: &[i64]) -> Vec<IdRange> {
    let firsts = std::iter::once(i64::MIN).chain(thresholds.iter().copied());
    let lasts = thresholds
        .iter()
        .map(|next| next.saturating_sub(1))
        .chain(std::iter::once(i64::MAX));
    firsts
        .zip(lasts)
        .map(|(first, last)| IdRange { first, last })
        .collect()
}

impl_sql! {
    /// Each file's summary, for files cut at `thresholds` (one more file than thresholds); an
    /// empty text for a file with no rows. `None` where the database cannot summarise.
    pub async fn file_summaries(&self, thresholds: &[i64], pace: SummaryPace) -> Result<Option<Vec<String>>, StoreError> {
        if !DB::SUMMARISES {
            return Ok(None);
        }
        // Two files at a time where the pool has room: the database summarises on two cores.
        let at_once = match (pace, self.pool.options().get_max_connections()) {
            (SummaryPace::Gentle, _) | (_, 0..=3) => 1,
            (SummaryPace::Quick, _) => SUMMARIES_AT_ONCE,
        };
        self.summaries_of(&file_ranges(thresholds), at_once).await
    }

    /// The summaries of the files holding the ids of `files`, `at_once` at a time; `None`
    /// where the database cannot summarise.
    pub async fn summaries_of(&self, files: &[IdRange], at_once: usize) -> Result<Option<Vec<String>>, StoreError> {
        if !DB::SUMMARISES {
            return Ok(None);
        }
        let extension_tables = self.has_extension_tables().await?;
        let summaries = futures::stream::iter(files.iter().copied())
            .map(|file| self.file_summary(file, extension_tables))
            .buffered(at_once.max(1))
            .try_collect()
            .await?;
        Ok(Some(summaries))
    }

    /// The summary of the file holding the ids of `file` (empty for no rows).
    async fn file_summary(&self, file: IdRange, extension_tables: bool) -> Result<String, StoreError> {
        // Not kept prepared: its text changes with the files' boundaries (kept, it would only
        // fill the statement cache), and MariaDB 10.11 refuses to run a kept statement again
        // when it sums a view whose column is an aggregate subquery.
        let row = sqlx::query::<DB>(&statement::<DB>(&self.reads.source, file, extension_tables))
            .persistent(false)
            .fetch_optional(&self.pool)
            .await?;
        let summary: Option<String> = match row {
            Some(row) => row.try_get("summary")?,
            None => None,
        };
        Ok(summary.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_ranges_cover_every_id_once() {
        assert_eq!(file_ranges(&[]), vec![IdRange::ALL]);
        assert_eq!(
            file_ranges(&[10, 20]),
            vec![
                IdRange {
                    first: i64::MIN,
                    last: 9
                },
                IdRange {
                    first: 10,
                    last: 19
                },
                IdRange {
                    first: 20,
                    last: i64::MAX
                },
            ]
        );
    }
}
