//! A cache in front kept exactly current (`CACHE_PURGE`): a real Varnish with the shipped VCL
//! (deploy/varnish/sitemapd.vcl: PURGE from loopback, a one-day TTL) in front of the real
//! server, and a small real HTTP receiver for the JSON POST form. Also the shared-cache headers
//! every file carries, on 200 and 304 alike.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::helpers::*;

/// The site's Host, as crawlers reach it through the cache.
const HOST: &str = "www.example.com";

/// A database of 3 files (ids 10, 20, …, 300, ten per file) whose state a first service stored,
/// so the service under test opens on it and has nothing to purge until the rows change.
async fn stored_three_pages() -> TestDb {
    let db = TestDb::new().await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30)
        .map(|i| (i * 10, format!("/p/{}", i * 10)))
        .collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    drop(spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await);
    db
}

/// The service under test over `db`, telling `endpoint` of its changes.
async fn purging_app(db: &TestDb, listener: tokio::net::TcpListener, endpoint: &str) -> TestApp {
    let vars = [
        ("SITEMAP_PAGE_SIZE", "10"),
        ("SITEMAP_REFRESH_SECS", "1"),
        ("CACHE_PURGE", endpoint),
    ];
    spawn_app_on(listener, &db.url, &vars).await
}

async fn set_loc(db: &TestDb, id: i64, loc: &str) {
    db.exec(&format!(
        "UPDATE sitemap_entries SET loc = '{loc}' WHERE id = {id}"
    ))
    .await;
}

/// varnishd with the shipped VCL, its backend the service's port; stopped when dropped.
struct Varnish {
    child: Child,
    port: u16,
    client: reqwest::Client,
    dir: tempfile::TempDir,
}

impl Drop for Varnish {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Varnish {
    async fn start(port: u16, backend_port: u16) -> Self {
        let varnishd = server_binary("varnishd", "varnish");
        let dir = tempfile::tempdir().unwrap();
        let shipped = include_str!("../../deploy/varnish/sitemapd.vcl");
        let vcl = shipped.replace("\"8080\"", &format!("\"{backend_port}\""));
        assert_ne!(vcl, shipped, "the shipped VCL names its backend port 8080");
        let vcl_path = dir.path().join("sitemapd.vcl");
        std::fs::write(&vcl_path, vcl).unwrap();
        let child = Command::new(varnishd)
            .args(["-F", "-j", "none", "-s", "malloc,32m"])
            .arg("-n")
            .arg(dir.path().join("work"))
            .arg("-a")
            .arg(format!("127.0.0.1:{port}"))
            .arg("-f")
            .arg(&vcl_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start varnishd");
        let varnish = Self {
            child,
            port,
            client: reqwest::Client::builder().no_gzip().build().unwrap(),
            dir,
        };
        let up = eventually(
            "varnishd to answer",
            || async { varnish.try_get("/healthz").await.is_some() },
            |up| *up,
        )
        .await;
        assert!(up, "varnishd did not start");
        varnish
    }

    async fn try_get(&self, path: &str) -> Option<reqwest::Response> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        self.client.get(url).header("host", HOST).send().await.ok()
    }

    /// `path` through the cache: whether it was a hit, and its body (gunzipped for `.gz`).
    async fn get(&self, path: &str) -> (bool, String) {
        let resp = self.try_get(path).await.expect("GET through varnish");
        assert_eq!(resp.status(), 200, "{path} through varnish");
        let hit = header(&resp, "x-cache") == "HIT";
        let body = resp.bytes().await.unwrap();
        let body = match path.ends_with(".gz") {
            true => gunzip(&body),
            false => body.to_vec(),
        };
        (hit, String::from_utf8(body).unwrap())
    }

