//! `sitemapd check --public` with a real nginx in front of a real `sitemapd serve`: a static
//! robots.txt that shadows sitemapd's, one that puts a group in front of it (as Cloudflare's
//! managed robots.txt does), a redirect, and sitemapd's own file passed through unchanged.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::helpers::*;

const POLICY: &str = "ai-training=disallow";

/// What a CDN's managed robots.txt puts before the site's own file.
const MANAGED: &str =
    "# As a condition of accessing this website, you agree to abide by the following\n\
# content signals.\nUser-agent: *\nContent-Signal: search=yes,ai-train=no\nAllow: /\n\n\
User-agent: Amazonbot\nDisallow: /\n\nUser-agent: Bytespider\nDisallow: /\n\n";

/// A forgotten robots.txt in the web root.
const STATIC: &str = "User-agent: *\nDisallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\n";

/// nginx in the foreground on `port`, with `location` as its robots.txt rule and everything else
/// passed to sitemapd at `upstream`; stopped when dropped.
struct Front {
    child: Child,
    _prefix: tempfile::TempDir,
}

impl Front {
    fn start(port: u16, upstream: &str, robots_location: &str) -> Front {
        let binary = server_binary("nginx", "nginx-light");
        let prefix = tempfile::tempdir().unwrap();
        let p = prefix.path().display().to_string();
        for dir in ["conf", "logs", "tmp"] {
            std::fs::create_dir_all(prefix.path().join(dir)).unwrap();
        }
        let conf = format!(
            "worker_processes 1;\npid {p}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {p}/tmp/body;\n\
             proxy_temp_path {p}/tmp/proxy;\n  fastcgi_temp_path {p}/tmp/fastcgi;\n\
             uwsgi_temp_path {p}/tmp/uwsgi;\n  scgi_temp_path {p}/tmp/scgi;\n\
             server {{\n    listen 127.0.0.1:{port};\n    {robots_location}\n\
             location / {{ proxy_pass http://{upstream}; proxy_set_header Host $http_host; }}\n  }}\n}}\n"
        );
        std::fs::write(prefix.path().join("conf/nginx.conf"), conf).unwrap();
        let child = Command::new(binary)
            .args(["-p", &format!("{p}/"), "-e", &format!("{p}/logs/error.log")])
            .args(["-c", &format!("{p}/conf/nginx.conf"), "-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run nginx");
        Front {
            child,
            _prefix: prefix,
        }
    }

    /// Waits until nginx answers on `port`.
    async fn answering(self, port: u16) -> Front {
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/healthz");
        let up = eventually(
            "nginx to answer",
            || async { client.get(&url).send().await.is_ok() },
            |up| *up,
        )
        .await;
        assert!(up, "nginx did not come up");
        self
    }
}

impl Drop for Front {
    /// SIGTERM, then waits: nginx's master stops its workers before it exits, so the port is
    /// free for the next front (a killed master leaves its workers answering).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// A directory holding `robots.txt` with `text`, for nginx to serve as a static file.
fn static_root(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("robots.txt"), text).unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}

fn static_location(root: &Path) -> String {
    format!(
        "location = /robots.txt {{ root {}; default_type text/plain; }}",
        root.display()
    )
}

fn check_public(db: &TestDb, base: &str) -> (Option<i32>, String) {
    check_public_with(db, base, POLICY)
}

/// `check --public` of a site whose policy is `policy`.
fn check_public_with(db: &TestDb, base: &str, policy: &str) -> (Option<i32>, String) {
    let out = Sitemapd::new(["check", "--public"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", base)
        .env("ROBOTS_POLICY", policy)
        .output();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_public_names_what_the_front_changes_and_passes_sitemapds_own_file() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let sitemapd = Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", &base)
        .env("ROBOTS_POLICY", POLICY)
        .serve()
        .await;
    let response = reqwest::get(sitemapd.url("/robots.txt")).await.unwrap();
    let etag = header(&response, "etag").to_string();
    let served = response.text().await.unwrap();
    assert!(served.contains("GPTBot"), "{served}");

    // (a) A static robots.txt in the web root shadows sitemapd's.
    let (_a, root) = static_root(STATIC);
    let front = Front::start(port, &sitemapd.addr, &static_location(&root))
        .answering(port)
        .await;
    let (code, said) = check_public(&db, &base);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("DIFFERS") && said.contains("other-file"),
        "{said}"
    );
    assert!(said.contains("another file altogether"), "{said}");
    drop(front);

    // (b) A group put in front of sitemapd's file, as a CDN's managed robots.txt does.
    let (_b, root) = static_root(&format!("{MANAGED}{served}"));
    let front = Front::start(port, &sitemapd.addr, &static_location(&root))
        .answering(port)
        .await;
    let (code, said) = check_public(&db, &base);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("added-before"), "{said}");
    assert!(said.contains("group for amazonbot"), "{said}");
    assert!(!said.contains("other-file"), "{said}");
    assert!(!said.contains("missing"), "{said}");
    drop(front);

    // A redirect to another host.
    let front = Front::start(
        port,
        &sitemapd.addr,
        "location = /robots.txt { return 301 https://www.example.com/robots.txt; }",
    )
    .answering(port)
    .await;
    let (code, said) = check_public(&db, &base);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("redirect") && said.contains("https://www.example.com/robots.txt"),
        "{said}"
    );
    drop(front);

