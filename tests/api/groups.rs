//! Groups: several sitemaps per site, each from its own source (SITEMAP_GROUPS, `[[site.group]]`).
//! Without groups nothing changes: the same file names, bytes and ETags as before groups were
//! there (pinned below). A news group lists the articles of its window, which leave by
//! themselves as they age.

use crate::helpers::*;

crate::on_each_database!(
    without_groups_the_files_are_those_of_before,
    groups_with_the_same_ids_stay_apart,
    a_change_in_one_group_leaves_the_others_files_alone,
    the_extension_tables_belong_to_the_first_group,
    removing_a_group_gives_the_index_a_new_time,
    a_news_article_enters_and_then_ages_out_without_a_database_change,
    check_and_export_go_through_every_group,
    a_restart_after_articles_aged_serves_what_the_window_holds_now,
);

/// Posts and pages with the same ids (1 to 3), each behind a view of its own.
async fn posts_and_pages_views(db: &TestDb) {
    db.migrate().await;
    // `||` concatenates in sitemapd's MySQL sessions too (PIPES_AS_CONCAT).
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
}

/// The posts and pages views served as two groups of one site.
async fn posts_and_pages(backend: Backend) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    posts_and_pages_views(&db).await;
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_GROUPS", "posts=sitemap_posts,pages=sitemap_pages"),
            ("SITEMAP_PAGE_SIZE", "2"),
        ],
    )
    .await;
    (db, app)
}

async fn groups_with_the_same_ids_stay_apart(backend: Backend) {
    let (_db, app) = posts_and_pages(backend).await;
    // Groups in configured order, then K.
    assert_eq!(
        app.index_pages().await,
        [
            "sitemap-posts-1.xml.gz",
            "sitemap-posts-2.xml.gz",
            "sitemap-pages-1.xml.gz",
            "sitemap-pages-2.xml.gz"
        ]
    );
    assert_eq!(
        app.all_locs().await,
        [
            "https://www.example.com/blog/hello",
            "https://www.example.com/blog/news",
            "https://www.example.com/blog/bye",
            "https://www.example.com/about",
            "https://www.example.com/contact",
            "https://www.example.com/team",
        ]
    );
    let text = app.get("/sitemap-pages-2.txt").await.text().await.unwrap();
    assert_eq!(text, "https://www.example.com/team\n");
    let xml = app.get("/sitemap-posts-2.xml").await.bytes().await.unwrap();
    assert_eq!(locs(&xml), ["https://www.example.com/blog/bye"]);
    // The unnamed group's names and unknown groups name nothing; sitemap.xml is the index.
    for missing in [
        "/sitemap-1.xml.gz",
        "/sitemap-news-1.xml.gz",
        "/sitemap.txt",
    ] {
        assert_eq!(app.get(missing).await.status(), 404, "{missing}");
    }
    let sitemap = app.get("/sitemap.xml").await.text().await.unwrap();
    assert!(sitemap.contains("<sitemapindex"), "{sitemap}");
    assert_valid(sitemap.as_bytes(), Schema::Index);
    let served = |group: &str| {
        format!("sitemapd_entries_served{{site=\"https://www.example.com/\",group=\"{group}\"}}")
    };
    assert_eq!(app.metric(&served("posts")).await, 3.0);
    assert_eq!(app.metric(&served("pages")).await, 3.0);
    assert_eq!(
        app.metric("sitemapd_files{site=\"https://www.example.com/\",group=\"posts\"}")
            .await,
        2.0
    );
}

async fn a_change_in_one_group_leaves_the_others_files_alone(backend: Backend) {
    let (db, app) = posts_and_pages(backend).await;
    let validators = |resp: &reqwest::Response| {
        (
            header(resp, "etag").to_string(),
            header(resp, "last-modified").to_string(),
        )
    };
    let posts_before = validators(&app.get("/sitemap-posts-1.xml.gz").await);
    let pages_before = validators(&app.get("/sitemap-pages-1.xml.gz").await);
    let index_before = app.get("/sitemap_index.xml").await;
    let index_etag = header(&index_before, "etag").to_string();
    // Pages and posts share id 1; only the page changes.
    db.exec("UPDATE pages SET slug = 'about-us' WHERE id = 1")
        .await;
    app.sweep().await;
    let pages_after = app.get("/sitemap-pages-1.xml.gz").await;
    assert_ne!(validators(&pages_after), pages_before);
    let xml = gunzip(&pages_after.bytes().await.unwrap());
    assert_eq!(locs(&xml)[0], "https://www.example.com/about-us");
    assert_eq!(
        validators(&app.get("/sitemap-posts-1.xml.gz").await),
        posts_before
    );
    let revalidated = app
        .get_with(
            "/sitemap-posts-1.xml.gz",
            &[("if-none-match", &posts_before.0)],
        )
        .await;
    assert_eq!(revalidated.status(), 304);
    // The index lists the changed file's new time, so its own ETag moves.
    let index_after = app.get("/sitemap_index.xml").await;
    assert_ne!(header(&index_after, "etag"), index_etag);
}

