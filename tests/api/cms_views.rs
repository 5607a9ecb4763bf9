//! The user guide's MySQL views over CMS tables (WordPress's `wp_posts` alone and as four groups,
//! a PHP `articles` table), read from docs/guide.md itself and served from MariaDB: what they
//! promise is what is served.

use crate::helpers::*;

/// The ```sql block of docs/guide.md that creates `view`, with its database prefixes removed (the
/// test keeps the CMS tables and the view in one database of its own).
fn guide_view(view: &str) -> String {
    guide_block("sql", &format!("CREATE VIEW sitemapd.{view} "))
        .replace("sitemapd.", "")
        .replace("wordpress.", "")
        .replace("cms.", "")
}

/// Creates a guide's view in the connection collation the `mysql` client uses
/// (utf8mb4_general_ci), not sitemapd's (utf8mb4_unicode_ci), as a site owner does: MariaDB then
/// refuses a UNION whose halves give `loc` different collations.
async fn create_view(db: &TestDb, view: &str) {
    db.exec(&format!(
        "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci; {}",
        guide_view(view)
    ))
    .await;
}

/// The parts of WordPress's wp_posts and wp_options the view reads, as WordPress declares them
/// (the front page is the static page "about").
const WP_POSTS: &str = "CREATE TABLE wp_posts (
    ID bigint(20) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    post_date datetime NOT NULL DEFAULT '0000-00-00 00:00:00',
    post_title text NOT NULL DEFAULT '',
    post_excerpt text NOT NULL DEFAULT '',
    post_modified_gmt datetime NOT NULL DEFAULT '0000-00-00 00:00:00',
    post_status varchar(20) NOT NULL DEFAULT 'publish',
    post_password varchar(255) NOT NULL DEFAULT '',
    post_name varchar(200) NOT NULL DEFAULT '',
    post_type varchar(20) NOT NULL DEFAULT 'post',
    post_parent bigint(20) unsigned NOT NULL DEFAULT 0
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  INSERT INTO wp_posts (ID, post_date, post_modified_gmt, post_status, post_password, post_name, post_type, post_parent) VALUES
    (1, '2024-03-05 10:00:00', '2024-03-06 08:30:00', 'publish', '', 'hello-world', 'post', 0),
    (2, '2024-01-01 00:00:00', '2024-02-01 00:00:00', 'publish', '', 'about', 'page', 0),
    (3, '2024-01-02 00:00:00', '2024-02-02 00:00:00', 'publish', '', 'team', 'page', 2),
    (4, '2024-04-01 00:00:00', '2024-04-01 00:00:00', 'draft', '', 'not-yet', 'post', 0),
    (5, '2024-04-02 00:00:00', '2024-04-02 00:00:00', 'publish', 'secret', 'members', 'post', 0),
    (6, '2024-04-03 00:00:00', '2024-04-03 00:00:00', 'inherit', '', '1-revision-v1', 'revision', 1),
    (7, '2024-05-09 00:00:00', '0000-00-00 00:00:00', 'publish', '', 'caf%c3%a9-cr%c3%a8me', 'post', 0),
    (8, '2024-05-10 00:00:00', '2024-05-10 00:00:00', 'publish', '', 'logo', 'attachment', 0),
    (9, '2024-01-03 00:00:00', '2024-02-03 00:00:00', 'publish', '', 'lead', 'page', 3);
  CREATE TABLE wp_options (
    option_id bigint(20) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    option_name varchar(191) NOT NULL DEFAULT '' UNIQUE,
    option_value longtext NOT NULL
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  INSERT INTO wp_options (option_name, option_value) VALUES ('show_on_front', 'page'), ('page_on_front', '2'), ('posts_per_page', '10');";

async fn wordpress() -> (TestDb, TestApp) {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(WP_POSTS).await;
    create_view(&db, "sitemap_wp").await;
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_SOURCE", "sitemap_wp"),
            ("SITEMAP_BASE_URL", "https://blog.example.com"),
            ("SITEMAP_REFRESH_SECS", "1"),
        ],
    )
    .await;
    (db, app)
}

