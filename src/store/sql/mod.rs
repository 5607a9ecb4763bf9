//! The statements every backend runs, written once: reading entries by id range, the extension
//! rows, feeds and IndexNow queries, our state tables, and `import`'s writes. What differs
//! between PostgreSQL, MySQL and SQLite (placeholders, casts, upserts, the per-site write lock,
//! how a lastmod compares) is the backend's [`Dialect`]; how each connects and hears of changes
//! stays in its own file.

mod change_log;
mod crawls;
mod extensions;
pub(crate) use extensions::EXTENSION_TABLES;
mod import;
mod lease;
mod listed;
mod llms;
mod reads;
mod recent;
pub(crate) mod removed;
mod replica;
mod state;
mod summaries;
mod upsert;

use std::sync::Arc;

pub use llms::TitledEntry;
use reads::Reads;
pub use upsert::{added, stored, Upsert};

use chrono::{DateTime, Utc};
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use sqlx::{Database, Pool, Row, Transaction};

use super::{IdRange, Modified, StoreError};
use crate::sitemap::entry::Unreadable;
use crate::sitemap::rich::RawArticle;
use crate::sitemap::{RawEntry, SkipReason};

/// What one database does its own way in the statements [`Sql`] runs.
pub trait Dialect: Database + Sized {
    /// The migrations of this database's schema.
    const MIGRATOR: &'static sqlx::migrate::Migrator;

    /// A lastmod as this database compares it with the source's column (IndexNow's position).
    type Instant: for<'q> sqlx::Encode<'q, Self> + sqlx::Type<Self> + Send + Sync + 'static;
    /// A lastmod as `import` writes it into `sitemap_entries`.
    type Written: for<'q> sqlx::Encode<'q, Self> + sqlx::Type<Self> + Send + Sync + 'static;

