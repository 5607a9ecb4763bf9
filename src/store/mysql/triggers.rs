//! MySQL's change triggers: row triggers on our own tables that count changes in commit order and
//! log the ids each touched (MySQL cannot notify a client; see `change_log.rs`).

use sqlx::mysql::MySqlPool;
use sqlx::Executor;

use super::super::{StoreError, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE};

/// The comment the migration gives the entries table it creates: triggers go only there.
const OWN_ENTRIES_COMMENT: &str = "sitemapd entries";

/// Tables whose row triggers record touched entry ids: the table, the column that holds the
/// entry id, and the prefix of the triggers' names (the same names as on PostgreSQL).
const TRIGGERED_TABLES: [(&str, &str, &str); 4] = [
    ("sitemap_entries", "id", "sitemapd_entries"),
    (ALTERNATES_TABLE, "entry_id", ALTERNATES_TABLE),
    (IMAGES_TABLE, "entry_id", IMAGES_TABLE),
    (VIDEOS_TABLE, "entry_id", VIDEOS_TABLE),
];

/// MySQL's error number for a trigger that exists already.
const ER_TRG_ALREADY_EXISTS: u16 = 1359;

/// Puts the change triggers on the entries table our migration created (and its extension
/// tables), unless they are there already; a table made by someone else gets none.
pub(super) async fn add(pool: &MySqlPool) -> Result<(), StoreError> {
    let entries_comment: Option<String> = sqlx::query_scalar(
        "SELECT CAST(TABLE_COMMENT AS CHAR) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'sitemap_entries'",
    )
    .fetch_optional(pool)
    .await?;
    if entries_comment.as_deref() != Some(OWN_ENTRIES_COMMENT) {
        return Ok(());
    }
    let existing: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(TRIGGER_NAME AS CHAR) FROM information_schema.TRIGGERS \
         WHERE TRIGGER_SCHEMA = DATABASE()",
    )
    .fetch_all(pool)
    .await?;
    for (table, id_column, prefix) in TRIGGERED_TABLES {
        let (new, old) = (format!("NEW.{id_column}"), format!("OLD.{id_column}"));
        for (event, done, lo, hi) in [
            ("INSERT", "inserted", new.clone(), new.clone()),
            (
                "UPDATE",
                "updated",
                format!("LEAST({new}, {old})"),
                format!("GREATEST({new}, {old})"),
            ),
            ("DELETE", "deleted", old.clone(), old.clone()),
        ] {
            let name = format!("{prefix}_{done}");
            if existing.contains(&name) {
                continue;
            }
            create_trigger(
                pool,
                &format!(
                    "CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN \
                       UPDATE sitemapd_changes SET version = version + 1 \
                         WHERE source = 'sitemap_entries'; \
                       INSERT INTO sitemapd_change_log (source, version, lo, hi) \
                         SELECT source, version, {lo}, {hi} \
                         FROM sitemapd_changes WHERE source = 'sitemap_entries'; \
                     END"
                ),
            )
            .await?;
        }
    }
    // URLs that leave the table, for IndexNow (it takes removed URLs too).
    for (name, statement) in [
        (
            "sitemapd_entries_gone",
            "CREATE TRIGGER sitemapd_entries_gone AFTER DELETE ON sitemap_entries FOR EACH ROW \
             INSERT INTO sitemapd_removed (loc) SELECT OLD.loc FROM DUAL WHERE OLD.loc IS NOT NULL",
        ),
        (
            "sitemapd_entries_moved",
            "CREATE TRIGGER sitemapd_entries_moved AFTER UPDATE ON sitemap_entries FOR EACH ROW \
             INSERT INTO sitemapd_removed (loc) SELECT OLD.loc FROM DUAL \
             WHERE OLD.loc IS NOT NULL AND NOT (OLD.loc <=> NEW.loc)",
        ),
    ] {
        if !existing.iter().any(|e| e == name) {
            create_trigger(pool, statement).await?;
        }
    }
    // Last: the row that says the table reports its changes.
    sqlx::query(
        "INSERT IGNORE INTO sitemapd_changes (source, version) VALUES ('sitemap_entries', 0)",
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Runs a `CREATE TRIGGER`; a trigger another replica starting at the same time made first is
/// fine.
async fn create_trigger(pool: &MySqlPool, statement: &str) -> Result<(), StoreError> {
    match pool.execute(statement).await {
        Err(sqlx::Error::Database(e))
            if e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
                .is_some_and(|e| e.number() == ER_TRG_ALREADY_EXISTS) =>
        {
            Ok(())
        }
        other => other.map(drop).map_err(StoreError::from),
    }
}
