//! Watching a MySQL/MariaDB view (or a CMS table read directly): row triggers on the tables
//! behind it log what each write touched under the source's name, in the change log our own
//! table's triggers keep, so a change costs what it touched instead of a pass over the view.
//!
//! The tables are found through the views' stored definitions (see `stamp.rs`). Each table's
//! triggers log one of two things:
//! - **keys**: for a table the view's `id` comes from (the planner reads it by its primary key
//!   when the view is read by an id range), the written rows' keys: the files holding them are
//!   summarised, and read if they moved;
//! - **any row**: for any other table (WordPress's `wp_options`), whose keys are not the view's
//!   ids: one full check within `SITEMAP_REFRESH_SECS` covers every such write meanwhile.
//!
//! A trigger never fails the CMS's statement: its body continues past any error (the log
//! dropped, a privilege revoked); the change then shows within the hourly check. Triggers are
//! named `sitemapd_<source tag>_<table tag>_<ins|upd|del>` in the table's own schema, so
//! `--unwatch` finds every one of a source, and `check` those that are missing.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::mysql::MySqlConnection;
use sqlx::{Executor, Row};

use super::super::watch::trigger_tag;
use super::stamp::{self, own_schema, Name};
use super::{MySqlStore, StoreError};
use crate::sitemap::Fingerprint;

/// The logged range that says "any row" (the same as PostgreSQL's for a table without a key).
const ANY_ROW: (&str, &str) = ("-9223372036854775808", "9223372036854775807");

/// Integer column types a key may have.
const INTEGER_TYPES: [&str; 5] = ["tinyint", "smallint", "mediumint", "int", "bigint"];

/// What watching a source put in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchedTables {
    /// Every table watched, `db.table`.
    pub tables: Vec<String>,
    /// Those whose triggers log "any row" (the view's ids do not come from their keys).
    pub unkeyed: Vec<String>,
}

/// One table behind a source, and what its triggers log.
struct Watched {
    name: Name,
    /// The key column whose values are the view's ids; `None`: any row.
    key: Option<String>,
}

impl Watched {
    fn display(&self) -> String {
        format!("{}.{}", self.name.0, self.name.1)
    }
}

impl MySqlStore {
    /// Puts row triggers on the tables behind the source (those already right are kept) and
    /// marks it as watched; says which tables, and which log any row.
    pub async fn watch_source(&self, source: &str) -> Result<WatchedTables, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let watched = tables_behind(&mut conn, source).await?;
        if watched.is_empty() {
            return Ok(WatchedTables::default());
        }
        let schema = own_schema(&mut conn).await?;
        let existing = trigger_statements(&mut conn, &prefix(&schema, source)).await?;
        for table in &watched {
            for trigger in triggers_for(source, &schema, table) {
                let up_to_date = existing
                    .get(&(table.name.0.clone(), trigger.name.clone()))
                    .is_some_and(|body| *body == trigger.body);
                if up_to_date {
                    continue;
                }
                let drop = format!(
                    "DROP TRIGGER IF EXISTS {}.{}",
                    quote(&table.name.0),
                    quote(&trigger.name)
                );
                conn.execute(drop.as_str()).await?;
                conn.execute(trigger.create.as_str()).await?;
            }
        }
        sqlx::query("INSERT IGNORE INTO sitemapd_changes (source, version) VALUES (?, 0)")
            .bind(source)
            .execute(&mut *conn)
            .await?;
        Ok(WatchedTables {
            tables: watched.iter().map(Watched::display).collect(),
            unkeyed: watched
                .iter()
                .filter(|t| t.key.is_none())
                .map(Watched::display)
                .collect(),
        })
    }

    /// Drops every trigger watching `source` and forgets its change log; says which
    /// (`db.trigger`).
    pub async fn unwatch_source(&self, source: &str) -> Result<Vec<String>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let schema = own_schema(&mut conn).await?;
        let existing = trigger_statements(&mut conn, &prefix(&schema, source)).await?;
        let mut dropped = Vec::new();
        for (schema, name) in existing.keys() {
            let drop = format!("DROP TRIGGER IF EXISTS {}.{}", quote(schema), quote(name));
            conn.execute(drop.as_str()).await?;
            dropped.push(format!("{schema}.{name}"));
        }
        for statement in [
            "DELETE FROM sitemapd_changes WHERE source = ?",
            "DELETE FROM sitemapd_change_log WHERE source = ?",
        ] {
            sqlx::query(statement)
                .bind(source)
                .execute(&mut *conn)
                .await?;
        }
        Ok(dropped)
    }

    /// The tables behind a watched source that lack any of its triggers (dropped with their
    /// table, or a table the view reads since it was redefined); empty when the source is not
    /// watched.
    pub async fn unwatched_tables(&self, source: &str) -> Result<Vec<String>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let watched: Option<i64> =
            sqlx::query_scalar("SELECT version FROM sitemapd_changes WHERE source = ?")
                .bind(source)
                .fetch_optional(&mut *conn)
                .await?;
        if watched.is_none() {
            return Ok(Vec::new());
        }
        let schema = own_schema(&mut conn).await?;
        let existing = trigger_statements(&mut conn, &prefix(&schema, source)).await?;
        let mut lost = Vec::new();
        for table in table_names(&mut conn, source).await? {
            let names = EVENTS.map(|(_, short)| trigger_name(&schema, source, &table, short));
            if names
                .iter()
                .any(|name| !existing.contains_key(&(table.0.clone(), name.clone())))
            {
                lost.push(format!("{}.{}", table.0, table.1));
            }
        }
        Ok(lost)
    }

    /// What the source is made of: the definitions of the views it reads and the tables behind
    /// them, as one hash (a view redefined fires no trigger); `None` when the server hides a
    /// definition.
    pub async fn source_definition(&self, source: &str) -> Result<Option<String>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let Some(behind) = stamp::behind(&mut conn, &[source]).await? else {
            return Ok(None);
        };
        let text = behind.text(false);
        Ok(Some(Fingerprint::of(text.as_bytes()).hex()))
    }

    /// The user sitemapd connects as, as a `GRANT` names it.
    pub async fn current_user(&self) -> Result<String, StoreError> {
        let user: String = sqlx::query_scalar("SELECT CAST(CURRENT_USER() AS CHAR)")
            .fetch_one(&self.pool)
            .await?;
        Ok(match user.split_once('@') {
            Some((name, host)) => format!("'{name}'@'{host}'"),
            None => user,
        })
    }

    /// The tables behind `source`, `db.table`, for a `GRANT` line.
    pub async fn tables_behind(&self, source: &str) -> Result<Vec<String>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Ok(table_names(&mut conn, source)
            .await?
            .iter()
            .map(|(db, table)| format!("{db}.{table}"))
            .collect())
    }
}

