//! Test harness: a database of its own per test (PostgreSQL, MariaDB or SQLite), the real
//! server on port 0, a real HTTP client.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use std::str::FromStr;

use chrono::{DateTime, Utc};
use sitemapd::app::Service;
use sitemapd::config::{Config, Defaults, Vars};
use sitemapd::site::Readiness;
use sitemapd::state::App;
use sitemapd::store::Change;
use sitemapd::sweep::Sweeper;
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// The database servers every acceptance test runs against (see [`on_each_database!`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    MariaDb,
    Sqlite,
}

/// Where tests create their PostgreSQL databases; the test script exports it.
pub fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Where tests create their MySQL/MariaDB databases; the test script exports it.
pub fn mysql_admin_url() -> String {
    std::env::var("TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/".into())
}

/// A connection pool of the test's own database.
pub enum TestPool {
    Postgres(PgPool),
    MariaDb(MySqlPool),
    Sqlite(SqlitePool),
}

/// Runs `$body` with `$pool` bound to the test database's pool and `$db` naming its sqlx
/// database type.
macro_rules! each_pool {
    ($self:expr, |$pool:ident, $db:ident| $body:expr) => {
        match &$self.pool {
            TestPool::Postgres($pool) => {
                #[allow(dead_code)]
                type $db = sqlx::Postgres;
                $body
            }
            TestPool::MariaDb($pool) => {
                #[allow(dead_code)]
                type $db = sqlx::MySql;
                $body
            }
            TestPool::Sqlite($pool) => {
                #[allow(dead_code)]
                type $db = sqlx::Sqlite;
                $body
            }
        }
    };
}

/// A database made for one test (SQLite: a file in a directory of its own), dropped when the
/// test ends.
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    pub pool: TestPool,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for TestDb {
    /// Drops the test's PostgreSQL or MariaDB database (connections still open to it are ended),
    /// so a run leaves nothing behind. On a thread of its own: a test's runtime may not block.
    fn drop(&mut self) {
        let (admin, statement) = match self.backend {
            Backend::Postgres => (
                admin_url(),
                format!(
                    "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                    database_name(&self.url)
                ),
            ),
            Backend::MariaDb => (
                mysql_admin_url(),
                format!(
                    "SET SESSION lock_wait_timeout = 10; DROP DATABASE IF EXISTS `{}`",
                    database_name(&self.url)
                ),
            ),
            Backend::Sqlite => return,
        };
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            let drop_it = async {
                match admin.split(':').next() {
                    Some("mysql") => {
                        let pool = MySqlPoolOptions::new()
                            .max_connections(1)
                            .connect(&admin)
                            .await?;
                        sqlx::raw_sql(&statement).execute(&pool).await?;
                    }
                    _ => {
                        let pool = PgPoolOptions::new()
                            .max_connections(1)
                            .connect(&admin)
                            .await?;
                        sqlx::raw_sql(&statement).execute(&pool).await?;
                    }
                }
                Ok::<_, sqlx::Error>(())
            };
            runtime.block_on(drop_it).ok()
        });
        // A database that could not be dropped is dropped by the next run of scripts/test.sh.
        let _ = dropped.join();
    }
}

/// The database a URL names (its path, without the leading slash or a query).
fn database_name(url: &str) -> String {
    let path = url.split('?').next().unwrap_or(url);
    path.rsplit('/').next().unwrap_or_default().to_string()
}

impl TestDb {
    /// A PostgreSQL database.
    pub async fn new() -> Self {
        Self::on(Backend::Postgres).await
    }

