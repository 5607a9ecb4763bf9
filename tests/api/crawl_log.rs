//! The crawl log (ACCESS_LOG_ADDR): a real nginx sends its access log through syslog with the
//! shipped `deploy/nginx/sitemapd-access-log.conf`; crawlers' requests through it become
//! coverage, waiting-for-recrawl, freshness, outside-the-sitemaps and robots violations in
//! `/status.json`, kept in the database across a restart. Apache and Caddy are in
//! `crawl_log_fronts`.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::helpers::{
    eventually, server_binary, spawn_app, template_file, Backend, TestApp, TestDb, GOOGLEBOT,
};

pub const BINGBOT: &str = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)";
pub const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
pub const HOST: &str = "www.example.com";

/// A real nginx in the foreground with its own prefix, logging to `syslog` through the shipped
/// snippet, answering every path itself (a site's pages; `/gone` is a 404).
pub struct Nginx {
    child: Child,
    binary: PathBuf,
    prefix: tempfile::TempDir,
    pub port: u16,
}

impl Nginx {
    pub fn start(syslog: SocketAddr) -> Self {
        let binary = server_binary("nginx", "nginx-light");
        let prefix = tempfile::tempdir().unwrap();
        for dir in ["conf", "logs", "tmp"] {
            std::fs::create_dir_all(prefix.path().join(dir)).unwrap();
        }
        let port = crate::helpers::free_port();
        let mut nginx = Self {
            child: Command::new("true").spawn().unwrap(),
            binary,
            prefix,
            port,
        };
        nginx.write_config(syslog);
        nginx.child = Command::new(&nginx.binary)
            .args(nginx.args())
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run nginx");
        nginx
    }

    fn args(&self) -> Vec<String> {
        let p = self.prefix.path().display().to_string();
        vec![
            "-p".into(),
            format!("{p}/"),
            "-e".into(),
            format!("{p}/logs/error.log"),
            "-c".into(),
            format!("{p}/conf/nginx.conf"),
        ]
    }