/// The events each watched table gets a trigger for, with the short name's suffix.
const EVENTS: [(&str, &str); 3] = [("INSERT", "ins"), ("UPDATE", "upd"), ("DELETE", "del")];

/// A trigger as it should be: its name, its body as the catalogue stores it, and the
/// statement that creates it.
struct Trigger {
    name: String,
    body: String,
    create: String,
}

/// The three triggers of `table` watching `source`, logging into the change log in `schema`.
fn triggers_for(source: &str, schema: &str, table: &Watched) -> Vec<Trigger> {
    let log = quote(schema);
    let source_literal = literal(source);
    EVENTS
        .iter()
        .map(|&(event, short)| {
            let (lo, hi) = logged_range(event, table.key.as_deref());
            let body = format!(
                "BEGIN \
                   DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END; \
                   UPDATE {log}.sitemapd_changes SET version = version + 1 \
                     WHERE source = {source_literal}; \
                   INSERT INTO {log}.sitemapd_change_log (source, version, lo, hi) \
                     SELECT source, version, {lo}, {hi} FROM {log}.sitemapd_changes \
                     WHERE source = {source_literal}; \
                 END"
            );
            let name = trigger_name(schema, source, &table.name, short);
            let create = format!(
                "CREATE TRIGGER {}.{} AFTER {event} ON {}.{} FOR EACH ROW {body}",
                quote(&table.name.0),
                quote(&name),
                quote(&table.name.0),
                quote(&table.name.1),
            );
            Trigger { name, body, create }
        })
        .collect()
}

/// What a trigger on `event` logs: the written rows' keys, or any row.
fn logged_range(event: &str, key: Option<&str>) -> (String, String) {
    let Some(key) = key else {
        return (ANY_ROW.0.to_string(), ANY_ROW.1.to_string());
    };
    let (new, old) = (format!("NEW.{}", quote(key)), format!("OLD.{}", quote(key)));
    match event {
        "INSERT" => (new.clone(), new),
        "DELETE" => (old.clone(), old),
        _ => (
            format!("LEAST({new}, {old})"),
            format!("GREATEST({new}, {old})"),
        ),
    }
}

