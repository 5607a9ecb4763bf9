//! Having the changes behind a source logged: triggers on the tables behind a view (PostgreSQL:
//! `postgres/watch.rs`; MySQL/MariaDB: `mysql/watch.rs`), or, for a source database of its own,
//! only finding out whether the change log our migrations installed on its primary covers the
//! source: sitemapd writes nothing there. Also: removing a source's triggers, and finding the
//! tables of a watched source that have lost theirs.

use super::{Backend, Store, StoreError, BUILTIN_SOURCE};

/// What [`Store::watch`] did for a source.
#[derive(Debug)]
pub enum Watch {
    /// The built-in table: our migrations' triggers log its changes.
    Builtin,
    /// Triggers on these tables log the source's changes; those in `unkeyed` log "any row"
    /// (the view's ids do not come from their keys).
    Watched {
        tables: Vec<String>,
        unkeyed: Vec<String>,
    },
    /// The database cannot log changes of the tables behind a view (SQLite).
    Unsupported,
    /// The source reads no table (it does not exist yet, or reads only functions).
    NothingToWatch,
    /// The triggers could not be created (most often: no TRIGGER privilege); `grant`: the
    /// statements that would allow it, where the database can name the tables and the user.
    Failed {
        error: StoreError,
        grant: Option<String>,
    },
    /// A source database of its own (`SOURCE_DATABASE_URL`), which sitemapd never writes to;
    /// `logged`: the change log installed on its primary covers the source.
    ReadOnly { logged: bool },
}

impl Watch {
    /// One line for `migrate` and the log.
    pub fn describe(&self, source: &str) -> String {
        match self {
            Watch::Builtin => format!("{source}: changes logged by its own triggers"),
            Watch::Watched { tables, unkeyed } if unkeyed.is_empty() => format!(
                "{source}: watching {}; changes show at once",
                tables.join(", ")
            ),
            Watch::Watched { tables, unkeyed } => format!(
                "{source}: watching {}; a change to a row the view's ids come from shows at \
                 once, a change to {} (whose keys are not the view's ids) within \
                 SITEMAP_REFRESH_SECS",
                tables.join(", "),
                unkeyed.join(", ")
            ),
            Watch::Unsupported => format!(
                "{source}: this database cannot report changes behind a view; \
                 changes show within SITEMAP_REFRESH_SECS"
            ),
            Watch::NothingToWatch => format!(
                "{source}: no table found behind it; changes show within SITEMAP_REFRESH_SECS"
            ),
            Watch::Failed { error, grant } => format!(
                "{source}: cannot watch the tables behind it ({}); changes show within \
                 SITEMAP_REFRESH_SECS. To have them show at once, let sitemapd's database user \
                 add triggers: {}",
                crate::error::Chain(error),
                grant
                    .as_deref()
                    .unwrap_or("GRANT TRIGGER ON <each table the view reads> TO <that user>")
            ),
            Watch::ReadOnly { logged: true } => format!(
                "{source}: read from SOURCE_DATABASE_URL (never written to); the change log on \
                 its primary covers it: changes show as soon as they are replayed"
            ),
            Watch::ReadOnly { logged: false } => format!(
                "{source}: read from SOURCE_DATABASE_URL (never written to); changes show within \
                 SITEMAP_REFRESH_SECS through the summaries the database computes (to have them \
                 show at once, install the change log on the primary: docs/operations.md, \
                 \"Reading from a replica\")"
            ),
        }
    }
}

impl Store {
    /// Puts change triggers on the tables behind `source` where the database allows it
    /// (PostgreSQL, with the TRIGGER privilege on them), so its changes are logged like those
    /// of the built-in table. Says what was done; failing leaves the source refreshed
    /// periodically, as before. A source database of its own is only asked whether its change
    /// log covers `source`.
    pub async fn watch(&self, source: &str) -> Watch {
        if self.replica.is_some() {
            let logged = matches!(self.change_version(source).await, Ok(Some(_)));
            return Watch::ReadOnly { logged };
        }
        if source == BUILTIN_SOURCE {
            return Watch::Builtin;
        }
        match &self.source {
            Backend::Postgres(s) => match s.watch_source(source).await {
                Ok(tables) if tables.is_empty() => Watch::NothingToWatch,
                Ok(tables) => Watch::Watched {
                    tables,
                    unkeyed: Vec::new(),
                },
                Err(error) => Watch::Failed { error, grant: None },
            },
            Backend::Mysql(s) => match s.watch_source(source).await {
                Ok(watched) if watched.tables.is_empty() => Watch::NothingToWatch,
                Ok(watched) => Watch::Watched {
                    tables: watched.tables,
                    unkeyed: watched.unkeyed,
                },
                Err(error) => Watch::Failed {
                    error,
                    grant: mysql_grant(s, source).await,
                },
            },
            Backend::Sqlite(_) => Watch::Unsupported,
        }
    }

    /// Removes the triggers watching `source` and its change log (MySQL/MariaDB); says which
    /// triggers were dropped. Refused on a source database of its own.
    pub async fn unwatch(&self, source: &str) -> Result<Vec<String>, StoreError> {
        if self.replica.is_some() {
            return Err(StoreError::ReadOnlySource);
        }
        match &self.source {
            Backend::Mysql(s) => s.unwatch_source(source).await,
            Backend::Postgres(s) => s.unwatch_source(source).await,
            Backend::Sqlite(_) => Ok(Vec::new()),
        }
    }

    /// The tables behind a watched source that have lost its triggers (a table dropped and made
    /// again, a view redefined to read another); empty when the source is not watched.
    pub async fn unwatched_tables(&self, source: &str) -> Result<Vec<String>, StoreError> {
        if source == BUILTIN_SOURCE || self.replica.is_some() {
            return Ok(Vec::new());
        }
        match &self.source {
            Backend::Mysql(s) => s.unwatched_tables(source).await,
            Backend::Postgres(s) => s.unwatched_tables(source).await,
            Backend::Sqlite(_) => Ok(Vec::new()),
        }
    }
}

/// The `GRANT` lines that would let sitemapd's user watch `source`'s tables; `None` when the
/// server cannot name them.
async fn mysql_grant(store: &crate::store::MySqlStore, source: &str) -> Option<String> {
    let tables = store.tables_behind(source).await.ok()?;
    let user = store.current_user().await.ok()?;
    (!tables.is_empty()).then(|| {
        tables
            .iter()
            .map(|table| {
                let (db, name) = table.split_once('.').unwrap_or(("", table));
                format!("GRANT TRIGGER ON `{db}`.`{name}` TO {user};")
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The tag in the names of the triggers that watch for `owner` (a source, or sitemapd's schema
/// and a source): eight hex digits, so names stay within the databases' identifier limits.
pub(super) fn trigger_tag(owner: &str) -> String {
    format!(
        "{:08x}",
        crate::sitemap::Fingerprint::of(owner.as_bytes()).0 as u32
    )
}
