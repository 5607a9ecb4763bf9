//! Serving sitemaps from PostgreSQL and SQLite: documents, pagination, limits, entry rules, routes.

use crate::helpers::*;

fn paths(n: i64) -> Vec<(i64, String)> {
    (1..=n)
        .map(|i| (i, format!("/fr/article.php?AIndex={i}&lang=fr")))
        .collect()
}

async fn db_with(n: i64) -> TestDb {
    let db = TestDb::new().await;
    let app = spawn_app(&db.url, &[]).await; // migrates
    drop(app);
    let rows = paths(n);
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    db
}

#[tokio::test]
async fn pages_and_index_agree_with_the_table_and_validate() {
    let db = db_with(2_500).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "1000")]).await;

    let index = app.get("/sitemap_index.xml").await;
    assert_eq!(index.status(), 200);
    assert_eq!(
        header(&index, "content-type"),
        "application/xml; charset=utf-8"
    );
    let index_xml = index.bytes().await.unwrap();
    assert_valid(&index_xml, Schema::Index);
    assert!(index_xml.starts_with(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    assert_eq!(
        app.index_pages().await,
        vec!["sitemap-1.xml.gz", "sitemap-2.xml.gz", "sitemap-3.xml.gz"]
    );

    let expected: Vec<String> = paths(2_500)
        .into_iter()
        .map(|(_, p)| format!("https://www.example.com{p}"))
        .collect();
    assert_eq!(app.all_locs().await, expected);
}

#[tokio::test]
async fn a_gzip_page_is_a_gzip_file_and_the_xml_form_negotiates() {
    let db = db_with(10).await;
    let app = spawn_app(&db.url, &[]).await;

    let gz = app.get("/sitemap-1.xml.gz").await;
    assert_eq!(gz.status(), 200);
    assert_eq!(header(&gz, "content-type"), "application/gzip");
    assert_eq!(header(&gz, "content-encoding"), "");
    assert_eq!(header(&gz, "x-robots-tag"), "noindex");
    let gz_bytes = gz.bytes().await.unwrap();
    let xml = gunzip(&gz_bytes);

    let plain = app.get("/sitemap-1.xml").await;
    assert_eq!(
        header(&plain, "content-type"),
        "application/xml; charset=utf-8"
    );
    assert_eq!(header(&plain, "content-encoding"), "");
    assert_eq!(header(&plain, "vary"), "Accept-Encoding");
    assert_eq!(plain.bytes().await.unwrap().to_vec(), xml);

    let encoded = app
        .get_with("/sitemap-1.xml", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(header(&encoded, "content-encoding"), "gzip");
    assert_eq!(gunzip(&encoded.bytes().await.unwrap()), xml);

    // One file holds everything: /sitemap.xml is that urlset.
    let sitemap = app.get("/sitemap.xml").await.bytes().await.unwrap();
    assert_eq!(sitemap.to_vec(), xml);
    assert_valid(&xml, Schema::Urlset);
}

#[tokio::test]
async fn sitemap_xml_is_the_index_when_several_files_are_needed() {
    let db = db_with(30).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    let sitemap = app.get("/sitemap.xml").await.bytes().await.unwrap();
    let index = app.get("/sitemap_index.xml").await.bytes().await.unwrap();
    assert_eq!(sitemap, index);
}

#[tokio::test]
async fn long_urls_split_files_by_bytes_not_only_by_count() {
    let db = db_with(0).await;
    // 30,000 URLs of ~2,040 characters: ~61 MB of XML, over the 50 MiB limit of one file.
    db.exec(
        "INSERT INTO sitemap_entries (id, loc) SELECT i, '/p/' || i || '/' || repeat('x', 2000) FROM generate_series(1, 30000) i",
    )
    .await;
    let app = spawn_app(&db.url, &[]).await;
    let files = app.index_pages().await;
    assert!(files.len() >= 2, "{files:?}");
    let mut total = 0;
    for file in files {
        let xml = gunzip(&app.get(&format!("/{file}")).await.bytes().await.unwrap());
        assert!(xml.len() <= 52_428_800, "{file} has {} bytes", xml.len());
        total += locs(&xml).len();
    }
    assert_eq!(total, 30_000);
}

#[tokio::test]
async fn bad_rows_are_skipped_and_counted_and_bad_tags_dropped() {
    let db = db_with(0).await;
    let long = format!("/{}", "a".repeat(2100));
    db.exec(&format!(
        "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority) VALUES \
         (1, '/café?a=1&b=<2>', '2024-05-01 12:00:00+00', 'Daily', 0.5), \
         (2, 'https://other.example.com/x', NULL, NULL, NULL), \
         (3, 'javascript:alert(1)', NULL, NULL, NULL), \
         (4, '{long}', NULL, NULL, NULL), \
         (5, '/ctrl' || chr(1), NULL, NULL, NULL), \
         (6, '/ok', NULL, 'sometimes', 7), \
         (7, 'relative', NULL, NULL, NULL)"
    ))
    .await;
    let app = spawn_app(&db.url, &[]).await;
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_valid(&xml, Schema::Urlset);
    let text = String::from_utf8(xml.clone()).unwrap();
    assert!(text.contains(
        "<url><loc>https://www.example.com/caf%C3%A9?a=1&amp;b=%3C2%3E</loc><lastmod>2024-05-01T12:00:00+00:00</lastmod>\
         <changefreq>daily</changefreq><priority>0.5</priority></url>"
    ), "{text}");
    assert!(
        text.contains("<url><loc>https://www.example.com/ok</loc></url>"),
        "{text}"
    );
    assert_eq!(locs(&xml).len(), 2);

    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"out_of_scope\"}")
            .await,
        2.0
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"too_long\"}")
            .await,
        1.0
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"not_xml_safe\"}")
            .await,
        1.0
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"invalid_url\"}")
            .await,
        1.0
    );
    assert_eq!(app.metric("sitemapd_entries_served").await, 2.0);
}