async fn urlset(app: &TestApp) -> String {
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_valid(&xml, Schema::Urlset);
    String::from_utf8(xml).unwrap()
}

/// [`urlset`] after a sweep: what the service serves once it has seen the database's changes.
async fn swept_urlset(app: &TestApp) -> String {
    app.sweep().await;
    urlset(app).await
}

/// The home page's `<url>` once it lists the latest posts: dated by the newest post it shows.
const HOME_OF_POSTS: &str = "<url><loc>https://blog.example.com/</loc>\
         <lastmod>2024-04-02T00:00:00+00:00</lastmod><changefreq>daily</changefreq></url>";

#[tokio::test]
async fn the_wordpress_view_serves_published_posts_and_pages_with_their_gmt_dates() {
    let (db, app) = wordpress().await;
    let xml = urlset(&app).await;
    assert_eq!(
        locs(xml.as_bytes()),
        [
            "https://blog.example.com/2024/03/hello-world/",
            // The static front page is the home page.
            "https://blog.example.com/",
            "https://blog.example.com/about/team/",
            "https://blog.example.com/2024/05/caf%c3%a9-cr%c3%a8me/",
            // Nested two levels: the whole path.
            "https://blog.example.com/about/team/lead/",
        ]
    );
    assert!(xml.contains(
        "<url><loc>https://blog.example.com/2024/03/hello-world/</loc>\
         <lastmod>2024-03-06T08:30:00+00:00</lastmod><changefreq>weekly</changefreq></url>"
    ));
    assert!(xml.contains(
        "<url><loc>https://blog.example.com/</loc>\
         <lastmod>2024-02-01T00:00:00+00:00</lastmod><changefreq>monthly</changefreq></url>"
    ));
    // WordPress's zero date is no date: the tag is left out, never invented.
    assert!(xml.contains(
        "<url><loc>https://blog.example.com/2024/05/caf%c3%a9-cr%c3%a8me/</loc>\
         <changefreq>weekly</changefreq></url>"
    ));

    // The home page lists the latest posts from now on: it is listed, dated by the latest
    // change among the posts it shows (the password-protected one too: its title is there),
    // and the former front page is at its own path again.
    db.exec("UPDATE wp_options SET option_value = 'posts' WHERE option_name = 'show_on_front'")
        .await;
    let xml = swept_urlset(&app).await;
    assert!(xml.contains(HOME_OF_POSTS), "{xml}");
    // It shows the newest two posts only: the one edited now, older, does not date it.
    db.exec(
        "UPDATE wp_options SET option_value = '2' WHERE option_name = 'posts_per_page';
         UPDATE wp_posts SET post_modified_gmt = '2024-06-01 00:00:00' WHERE ID = 1;",
    )
    .await;
    let xml = swept_urlset(&app).await;
    assert!(
        xml.contains(HOME_OF_POSTS) && xml.contains("<lastmod>2024-06-01T00:00:00+00:00</lastmod>"),
        "{xml}"
    );
    assert!(
        xml.contains("<loc>https://blog.example.com/about/</loc>"),
        "{xml}"
    );
}

#[tokio::test]
async fn publishing_a_draft_shows_within_the_refresh_period() {
    let (db, app) = wordpress().await;
    db.exec("UPDATE wp_posts SET post_status = 'publish', post_modified_gmt = '2024-06-01 12:00:00' WHERE ID = 4")
        .await;
    let app_ref = &app;
    let served = eventually(
        "the published post in the view's sitemap",
        // Until the view's refresh dates the file anew, a render of the published post is
        // not sent under the old ETag: those requests are answered 503.
        move || async move {
            let resp = app_ref.get("/sitemap-1.xml.gz").await;
            match resp.status().as_u16() {
                200 => locs(&gunzip(&resp.bytes().await.unwrap())),
                _ => Vec::new(),
            }
        },
        |served| served.len() == 6,
    )
    .await;
    assert!(
        served.contains(&"https://blog.example.com/2024/04/not-yet/".to_string()),
        "{served:?}"
    );
}

