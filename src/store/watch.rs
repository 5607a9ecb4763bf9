//! Having the changes behind a source logged: triggers on the tables behind a PostgreSQL view
//! (see `postgres/watch.rs`), or, for a source database of its own, only finding out whether the
//! change log our migrations installed on its primary covers the source: sitemapd writes nothing
//! there.

use super::{Backend, Store, StoreError, BUILTIN_SOURCE};

/// What [`Store::watch`] did for a source.
#[derive(Debug)]
pub enum Watch {
    /// The built-in table: our migrations' triggers log its changes.
    Builtin,
    /// Triggers on these tables log the source's changes.
    Watched(Vec<String>),
    /// The database cannot log changes of the tables behind a view (MySQL, SQLite).
    Unsupported,
    /// The source reads no table (it does not exist yet, or reads only functions).
    NothingToWatch,
    /// The triggers could not be created (most often: no TRIGGER privilege).
    Failed(StoreError),
    /// A source database of its own (`SOURCE_DATABASE_URL`), which sitemapd never writes to;
    /// `logged`: the change log installed on its primary covers the source.
    ReadOnly { logged: bool },
}

impl Watch {
    /// One line for `migrate` and the log.
    pub fn describe(&self, source: &str) -> String {
        match self {
            Watch::Builtin => format!("{source}: changes logged by its own triggers"),
            Watch::Watched(tables) => format!(
                "{source}: watching {}; changes show at once",
                tables.join(", ")
            ),
            Watch::Unsupported => format!(
                "{source}: this database cannot report changes behind a view; \
                 changes show within SITEMAP_REFRESH_SECS"
            ),
            Watch::NothingToWatch => format!(
                "{source}: no table found behind it; changes show within SITEMAP_REFRESH_SECS"
            ),
            Watch::Failed(e) => format!(
                "{source}: cannot watch the tables behind it ({}); changes show within \
                 SITEMAP_REFRESH_SECS. To have them show at once, let sitemapd's database user \
                 add triggers: GRANT TRIGGER ON <each table the view reads> TO <that user>",
                crate::error::Chain(e)
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
                Ok(tables) => Watch::Watched(tables),
                Err(e) => Watch::Failed(e),
            },
            Backend::Mysql(_) | Backend::Sqlite(_) => Watch::Unsupported,
        }
    }
}
