//! Whether the tables behind a view changed, as MySQL and MariaDB keep it themselves: InnoDB
//! sets a table's `UPDATE_TIME` (information_schema.TABLES) when a transaction that wrote it
//! commits. Reading it costs a few catalogue lookups, where summarising a view's files costs a
//! pass over every row: a refresh that finds every stamp where the last sweep left it reads
//! nothing else.
//!
//! The tables are found through the views' definitions (MariaDB has no VIEW_TABLE_USAGE), which
//! the server stores with every table named `db`.`table`; the definitions are part of the stamp,
//! so a view redefined counts as a change.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sqlx::mysql::{MySqlConnection, MySqlPool};
use sqlx::{Executor, Row};

use super::super::{SourceStamp, StoreError};

/// Views followed through views at most (a view naming itself cannot loop).
const MAX_VIEWS: usize = 64;

/// A table or view as the catalogue names it: its schema and name.
pub(super) type Name = (String, String);

/// What a source reads, as the catalogue says: the definitions of the views it reads (through
/// views over views) and each base table's last commit time.
pub(super) struct Behind {
    pub(super) views: BTreeMap<Name, String>,
    pub(super) tables: BTreeMap<Name, String>,
    /// No table behind was written in this second (a write now may not be in the stamp yet).
    settled: bool,
}

impl Behind {
    /// The views' definitions and the tables' names, one per line, with each table's last
    /// commit time when `commit_times` (the stamp), without (the source's definition).
    pub(super) fn text(&self, commit_times: bool) -> String {
        let views = self
            .views
            .iter()
            .map(|((db, name), definition)| format!("view {db}.{name} {definition}"));
        let tables = self
            .tables
            .iter()
            .map(|((db, name), updated)| match commit_times {
                true => format!("table {db}.{name} {updated}"),
                false => format!("table {db}.{name}"),
            });
        views.chain(tables).collect::<Vec<_>>().join("\n")
    }
}

/// The schema the connection reads by default (where sitemapd's own tables are).
pub(super) async fn own_schema(conn: &mut MySqlConnection) -> Result<String, StoreError> {
    Ok(sqlx::query_scalar("SELECT CAST(DATABASE() AS CHAR)")
        .fetch_one(&mut *conn)
        .await?)
}

/// The stamp of `source` (`table`, `view` or `db`.`view`) and of the tables `also` names (the
/// extension tables a group merges in, which no view names): the definitions of the views they
/// read and each base table's last commit time. `None` when the server cannot say (a
/// definition it hides, or no table found).
pub(super) async fn source_stamp(
    pool: &MySqlPool,
    source: &str,
    also: &[&str],
) -> Result<Option<SourceStamp>, StoreError> {
    let mut conn = pool.acquire().await?;
    // MySQL 8 caches these columns for a day unless told not to; MariaDB has no such cache.
    let _ = conn
        .execute("SET SESSION information_schema_stats_expiry = 0")
        .await;
    let names: Vec<&str> = std::iter::once(source)
        .chain(also.iter().copied())
        .collect();
    let Some(behind) = behind(&mut conn, &names).await? else {
        return Ok(None);
    };
    if behind.tables.is_empty() {
        return Ok(None);
    }
    let text = behind.text(true);
    Ok(Some(SourceStamp::new(&text, behind.settled)))
}