/// The prefix of every trigger watching `source` for the sitemapd whose tables are in
/// `log_schema` (two installs watching views of the same name stay apart).
fn prefix(log_schema: &str, source: &str) -> String {
    format!(
        "sitemapd_{}_",
        trigger_tag(&format!("{log_schema}.{source}"))
    )
}

/// `sitemapd_<source tag>_<table tag>_<event>`: within MySQL's 64 characters, one per schema.
fn trigger_name(log_schema: &str, source: &str, table: &Name, short: &str) -> String {
    let table = format!("{}.{}", table.0, table.1);
    format!(
        "{}{}_{short}",
        prefix(log_schema, source),
        trigger_tag(&table)
    )
}

/// The triggers whose names start with `prefix`, in any schema: (schema, name) → body.
async fn trigger_statements(
    conn: &mut MySqlConnection,
    prefix: &str,
) -> Result<BTreeMap<Name, String>, StoreError> {
    let rows = sqlx::query(
        "SELECT CAST(TRIGGER_SCHEMA AS CHAR) AS db, CAST(TRIGGER_NAME AS CHAR) AS name, \
         CAST(ACTION_STATEMENT AS CHAR) AS body FROM information_schema.TRIGGERS \
         WHERE TRIGGER_NAME LIKE CONCAT(?, '%')",
    )
    .bind(prefix.replace('_', "\\_"))
    .fetch_all(&mut *conn)
    .await?;
    let mut found = BTreeMap::new();
    for row in rows {
        found.insert(
            (row.try_get("db")?, row.try_get("name")?),
            row.try_get("body")?,
        );
    }
    Ok(found)
}

/// The base tables behind `source`, by name only (no question to the planner).
async fn table_names(conn: &mut MySqlConnection, source: &str) -> Result<Vec<Name>, StoreError> {
    Ok(stamp::behind(conn, &[source])
        .await?
        .map(|behind| behind.tables.into_keys().collect())
        .unwrap_or_default())
}

/// The base tables behind `source`, each with the key column its triggers log when the view's
/// ids come from it.
async fn tables_behind(
    conn: &mut MySqlConnection,
    source: &str,
) -> Result<Vec<Watched>, StoreError> {
    let Some(behind) = stamp::behind(conn, &[source]).await? else {
        return Ok(Vec::new());
    };
    let id_tables = id_tables(conn, source, &behind).await;
    let mut watched = Vec::with_capacity(behind.tables.len());
    for name in behind.tables.keys() {
        let key = match id_tables.contains(name) {
            true => integer_key(conn, name).await?,
            false => None,
        };
        watched.push(Watched {
            name: name.clone(),
            key,
        });
    }
    Ok(watched)
}

/// The single integer column of `table`'s primary key, if it has one.
async fn integer_key(
    conn: &mut MySqlConnection,
    table: &Name,
) -> Result<Option<String>, StoreError> {
    let rows = sqlx::query(
        "SELECT CAST(s.COLUMN_NAME AS CHAR) AS col, CAST(c.DATA_TYPE AS CHAR) AS type \
         FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c \
           ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME \
          AND c.COLUMN_NAME = s.COLUMN_NAME \
         WHERE s.TABLE_SCHEMA = ? AND s.TABLE_NAME = ? AND s.INDEX_NAME = 'PRIMARY'",
    )
    .bind(&table.0)
    .bind(&table.1)
    .fetch_all(&mut *conn)
    .await?;
    let [row] = rows.as_slice() else {
        return Ok(None);
    };
    let column: String = row.try_get("col")?;
    let kind: String = row.try_get("type")?;
    Ok(INTEGER_TYPES
        .contains(&kind.to_ascii_lowercase().as_str())
        .then_some(column))
}

/// The tables the source's `id` comes from: those the planner reads by their primary key when
/// the source is read by a small id range (the range reaches them). Any error: none (every
/// table then logs any row, which is always right, only slower).
async fn id_tables(
    conn: &mut MySqlConnection,
    source: &str,
    behind: &stamp::Behind,
) -> BTreeSet<Name> {
    let explain = format!(
        "EXPLAIN SELECT id FROM {} WHERE id BETWEEN 1 AND 10",
        super::super::rows::quote_identifier_with(source, '`')
    );
    let rows = match conn.fetch_all(explain.as_str()).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::debug!(%source, error = %crate::error::Chain(&e), "cannot EXPLAIN the source");
            return BTreeSet::new();
        }
    };
    let aliases = aliases(behind);
    let mut found = BTreeSet::new();
    for row in rows {
        let text = |column: &str| -> Option<String> {
            row.try_get::<Option<String>, _>(column)
                .ok()
                .flatten()
                .or_else(|| {
                    row.try_get::<Option<Vec<u8>>, _>(column)
                        .ok()
                        .flatten()
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                })
        };
        let by_key = text("key").as_deref() == Some("PRIMARY")
            && matches!(text("type").as_deref(), Some("range" | "const"));
        if !by_key {
            continue;
        }
        if let Some(table) = text("table").and_then(|alias| aliases.get(&alias).cloned().flatten())
        {
            found.insert(table);
        }
    }
    found
}

