//! Several hosts from one process (SITEMAP_SITES_FILE): routed by Host among the configured
//! hosts only, each with its own base URL, source, robots.txt and sitemaps.

use crate::helpers::*;

crate::on_each_database!(
    each_host_gets_its_own_sitemaps,
    each_host_has_its_own_robots_txt,
    an_unknown_host_gets_nothing_of_any_site,
);

struct TwoSites {
    _db: TestDb,
    _dir: tempfile::TempDir,
    app: TestApp,
}

/// a.example.com serves the built-in table; b.example.org/shop/ a view over another table,
/// with its own robots.txt template.
async fn two_sites(backend: Backend) -> TwoSites {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a-one"), (2, "/a-two")]).await;
    // `||` concatenates in sitemapd's MySQL sessions too (PIPES_AS_CONCAT).
    db.exec(
        "CREATE TABLE products (id int PRIMARY KEY, slug text);
         INSERT INTO products VALUES (1, 'chair'), (2, 'table'), (3, 'lamp');
         CREATE VIEW shop_sitemap AS SELECT id, '/shop/' || slug AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM products;",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("b-robots.txt");
    std::fs::write(
        &template,
        "User-agent: *\nDisallow: /checkout\n\nSitemap: {{ sitemap_index_url }}\n",
    )
    .unwrap();
    let sites = dir.path().join("sites.toml");
    std::fs::write(
        &sites,
        format!(
            "[[site]]\nbase_url = \"https://a.example.com\"\n\n\
             [[site]]\nbase_url = \"https://b.example.org/shop/\"\nsource = \"shop_sitemap\"\n\
             robots_template = \"{}\"\n",
            template.display()
        ),
    )
    .unwrap();
    let app = spawn_app(&db.url, &[("SITEMAP_SITES_FILE", sites.to_str().unwrap())]).await;
    TwoSites {
        _db: db,
        _dir: dir,
        app,
    }
}

async fn get_as(app: &TestApp, host: &str, path: &str) -> reqwest::Response {
    app.get_with(path, &[("host", host)]).await
}

async fn locs_as(app: &TestApp, host: &str, path: &str) -> Vec<String> {
    let resp = get_as(app, host, path).await;
    assert_eq!(resp.status(), 200, "{host}{path}");
    let body = resp.bytes().await.unwrap();
    let xml = if path.ends_with(".gz") {
        gunzip(&body)
    } else {
        body.to_vec()
    };
    locs(&xml)
}

async fn each_host_gets_its_own_sitemaps(backend: Backend) {
    let sites = two_sites(backend).await;
    let app = &sites.app;
    assert_eq!(
        locs_as(app, "a.example.com", "/sitemap_index.xml").await,
        ["https://a.example.com/sitemap-1.xml.gz"]
    );
    assert_eq!(
        locs_as(app, "a.example.com", "/sitemap-1.xml.gz").await,
        ["https://a.example.com/a-one", "https://a.example.com/a-two"]
    );
    assert_eq!(
        locs_as(app, "b.example.org", "/shop/sitemap_index.xml").await,
        ["https://b.example.org/shop/sitemap-1.xml.gz"]
    );
    assert_eq!(
        locs_as(app, "b.example.org", "/shop/sitemap-1.xml.gz").await,
        [
            "https://b.example.org/shop/chair",
            "https://b.example.org/shop/table",
            "https://b.example.org/shop/lamp"
        ]
    );
    // The same Host in other spellings.
    for host in ["A.Example.COM", "a.example.com:443", "a.example.com."] {
        assert_eq!(
            get_as(app, host, "/sitemap.xml").await.status(),
            200,
            "{host}"
        );
    }
}

async fn each_host_has_its_own_robots_txt(backend: Backend) {
    let sites = two_sites(backend).await;
    let app = &sites.app;
    let a = get_as(app, "a.example.com", "/robots.txt")
        .await
        .text()
        .await
        .unwrap();
    let b = get_as(app, "b.example.org", "/robots.txt")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        a.contains("Sitemap: https://a.example.com/sitemap_index.xml"),
        "{a}"
    );
    assert!(!a.contains("b.example.org"), "{a}");
    assert!(b.contains("Disallow: /checkout"), "{b}");
    assert!(
        b.contains("Sitemap: https://b.example.org/shop/sitemap_index.xml"),
        "{b}"
    );
}

async fn an_unknown_host_gets_nothing_of_any_site(backend: Backend) {
    let sites = two_sites(backend).await;
    let app = &sites.app;
    for host in [
        "evil.example.net",
        "a.example.com:8443",
        "b.example.org.evil.net",
        "127.0.0.1",
    ] {
        for path in [
            "/robots.txt",
            "/sitemap_index.xml",
            "/sitemap-1.xml.gz",
            "/shop/sitemap.xml",
            "/feed.atom",
        ] {
            let resp = get_as(app, host, path).await;
            assert_eq!(resp.status(), 404, "{host}{path}");
            let body = resp.text().await.unwrap();
            assert!(!body.contains("example"), "{host}{path}: {body}");
        }
    }
    // One host's files are not found under another's name either.
    assert_eq!(
        get_as(app, "a.example.com", "/shop/sitemap.xml")
            .await
            .status(),
        404
    );
    assert_eq!(
        get_as(app, "b.example.org", "/sitemap.xml").await.status(),
        404
    );
    // Probes keep working whatever the Host.
    assert_eq!(get_as(app, "10.0.0.7:8080", "/healthz").await.status(), 200);
    assert_eq!(get_as(app, "10.0.0.7:8080", "/metrics").await.status(), 200);
}

#[tokio::test]
async fn a_bad_sites_file_stops_the_start_with_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    for (content, expected) in [
        ("[[site]]\nbase_url = \"https://a.example.com\"\n[[site]]\nbase_url = \"https://A.example.com/other/\"\n", "one site per host"),
        ("[[site]]\nbase_url = \"https://a.example.com\"\nsourc = \"x\"\n", "unknown field"),
        ("[[site]]\nbase_url = \"ftp://a.example.com\"\n", "site 1: base_url"),
        ("", "[[site]]"),
    ] {
        std::fs::write(&sites, content).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitemapd"))
            .arg("check")
            .env_clear()
            .env("SITEMAP_SITES_FILE", &sites)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{content}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("SITEMAP_SITES_FILE=") && stderr.contains(expected), "{content}: {stderr}");
    }
}