#[tokio::test]
async fn an_empty_site_serves_an_empty_urlset_as_page_one() {
    let db = db_with(0).await;
    let app = spawn_app(&db.url, &[]).await;
    assert_eq!(app.index_pages().await, vec!["sitemap-1.xml.gz"]);
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_eq!(
        String::from_utf8(xml).unwrap(),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n</urlset>\n"
    );
}

#[tokio::test]
async fn unknown_paths_pages_and_methods_are_refused() {
    let db = db_with(5).await;
    let app = spawn_app(&db.url, &[]).await;
    for path in [
        "/sitemap-2.xml.gz",
        "/sitemap-0.xml.gz",
        "/sitemap-01.xml.gz",
        "/nope",
        "/sitemap-1.txt.gz",
    ] {
        assert_eq!(app.get(path).await.status(), 404, "{path}");
    }
    let post = app
        .client
        .post(app.url("/sitemap.xml"))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 405);
    assert_eq!(header(&post, "allow"), "GET, HEAD");

    let head = app
        .client
        .head(app.url("/sitemap_index.xml"))
        .send()
        .await
        .unwrap();
    let get = app.get("/sitemap_index.xml").await;
    assert_eq!(head.status(), 200);
    for name in [
        "etag",
        "last-modified",
        "content-type",
        "content-length",
        "cache-control",
    ] {
        assert_eq!(header(&head, name), header(&get, name), "{name}");
    }
}

#[tokio::test]
async fn robots_txt_is_at_the_root_and_announces_the_index() {
    let db = db_with(1).await;
    let app = spawn_app(
        &db.url,
        &[("SITEMAP_BASE_URL", "https://example.com/catalog/")],
    )
    .await;
    let robots = app.get("/robots.txt").await;
    assert_eq!(robots.status(), 200);
    assert_eq!(header(&robots, "content-type"), "text/plain; charset=utf-8");
    assert!(robots
        .text()
        .await
        .unwrap()
        .contains("Sitemap: https://example.com/catalog/sitemap_index.xml"));
    assert_eq!(app.get("/catalog/sitemap_index.xml").await.status(), 200);
    assert_eq!(app.get("/sitemap_index.xml").await.status(), 404);
}