/// What each name a plan may show stands for: a base table's own name, or an alias a view's
/// definition gives it (`` `db`.`table` `alias` ``); `None` where one name stands for several.
fn aliases(behind: &stamp::Behind) -> BTreeMap<String, Option<Name>> {
    let mut aliases: BTreeMap<String, Option<Name>> = BTreeMap::new();
    let mut note = |alias: String, table: &Name| {
        aliases
            .entry(alias)
            .and_modify(|seen| {
                if seen.as_ref() != Some(table) {
                    *seen = None;
                }
            })
            .or_insert_with(|| Some(table.clone()));
    };
    for table in behind.tables.keys() {
        note(table.1.clone(), table);
    }
    for definition in behind.views.values() {
        for (alias, table) in aliased_tables(definition) {
            if behind.tables.contains_key(&table) {
                note(alias, &table);
            }
        }
    }
    aliases
}

/// Every `` `db`.`table` `alias` `` of a stored view definition, as (alias, table).
fn aliased_tables(definition: &str) -> Vec<(String, Name)> {
    let mut found = Vec::new();
    let mut rest = definition;
    while let Some(start) = rest.find('`') {
        let (Some(db), after) = stamp::quoted(&rest[start..]) else {
            break;
        };
        rest = after;
        let Some(table_text) = rest.strip_prefix('.').filter(|r| r.starts_with('`')) else {
            continue;
        };
        let (Some(table), after) = stamp::quoted(table_text) else {
            break;
        };
        rest = after;
        // `db`.`table`.`column` names a column; the space before an alias is one space.
        let Some(alias_text) = rest.strip_prefix(' ').filter(|r| r.starts_with('`')) else {
            continue;
        };
        let (Some(alias), after) = stamp::quoted(alias_text) else {
            break;
        };
        if !after.starts_with('.') {
            found.push((alias, (db, table)));
            rest = after;
        }
    }
    found
}

fn quote(identifier: &str) -> String {
    format!("`{}`", identifier.replace('`', "``"))
}

/// `text` as a MySQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_names_its_tables_aliases() {
        let definition = "select `p`.`ID` AS `id` from (`wp`.`wp_posts` `p` left join \
                          `wp`.`wp_options` `front` on(`front`.`option_name` = 'x')) \
                          join `wp`.`wp_terms` where `wp`.`wp_terms`.`term_id` = 1";
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            aliased_tables(definition),
            vec![
                ("p".to_string(), pair("wp", "wp_posts")),
                ("front".to_string(), pair("wp", "wp_options")),
            ]
        );
    }

    #[test]
    fn a_keyed_trigger_logs_its_rows_keys_and_another_any_row() {
        assert_eq!(
            logged_range("UPDATE", Some("ID")),
            (
                "LEAST(NEW.`ID`, OLD.`ID`)".to_string(),
                "GREATEST(NEW.`ID`, OLD.`ID`)".to_string()
            )
        );
        assert_eq!(
            logged_range("DELETE", Some("ID")),
            ("OLD.`ID`".to_string(), "OLD.`ID`".to_string())
        );
        assert_eq!(
            logged_range("INSERT", None),
            (ANY_ROW.0.to_string(), ANY_ROW.1.to_string())
        );
    }

    #[test]
    fn trigger_names_fit_mysql_and_share_the_sources_prefix() {
        let name = trigger_name(
            "sitemapd",
            "sitemap_wp",
            &("wordpress".into(), "wp_posts".into()),
            "upd",
        );
        assert!(name.len() <= 64, "{name}");
        assert!(name.starts_with(&prefix("sitemapd", "sitemap_wp")));
        assert_ne!(
            prefix("sitemapd", "sitemap_wp"),
            prefix("sitemapd", "sitemap_pages")
        );
        assert_ne!(
            prefix("sitemapd", "sitemap_wp"),
            prefix("other", "sitemap_wp")
        );
    }
}
