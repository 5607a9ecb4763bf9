//! SOURCE_DATABASE_URL on a real PostgreSQL hot standby: a primary and a streaming standby made
//! here (`initdb`, `pg_basebackup -R`) on free loopback ports, sitemapd reading the standby with
//! its own state in SQLite, then in a database of the primary's server. A change on the primary
//! shows once the standby replayed it; no statement that writes ever reaches the standby (it
//! would refuse it, and say so in its log, which is read at the end).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::helpers::{eventually, free_port, spawn_app, status_page, Sitemapd, TestApp, BASE};

/// What the standby's log says when it is sent a statement that writes.
const REFUSED_WRITES: [&str; 3] = ["read-only transaction", "cannot execute", "during recovery"];

/// The PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) of the newest version here.
fn server_binaries() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|version| version.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_basebackup").exists())
        .max_by_key(|bin| {
            let version = bin.parent().and_then(|p| p.file_name());
            version.and_then(|v| v.to_str()?.parse::<u32>().ok())
        });
    found.unwrap_or_else(|| {
        panic!(
            "the PostgreSQL server binaries (initdb, pg_basebackup in /usr/lib/postgresql/*/bin) \
             are missing: install them (Debian: apt-get install postgresql), or run \
             ./scripts/test.sh, which does"
        )
    })
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"))
}

