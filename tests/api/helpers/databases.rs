//! The test's own database: created per test on PostgreSQL or MariaDB (dropped when the test
//! ends) or as a SQLite file in a temp dir, migrated, and the macros that run a test once per
//! database.

use std::str::FromStr;

use sitemapd::config::{Config, Defaults, Vars};
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use super::app::BASE;

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
                type $db = sqlx::Postgres;
                // Named for bodies that need it; used here so the others need no exception.
                let _database = std::marker::PhantomData::<$db>;
                $body
            }
            TestPool::MariaDb($pool) => {
                type $db = sqlx::MySql;
                // Named for bodies that need it; used here so the others need no exception.
                let _database = std::marker::PhantomData::<$db>;
                $body
            }
            TestPool::Sqlite($pool) => {
                type $db = sqlx::Sqlite;
                // Named for bodies that need it; used here so the others need no exception.
                let _database = std::marker::PhantomData::<$db>;
                $body
            }
        }
    };
}

pub(super) use each_pool;

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
        let name = database_name(&self.url);
        let (admin, statement) = match self.backend {
            Backend::Postgres => (
                admin_url(),
                format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
            ),
            Backend::MariaDb => (
                mysql_admin_url(),
                format!("SET SESSION lock_wait_timeout = 10; DROP DATABASE IF EXISTS `{name}`"),
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
                        end_mariadb_connections_to(&pool, &name).await;
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

/// Ends the connections still open to MariaDB database `name` (a server's pool a test leaked,
/// a statement still running), as PostgreSQL's `DROP DATABASE ... WITH (FORCE)` does: their
/// metadata locks would otherwise hold the DROP past its lock wait.
async fn end_mariadb_connections_to(admin: &sqlx::MySqlPool, name: &str) {
    let ids: Vec<i64> = sqlx::query_scalar(
        "SELECT CAST(id AS SIGNED) FROM information_schema.processlist WHERE db = ?",
    )
    .bind(name)
    .fetch_all(admin)
    .await
    .unwrap_or_default();
    for id in ids {
        // Gone already, or ended by another: either way no longer in the way.
        let _ = sqlx::raw_sql(&format!("KILL {id}")).execute(admin).await;
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
        self.store().await;
    }

    /// sitemapd's store on the test database, its tables created.
    pub async fn store(&self) -> sitemapd::store::Store {
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
        store
    }

    /// The rows a query answers, every column read as an integer or NULL.
    pub async fn int_rows(&self, sql: &str) -> Vec<Vec<Option<i64>>> {
        use sqlx::Row;
        each_pool!(self, |pool, Db| {
            let rows = sqlx::query::<Db>(sql)
                .fetch_all(pool)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            rows.iter()
                .map(|row| {
                    (0..row.len())
                        .map(|i| row.try_get::<Option<i64>, _>(i).expect("an integer column"))
                        .collect()
                })
                .collect()
        })
    }

    /// Runs SQL statements (setup, changes) on the test database.
    pub async fn exec(&self, sql: &str) {
        each_pool!(self, |pool, _Db| sqlx::raw_sql(sql)
            .execute(pool)
            .await
            .map(|_| ()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
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
