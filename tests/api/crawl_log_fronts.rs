//! The crawl log behind Apache and Caddy: a real Apache pipes its access log through
//! util-linux `logger` with the shipped `deploy/apache/sitemapd-access-log.conf`, a real Caddy
//! writes its JSON access log to the UDP `net` output of `deploy/caddy/sitemapd-access-log.caddy`;
//! each is run unprivileged with its own files, and crawlers' requests through it count.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::crawl_log::{crawl_log, googlebot, report, start, stop_within, BROWSER, HOST};
use crate::helpers::{
    eventually, free_port, server_binary, template_file, Backend, TestApp, TestDb, GOOGLEBOT,
};

/// A shipped snippet with its example address (127.0.0.1:5140) replaced by `syslog`, as a site
/// owner sets ACCESS_LOG_ADDR's.
fn shipped(file: &str, syslog: SocketAddr) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    assert!(text.contains("5140"), "{file} names the example port");
    text.replace("-P 5140", &format!("-P {}", syslog.port()))
        .replace("-n 127.0.0.1", &format!("-n {}", syslog.ip()))
        .replace("127.0.0.1:5140", &syslog.to_string())
}

/// A front web server in the foreground, stopped gracefully (SIGTERM) when dropped, its
/// children (Apache's workers and `logger`) with it.
struct Front {
    child: Child,
    port: u16,
    /// What the server says of its start and its errors, shown when it does not answer.
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Front {
    async fn get(&self, path: &str, user_agent: &str) -> u16 {
        let client = reqwest::Client::new();
        let response = eventually(
            "the web server to answer",
            || {
                client
                    .get(format!("http://127.0.0.1:{}{path}", self.port))
                    .header("host", HOST)
                    .header("user-agent", user_agent)
                    .send()
            },
            |r| r.is_ok(),
        )
        .await
        .unwrap_or_else(|error| {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            panic!(
                "the web server on port {} does not answer ({error}); its log:\n{log}",
                self.port
            )
        });
        response.status().as_u16()
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        if !stop_within(&mut self.child, Duration::from_secs(10)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A work directory others may read (Apache's workers run as another user under root).
fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    dir
}

/// Apache with the shipped access-log snippet, serving `/a` (and 404 for the rest).
fn apache(syslog: SocketAddr) -> Front {
    let binary = server_binary("apache2", "apache2");
    let dir = work_dir();
    let d = dir.path().display().to_string();
    for sub in ["site", "run", "logs"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    std::fs::write(dir.path().join("site/a"), "page\n").unwrap();
    std::fs::write(
        dir.path().join("access-log.conf"),
        shipped("deploy/apache/sitemapd-access-log.conf", syslog),
    )
    .unwrap();
    let port = free_port();
    // As root, Apache's children must run as another user; unprivileged, as the caller.
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    let user = if root {
        "User daemon\nGroup daemon\n"
    } else {
        ""
    };
    let modules = "/usr/lib/apache2/modules";
    let conf = format!(
        "ServerRoot {d}\nLoadModule mpm_event_module {modules}/mod_mpm_event.so\n\
         LoadModule authz_core_module {modules}/mod_authz_core.so\n\
         Listen 127.0.0.1:{port}\nPidFile {d}/run/httpd.pid\nDefaultRuntimeDir {d}/run\n\
         Mutex file:{d}/run default\nErrorLog {d}/logs/error.log\n{user}ServerName {HOST}\n\
         DocumentRoot {d}/site\n<Directory {d}/site>\n  Require all granted\n</Directory>\n\
         Include {d}/access-log.conf\n"
    );
    std::fs::write(dir.path().join("httpd.conf"), conf).unwrap();
    let child = Command::new(binary)
        .args(["-f", &format!("{d}/httpd.conf"), "-DFOREGROUND"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run apache2");
    Front {
        child,
        port,
        log: dir.path().join("logs/error.log"),
        _dir: dir,
    }
}

/// Caddy with the shipped access-log snippet imported in the site block.
fn caddy(syslog: SocketAddr) -> Front {
    let binary = server_binary("caddy", "caddy");
    let dir = work_dir();
    let d = dir.path().display().to_string();
    for sub in ["data", "config"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    std::fs::write(
        dir.path().join("access-log.caddy"),
        shipped("deploy/caddy/sitemapd-access-log.caddy", syslog),
    )
    .unwrap();
    let port = free_port();
    // The port is the server's (`http_port`), not the site addresses': Caddy 2.6 keys a site's
    // access logger by its address, port included, so `http://host:port` would log only the
    // requests whose Host header carries that port, as a site on port 80 never sees.
    let conf = format!(
        "{{\n\tadmin off\n\tauto_https off\n\thttp_port {port}\n\tstorage file_system {d}/data\n}}\n\n\
         http://{HOST}, http://127.0.0.1 {{\n\timport {d}/access-log.caddy\n\
         \trespond /gone 404\n\trespond \"page\"\n}}\n"
    );
    std::fs::write(dir.path().join("Caddyfile"), conf).unwrap();
    let log = dir.path().join("caddy.log");
    let child = Command::new(binary)
        .args(["run", "--config", &format!("{d}/Caddyfile")])
        .args(["--adapter", "caddyfile"])
        .env("HOME", &d)
        .env("XDG_DATA_HOME", format!("{d}/data"))
        .env("XDG_CONFIG_HOME", format!("{d}/config"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("run caddy");
    Front {
        child,
        port,
        log,
        _dir: dir,
    }
}

/// `sitemapd_access_log_lines_total{result}` as /metrics shows it.
async fn lines(app: &TestApp, result: &str) -> u64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    let prefix = format!("sitemapd_access_log_lines_total{{result=\"{result}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Googlebot's and a browser's requests through `front` arrive: the crawler's counts as
/// coverage, the browser's is ignored.
async fn requests_through(front: impl FnOnce(SocketAddr) -> Front) {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = start(&db, robots.path()).await;
    let front = front(crawl_log(&app).local_addr());

    assert_eq!(front.get("/a", GOOGLEBOT).await, 200);
    front.get("/a", BROWSER).await;
    let seen = eventually(
        "Googlebot's fetch in the report",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 1,
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
    assert_eq!(googlebot(&seen)["coverage"]["listed"], 2, "{seen:#}");
    let counted = eventually(
        "both lines counted",
        || async { (lines(&app, "parsed").await, lines(&app, "ignored").await) },
        |&(parsed, ignored)| parsed == 1 && ignored == 1,
    )
    .await;
    assert_eq!(counted, (1, 1), "parsed, ignored");
    assert_eq!(lines(&app, "unparsed").await, 0);
    drop(front);
}

#[tokio::test]
async fn apache_sends_its_access_log_through_logger() {
    requests_through(apache).await;
}

#[tokio::test]
async fn caddy_sends_its_access_log_over_udp() {
    requests_through(caddy).await;
}
