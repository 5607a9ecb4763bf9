//! Per-file summaries computed by the database: for each file's id range, the count and a sum
//! of row hashes of the source's rows and of their extension rows. Comparing them with those
//! stored when the files were measured tells which files changed, without sending a row.

use sqlx::Row;

use super::super::{StoreError, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE};
use super::{impl_sql, Dialect};

/// One part of a file's summary: rows of `table` (aliased `src`) by the bucket of `id`.
fn part<DB: Dialect>(
    tag: &str,
    table: &str,
    id: &str,
    values: &str,
    thresholds: &[i64],
) -> Option<String> {
    // Rows no id range holds (a NULL id, one beyond 64 bits) are read with the first file.
    let bucket = DB::int(&format!(
        "CASE WHEN {id} IS NULL OR {id} > 9223372036854775807 THEN 0 ELSE {} END",
        DB::bucket(id, thresholds)?
    ));
    Some(format!(
        "SELECT {bucket} AS b, CONCAT('{tag}', COUNT(*), ':', COALESCE(SUM({}), 0)) AS part \
         FROM {table} AS src GROUP BY 1",
        DB::row_hash(values)
    ))
}

/// The summary of every file cut at `thresholds`, from `source` and the extension tables.
fn statement<DB: Dialect>(source: &str, thresholds: &[i64]) -> Option<String> {
    let parts = [
        part::<DB>(
            "e",
            source,
            "src.id",
            "src.id, src.loc, src.lastmod, src.changefreq, src.priority",
            thresholds,
        )?,
        part::<DB>(
            "a",
            ALTERNATES_TABLE,
            "src.entry_id",
            "src.entry_id, src.hreflang, src.href",
            thresholds,
        )?,
        part::<DB>(
            "i",
            IMAGES_TABLE,
            "src.entry_id",
            "src.entry_id, src.id, src.loc",
            thresholds,
        )?,
        // Files without videos summarise as they did before the table existed.
        part::<DB>(
            "v",
            VIDEOS_TABLE,
            "src.entry_id",
            "src.entry_id, src.id, src.thumbnail_loc, src.title, src.description, \
             src.content_loc, src.player_loc, src.duration, src.publication_date",
            thresholds,
        )?,
    ];
    Some(format!(
        "SELECT b, {} AS summary FROM ({}) AS parts GROUP BY b",
        DB::text(&DB::ordered_join("part")),
        parts.join(" UNION ALL ")
    ))
}

impl_sql! {
    /// Each file's summary, for files cut at `thresholds` (one more file than thresholds); an
    /// empty text for a file with no rows. `None` where the database cannot summarise.
    pub async fn file_summaries(&self, thresholds: &[i64]) -> Result<Option<Vec<String>>, StoreError> {
        let Some(sql) = statement::<DB>(&self.reads.source, thresholds) else {
            return Ok(None);
        };
        // Not kept prepared: its text changes with the files' boundaries (kept, it would only
        // fill the statement cache), and MariaDB 10.11 refuses to run a kept statement again
        // when it sums a view whose column is an aggregate subquery.
        let rows = sqlx::query::<DB>(&sql)
            .persistent(false)
            .fetch_all(&self.pool)
            .await?;
        let mut summaries = vec![String::new(); thresholds.len() + 1];
        for row in rows {
            let bucket: i64 = row.try_get("b")?;
            let summary: String = row.try_get("summary")?;
            if let Some(slot) = usize::try_from(bucket).ok().and_then(|b| summaries.get_mut(b)) {
                *slot = summary;
            }
        }
        Ok(Some(summaries))
    }
}