    pub async fn on(backend: Backend) -> Self {
        let name = format!("sitemapd_test_{}", uuid_like());
        match backend {
            Backend::Postgres => {
                let admin = admin_url();
                create_database(
                    &admin,
                    &format!("CREATE DATABASE \"{name}\""),
                    "PostgreSQL",
                    "TEST_DATABASE_URL",
                )
                .await;
                let url = replace_database(&admin, &name);
                let options = PgConnectOptions::from_str(&url)
                    .unwrap()
                    .options([("timezone", "UTC")]);
                let pool = PgPoolOptions::new()
                    .max_connections(4)
                    .connect_with(options)
                    .await
                    .expect("connect test database");
                Self {
                    url,
                    backend,
                    pool: TestPool::Postgres(pool),
                    _dir: None,
                }
            }
            Backend::MariaDb => {
                let admin = mysql_admin_url();
                create_database(
                    &admin,
                    &format!("CREATE DATABASE `{name}`"),
                    "MariaDB",
                    "TEST_MYSQL_URL",
                )
                .await;
                let url = replace_database(&admin, &name);
                let pool = MySqlPoolOptions::new()
                    .max_connections(4)
                    .connect(&url)
                    .await
                    .expect("connect test database");
                Self {
                    url,
                    backend,
                    pool: TestPool::MariaDb(pool),
                    _dir: None,
                }
            }
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("sitemap.db").display());
                let options = SqliteConnectOptions::from_str(&url)
                    .unwrap()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .busy_timeout(std::time::Duration::from_secs(10));
                let pool = SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .expect("open test database");
                Self {
                    url,
                    backend,
                    pool: TestPool::Sqlite(pool),
                    _dir: Some(dir),
                }
            }
        }
    }

    /// The PostgreSQL pool, for tests of PostgreSQL-only behaviour.
    pub fn pg(&self) -> &PgPool {
        match &self.pool {
            TestPool::Postgres(pool) => pool,
            _ => panic!("a PostgreSQL test database was expected"),
        }
    }

    /// Creates sitemapd's tables, as the service does when it starts.
    pub async fn migrate(&self) {
        let config = Config::from_vars(
            &Vars::from_pairs(vec![
                ("SITEMAP_BASE_URL", BASE),
                ("DATABASE_URL", &self.url),
            ]),
            &Defaults::default(),
        )
        .expect("test config");
        let store = sitemapd::store::Store::connect(&config.database())
            .await
            .expect("connect");
        store.migrate().await.expect("migrate");
    }

    /// Runs SQL statements (setup, changes) on the test database.
    pub async fn exec(&self, sql: &str) {
        each_pool!(self, |pool, _Db| sqlx::raw_sql(sql)
            .execute(pool)
            .await
            .map(|_| ()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Inserts `(id, loc)` rows into sitemap_entries.
    pub async fn insert(&self, rows: &[(i64, &str)]) {
        let rows: Vec<Row> = rows.iter().map(|(id, loc)| Row::new(*id, loc)).collect();
        self.insert_rows(&rows).await;
    }

    /// Inserts entries with every column, values bound (so any text, on any backend).
    pub async fn insert_rows(&self, rows: &[Row]) {
        for chunk in rows.chunks(1000) {
            each_pool!(self, |pool, Db| {
                let mut q = sqlx::QueryBuilder::<Db>::new(
                    "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority) ",
                );
                q.push_values(chunk, |mut b, row| {
                    b.push_bind(row.id)
                        .push_bind(row.loc.clone())
                        .push_bind(row.lastmod.map(|at| at.naive_utc()))
                        .push_bind(row.changefreq.clone())
                        .push_bind(row.priority);
                });
                q.build().execute(pool).await.map(|_| ())
            })
            .expect("insert entries");
        }
    }

    /// Inserts `(entry_id, loc)` rows into sitemap_images.
    pub async fn insert_images(&self, rows: &[(i64, &str)]) {
        for chunk in rows.chunks(1000) {
            each_pool!(self, |pool, Db| {
                let mut q =
                    sqlx::QueryBuilder::<Db>::new("INSERT INTO sitemap_images (entry_id, loc) ");
                q.push_values(chunk, |mut b, (id, loc)| {
                    b.push_bind(*id).push_bind(loc.to_string());
                });
                q.build().execute(pool).await.map(|_| ())
            })
            .expect("insert images");
        }
    }

    /// Inserts `(entry_id, hreflang, href)` rows into sitemap_alternates.
    pub async fn insert_alternates(&self, rows: &[(i64, &str, &str)]) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new(
                "INSERT INTO sitemap_alternates (entry_id, hreflang, href) ",
            );
            q.push_values(rows, |mut b, (id, hreflang, href)| {
                b.push_bind(*id)
                    .push_bind(hreflang.to_string())
                    .push_bind(href.to_string());
            });
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("insert alternates");
    }

    /// Inserts rows into sitemap_videos.
    pub async fn insert_videos(&self, rows: &[VideoRow]) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new(
                "INSERT INTO sitemap_videos (entry_id, thumbnail_loc, title, description, \
                 content_loc, player_loc, duration, publication_date) ",
            );
            q.push_values(rows, |mut b, v| {
                b.push_bind(v.entry_id)
                    .push_bind(v.thumbnail_loc.map(str::to_string))
                    .push_bind(v.title.map(str::to_string))
                    .push_bind(v.description.map(str::to_string))
                    .push_bind(v.content_loc.map(str::to_string))
                    .push_bind(v.player_loc.map(str::to_string))
                    .push_bind(v.duration)
                    .push_bind(v.publication_date.map(|at| at.naive_utc()));
            });
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("insert videos");
    }

    /// Creates `table` as a news group's source: `id`, `loc`, `publication_date`, `title` and
    /// the optional `language` and `publication_name`.
    pub async fn create_news_table(&self, table: &str) {
        let time = match self.backend {
            Backend::Postgres => "timestamptz",
            Backend::MariaDb => "datetime(6)",
            Backend::Sqlite => "text",
        };
        self.exec(&format!(
            "CREATE TABLE {table} (id bigint PRIMARY KEY, loc text, publication_date {time}, \
             title text, language text, publication_name text)"
        ))
        .await;
    }

    /// Inserts `(id, loc, publication_date, title, language)` articles into `table`.
    pub async fn insert_articles(&self, table: &str, rows: &[ArticleRow<'_>]) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new(format!(
                "INSERT INTO {table} (id, loc, publication_date, title, language) "
            ));
            q.push_values(rows, |mut b, (id, loc, at, title, language)| {
                b.push_bind(*id)
                    .push_bind(loc.to_string())
                    .push_bind(at.naive_utc())
                    .push_bind(title.to_string())
                    .push_bind(language.map(str::to_string));
            });
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("insert articles");
    }

    /// Blocks every read of sitemap_entries until [`Held::release`]: a render started meanwhile
    /// waits for its rows. `None` on SQLite, whose readers never wait for a writer (WAL).
    pub async fn hold_entries(&self) -> Option<Held> {
        self.hold_table("sitemap_entries").await
    }

    /// Blocks every read and write of `table` until [`Held::release`]; `None` on SQLite.
    pub async fn hold_table(&self, table: &str) -> Option<Held> {
        self.hold(
            &format!("BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"),
            &format!("LOCK TABLES {table} WRITE"),
        )
        .await
    }

    /// Blocks every write of `table` (reads go on) until [`Held::release`]; `None` on SQLite.
    pub async fn hold_writes(&self, table: &str) -> Option<Held> {
        self.hold(
            &format!("BEGIN; LOCK TABLE {table} IN EXCLUSIVE MODE"),
            &format!("LOCK TABLES {table} READ"),
        )
        .await
    }

    /// Runs the locking statement of the server on a connection kept until released.
    async fn hold(&self, postgres: &str, mariadb: &str) -> Option<Held> {
        match &self.pool {
            TestPool::Postgres(pool) => {
                let mut conn = pool.acquire().await.unwrap();
                sqlx::raw_sql(postgres).execute(&mut *conn).await.unwrap();
                Some(Held::Postgres(conn))
            }
            TestPool::MariaDb(pool) => {
                let mut conn = pool.acquire().await.unwrap();
                sqlx::raw_sql(mariadb).execute(&mut *conn).await.unwrap();
                Some(Held::MariaDb(conn))
            }
            TestPool::Sqlite(_) => None,
        }
    }

    /// Sets the lastmod of one entry.
    pub async fn set_lastmod(&self, id: i64, lastmod: DateTime<Utc>) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new("UPDATE sitemap_entries SET lastmod = ");
            q.push_bind(lastmod.naive_utc())
                .push(" WHERE id = ")
                .push_bind(id);
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("set lastmod");
    }

    /// One integer the query returns (a count, an id).
    pub async fn scalar(&self, sql: &str) -> i64 {
        each_pool!(self, |pool, _Db| sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(pool)
            .await)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The first column, as text, of every row the query returns.
    pub async fn strings(&self, sql: &str) -> Vec<String> {
        let values = match &self.pool {
            TestPool::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
            TestPool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
            // Binary-collated text (our `loc`) only decodes as bytes.
            TestPool::MariaDb(pool) => sqlx::query_scalar::<_, Vec<u8>>(sql)
                .fetch_all(pool)
                .await
                .map(|all| {
                    all.into_iter()
                        .map(|bytes| String::from_utf8(bytes).unwrap())
                        .collect()
                }),
        };
        values.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// `(id, loc, lastmod as YYYY-MM-DDTHH:MM:SS in UTC, changefreq, priority)` of every entry
    /// of sitemap_entries, in id order.
    pub async fn entries(&self) -> Vec<Entry> {
        let (lastmod, loc, priority) = match self.backend {
            Backend::Postgres => (
                "to_char(lastmod AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')",
                "loc",
                "priority::float8",
            ),
            Backend::MariaDb => (
                "DATE_FORMAT(lastmod, '%Y-%m-%dT%H:%i:%s')",
                "CAST(loc AS CHAR)",
                "priority",
            ),
            Backend::Sqlite => ("strftime('%Y-%m-%dT%H:%M:%S', lastmod)", "loc", "priority"),
        };
        let sql = format!(
            "SELECT id, {loc} AS loc, {lastmod} AS lastmod, changefreq, {priority} AS priority \
             FROM sitemap_entries ORDER BY id"
        );
        each_pool!(self, |pool, _Db| {
            sqlx::query_as::<_, (i64, String, Option<String>, Option<String>, Option<f64>)>(&sql)
                .fetch_all(pool)
                .await
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        // As single precision: what PostgreSQL's `real` keeps.
        .map(|(id, loc, lastmod, changefreq, priority)| {
            (id, loc, lastmod, changefreq, priority.map(|p| p as f32))
        })
        .collect()
    }
}

/// A connection that holds a lock on sitemap_entries (see [`TestDb::hold_entries`]).
pub enum Held {
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>),
    MariaDb(sqlx::pool::PoolConnection<sqlx::MySql>),
}

impl Held {
    pub async fn release(self) {
        let released = match self {
            Held::Postgres(mut conn) => sqlx::raw_sql("COMMIT").execute(&mut *conn).await.map(drop),
            Held::MariaDb(mut conn) => sqlx::raw_sql("UNLOCK TABLES")
                .execute(&mut *conn)
                .await
                .map(drop),
        };
        released.expect("release the lock");
    }
}

/// An entry as [`TestDb::entries`] reads it back.
pub type Entry = (i64, String, Option<String>, Option<String>, Option<f32>);

/// A row of sitemap_entries to insert.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub id: i64,
    pub loc: String,
    pub lastmod: Option<DateTime<Utc>>,
    pub changefreq: Option<String>,
    pub priority: Option<f64>,
}

impl Row {
    pub fn new(id: i64, loc: &str) -> Self {
        Self {
            id,
            loc: loc.to_string(),
            ..Self::default()
        }
    }

    pub fn lastmod(mut self, at: &str) -> Self {
        self.lastmod = Some(utc(at));
        self
    }

    pub fn changefreq(mut self, value: &str) -> Self {
        self.changefreq = Some(value.to_string());
        self
    }

    pub fn priority(mut self, value: f64) -> Self {
        self.priority = Some(value);
        self
    }
}

/// `(id, loc, publication_date, title, language)` of a news source's row.
pub type ArticleRow<'a> = (i64, &'a str, DateTime<Utc>, &'a str, Option<&'a str>);