#[tokio::test]
async fn the_articles_view_serves_each_language_version_with_utc_dates() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    // A PHP application's table, its TIMESTAMP kept by the server in its own time zone.
    db.exec(
        "CREATE TABLE articles (
           id int unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
           lang char(2) NOT NULL,
           title varchar(255) NOT NULL,
           online tinyint(1) NOT NULL DEFAULT 1,
           featured tinyint(1) NOT NULL DEFAULT 0,
           updated_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP
         ) DEFAULT CHARSET=utf8mb4;
         SET time_zone = '+02:00';
         INSERT INTO articles (id, lang, title, online, featured, updated_at) VALUES
           (12, 'fr', 'Éditorial', 1, 1, '2024-05-01 14:00:00'),
           (13, 'en', 'Editorial', 1, 0, '2024-05-01 15:30:00'),
           (14, 'fr', 'Brouillon', 0, 0, '2024-05-02 09:00:00');
         SET time_zone = '+00:00';",
    )
    .await;
    db.exec(&guide_view("sitemap_articles")).await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "sitemap_articles")]).await;
    let xml = urlset(&app).await;
    assert_eq!(
        locs(xml.as_bytes()),
        [
            "https://www.example.com/fr/article.php?AIndex=12",
            "https://www.example.com/en/article.php?AIndex=13",
        ]
    );
    assert!(xml.contains(
        "<url><loc>https://www.example.com/fr/article.php?AIndex=12</loc>\
         <lastmod>2024-05-01T12:00:00+00:00</lastmod><changefreq>weekly</changefreq>\
         <priority>0.8</priority></url>"
    ));
    assert!(xml.contains(
        "<url><loc>https://www.example.com/en/article.php?AIndex=13</loc>\
         <lastmod>2024-05-01T13:30:00+00:00</lastmod><changefreq>weekly</changefreq></url>"
    ));
}

#[tokio::test]
async fn a_priority_that_is_no_number_is_dropped_not_read_as_zero() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE pages (id int PRIMARY KEY, path varchar(100), weight varchar(20));
         INSERT INTO pages VALUES (1, '/a', 'high'), (2, '/b', ''), (3, '/c', '0.7'), (4, '/d', ' 1 ');
         CREATE VIEW weighted AS SELECT id, path AS loc, NULL AS lastmod, NULL AS changefreq,
           weight AS priority FROM pages;",
    )
    .await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "weighted")]).await;
    let xml = urlset(&app).await;
    assert!(
        xml.contains("<url><loc>https://www.example.com/a</loc></url>"),
        "{xml}"
    );
    assert!(
        xml.contains("<url><loc>https://www.example.com/b</loc></url>"),
        "{xml}"
    );
    assert!(
        xml.contains("<loc>https://www.example.com/c</loc><priority>0.7</priority>"),
        "{xml}"
    );
    assert!(
        xml.contains("<loc>https://www.example.com/d</loc><priority>1.0</priority>"),
        "{xml}"
    );
}

