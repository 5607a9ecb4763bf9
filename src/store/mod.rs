//! The store: every SQL statement sitemapd runs, behind one interface for all backends
//! (PostgreSQL, MySQL/MariaDB, and SQLite as the embedded default).
//!
//! It reads entries from `SITEMAP_SOURCE` by id range (keyset: `WHERE id BETWEEN lo AND hi ORDER
//! BY id`, so the last page costs what the first does), keeps our own small state tables (page
//! boundaries and fingerprints), and reports changes the database can tell us about. It knows
//! nothing of HTTP or XML. Queries are built at run time, so building needs no database.
//!
//! Two databases may be behind one [`Store`]: the **state** database (`DATABASE_URL`: state
//! tables, leases, crawl log) and the **source** database the entries, summaries, change log and
//! view definitions are read from. Unless `SOURCE_DATABASE_URL` (or a site's
//! `source_database_url`) names another, both are one pool. A source database of its own is
//! read-only to sitemapd (a hot standby, a replica: see `replica.rs`), and never written to.
//!
//! Each topic has its `impl Store` in `store/<topic>.rs` and its statements in
//! `store/sql/<topic>.rs`; every call reaches a backend through [`on!`].
//!
//! `sitemapd import` writes through [`Store::import_batch`]: always into the built-in
//! `sitemap_entries` (and its extension tables), whatever `SITEMAP_SOURCE` names.

use std::sync::Arc;

/// Runs `$body` with `$s` bound to the store of `$backend` (a [`Backend`]), whichever database
/// it is: the one dispatch of the store.
macro_rules! on {
    ($backend:expr, $s:ident => $body:expr) => {
        match $backend {
            $crate::store::Backend::Postgres($s) => $body,
            $crate::store::Backend::Mysql($s) => $body,
            $crate::store::Backend::Sqlite($s) => $body,
        }
    };
}

/// Runs `$body` (a statement, awaited) on the source database, retried where the server
/// cancels it for replication ([`Store::read_source`]).
macro_rules! from_source {
    ($self:expr, $s:ident => $body:expr) => {
        $self
            .read_source(|| async { on!(&$self.source, $s => $body) })
            .await
    };
}

mod change_log;
mod crawler_ranges;
mod crawls;
pub mod database_url;
mod entries;
mod error;
mod explain;
mod import;
pub mod lease;
mod listed;
mod mysql;
mod parts;
mod postgres;
mod records;
mod removed;
mod replica;
mod rows;
mod shared_ids;
mod sql;
mod sqlite;
mod state;
mod watch;
mod windows;

pub use database_url::{DatabaseKind, DatabaseUrl};

use crate::sitemap::RawEntry;
pub use change_log::{ChangeFeed, LogReading, Logged, LoggedBucket};
pub use crawler_ranges::StoredRanges;
pub use crawls::{CrawlRow, ListedLoc, PathRow, Waiting};
pub use error::StoreError;
pub use explain::RangeReads;
pub use import::{Alternate, EntryDetails, ImportCounts, ImportedEntry};
use import::{ImportPlan, IMPORT_ROWS_PER_STATEMENT};
pub use mysql::MySqlStore;
pub use postgres::PgStore;
pub use records::{
    Change, FileRecord, IdRange, Keyed, Modified, PageRecord, SavedState, SourceStamp,
    SubmittedThrough, SummaryPace,
};
pub use replica::{SourceRole, SourceStatus};
use rows::{keyed_alternate, keyed_image};
pub use rows::{quote_identifier, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE};
pub use sql::TitledEntry;
pub use sqlite::SqliteStore;
pub use watch::Watch;

/// Counts the migrations sqlx recorded as applied (the same table on every backend).
const APPLIED_MIGRATIONS: &str = "SELECT count(*) FROM _sqlx_migrations WHERE success";

/// The table our migrations create, whose changes our own triggers log.
pub const BUILTIN_SOURCE: &str = "sitemap_entries";

