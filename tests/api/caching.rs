//! Validators, conditional requests, stable files and single flight.

use std::collections::HashMap;

use crate::helpers::*;

crate::on_each_database!(
    conditional_requests_get_304_without_a_body,
    gzip_and_identity_forms_have_different_etags,
    a_restart_gives_the_same_bytes_and_etags,
    an_update_changes_only_the_file_that_holds_it,
    a_delete_moves_last_modified_forward_even_in_the_same_second,
    new_entries_at_the_end_touch_only_the_last_files,
    an_insert_in_a_full_middle_file_splits_only_that_file,
    changes_to_the_table_show_without_a_manual_sweep,
    a_text_render_of_changed_rows_sets_the_sweep_going,
    a_first_file_split_below_its_first_id_survives_a_restart,
    a_change_reaches_every_replica_without_a_manual_sweep,
);
// Single flight is the same code whatever the database; the test needs one that can hold a
// render back until the whole burst has joined it, which SQLite (WAL: readers never wait) cannot.
crate::on_each_server!(
    a_truncate_shows_without_a_manual_sweep,
    a_hundred_concurrent_cold_requests_cause_one_render,
);

/// A site of 3 full files: ids 10, 20, …, 300, ten per file.
async fn three_pages(backend: Backend) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30)
        .map(|i| (i * 10, format!("/p/{}", i * 10)))
        .collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    (db, app)
}

/// ETag and Last-Modified of every page, by file name.
async fn validators(app: &TestApp) -> HashMap<String, (String, String)> {
    let mut out = HashMap::new();
    for file in app.index_pages().await {
        let resp = app.get(&format!("/{file}")).await;
        out.insert(
            file,
            (
                header(&resp, "etag").to_string(),
                header(&resp, "last-modified").to_string(),
            ),
        );
    }
    out
}

fn changed(
    before: &HashMap<String, (String, String)>,
    after: &HashMap<String, (String, String)>,
) -> Vec<String> {
    let mut names: Vec<String> = after
        .iter()
        .filter(|(name, v)| before.get(*name).map(|b| &b.0) != Some(&v.0))
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}

async fn conditional_requests_get_304_without_a_body(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    let first = app.get("/sitemap-2.xml.gz").await;
    let etag = header(&first, "etag").to_string();
    let last_modified = header(&first, "last-modified").to_string();
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "strong: {etag}"
    );
    // SITEMAP_CACHE_CONTROL first, then what shared caches are told (see cache_front.rs).
    assert!(header(&first, "cache-control").starts_with("public, max-age=300, "));

    let by_etag = app
        .get_with("/sitemap-2.xml.gz", &[("if-none-match", &etag)])
        .await;
    assert_eq!(by_etag.status(), 304);
    assert_eq!(header(&by_etag, "etag"), etag);
    assert_eq!(header(&by_etag, "last-modified"), last_modified);
    assert_eq!(
        header(&by_etag, "cache-control"),
        header(&first, "cache-control")
    );
    assert!(by_etag.bytes().await.unwrap().is_empty());

    let by_date = app
        .get_with(
            "/sitemap-2.xml.gz",
            &[("if-modified-since", &last_modified)],
        )
        .await;
    assert_eq!(by_date.status(), 304);

    // If-None-Match wins: a stale tag with a current date is a full response.
    let stale = app
        .get_with(
            "/sitemap-2.xml.gz",
            &[
                ("if-none-match", "\"stale\""),
                ("if-modified-since", &last_modified),
            ],
        )
        .await;
    assert_eq!(stale.status(), 200);

    for path in ["/sitemap_index.xml", "/robots.txt", "/sitemap-1.xml"] {
        let resp = app.get(path).await;
        let etag = header(&resp, "etag").to_string();
        assert!(!etag.is_empty(), "{path}");
        let again = app.get_with(path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), 304, "{path}");
    }
}

async fn gzip_and_identity_forms_have_different_etags(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    let plain = app.get("/sitemap-1.xml").await;
    let gzip = app
        .get_with("/sitemap-1.xml", &[("accept-encoding", "gzip")])
        .await;
    assert_ne!(header(&plain, "etag"), header(&gzip, "etag"));
    let index_plain = app.get("/sitemap_index.xml").await;
    let index_gzip = app
        .get_with("/sitemap_index.xml", &[("accept-encoding", "gzip")])
        .await;
    assert_ne!(header(&index_plain, "etag"), header(&index_gzip, "etag"));
    assert_eq!(header(&index_gzip, "vary"), "Accept-Encoding");
}

async fn a_restart_gives_the_same_bytes_and_etags(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    let before = validators(&app).await;
    let body_before = app.get("/sitemap-3.xml.gz").await.bytes().await.unwrap();
    let index_before = app.get("/sitemap_index.xml").await;
    let index_etag = header(&index_before, "etag").to_string();
    drop(app);
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    assert_eq!(validators(&app).await, before);
    assert_eq!(
        app.get("/sitemap-3.xml.gz").await.bytes().await.unwrap(),
        body_before
    );
    assert_eq!(
        header(&app.get("/sitemap_index.xml").await, "etag"),
        index_etag
    );
}