/// The tables of WordPress the group views read, as WordPress declares them (the columns used).
const WP_SITE: &str = "CREATE TABLE wp_posts (
    ID bigint(20) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    post_date datetime NOT NULL DEFAULT '0000-00-00 00:00:00',
    post_date_gmt datetime NOT NULL DEFAULT '0000-00-00 00:00:00',
    post_title text NOT NULL,
    post_excerpt text NOT NULL DEFAULT '',
    post_modified_gmt datetime NOT NULL DEFAULT '0000-00-00 00:00:00',
    post_status varchar(20) NOT NULL DEFAULT 'publish',
    post_password varchar(255) NOT NULL DEFAULT '',
    post_name varchar(200) NOT NULL DEFAULT '',
    post_type varchar(20) NOT NULL DEFAULT 'post',
    post_parent bigint(20) unsigned NOT NULL DEFAULT 0
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  CREATE TABLE wp_options (
    option_id bigint(20) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    option_name varchar(191) NOT NULL DEFAULT '' UNIQUE,
    option_value longtext NOT NULL
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  CREATE TABLE wp_terms (
    term_id bigint(20) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name varchar(200) NOT NULL DEFAULT '',
    slug varchar(200) NOT NULL DEFAULT ''
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  CREATE TABLE wp_term_taxonomy (
    term_taxonomy_id bigint(20) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    term_id bigint(20) unsigned NOT NULL DEFAULT 0,
    taxonomy varchar(32) NOT NULL DEFAULT '',
    description longtext NOT NULL DEFAULT '',
    parent bigint(20) unsigned NOT NULL DEFAULT 0,
    count bigint(20) NOT NULL DEFAULT 0
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  CREATE TABLE wp_term_relationships (
    object_id bigint(20) unsigned NOT NULL DEFAULT 0,
    term_taxonomy_id bigint(20) unsigned NOT NULL DEFAULT 0,
    PRIMARY KEY (object_id, term_taxonomy_id)
  ) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;
  INSERT INTO wp_posts (ID, post_date, post_date_gmt, post_title, post_modified_gmt, post_status, post_password, post_name, post_type, post_parent) VALUES
    (1, UTC_TIMESTAMP() - INTERVAL 1 HOUR, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 'Merger talks & more', UTC_TIMESTAMP() - INTERVAL 1 HOUR, 'publish', '', 'merger', 'post', 0),
    (2, '2024-01-01 00:00:00', '2024-01-01 00:00:00', 'About', '2024-02-01 00:00:00', 'publish', '', 'about', 'page', 0),
    (3, '2024-01-02 00:00:00', '2024-01-02 00:00:00', 'Team', '2024-02-02 00:00:00', 'publish', '', 'team', 'page', 2),
    (4, '2024-01-03 00:00:00', '2024-01-03 00:00:00', 'Lead', '2024-02-03 00:00:00', 'publish', '', 'lead', 'page', 3),
    (5, '2024-01-04 00:00:00', '2024-01-04 00:00:00', 'Home', '2024-02-04 00:00:00', 'publish', '', 'home', 'page', 0),
    (6, '2024-04-01 00:00:00', '0000-00-00 00:00:00', 'Draft', '2024-04-01 00:00:00', 'draft', '', 'not-yet', 'post', 0),
    (7, '2024-03-05 10:00:00', '2024-03-05 09:00:00', 'Old news', '2024-03-06 08:30:00', 'publish', '', 'old-news', 'post', 0),
    (8, '2024-01-05 00:00:00', '2024-01-05 00:00:00', 'Members', '2024-02-05 00:00:00', 'publish', 'secret', 'members', 'page', 0);
  INSERT INTO wp_options (option_name, option_value) VALUES ('show_on_front', 'page'), ('page_on_front', '5'), ('posts_per_page', '10');
  INSERT INTO wp_terms (term_id, name, slug) VALUES (1, 'Uncategorized', 'uncategorized'), (2, 'World', 'world'), (3, 'Europe', 'europe');
  INSERT INTO wp_term_taxonomy (term_taxonomy_id, term_id, taxonomy, parent, count) VALUES
    (1, 1, 'category', 0, 0), (2, 2, 'category', 0, 2), (3, 3, 'category', 2, 1);
  INSERT INTO wp_term_relationships (object_id, term_taxonomy_id) VALUES (1, 2), (7, 2), (7, 3);";

/// The host of the guide's sites file with the four groups.
const NEWS: &str = "news.example.com";

#[tokio::test]
async fn the_wordpress_group_views_serve_posts_pages_categories_and_news_apart() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(WP_SITE).await;
    for view in [
        "sitemap_wp_posts",
        "sitemap_wp_pages",
        "sitemap_wp_categories",
        "sitemap_wp_news",
    ] {
        create_view(&db, view).await;
    }
    // Page 2 and category 2 share the id: the image is the page's (posts and pages take the
    // extension tables in the guide's file, categories do not).
    db.insert_images(&[(2, "https://cdn.example.net/about.jpg")])
        .await;
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    // The guide's sites file with the four groups.
    std::fs::write(&sites, guide_block("toml", "kind = \"news\"")).unwrap();
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_SITES_FILE", sites.to_str().unwrap()),
            ("SITEMAP_REFRESH_SECS", "1"),
            // One connection: every statement runs again on the connection that prepared it
            // (MariaDB has refused second runs of statements over some views).
            ("DATABASE_MAX_CONNECTIONS", "1"),
        ],
    )
    .await;
    let get = |path: &'static str| {
        let app = &app;
        async move {
            let xml = xml_as_when_free(app, NEWS, path).await;
            assert_valid(&xml, Schema::Urlset);
            String::from_utf8(xml).unwrap()
        }
    };
    assert_eq!(
        locs_as(&app, NEWS, "/sitemap_index.xml").await,
        [
            "https://news.example.com/sitemap-posts-1.xml.gz",
            "https://news.example.com/sitemap-pages-1.xml.gz",
            "https://news.example.com/sitemap-categories-1.xml.gz",
            "https://news.example.com/sitemap-news-1.xml.gz",
        ]
    );
    // The front page is a static page: it is /, and the posts group has no home row.
    let posts = get("/sitemap-posts-1.xml.gz").await;
    let year_month = chrono::Utc::now() - chrono::Duration::hours(1);
    let merger = format!(
        "https://news.example.com/{}/merger/",
        year_month.format("%Y/%m")
    );
    // The post's date is local time in WordPress; the test server's local time is UTC.
    assert_eq!(
        locs(posts.as_bytes()),
        [
            merger.clone(),
            "https://news.example.com/2024/03/old-news/".into()
        ]
    );
    let pages = get("/sitemap-pages-1.xml.gz").await;
    assert_eq!(
        locs(pages.as_bytes()),
        [
            "https://news.example.com/about/",
            // (`locs` reads every `loc`, the image's too)
            "https://cdn.example.net/about.jpg",
            "https://news.example.com/about/team/",
            "https://news.example.com/about/team/lead/",
            "https://news.example.com/",
        ]
    );
    assert!(
        pages.contains("<loc>https://news.example.com/about/</loc><lastmod>2024-02-01T00:00:00+00:00</lastmod><changefreq>monthly</changefreq><image:image>"),
        "{pages}"
    );
    let categories = get("/sitemap-categories-1.xml.gz").await;
    // The child category at its whole path, as WordPress links it.
    assert_eq!(
        locs(categories.as_bytes()),
        [
            "https://news.example.com/category/world/",
            "https://news.example.com/category/world/europe/"
        ]
    );
    assert!(!categories.contains("image"), "{categories}");
    // Dated by its latest post, the merger.
    let lastmod_of = |xml: &str, loc: &str| {
        url_fields(xml.as_bytes())
            .into_iter()
            .find(|fields| fields["loc"] == loc)
            .and_then(|fields| fields.get("lastmod").cloned())
    };
    assert!(lastmod_of(&posts, &merger).is_some(), "{posts}");
    assert_eq!(
        lastmod_of(&categories, "https://news.example.com/category/world/"),
        lastmod_of(&posts, &merger)
    );
    assert_eq!(
        lastmod_of(
            &categories,
            "https://news.example.com/category/world/europe/"
        )
        .as_deref(),
        Some("2024-03-06T08:30:00+00:00")
    );
    // A parent's archive shows its children's posts: an edit of a post filed under the child
    // only dates the parent too.
    db.exec(
        "DELETE FROM wp_term_relationships WHERE object_id = 7 AND term_taxonomy_id = 2;
         UPDATE wp_term_taxonomy SET count = 1 WHERE term_taxonomy_id = 2;
         UPDATE wp_posts SET post_modified_gmt = UTC_TIMESTAMP() - INTERVAL 30 MINUTE WHERE ID = 7;",
    )
    .await;
    app.sweep().await;
    app.sweep().await;
    let categories = get("/sitemap-categories-1.xml.gz").await;
    let europe = lastmod_of(
        &categories,
        "https://news.example.com/category/world/europe/",
    );
    assert!(
        europe.as_deref() > Some("2024-03-06T08:30:00+00:00"),
        "{categories}"
    );
    assert_eq!(
        lastmod_of(&categories, "https://news.example.com/category/world/"),
        europe
    );
    // Only the article of the last 48 hours, with the group's publication.
    let news = get("/sitemap-news-1.xml.gz").await;
    assert_eq!(locs(news.as_bytes()), [merger]);
    assert!(
        news.contains("<news:name>The Example Times</news:name><news:language>en</news:language>")
            && news.contains("<news:title>Merger talks &amp; more</news:title>"),
        "{news}"
    );

    // The home page lists the latest posts from now on: it joins the posts group, and the
    // former front page takes its own path. The categories' file does not change.
    let categories_etag = header(
        &head_as(&app, NEWS, "/sitemap-categories-1.xml.gz").await,
        "etag",
    )
    .to_string();
    db.exec("UPDATE wp_options SET option_value = 'posts' WHERE option_name = 'show_on_front'")
        .await;
    app.sweep().await;
    app.sweep().await;
    let posts = get("/sitemap-posts-1.xml.gz").await;
    assert_eq!(locs(posts.as_bytes())[0], "https://news.example.com/");
    let pages = get("/sitemap-pages-1.xml.gz").await;
    assert!(
        pages.contains("<loc>https://news.example.com/home/</loc>"),
        "{pages}"
    );
    assert_eq!(
        header(
            &head_as(&app, NEWS, "/sitemap-categories-1.xml.gz").await,
            "etag"
        ),
        categories_etag
    );
}