/// One sitemap_videos row; fields left `None` are NULL.
#[derive(Debug, Clone, Copy, Default)]
pub struct VideoRow {
    pub entry_id: i64,
    pub thumbnail_loc: Option<&'static str>,
    pub title: Option<&'static str>,
    pub description: Option<&'static str>,
    pub content_loc: Option<&'static str>,
    pub player_loc: Option<&'static str>,
    pub duration: Option<i32>,
    pub publication_date: Option<DateTime<Utc>>,
}

impl VideoRow {
    /// A video with every required field.
    pub fn complete(entry_id: i64) -> Self {
        Self {
            entry_id,
            thumbnail_loc: Some("https://cdn.example.net/thumbs/1.jpg"),
            title: Some("Grilling steaks for summer"),
            description: Some("Alkis shows you how to get perfectly done steaks & more."),
            content_loc: Some("https://cdn.example.net/video/1.mp4"),
            player_loc: None,
            duration: Some(600),
            publication_date: Some(utc("2026-11-01 10:00:00")),
        }
    }
}

/// `2024-05-01 12:00:00` (UTC) as a timestamp.
pub fn utc(at: &str) -> DateTime<Utc> {
    chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S")
        .unwrap_or_else(|e| panic!("{at}: {e}"))
        .and_utc()
}

