//! Several hosts from one process (SITEMAP_SITES_FILE): routed by Host among the configured
//! hosts only, each with its own base URL, source, robots.txt and sitemaps; and
//! cross-submission, a site's sitemaps published on another host (`sitemaps_url`).

use crate::helpers::*;

crate::on_each_database!(
    each_host_gets_its_own_sitemaps,
    each_host_has_its_own_robots_txt,
    an_unknown_host_gets_nothing_of_any_site,
    b_publishes_its_sitemaps_on_a_s_host,
    both_sites_publish_on_a_third_host,
);

struct TwoSites {
    _db: TestDb,
    _dir: tempfile::TempDir,
    app: TestApp,
}

/// a.example.com serves the built-in table; b.example.org/shop/ a view over another table,
/// with its own robots.txt template.
async fn two_sites(backend: Backend) -> TwoSites {
    sites_with(backend, "", "", &[]).await
}

/// [`two_sites`] with more lines in a's and b's `[[site]]` tables, and more variables.
async fn sites_with(
    backend: Backend,
    a_lines: &str,
    b_lines: &str,
    vars: &[(&str, &str)],
) -> TwoSites {
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
            "[[site]]\nbase_url = \"https://a.example.com\"\n{a_lines}\n\
             [[site]]\nbase_url = \"https://b.example.org/shop/\"\nsource = \"shop_sitemap\"\n\
             robots_template = \"{}\"\n{b_lines}",
            template.display()
        ),
    )
    .unwrap();
    let mut all = vec![("SITEMAP_SITES_FILE", sites.to_str().unwrap())];
    all.extend_from_slice(vars);
    let app = spawn_app(&db.url, &all).await;
    TwoSites {
        _db: db,
        _dir: dir,
        app,
    }
}

async fn status_as(app: &TestApp, host: &str, path: &str) -> u16 {
    get_as(app, host, path).await.status().as_u16()
}

const B_LOCS: [&str; 3] = [
    "https://b.example.org/shop/chair",
    "https://b.example.org/shop/table",
    "https://b.example.org/shop/lamp",
];

/// Cross-submission on a host that has a site of its own: b's sitemaps at a.example.com/b/.
async fn b_publishes_its_sitemaps_on_a_s_host(backend: Backend) {
    let sites = sites_with(
        backend,
        "",
        "sitemaps_url = \"https://a.example.com/b/\"\n",
        &[],
    )
    .await;
    let app = &sites.app;
    let index = xml_as(app, "a.example.com", "/b/sitemap_index.xml").await;
    assert_valid(&index, Schema::Index);
    assert_eq!(locs(&index), ["https://a.example.com/b/sitemap-1.xml.gz"]);
    let page = xml_as(app, "a.example.com", "/b/sitemap-1.xml.gz").await;
    assert_valid(&page, Schema::Urlset);
    assert_eq!(locs(&page), B_LOCS);
    assert_eq!(
        locs_as(app, "a.example.com", "/b/sitemap.xml").await,
        B_LOCS
    );
    assert_eq!(
        text_as(app, "a.example.com", "/b/sitemap.txt").await,
        format!("{}\n", B_LOCS.join("\n"))
    );
    // b's robots.txt, still at the root of b's host, announces the index where it is.
    let robots = text_as(app, "b.example.org", "/robots.txt").await;
    assert!(robots.contains("Disallow: /checkout"), "{robots}");
    assert!(
        robots.contains("Sitemap: https://a.example.com/b/sitemap_index.xml\n"),
        "{robots}"
    );
    assert!(!robots.contains("b.example.org/shop/sitemap"), "{robots}");
    // Nothing of b is left where its files used to be.
    for path in [
        "/shop/sitemap_index.xml",
        "/shop/sitemap.xml",
        "/shop/sitemap-1.xml.gz",
        "/shop/sitemap-1.txt",
        "/shop/feed.atom",
        "/sitemap_index.xml",
    ] {
        assert_eq!(status_as(app, "b.example.org", path).await, 404, "{path}");
    }
    // a keeps its own files and robots.txt, which says nothing of b.
    assert_eq!(
        locs_as(app, "a.example.com", "/sitemap_index.xml").await,
        ["https://a.example.com/sitemap-1.xml.gz"]
    );
    let a_robots = text_as(app, "a.example.com", "/robots.txt").await;
    assert!(
        a_robots.contains("Sitemap: https://a.example.com/sitemap_index.xml"),
        "{a_robots}"
    );
    assert!(!a_robots.contains("/b/"), "{a_robots}");
    assert_eq!(status_as(app, "a.example.com", "/b/robots.txt").await, 404);
    assert_eq!(
        status_as(app, "a.example.com", "/shop/sitemap.xml").await,
        404
    );
}