    /// Purge operations Varnish executed (`MAIN.n_purges`).
    fn purges(&self) -> u64 {
        let out = Command::new("varnishstat")
            .args(["-1", "-f", "MAIN.n_purges", "-n"])
            .arg(self.dir.path().join("work"))
            .output()
            .expect("varnishstat");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

const FILES: [&str; 5] = [
    "/sitemap-1.xml.gz",
    "/sitemap-2.xml.gz",
    "/sitemap-3.xml.gz",
    "/sitemap_index.xml",
    "/robots.txt",
];

#[tokio::test]
async fn varnish_in_front_gets_exactly_the_changed_files_purged() {
    let db = stored_three_pages().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let varnish = Varnish::start(free_port(), listener.local_addr().unwrap().port()).await;
    let endpoint = format!("http://127.0.0.1:{}", varnish.port);
    let app = purging_app(&db, listener, &endpoint).await;
    for path in FILES {
        varnish.get(path).await;
        let (hit, _) = varnish.get(path).await;
        assert!(hit, "{path} is cached after one fetch");
    }
    let purges_before = varnish.purges();

    set_loc(&db, 250, "/p/250-new").await;
    let (_, third) = eventually(
        "the new file 3 through varnish",
        || varnish.get("/sitemap-3.xml.gz"),
        |(_, body)| body.contains("/p/250-new"),
    )
    .await;
    assert!(third.contains("/p/250-new"), "the purge reached varnish");
    for path in ["/sitemap-1.xml.gz", "/sitemap-2.xml.gz", "/robots.txt"] {
        let (hit, _) = varnish.get(path).await;
        assert!(hit, "{path}, unchanged, stays cached");
    }
    let direct = app.get("/sitemap_index.xml").await.text().await.unwrap();
    let (_, index) = eventually(
        "the new index through varnish",
        || varnish.get("/sitemap_index.xml"),
        |(_, body)| *body == direct,
    )
    .await;
    assert_eq!(index, direct, "the index (file 3's lastmod) was purged too");
    assert!(varnish.purges() > purges_before);
    let purged = eventually(
        "the purges counted",
        || app.metric("sitemapd_cache_purges_total{outcome=\"purged\"}"),
        |n| *n >= 5.0,
    )
    .await;
    assert!(
        purged >= 5.0,
        "file 3 in 3 forms, the index, sitemap.xml: {purged}"
    );

    // An update that leaves the bytes as they were purges nothing: after it, a real change
    // to file 1 (purges are sent in order) and file 2 is still a hit.
    db.exec("UPDATE sitemap_entries SET loc = loc WHERE id = 150")
        .await;
    set_loc(&db, 50, "/p/50-new").await;
    eventually(
        "the new file 1 through varnish",
        || varnish.get("/sitemap-1.xml.gz"),
        |(_, body)| body.contains("/p/50-new"),
    )
    .await;
    let (hit, _) = varnish.get("/sitemap-2.xml.gz").await;
    assert!(hit, "file 2, updated to the same bytes, stays cached");
    assert_eq!(
        app.metric("sitemapd_cache_purges_total{outcome=\"failed\"}")
            .await,
        0.0
    );
}

/// A small real HTTP receiver: every JSON body POSTed to it, in order.
async fn receiver() -> (String, Arc<Mutex<Vec<Vec<String>>>>) {
    use axum::routing::post;
    let received: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let store = received.clone();
    let router = axum::Router::new().route(
        "/purge",
        post(move |axum::Json(urls): axum::Json<Vec<String>>| {
            let store = store.clone();
            async move {
                store.lock().unwrap().push(urls);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("post+http://{}/purge", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, received)
}

#[tokio::test]
async fn a_relay_gets_one_json_post_of_the_changed_urls_per_save() {
    let db = stored_three_pages().await;
    let (endpoint, received) = receiver().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = purging_app(&db, listener, &endpoint).await;
    let posts = || {
        let received = received.clone();
        async move { received.lock().unwrap().clone() }
    };
    assert!(
        posts().await.is_empty(),
        "nothing changed since the stored state"
    );

    set_loc(&db, 250, "/p/250-new").await;
    let got = eventually("one POST", posts, |p| p.len() == 1).await;
    let urls = &got[0];
    for file in [
        "sitemap-3.xml.gz",
        "sitemap-3.xml",
        "sitemap-3.txt",
        "sitemap_index.xml",
    ] {
        assert!(
            urls.contains(&format!("{BASE}{file}")),
            "{file} in {urls:?}"
        );
    }
    for file in ["sitemap-1.xml.gz", "sitemap-2.xml.gz", "robots.txt"] {
        assert!(
            !urls.contains(&format!("{BASE}{file}")),
            "{file} in {urls:?}"
        );
    }

    db.exec("UPDATE sitemap_entries SET loc = loc WHERE id = 150")
        .await;
    set_loc(&db, 50, "/p/50-new").await;
    let got = eventually("a second POST", posts, |p| p.len() >= 2).await;
    assert_eq!(
        got.len(),
        2,
        "the update to the same bytes sent nothing: {got:?}"
    );
    assert!(got[1].contains(&format!("{BASE}sitemap-1.xml.gz")));
    assert!(!got[1].contains(&format!("{BASE}sitemap-2.xml.gz")));
    assert!(
        app.metric("sitemapd_cache_purges_total{outcome=\"purged\"}")
            .await
            > 0.0
    );
}

#[tokio::test]
async fn a_stopping_service_sends_the_purges_of_its_last_save_first() {
    let db = stored_three_pages().await;
    let (endpoint, received) = receiver().await;
    // With replicas (PostgreSQL, REPLICA_LEASE on by default) a purge waits 3 s after its
    // save: SIGTERM comes within that.
    let serving = Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_PAGE_SIZE", "10")
        .env("CACHE_PURGE", &endpoint)
        .serve()
        .await;
    let client = reqwest::Client::new();
    let file = serving.url("/sitemap-3.xml.gz");
    let etag = || async {
        let head = client.head(&file).send().await.unwrap();
        header(&head, "etag").to_string()
    };
    let before = etag().await;
    set_loc(&db, 250, "/p/250-new").await;
    // The ETag comes from the installed snapshot only: once it moved, the save is done.
    let after = eventually("the saved change", etag, |now| *now != before).await;
    assert_ne!(after, before);
    serving.terminate();
    let out = serving.wait_with_output().await;
    assert!(out.status.success(), "{out:?}");
    let posts = received.lock().unwrap().clone();
    assert_eq!(
        posts.len(),
        1,
        "the purge was sent before the process ended: {posts:?}"
    );
    assert!(posts[0].contains(&format!("{BASE}sitemap-3.xml.gz")));
}

#[tokio::test]
async fn every_file_names_its_site_group_and_file_for_shared_caches_also_on_304() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    // Nothing listens there: the purges of the first sweep are retried in the background.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let app = spawn_app(&db.url, &[("CACHE_PURGE", nowhere.as_str())]).await;
    let page = app.get("/sitemap-1.xml.gz").await;
    let etag = header(&page, "etag").to_string();
    let keys = header(&page, "surrogate-key").to_string();
    assert_eq!(
        keys,
        "www.example.com www.example.com#default www.example.com/sitemap-1.xml.gz"
    );
    assert_eq!(header(&page, "cache-tag"), keys.replace(' ', ","));
    let control = header(&page, "cache-control").to_string();
    assert!(
        control.starts_with("public, max-age=300, s-maxage=86400"),
        "{control}"
    );
    assert!(control.contains("stale-if-error="), "{control}");
    let again = app
        .get_with("/sitemap-1.xml.gz", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status(), 304);
    assert_eq!(header(&again, "cache-control"), control);
    assert_eq!(header(&again, "surrogate-key"), keys);
    let index = header(&app.get("/sitemap_index.xml").await, "cache-control").to_string();
    assert!(index.contains("s-maxage=3600"), "{index}");
}

#[tokio::test]
async fn without_purges_no_long_shared_ttl_is_sent() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let app = spawn_app(&db.url, &[]).await;
    let control = header(&app.get("/sitemap-1.xml.gz").await, "cache-control").to_string();
    assert!(!control.contains("s-maxage"), "{control}");
    assert!(control.starts_with("public, max-age=300, "), "{control}");
}

#[test]
fn a_bad_cache_purge_endpoint_stops_the_start() {
    refused(&[("CACHE_PURGE", "varnish:6081")], &["CACHE_PURGE"]);
}

#[tokio::test]
async fn a_change_in_one_group_purges_its_file_and_the_index_not_the_other_groups() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE posts (id int PRIMARY KEY, slug text);
         INSERT INTO posts VALUES (1, 'hello'), (2, 'news'), (3, 'bye');
         CREATE TABLE pages (id int PRIMARY KEY, slug text);
         INSERT INTO pages VALUES (1, 'about'), (2, 'contact'), (3, 'team');
         CREATE VIEW sitemap_posts AS SELECT id, '/blog/' || slug AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM posts;
         CREATE VIEW sitemap_pages AS SELECT id, '/' || slug AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM pages;",
    )
    .await;
    let groups = [
        ("SITEMAP_GROUPS", "posts=sitemap_posts,pages=sitemap_pages"),
        ("SITEMAP_PAGE_SIZE", "2"),
    ];
    drop(spawn_app(&db.url, &groups).await);
    let (endpoint, received) = receiver().await;
    let mut vars = groups.to_vec();
    vars.push(("CACHE_PURGE", endpoint.as_str()));
    let app = spawn_app(&db.url, &vars).await;

    let page = app.get("/sitemap-posts-2.xml.gz").await;
    assert_eq!(
        header(&page, "surrogate-key"),
        "www.example.com www.example.com#posts www.example.com/sitemap-posts-2.xml.gz"
    );
    let index = app.get("/sitemap_index.xml").await;
    assert_eq!(
        header(&index, "surrogate-key"),
        "www.example.com www.example.com#posts www.example.com#pages \
         www.example.com/sitemap_index.xml"
    );

    db.exec("UPDATE posts SET slug = 'bye-again' WHERE id = 3")
        .await;
    let posts = || {
        let received = received.clone();
        async move { received.lock().unwrap().clone() }
    };
    let got = eventually("the POST of the change", posts, |p| !p.is_empty()).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let mut urls = got[0].clone();
    urls.sort();
    let expected: Vec<String> = [
        "sitemap-posts-2.txt",
        "sitemap-posts-2.xml",
        "sitemap-posts-2.xml.gz",
        "sitemap.xml",
        "sitemap_index.xml",
    ]
    .iter()
    .map(|file| format!("{BASE}{file}"))
    .collect();
    assert_eq!(urls, expected);
}