/// Found by the hostile property test: once the first file emptied, the next one became the
/// first but kept the first id it was made with; when entries arrived below that id and it
/// split, its parts were stored out of first-id order, and a restart (or the next sweep, which
/// reloads them in that order) read other ranges than the ones measured: other files, rows cut
/// off, sweeps that gave up.
async fn a_first_file_split_below_its_first_id_survives_a_restart(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(10, "/a/10"), (20, "/a/20"), (30, "/a/30"), (40, "/a/40")])
        .await;
    let vars = [("SITEMAP_PAGE_SIZE", "2")];
    let app = spawn_app(&db.url, &vars).await;
    assert_eq!(
        app.index_pages().await,
        ["sitemap-1.xml.gz", "sitemap-2.xml.gz"]
    );
    // The first file empties: the second one, made to start at id 30, is now the first.
    db.exec("DELETE FROM sitemap_entries WHERE id < 30").await;
    app.sweep().await;
    // Entries arrive below id 30: that file holds five of them and splits.
    db.insert(&[(1, "/b/1"), (2, "/b/2"), (3, "/b/3")]).await;
    app.sweep().await;
    let expected: Vec<String> = ["b/1", "b/2", "b/3", "a/30", "a/40"]
        .iter()
        .map(|p| format!("{BASE}{p}"))
        .collect();
    assert_eq!(app.all_locs().await, expected);
    // File 2 keeps ids 1 and 2; its new parts hold 3 and 30, and 40.
    let index = app.index_pages().await;
    assert_eq!(
        index,
        ["sitemap-2.xml.gz", "sitemap-3.xml.gz", "sitemap-4.xml.gz"]
    );
    let before = validators(&app).await;
    drop(app);
    let app = spawn_app(&db.url, &vars).await;
    assert_eq!(app.index_pages().await, index);
    assert_eq!(validators(&app).await, before);
    assert_eq!(app.all_locs().await, expected);
}

async fn an_update_changes_only_the_file_that_holds_it(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    let before = validators(&app).await;
    let index_before = header(&app.get("/sitemap_index.xml").await, "etag").to_string();
    db.set_lastmod(150, utc("2024-01-01 00:00:00")).await;
    app.sweep().await;
    let after = validators(&app).await;
    assert_eq!(changed(&before, &after), vec!["sitemap-2.xml.gz"]);
    assert_ne!(
        header(&app.get("/sitemap_index.xml").await, "etag"),
        index_before
    );
    let (old_lm, new_lm) = (&before["sitemap-2.xml.gz"].1, &after["sitemap-2.xml.gz"].1);
    assert!(
        httpdate::parse_http_date(new_lm).unwrap() > httpdate::parse_http_date(old_lm).unwrap()
    );
}

async fn a_delete_moves_last_modified_forward_even_in_the_same_second(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    let before = validators(&app).await;
    db.exec("DELETE FROM sitemap_entries WHERE id = 50").await;
    app.sweep().await;
    let after = validators(&app).await;
    assert_eq!(changed(&before, &after), vec!["sitemap-1.xml.gz"]);
    // A crawler that saw the old file must not get 304 by date.
    let resp = app
        .get_with(
            "/sitemap-1.xml.gz",
            &[("if-modified-since", &before["sitemap-1.xml.gz"].1)],
        )
        .await;
    assert_eq!(resp.status(), 200);
}

async fn new_entries_at_the_end_touch_only_the_last_files(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    let before = validators(&app).await;
    db.insert(&[(310, "/p/310"), (320, "/p/320")]).await;
    app.sweep().await;
    let after = validators(&app).await;
    // The last file was full: the new entries open a new file, the others are untouched.
    assert_eq!(changed(&before, &after), vec!["sitemap-4.xml.gz"]);
    assert_eq!(app.index_pages().await.len(), 4);
}

async fn an_insert_in_a_full_middle_file_splits_only_that_file(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    let before = validators(&app).await;
    db.insert(&[(155, "/p/155")]).await;
    app.sweep().await;
    let after = validators(&app).await;
    assert_eq!(
        changed(&before, &after),
        vec!["sitemap-2.xml.gz", "sitemap-4.xml.gz"]
    );
    assert_eq!(
        app.index_pages().await,
        vec![
            "sitemap-1.xml.gz",
            "sitemap-2.xml.gz",
            "sitemap-4.xml.gz",
            "sitemap-3.xml.gz"
        ]
    );
    assert_eq!(app.all_locs().await.len(), 31);
}

async fn changes_to_the_table_show_without_a_manual_sweep(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    let before = header(&app.get("/sitemap-3.xml.gz").await, "etag").to_string();
    db.exec("UPDATE sitemap_entries SET changefreq = 'daily' WHERE id = 250")
        .await;
    let app = &app;
    let now = eventually(
        "a new ETag of file 3",
        move || async move { header(&app.get("/sitemap-3.xml.gz").await, "etag").to_string() },
        |now| *now != before,
    )
    .await;
    assert_ne!(
        now, before,
        "the change the table's triggers record reaches the service"
    );
}