async fn the_extension_tables_belong_to_the_first_group(backend: Backend) {
    let (db, app) = posts_and_pages(backend).await;
    let pages_etag = header(&app.get("/sitemap-pages-1.xml.gz").await, "etag").to_string();
    // Post 1 and page 1 share the id; the image is the post's.
    db.insert_images(&[(1, "https://cdn.example.net/hello.jpg")])
        .await;
    app.sweep().await;
    let posts = gunzip(
        &app.get("/sitemap-posts-1.xml.gz")
            .await
            .bytes()
            .await
            .unwrap(),
    );
    let posts = String::from_utf8(posts).unwrap();
    assert!(
        posts.contains("<url><loc>https://www.example.com/blog/hello</loc><image:image>"),
        "{posts}"
    );
    let pages = app.get("/sitemap-pages-1.xml.gz").await;
    assert_eq!(header(&pages, "etag"), pages_etag);
    let pages = String::from_utf8(gunzip(&pages.bytes().await.unwrap())).unwrap();
    assert!(!pages.contains("image"), "{pages}");
}

async fn removing_a_group_gives_the_index_a_new_time(backend: Backend) {
    let (db, both) = posts_and_pages(backend).await;
    let before = both.get("/sitemap_index.xml").await;
    let last_modified = header(&before, "last-modified").to_string();
    drop(both);
    // No file of the posts changes, but the index no longer lists the pages.
    let posts_only = spawn_app(
        &db.url,
        &[
            ("SITEMAP_GROUPS", "posts=sitemap_posts"),
            ("SITEMAP_PAGE_SIZE", "2"),
        ],
    )
    .await;
    let after = posts_only
        .get_with(
            "/sitemap_index.xml",
            &[("if-modified-since", &last_modified)],
        )
        .await;
    assert_eq!(
        after.status(),
        200,
        "If-Modified-Since must not hide the change"
    );
    assert_ne!(header(&after, "last-modified"), last_modified);
    assert_eq!(posts_only.index_pages().await.len(), 2);
}

/// Three files of two entries, with every field and extension, and a URL that needs escaping.
async fn pinned_site(db: &TestDb) {
    db.migrate().await;
    db.insert_rows(&[
        Row::new(1, "/")
            .lastmod("2024-05-01 12:00:00")
            .priority(1.0),
        Row::new(2, "/café?a=1&b=2").changefreq("weekly"),
        Row::new(3, "/blog/").lastmod("2023-01-02 03:04:05"),
        Row::new(4, "https://www.example.com/blog/hello-world"),
        Row::new(7, "/about").changefreq("yearly").priority(0.3),
    ])
    .await;
    db.insert_images(&[(4, "/img/hello.jpg")]).await;
    db.insert_alternates(&[(3, "fr", "/fr/blog/")]).await;
}

/// The index with the times of its files' last changes left out.
fn without_lastmods(index: &str) -> String {
    let mut out = String::new();
    let mut rest = index;
    while let Some(start) = rest.find("<lastmod>") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("</lastmod>").expect("closed lastmod") + start;
        out.push_str("<lastmod/>");
        rest = &rest[end + "</lastmod>".len()..];
    }
    out.push_str(rest);
    out
}

async fn without_groups_the_files_are_those_of_before(backend: Backend) {
    let db = TestDb::on(backend).await;
    pinned_site(&db).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "2")]).await;
    let index = app.get("/sitemap_index.xml").await.text().await.unwrap();
    let mut seen = Vec::new();
    for path in [
        "/sitemap-1.xml.gz",
        "/sitemap-2.xml.gz",
        "/sitemap-3.xml.gz",
        "/sitemap-1.xml",
        "/sitemap-3.txt",
        "/robots.txt",
    ] {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        let etag = header(&resp, "etag").to_string();
        let body = resp.bytes().await.unwrap();
        seen.push((path, etag, body.len()));
    }
    assert_eq!(without_lastmods(&index), PINNED_INDEX);
    let pinned: Vec<(&str, String, usize)> = PINNED_FILES
        .iter()
        .map(|(path, etag, len)| (*path, etag.to_string(), *len))
        .collect();
    assert_eq!(seen, pinned);
}