#[tokio::test]
async fn urls_come_from_configuration_not_from_request_headers() {
    let db = db_with(1).await;
    let app = spawn_app(&db.url, &[]).await;
    let body = app
        .get_with(
            "/sitemap_index.xml",
            &[
                ("host", "evil.example"),
                ("x-forwarded-host", "evil.example"),
                ("x-forwarded-proto", "http"),
            ],
        )
        .await
        .text()
        .await
        .unwrap();
    assert!(!body.contains("evil"), "{body}");
}

#[tokio::test]
async fn sqlite_is_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    drop(spawn_app(&url, &[]).await);
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("INSERT INTO sitemap_entries (id, loc, lastmod) VALUES (1, '/été & co', '2024-05-01 12:00:00'), (2, '/b', NULL)")
        .execute(&pool)
        .await
        .unwrap();
    let app = spawn_app(&url, &[]).await;
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_valid(&xml, Schema::Urlset);
    assert_eq!(
        locs(&xml),
        vec![
            "https://www.example.com/%C3%A9t%C3%A9%20&%20co",
            "https://www.example.com/b"
        ]
    );
    assert!(String::from_utf8(xml)
        .unwrap()
        .contains("<lastmod>2024-05-01T12:00:00+00:00</lastmod>"));
}

#[tokio::test]
async fn a_view_over_cms_tables_can_be_the_source() {
    let db = db_with(0).await;
    db.exec(
        "CREATE TABLE cms_pages (page_id int PRIMARY KEY, slug text, updated timestamp, published bool); \
         INSERT INTO cms_pages VALUES (1, 'home', '2024-01-02 03:04:05', true), (2, 'draft', NULL, false), (3, 'über', NULL, true); \
         CREATE VIEW cms_sitemap AS SELECT page_id AS id, '/' || slug AS loc, updated AS lastmod, \
           'weekly'::text AS changefreq, NULL::real AS priority FROM cms_pages WHERE published",
    )
    .await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "cms_sitemap")]).await;
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_eq!(
        locs(&xml),
        vec![
            "https://www.example.com/home",
            "https://www.example.com/%C3%BCber"
        ]
    );
    assert!(String::from_utf8(xml)
        .unwrap()
        .contains("<lastmod>2024-01-02T03:04:05+00:00</lastmod>"));
}

#[tokio::test]
async fn migrations_accept_an_existing_table_and_run_twice() {
    let db = TestDb::new().await;
    db.exec("CREATE TABLE sitemap_entries (id bigint PRIMARY KEY, loc text NOT NULL, lastmod timestamptz, changefreq text, priority real, cms_extra text)")
        .await;
    db.exec("INSERT INTO sitemap_entries (id, loc, cms_extra) VALUES (1, '/kept', 'x')")
        .await;
    drop(spawn_app(&db.url, &[]).await);
    let app = spawn_app(&db.url, &[]).await;
    assert_eq!(app.all_locs().await, vec!["https://www.example.com/kept"]);
    let triggers: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'sitemap_entries'::regclass",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(triggers, 0, "an existing table is left as it is");
}

#[tokio::test]
async fn text_sitemaps_list_the_same_entries_one_url_per_line() {
    let db = db_with(25).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    for file in app.index_pages().await {
        let xml = gunzip(&app.get(&format!("/{file}")).await.bytes().await.unwrap());
        let txt_path = format!("/{}", file.replace(".xml.gz", ".txt"));
        let txt = app.get(&txt_path).await;
        assert_eq!(txt.status(), 200);
        assert_eq!(header(&txt, "content-type"), "text/plain; charset=utf-8");
        let etag = header(&txt, "etag").to_string();
        let body = txt.text().await.unwrap();
        let lines: Vec<String> = body.lines().map(str::to_string).collect();
        assert!(body.ends_with('\n'));
        assert_eq!(lines, locs(&xml), "{txt_path}");
        assert_eq!(
            app.get_with(&txt_path, &[("if-none-match", &etag)])
                .await
                .status(),
            304
        );
    }
    assert_eq!(
        app.get("/sitemap.txt").await.status(),
        404,
        "several files: no single text sitemap"
    );

    let db = db_with(3).await;
    let app = spawn_app(&db.url, &[]).await;
    let body = app.get("/sitemap.txt").await.text().await.unwrap();
    assert_eq!(body.lines().count(), 3);
}