/// A view whose column is an aggregate subquery (a category dated by its latest post, with
/// `MAX()`): MariaDB refuses a second run of a kept prepared statement summing it, so the
/// change check must not keep it. One connection, so every statement runs where it ran before.
#[tokio::test]
async fn a_view_with_an_aggregate_column_is_checked_for_changes_again_and_again() {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE posts (id int PRIMARY KEY, category int, modified datetime);
         INSERT INTO posts VALUES (1, 1, '2024-01-01 00:00:00'), (2, 1, '2024-02-01 00:00:00');
         CREATE TABLE categories (id int PRIMARY KEY, slug text);
         INSERT INTO categories VALUES (1, 'world');
         CREATE VIEW sitemap_categories AS SELECT c.id AS id,
           CONCAT('/category/', c.slug, '/') AS loc,
           (SELECT MAX(p.modified) FROM posts p WHERE p.category = c.id) AS lastmod,
           NULL AS changefreq, NULL AS priority FROM categories c;",
    )
    .await;
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_SOURCE", "sitemap_categories"),
            ("DATABASE_MAX_CONNECTIONS", "1"),
        ],
    )
    .await;
    for _ in 0..3 {
        app.sweep().await;
    }
    db.exec("UPDATE posts SET modified = '2024-03-01 00:00:00' WHERE id = 1")
        .await;
    let xml = swept_urlset(&app).await;
    assert!(
        xml.contains("<lastmod>2024-03-01T00:00:00+00:00</lastmod>"),
        "{xml}"
    );
}