/// One database: a pool and the statements that read one source from it.
#[derive(Clone)]
pub enum Backend {
    Postgres(PgStore),
    Mysql(MySqlStore),
    Sqlite(SqliteStore),
}

/// The databases behind the service: where its state is kept, and where entries are read.
#[derive(Clone)]
pub struct Store {
    /// `DATABASE_URL`: state tables, leases, crawl log, our migrations.
    state: Backend,
    /// Where the group's source is read: `state`'s pool, or a source database of its own.
    source: Backend,
    /// The source database, when it is one of its own (`SOURCE_DATABASE_URL`).
    replica: Option<Arc<replica::SourceDatabase>>,
    /// The source databases opened so far, shared by the sites that name the same one.
    opened: Arc<replica::Opened>,
}

/// How to reach the databases, as configuration says.
#[derive(Debug, Clone, Copy)]
pub struct Connection<'a> {
    pub database_url: &'a DatabaseUrl,
    /// The first site's source database (`SOURCE_DATABASE_URL`); `None`: `database_url`.
    pub source_database_url: Option<&'a DatabaseUrl>,
    /// Pool size (of each database).
    pub max_connections: u32,
    /// Longest one statement may run.
    pub statement_timeout: std::time::Duration,
    /// The source of the first site's first group (the built-in table unless configured).
    pub first_source: &'a str,
}

/// [`Connection`]'s settings, kept to open the source databases sites name later.
#[derive(Debug, Clone)]
pub struct Pooling {
    pub max_connections: u32,
    pub statement_timeout: std::time::Duration,
    pub first_source: String,
}

impl Backend {
    /// A pool on `url` (lazy: nothing is sent before the first statement); `read_only`: a
    /// source database of its own, to which no statement that writes is ever sent.
    async fn connect(
        url: &DatabaseUrl,
        pooling: &Pooling,
        read_only: bool,
    ) -> Result<Self, StoreError> {
        Ok(match url.kind() {
            DatabaseKind::Postgres => Self::Postgres(PgStore::connect(url, pooling, read_only)?),
            DatabaseKind::Mysql => Self::Mysql(MySqlStore::connect(url, pooling, read_only)?),
            DatabaseKind::Sqlite => Self::Sqlite(SqliteStore::connect(url, pooling, read_only)?),
        })
    }

    fn for_source(&self, source: &str) -> Self {
        match self {
            Backend::Postgres(s) => Backend::Postgres(s.for_source(source)),
            Backend::Mysql(s) => Backend::Mysql(s.for_source(source)),
            Backend::Sqlite(s) => Backend::Sqlite(s.for_source(source)),
        }
    }
}

impl Store {
    /// The state database, and the first site's source database.
    pub async fn connect(config: &Connection<'_>) -> Result<Self, StoreError> {
        let pooling = Pooling {
            max_connections: config.max_connections,
            statement_timeout: config.statement_timeout,
            first_source: config.first_source.to_string(),
        };
        let state = Backend::connect(config.database_url, &pooling, false).await?;
        let store = Store {
            source: state.clone(),
            state,
            replica: None,
            opened: Arc::new(replica::Opened::new(pooling)),
        };
        store.for_site(config.source_database_url).await
    }

    /// The same state database, reading from `source_database_url` (a site's; `None`: the state
    /// database). A source database already opened is shared.
    pub async fn for_site(
        &self,
        source_database_url: Option<&DatabaseUrl>,
    ) -> Result<Store, StoreError> {
        let Some(url) = source_database_url else {
            return Ok(Store {
                source: self.state.clone(),
                replica: None,
                ..self.clone()
            });
        };
        let (source, replica) = self.opened.open(url).await?;
        Ok(Store {
            source,
            replica: Some(replica),
            ..self.clone()
        })
    }

    /// The same databases (and connection pools) read from another source table or view.
    pub fn for_source(&self, source: &str) -> Store {
        Store {
            source: self.source.for_source(source),
            ..self.clone()
        }
    }

