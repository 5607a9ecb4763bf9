//! The crawl log's statements (see `store/crawls.rs`): batches joined with the stored rows in
//! the database, listed URLs looked up by loc, and the reports' queries.

use sqlx::Row;

use super::super::{CrawlRow, ListedLoc, PathRow, StoreError, Waiting, BUILTIN_SOURCE};
use super::{added, impl_sql, stored, Dialect, Upsert};

/// Rows written per statement (a few thousand bound values at most).
const ROWS_PER_STATEMENT: usize = 250;
/// Locs looked up per statement: few enough that PostgreSQL looks each up in the loc index
/// rather than scanning the source (at 100,000 rows it scans from about 1,000 on, three times
/// slower).
const LOCS_PER_STATEMENT: usize = 250;

/// `items` in pieces of `most`, then of powers of two for the rest: a statement of each
/// length is prepared once and kept by the driver (and by SQLite, a large program), so a
/// dozen lengths keep that cache small where every length from 1 to `most` grew it for long.
fn in_shapes<T>(mut items: &[T], most: usize) -> Vec<&[T]> {
    let mut pieces = Vec::new();
    while !items.is_empty() {
        let length = if items.len() >= most {
            most
        } else {
            1 << items.len().ilog2()
        };
        let (piece, rest) = items.split_at(length);
        pieces.push(piece);
        items = rest;
    }
    pieces
}

fn list(count: usize, each: &str) -> String {
    vec![each; count].join(", ")
}

const CRAWL_COLUMNS: &str = "crawler, entry_id, path, fetches, last_fetch, last_status, \
                             lastmod, fresh_at, freshness";
const PATH_COLUMNS: &str =
    "kind, crawler, verification, path_key, status, path, fetches, last_fetch, rule";

/// [`PATH_COLUMNS`] as read back.
fn path_columns<DB: Dialect>() -> String {
    format!(
        "{} AS kind, {} AS crawler, {} AS verification, path_key, status, {} AS path, fetches, \
         last_fetch, {} AS rule",
        DB::text("kind"),
        DB::text("crawler"),
        DB::text("verification"),
        DB::text("path"),
        DB::text("rule")
    )
}

fn path_row<R: Row>(row: &R) -> Result<PathRow, sqlx::Error>
where
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    &'static str: sqlx::ColumnIndex<R>,
{
    let kind: String = row.try_get("kind")?;
    Ok(PathRow {
        kind: if kind == "outside" {
            "outside"
        } else {
            "disallowed"
        },
        crawler: row.try_get("crawler")?,
        verification: row.try_get("verification")?,
        path_key: row.try_get("path_key")?,
        status: row.try_get("status")?,
        path: row.try_get("path")?,
        fetches: row.try_get("fetches")?,
        last_fetch: row.try_get("last_fetch")?,
        rule: row.try_get("rule")?,
    })
}

/// How a batch's row of `sitemapd_crawls` joins the stored one, in the order MySQL needs
/// (each column set after the expressions that read its stored value):
/// - `fetches` add up; the later fetch gives `path`, `last_status` and `last_fetch`;
/// - the same `lastmod` keeps the earlier of the two first fetches after it (`fresh_at`,
///   `freshness`); a new one starts over from the batch's; a batch without one keeps the stored.
fn crawl_join<DB: Dialect>() -> Vec<(&'static str, String)> {
    const TABLE: &str = "sitemapd_crawls";
    let new = |c: &str| DB::inserted(c);
    let old = |c: &str| stored(TABLE, c);
    let later = |c: &str| {
        of_later_fetch(
            ">=",
            &new("last_fetch"),
            &old("last_fetch"),
            &new(c),
            &old(c),
        )
    };
    let first_after = |c: &str| {
        format!(
            "CASE WHEN {nl} IS NULL THEN {oc} \
             WHEN {ol} IS NULL OR {ol} <> {nl} THEN {nc} \
             WHEN {nf} IS NULL THEN {oc} \
             WHEN {of} IS NULL OR {nf} < {of} THEN {nc} \
             ELSE {oc} END",
            nl = new("lastmod"),
            ol = old("lastmod"),
            nf = new("fresh_at"),
            of = old("fresh_at"),
            nc = new(c),
            oc = old(c),
        )
    };
    vec![
        added::<DB>(TABLE, "fetches"),
        ("path", later("path")),
        ("last_status", later("last_status")),
        ("last_fetch_at", later("last_fetch_at")),
        ("last_fetch", later("last_fetch")),
        ("freshness", first_after("freshness")),
        ("fresh_at", first_after("fresh_at")),
        (
            "lastmod",
            format!("COALESCE({}, {})", new("lastmod"), old("lastmod")),
        ),
    ]
}