/// The parts of MediaWiki 1.39's `page` and `page_props` the MediaWiki views read, as MediaWiki's
/// installer declares them on MariaDB (binary strings, `page_touched` as 14 digits), with pages
/// whose titles hold what `wfUrlencode` escapes and what it keeps, a redirect, a `__NOINDEX__`
/// page and a talk page.
const MW_MARIADB: &str = "CREATE TABLE page (
    page_id int(10) unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,
    page_namespace int(11) NOT NULL,
    page_title varbinary(255) NOT NULL,
    page_is_redirect tinyint(3) unsigned NOT NULL DEFAULT 0,
    page_touched binary(14) NOT NULL,
    page_latest int(10) unsigned NOT NULL,
    UNIQUE KEY page_name_title (page_namespace, page_title)
  ) DEFAULT CHARSET=binary;
  CREATE TABLE page_props (
    pp_page int(10) unsigned NOT NULL,
    pp_propname varbinary(60) NOT NULL,
    pp_value blob NOT NULL,
    PRIMARY KEY (pp_page, pp_propname)
  ) DEFAULT CHARSET=binary;";

/// The same tables as MediaWiki's installer declares them on PostgreSQL (schema `mediawiki`,
/// text, `page_touched` a TIMESTAMPTZ).
const MW_POSTGRES: &str = "CREATE SCHEMA mediawiki;
  CREATE TABLE mediawiki.page (
    page_id serial PRIMARY KEY,
    page_namespace integer NOT NULL,
    page_title text NOT NULL,
    page_is_redirect smallint NOT NULL DEFAULT 0,
    page_touched timestamptz NOT NULL,
    page_latest integer NOT NULL,
    UNIQUE (page_namespace, page_title)
  );
  CREATE TABLE mediawiki.page_props (
    pp_page integer NOT NULL,
    pp_propname text NOT NULL,
    pp_value text NOT NULL,
    PRIMARY KEY (pp_page, pp_propname)
  );";

