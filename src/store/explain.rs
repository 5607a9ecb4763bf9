//! Whether the database can read a source by id range, asked of its planner: `EXPLAIN` of a read
//! of one id against a read of all. Every statement sitemapd sends is bounded by an id range; a
//! view whose `id` the engine cannot push down (an id computed, grouped, or numbered by a window
//! function) is built whole for each of them, which a site outgrows. Said once at start, with
//! what to change, rather than found out through statement timeouts.

use sqlx::Row;

use super::{
    quote_identifier, rows::quote_identifier_with, Backend, Store, StoreError, BUILTIN_SOURCE,
};

/// Sources estimated at fewer rows than this are read whole cheaply, whatever their shape.
const WORTH_ASKING: f64 = 10_000.0;

/// What the planner says of reading a source by id range.
#[derive(Debug, Clone, PartialEq)]
pub enum RangeReads {
    /// An id range reaches the tables: a read costs the rows it returns.
    Bounded,
    /// Reading one id costs about what reading all does (the planner's estimates, in its unit).
    Whole { one_id: f64, all: f64 },
    /// The planner did not say (SQLite, a small source, an answer of another shape).
    Unknown,
}

impl RangeReads {
    /// The warning to log at start, if any.
    pub fn warning(&self, source: &str) -> Option<String> {
        let RangeReads::Whole { one_id, all } = self else {
            return None;
        };
        Some(format!(
            "{source}: the database cannot read it by id range (its planner estimates \
             {one_id:.0} for one id, {all:.0} for all of it): every read of a file builds the \
             whole view, so reads slow down as the site grows and may end on \
             DATABASE_STATEMENT_TIMEOUT_SECS. Give the view an `id` taken straight from a \
             table's primary key (not computed, grouped, or numbered by a window function) so \
             that `WHERE id BETWEEN …` reaches that table (docs/guide.md, \"The data\")"
        ))
    }
}

impl Store {
    /// See [`RangeReads`]. Errors (a source that does not exist yet) are `Unknown`.
    pub async fn range_reads(&self, source: &str) -> RangeReads {
        if source == BUILTIN_SOURCE {
            return RangeReads::Bounded;
        }
        let estimates = match &self.source {
            Backend::Mysql(s) => mysql_estimates(s.pool(), source).await,
            Backend::Postgres(s) => postgres_estimates(s.pool(), source).await,
            Backend::Sqlite(_) => return RangeReads::Unknown,
        };
        match estimates {
            Ok(Some((one_id, all))) => judge(one_id, all),
            Ok(None) => RangeReads::Unknown,
            Err(e) => {
                tracing::debug!(%source, error = %crate::error::Chain(&e), "cannot EXPLAIN the source");
                RangeReads::Unknown
            }
        }
    }
}

fn judge(one_id: f64, all: f64) -> RangeReads {
    match (all >= WORTH_ASKING, one_id * 2.0 >= all) {
        (true, true) => RangeReads::Whole { one_id, all },
        (true, false) => RangeReads::Bounded,
        (false, _) => RangeReads::Unknown,
    }
}

/// The statements compared: a read of one id, and of all.
fn reads(quoted: &str) -> [String; 2] {
    [
        format!("SELECT src.id FROM {quoted} AS src WHERE src.id BETWEEN 1 AND 1"),
        format!("SELECT src.id FROM {quoted} AS src"),
    ]
}

/// MySQL/MariaDB: the rows the outermost query reads (its `PRIMARY` or `SIMPLE` lines).
async fn mysql_estimates(
    pool: &sqlx::MySqlPool,
    source: &str,
) -> Result<Option<(f64, f64)>, StoreError> {
    let mut estimates = Vec::with_capacity(2);
    for read in reads(&quote_identifier_with(source, '`')) {
        let rows = sqlx::query(&format!("EXPLAIN {read}"))
            .persistent(false)
            .fetch_all(pool)
            .await?;
        let outer = rows
            .iter()
            .filter(|row| {
                matches!(
                    mysql_text(row, "select_type").as_deref(),
                    Some("PRIMARY" | "SIMPLE")
                )
            })
            .filter_map(|row| mysql_number(row, "rows"))
            .fold(None, |most: Option<f64>, rows| {
                Some(most.map_or(rows, |m| m.max(rows)))
            });
        let Some(outer) = outer else {
            return Ok(None);
        };
        estimates.push(outer);
    }
    Ok(Some((estimates[0], estimates[1])))
}

/// A column of `EXPLAIN`'s answer as text, whichever type the server gives it.
fn mysql_text(row: &sqlx::mysql::MySqlRow, column: &str) -> Option<String> {
    row.try_get::<Option<String>, _>(column)
        .ok()
        .flatten()
        .or_else(|| {
            let bytes: Option<Vec<u8>> = row.try_get(column).ok().flatten();
            bytes.map(|b| String::from_utf8_lossy(&b).into_owned())
        })
}

/// A number of `EXPLAIN`'s answer, whichever type the server gives it.
fn mysql_number(row: &sqlx::mysql::MySqlRow, column: &str) -> Option<f64> {
    if let Ok(Some(n)) = row.try_get::<Option<u64>, _>(column) {
        return Some(n as f64);
    }
    if let Ok(Some(n)) = row.try_get::<Option<i64>, _>(column) {
        return Some(n as f64);
    }
    mysql_text(row, column)?.trim().parse().ok()
}

/// PostgreSQL: the plan's total cost, from the first line of `EXPLAIN`
/// (`… (cost=0.00..15406.00 rows=1000000 width=8)`).
async fn postgres_estimates(
    pool: &sqlx::PgPool,
    source: &str,
) -> Result<Option<(f64, f64)>, StoreError> {
    let mut estimates = Vec::with_capacity(2);
    for read in reads(&quote_identifier(source)) {
        let first: String = sqlx::query_scalar(&format!("EXPLAIN {read}"))
            .persistent(false)
            .fetch_one(pool)
            .await?;
        let Some(cost) = total_cost(&first) else {
            return Ok(None);
        };
        estimates.push(cost);
    }
    Ok(Some((estimates[0], estimates[1])))
}

/// The total cost in a PostgreSQL plan line.
fn total_cost(line: &str) -> Option<f64> {
    let after = &line[line.find("cost=")? + 5..];
    let total = &after[after.find("..")? + 2..];
    total.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_read_whole_for_one_id_is_reported_and_a_small_one_is_not() {
        assert_eq!(judge(2.0, 915_020.0), RangeReads::Bounded);
        assert!(matches!(
            judge(915_018.0, 915_018.0),
            RangeReads::Whole { .. }
        ));
        assert_eq!(judge(500.0, 900.0), RangeReads::Unknown);
        assert!(RangeReads::Whole {
            one_id: 1.0,
            all: 2.0
        }
        .warning("v")
        .unwrap()
        .contains("v: "));
        assert!(RangeReads::Bounded.warning("v").is_none());
    }

    #[test]
    fn a_plan_line_gives_its_total_cost() {
        let line = "Seq Scan on t src  (cost=0.00..15406.00 rows=1000000 width=8)";
        assert_eq!(total_cost(line), Some(15406.0));
        assert_eq!(total_cost("Result"), None);
    }
}
