//! Views read in id ranges: a view the engine builds whole for a keyset read (a `UNION ALL`) is
//! served whole and once, read in windows whatever its ids look like; on MariaDB an idle refresh
//! reads nothing but the tables' change times (the extension tables' too), and a change still
//! shows; a view that cannot be read by id range is named at start.

use crate::helpers::*;

/// Two tables behind one `UNION ALL` view: 30,000 sparse ids (every 7th), then 60,000 dense ids
/// far above them, and a row at id 0.
async fn union_view(db: &TestDb) {
    let numbers = match db.backend {
        Backend::Postgres => "SELECT i AS n FROM generate_series(1, 60000) AS i",
        Backend::MariaDb => "SELECT seq AS n FROM seq_1_to_60000",
        Backend::Sqlite => {
            "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 60000) SELECT n FROM s"
        }
    };
    db.exec(&format!(
        "CREATE TABLE cms_old (old_id BIGINT PRIMARY KEY, path VARCHAR(100) NOT NULL);
         CREATE TABLE cms_new (new_id BIGINT PRIMARY KEY, path VARCHAR(100) NOT NULL);
         INSERT INTO cms_old (old_id, path) SELECT n * 7, CONCAT('/old/', n) FROM ({numbers}) AS t WHERE n <= 30000;
         INSERT INTO cms_new (new_id, path) SELECT n + 5000000, CONCAT('/new/', n) FROM ({numbers}) AS t;
         CREATE VIEW cms_sitemap AS
           SELECT 0 AS id, '/' AS loc, NULL AS lastmod, NULL AS changefreq, NULL AS priority
           UNION ALL SELECT old_id, path, NULL, NULL, NULL FROM cms_old
           UNION ALL SELECT new_id, path, NULL, NULL, NULL FROM cms_new;"
    )
    .replace(
        "CONCAT('/old/', n)",
        &concat(db.backend, "'/old/'", "n"),
    )
    .replace("CONCAT('/new/', n)", &concat(db.backend, "'/new/'", "n")))
    .await;
}

/// `a || b` where CONCAT is not a function (SQLite).
fn concat(backend: Backend, a: &str, b: &str) -> String {
    match backend {
        Backend::Sqlite => format!("{a} || {b}"),
        _ => format!("CONCAT({a}, {b})"),
    }
}

#[tokio::test]
async fn a_union_view_with_sparse_and_dense_ids_is_served_whole_and_once_on_every_database() {
    for backend in [Backend::Postgres, Backend::MariaDb, Backend::Sqlite] {
        let db = TestDb::on(backend).await;
        db.migrate().await;
        union_view(&db).await;
        let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "cms_sitemap")]).await;
        let mut locs = app.all_locs().await;
        assert_eq!(locs.len(), 90_001, "{backend:?}");
        locs.sort();
        locs.dedup();
        assert_eq!(locs.len(), 90_001, "{backend:?}: every row once");
        assert!(
            locs.iter().any(|l| l.ends_with("/new/60000")),
            "{backend:?}"
        );
        assert!(
            locs.iter().any(|l| l.ends_with("/old/30000")),
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn an_idle_view_on_mariadb_costs_a_look_at_its_tables_and_a_change_still_shows() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    union_view(&db).await;
    let vars = [
        ("SITEMAP_SOURCE", "cms_sitemap"),
        ("SITEMAP_REFRESH_SECS", "1"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    assert_eq!(app.all_locs().await.len(), 90_001);
    let app = &app;
    let quiet = "sitemapd_quiet_refreshes_total";
    eventually(
        "refreshes that read nothing",
        || async move { app.metric(quiet).await },
        |n| *n >= 2.0,
    )
    .await;
    let summaries = app.metric("sitemapd_summary_checks_total").await;
    let quiet_before = app.metric(quiet).await;
    eventually(
        "more refreshes that read nothing",
        || async move { app.metric(quiet).await },
        |n| *n >= quiet_before + 2.0,
    )
    .await;
    assert_eq!(
        app.metric("sitemapd_summary_checks_total").await,
        summaries,
        "no file was summarised while the tables stood still"
    );

    db.exec("UPDATE cms_new SET path = '/renamed/1' WHERE new_id = 5000001")
        .await;
    let locs = eventually(
        "the renamed row",
        || async move { app.all_locs().await },
        |locs| locs.iter().any(|l| l.ends_with("/renamed/1")),
    )
    .await;
    assert!(locs.iter().any(|l| l.ends_with("/renamed/1")));
}

/// An image added to a view's row changes its file as much as an edit of the row: a refresh that
/// looks at the commit times of the tables behind the view looks at the extension tables' too.
#[tokio::test]
async fn an_image_added_to_a_views_row_is_not_taken_for_a_quiet_refresh_on_mariadb() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE posts (id INT PRIMARY KEY, slug VARCHAR(50) NOT NULL);
         INSERT INTO posts VALUES (1, 'hello'), (2, 'news');
         CREATE VIEW sitemap_posts AS SELECT id, CONCAT('/blog/', slug) AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM posts;",
    )
    .await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "sitemap_posts")]).await;
    // Commit times are kept to the second: a sweep a second after the last write leaves a stamp
    // that a later refresh trusts.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    app.sweep().await;
    let quiet = "sitemapd_quiet_refreshes_total";
    let quiet_before = app.metric(quiet).await;

    db.insert_images(&[(1, "https://cdn.example.net/hello.jpg")])
        .await;
    app.sweep().await;
    assert_eq!(
        app.metric(quiet).await,
        quiet_before,
        "a refresh after an image was added read nothing"
    );
    let gz = app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap();
    let xml = String::from_utf8(gunzip(&gz)).unwrap();
    assert!(
        xml.contains("<image:loc>https://cdn.example.net/hello.jpg</image:loc>"),
        "{xml}"
    );
}

#[tokio::test]
async fn a_view_that_cannot_be_read_by_id_range_is_named_at_start() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE cms_hits (hit_id BIGINT PRIMARY KEY, path VARCHAR(100) NOT NULL);
         INSERT INTO cms_hits SELECT seq, CONCAT('/page/', seq MOD 20000) FROM seq_1_to_40000;
         ANALYZE TABLE cms_hits;
         CREATE VIEW cms_grouped AS SELECT MIN(hit_id) AS id, path AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM cms_hits GROUP BY path;",
    )
    .await;
    let serving = Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_SOURCE", "cms_grouped")
        .serve()
        .await;
    serving.terminate();
    let out = serving.wait_with_output().await;
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("cms_grouped: the database cannot read it by id range"),
        "{log}"
    );
}