async fn create_database(admin: &str, create: &str, server: &str, variable: &str) {
    let conn = async {
        match admin.split(':').next() {
            Some("mysql") => {
                let pool = MySqlPoolOptions::new()
                    .max_connections(1)
                    .connect(admin)
                    .await?;
                sqlx::raw_sql(create).execute(&pool).await?;
                pool.close().await;
            }
            _ => {
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .connect(admin)
                    .await?;
                sqlx::raw_sql(create).execute(&pool).await?;
                pool.close().await;
            }
        }
        Ok::<_, sqlx::Error>(())
    };
    conn.await.unwrap_or_else(|e| {
        panic!(
            "{server} is not usable at {variable} ({}): {e}; run the tests with ./scripts/test.sh, \
             which prepares it",
            redact(admin)
        )
    });
}

fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// Runs each listed `async fn name(backend: Backend)` once per database, as the tests
/// `name::postgres`, `name::mariadb` and `name::sqlite`.
#[macro_export]
macro_rules! on_each_database {
    ($($test:ident),* $(,)?) => {
        $( $crate::on_each_database!(@test $test [tokio::test]: postgres Postgres, mariadb MariaDb, sqlite Sqlite); )*
    };
    (@test $test:ident [$attr:meta]: $($module:ident $backend:ident),*) => {
        mod $test {
            $(
                #[$attr]
                async fn $module() {
                    super::$test($crate::helpers::Backend::$backend).await
                }
            )*
        }
    };
}