/// Every replica hears of every change: none takes it from the others.
async fn a_change_reaches_every_replica_without_a_manual_sweep(backend: Backend) {
    let (db, first) = three_pages(backend).await;
    let second = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    let etag = |app: &TestApp, page: &'static str| {
        let url = app.url(page);
        let client = app.client.clone();
        async move {
            let resp = client.get(url).send().await.unwrap();
            header(&resp, "etag").to_string()
        }
    };
    let before = [
        etag(&first, "/sitemap-1.xml.gz").await,
        etag(&first, "/sitemap-3.xml.gz").await,
    ];
    db.exec("UPDATE sitemap_entries SET changefreq = 'daily' WHERE id = 50")
        .await;
    db.exec("UPDATE sitemap_entries SET changefreq = 'daily' WHERE id = 250")
        .await;
    for app in [&first, &second] {
        let now = eventually(
            "new ETags on both replicas",
            move || async move {
                [
                    etag(app, "/sitemap-1.xml.gz").await,
                    etag(app, "/sitemap-3.xml.gz").await,
                ]
            },
            |now| now[0] != before[0] && now[1] != before[1],
        )
        .await;
        assert!(
            now[0] != before[0] && now[1] != before[1],
            "{before:?} {now:?}"
        );
    }
}

/// A view tells nothing of its changes; a render that meets rows the stored validators do not
/// describe is sent under the ETag of its own bytes (never under the old one) and sets the
/// sweep going, so the file is soon served with its new bytes under a new ETag.
async fn a_text_render_of_changed_rows_sets_the_sweep_going(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE plain (id bigint PRIMARY KEY, loc text NOT NULL, lastmod text, changefreq text, priority real);
         INSERT INTO plain (id, loc) VALUES (1, '/a'), (2, '/b');
         CREATE VIEW quiet AS SELECT id, loc, lastmod, changefreq, priority FROM plain;",
    )
    .await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "quiet")]).await;
    let before = header(&app.get("/sitemap.txt").await, "etag").to_string();
    db.exec("INSERT INTO plain (id, loc) VALUES (3, '/c')")
        .await;
    // The render of changed rows is sent whole, under the ETag of its own bytes.
    let stale = app.get("/sitemap.txt").await;
    assert_eq!(stale.status(), 200, "the render of changed rows is sent");
    assert_ne!(header(&stale, "etag"), before, "never under the old ETag");
    assert_eq!(stale.text().await.unwrap().lines().count(), 3);
    let app = &app;
    let (now, live) = eventually(
        "a new ETag of the text sitemap",
        move || async move {
            let resp = app.get("/sitemap.txt").await;
            let etag = header(&resp, "etag").to_string();
            (etag, resp.text().await.unwrap_or_default())
        },
        |(now, _)| !now.is_empty() && *now != before,
    )
    .await;
    assert_ne!(now, before, "the render's finding reaches the validators");
    assert_eq!(live.lines().count(), 3, "{live}");
}

/// TRUNCATE fires no row trigger (and MySQL has no TRUNCATE trigger at all): it must show too.
async fn a_truncate_shows_without_a_manual_sweep(backend: Backend) {
    let (db, app) = three_pages(backend).await;
    db.exec("TRUNCATE sitemap_entries").await;
    let app = &app;
    let pages = eventually(
        "the index to shrink to one file",
        move || async move { app.index_pages().await },
        |pages| pages.len() == 1,
    )
    .await;
    assert_eq!(pages, vec!["sitemap-1.xml.gz"]);
    // The empty urlset: the one document the schema rejects, by the usual convention.
    let page = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert!(locs(&page).is_empty());
}

async fn a_hundred_concurrent_cold_requests_cause_one_render(backend: Backend) {
    // The page's rows are held back until every request has joined its render.
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<Row> = (1..=15_000)
        .map(|i| Row::new(i, &format!("/p/{i}?q={}", "x".repeat(200))))
        .collect();
    db.insert_rows(&rows).await;
    let app = spawn_app(&db.url, &[]).await;
    let app = std::sync::Arc::new(app);
    let renders_before = app.metric("sitemapd_renders_total").await;
    let held = db
        .hold_entries()
        .await
        .expect("a database server can hold rows");
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap()
        }));
    }
    let followers = eventually(
        "99 requests to follow one render",
        || app.metric("sitemapd_render_followers_total"),
        |n| *n >= 99.0,
    )
    .await;
    assert_eq!(followers, 99.0, "every request joins the one render");
    held.release().await;
    let mut bodies = Vec::new();
    for t in tasks {
        bodies.push(t.await.unwrap());
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(locs(&gunzip(&bodies[0])).len(), 15_000);
    assert_eq!(
        app.metric("sitemapd_renders_total").await - renders_before,
        1.0
    );
}