    // A cache in front that kept the file sitemapd served before the policy changed, with the
    // ETag sitemapd gave it.
    let (_d, root) = static_root(&served);
    let kept = format!(
        "location = /robots.txt {{ root {}; default_type text/plain; etag off; \
         add_header ETag '{etag}'; add_header Age 3600; }}",
        root.display()
    );
    let front = Front::start(port, &sitemapd.addr, &kept)
        .answering(port)
        .await;
    let (code, said) = check_public_with(&db, &base, "ai-training=disallow,ai-search=disallow");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("old-copy") && said.contains(&etag), "{said}");
    assert!(!said.contains("other-file"), "{said}");
    drop(front);

    // (c) sitemapd's own robots.txt, passed through unchanged.
    let front = Front::start(port, &sitemapd.addr, "").answering(port).await;
    let (code, said) = check_public(&db, &base);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("the file sitemapd serves"), "{said}");
    drop(front);
}

/// Serves `body` as `/robots.txt` on loopback; returns the origin.
async fn robots_server(body: &'static str) -> String {
    use axum::routing::get;
    let router = axum::Router::new().route("/robots.txt", get(move || async move { body }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    origin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_the_public_comparison_only_when_enabled() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let front = robots_server(STATIC).await;
    let app = spawn_app_listening(
        &db.url,
        &[("SITEMAP_BASE_URL", &front), ("ROBOTS_PUBLIC_CHECK", "on")],
    )
    .await;
    let admin = status_page(&app).await;
    let client = reqwest::Client::new();
    let status: serde_json::Value = eventually(
        "the first public robots.txt check",
        || async {
            let got = client.get(format!("{admin}/status.json")).send().await;
            match got {
                Ok(response) => response.json().await.unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            }
        },
        |status: &serde_json::Value| !status["sites"][0]["public_robots"].is_null(),
    )
    .await;
    let public = &status["sites"][0]["public_robots"];
    assert_eq!(public["url"], format!("{front}/robots.txt"), "{public}");
    assert_eq!(public["differences"][0]["kind"], "other-file", "{public}");
    let page = reqwest::get(admin.clone())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("another file altogether"), "{page}");

    // Off by default: nothing fetched, nothing shown.
    let app = spawn_app_listening(&db.url, &[("SITEMAP_BASE_URL", &front)]).await;
    let admin = status_page(&app).await;
    let status: serde_json::Value = reqwest::get(format!("{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        status["sites"][0].get("public_robots").is_none(),
        "{status}"
    );
}
