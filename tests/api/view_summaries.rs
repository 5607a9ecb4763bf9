//! A MariaDB view nothing can watch is kept current by the database's own records: each refresh
//! reads the commit times of the tables behind it, and only when they moved summarises every
//! file (count and hash of its rows) and reads the files whose summary moved. A first sweep
//! measures its files before any summary of them exists: the next refresh keeps the summaries it
//! reads when no table was written since that sweep began, rather than reading every file again,
//! and reads the files again when one was written while it summarised.

use crate::helpers::*;

/// A MariaDB database with `cms_pages` (ids 1 to 30) behind the view `cms_sitemap`, and a
/// service of 10 URLs a file over it looking every second; the table written more than a
/// second before the service starts (its commit time is kept to the second, so a write in the
/// second the first sweep began could be followed by another it would not show).
async fn thirty_pages_in_three_files() -> (TestDb, TestApp) {
    let db = TestDb::on(Backend::MariaDb).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE cms_pages (page_id bigint PRIMARY KEY, path varchar(200) NOT NULL);
         INSERT INTO cms_pages SELECT seq, CONCAT('/page/', seq) FROM seq_1_to_30;
         CREATE VIEW cms_sitemap AS SELECT page_id AS id, path AS loc, NULL AS lastmod,
           NULL AS changefreq, NULL AS priority FROM cms_pages;",
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let vars = [
        ("SITEMAP_SOURCE", "cms_sitemap"),
        ("SITEMAP_PAGE_SIZE", "10"),
        ("SITEMAP_REFRESH_SECS", "1"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    (db, app)
}

/// Refreshes that read nothing, files measured (read whole, or patched by blocks where the
/// triggers serve installs named the change), and passes of summaries, so far.
async fn refresh_counts(app: &TestApp) -> (f64, f64, f64) {
    (
        app.metric("sitemapd_quiet_refreshes_total").await,
        app.metric("sitemapd_files_measured_total").await,
        app.metric("sitemapd_summary_checks_total").await,
    )
}

async fn page_3(app: &TestApp) -> String {
    app.get("/sitemap-3.txt").await.text().await.unwrap()
}

/// After a first sweep the files have no summary: when no table behind the view was written
/// since that sweep began, the summaries the next refresh reads are the files' own, and no file
/// is read a second time.
#[tokio::test]
async fn the_files_of_a_first_sweep_take_their_summaries_without_being_read_again() {
    let (db, app) = thirty_pages_in_three_files().await;
    let counts = || refresh_counts(&app);
    let (_, measured, checks) =
        eventually("a quiet refresh", counts, |(quiet, _, _)| *quiet >= 1.0).await;
    // The first sweep reads one file (all ids), which it splits in three.
    assert_eq!(measured, 1.0, "no file read after the first sweep");
    assert_eq!(checks, 1.0, "one pass of summaries");
    assert_eq!(app.get("/sitemap_index.xml").await.status(), 200);

    // The summaries taken are the files' own: a change to one reads that one alone.
    let before = page_3(&app).await;
    db.exec("UPDATE cms_pages SET path = '/page/25-renamed' WHERE page_id = 25")
        .await;
    let after = eventually(
        "the renamed page in its file",
        || page_3(&app),
        |body| body.contains("/page/25-renamed\n"),
    )
    .await;
    assert_ne!(after, before);
    let (_, now, _) = counts().await;
    assert_eq!(now, measured + 1.0, "only the changed file was read");
}

/// A write made while the refresh after the first sweep summarises: the summaries may hold it
/// where the files' bytes do not, so they are not kept as the files' own, and the files are
/// read again. (Watched through the files read, not a render: a render would meet the new rows
/// and report the file stale by itself.)
#[tokio::test]
async fn a_write_while_the_first_summaries_are_read_is_not_lost() {
    let (db, app) = thirty_pages_in_three_files().await;
    // The table locked, the next refresh's summaries wait on it (its look at the commit times
    // does not): the write is made then, on the connection holding the lock.
    let mut held = db.hold_table("cms_pages").await.expect("a MariaDB lock");
    eventually(
        "a summary waiting for the locked table",
        || {
            db.scalar(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE STATE LIKE 'Waiting for table%' AND INFO LIKE '%cms_sitemap%'",
            )
        },
        |waiting| *waiting > 0,
    )
    .await;
    held.exec("UPDATE cms_pages SET path = '/page/25-renamed' WHERE page_id = 25")
        .await;
    held.release().await;
    let quiet = || app.metric("sitemapd_quiet_refreshes_total");
    eventually("a quiet refresh", quiet, |quiet| *quiet >= 1.0).await;
    let measured = app.metric("sitemapd_files_measured_total").await;
    assert!(
        measured > 1.0,
        "the files were read again after the first sweep"
    );
    let body = page_3(&app).await;
    assert!(body.contains("/page/25-renamed\n"), "{body}");
}

/// A view MariaDB cannot report changes of: each refresh asks when its tables last changed;
/// when they did, the database summarises every file (count and hash of its rows), and only
/// files whose summary moved are read again.
#[tokio::test]
async fn an_idle_refresh_of_an_unwatched_view_reads_no_file_and_a_change_reads_one() {
    let (db, app) = thirty_pages_in_three_files().await;
    let counts = || refresh_counts(&app);
    // The files split on the first sweep get their summaries on the next; then refreshes are
    // quiet: the tables have not changed.
    let (quiet, measured, checks) =
        eventually("a quiet refresh", counts, |(quiet, _, _)| *quiet >= 1.0).await;
    let (_, idle, idle_checks) = eventually("two more refreshes", counts, |(now, _, _)| {
        *now >= quiet + 2.0
    })
    .await;
    assert_eq!(idle, measured, "idle refreshes read no file");
    assert_eq!(idle_checks, checks, "idle refreshes summarise no file");

    let etag = |path: &'static str| {
        let app = &app;
        async move {
            let resp = app.client.head(app.url(path)).send().await.unwrap();
            header(&resp, "etag").to_string()
        }
    };
    let before = etag("/sitemap-2.xml.gz").await;
    db.exec("UPDATE cms_pages SET path = '/page/15-renamed' WHERE page_id = 15")
        .await;
    eventually(
        "the renamed page's file with a new ETag",
        || etag("/sitemap-2.xml.gz"),
        |now| *now != before,
    )
    .await;
    let (_, after, _) = counts().await;
    assert_eq!(after, idle + 1.0, "only the changed file was read");
}