    /// `sql` written with `?` placeholders, in this database's syntax (PostgreSQL numbers them).
    fn placeholders(sql: &str) -> String {
        sql.to_string()
    }
    /// A possibly schema-qualified identifier, quoted.
    fn quote(name: &str) -> String;
    /// `column` read as text, as a 64-bit integer.
    fn text(column: &str) -> String;
    fn int(expression: &str) -> String;
    /// The five entry columns read from the source aliased `src`, each cast so that any view with
    /// these columns is readable.
    fn entry_columns() -> &'static str;
    /// [`Dialect::entry_columns`] for a source other than the built-in table, whose columns may
    /// hold text that is no time or number: such a value reads as NULL and is counted, never a
    /// failed query.
    fn tolerant_entry_columns() -> &'static str {
        Self::entry_columns()
    }
    /// [`Dialect::instant_key`] for such a source.
    fn tolerant_instant_key(column: &str) -> String {
        Self::instant_key(column)
    }
    /// A time column of any type, read as [`Dialect::read_time`] decodes it.
    fn time(column: &str) -> String;
    /// The time column `name` of a row, as [`Dialect::time`] selected it; a value that is no
    /// time is `None`.
    fn read_time(row: &Self::Row, name: &str) -> Option<DateTime<Utc>>;
    /// A time column as this database compares it with an [`Dialect::Instant`].
    fn instant_key(column: &str) -> String;
    /// A query of the type a source's `lastmod` column has (`$1`: the source), when this
    /// database can tell it (see `recent.rs`); `None`: it cannot.
    fn lastmod_type_query() -> Option<&'static str> {
        None
    }
    /// How many tables (or views) of the current schema have one of `names` (quoted, comma
    /// separated): an expression of a one-row `SELECT`.
    fn tables_named(names: &str) -> String;
    /// `sql` with calls of our own functions (which a source database of its own may lack)
    /// written out in plain SQL.
    fn without_own_functions(sql: String) -> String {
        sql
    }
    /// How text columns sort in the extension queries (the order of the output).
    fn sort_key(column: &str) -> String {
        column.to_string()
    }
    /// `INSERT INTO {rest}` that does nothing when the key exists.
    fn insert_ignoring(rest: &str) -> String {
        format!("INSERT INTO {rest} ON CONFLICT DO NOTHING")
    }
    /// How an upsert's tail begins: what follows it are the assignments ([`Upsert`]).
    fn on_conflict(key: &str) -> String {
        format!(" ON CONFLICT ({key}) DO UPDATE SET ")
    }
    /// The value the upsert offered for `column`, inside [`Upsert::on_conflict_set`].
    fn inserted(column: &str) -> String {
        format!("excluded.{column}")
    }

    /// An entry of the source as this database hands its columns over.
    fn raw_entry(row: &Self::Row) -> RawEntry;
    /// The IndexNow position bound for a lastmod in microseconds.
    fn instant(lastmod_us: i64) -> Self::Instant;
    fn written(at: DateTime<Utc>) -> Self::Written;
    /// Rows an INSERT, UPDATE or DELETE wrote.
    fn rows_affected(result: &Self::QueryResult) -> u64;
    /// Entries modified after a position, and the position of the last one.
    fn modified(rows: &[Self::Row]) -> Modified {
        Modified::from_entries(rows.iter().map(Self::raw_entry).collect())
    }

    /// The highest id of `sitemap_entries`, read with the change log where the database fires no
    /// trigger on TRUNCATE (MySQL): the id falling tells of it. NULL elsewhere.
    fn highest_entry_id() -> String {
        Self::int("NULL")
    }
    /// `expression` divided by `divisor`, rounded to an integer (a bucket of ids).
    fn int_div(expression: &str, divisor: i64) -> String {
        format!("({expression}) / {divisor}")
    }
    /// `delete` limited to a part of its rows where one big delete would hold locks too long.
    fn bounded_delete(delete: &str) -> String {
        delete.to_string()
    }

    /// Whether the database can summarise files ([`Sql::file_summaries`]); SQLite has no hash
    /// function: its sources are read whole.
    const SUMMARISES: bool = false;
    /// Whether an id range sent to a source other than the built-in table goes as literals:
    /// MariaDB pushes `id BETWEEN 1 AND 9` into every branch of a view it cannot merge, but not
    /// `id BETWEEN ? AND ?` of a prepared statement, which builds the whole view (a 50,000-row
    /// window of a million-post WordPress view: 0.66 s with literals, 13 s with parameters).
    const RANGES_AS_LITERALS: bool = false;
    /// A 64-bit (or 32-bit) hash of `values` joined, which `SUM` adds up.
    fn row_hash(values: &str) -> String {
        format!("hashtextextended(concat_ws('|', {values}), 0)")
    }
    /// The parts of one file's summary, in a fixed order, as one text.
    fn ordered_join(part: &str) -> String {
        format!("string_agg({part}, ';' ORDER BY {part})")
    }

    /// How `import` finds an entry by its URL: the key column, and what goes around the bound
    /// URL to compare with it (MySQL keys by a hash of the URL).
    fn loc_key() -> (&'static str, &'static str, &'static str) {
        ("loc", "", "")
    }

    /// A transaction that reads and then writes.
    fn begin_write(
        pool: &Pool<Self>,
    ) -> impl std::future::Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;
    /// Runs first in each import transaction.
    fn before_import(
        _tx: &mut Self::Connection,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send {
        async { Ok(()) }
    }
    /// A transaction that holds the site's write lock until it ends, across replicas.
    fn begin_site_write(
        pool: &Pool<Self>,
        site: &str,
    ) -> impl std::future::Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;
}

/// `impl<DB> Sql<DB>` for every [`Dialect`], with the bounds sqlx needs to run, bind and decode
/// what these statements do: written once for the three files of this folder.
macro_rules! impl_sql {
    ($($item:item)*) => {
        impl<DB> $crate::store::sql::Sql<DB>
        where
            DB: $crate::store::sql::Dialect + sqlx::database::HasStatementCache,
            for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
            for<'c> &'c sqlx::Pool<DB>: sqlx::Executor<'c, Database = DB>,
            for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
            for<'q> i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'q> Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'q> Option<f64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'q> Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'q> String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'q> Option<<DB as $crate::store::sql::Dialect>::Written>:
                sqlx::Encode<'q, DB> + sqlx::Type<DB>,
            for<'r> i64: sqlx::Decode<'r, DB>,
            for<'r> String: sqlx::Decode<'r, DB>,
            &'static str: sqlx::ColumnIndex<<DB as sqlx::Database>::Row>,
            usize: sqlx::ColumnIndex<<DB as sqlx::Database>::Row>,
            <DB as sqlx::Database>::Connection: sqlx::migrate::Migrate,
        {
            $($item)*
        }
    };
}
pub(super) use impl_sql;