    fn write_config(&self, syslog: SocketAddr) {
        let p = self.prefix.path().display();
        let snippet =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/nginx/sitemapd-access-log.conf");
        let conf = format!(
            "worker_processes 1;\npid {p}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
             http {{\n  include {snippet};\n  access_log {p}/logs/access.log;\n\
             client_body_temp_path {p}/tmp/body;\n  proxy_temp_path {p}/tmp/proxy;\n\
             fastcgi_temp_path {p}/tmp/fastcgi;\n  uwsgi_temp_path {p}/tmp/uwsgi;\n\
             scgi_temp_path {p}/tmp/scgi;\n\
             server {{\n    listen 127.0.0.1:{port};\n    server_name {HOST};\n\
             access_log syslog:server={syslog},tag=sitemapd sitemapd;\n\
             location = /gone {{ return 404; }}\n\
             location / {{ default_type text/plain; return 200 \"page\\n\"; }}\n  }}\n}}\n",
            snippet = snippet.display(),
            port = self.port,
        );
        std::fs::write(self.prefix.path().join("conf/nginx.conf"), conf).unwrap();
    }

    /// Points nginx's log at a new address (a restarted service) and reloads it.
    fn reload(&self, syslog: SocketAddr) {
        self.write_config(syslog);
        let status = Command::new(&self.binary)
            .args(self.args())
            .args(["-s", "reload"])
            .status()
            .unwrap();
        assert!(status.success(), "nginx -s reload");
    }

    async fn get(&self, path: &str, user_agent: &str) -> u16 {
        self.get_from("127.0.0.1".parse().unwrap(), path, user_agent)
            .await
    }

    /// A request from the client address `from` (any 127.0.0.0/8 address is local).
    async fn get_from(&self, from: IpAddr, path: &str, user_agent: &str) -> u16 {
        let client = reqwest::Client::builder()
            .local_address(from)
            .build()
            .unwrap();
        // nginx may still be starting: retry a refused connection.
        let response = eventually(
            "nginx to answer",
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
        .expect("nginx answers");
        response.status().as_u16()
    }
}

impl Drop for Nginx {
    /// `nginx -s quit`, then waits for the master, which waits for its workers: none is left
    /// behind. A master that does not stop in time is killed.
    fn drop(&mut self) {
        let quit = Command::new(&self.binary)
            .args(self.args())
            .args(["-s", "quit"])
            .stderr(Stdio::null())
            .status();
        if quit.is_ok_and(|s| s.success()) {
            stop_within(&mut self.child, std::time::Duration::from_secs(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to `patience` for `child` to exit; whether it did.
pub fn stop_within(child: &mut Child, patience: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + patience;
    while std::time::Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

pub fn crawl_log(app: &TestApp) -> &sitemapd::crawllog::CrawlLog {
    app.app
        .crawl_log
        .as_deref()
        .expect("ACCESS_LOG_ADDR is set")
}

pub fn report(app: &TestApp) -> Value {
    serde_json::to_value(&*crawl_log(app).report()).unwrap()
}

pub fn googlebot(report: &Value) -> &Value {
    &report["sites"][0]["groups"][0]["crawl_log"]["Googlebot"]
}

/// A service whose crawl log counts what crawlers claim (`CRAWLER_VERIFY=off`): these tests are
/// about the log and its reports; verified and forged claims have tests of their own.
pub async fn start(db: &TestDb, robots: &Path) -> TestApp {
    start_with(db, robots, &[("CRAWLER_VERIFY", "off")]).await
}

async fn start_with(db: &TestDb, robots: &Path, more: &[(&str, &str)]) -> TestApp {
    let mut vars = vec![
        ("ACCESS_LOG_ADDR", "127.0.0.1:0"),
        ("ROBOTS_TEMPLATE", robots.to_str().unwrap()),
    ];
    vars.extend_from_slice(more);
    spawn_app(&db.url, &vars).await
}

async fn crawlers_fetches_through_nginx_become_coverage_recrawl_and_violations(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "https://www.example.com/c")])
        .await;
    for id in 1..=3 {
        db.set_lastmod(id, crate::helpers::utc("2026-01-01 00:00:00"))
            .await;
    }
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = start(&db, robots.path()).await;
    let nginx = Nginx::start(crawl_log(&app).local_addr());

    assert_eq!(nginx.get("/a", GOOGLEBOT).await, 200);
    assert_eq!(nginx.get("/c", GOOGLEBOT).await, 200);
    assert_eq!(nginx.get("/a", BINGBOT).await, 200);
    assert_eq!(nginx.get("/gone", GOOGLEBOT).await, 404);
    assert_eq!(nginx.get("/private/x", GOOGLEBOT).await, 200);
    assert_eq!(nginx.get("/b", BROWSER).await, 200);
    // A line no web server wrote is counted, and the log goes on.
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sender
        .send_to(
            b"<13>Nov 25 21:00:00 host sitemapd: not an access log line",
            crawl_log(&app).local_addr(),
        )
        .unwrap();

    let seen = eventually(
        "the fetches in the report",
        || async { report(&app) },
        |r| {
            googlebot(r)["coverage"]["fetched"] == 2
                && !r["sites"][0]["robots_violations"]
                    .as_array()
                    .unwrap()
                    .is_empty()
                && !r["sites"][0]["outside_sitemaps"]
                    .as_array()
                    .unwrap()
                    .is_empty()
        },
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 2, "{seen:#}");
    assert_eq!(googlebot(&seen)["coverage"]["listed"], 3, "{seen:#}");
    assert_eq!(
        googlebot(&seen)["waiting_for_recrawl"]["count"],
        0,
        "{seen:#}"
    );
    let bing = &seen["sites"][0]["groups"][0]["crawl_log"]["bingbot"];
    assert_eq!(bing["coverage"]["fetched"], 1, "{seen:#}");
    let outside = &seen["sites"][0]["outside_sitemaps"];
    assert!(
        outside
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["path"] == "/gone" && p["status"] == 404),
        "{seen:#}"
    );
    let violations = &seen["sites"][0]["robots_violations"][0];
    assert_eq!(violations["crawler"], "Googlebot", "{seen:#}");
    assert_eq!(violations["unverified"], 1, "{seen:#}");
    assert_eq!(violations["examples"][0]["path"], "/private/x", "{seen:#}");
    assert!(
        violations["examples"][0]["rule"]
            .as_str()
            .unwrap()
            .contains("Disallow: /private/"),
        "{seen:#}"
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("sitemapd_access_log_lines_total{result=\"unparsed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sitemapd_access_log_lines_total{result=\"ignored\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sitemapd_access_log_lines_total{result=\"parsed\"} 5"),
        "{metrics}"
    );

    // /a changes after Googlebot's fetch: it waits for a recrawl.
    db.set_lastmod(1, chrono::Utc::now()).await;
    let waiting = eventually(
        "/a to wait for Googlebot",
        || async { report(&app) },
        |r| googlebot(r)["waiting_for_recrawl"]["count"] == 1,
    )
    .await;
    assert_eq!(
        googlebot(&waiting)["waiting_for_recrawl"]["count"],
        1,
        "{waiting:#}"
    );
    assert_eq!(
        googlebot(&waiting)["waiting_for_recrawl"]["examples"][0]["path"],
        "/a"
    );
    assert!(googlebot(&waiting)["waiting_for_recrawl"]["oldest"].is_string());

    // The service restarts: what was counted is still there.
    drop(app);
    let app = start(&db, robots.path()).await;
    nginx.reload(crawl_log(&app).local_addr());
    let restarted = eventually(
        "the report after the restart",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 2,
    )
    .await;
    assert_eq!(
        googlebot(&restarted)["coverage"]["fetched"],
        2,
        "{restarted:#}"
    );
    assert_eq!(
        googlebot(&restarted)["waiting_for_recrawl"]["count"],
        1,
        "{restarted:#}"
    );

    // Googlebot fetches /a again (in a later second than its lastmod): nothing waits, and the
    // time it took is its freshness.
    let fresh = eventually(
        "Googlebot's recrawl of /a",
        || async {
            nginx.get("/a", GOOGLEBOT).await;
            report(&app)
        },
        |r| {
            googlebot(r)["waiting_for_recrawl"]["count"] == 0
                && googlebot(r)["freshness_seconds"]["p50"].is_i64()
        },
    )
    .await;
    assert_eq!(
        googlebot(&fresh)["waiting_for_recrawl"]["count"],
        0,
        "{fresh:#}"
    );
    assert!(
        googlebot(&fresh)["freshness_seconds"]["p50"]
            .as_i64()
            .unwrap()
            >= 0,
        "{fresh:#}"
    );
    let status: Value =
        serde_json::to_value(sitemapd::admin::status::Status::of(&app.app)).unwrap();
    let group = &status["sites"][0]["groups"][0];
    assert_eq!(
        group["crawl_log"]["Googlebot"]["coverage"]["fetched"], 2,
        "{status:#}"
    );
    assert!(
        status["sites"][0]["robots_violations"].is_array(),
        "{status:#}"
    );
    assert!(
        status["sites"][0]["outside_sitemaps"].is_array(),
        "{status:#}"
    );
}

crate::on_each_database!(crawlers_fetches_through_nginx_become_coverage_recrawl_and_violations);

/// The Apache snippet's pipe, as Apache runs it: util-linux `logger` sends each line in RFC 5424
/// syslog; lines in the shipped format arrive and count, and a line in another format is
/// counted as unparsed without stopping the log.
#[tokio::test]
async fn lines_sent_through_logger_as_apache_pipes_them_are_counted() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = start(&db, robots.path()).await;
    let addr = crawl_log(&app).local_addr();
    let now = crate::crawl_log_trust::logged_now();
    let lines = format!(
        "{now}\t66.249.66.1\t\"{HOST}\"\t\"GET\"\t\"/a\"\t200\t5\t\"{GOOGLEBOT}\"\n\
         127.0.0.1 - - [25/Nov/2026:22:00:00 +0000] \"GET /a HTTP/1.1\" 200 5\n"
    );
    let mut logger = Command::new("logger")
        .args([
            "-n",
            "127.0.0.1",
            "-P",
            &addr.port().to_string(),
            "-d",
            "-t",
            "sitemapd",
            "--size",
            "8192",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .expect("util-linux logger");
    std::io::Write::write_all(logger.stdin.as_mut().unwrap(), lines.as_bytes()).unwrap();
    drop(logger.stdin.take());
    assert!(logger.wait().unwrap().success());
    let counted = |result: &'static str| {
        let app = &app;
        async move {
            let text = app.get("/metrics").await.text().await.unwrap();
            text.contains(&format!(
                "sitemapd_access_log_lines_total{{result=\"{result}\"}} 1"
            ))
        }
    };
    let parsed = eventually(
        "logger's lines to arrive",
        || async { counted("parsed").await && counted("unparsed").await },
        |done| *done,
    )
    .await;
    assert!(
        parsed,
        "{}",
        app.get("/metrics").await.text().await.unwrap()
    );
    let seen = eventually(
        "Googlebot's fetch in the report",
        || async { report(&app) },
        |r| googlebot(r)["coverage"]["fetched"] == 1,
    )
    .await;
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
}

/// A source whose locs are paths for some rows and absolute URLs for others: once the writer
/// has seen one spelling it looks that one up first, and the other for what it did not find.
#[tokio::test]
async fn a_source_mixing_paths_and_absolute_urls_finds_both() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    let absolute = format!("https://{HOST}/b");
    db.insert(&[(1, "/a"), (2, absolute.as_str())]).await;
    let robots = template_file("User-agent: *\nAllow: /\n");
    let app = start(&db, robots.path()).await;
    let addr = crawl_log(&app).local_addr();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = |path: &str| {
        let line = crate::crawl_log_trust::googlebot_line(path, chrono::Utc::now());
        socket.send_to(line.as_bytes(), addr).unwrap();
    };
    let fetched = |n: i64| move |r: &Value| googlebot(r)["coverage"]["fetched"] == n;
    // The first batch finds /a as a path: the source's spelling is learnt.
    send("/a");
    let first = eventually("/a in the report", || async { report(&app) }, fetched(1)).await;
    assert_eq!(googlebot(&first)["coverage"]["fetched"], 1, "{first:#}");
    // A later batch still finds /b, listed as an absolute URL.
    send("/b");
    let both = eventually("/b in the report", || async { report(&app) }, fetched(2)).await;
    assert_eq!(googlebot(&both)["coverage"]["fetched"], 2, "{both:#}");
}

#[test]
fn a_bad_access_log_address_stops_the_start() {
    crate::helpers::refused(
        &[("ACCESS_LOG_ADDR", "syslog-host")],
        &["ACCESS_LOG_ADDR", "syslog-host"],
    );
}

/// Google's range list as Google publishes it, served on 127.0.0.1 and naming 127.0.0.2 only.
async fn serve_googlebot_ranges() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum::Router::new().route(
        "/googlebot.json",
        axum::routing::get(|| async {
            axum::Json(serde_json::json!({
                "creationTime": "2026-11-25T00:00:00.000000",
                "prefixes": [{ "ipv4Prefix": "127.0.0.2/32" }]
            }))
        }),
    );
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    (addr, server)
}

/// A registry file whose Googlebot is proved by the range list at `ranges` alone.
fn googlebot_by_ranges(ranges: SocketAddr) -> tempfile::NamedTempFile {
    template_file(&format!(
        "[[crawler]]\nname = \"Googlebot\"\ntokens = [\"Googlebot\"]\nuser_agent = [\"Googlebot\"]\n\
         operator = \"Google\"\npurpose = \"search\"\nverify_dns = []\n\
         verify_ranges = [\"http://{ranges}/googlebot.json\"]\n\
         docs = [\"https://developers.google.com/search/docs/crawling-indexing/verifying-googlebot\"]\n"
    ))
}

fn violations_of<'a>(report: &'a Value, crawler: &str) -> Option<&'a Value> {
    report["sites"][0]["robots_violations"]
        .as_array()?
        .iter()
        .find(|v| v["crawler"] == crawler)
}

/// Googlebot from an address in its published ranges (127.0.0.2) and one claiming its name from
/// elsewhere (127.0.0.3), through nginx: only the true one's fetches are Googlebot's coverage;
/// both fetches of a disallowed path count as violations, one verified and one forged; a
/// "bingbot" from the same address is not bingbot's coverage either.
async fn forged_googlebot_is_never_googlebot_coverage(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "/c")]).await;
    let (ranges, _ranges_server) = serve_googlebot_ranges().await;
    let registry = googlebot_by_ranges(ranges);
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = start_with(
        &db,
        robots.path(),
        &[
            ("CRAWLERS_FILE", registry.path().to_str().unwrap()),
            ("CRAWLER_VERIFY", "on"),
        ],
    )
    .await;
    let nginx = Nginx::start(crawl_log(&app).local_addr());
    let google: IpAddr = "127.0.0.2".parse().unwrap();
    let forger: IpAddr = "127.0.0.3".parse().unwrap();

    // The range list may still be on its way at the start: the true Googlebot fetches until
    // its fetches count as verified.
    let seen = eventually(
        "verified and forged Googlebot fetches",
        || async {
            nginx.get_from(google, "/a", GOOGLEBOT).await;
            nginx.get_from(google, "/private/x", GOOGLEBOT).await;
            nginx.get_from(forger, "/b", GOOGLEBOT).await;
            nginx.get_from(forger, "/private/y", GOOGLEBOT).await;
            nginx.get_from(forger, "/c", BINGBOT).await;
            report(&app)
        },
        |r| violations_of(r, "Googlebot").is_some_and(|v| v["verified"] != 0 && v["forged"] != 0),
    )
    .await;
    let violations = violations_of(&seen, "Googlebot").expect("Googlebot's violations");
    assert!(violations["verified"].as_i64().unwrap() >= 1, "{seen:#}");
    assert!(violations["forged"].as_i64().unwrap() >= 1, "{seen:#}");
    assert_eq!(googlebot(&seen)["coverage"]["fetched"], 1, "{seen:#}");
    assert_eq!(googlebot(&seen)["coverage"]["listed"], 3, "{seen:#}");
    let outside = seen["sites"][0]["outside_sitemaps"].as_array().unwrap();
    assert!(
        !outside.iter().any(|p| p["path"] == "/b"),
        "a forged fetch of a listed URL is no fetch outside the sitemaps either: {seen:#}"
    );
    let bing = &seen["sites"][0]["groups"][0]["crawl_log"]["bingbot"];
    assert_eq!(bing["coverage"]["fetched"], 0, "{seen:#}");
}

#[tokio::test]
async fn forged_googlebot_is_never_googlebot_coverage_sqlite() {
    forged_googlebot_is_never_googlebot_coverage(Backend::Sqlite).await;
}

#[tokio::test]
async fn forged_googlebot_is_never_googlebot_coverage_postgres() {
    forged_googlebot_is_never_googlebot_coverage(Backend::Postgres).await;
}