/// Both sites publish on sitemaps.example.net, a host with no site: a at its root, b under
/// /b/ (the paths nest). Feeds, the stylesheet and its reference move with the files; the
/// IndexNow key file stays on the site's own host.
async fn both_sites_publish_on_a_third_host(backend: Backend) {
    let key = "cross0submission";
    let sites = sites_with(
        backend,
        "sitemaps_url = \"https://sitemaps.example.net/\"\n",
        "sitemaps_url = \"https://sitemaps.example.net/b\"\n",
        &[
            ("SITEMAP_STYLESHEET", "true"),
            ("INDEXNOW_KEY", key),
            // Nothing changes during the test, so nothing is sent; a closed port all the same.
            ("INDEXNOW_ENDPOINT", "http://127.0.0.1:9/indexnow"),
        ],
    )
    .await;
    let app = &sites.app;
    let host = "sitemaps.example.net";
    let index = xml_as(app, host, "/b/sitemap_index.xml").await;
    assert_valid(&index, Schema::Index);
    assert_eq!(
        locs(&index),
        ["https://sitemaps.example.net/b/sitemap-1.xml.gz"]
    );
    let page = xml_as(app, host, "/b/sitemap-1.xml.gz").await;
    assert_valid(&page, Schema::Urlset);
    assert_eq!(locs(&page), B_LOCS);
    for doc in [&index, &page] {
        assert!(
            String::from_utf8_lossy(doc).contains(
                "<?xml-stylesheet type=\"text/xsl\" href=\"https://sitemaps.example.net/b/sitemap.xsl\"?>"
            ),
            "{}",
            String::from_utf8_lossy(doc)
        );
    }
    assert_eq!(status_as(app, host, "/b/sitemap.xsl").await, 200);
    let atom = text_as(app, host, "/b/feed.atom").await;
    assert!(
        atom.contains("<id>https://sitemaps.example.net/b/feed.atom</id>"),
        "{atom}"
    );
    assert_eq!(status_as(app, host, "/b/feed.rss").await, 200);
    // a's files at the root of the same host; paths that nest name one site each.
    let a_index = xml_as(app, host, "/sitemap_index.xml").await;
    assert_valid(&a_index, Schema::Index);
    assert_eq!(
        locs(&a_index),
        ["https://sitemaps.example.net/sitemap-1.xml.gz"]
    );
    let a_page = xml_as(app, host, "/sitemap-1.xml.gz").await;
    assert_valid(&a_page, Schema::Urlset);
    assert_eq!(
        locs(&a_page),
        ["https://a.example.com/a-one", "https://a.example.com/a-two"]
    );
    // robots.txt: on each site's own host, none on the host of the files.
    let robots = |host: &'static str| async move { text_as(app, host, "/robots.txt").await };
    assert!(robots("a.example.com")
        .await
        .contains("Sitemap: https://sitemaps.example.net/sitemap_index.xml\n"));
    assert!(robots("b.example.org")
        .await
        .contains("Sitemap: https://sitemaps.example.net/b/sitemap_index.xml\n"));
    assert_eq!(status_as(app, host, "/robots.txt").await, 404);
    // The IndexNow key proves ownership of the host of the URLs, so it stays there.
    let key_file = format!("{key}.txt");
    assert_eq!(
        text_as(app, "b.example.org", &format!("/shop/{key_file}")).await,
        key
    );
    assert_eq!(
        text_as(app, "a.example.com", &format!("/{key_file}")).await,
        key
    );
    assert_eq!(status_as(app, host, &format!("/{key_file}")).await, 404);
    assert_eq!(status_as(app, host, &format!("/b/{key_file}")).await, 404);
    // The old locations are empty.
    for (host, path) in [
        ("a.example.com", "/sitemap_index.xml"),
        ("a.example.com", "/sitemap-1.xml.gz"),
        ("a.example.com", "/sitemap.xsl"),
        ("a.example.com", "/feed.atom"),
        ("b.example.org", "/shop/sitemap_index.xml"),
        ("b.example.org", "/shop/feed.rss"),
        (host, "/shop/sitemap_index.xml"),
    ] {
        assert_eq!(status_as(app, host, path).await, 404, "{host}{path}");
    }
}