/// A pool on one database, and the statements that read one source from it.
pub struct Sql<DB: Database> {
    pub(in crate::store) pool: Pool<DB>,
    reads: Arc<Reads>,
    /// A source database sitemapd does not manage (`SOURCE_DATABASE_URL`): read-only, and
    /// perhaps without the functions and tables our migrations make.
    read_only: bool,
    /// Whether the database has the extension tables: known for ours, asked once of another.
    extension_tables: Arc<tokio::sync::OnceCell<bool>>,
    /// PostgreSQL: the listener followers hear of saved states through, while any follows.
    pub(in crate::store) state_listener: StateListener,
}

/// The one listener of a pool (and its clones) for saved states, while anyone holds it.
pub(in crate::store) type StateListener =
    Arc<std::sync::Mutex<std::sync::Weak<tokio::sync::watch::Sender<u64>>>>;

impl<DB: Database> Clone for Sql<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            reads: self.reads.clone(),
            read_only: self.read_only,
            extension_tables: self.extension_tables.clone(),
            state_listener: self.state_listener.clone(),
        }
    }
}

/// The built-in table of entries.
pub(super) const ENTRIES_TABLE: &str = "sitemap_entries";

/// `count` comma-separated placeholders, for an `IN (…)` list.
fn placeholder_list(count: usize) -> String {
    vec!["?"; count].join(", ")
}

/// `VALUES` rows of `width` placeholders each, `count` of them.
fn values_rows(width: usize, count: usize) -> String {
    let row = format!("({})", placeholder_list(width));
    vec![row; count].join(", ")
}

impl<DB: Dialect> Sql<DB> {
    /// The store on `pool` (one of our databases, or a read-only source when `read_only`),
    /// reading `source`.
    pub(super) fn new(pool: Pool<DB>, source: &str, read_only: bool) -> Self {
        let extension_tables = match read_only {
            true => tokio::sync::OnceCell::new(),
            // Our migrations made them.
            false => tokio::sync::OnceCell::new_with(Some(true)),
        };
        Self {
            reads: Arc::new(Reads::new::<DB>(source, read_only)),
            pool,
            read_only,
            extension_tables: Arc::new(extension_tables),
            state_listener: Default::default(),
        }
    }

    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    /// Whether the source is the built-in table, whose keyset reads are bounded by its index.
    pub fn reads_built_in(&self) -> bool {
        self.reads.built_in
    }

    /// The source as configured (`view`, `db.view`), unquoted.
    pub(in crate::store) fn source_name(&self) -> &str {
        &self.reads.name
    }

    /// The same database (and connection pool) read from another source table or view.
    pub fn for_source(&self, source: &str) -> Self {
        Self {
            state_listener: self.state_listener.clone(),
            extension_tables: self.extension_tables.clone(),
            ..Self::new(self.pool.clone(), source, self.read_only)
        }
    }
}