/// Runs each listed test on the two database servers only (for what SQLite cannot do), as
/// `name::postgres` and `name::mariadb`; `multi_thread:` first gives them two worker threads.
#[macro_export]
macro_rules! on_each_server {
    (multi_thread: $($test:ident),* $(,)?) => {
        $( $crate::on_each_database!(@test $test [tokio::test(flavor = "multi_thread", worker_threads = 2)]: postgres Postgres, mariadb MariaDb); )*
    };
    ($($test:ident),* $(,)?) => {
        $( $crate::on_each_database!(@test $test [tokio::test]: postgres Postgres, mariadb MariaDb); )*
    };
}

fn replace_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("test database URL");
    u.set_path(&format!("/{name}"));
    u.to_string()
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The real server, listening on a random port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    sweepers: Vec<Arc<Sweeper>>,
    pub client: reqwest::Client,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub const BASE: &str = "https://www.example.com/";

/// Starts a server on `database_url` with the given variables (SITEMAP_BASE_URL defaults to BASE).
pub async fn spawn_app(database_url: &str, vars: &[(&str, &str)]) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn_app_on(listener, database_url, vars).await
}

/// [`spawn_app`] on a listener bound already, for a base URL that names its own address.
pub async fn spawn_app_on(
    listener: tokio::net::TcpListener,
    database_url: &str,
    vars: &[(&str, &str)],
) -> TestApp {
    let app = start_app(listener, database_url, vars).await;
    // Tests start from what the database holds, as a crawler would see a service that has been
    // up a while: its files checked against the source.
    for group in app.app.sites.iter().flat_map(|site| &site.groups) {
        group.reached(Readiness::Current).await;
    }
    app
}

/// The service as it is the moment it listens: its first sweep (or the verification of its
/// stored files) may still be under way.
pub async fn spawn_app_listening(database_url: &str, vars: &[(&str, &str)]) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    start_app(listener, database_url, vars).await
}

