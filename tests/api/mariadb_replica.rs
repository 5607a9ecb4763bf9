//! SOURCE_DATABASE_URL on a real MariaDB replica: a primary and a replica made here
//! (`mariadb-install-db`, binary-log replication in row format) on free loopback ports.
//! `sitemapd migrate` against the primary watches the view's tables there (row triggers log the
//! touched keys); the service reads the view and the change log from the replica, as a user
//! that may only SELECT there, with its own state in SQLite. A change made on the primary shows
//! once the replica has applied it, through the change log, without waiting for a refresh.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::helpers::{eventually, free_port, spawn_app, Sitemapd, TestApp, BASE};

/// A primary and its replica under a directory of their own, ended (by PID) when dropped.
struct Replicated {
    dir: tempfile::TempDir,
    primary_port: u16,
    replica_port: u16,
    servers: Vec<std::process::Child>,
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"))
}

fn server_binary() -> PathBuf {
    ["/usr/sbin/mariadbd", "/usr/sbin/mysqld"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
        .unwrap_or_else(|| {
            panic!(
                "the MariaDB server (mariadbd) is missing: install it (Debian: apt-get install \
                 mariadb-server), or run ./scripts/test.sh, which does"
            )
        })
}

impl Replicated {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mariarep")
            .tempdir()
            .unwrap();
        let mut cluster = Self {
            primary_port: free_port(),
            replica_port: free_port(),
            dir,
            servers: Vec::new(),
        };
        cluster.install("primary");
        // The replica starts from the same empty server and applies the primary's log from
        // its first event.
        let copied = Command::new("cp")
            .arg("-a")
            .arg(cluster.path("primary"))
            .arg(cluster.path("replica"))
            .status()
            .unwrap();
        assert!(copied.success(), "copy the primary's data directory");
        let (primary_port, replica_port) = (cluster.primary_port, cluster.replica_port);
        cluster.launch("primary", primary_port, 1);
        cluster.launch("replica", replica_port, 2);
        cluster
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn install(&self, name: &str) {
        let mut command = Command::new("mariadb-install-db");
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.path(name).display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if running_as_root() {
            command.arg("--user=root");
        }
        let out = command.output().expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server of `name` in the background: loopback only, a binary log in row
    /// format, triggers allowed to sitemapd's user with binary logging on.
    fn launch(&mut self, name: &str, port: u16, server_id: u32) {
        let data = self.path(name);
        let mut command = Command::new(server_binary());
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", self.socket(name).display()))
            .arg(format!("--pid-file={}", self.pid_file(name).display()))
            .arg(format!("--server-id={server_id}"))
            .arg(format!(
                "--log-error={}",
                self.dir.path().join(format!("{name}.err")).display()
            ))
            .args([
                "--log-bin=mariadb-bin",
                "--binlog-format=ROW",
                "--log-bin-trust-function-creators=1",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if running_as_root() {
            command.arg("--user=root");
        }
        let server = command.spawn().expect("start mariadbd");
        self.servers.push(server);
    }

    fn socket(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.sock"))
    }

    fn pid_file(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.pid"))
    }

    fn url(port: u16, user: &str, database: &str) -> String {
        format!("mysql://{user}@127.0.0.1:{port}/{database}")
    }

    fn primary_url(&self, database: &str) -> String {
        Self::url(self.primary_port, "root", database)
    }

    fn replica_url(&self, user: &str, database: &str) -> String {
        Self::url(self.replica_port, user, database)
    }

    /// A pool on the server at `port`, once it answers.
    async fn connect(port: u16) -> sqlx::MySqlPool {
        let url = Self::url(port, "root", "mysql");
        let pool = eventually(
            "the MariaDB server to answer",
            || async { sqlx::MySqlPool::connect(&url).await.ok() },
            |pool| pool.is_some(),
        )
        .await;
        pool.unwrap_or_else(|| panic!("no MariaDB server answers at {url}"))
    }

    async fn replicate(&self) {
        let replica = Self::connect(self.replica_port).await;
        Self::connect(self.primary_port).await.close().await;
        let statement = format!(
            "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
             MASTER_USER = 'root', MASTER_USE_GTID = slave_pos",
            self.primary_port
        );
        for sql in [statement.as_str(), "START SLAVE"] {
            sqlx::raw_sql(sql)
                .execute(&replica)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        replica.close().await;
    }

    async fn on_primary(&self, sql: &str) {
        let pool = Self::connect(self.primary_port).await;
        sqlx::raw_sql(sql)
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        pool.close().await;
    }

    /// Waits until the replica has applied everything the primary logged so far.
    async fn applied(&self) {
        let primary = Self::connect(self.primary_port).await;
        let position: String = sqlx::query_scalar("SELECT CAST(@@gtid_binlog_pos AS CHAR)")
            .fetch_one(&primary)
            .await
            .unwrap();
        primary.close().await;
        let replica = Self::connect(self.replica_port).await;
        let waited: Option<i64> = sqlx::query_scalar("SELECT MASTER_GTID_WAIT(?, 60)")
            .bind(&position)
            .fetch_one(&replica)
            .await
            .unwrap();
        replica.close().await;
        assert_eq!(waited, Some(0), "the replica applies {position}");
    }

    fn stop(&self, name: &str) {
        let Some(pid) = std::fs::read_to_string(self.pid_file(name))
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
        else {
            return;
        };
        let _ = Command::new("kill").arg(pid.to_string()).status();
        let proc = Path::new("/proc").join(pid.to_string());
        for _ in 0..200 {
            if !proc.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Replicated {
    fn drop(&mut self) {
        self.stop("replica");
        self.stop("primary");
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// A CMS's pages behind a view, on the primary, and a user that may only read it.
const CMS: &str = "CREATE DATABASE cms; USE cms;
    CREATE TABLE cms_pages (page_id bigint unsigned PRIMARY KEY, path varchar(200) NOT NULL,
      published tinyint NOT NULL DEFAULT 1);
    INSERT INTO cms_pages (page_id, path) SELECT seq, CONCAT('/page/', seq) FROM seq_1_to_30;
    CREATE VIEW cms_sitemap AS SELECT page_id AS id, path AS loc, NULL AS lastmod,
      NULL AS changefreq, NULL AS priority FROM cms_pages WHERE published = 1;
    CREATE USER 'reader'@'127.0.0.1';
    GRANT SELECT ON cms.* TO 'reader'@'127.0.0.1';";

fn url(path: &str) -> String {
    format!("{}{}", BASE.trim_end_matches('/'), path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_read_from_a_mariadb_replica_shows_changes_logged_on_the_primary() {
    let cluster = Replicated::start();
    cluster.replicate().await;
    cluster.on_primary(CMS).await;
    // Watched on the primary: the change log and the triggers are made there, and replicated.
    let out = Sitemapd::new(["migrate"])
        .env("DATABASE_URL", cluster.primary_url("cms"))
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_SOURCE", "cms_sitemap")
        .output();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("cms_sitemap: watching cms.cms_pages"),
        "{said}"
    );
    cluster.applied().await;

    let state = tempfile::tempdir().unwrap();
    let state_url = format!("sqlite://{}", state.path().join("state.db").display());
    let replica = cluster.replica_url("reader", "cms");
    let app: TestApp = spawn_app(
        &state_url,
        &[
            ("SOURCE_DATABASE_URL", replica.as_str()),
            ("SITEMAP_SOURCE", "cms_sitemap"),
            ("SITEMAP_PAGE_SIZE", "10"),
            // An hour: only the change log can show the changes below in time.
            ("SITEMAP_REFRESH_SECS", "3600"),
        ],
    )
    .await;
    let locs = app.all_locs().await;
    assert_eq!(locs.len(), 30);
    assert!(locs.contains(&url("/page/15")), "{locs:?}");

    // Validators only (HEAD renders nothing, so no render can find the change first).
    let etag = |path: &'static str| {
        let app = &app;
        async move {
            let resp = app.client.head(app.url(path)).send().await.unwrap();
            super::helpers::header(&resp, "etag").to_string()
        }
    };
    let (second, third) = (
        etag("/sitemap-2.xml.gz").await,
        etag("/sitemap-3.xml.gz").await,
    );
    cluster
        .on_primary(
            "UPDATE cms.cms_pages SET path = '/page/15-renamed' WHERE page_id = 15;
             UPDATE cms.cms_pages SET published = 0 WHERE page_id = 27;",
        )
        .await;
    cluster.applied().await;
    let moved = eventually(
        "new ETags for the two files the primary's changes touched",
        || async {
            (
                etag("/sitemap-2.xml.gz").await,
                etag("/sitemap-3.xml.gz").await,
            )
        },
        |(now_second, now_third)| *now_second != second && *now_third != third,
    )
    .await;
    assert_ne!(moved, (second, third));
    let locs = app.all_locs().await;
    assert!(locs.contains(&url("/page/15-renamed")), "{locs:?}");
    assert!(!locs.contains(&url("/page/27")), "{locs:?}");
    assert_eq!(locs.len(), 29);
}
