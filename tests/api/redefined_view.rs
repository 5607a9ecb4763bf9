//! A watched PostgreSQL view redefined with `CREATE OR REPLACE VIEW` fires no trigger: its new
//! rows show within SITEMAP_REFRESH_SECS all the same, and the tables its new definition reads
//! are watched from then on.

use crate::helpers::*;

/// Every loc of every file (a file the redefinition emptied is an empty urlset until the files
/// are laid out again).
async fn served(app: &TestApp) -> Vec<String> {
    let mut all = Vec::new();
    for file in app.index_pages().await {
        let gz = app.get(&format!("/{file}")).await.bytes().await.unwrap();
        all.extend(locs(&gunzip(&gz)));
    }
    all
}

#[tokio::test]
async fn a_redefined_watched_view_shows_within_the_refresh_and_its_new_tables_are_watched() {
    let db = TestDb::on(Backend::Postgres).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE cms_pages (page_id bigint PRIMARY KEY, path text NOT NULL, visible boolean NOT NULL);
         INSERT INTO cms_pages SELECT i, '/page/' || i, true FROM generate_series(1, 30) AS i;
         CREATE TABLE cms_posts (post_id bigint PRIMARY KEY, path text NOT NULL);
         CREATE VIEW cms_sitemap AS SELECT page_id AS id, path AS loc, NULL::timestamptz AS lastmod,
           NULL::text AS changefreq, NULL::real AS priority FROM cms_pages WHERE visible;",
    )
    .await;
    let vars = [
        ("SITEMAP_SOURCE", "cms_sitemap"),
        ("SITEMAP_PAGE_SIZE", "10"),
        // Watched: only the hourly safety sweep would read it all again without the check.
        ("SITEMAP_REFRESH_SECS", "1"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    assert_eq!(served(&app).await.len(), 30);

    db.exec(
        "CREATE OR REPLACE VIEW cms_sitemap AS
           SELECT page_id AS id, path AS loc, NULL::timestamptz AS lastmod, NULL::text AS changefreq,
             NULL::real AS priority FROM cms_pages WHERE visible AND page_id <= 20
           UNION ALL
           SELECT post_id + 1000, path, NULL::timestamptz, NULL::text, NULL::real FROM cms_posts;",
    )
    .await;
    let app = &app;
    let locs = eventually(
        "the redefined view's rows",
        || async move { served(app).await },
        |locs| locs.len() == 20,
    )
    .await;
    assert_eq!(locs.len(), 20, "{locs:?}");

    // The table the new definition reads is watched now: a post shows without a refresh of
    // the whole source.
    db.exec("INSERT INTO cms_posts VALUES (1, '/post/1')").await;
    let locs = eventually(
        "the new post",
        || async move { served(app).await },
        |locs| locs.iter().any(|l| l.ends_with("/post/1")),
    )
    .await;
    assert!(locs.iter().any(|l| l.ends_with("/post/1")), "{locs:?}");
}