/// The views and tables behind `names` (each `table`, `view` or `db`.`view`), followed through
/// the views' stored definitions; `None` when the server hides a definition.
pub(super) async fn behind(
    conn: &mut MySqlConnection,
    names: &[&str],
) -> Result<Option<Behind>, StoreError> {
    let schema = own_schema(conn).await?;
    let mut pending: VecDeque<Name> = names.iter().map(|name| split(name, &schema)).collect();
    let mut seen = BTreeSet::new();
    let mut found = Behind {
        views: BTreeMap::new(),
        tables: BTreeMap::new(),
        settled: true,
    };
    while let Some(name) = pending.pop_front() {
        if !seen.insert(name.clone()) || found.views.len() > MAX_VIEWS {
            continue;
        }
        let row = sqlx::query(
            "SELECT CAST(t.TABLE_TYPE AS CHAR) AS kind, CAST(t.UPDATE_TIME AS CHAR) AS updated, \
             COALESCE(t.UPDATE_TIME < NOW(), 1) AS settled, CAST(v.VIEW_DEFINITION AS CHAR) AS definition \
             FROM information_schema.TABLES t LEFT JOIN information_schema.VIEWS v \
               ON v.TABLE_SCHEMA = t.TABLE_SCHEMA AND v.TABLE_NAME = t.TABLE_NAME \
             WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ?",
        )
        .bind(&name.0)
        .bind(&name.1)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(row) = row else { continue };
        let kind: String = row.try_get("kind")?;
        if kind == "VIEW" {
            let definition: Option<String> = row.try_get("definition")?;
            let Some(definition) = definition.filter(|d| !d.is_empty()) else {
                return Ok(None);
            };
            pending.extend(named_tables(&definition));
            found.views.insert(name, definition);
        } else {
            let updated: Option<String> = row.try_get("updated")?;
            found.settled &= row.try_get::<i64, _>("settled")? != 0;
            found
                .tables
                .insert(name, updated.unwrap_or_else(|| "NULL".into()));
        }
    }
    Ok(Some(found))
}

/// `db.name` or `name` (in `schema`), without quotes.
pub(super) fn split(source: &str, schema: &str) -> Name {
    let unquote = |s: &str| s.trim().trim_matches('`').replace("``", "`");
    match source.split_once('.') {
        Some((db, name)) => (unquote(db), unquote(name)),
        None => (schema.to_string(), unquote(source)),
    }
}

/// Every `` `a`.`b` `` pair a stored view definition names: its tables and views, and (from
/// `` `db`.`table`.`column` ``) pairs that name no table, which the catalogue then does not find.
fn named_tables(definition: &str) -> BTreeSet<Name> {
    let mut found = BTreeSet::new();
    let mut previous: Option<String> = None;
    let mut rest = definition;
    while let Some(start) = rest.find('`') {
        let (identifier, after) = quoted(&rest[start..]);
        if let (Some(first), Some(second)) = (previous.take(), identifier.clone()) {
            if rest[..start].is_empty() {
                found.insert((first, second));
            }
        }
        previous = identifier;
        rest = after;
        // Only a dot right after an identifier chains it to the next one.
        match rest.strip_prefix('.') {
            Some(next) if next.starts_with('`') => rest = next,
            _ => previous = None,
        }
    }
    found
}

/// The backquoted identifier at the start of `text` (doubled backquotes undone), and the rest.
pub(super) fn quoted(text: &str) -> (Option<String>, &str) {
    let body = &text[1..];
    let mut name = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '`' {
            if chars.peek().map(|p| p.1) == Some('`') {
                name.push('`');
                chars.next();
                continue;
            }
            return (Some(name), &body[i + 1..]);
        }
        name.push(c);
    }
    (None, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_names_its_tables_and_their_columns() {
        let definition = "with recursive `paths` as (select `wp`.`wp_posts`.`ID` AS `id` \
                          from `wp`.`wp_posts`) select `p`.`ID` from (`wp`.`wp_posts` `p` \
                          left join `paths` on(`paths`.`id` = `p`.`ID`)) join `s`.`v``x`";
        let found = named_tables(definition);
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert!(found.contains(&pair("wp", "wp_posts")));
        assert!(found.contains(&pair("s", "v`x")));
        assert!(
            found.contains(&pair("wp_posts", "ID")),
            "a column pair, found and ignored"
        );
        assert!(!found.contains(&pair("paths", "p")), "a space is no dot");
    }

    #[test]
    fn a_source_name_is_split_into_schema_and_name() {
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(split("sitemap_wp", "site"), pair("site", "sitemap_wp"));
        assert_eq!(split("cms.v", "site"), pair("cms", "v"));
        assert_eq!(split("`cms`.`v`", "site"), pair("cms", "v"));
    }
}
