//! Serving sitemaps from PostgreSQL, MariaDB and SQLite: documents, pagination, limits, entry
//! rules, routes.

use crate::helpers::*;

crate::on_each_database!(
    pages_and_index_agree_with_the_table_and_validate,
    a_gzip_page_is_a_gzip_file_and_the_xml_form_negotiates,
    sitemap_xml_is_the_index_when_several_files_are_needed,
    long_urls_split_files_by_bytes_not_only_by_count,
    bad_rows_are_skipped_and_counted_and_bad_tags_dropped,
    an_empty_site_serves_an_empty_urlset_as_page_one,
    unknown_paths_pages_and_methods_are_refused,
    robots_txt_is_at_the_root_and_announces_the_index,
    urls_come_from_configuration_not_from_request_headers,
    a_view_over_cms_tables_can_be_the_source,
    text_sitemaps_list_the_same_entries_one_url_per_line,
);
crate::on_each_server!(migrations_accept_an_existing_table_and_run_twice);

fn paths(n: i64) -> Vec<(i64, String)> {
    (1..=n)
        .map(|i| (i, format!("/fr/article.php?AIndex={i}&lang=fr")))
        .collect()
}

async fn db_with(backend: Backend, n: i64) -> TestDb {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows = paths(n);
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    db
}

async fn pages_and_index_agree_with_the_table_and_validate(backend: Backend) {
    let db = db_with(backend, 2_500).await;
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

async fn a_gzip_page_is_a_gzip_file_and_the_xml_form_negotiates(backend: Backend) {
    let db = db_with(backend, 10).await;
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

async fn sitemap_xml_is_the_index_when_several_files_are_needed(backend: Backend) {
    let db = db_with(backend, 30).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    let sitemap = app.get("/sitemap.xml").await.bytes().await.unwrap();
    let index = app.get("/sitemap_index.xml").await.bytes().await.unwrap();
    assert_eq!(sitemap, index);
}

async fn long_urls_split_files_by_bytes_not_only_by_count(backend: Backend) {
    let db = db_with(backend, 0).await;
    // 30,000 URLs of ~2,040 characters: ~61 MB of XML, over the 50 MiB limit of one file.
    let rows: Vec<Row> = (1..=30_000)
        .map(|i| Row::new(i, &format!("/p/{i}/{}", "x".repeat(2000))))
        .collect();
    db.insert_rows(&rows).await;
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

async fn bad_rows_are_skipped_and_counted_and_bad_tags_dropped(backend: Backend) {
    let db = db_with(backend, 0).await;
    let long = format!("/{}", "a".repeat(2100));
    db.insert_rows(&[
        Row::new(1, "/café?a=1&b=<2>")
            .lastmod("2024-05-01 12:00:00")
            .changefreq("Daily")
            .priority(0.5),
        Row::new(2, "https://other.example.com/x"),
        Row::new(3, "javascript:alert(1)"),
        Row::new(4, &long),
        Row::new(5, "/ctrl\u{1}"),
        Row::new(6, "/ok").changefreq("sometimes").priority(7.0),
        Row::new(7, "relative"),
    ])
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
        app.metric("sitemapd_entries_skipped{reason=\"out_of_scope\"")
            .await,
        2.0
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"too_long\"")
            .await,
        1.0
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"not_xml_safe\"")
            .await,
        1.0
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"invalid_url\"")
            .await,
        1.0
    );
    assert_eq!(app.metric("sitemapd_entries_served").await, 2.0);
}

async fn an_empty_site_serves_an_empty_urlset_as_page_one(backend: Backend) {
    let db = db_with(backend, 0).await;
    let app = spawn_app(&db.url, &[]).await;
    assert_eq!(app.index_pages().await, vec!["sitemap-1.xml.gz"]);
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_eq!(
        String::from_utf8(xml).unwrap(),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n</urlset>\n"
    );
}

async fn unknown_paths_pages_and_methods_are_refused(backend: Backend) {
    let db = db_with(backend, 5).await;
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

async fn robots_txt_is_at_the_root_and_announces_the_index(backend: Backend) {
    let db = db_with(backend, 1).await;
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

async fn urls_come_from_configuration_not_from_request_headers(backend: Backend) {
    let db = db_with(backend, 1).await;
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

async fn a_view_over_cms_tables_can_be_the_source(backend: Backend) {
    let db = db_with(backend, 0).await;
    db.exec(match backend {
        Backend::Postgres => {
            "CREATE TABLE cms_pages (page_id int PRIMARY KEY, slug text, updated timestamp, published bool); \
             INSERT INTO cms_pages VALUES (1, 'home', '2024-01-02 03:04:05', true), (2, 'draft', NULL, false), (3, 'über', NULL, true); \
             CREATE VIEW cms_sitemap AS SELECT page_id AS id, '/' || slug AS loc, updated AS lastmod, \
               'weekly'::text AS changefreq, NULL::real AS priority FROM cms_pages WHERE published"
        }
        Backend::MariaDb => {
            "CREATE TABLE cms_pages (page_id int PRIMARY KEY, slug varchar(200), updated datetime, published tinyint(1)); \
             INSERT INTO cms_pages VALUES (1, 'home', '2024-01-02 03:04:05', 1), (2, 'draft', NULL, 0), (3, 'über', NULL, 1); \
             CREATE VIEW cms_sitemap AS SELECT page_id AS id, CONCAT('/', slug) AS loc, updated AS lastmod, \
               'weekly' AS changefreq, NULL AS priority FROM cms_pages WHERE published = 1"
        }
        Backend::Sqlite => {
            "CREATE TABLE cms_pages (page_id INTEGER PRIMARY KEY, slug TEXT, updated TEXT, published INTEGER); \
             INSERT INTO cms_pages VALUES (1, 'home', '2024-01-02 03:04:05', 1), (2, 'draft', NULL, 0), (3, 'über', NULL, 1); \
             CREATE VIEW cms_sitemap AS SELECT page_id AS id, '/' || slug AS loc, updated AS lastmod, \
               'weekly' AS changefreq, NULL AS priority FROM cms_pages WHERE published = 1"
        }
    })
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

async fn migrations_accept_an_existing_table_and_run_twice(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.exec(match backend {
        Backend::MariaDb => "CREATE TABLE sitemap_entries (id bigint PRIMARY KEY, loc text NOT NULL, lastmod datetime, changefreq text, priority double, cms_extra text)",
        _ => "CREATE TABLE sitemap_entries (id bigint PRIMARY KEY, loc text NOT NULL, lastmod timestamptz, changefreq text, priority real, cms_extra text)",
    })
    .await;
    db.exec("INSERT INTO sitemap_entries (id, loc, cms_extra) VALUES (1, '/kept', 'x')")
        .await;
    drop(spawn_app(&db.url, &[]).await);
    let app = spawn_app(&db.url, &[]).await;
    assert_eq!(app.all_locs().await, vec!["https://www.example.com/kept"]);
    let triggers = db
        .scalar(match backend {
            Backend::MariaDb => {
                "SELECT count(*) FROM information_schema.TRIGGERS \
                 WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'sitemap_entries'"
            }
            _ => "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'sitemap_entries'::regclass",
        })
        .await;
    assert_eq!(triggers, 0, "an existing table is left as it is");
}

async fn text_sitemaps_list_the_same_entries_one_url_per_line(backend: Backend) {
    let db = db_with(backend, 25).await;
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

    let db = db_with(backend, 3).await;
    let app = spawn_app(&db.url, &[]).await;
    let body = app.get("/sitemap.txt").await.text().await.unwrap();
    assert_eq!(body.lines().count(), 3);
}