/// The pages: id, namespace, title as MediaWiki stores it, redirect, page_touched (UTC).
const MW_PAGES: [(u32, u32, &str, u8, &str); 11] = [
    (1, 0, "Main_Page", 0, "2024-03-01 12:00:00"),
    (2, 0, "Q&A", 0, "2024-03-02 12:00:00"),
    (3, 0, "Don't_\"quote\"_me", 0, "2024-03-03 12:00:00"),
    (4, 0, "A+B=C", 0, "2024-03-04 12:00:00"),
    (
        5,
        0,
        "What?_Back\\slash_100%_pure",
        0,
        "2024-03-05 12:00:00",
    ),
    (6, 0, "Café_crème", 0, "2024-03-06 12:00:00"),
    (7, 0, "Caret^and`backtick`", 0, "2024-03-07 12:00:00"),
    (8, 0, "Redirect_to_Q&A", 1, "2024-03-08 12:00:00"),
    (9, 0, "Hidden", 0, "2024-03-09 12:00:00"),
    (10, 1, "Talk_about_Q&A", 0, "2024-03-10 12:00:00"),
    (
        11,
        3000,
        "Kept_;@$!*(),/~:_as_they_are",
        0,
        "2024-03-11 12:00:00",
    ),
];

/// The statements that write [`MW_PAGES`] (page 9 a `__NOINDEX__` page) into `page` and
/// `page_props` as MediaWiki writes them on `backend`: on MariaDB `page_touched` as 14 digits
/// and `\` escaped in literals, on PostgreSQL a timestamp in the schema `mediawiki`.
fn mediawiki_rows(backend: Backend) -> String {
    let (schema, backslash) = match backend {
        Backend::MariaDb => ("", "\\\\"),
        _ => ("mediawiki.", "\\"),
    };
    let rows: Vec<String> = MW_PAGES
        .iter()
        .map(|(id, ns, title, redirect, touched)| {
            let title = title.replace('\'', "''").replace('\\', backslash);
            let touched = match backend {
                Backend::MariaDb => touched.replace(['-', ' ', ':'], ""),
                _ => format!("{touched}+00"),
            };
            format!("({id}, {ns}, '{title}', {redirect}, '{touched}', {id})")
        })
        .collect();
    format!(
        "INSERT INTO {schema}page (page_id, page_namespace, page_title, page_is_redirect, page_touched, page_latest)
         VALUES {};
         INSERT INTO {schema}page_props (pp_page, pp_propname, pp_value)
         VALUES (9, 'noindex', ''), (2, 'displaytitle', 'Q&A');",
        rows.join(", ")
    )
}