impl_sql! {
    pub async fn migrate(&self) -> Result<(), StoreError> {
        DB::MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Migrations applied to the database, and migrations this build knows.
    pub async fn migrations(&self) -> Result<(i64, i64), StoreError> {
        let applied = sqlx::query_scalar(super::APPLIED_MIGRATIONS)
            .fetch_one(&self.pool)
            .await?;
        Ok((applied, DB::MIGRATOR.iter().count() as i64))
    }

    /// Whether this source's id ranges go as literals ([`Dialect::RANGES_AS_LITERALS`]).
    pub fn ranges_as_literals(&self) -> bool {
        self.reads.range_literal.is_some()
    }

    /// Entries with ids in `range`, in id order, as one list: with the bounds spelt out where
    /// [`Dialect::RANGES_AS_LITERALS`] says so (a statement of its own text, not kept prepared).
    pub async fn entries_listed(&self, range: IdRange) -> Result<Vec<RawEntry>, StoreError> {
        let rows = match &self.reads.range_literal {
            Some(head) => {
                let sql = format!("{head}{} ORDER BY src.id", reads::id_within("src.id", range));
                sqlx::query::<DB>(&sql).persistent(false).fetch_all(&self.pool).await?
            }
            None => {
                sqlx::query::<DB>(&self.reads.range)
                    .bind(range.first)
                    .bind(range.last)
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        Ok(rows.iter().map(DB::raw_entry).collect())
    }

    /// Entries with ids in `range`, in id order, streamed.
    pub fn entries(&self, range: IdRange) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        sqlx::query::<DB>(&self.reads.range)
            .bind(range.first)
            .bind(range.last)
            .fetch(&self.pool)
            .map_ok(|row| DB::raw_entry(&row))
            .map_err(StoreError::from)
            .boxed()
    }

    /// The first `limit` entries with ids in `range`, in id order, streamed.
    pub fn entries_limited(&self, range: IdRange, limit: i64) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        sqlx::query::<DB>(&self.reads.chunk)
            .bind(range.first)
            .bind(range.last)
            .bind(limit)
            .fetch(&self.pool)
            .map_ok(|row| DB::raw_entry(&row))
            .map_err(StoreError::from)
            .boxed()
    }

    /// Rows no id range holds (a NULL id, an id beyond 64 bits), each rejected for it, at the
    /// lowest id: they are skipped and counted with the first file's rows.
    pub fn unplaced_entries(&self) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        sqlx::query::<DB>(&self.reads.unplaced)
            .fetch(&self.pool)
            .map_ok(|row| {
                let id: String = row.try_get("id_text").unwrap_or_default();
                let reason = match id.as_str() {
                    "NULL" => SkipReason::NullId,
                    _ => SkipReason::IdOutOfRange,
                };
                RawEntry {
                    id: i64::MIN,
                    loc: row.try_get("loc").ok().flatten(),
                    rejected: Some(reason),
                    unreadable: Some(Box::new(Unreadable {
                        id: Some(id),
                        ..Unreadable::default()
                    })),
                    ..RawEntry::default()
                }
            })
            .map_err(StoreError::from)
            .boxed()
    }

    /// The first `limit` entries with ids in `range`.
    pub async fn entries_chunk(&self, range: IdRange, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        let rows = sqlx::query::<DB>(&self.reads.chunk)
            .bind(range.first)
            .bind(range.last)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(DB::raw_entry).collect())
    }

    /// Whether the source has the optional article columns `language` and `publication_name`,
    /// as the database describes it (a database that cannot answer is an error, not a no).
    /// Asked once: columns added while the service runs are read from its next start.
    pub async fn has_article_columns(&self) -> Result<bool, StoreError> {
        use sqlx::{Column, Executor};
        if let Some(known) = self.reads.has_article_columns.get() {
            return Ok(*known);
        }
        let described = (&self.pool).describe(&self.reads.article_columns).await?;
        let has = |name: &str| {
            described
                .columns()
                .iter()
                .any(|c| c.name().eq_ignore_ascii_case(name))
        };
        let known = has("language") && has("publication_name");
        Ok(*self.reads.has_article_columns.get_or_init(|| known))
    }

    /// A news source's articles with ids in `range` published within `window` (microseconds,
    /// both ends included), in id order: entries whose `article` is set.
    pub async fn articles(
        &self,
        range: IdRange,
        window: (i64, i64),
        optional_columns: bool,
    ) -> Result<Vec<RawEntry>, StoreError> {
        let statement = match optional_columns {
            true => &self.reads.articles,
            false => &self.reads.articles_plain,
        };
        let rows = sqlx::query::<DB>(statement)
            .bind(range.first)
            .bind(range.last)
            .bind(DB::instant(window.0))
            .bind(DB::instant(window.1))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let text = |c: &'static str| row.try_get::<Option<String>, _>(c).ok().flatten();
                RawEntry {
                    id: row.try_get("id").unwrap_or_default(),
                    loc: text("loc"),
                    article: Some(RawArticle {
                        publication_date: DB::read_time(row, "publication_date"),
                        title: text("title"),
                        language: text("language"),
                        publication_name: text("publication_name"),
                    }),
                    ..RawEntry::default()
                }
            })
            .collect())
    }

    /// Up to `limit` entries modified after `after` and no later than `through`, oldest first.
    pub async fn modified_after(
        &self,
        after: super::SubmittedThrough,
        through: DateTime<Utc>,
        limit: i64,
    ) -> Result<Modified, StoreError> {
        let rows = sqlx::query::<DB>(&self.reads.modified)
            .bind(DB::instant(after.lastmod_us))
            .bind(DB::instant(after.lastmod_us))
            .bind(after.id)
            .bind(DB::instant(through.timestamp_micros()))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        Ok(DB::modified(&rows))
    }
}
