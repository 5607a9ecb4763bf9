//! Crawler verification as the request side sees it: the client address (the peer, or what a
//! trusted proxy says in `Forwarded`, `X-Forwarded-For` or `X-Real-IP`), requests sent from
//! several loopback addresses (127.0.0.2, 127.0.0.3, …: Linux routes all of 127/8 to lo) and
//! through a real nginx, and the verdicts the ledger counts in `/status.json` and the metrics.
//!
//! Googlebot is overridden by a `CRAWLERS_FILE` whose only method is a published range list
//! served by a local HTTP server, so an address in the list is verified and any other forged.

use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::helpers::{
    eventually, server_binary, spawn_app, status_page, TestApp, TestDb, GOOGLEBOT,
};

/// A crawler whose operator publishes no way to verify it (ClaudeBot was one until Anthropic
/// published its range list).
const BYTESPIDER: &str = "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)";

/// A client whose connections come from `source` (a loopback address).
fn client_from(source: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .no_gzip()
        .local_address(source.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// `path` of `app` fetched as `agent` from `source`, with `headers` besides; its status.
async fn fetch(base: &str, source: &str, agent: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
    let mut request = client_from(source)
        .get(format!("{base}{path}"))
        .header("user-agent", agent);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("GET").status().as_u16()
}

fn base(app: &TestApp) -> String {
    format!("http://{}", app.addr)
}

async fn status_json(admin: &str) -> Value {
    reqwest::get(format!("{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `name`'s (verified, unverified, forged) counts in status.json; zeros before it came.
fn verdicts(status: &Value, name: &str) -> (u64, u64, u64) {
    let Some(crawler) = status["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["crawler"] == name)
    else {
        return (0, 0, 0);
    };
    let count = |key: &str| {
        crawler[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {crawler}"))
    };
    (count("verified"), count("unverified"), count("forged"))
}

fn crawler<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["crawler"] == name)
        .unwrap_or_else(|| panic!("{name} came: {status}"))
}

/// Polls status.json until `name`'s counts are `expected`; returns them as last seen.
async fn verdicts_become(admin: &str, name: &str, expected: (u64, u64, u64)) -> (u64, u64, u64) {
    eventually(
        &format!("{name}'s verdicts to be {expected:?}"),
        || async { verdicts(&status_json(admin).await, name) },
        |seen| *seen == expected,
    )
    .await
}

/// How many of `name`'s requests are counted, under any verdict, once they are `expected`.
async fn requests_counted(admin: &str, awaited: &str, name: &str, expected: u64) -> u64 {
    eventually(
        awaited,
        || async {
            let (v, u, f) = verdicts(&status_json(admin).await, name);
            v + u + f
        },
        |n| *n == expected,
    )
    .await
}

/// A local HTTP server publishing `prefixes` in Google's range list format at `/googlebot.json`.
async fn range_server(prefixes: &[&str]) -> SocketAddr {
    let list = serde_json::json!({
        "creationTime": "2026-11-01T00:00:00.000000",
        "prefixes": prefixes
            .iter()
            .map(|p| if p.contains(':') {
                serde_json::json!({ "ipv6Prefix": p })
            } else {
                serde_json::json!({ "ipv4Prefix": p })
            })
            .collect::<Vec<_>>(),
    });
    let body = list.to_string();
    let app = axum::Router::new().route(
        "/googlebot.json",
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// A registry file that makes Googlebot verifiable by the local range list only.
fn googlebot_by_local_ranges(ranges: SocketAddr) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        format!(
            "[[crawler]]\nname = \"Googlebot\"\ntokens = [\"Googlebot\"]\nuser_agent = [\"Googlebot\"]\n\
             operator = \"Google\"\npurpose = \"search\"\nverify_dns = []\n\
             verify_ranges = [\"http://{ranges}/googlebot.json\"]\n\
             docs = [\"https://developers.google.com/search/docs/crawling-indexing/verifying-googlebot\"]\n"
        ),
    )
    .unwrap();
    file
}

/// Whether a test waits for the verifier to have fetched the range list (only the engine does).
#[derive(PartialEq)]
enum Ranges {
    Fetched,
    AnyState,
}

/// A site with two files, Googlebot verifiable by `prefixes`, and `vars` besides; its status
/// page, once the range list is fetched when `ranges_state` asks for it.
async fn site_with_ranges(
    prefixes: &[&str],
    vars: &[(&str, &str)],
    ranges_state: Ranges,
) -> (TestDb, TestApp, tempfile::NamedTempFile, String) {
    let ranges = range_server(prefixes).await;
    let registry = googlebot_by_local_ranges(ranges);
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let mut all = vec![
        ("CRAWLERS_FILE", registry.path().to_str().unwrap()),
        ("SITEMAP_PAGE_SIZE", "1"),
    ];
    all.extend_from_slice(vars);
    let app = spawn_app(&db.url, &all).await;
    let admin = status_page(&app).await;
    if ranges_state == Ranges::AnyState {
        return (db, app, registry, admin);
    }
    let url = format!("http://{ranges}/googlebot.json");
    let lists = eventually(
        "the local range list to be fetched",
        || async { status_json(&admin).await["verification"]["range_lists"].clone() },
        |lists| {
            lists.as_array().is_some_and(|l| {
                l.iter()
                    .any(|r| r["url"] == url && r["prefixes"] == prefixes.len())
            })
        },
    )
    .await;
    assert!(
        lists.as_array().unwrap().iter().any(|r| r["url"] == url),
        "{lists}"
    );
    (db, app, registry, admin)
}

#[tokio::test]
async fn with_verification_off_every_request_is_unverified_and_files_behind_count_claims() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let app = spawn_app(
        &db.url,
        &[("CRAWLER_VERIFY", "off"), ("SITEMAP_PAGE_SIZE", "1")],
    )
    .await;
    let admin = status_page(&app).await;
    let base = base(&app);
    assert_eq!(
        fetch(&base, "127.0.0.2", GOOGLEBOT, "/sitemap_index.xml", &[]).await,
        200
    );
    assert_eq!(
        fetch(&base, "127.0.0.3", GOOGLEBOT, "/sitemap-1.xml.gz", &[]).await,
        200
    );
    // Recorded at once: with verification off, nothing is looked up.
    let status = status_json(&admin).await;
    assert_eq!(verdicts(&status, "Googlebot"), (0, 2, 0));
    assert_eq!(
        crawler(&status, "Googlebot")["files_fetched"],
        2,
        "claimed fetches count"
    );
    assert_eq!(status["verification"]["on"], false);
    let page = reqwest::get(&admin).await.unwrap().text().await.unwrap();
    assert!(
        page.contains("Verification is <strong>off</strong>"),
        "{page}"
    );
    let line =
        r#"sitemapd_crawler_requests_total{crawler="Googlebot",status="200",verified="false"}"#;
    assert_eq!(app.metric(line).await, 2.0);

    // File 1 changes after Googlebot's (unverified) fetch: it is behind on it, and on the index.
    db.exec("UPDATE sitemap_entries SET loc = '/a2' WHERE id = 1")
        .await;
    app.sweep().await;
    let behind = r#"sitemapd_crawler_files_behind{crawler="Googlebot"}"#;
    assert_eq!(app.metric(behind).await, 2.0);
}

#[tokio::test]
async fn other_and_crawlers_without_a_method_are_recorded_at_once_as_unverified() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let app = spawn_app(&db.url, &[("CRAWLER_VERIFY", "on")]).await;
    let admin = status_page(&app).await;
    let base = base(&app);
    assert_eq!(
        fetch(&base, "127.0.0.2", BYTESPIDER, "/sitemap.xml", &[]).await,
        200
    );
    assert_eq!(
        fetch(&base, "127.0.0.3", "curl/8.5.0", "/robots.txt", &[]).await,
        200
    );
    let status = status_json(&admin).await;
    assert_eq!(verdicts(&status, "Bytespider"), (0, 1, 0));
    assert_eq!(verdicts(&status, "other"), (0, 1, 0));
    assert_eq!(status["verification"]["on"], true);
    assert_eq!(
        crawler(&status, "Bytespider")["files_fetched"],
        1,
        "a crawler no method can verify counts its claimed fetches"
    );
    assert_eq!(crawler(&status, "Bytespider")["verifiable"], false);
    let line = r#"sitemapd_crawler_requests_total{crawler="other",status="200",verified="false"}"#;
    assert_eq!(app.metric(line).await, 1.0);
}

#[tokio::test]
async fn a_verifiable_claim_is_counted_once_its_check_ends() {
    let (_db, app, _registry, admin) =
        site_with_ranges(&["127.0.0.2/32"], &[], Ranges::AnyState).await;
    let base = base(&app);
    assert_eq!(
        fetch(&base, "127.0.0.2", GOOGLEBOT, "/sitemap_index.xml", &[]).await,
        200
    );
    // Whatever the verdict (the engine's), the request is counted under exactly one.
    let counted =
        requests_counted(&admin, "Googlebot's request to be counted", "Googlebot", 1).await;
    assert_eq!(counted, 1);
}

#[tokio::test]
async fn the_verdict_follows_the_client_address() {
    let (_db, app, _registry, admin) =
        site_with_ranges(&["127.0.0.2/32"], &[], Ranges::Fetched).await;
    let base = base(&app);
    assert_eq!(
        fetch(&base, "127.0.0.2", GOOGLEBOT, "/sitemap_index.xml", &[]).await,
        200
    );
    assert_eq!(
        fetch(&base, "127.0.0.2", GOOGLEBOT, "/sitemap-1.xml.gz", &[]).await,
        200
    );
    assert_eq!(
        fetch(&base, "127.0.0.3", GOOGLEBOT, "/sitemap-2.xml.gz", &[]).await,
        200
    );
    assert_eq!(
        verdicts_become(&admin, "Googlebot", (2, 0, 1)).await,
        (2, 0, 1)
    );
    let status = status_json(&admin).await;
    assert_eq!(
        crawler(&status, "Googlebot")["files_fetched"],
        2,
        "the forged fetch of file 2 is not Googlebot's"
    );
    let findings = status["verification"]["findings"].to_string();
    assert!(
        findings.contains("forged") && findings.contains("Googlebot"),
        "{findings}"
    );
    for (verified, count) in [("true", 2.0), ("forged", 1.0)] {
        let line = format!(
            r#"sitemapd_crawler_requests_total{{crawler="Googlebot",status="200",verified="{verified}"}}"#
        );
        assert_eq!(app.metric(&line).await, count, "{line}");
    }
    let page = reqwest::get(&admin).await.unwrap().text().await.unwrap();
    assert!(
        page.contains("verification-findings"),
        "forged Googlebot is a finding"
    );
}

#[tokio::test]
async fn a_trusted_proxys_headers_give_the_client_address_and_an_untrusted_peers_do_not() {
    // 127.0.0.2 is a trusted proxy; Googlebot's published range is 127.0.0.4.
    let (_db, app, _registry, admin) = site_with_ranges(
        &["127.0.0.4/32"],
        &[("TRUSTED_PROXIES", "127.0.0.2")],
        Ranges::Fetched,
    )
    .await;
    let base = base(&app);
    let index = "/sitemap_index.xml";
    // Verified: the trusted proxy passes the client 127.0.0.4, in each header it may use.
    for header in [
        ("x-forwarded-for", "127.0.0.4"),
        ("x-forwarded-for", "203.0.113.9, 127.0.0.4, 127.0.0.2"),
        ("forwarded", "for=\"127.0.0.4:51234\";proto=https"),
        ("x-real-ip", "127.0.0.4"),
    ] {
        assert_eq!(
            fetch(&base, "127.0.0.2", GOOGLEBOT, index, &[header]).await,
            200
        );
    }
    // Forged: the same headers from an untrusted peer change nothing; the trusted proxy with no
    // header is the client itself; a client the proxy names outside the range.
    for (source, headers) in [
        ("127.0.0.3", &[("x-forwarded-for", "127.0.0.4")][..]),
        ("127.0.0.3", &[("forwarded", "for=127.0.0.4")][..]),
        ("127.0.0.3", &[("x-real-ip", "127.0.0.4")][..]),
        ("127.0.0.2", &[][..]),
        (
            "127.0.0.2",
            &[("x-forwarded-for", "127.0.0.4, 127.0.0.3")][..],
        ),
    ] {
        assert_eq!(fetch(&base, source, GOOGLEBOT, index, headers).await, 200);
    }
    assert_eq!(
        verdicts_become(&admin, "Googlebot", (4, 0, 5)).await,
        (4, 0, 5)
    );
}

/// A real nginx in front of the service, as the deployment guide sets it up: it passes the
/// client in `X-Forwarded-For` and connects to the service from `bind` (a trusted proxy).
struct Nginx {
    child: Child,
    _prefix: tempfile::TempDir,
    port: u16,
}

impl Nginx {
    fn start(upstream: SocketAddr, bind: &str) -> Self {
        let binary = server_binary("nginx", "nginx-light");
        let prefix = tempfile::tempdir().unwrap();
        for dir in ["conf", "logs", "tmp"] {
            std::fs::create_dir_all(prefix.path().join(dir)).unwrap();
        }
        let port = crate::helpers::free_port();
        let p = prefix.path().display();
        let conf = format!(
            "worker_processes 1;\npid {p}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
             http {{\n  access_log off;\n\
             client_body_temp_path {p}/tmp/body;\n  proxy_temp_path {p}/tmp/proxy;\n\
             fastcgi_temp_path {p}/tmp/fastcgi;\n  uwsgi_temp_path {p}/tmp/uwsgi;\n\
             scgi_temp_path {p}/tmp/scgi;\n\
             server {{\n    listen 127.0.0.1:{port};\n\
             location / {{\n      proxy_pass http://{upstream};\n      proxy_http_version 1.1;\n\
             proxy_set_header Host $host;\n\
             proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
             proxy_bind {bind};\n    }}\n  }}\n}}\n"
        );
        std::fs::write(prefix.path().join("conf/nginx.conf"), conf).unwrap();
        let root = prefix.path().display().to_string();
        let child = Command::new(&binary)
            .args([
                "-p".to_string(),
                format!("{root}/"),
                "-e".into(),
                format!("{root}/logs/error.log"),
                "-c".into(),
                format!("{root}/conf/nginx.conf"),
                "-g".into(),
                "daemon off;".into(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run nginx");
        Self {
            child,
            _prefix: prefix,
            port,
        }
    }

    /// `path` through nginx as `agent` from `source`, with `headers` besides; its status.
    async fn get(&self, source: &str, agent: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
        let client = client_from(source);
        // nginx may still be starting: retry a refused connection.
        let response = eventually(
            "nginx to answer",
            || {
                let mut request = client
                    .get(format!("http://127.0.0.1:{}{path}", self.port))
                    .header("host", "www.example.com")
                    .header("user-agent", agent);
                for (name, value) in headers {
                    request = request.header(*name, *value);
                }
                request.send()
            },
            |r| r.is_ok(),
        )
        .await
        .expect("nginx answers");
        response.status().as_u16()
    }
}

impl Drop for Nginx {
    /// A graceful stop (SIGQUIT): the master waits for its worker, so none is left behind
    /// (SIGKILL left the worker running). A master that does not stop in time is killed.
    fn drop(&mut self) {
        let quit = Command::new("kill")
            .args(["-QUIT", &self.child.id().to_string()])
            .status();
        if quit.is_ok_and(|s| s.success()) {
            crate::crawl_log::stop_within(&mut self.child, std::time::Duration::from_secs(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn requests_through_nginx_are_counted() {
    let (_db, app, _registry, admin) = site_with_ranges(
        &["127.0.0.4/32"],
        &[("TRUSTED_PROXIES", "127.0.0.2")],
        Ranges::AnyState,
    )
    .await;
    let nginx = Nginx::start(app.addr, "127.0.0.2");
    assert_eq!(
        nginx
            .get("127.0.0.4", GOOGLEBOT, "/sitemap_index.xml", &[])
            .await,
        200
    );
    let counted = requests_counted(
        &admin,
        "Googlebot's request through nginx to be counted",
        "Googlebot",
        1,
    )
    .await;
    assert_eq!(counted, 1);
}

#[tokio::test]
async fn through_nginx_the_client_address_decides_and_a_forged_header_does_not() {
    let (_db, app, _registry, admin) = site_with_ranges(
        &["127.0.0.4/32"],
        &[("TRUSTED_PROXIES", "127.0.0.2")],
        Ranges::Fetched,
    )
    .await;
    let nginx = Nginx::start(app.addr, "127.0.0.2");
    let index = "/sitemap_index.xml";
    // From Googlebot's range: verified, through the proxy's X-Forwarded-For.
    assert_eq!(nginx.get("127.0.0.4", GOOGLEBOT, index, &[]).await, 200);
    // From elsewhere: forged, also when the client sends an X-Forwarded-For naming the range
    // (nginx appends the real peer, the rightmost address that is not a trusted proxy).
    assert_eq!(nginx.get("127.0.0.3", GOOGLEBOT, index, &[]).await, 200);
    let forged_header = [("x-forwarded-for", "127.0.0.4")];
    assert_eq!(
        nginx
            .get("127.0.0.3", GOOGLEBOT, index, &forged_header)
            .await,
        200
    );
    assert_eq!(
        verdicts_become(&admin, "Googlebot", (1, 0, 2)).await,
        (1, 0, 2)
    );
}
