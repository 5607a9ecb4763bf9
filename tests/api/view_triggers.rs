//! A MariaDB view watched by row triggers: `migrate` (and `serve` at start) finds the tables
//! behind the view and puts triggers on them that log the touched keys under the view's name.
//! A key the view's ids come from costs the block of ids holding it in its file (read again,
//! the file's fingerprint made from its blocks); a write to another table (a settings table) shows within the refresh period; a
//! trigger never fails the CMS's own statement; `check` says when a table lost its triggers, and
//! `migrate --unwatch` removes them.

use crate::helpers::*;

/// `cms_pages` (ids 1 to 30, those `published`) and `cms_settings` (the URL prefix) behind the
/// view `cms_sitemap`.
async fn cms_with_settings() -> TestDb {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE cms_pages (page_id bigint unsigned PRIMARY KEY, path varchar(200) NOT NULL,
           published tinyint NOT NULL DEFAULT 1);
         INSERT INTO cms_pages (page_id, path) SELECT seq, CONCAT('/page/', seq) FROM seq_1_to_30;
         CREATE TABLE cms_settings (setting_id int PRIMARY KEY AUTO_INCREMENT,
           name varchar(50) NOT NULL UNIQUE, value varchar(200) NOT NULL);
         INSERT INTO cms_settings (name, value) VALUES ('prefix', '/site');
         CREATE VIEW cms_sitemap AS SELECT p.page_id AS id, CONCAT(s.value, p.path) AS loc,
           NULL AS lastmod, NULL AS changefreq, NULL AS priority
         FROM cms_pages p JOIN cms_settings s ON s.name = 'prefix' WHERE p.published = 1;",
    )
    .await;
    db
}

fn migrate(db: &TestDb, args: &[&str]) -> (String, Option<i32>) {
    let out = Sitemapd::new(std::iter::once("migrate").chain(args.iter().copied()))
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_SOURCE", "cms_sitemap")
        .output();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code(),
    )
}

