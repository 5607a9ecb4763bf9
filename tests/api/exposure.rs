//! What the public port shows and to whom: malformed Host headers are refused, HTTP/2 requests
//! are routed by their authority, and the operational endpoints live at the root only (a proxy
//! that forwards a mount path must not publish `/metrics`).

use std::io::{Read, Write};
use std::net::SocketAddr;

use crate::helpers::*;

/// The status line `addr` answers a raw `request` with (sent from a blocking thread).
async fn status_line(addr: SocketAddr, request: &'static str) -> String {
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        answer.lines().next().unwrap_or_default().to_string()
    })
    .await
    .unwrap()
}

async fn catalog_site() -> (TestDb, TestApp) {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/catalog/one"), (2, "/catalog/two")]).await;
    let app = spawn_app(
        &db.url,
        &[("SITEMAP_BASE_URL", "https://example.com/catalog/")],
    )
    .await;
    (db, app)
}

#[tokio::test]
async fn http_1_1_without_a_host_header_or_with_two_is_a_bad_request() {
    let (_db, app) = catalog_site().await;
    let none = status_line(
        app.addr,
        "GET /robots.txt HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(none.starts_with("HTTP/1.1 400"), "{none}");
    let two = status_line(
        app.addr,
        "GET /robots.txt HTTP/1.1\r\nHost: example.com\r\nHost: evil.example\r\n\
         Connection: close\r\n\r\n",
    )
    .await;
    assert!(two.starts_with("HTTP/1.1 400"), "{two}");
    let one = status_line(
        app.addr,
        "GET /robots.txt HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    // HTTP/1.0 never required Host.
    let old = status_line(app.addr, "GET /robots.txt HTTP/1.0\r\n\r\n").await;
    assert!(old.contains(" 200"), "{old}");
}

#[tokio::test]
async fn metrics_and_probes_answer_at_the_root_only_never_under_the_mount_path() {
    let (_db, app) = catalog_site().await;
    for path in ["/metrics", "/healthz", "/readyz"] {
        assert_eq!(app.get(path).await.status(), 200, "{path}");
        let mounted = format!("/catalog{path}");
        assert_eq!(app.get(&mounted).await.status(), 404, "{mounted}");
    }
    assert_eq!(app.get("/catalog/sitemap.xml").await.status(), 200);
}

#[tokio::test]
async fn a_cross_host_publication_path_does_not_expose_metrics() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/one")]).await;
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    std::fs::write(
        &sites,
        "[[site]]\nbase_url = \"https://www.example.com\"\n\
         sitemaps_url = \"https://sitemaps.example.net/www/\"\n",
    )
    .unwrap();
    let app = spawn_app(&db.url, &[("SITEMAP_SITES_FILE", sites.to_str().unwrap())]).await;
    let host = "sitemaps.example.net";
    assert_eq!(get_as(&app, host, "/www/sitemap.xml").await.status(), 200);
    for path in ["/www/metrics", "/www/healthz", "/www/readyz"] {
        assert_eq!(get_as(&app, host, path).await.status(), 404, "{path}");
    }
}

#[tokio::test]
async fn http_2_requests_are_routed_by_their_authority() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a-one")]).await;
    db.exec(
        "CREATE TABLE products (id int PRIMARY KEY, slug text);
         INSERT INTO products VALUES (1, 'chair');
         CREATE VIEW shop_sitemap AS SELECT id, '/shop/' || slug AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM products;",
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let port = addr.port();
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    std::fs::write(
        &sites,
        format!(
            "[[site]]\nbase_url = \"http://a.test:{port}\"\n\
             [[site]]\nbase_url = \"http://b.test:{port}/shop/\"\nsource = \"shop_sitemap\"\n"
        ),
    )
    .unwrap();
    let app = spawn_app_on(
        listener,
        &db.url,
        &[("SITEMAP_SITES_FILE", sites.to_str().unwrap())],
    )
    .await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .resolve("a.test", addr)
        .resolve("b.test", addr)
        .build()
        .unwrap();
    for (url, expected) in [
        (format!("http://a.test:{port}/sitemap.xml"), "http://a.test"),
        (
            format!("http://b.test:{port}/shop/sitemap.xml"),
            "http://b.test",
        ),
    ] {
        let resp = h2.get(&url).send().await.expect("h2 GET");
        assert_eq!(resp.version(), reqwest::Version::HTTP_2);
        assert_eq!(resp.status(), 200, "{url}");
        let body = resp.text().await.unwrap();
        let listed = locs(body.as_bytes());
        assert!(!listed.is_empty(), "{url}: {body}");
        assert!(listed.iter().all(|l| l.starts_with(expected)), "{listed:?}");
    }
    let robots = h2
        .get(format!("http://b.test:{port}/robots.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(robots.status(), 200);
    assert!(robots.text().await.unwrap().contains("b.test"));
    let unknown = h2
        .get(format!("http://{addr}/sitemap.xml"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    drop(app);
}