async fn start_app(
    listener: tokio::net::TcpListener,
    database_url: &str,
    vars: &[(&str, &str)],
) -> TestApp {
    let mut pairs: Vec<(&str, &str)> = vec![
        ("SITEMAP_BASE_URL", BASE),
        ("DATABASE_URL", database_url),
        ("SITEMAP_REFRESH_SECS", "3600"),
    ];
    pairs.extend_from_slice(vars);
    let config =
        Config::from_vars(&Vars::from_pairs(pairs), &Defaults::default()).expect("test config");
    let service = Service::start(&config).await.expect("start the service");
    let (app, sweepers) = (service.app.clone(), service.sweepers.clone());
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(service.serve(listener, std::future::pending()));
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    TestApp {
        addr,
        app,
        sweepers,
        client,
        server,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.expect("GET")
    }

    /// Re-measures everything of every group now, as the background sweep would after a change.
    pub async fn sweep(&self) {
        for sweeper in &self.sweepers {
            sweeper.sweep(Change::Everything).await.expect("sweep");
        }
    }

    /// Page numbers the index lists, in order.
    pub async fn index_pages(&self) -> Vec<String> {
        let body = self.get("/sitemap_index.xml").await.text().await.unwrap();
        locs(body.as_bytes())
            .into_iter()
            .map(|l| {
                l.strip_prefix(BASE)
                    .expect("index loc under base")
                    .to_string()
            })
            .collect()
    }

    /// Every loc of every page, in order, checking each page against the schema on the way.
    pub async fn all_locs(&self) -> Vec<String> {
        let mut all = Vec::new();
        for file in self.index_pages().await {
            let gz = self.get(&format!("/{file}")).await.bytes().await.unwrap();
            let xml = gunzip(&gz);
            assert_valid(&xml, Schema::Urlset);
            all.extend(locs(&xml));
        }
        all
    }

    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").await.text().await.unwrap();
        text.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

/// `path` requested with `host` as its Host header (sitemapd routes by it).
pub async fn get_as(app: &TestApp, host: &str, path: &str) -> reqwest::Response {
    app.get_with(path, &[("host", host)]).await
}

/// Every `<loc>` of the XML document at `host` `path`, which must be found.
pub async fn locs_as(app: &TestApp, host: &str, path: &str) -> Vec<String> {
    locs(&xml_as(app, host, path).await)
}

/// The XML document at `host` `path` (gunzipped for `.gz`), which must be found.
pub async fn xml_as(app: &TestApp, host: &str, path: &str) -> Vec<u8> {
    let resp = get_as(app, host, path).await;
    assert_eq!(resp.status(), 200, "{host}{path}");
    let body = resp.bytes().await.unwrap();
    if path.ends_with(".gz") {
        gunzip(&body)
    } else {
        body.to_vec()
    }
}

/// The text at `host` `path`, which must be found.
pub async fn text_as(app: &TestApp, host: &str, path: &str) -> String {
    let resp = get_as(app, host, path).await;
    assert_eq!(resp.status(), 200, "{host}{path}");
    resp.text().await.unwrap()
}

/// The text of the first ```` ```FENCE ```` code block of the user guide (docs/guide.md) that
/// contains `needle`: the views and sites files users copy from it.
pub fn guide_block(fence: &str, needle: &str) -> &'static str {
    const GUIDE: &str = include_str!("../../docs/guide.md");
    GUIDE
        .split(&format!("```{fence}\n"))
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .find(|block| block.contains(needle))
        .unwrap_or_else(|| panic!("docs/guide.md has no ```{fence} block with {needle}"))
}

/// A file holding `text` (a robots.txt template), removed when dropped.
pub fn template_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