/// How a batch's row of `sitemapd_crawl_paths` joins the stored one: fetches add up, the
/// later last fetch stays, the batch's path and rule replace the stored.
fn path_join<DB: Dialect>() -> Vec<(&'static str, String)> {
    const TABLE: &str = "sitemapd_crawl_paths";
    let (new_at, old_at) = (DB::inserted("last_fetch"), stored(TABLE, "last_fetch"));
    vec![
        added::<DB>(TABLE, "fetches"),
        (
            "last_fetch",
            of_later_fetch(">", &new_at, &old_at, &new_at, &old_at),
        ),
        ("path", DB::inserted("path")),
        ("rule", DB::inserted("rule")),
    ]
}

/// `new` when the offered row's fetch (`new_at`) is later than the stored one's (`old_at`) by
/// `comparison` (`>` or `>=`, ties going to the offered row), else `old`.
fn of_later_fetch(comparison: &str, new_at: &str, old_at: &str, new: &str, old: &str) -> String {
    format!("CASE WHEN {new_at} {comparison} {old_at} THEN {new} ELSE {old} END")
}

/// The join of a group's fetches with its source, keeping URLs changed since their last fetch.
fn waiting_from<DB: Dialect>(source: &str) -> String {
    format!(
        "FROM sitemapd_crawls c JOIN {} s ON s.id = c.entry_id \
         WHERE c.site = ? AND c.grp = ? AND s.lastmod IS NOT NULL AND {} > c.last_fetch_at",
        DB::quote(source),
        DB::instant_key("s.lastmod"),
    )
}