/// With SITEMAP_SITES_FILE, `export` writes a tree that mirrors the URLs: each site's files
/// under the host and path of its sitemaps_url, its robots.txt at the root of its own host.
#[tokio::test]
async fn export_puts_each_file_where_its_url_says() {
    let sites = sites_with(
        Backend::Sqlite,
        "",
        "sitemaps_url = \"https://sitemaps.example.net:8443/b/\"\n",
        &[],
    )
    .await;
    let app = &sites.app;
    let sites_file = sites._dir.path().join("sites.toml");
    let sites_file = sites_file.to_str().unwrap();
    let dir = export(&[
        ("SITEMAP_SITES_FILE", sites_file),
        ("DATABASE_URL", &sites._db.url),
    ]);
    for (host, path, file) in [
        (
            "a.example.com",
            "/sitemap_index.xml",
            "a.example.com/sitemap_index.xml",
        ),
        (
            "a.example.com",
            "/sitemap-1.xml.gz",
            "a.example.com/sitemap-1.xml.gz",
        ),
        ("a.example.com", "/robots.txt", "a.example.com/robots.txt"),
        (
            "sitemaps.example.net:8443",
            "/b/sitemap_index.xml",
            "sitemaps.example.net_8443/b/sitemap_index.xml",
        ),
        (
            "sitemaps.example.net:8443",
            "/b/sitemap-1.xml.gz",
            "sitemaps.example.net_8443/b/sitemap-1.xml.gz",
        ),
        (
            "sitemaps.example.net:8443",
            "/b/sitemap.xml",
            "sitemaps.example.net_8443/b/sitemap.xml",
        ),
        ("b.example.org", "/robots.txt", "b.example.org/robots.txt"),
    ] {
        let served = get_as(app, host, path).await;
        assert_eq!(served.status(), 200, "{host}{path}");
        let written = std::fs::read(dir.path().join(file)).unwrap_or_default();
        assert_eq!(served.bytes().await.unwrap().to_vec(), written, "{file}");
    }
    assert!(!dir.path().join("b.example.org/shop").exists());
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
        ("[[site]]\nbase_url = \"https://a.example.com\"\nsitemaps_url = \"https://s.example.net/?x\"\n", "site 1: sitemaps_url"),
        // b's files where a's are by default (a's base URL): requests could not tell them apart.
        ("[[site]]\nbase_url = \"https://a.example.com\"\n[[site]]\nbase_url = \"https://b.example.org\"\nsitemaps_url = \"https://a.example.com\"\n", "site 2: its sitemaps are published at https://a.example.com/, like those of site 1"),
        ("[[site]]\nbase_url = \"https://a.example.com\"\nsitemaps_url = \"https://s.example.net/x/\"\n[[site]]\nbase_url = \"https://b.example.org\"\nsitemaps_url = \"https://S.example.net/x\"\n", "site 2: its sitemaps are published at https://s.example.net/x/, like those of site 1"),
        ("", "[[site]]"),
    ] {
        std::fs::write(&sites, content).unwrap();
        let out = Sitemapd::new(["check"])
            .env("SITEMAP_SITES_FILE", &sites)
            .current_dir(dir.path())
            .output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{content}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("SITEMAP_SITES_FILE=") && stderr.contains(expected), "{content}: {stderr}");
    }
}

/// The guide's cross-submission sites file, read from docs/guide.md itself, loads and publishes
/// each site's index where its robots.txt will say.
#[test]
fn the_guide_s_cross_submission_sites_file_loads_as_printed() {
    let toml = guide_block("toml", "sitemaps_url");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sites.toml");
    std::fs::write(&path, toml).unwrap();
    let vars = sitemapd::config::Vars::from_pairs([("SITEMAP_SITES_FILE", path.to_str().unwrap())]);
    let config = sitemapd::config::Config::from_vars(&vars, &Default::default()).unwrap();
    let index_urls: Vec<(String, String)> = config
        .sites
        .iter()
        .map(|site| (site.base_url.as_str().to_string(), site.index_url()))
        .collect();
    assert_eq!(
        index_urls,
        [
            (
                "https://www.example.com/".to_string(),
                "https://sitemaps.example.net/www/sitemap_index.xml".to_string()
            ),
            (
                "https://shop.example.org/catalog/".to_string(),
                "https://sitemaps.example.net/shop/sitemap_index.xml".to_string()
            ),
        ]
    );
}