/// `bin/tool args…`, as the postgres user when run as root (PostgreSQL refuses root).
fn run(bin: &Path, tool: &str, args: &[&str]) {
    let program = bin.join(tool);
    let mut command = match running_as_root() {
        true => {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        }
        false => Command::new(&program),
    };
    let out = command.args(args).output().expect("run a PostgreSQL tool");
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A primary and its streaming standby under a directory of their own, stopped (by PID) and
/// removed when dropped.
struct Replicated {
    dir: tempfile::TempDir,
    bin: PathBuf,
    primary_port: u16,
    standby_port: u16,
}

impl Replicated {
    fn start() -> Self {
        Self::start_with("")
    }

    /// [`Replicated::start`], with `standby_settings` added to the standby's configuration.
    fn start_with(standby_settings: &str) -> Self {
        let bin = server_binaries();
        let dir = tempfile::Builder::new().prefix("pgrep").tempdir().unwrap();
        if running_as_root() {
            let owned = Command::new("chown")
                .args(["postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(owned.success(), "chown postgres {}", dir.path().display());
        }
        let cluster = Self {
            primary_port: free_port(),
            standby_port: free_port(),
            bin,
            dir,
        };
        let primary = cluster.data("primary");
        run(
            &cluster.bin,
            "initdb",
            &[
                "-D",
                &primary,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        cluster.configure("primary", cluster.primary_port);
        cluster.pg_ctl_start("primary");
        run(
            &cluster.bin,
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &cluster.primary_port.to_string(),
                "-U",
                "postgres",
                "-D",
                &cluster.data("standby"),
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        );
        cluster.configure("standby", cluster.standby_port);
        cluster.append("standby", standby_settings);
        cluster.pg_ctl_start("standby");
        cluster
    }

    fn data(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Port, loopback only, sockets in the cluster's directory, WAL for a standby, and every
    /// statement that fails logged with its text.
    fn configure(&self, name: &str, port: u16) {
        use std::io::Write;
        let conf = self.dir.path().join(name).join("postgresql.conf");
        let mut file = std::fs::OpenOptions::new().append(true).open(conf).unwrap();
        writeln!(
            file,
            "\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nfsync = off\n\
             log_min_error_statement = error\nlog_line_prefix = '%m [%p] %a '",
            self.dir.path().display()
        )
        .unwrap();
    }

    fn append(&self, name: &str, settings: &str) {
        use std::io::Write;
        let conf = self.dir.path().join(name).join("postgresql.conf");
        let mut file = std::fs::OpenOptions::new().append(true).open(conf).unwrap();
        writeln!(file, "\n{settings}").unwrap();
    }

    fn pg_ctl_start(&self, name: &str) {
        let log = self.dir.path().join(format!("{name}.log"));
        run(
            &self.bin,
            "pg_ctl",
            &[
                "-D",
                &self.data(name),
                "-l",
                &log.display().to_string(),
                "-w",
                "start",
            ],
        );
    }

    fn primary_url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{database}",
            self.primary_port
        )
    }

    fn standby_url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{database}",
            self.standby_port
        )
    }

    async fn on_primary(&self, database: &str, sql: &str) {
        let pool = sqlx::PgPool::connect(&self.primary_url(database))
            .await
            .unwrap();
        sqlx::raw_sql(sql)
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        pool.close().await;
    }

    /// Waits until the standby has replayed everything the primary wrote so far.
    async fn replayed(&self) {
        let primary = sqlx::PgPool::connect(&self.primary_url("postgres"))
            .await
            .unwrap();
        let target: String = sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
            .fetch_one(&primary)
            .await
            .unwrap();
        let standby = sqlx::PgPool::connect(&self.standby_url("postgres"))
            .await
            .unwrap();
        let caught_up = eventually(
            "the standby to replay the primary's writes",
            || async {
                sqlx::query_scalar::<_, bool>("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn")
                    .bind(&target)
                    .fetch_one(&standby)
                    .await
                    .unwrap_or(false)
            },
            |done| *done,
        )
        .await;
        assert!(caught_up, "the standby replays what the primary wrote");
    }

    /// The standby's log.
    fn standby_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("standby.log")).unwrap_or_default()
    }

    /// Nothing sitemapd sent the standby was refused, nor failed at all (a statement naming a
    /// table the source lacks would be an error in its log too).
    fn assert_no_write_reached_the_standby(&self) {
        let log = self.standby_log();
        for refusal in REFUSED_WRITES {
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(refusal)).collect();
            assert!(lines.is_empty(), "the standby refused writes: {lines:#?}");
        }
        let failed: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" sitemapd ERROR:"))
            .collect();
        assert!(
            failed.is_empty(),
            "statements of sitemapd failed: {failed:#?}"
        );
    }

    /// Ends a server by the PID its data directory records.
    fn stop(&self, name: &str) {
        let pid_file = self.dir.path().join(name).join("postmaster.pid");
        let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
        else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-QUIT", &pid.to_string()])
            .status();
        let proc = PathBuf::from(format!("/proc/{pid}"));
        for _ in 0..100 {
            if !proc.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Replicated {
    fn drop(&mut self) {
        self.stop("standby");
        self.stop("primary");
    }
}

/// A CMS's table and a view of it in the five columns, made on the primary.
const CMS: &str = "CREATE TABLE pages (id bigint PRIMARY KEY, url text NOT NULL, \
     modified timestamptz, hidden boolean NOT NULL DEFAULT false); \
     INSERT INTO pages (id, url, modified) VALUES \
     (1, '/a', '2024-05-01T00:00:00Z'), (2, '/b', '2024-05-02T00:00:00Z'), \
     (3, '/c', NULL); \
     CREATE VIEW sitemap_pages AS SELECT id, url AS loc, modified AS lastmod, \
     NULL::text AS changefreq, NULL::real AS priority FROM pages WHERE NOT hidden";

fn url(path: &str) -> String {
    format!("{}{}", BASE.trim_end_matches('/'), path)
}

/// The service reading `source` from `cluster`'s standby database `cms`, with its own state in
/// SQLite (kept in the returned directory), refreshed every second.
async fn served_from_the_standby(
    cluster: &Replicated,
    source: &str,
) -> (tempfile::TempDir, TestApp) {
    let state = tempfile::tempdir().unwrap();
    let state_url = format!("sqlite://{}", state.path().join("state.db").display());
    let standby = cluster.standby_url("cms");
    let app = spawn_app(
        &state_url,
        &[
            ("SOURCE_DATABASE_URL", standby.as_str()),
            ("SITEMAP_SOURCE", source),
            ("SITEMAP_REFRESH_SECS", "1"),
        ],
    )
    .await;
    (state, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_on_a_standby_is_served_with_state_in_sqlite_and_its_changes_show_after_replay() {
    let cluster = Replicated::start();
    cluster.on_primary("postgres", "CREATE DATABASE cms").await;
    cluster.on_primary("cms", CMS).await;
    cluster.replayed().await;
    let (state, app) = served_from_the_standby(&cluster, "sitemap_pages").await;
    assert_eq!(app.all_locs().await, vec![url("/a"), url("/b"), url("/c")]);

    cluster
        .on_primary(
            "cms",
            "UPDATE pages SET url = '/b-renamed', modified = '2024-06-01T00:00:00Z' WHERE id = 2; \
             UPDATE pages SET hidden = true WHERE id = 3",
        )
        .await;
    let locs = eventually(
        "the primary's UPDATE to show through the standby",
        || app.all_locs(),
        |locs| locs.contains(&url("/b-renamed")) && !locs.contains(&url("/c")),
    )
    .await;
    assert_eq!(locs, vec![url("/a"), url("/b-renamed")]);

    // The standby's role and lag: on the status page, in /status.json and as a metric.
    let admin = status_page(&app).await;
    let status: serde_json::Value = eventually(
        "the standby's lag to be known",
        || async {
            let body = reqwest::get(format!("{admin}/status.json")).await.unwrap();
            body.json::<serde_json::Value>().await.unwrap()
        },
        |status| status["sites"][0]["source_database"]["lag_seconds"].is_number(),
    )
    .await;
    let source = &status["sites"][0]["source_database"];
    assert_eq!(source["role"], "standby", "{source}");
    assert!(source["lag_seconds"].as_f64().unwrap() >= 0.0, "{source}");
    assert!(!source["url"].as_str().unwrap().contains("password"));
    let page = reqwest::get(format!("{admin}/")).await.unwrap();
    let page = page.text().await.unwrap();
    assert!(
        page.contains("behind its primary"),
        "the status page shows the lag"
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("sitemapd_source_lag_seconds{site="),
        "a lag metric: {metrics}"
    );
    assert_eq!(app.get("/readyz").await.status(), 200);

    // The standby stops: /readyz says the source cannot be read; what needs no read answers.
    cluster.stop("standby");
    let ready = eventually(
        "/readyz to say the source cannot be read",
        || async {
            let resp = app.get("/readyz").await;
            (resp.status().as_u16(), resp.text().await.unwrap())
        },
        |(status, _)| *status == 503,
    )
    .await;
    assert_eq!(ready.0, 503, "{}", ready.1);
    assert!(ready.1.contains("SOURCE_DATABASE_URL"), "{}", ready.1);
    assert_eq!(app.get("/robots.txt").await.status(), 200);
    assert_eq!(app.get("/sitemap_index.xml").await.status(), 200);

    cluster.assert_no_write_reached_the_standby();
    assert!(
        state.path().join("state.db").exists(),
        "the state is in SQLite"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_table_on_a_standby_shows_changes_through_the_primarys_change_log() {
    let cluster = Replicated::start();
    cluster.on_primary("postgres", "CREATE DATABASE cms").await;
    cluster
        .on_primary("postgres", "CREATE DATABASE sitemapd_state")
        .await;
    // The documented command: the migrations (the built-in table and its change log) applied
    // to the primary, where the CMS writes.
    let migrated = Sitemapd::new(["migrate"])
        .env("DATABASE_URL", cluster.primary_url("cms"))
        .env("SITEMAP_BASE_URL", BASE)
        .output();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    cluster
        .on_primary(
            "cms",
            "INSERT INTO sitemap_entries (id, loc) VALUES (1, '/one'), (2, '/two')",
        )
        .await;
    cluster.replayed().await;
    let state_url = cluster.primary_url("sitemapd_state");
    let standby = cluster.standby_url("cms");
    // A refresh period longer than the test: only the change log can bring the change.
    let app = spawn_app(
        &state_url,
        &[
            ("SOURCE_DATABASE_URL", standby.as_str()),
            ("SITEMAP_REFRESH_SECS", "3600"),
        ],
    )
    .await;
    assert_eq!(app.all_locs().await, vec![url("/one"), url("/two")]);

    cluster
        .on_primary(
            "cms",
            "UPDATE sitemap_entries SET loc = '/two-moved' WHERE id = 2; \
             INSERT INTO sitemap_entries (id, loc) VALUES (3, '/three')",
        )
        .await;
    let locs = eventually(
        "the primary's change to show through the change log on the standby",
        || app.all_locs(),
        |locs| locs.contains(&url("/two-moved")) && locs.contains(&url("/three")),
    )
    .await;
    assert_eq!(locs, vec![url("/one"), url("/two-moved"), url("/three")]);

    // The state went to the primary's other database, nothing to the standby.
    let state = sqlx::PgPool::connect(&state_url).await.unwrap();
    let pages: i64 = sqlx::query_scalar("SELECT count(*) FROM sitemapd_pages")
        .fetch_one(&state)
        .await
        .unwrap();
    assert!(pages > 0, "the state is kept in DATABASE_URL");
    cluster.assert_no_write_reached_the_standby();
}

/// The pages view, slowed down on demand: while `knobs.slow`, every statement reading it takes a
/// second, so replaying a lock taken on the primary meets one under way.
const SLOW_CMS: &str = "CREATE TABLE knobs (slow boolean NOT NULL); \
     INSERT INTO knobs VALUES (false); \
     CREATE VIEW slow_pages AS SELECT p.* FROM sitemap_pages p \
     CROSS JOIN LATERAL (SELECT pg_sleep(CASE WHEN (SELECT slow FROM knobs) THEN 1 ELSE 0 END)) s";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_the_standby_cancels_for_recovery_are_read_again_and_fail_no_sweep() {
    // Recovery cancels at once any read that holds back the replay.
    let cluster = Replicated::start_with("max_standby_streaming_delay = 0");
    cluster.on_primary("postgres", "CREATE DATABASE cms").await;
    cluster.on_primary("cms", CMS).await;
    cluster.on_primary("cms", SLOW_CMS).await;
    cluster.replayed().await;
    let (_state, app) = served_from_the_standby(&cluster, "slow_pages").await;
    assert_eq!(app.all_locs().await, vec![url("/a"), url("/b"), url("/c")]);
    cluster
        .on_primary("cms", "UPDATE knobs SET slow = true")
        .await;
    let admin = status_page(&app).await;
    let retried = || async {
        let body = reqwest::get(format!("{admin}/status.json")).await.unwrap();
        let status = body.json::<serde_json::Value>().await.unwrap();
        status["sites"][0]["source_database"]["retried_statements"]
            .as_u64()
            .unwrap_or(0)
    };
    // A lock taken on the primary is replayed on the standby, where it conflicts with the
    // summaries' statement reading the view (every refresh); taken every few seconds until one
    // met a statement under way.
    let mut locks = 0;
    while retried().await == 0 && locks < 12 {
        cluster
            .on_primary(
                "cms",
                "BEGIN; LOCK TABLE pages IN ACCESS EXCLUSIVE MODE; COMMIT",
            )
            .await;
        locks += 1;
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    }
    assert!(retried().await >= 1, "a cancelled read was read again");
    cluster
        .on_primary(
            "cms",
            "UPDATE knobs SET slow = false; UPDATE pages SET url = '/after' WHERE id = 1",
        )
        .await;
    let locs = eventually(
        "a change after the cancellations to show",
        || app.all_locs(),
        |locs| locs.contains(&url("/after")),
    )
    .await;
    assert!(locs.contains(&url("/after")), "{locs:?}");
    assert_eq!(app.metric("sitemapd_sweep_failures_total").await, 0.0);
    let log = cluster.standby_log();
    assert!(
        log.contains("conflict with recovery"),
        "the standby cancelled reads for recovery"
    );
}