/// What the index said before groups existed (times of change aside).
const PINNED_INDEX: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
<sitemap><loc>https://www.example.com/sitemap-1.xml.gz</loc><lastmod/></sitemap>\n\
<sitemap><loc>https://www.example.com/sitemap-2.xml.gz</loc><lastmod/></sitemap>\n\
<sitemap><loc>https://www.example.com/sitemap-3.xml.gz</loc><lastmod/></sitemap>\n\
</sitemapindex>\n";

/// Path, ETag and length of each file as served before groups existed (on every database),
/// the ETags as the writer's format version 3 makes them (a file's fingerprint from its blocks).
const PINNED_FILES: &[(&str, &str, usize)] = &[
    (
        "/sitemap-1.xml.gz",
        "\"f137f20c8913e7d0dd0b3df652f6ec2a-gz\"",
        230,
    ),
    (
        "/sitemap-2.xml.gz",
        "\"00f0a280c08ccfe37316731e5f483af0-gz\"",
        288,
    ),
    (
        "/sitemap-3.xml.gz",
        "\"f7a7e88c23388ddc55d4b6b2363bf8d8-gz\"",
        176,
    ),
    (
        "/sitemap-1.xml",
        "\"f137f20c8913e7d0dd0b3df652f6ec2a\"",
        324,
    ),
    (
        "/sitemap-3.txt",
        "\"f7a7e88c23388ddc55d4b6b2363bf8d8-txt\"",
        30,
    ),
    ("/robots.txt", "\"65667a18afca8b25f3d33d7d22091ed9\"", 456),
];

#[test]
fn bad_groups_stop_the_start_with_one_line() {
    refused(
        &[("SITEMAP_SOURCE", "pages"), ("SITEMAP_GROUPS", "posts=p")],
        &["SITEMAP_GROUPS", "SITEMAP_SOURCE"],
    );
    refused(
        &[("SITEMAP_GROUPS", "Posts=p")],
        &["SITEMAP_GROUPS", "Posts"],
    );
    refused(
        &[("SITEMAP_GROUPS", "posts=p,posts=q")],
        &["SITEMAP_GROUPS", "repeated"],
    );
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    let with_group = |group: &str| {
        std::fs::write(
            &sites,
            format!("[[site]]\nbase_url = \"https://e.com\"\n[[site.group]]\n{group}\n"),
        )
        .unwrap();
    };
    let file = [("SITEMAP_SITES_FILE", sites.to_str().unwrap())];
    with_group("name = \"news\"\nsource = \"articles\"\nkind = \"news\"\nnews_language = \"en\"");
    refused(&file, &["SITEMAP_SITES_FILE", "news_name"]);
    with_group(
        "name = \"news\"\nsource = \"articles\"\nkind = \"news\"\nnews_name = \"The Daily\"",
    );
    refused(&file, &["SITEMAP_SITES_FILE", "news_language"]);
    with_group("name = \"bad-name\"\nsource = \"articles\"");
    refused(&file, &["SITEMAP_SITES_FILE", "bad-name"]);
    with_group("name = \"a\"\nsource = \"x\"\n[[site.group]]\nname = \"a\"\nsource = \"y\"");
    refused(&file, &["SITEMAP_SITES_FILE", "repeated"]);
    with_group("name = \"posts\"\nsource = \"p\"\nnews_name = \"The Daily\"");
    refused(&file, &["SITEMAP_SITES_FILE", "news_name"]);
}

/// Pages from the built-in table and a news group reading `articles`, from a sites file.
async fn publisher(db: &TestDb, window_secs: &str) -> (tempfile::TempDir, TestApp) {
    publisher_started(db, window_secs, true).await
}