fn check(db: &TestDb) -> (String, Option<i32>) {
    let out = Sitemapd::new(["check"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_SOURCE", "cms_sitemap")
        .output();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code(),
    )
}

async fn our_triggers(db: &TestDb) -> i64 {
    db.scalar(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS \
         WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'sitemapd%' \
         AND EVENT_OBJECT_TABLE IN ('cms_pages', 'cms_settings')",
    )
    .await
}

/// Files measured (read whole or patched), summaries taken, so far.
async fn reads(app: &TestApp) -> (f64, f64) {
    (
        app.metric("sitemapd_files_measured_total").await,
        app.metric("sitemapd_summary_checks_total").await,
    )
}

/// Blocks of ids read again to patch files, so far.
async fn blocks_read(app: &TestApp) -> f64 {
    app.metric("sitemapd_blocks_read_total").await
}

async fn etag(app: &TestApp, path: &str) -> String {
    let resp = app.client.head(app.url(path)).send().await.unwrap();
    header(&resp, "etag").to_string()
}

/// A service of 10 URLs a file over the view, its files' summaries taken after the first sweep
/// (the tables written more than a second before it starts: their commit times are kept to the
/// second) and that pass ended.
async fn settled_app(db: &TestDb, refresh: &str) -> TestApp {
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let vars = [
        ("SITEMAP_SOURCE", "cms_sitemap"),
        ("SITEMAP_PAGE_SIZE", "10"),
        ("SITEMAP_REFRESH_SECS", refresh),
    ];
    let app = spawn_app(&db.url, &vars).await;
    let mut last = reads(&app).await;
    for _ in 0..60 {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let now = reads(&app).await;
        if now == last && now.1 >= 1.0 {
            return app;
        }
        last = now;
    }
    panic!("the first sweep's files were never summarised: {last:?}");
}

#[tokio::test]
async fn migrate_watches_the_tables_behind_a_mariadb_view_and_says_which_log_keys() {
    let db = cms_with_settings().await;
    let (said, code) = migrate(&db, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("cms_sitemap: watching"), "{said}");
    assert!(
        said.contains(".cms_pages") && said.contains(".cms_settings"),
        "{said}"
    );
    // The settings' keys are not the view's ids: a change there is any row's.
    assert!(
        said.contains("a change to") && said.contains("cms_settings (whose keys"),
        "{said}"
    );
    assert_eq!(our_triggers(&db).await, 6, "three events on each table");
    // Again: nothing added, nothing lost.
    let (again, _) = migrate(&db, &[]);
    assert!(again.contains("cms_sitemap: watching"), "{again}");
    assert_eq!(our_triggers(&db).await, 6);
}

#[tokio::test]
async fn an_edit_behind_a_watched_mariadb_view_reads_its_own_block_only() {
    let db = cms_with_settings().await;
    // Ids 300 apart: each file of 10 spans several blocks of 1,024 ids; pages dated.
    db.exec(
        "UPDATE cms_pages SET page_id = page_id * 300 ORDER BY page_id DESC;
         ALTER TABLE cms_pages ADD COLUMN modified datetime NOT NULL DEFAULT '2024-01-01';
         CREATE OR REPLACE VIEW cms_sitemap AS SELECT p.page_id AS id,
           CONCAT(s.value, p.path) AS loc, p.modified AS lastmod, NULL AS changefreq,
           NULL AS priority
         FROM cms_pages p JOIN cms_settings s ON s.name = 'prefix' WHERE p.published = 1;",
    )
    .await;
    // Refreshes an hour apart: only the triggers can show the edit.
    let app = settled_app(&db, "3600").await;
    let (untouched, before) = (
        etag(&app, "/sitemap-3.xml.gz").await,
        etag(&app, "/sitemap-2.xml.gz").await,
    );
    let ((measured, summaries), blocks) = (reads(&app).await, blocks_read(&app).await);
    // An editor's save: a new date, the same URL.
    db.exec("UPDATE cms_pages SET modified = '2024-05-06 07:08:09' WHERE page_id = 4500")
        .await;
    eventually(
        "a new ETag for the file holding page 15",
        || etag(&app, "/sitemap-2.xml.gz"),
        |now| *now != before,
    )
    .await;
    assert_eq!(etag(&app, "/sitemap-3.xml.gz").await, untouched);
    assert_eq!(
        reads(&app).await,
        (measured + 1.0, summaries),
        "one file measured, no summary"
    );
    assert_eq!(
        blocks_read(&app).await,
        blocks + 1.0,
        "one block of it read"
    );
    // The whole file rendered makes the bytes the patch fingerprinted: a render that found
    // others would be held back and have the file read whole.
    let patched = etag(&app, "/sitemap-2.xml").await;
    let resp = app.get("/sitemap-2.xml").await;
    assert_eq!(header(&resp, "etag"), patched);
    let body = resp.text().await.unwrap();
    assert!(body.contains("<lastmod>2024-05-06T07:08:09"), "{body}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        reads(&app).await,
        (measured + 1.0, summaries),
        "the render agreed with the patch: the file was not read whole"
    );
    // A renamed page may now equal a URL of another block: its file is read whole.
    let blocks = blocks_read(&app).await;
    let before = etag(&app, "/sitemap-2.xml.gz").await;
    db.exec("UPDATE cms_pages SET path = '/page/18' WHERE page_id = 4500")
        .await;
    eventually(
        "a new ETag for the file holding the renamed page",
        || etag(&app, "/sitemap-2.xml.gz"),
        |now| *now != before,
    )
    .await;
    assert_eq!(blocks_read(&app).await, blocks, "no patch");
    let text = app.get("/sitemap-2.txt").await.text().await.unwrap();
    assert_eq!(
        text.matches("/site/page/18\n").count(),
        1,
        "the URL two rows now give, listed once: {text}"
    );
}

#[tokio::test]
async fn a_key_no_row_of_the_view_holds_costs_a_block_and_no_file_read() {
    let db = cms_with_settings().await;
    let app = settled_app(&db, "3600").await;
    let (read, blocks) = (reads(&app).await, blocks_read(&app).await);
    // A draft (not published): the view has no row for it.
    db.exec("INSERT INTO cms_pages (page_id, path, published) VALUES (31, '/draft', 0)")
        .await;
    eventually(
        "the draft's block read",
        || blocks_read(&app),
        |now| *now > blocks,
    )
    .await;
    assert_eq!(
        reads(&app).await,
        read,
        "no file read and no summary for a row the view does not hold"
    );
    assert!(!app.all_locs().await.iter().any(|l| l.contains("/draft")));
}

#[tokio::test]
async fn a_change_to_a_table_the_ids_do_not_come_from_shows_within_the_refresh() {
    let db = cms_with_settings().await;
    let app = settled_app(&db, "2").await;
    db.exec("UPDATE cms_settings SET value = '/wiki' WHERE name = 'prefix'")
        .await;
    let locs = eventually(
        "every URL under the new prefix",
        || app.all_locs(),
        |locs| locs.len() == 30 && locs.iter().all(|l| l.contains("/wiki/page/")),
    )
    .await;
    assert_eq!(locs.len(), 30);
}

#[tokio::test]
async fn a_trigger_never_fails_the_cms_statement() {
    let db = cms_with_settings().await;
    migrate(&db, &[]);
    // The log gone (a half-removed install, a revoked privilege): the CMS still writes.
    db.exec("RENAME TABLE sitemapd_change_log TO sitemapd_change_log_away")
        .await;
    db.exec("UPDATE cms_pages SET path = '/still-written' WHERE page_id = 3")
        .await;
    db.exec("INSERT INTO cms_pages (page_id, path) VALUES (40, '/new')")
        .await;
    db.exec("DELETE FROM cms_pages WHERE page_id = 40").await;
    let written: i64 = db
        .scalar("SELECT COUNT(*) FROM cms_pages WHERE path = '/still-written'")
        .await;
    assert_eq!(written, 1);
    db.exec("RENAME TABLE sitemapd_change_log_away TO sitemapd_change_log")
        .await;
}

#[tokio::test]
async fn check_says_when_a_watched_table_lost_its_triggers_and_migrate_puts_them_back() {
    let db = cms_with_settings().await;
    migrate(&db, &[]);
    let (said, code) = check(&db);
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("no longer watched"), "{said}");
    // A CMS update that makes its table again: the triggers go with the old one.
    db.exec(
        "CREATE TABLE cms_pages_new LIKE cms_pages;
         INSERT INTO cms_pages_new SELECT * FROM cms_pages;
         DROP TABLE cms_pages;
         RENAME TABLE cms_pages_new TO cms_pages;",
    )
    .await;
    let (said, code) = check(&db);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("no longer watched"), "{said}");
    assert!(said.contains("cms_pages"), "{said}");
    migrate(&db, &[]);
    let (said, code) = check(&db);
    assert_eq!(code, Some(0), "{said}");
}

#[tokio::test]
async fn unwatch_removes_every_trigger_of_the_source() {
    let db = cms_with_settings().await;
    migrate(&db, &[]);
    assert_eq!(our_triggers(&db).await, 6);
    let (said, code) = migrate(&db, &["--unwatch", "cms_sitemap"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("no longer watched"), "{said}");
    assert_eq!(our_triggers(&db).await, 0);
    let logged: i64 = db
        .scalar("SELECT COUNT(*) FROM sitemapd_changes WHERE source = 'cms_sitemap'")
        .await;
    assert_eq!(logged, 0, "its change log forgotten");
    // Not watched, nothing to lose.
    let (said, code) = check(&db);
    assert_eq!(code, Some(0), "{said}");
}