    /// Applies our migrations to the state database (never to a source database of its own).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.state {
            Backend::Mysql(s) => s.migrate_with_triggers().await,
            Backend::Postgres(s) => s.migrate().await,
            Backend::Sqlite(s) => s.migrate().await,
        }
    }

    /// Whether the state database answers and our migrations are applied.
    pub async fn ready(&self) -> Result<(), StoreError> {
        let (applied, known) = on!(&self.state, s => s.migrations().await)?;
        if applied < known {
            return Err(StoreError::MigrationsPending { applied, known });
        }
        Ok(())
    }

    /// The embedded database, when it is both the state and the source (the demo fills it).
    pub fn embedded(&self) -> Option<&SqliteStore> {
        match (&self.state, &self.replica) {
            (Backend::Sqlite(s), None) => Some(s),
            _ => None,
        }
    }

    /// Whether the entries are read from a source database of its own (`SOURCE_DATABASE_URL`).
    pub fn reads_a_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// What the source database of its own last said of itself (role, lag); `None` when the
    /// entries are read from the state database.
    pub fn source_status(&self) -> Option<SourceStatus> {
        self.replica.as_ref().map(|replica| replica.status())
    }

    /// What `source` is defined as, where the database can say (PostgreSQL, MySQL/MariaDB: a
    /// hash of the definitions of the views it reads and of the tables behind them); `None`
    /// elsewhere.
    pub async fn source_definition(&self, source: &str) -> Result<Option<String>, StoreError> {
        match &self.source {
            Backend::Postgres(s) => {
                self.read_source(|| async { s.source_definition(source).await.map(Some) })
                    .await
            }
            Backend::Mysql(s) => {
                self.read_source(|| async { s.source_definition(source).await })
                    .await
            }
            Backend::Sqlite(_) => Ok(None),
        }
    }

    /// What the database says of the last change to the tables behind the source, and to the
    /// extension tables when `with_extensions` (a group that merges their rows in), where it
    /// keeps that (MySQL/MariaDB: see `mysql/stamp.rs`) and the source is not the built-in
    /// table (whose changes its triggers log); `None` elsewhere.
    pub async fn source_stamp(
        &self,
        with_extensions: bool,
    ) -> Result<Option<SourceStamp>, StoreError> {
        match &self.source {
            Backend::Mysql(s) if !s.reads_built_in() => {
                self.read_source(|| async { s.source_stamp(with_extensions).await })
                    .await
            }
            _ => Ok(None),
        }
    }

    /// Whether the triggers behind a watched view log every table's own keys, which are the
    /// view's ids only for the table they come from (PostgreSQL); on MySQL/MariaDB the other
    /// tables log "any row" instead (see `mysql/watch.rs`).
    pub fn logs_every_tables_keys(&self) -> bool {
        matches!(&self.source, Backend::Postgres(_))
    }

    /// Whether [`Store::source_stamp`] can say anything for this source.
    pub fn keeps_change_stamps(&self) -> bool {
        matches!(&self.source, Backend::Mysql(s) if !s.reads_built_in())
    }

    /// Whether the source is the built-in table (indexed by id and lastmod).
    pub fn reads_built_in(&self) -> bool {
        on!(&self.source, s => s.reads_built_in())
    }

    /// Upserts `batch` by `loc` into the built-in `sitemap_entries`, in one transaction: new
    /// URLs get new ids (in batch order), existing ones keep theirs and get the file's fields,
    /// and the extension rows of both are replaced by the file's. Locs must be distinct
    /// within a batch. Refused when the entries are read from a source database of its own,
    /// where sitemapd writes nothing.
    pub async fn import_batch(&self, batch: &[ImportedEntry]) -> Result<ImportCounts, StoreError> {
        if self.replica.is_some() {
            return Err(StoreError::ReadOnlySource);
        }
        on!(&self.state, s => s.import_batch(batch).await)
    }
}