/// [`publisher`], waiting for its first sweeps when `current`, else as it is when it listens.
async fn publisher_started(
    db: &TestDb,
    window_secs: &str,
    current: bool,
) -> (tempfile::TempDir, TestApp) {
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    std::fs::write(
        &sites,
        "[[site]]\nbase_url = \"https://www.example.com/\"\n\
         [[site.group]]\nname = \"pages\"\nsource = \"sitemap_entries\"\n\
         [[site.group]]\nname = \"news\"\nsource = \"articles\"\nkind = \"news\"\n\
         news_name = \"The Example Times\"\nnews_language = \"en\"\n",
    )
    .unwrap();
    let vars = [
        ("SITEMAP_SITES_FILE", sites.to_str().unwrap()),
        ("SITEMAP_NEWS_WINDOW_SECS", window_secs),
        ("SITEMAP_REFRESH_SECS", "1"),
    ];
    let app = match current {
        true => spawn_app(&db.url, &vars).await,
        false => spawn_app_listening(&db.url, &vars).await,
    };
    (dir, app)
}

/// The host of the publisher's sites file (it routes by Host).
const WWW: &str = "www.example.com";

async fn a_news_article_enters_and_then_ages_out_without_a_database_change(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/about")]).await;
    db.create_news_table("articles").await;
    let now = chrono::Utc::now();
    let window = 8;
    db.insert_articles(
        "articles",
        &[
            // Fresh; language from the group.
            (
                1,
                "/2026/11/merger",
                now,
                "Companies A & B in merger talks",
                None,
            ),
            // Fresh, in German, and published later than the first.
            (
                2,
                "/de/fusion",
                now,
                "Fusion: A und B verhandeln",
                Some("de"),
            ),
            // Older than the window: never listed.
            (
                3,
                "/2026/11/old",
                now - chrono::Duration::days(3),
                "Old news",
                None,
            ),
            // Not a language Google takes: left out and counted.
            (4, "/2026/11/bad", now, "Bad language", Some("english")),
            // Scheduled for tomorrow: not published yet.
            (
                5,
                "/2026/11/tomorrow",
                now + chrono::Duration::days(1),
                "Tomorrow",
                None,
            ),
        ],
    )
    .await;
    let (_dir, app) = publisher(&db, &window.to_string()).await;
    app.sweep().await;
    assert_eq!(
        locs_as(&app, WWW, "/sitemap_index.xml").await,
        [
            "https://www.example.com/sitemap-pages-1.xml.gz",
            "https://www.example.com/sitemap-news-1.xml.gz"
        ]
    );
    let listed = get_as(&app, WWW, "/sitemap-news-1.xml.gz").await;
    let etag = header(&listed, "etag").to_string();
    let xml = gunzip(&listed.bytes().await.unwrap());
    // Valid against Google's sitemap-news.xsd.
    assert_valid(&xml, Schema::Urlset);
    let text = String::from_utf8(xml.clone()).unwrap();
    assert!(
        text.contains("xmlns:news=\"http://www.google.com/schemas/sitemap-news/0.9\""),
        "{text}"
    );
    assert!(
        text.contains(
            "<url><loc>https://www.example.com/2026/11/merger</loc><news:news><news:publication>\
             <news:name>The Example Times</news:name><news:language>en</news:language>\
             </news:publication><news:publication_date>"
        ),
        "{text}"
    );
    assert!(
        text.contains("<news:title>Companies A &amp; B in merger talks</news:title>"),
        "{text}"
    );
    assert!(text.contains("<news:language>de</news:language>"), "{text}");
    assert_eq!(
        locs(&xml),
        [
            "https://www.example.com/2026/11/merger",
            "https://www.example.com/de/fusion"
        ]
    );
    let metrics = get_as(&app, WWW, "/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(
            "sitemapd_entries_skipped{reason=\"invalid_news\",site=\"https://www.example.com/\",group=\"news\"} 1"
        ),
        "{metrics}"
    );
    let pages_etag =
        header(&get_as(&app, WWW, "/sitemap-pages-1.xml.gz").await, "etag").to_string();

    // Nothing is written to the database from here on: time alone takes the articles out, and
    // the file's validators change with its bytes.
    let aged = eventually(
        "the articles to leave the news file",
        || async {
            let resp = get_as(&app, WWW, "/sitemap-news-1.xml.gz").await;
            let etag = header(&resp, "etag").to_string();
            (etag, locs(&gunzip(&resp.bytes().await.unwrap())))
        },
        |(_, locs)| locs.is_empty(),
    )
    .await;
    assert!(aged.1.is_empty(), "still listed: {:?}", aged.1);
    assert_ne!(aged.0, etag);
    let revalidated = app
        .get_with(
            "/sitemap-news-1.xml.gz",
            &[("host", "www.example.com"), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!(revalidated.status(), 200);
    assert_eq!(
        header(&get_as(&app, WWW, "/sitemap-pages-1.xml.gz").await, "etag"),
        pages_etag
    );
}

async fn check_and_export_go_through_every_group(backend: Backend) {
    let db = TestDb::on(backend).await;
    posts_and_pages_views(&db).await;
    db.exec("UPDATE pages SET slug = 'a b' WHERE id = 3").await;
    let vars = [
        ("DATABASE_URL", db.url.as_str()),
        ("SITEMAP_BASE_URL", BASE),
        ("SITEMAP_GROUPS", "posts=sitemap_posts,pages=sitemap_pages"),
        ("SITEMAP_PAGE_SIZE", "2"),
    ];
    let out = Sitemapd::new(["check"]).envs(&vars).output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // Counted per group, in configured order; the page with a space is encoded, not skipped.
    let posts = stdout.find("group posts (sitemap_posts)").expect(&stdout);
    let pages = stdout.find("group pages (sitemap_pages)").expect(&stdout);
    assert!(posts < pages, "{stdout}");
    assert_eq!(stdout.matches("entries served: 3").count(), 2, "{stdout}");

    let dir = export(&vars);
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    for name in [
        "sitemap-posts-1.xml.gz",
        "sitemap-posts-2.xml.gz",
        "sitemap-pages-1.xml.gz",
        "sitemap-pages-2.xml.gz",
        "sitemap-pages-2.txt",
        "sitemap_index.xml",
        "robots.txt",
    ] {
        assert!(files.contains(&name.to_string()), "{name} not in {files:?}");
    }
    assert!(
        !files.contains(&"sitemap-1.xml.gz".to_string()),
        "{files:?}"
    );
    let index = std::fs::read(dir.path().join("sitemap_index.xml")).unwrap();
    assert_eq!(locs(&index).len(), 4);
    let text = std::fs::read_to_string(dir.path().join("sitemap-pages-2.txt")).unwrap();
    assert_eq!(text, "https://www.example.com/a%20b\n");
}

async fn a_restart_after_articles_aged_serves_what_the_window_holds_now(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/about")]).await;
    db.create_news_table("articles").await;
    let published = chrono::Utc::now();
    db.insert_articles(
        "articles",
        &[(1, "/2026/11/flash", published, "Flash", None)],
    )
    .await;
    let window = 3;
    let (_dir, first) = publisher(&db, &window.to_string()).await;
    let listed = get_as(&first, WWW, "/sitemap-news-1.xml.gz").await;
    assert_eq!(locs(&gunzip(&listed.bytes().await.unwrap())).len(), 1);
    drop(first);
    // The stored file lists the article; let it age out while no service runs.
    let aged = published + chrono::Duration::seconds(window + 1);
    while chrono::Utc::now() < aged {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The restarted service's first sweep cannot save (PostgreSQL, MariaDB), so a request
    // comes while only the stored file is known.
    let held = db.hold_writes("sitemapd_pages").await;
    let (_dir, second) = publisher_started(&db, &window.to_string(), false).await;
    let early = {
        let url = second.url("/sitemap-news-1.xml.gz");
        tokio::spawn(async move {
            let resp = reqwest::Client::builder()
                .no_gzip()
                .build()
                .unwrap()
                .get(url)
                .header("host", "www.example.com")
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            (status, resp.bytes().await)
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    if let Some(held) = held {
        held.release().await;
    }
    // Not served yet (503), or served whole and as the window holds it now: never a body cut
    // short because its render met other rows than its ETag names.
    let (status, body) = early.await.unwrap();
    match status {
        503 => {}
        200 => {
            let body = body.expect("a whole body");
            assert!(locs(&gunzip(&body)).is_empty());
        }
        other => panic!("{other}"),
    }
    let served = eventually(
        "the news file after the restart",
        || async {
            let resp = get_as(&second, WWW, "/sitemap-news-1.xml.gz").await;
            match resp.status().as_u16() {
                200 => Some(gunzip(&resp.bytes().await.unwrap())),
                _ => None,
            }
        },
        Option::is_some,
    )
    .await
    .expect("served after the first sweep");
    assert!(String::from_utf8_lossy(&served)
        .trim_end()
        .ends_with("</urlset>"));
    assert!(locs(&served).is_empty());
}