/// What MediaWiki's `Title::getFullURL()` gives for the listed pages (main namespace and the
/// namespace added to the view, `Recipe:`), in id order.
const MW_URLS: [&str; 8] = [
    "https://wiki.example.com/wiki/Main_Page",
    "https://wiki.example.com/wiki/Q%26A",
    "https://wiki.example.com/wiki/Don%27t_%22quote%22_me",
    "https://wiki.example.com/wiki/A%2BB%3DC",
    "https://wiki.example.com/wiki/What%3F_Back%5Cslash_100%25_pure",
    "https://wiki.example.com/wiki/Caf%C3%A9_cr%C3%A8me",
    "https://wiki.example.com/wiki/Caret%5Eand%60backtick%60",
    "https://wiki.example.com/wiki/Recipe:Kept_;@$!*(),/~:_as_they_are",
];

/// The guide's MediaWiki view for `backend`, with the guide's one-line change adding the
/// namespace 3000 (`Recipe:`).
fn mediawiki_view(backend: Backend) -> String {
    let view = match backend {
        Backend::MariaDb => guide_view("sitemap_mw").replace("mediawiki.", ""),
        _ => guide_block("sql", "CREATE VIEW sitemap_mw ").to_string(),
    };
    let main = "WHEN 0 THEN ''\n";
    assert!(view.contains(main), "{view}");
    view.replace(
        main,
        "WHEN 0 THEN ''\n               WHEN 3000 THEN 'Recipe:'\n",
    )
}

async fn mediawiki(backend: Backend) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    match backend {
        Backend::MariaDb => {
            db.exec(MW_MARIADB).await;
            db.exec(&mediawiki_rows(backend)).await;
            db.exec(&format!(
                "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci; {}",
                mediawiki_view(backend)
            ))
            .await;
        }
        _ => {
            db.exec(MW_POSTGRES).await;
            db.exec(&mediawiki_rows(backend)).await;
            db.exec(&mediawiki_view(backend)).await;
        }
    }
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_SOURCE", "sitemap_mw"),
            ("SITEMAP_BASE_URL", "https://wiki.example.com"),
            ("SITEMAP_REFRESH_SECS", "1"),
        ],
    )
    .await;
    (db, app)
}

async fn the_mediawiki_view_serves_content_pages_as_mediawiki_links_them(backend: Backend) {
    let (db, app) = mediawiki(backend).await;
    let xml = urlset(&app).await;
    assert_eq!(locs(xml.as_bytes()), MW_URLS, "{xml}");
    assert!(
        xml.contains(
            "<url><loc>https://wiki.example.com/wiki/Q%26A</loc>\
             <lastmod>2024-03-02T12:00:00+00:00</lastmod></url>"
        ),
        "{xml}"
    );
    // An edit moves page_touched; the page turned into a redirect leaves.
    let (page, touched) = match backend {
        Backend::MariaDb => ("page", "20240601000000"),
        _ => ("mediawiki.page", "2024-06-01 00:00:00+00"),
    };
    db.exec(&format!(
        "UPDATE {page} SET page_touched = '{touched}' WHERE page_id = 2;
         UPDATE {page} SET page_is_redirect = 1 WHERE page_id = 4;"
    ))
    .await;
    let xml = swept_urlset(&app).await;
    assert!(
        xml.contains("<lastmod>2024-06-01T00:00:00+00:00</lastmod>") && !xml.contains("A%2BB%3DC"),
        "{xml}"
    );
}

#[tokio::test]
async fn the_mediawiki_view_on_mariadb_serves_content_pages_as_mediawiki_links_them() {
    the_mediawiki_view_serves_content_pages_as_mediawiki_links_them(Backend::MariaDb).await;
}

#[tokio::test]
async fn the_mediawiki_view_on_postgres_serves_content_pages_as_mediawiki_links_them() {
    the_mediawiki_view_serves_content_pages_as_mediawiki_links_them(Backend::Postgres).await;
}