/// `sitemapd check` on `db` with `vars` besides: its exit code and what it printed.
pub fn check(db: &TestDb, vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Sitemapd::new(["check"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .envs(vars)
        .output();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Runs `sitemapd serve` with `vars`; it must stop before listening, exit 2, and say in one
/// line what is wrong, naming each of `named`.
pub fn refused(vars: &[(&str, &str)], named: &[&str]) {
    let mut all = vec![("SITEMAP_BASE_URL", "https://e.com")];
    all.extend_from_slice(vars);
    let out = Sitemapd::new(["serve"]).envs(&all).output();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{vars:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for name in named {
        assert!(stderr.contains(name), "{name} not in {stderr}");
    }
}

/// The metric of the rows of the single-site default group ([`BASE`]) left out for `reason`.
pub fn skipped_metric(reason: &str) -> String {
    format!("sitemapd_entries_skipped{{reason=\"{reason}\",site=\"{BASE}\",group=\"\"}}")
}

/// Runs `sitemapd export` into a new directory with only these variables set; it must succeed.
pub fn export(vars: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Sitemapd::new([std::ffi::OsStr::new("export"), dir.path().as_os_str()])
        .envs(vars)
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

pub fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("a complete gzip file");
    out
}

/// Text of every `<loc>`, unescaped, read with a real XML parser.
pub fn locs(xml: &[u8]) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut out = Vec::new();
    let mut in_loc = false;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            quick_xml::events::Event::Start(e) if e.local_name().as_ref() == b"loc" => {
                in_loc = true
            }
            quick_xml::events::Event::End(e) if e.local_name().as_ref() == b"loc" => in_loc = false,
            quick_xml::events::Event::Text(t) if in_loc => {
                out.push(t.unescape().expect("valid entities").into_owned())
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// The text of each `<url>`'s child elements (`loc`, `lastmod`, `priority`, …) by local name, in
/// document order.
pub fn url_fields(xml: &[u8]) -> Vec<std::collections::BTreeMap<String, String>> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    let mut path: Vec<String> = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name == "url" {
                    out.push(std::collections::BTreeMap::new());
                }
                path.push(name);
            }
            Event::End(_) => {
                path.pop();
            }
            Event::Text(t) if path.len() >= 2 && path[path.len() - 2] == "url" => {
                let value = t.unescape().expect("valid entities").into_owned();
                let field = path.last().unwrap().clone();
                out.last_mut().unwrap().insert(field, value);
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

pub enum Schema {
    Urlset,
    Index,
}

/// Validates with xmllint against the official sitemaps.org schemas and, for urlsets, the
/// extension schemas (copies in tests/schemas).
pub fn assert_valid(xml: &[u8], schema: Schema) {
    let xsd = match schema {
        Schema::Urlset => "sitemap-extensions.xsd",
        Schema::Index => "siteindex.xsd",
    };
    if let Some(errors) = schema_errors(xml, xsd) {
        panic!(
            "schema validation failed: {errors}\n{}",
            String::from_utf8_lossy(&xml[..xml.len().min(2000)])
        );
    }
}

/// xmllint's complaint about `xml` against `xsd` (a file in tests/schemas), if any.
pub fn schema_errors(xml: &[u8], xsd: &str) -> Option<String> {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas")
        .join(xsd);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xml).unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--nonet", "--schema"])
        .arg(&xsd)
        .arg(file.path())
        .output()
        .expect("xmllint (Debian package libxml2-utils) must be installed; ./scripts/test.sh installs it");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

pub fn header<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

/// How long a test waits for something to happen (a change to reach the service, a server to
/// come up). Generous: it bounds a wait, it asserts no timing.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// Polls `probe` until `done` holds for what it returns, or [`PATIENCE`] has passed; returns
/// the last value either way, so the caller's assertion says what was seen. `awaited` names
/// what the test waits for, in the log of a test that gave up.
pub async fn eventually<T, F, Fut>(awaited: &str, mut probe: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let value = probe().await;
        if done(&value) {
            return value;
        }
        if tokio::time::Instant::now() >= deadline {
            eprintln!("gave up after {PATIENCE:?} waiting for {awaited}");
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The `sitemapd` binary run as a user would run it: an empty environment but for what the test
/// sets, and a working directory of its own (so no `.env` of the checkout is read).
pub struct Sitemapd {
    command: Command,
    stdin: Option<Vec<u8>>,
    _cwd: Option<tempfile::TempDir>,
}

impl Sitemapd {
    pub fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let cwd = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_sitemapd"));
        command.env_clear().current_dir(cwd.path()).args(args);
        Self {
            command,
            stdin: None,
            _cwd: Some(cwd),
        }
    }

    pub fn env(mut self, name: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.command.env(name, value);
        self
    }

    pub fn envs(mut self, vars: &[(&str, &str)]) -> Self {
        self.command.envs(vars.iter().copied());
        self
    }

    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// Runs it to the end.
    pub fn output(mut self) -> std::process::Output {
        use std::io::Write;
        use std::process::Stdio;
        let Some(input) = self.stdin.take() else {
            return self.command.output().expect("run sitemapd");
        };
        let mut child = self
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sitemapd");
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(&input).unwrap();
        drop(pipe);
        child.wait_with_output().unwrap()
    }

    /// Runs `serve` on a free port of 127.0.0.1 and waits until `/readyz` says it serves its
    /// files; the process is killed when the returned guard is dropped, whatever the test did.
    pub async fn serve(mut self) -> Serving {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = self
            .command
            .env("BIND_ADDR", &addr)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start sitemapd");
        let serving = Serving {
            child: Some(child),
            addr,
            _cwd: self._cwd.take(),
        };
        serving.wait_until_answering().await;
        serving
    }
}

/// A `sitemapd serve` process of a test; killed on drop unless it was waited for.
pub struct Serving {
    child: Option<std::process::Child>,
    pub addr: String,
    _cwd: Option<tempfile::TempDir>,
}

impl Serving {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn wait_until_answering(&self) {
        let client = &reqwest::Client::new();
        let url = &self.url("/readyz");
        let healthy = eventually(
            "the server to answer /readyz",
            move || async move {
                client
                    .get(url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == 200)
            },
            |healthy| *healthy,
        )
        .await;
        assert!(healthy, "the server did not come up");
    }

    /// Sends SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        let pid = self.child.as_ref().expect("running").id();
        let sent = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM {pid}");
    }

    /// Waits for the process to end; its exit status and log.
    pub async fn wait_with_output(mut self) -> std::process::Output {
        let child = self.child.take().expect("running");
        tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The headless browser, or a failure that says how to get one.
pub fn chromium() -> String {
    let candidates = std::env::var("CHROMIUM").into_iter().chain(
        ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .map(String::from),
    );
    for candidate in candidates {
        let works = Command::new(&candidate)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        if works {
            return candidate;
        }
    }
    panic!(
        "headless Chromium is missing: the stylesheet and status page tests render pages in a real browser. \
         Install it (Debian/Ubuntu: apt-get install chromium) or run ./scripts/test.sh, which \
         installs it; set CHROMIUM=/path/to/chrome to use another build"
    );
}

/// Runs headless Chromium on `url` with `args`, off the test's runtime (the server under test
/// runs on it), with a profile of its own so parallel runs do not share one.
pub async fn run_chromium(browser: &str, args: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new(browser);
    command
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(profile);
    String::from_utf8(out.stdout).unwrap()
}

/// The DOM of `url` once headless Chromium has rendered it.
pub async fn dump_dom(browser: &str, url: &str) -> String {
    run_chromium(browser, &["--dump-dom"], url).await
}

/// A Googlebot User-Agent, as Google's crawler sends it.
pub const GOOGLEBOT: &str =
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// Where a test saves a screenshot: `target/screenshots/NAME` (or under CARGO_TARGET_DIR).
pub fn screenshot_path(name: &str) -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("screenshots").join(name)
}

/// The status page's router over `app`, on a port of its own, as `serve` runs it on
/// ADMIN_BIND_ADDR.
pub async fn status_page(app: &TestApp) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = sitemapd::admin::router(app.app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server binary (nginx, apache2, caddy), installed with apt-get when missing (as a user's
/// machine would get it; ./scripts/test.sh installs them up front).
pub fn server_binary(name: &str, package: &str) -> std::path::PathBuf {
    let found = |name: &str| {
        ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]
            .iter()
            .map(|dir| Path::new(dir).join(name))
            .find(|path| path.exists())
    };
    if let Some(path) = found(name) {
        return path;
    }
    let install = format!(
        "DEBIAN_FRONTEND=noninteractive apt-get install -y -q {package} >/dev/null 2>&1 \
         || (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q {package} >/dev/null 2>&1)"
    );
    let _ = Command::new("sh").args(["-c", &install]).status();
    found(name).unwrap_or_else(|| {
        panic!("{name} is not installed and apt-get could not install {package}")
    })
}