impl_sql! {
    pub async fn listed_by_loc(&self, source: &str, locs: &[String]) -> Result<Vec<ListedLoc>, StoreError> {
        let mut found = Vec::new();
        for chunk in in_shapes(locs, LOCS_PER_STATEMENT) {
            let (key, before, after) = if source == BUILTIN_SOURCE {
                DB::loc_key()
            } else {
                ("loc", "", "")
            };
            let sql = DB::placeholders(&format!(
                "SELECT {} AS id, {} AS loc, {} AS lastmod FROM {} AS s WHERE s.{key} IN ({})",
                DB::int("s.id"),
                DB::text("s.loc"),
                DB::time("s.lastmod"),
                DB::quote(source),
                list(chunk.len(), &format!("{before}?{after}")),
            ));
            let mut query = sqlx::query::<DB>(&sql);
            for loc in chunk {
                query = query.bind(loc.as_str());
            }
            for row in query.fetch_all(&self.pool).await? {
                found.push(ListedLoc {
                    id: row.try_get("id")?,
                    loc: row.try_get("loc")?,
                    lastmod: DB::read_time(&row, "lastmod"),
                });
            }
        }
        Ok(found)
    }

    pub async fn add_crawls(&self, site: &str, group: &str, rows: &[CrawlRow]) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for chunk in in_shapes(rows, ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO sitemapd_crawls (site, grp, {CRAWL_COLUMNS}, last_fetch_at) VALUES {}{}",
                list(chunk.len(), &format!("({})", list(12, "?"))),
                DB::on_conflict_set("site, grp, crawler, entry_id", &crawl_join::<DB>()),
            ));
            let mut query = sqlx::query::<DB>(&sql);
            for row in chunk {
                query = query
                    .bind(site)
                    .bind(group)
                    .bind(row.crawler.as_str())
                    .bind(row.entry_id)
                    .bind(row.path.as_str())
                    .bind(row.fetches)
                    .bind(row.last_fetch)
                    .bind(row.last_status)
                    .bind(row.lastmod)
                    .bind(row.fresh_at)
                    .bind(row.freshness)
                    .bind(DB::instant(row.last_fetch.saturating_mul(1_000_000)));
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn add_paths(&self, site: &str, rows: &[PathRow]) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for chunk in in_shapes(rows, ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO sitemapd_crawl_paths (site, {PATH_COLUMNS}) VALUES {}{}",
                list(chunk.len(), &format!("({})", list(10, "?"))),
                DB::on_conflict_set(
                    "site, kind, crawler, verification, path_key, status",
                    &path_join::<DB>(),
                ),
            ));
            let mut query = sqlx::query::<DB>(&sql);
            for row in chunk {
                query = query
                    .bind(site)
                    .bind(row.kind)
                    .bind(row.crawler.as_str())
                    .bind(row.verification.as_str())
                    .bind(row.path_key)
                    .bind(row.status)
                    .bind(row.path.as_str())
                    .bind(row.fetches)
                    .bind(row.last_fetch)
                    .bind(row.rule.as_deref());
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn trim_paths(&self, site: &str, kind: &str, keep: i64) -> Result<(), StoreError> {
        let threshold: Option<i64> = sqlx::query_scalar::<DB, i64>(&DB::placeholders(
            "SELECT fetches FROM sitemapd_crawl_paths WHERE site = ? AND kind = ? AND path_key <> 0 \
             ORDER BY fetches DESC LIMIT 1 OFFSET ?",
        ))
        .bind(site)
        .bind(kind)
        .bind(keep)
        .fetch_optional(&self.pool)
        .await?;
        let Some(threshold) = threshold else {
            return Ok(());
        };
        // Ties at the threshold stay unless they would double the bound.
        let over: i64 = sqlx::query_scalar::<DB, i64>(&DB::placeholders(
            "SELECT count(*) FROM sitemapd_crawl_paths WHERE site = ? AND kind = ? AND path_key <> 0 AND fetches >= ?",
        ))
        .bind(site)
        .bind(kind)
        .bind(threshold)
        .fetch_one(&self.pool)
        .await?;
        let comparison = if over > keep.saturating_mul(2) { "<=" } else { "<" };
        sqlx::query::<DB>(&DB::placeholders(&format!(
            "DELETE FROM sitemapd_crawl_paths WHERE site = ? AND kind = ? AND path_key <> 0 AND fetches {comparison} ?"
        )))
        .bind(site)
        .bind(kind)
        .bind(threshold)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn crawl_coverage(&self, site: &str, group: &str, since: i64) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT {} AS crawler, count(*) AS n FROM sitemapd_crawls \
             WHERE site = ? AND grp = ? AND last_fetch >= ? GROUP BY crawler",
            DB::text("crawler")
        )))
        .bind(site)
        .bind(group)
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("crawler")?, row.try_get("n")?)))
            .collect()
    }

    pub async fn crawl_waiting_counts(&self, source: &str, site: &str, group: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let sql = DB::placeholders(&format!(
            "SELECT {} AS crawler, count(*) AS n {} GROUP BY c.crawler",
            DB::text("c.crawler"),
            waiting_from::<DB>(source)
        ));
        let rows = sqlx::query::<DB>(&sql)
            .bind(site)
            .bind(group)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("crawler")?, row.try_get("n")?)))
            .collect()
    }

    pub async fn crawl_waiting_examples(
        &self,
        source: &str,
        site: &str,
        group: &str,
        crawler: &str,
        limit: i64,
    ) -> Result<Vec<Waiting>, StoreError> {
        let sql = DB::placeholders(&format!(
            "SELECT {} AS path, c.last_fetch AS last_fetch, {} AS lastmod {} AND c.crawler = ? \
             ORDER BY {}, c.entry_id LIMIT ?",
            DB::text("c.path"),
            DB::time("s.lastmod"),
            waiting_from::<DB>(source),
            DB::instant_key("s.lastmod"),
        ));
        let rows = sqlx::query::<DB>(&sql)
            .bind(site)
            .bind(group)
            .bind(crawler)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(Waiting {
                    path: row.try_get("path")?,
                    last_fetch: row.try_get("last_fetch")?,
                    lastmod: DB::read_time(row, "lastmod"),
                })
            })
            .collect()
    }

    pub async fn crawl_freshness(
        &self,
        site: &str,
        group: &str,
        crawler: &str,
        since: i64,
        quantiles: &[f64],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        let filter = "FROM sitemapd_crawls WHERE site = ? AND grp = ? AND crawler = ? \
                      AND fresh_at >= ? AND freshness IS NOT NULL";
        let count: i64 = sqlx::query_scalar::<DB, i64>(&DB::placeholders(&format!(
            "SELECT count(*) {filter}"
        )))
        .bind(site)
        .bind(group)
        .bind(crawler)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        let mut answers = Vec::with_capacity(quantiles.len());
        for q in quantiles {
            if count == 0 {
                answers.push(None);
                continue;
            }
            // The nearest-rank quantile: the value at rank ceil(q × count).
            let rank = ((q * count as f64).ceil() as i64).clamp(1, count);
            let value: Option<i64> = sqlx::query_scalar::<DB, i64>(&DB::placeholders(&format!(
                "SELECT freshness {filter} ORDER BY freshness LIMIT 1 OFFSET ?"
            )))
            .bind(site)
            .bind(group)
            .bind(crawler)
            .bind(since)
            .bind(rank - 1)
            .fetch_optional(&self.pool)
            .await?;
            answers.push(value);
        }
        Ok(answers)
    }

    pub async fn crawl_paths(&self, site: &str, kind: &str, totals: bool, limit: i64) -> Result<Vec<PathRow>, StoreError> {
        let which = if totals { "=" } else { "<>" };
        let sql = DB::placeholders(&format!(
            "SELECT {} FROM sitemapd_crawl_paths WHERE site = ? AND kind = ? AND path_key {which} 0 \
             ORDER BY CASE WHEN status = 404 OR (status >= 300 AND status < 400) THEN 0 ELSE 1 END, \
             fetches DESC, path_key LIMIT ?",
            path_columns::<DB>()
        ));
        let rows = sqlx::query::<DB>(&sql)
            .bind(site)
            .bind(kind)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(path_row).collect::<Result<Vec<_>, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::in_shapes;

    #[test]
    fn statements_come_in_a_few_lengths() {
        let items: Vec<usize> = (0..777).collect();
        let lengths: Vec<usize> = in_shapes(&items, 250).iter().map(|p| p.len()).collect();
        assert_eq!(lengths, [250, 250, 250, 16, 8, 2, 1]);
        let joined: Vec<usize> = in_shapes(&items, 250).concat();
        assert_eq!(joined, items);
        assert!(in_shapes::<u8>(&[], 250).is_empty());
    }
}
