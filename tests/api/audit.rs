//! The audit of what engines distrust: a lastmod in the future is left out (the entry stays),
//! the same URL twice in one file is listed once; both are counted, and `check` exits 1 on them.
//! hreflang clusters engines ignore are warnings `check` prints.

use crate::helpers::*;

crate::on_each_database!(
    a_lastmod_in_the_future_is_left_out_and_counted,
    the_same_url_twice_in_a_file_is_listed_once,
    check_warns_of_one_way_hreflang_without_failing,
    a_lastmod_whose_time_comes_is_listed_by_a_sweep_before_any_render_meets_it,
);

async fn a_lastmod_in_the_future_is_left_out_and_counted(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let in_ten_days = chrono::Utc::now() + chrono::Duration::days(10);
    let in_a_minute = chrono::Utc::now() + chrono::Duration::minutes(1);
    db.insert_rows(&[
        Row::new(1, "/tomorrow-ish"),
        Row::new(2, "/past").lastmod("2024-05-01 12:00:00"),
        Row::new(3, "/clock-skew"),
    ])
    .await;
    db.set_lastmod(1, in_ten_days).await;
    db.set_lastmod(3, in_a_minute).await;
    let app = spawn_app(&db.url, &[]).await;
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert_valid(&xml, Schema::Urlset);
    let fields = url_fields(&xml);
    // The entry stays, without the date engines would reject.
    assert_eq!(fields[0]["loc"], format!("{BASE}tomorrow-ish"));
    assert!(!fields[0].contains_key("lastmod"), "{fields:?}");
    assert_eq!(fields[1]["lastmod"], "2024-05-01T12:00:00+00:00");
    // A minute ahead is clock skew, not a mistake.
    assert!(fields[2].contains_key("lastmod"), "{fields:?}");
    assert_eq!(app.metric(&skipped_metric("future_lastmod")).await, 1.0);
    // Nor is the entry in the feeds with a date from the future.
    let feed = app.get("/feed.atom").await.text().await.unwrap();
    assert!(!feed.contains("tomorrow-ish"), "{feed}");

    let (code, stdout) = check(&db, &[]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("future_lastmod: 1"), "{stdout}");
    assert!(stdout.contains("entry id 1: lastmod"), "{stdout}");
}

async fn the_same_url_twice_in_a_file_is_listed_once(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    // A view (the built-in table keeps URLs unique): a path and the same URL written
    // absolute, and a repeat that falls in a later file, as a UNION gives them.
    db.exec(
        "CREATE TABLE pages (id int PRIMARY KEY, loc text);
         INSERT INTO pages VALUES (1, '/a'), (2, 'https://www.example.com/a'), (3, '/b'),
           (4, '/c'), (5, '/a');
         CREATE VIEW sitemap_pages AS SELECT id, loc, NULL AS lastmod, NULL AS changefreq,
           NULL AS priority FROM pages;",
    )
    .await;
    let vars = [
        ("SITEMAP_PAGE_SIZE", "2"),
        ("SITEMAP_SOURCE", "sitemap_pages"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    let mut all = Vec::new();
    for file in app.index_pages().await {
        let xml = gunzip(&app.get(&format!("/{file}")).await.bytes().await.unwrap());
        let locs = locs(&xml);
        let mut unique = locs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            locs.len(),
            "{file} lists a URL twice: {locs:?}"
        );
        // The text form agrees with it.
        let text_name = file.replace(".xml.gz", ".txt");
        let text = app
            .get(&format!("/{text_name}"))
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(text.lines().collect::<Vec<_>>(), locs);
        all.extend(locs);
    }
    all.sort();
    all.dedup();
    assert_eq!(
        all,
        [format!("{BASE}a"), format!("{BASE}b"), format!("{BASE}c")]
    );
    assert!(app.metric(&skipped_metric("duplicate")).await >= 1.0);

    // `check` sees the group as a whole: both repeats, whatever file they fell in.
    let (code, stdout) = check(&db, &vars);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("duplicate: 2"), "{stdout}");
    assert!(
        stdout.contains("id 2: https://www.example.com/a (as id 1)"),
        "{stdout}"
    );
    assert!(stdout.contains("entries served: 3"), "{stdout}");
}

async fn check_warns_of_one_way_hreflang_without_failing(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/en/a"), (2, "/fr/a")]).await;
    // English names French and itself; French names no one: a one-way cluster.
    db.insert_alternates(&[(1, "en", "/en/a"), (1, "fr", "/fr/a")])
        .await;
    let (code, stdout) = check(&db, &[]);
    assert_eq!(code, Some(0), "warnings leave nothing out: {stdout}");
    assert!(
        stdout.contains("warning: 1 alternates that are entries of the site but do not link back"),
        "{stdout}"
    );
    assert!(
        stdout.contains("id 1: https://www.example.com/en/a → https://www.example.com/fr/a"),
        "{stdout}"
    );
}

async fn a_lastmod_whose_time_comes_is_listed_by_a_sweep_before_any_render_meets_it(
    backend: Backend,
) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/soon"), (2, "/other")]).await;
    // Past the allowance now, within it two seconds from now.
    let allowance = sitemapd::sitemap::entry::FUTURE_LASTMOD_ALLOWANCE_SECS;
    let soon = chrono::Utc::now() + chrono::Duration::seconds(allowance + 2);
    db.set_lastmod(1, soon).await;
    let app = spawn_app(&db.url, &[]).await;
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    assert!(
        !String::from_utf8_lossy(&xml).contains("<lastmod>"),
        "left out for now"
    );
    // Nothing changes in the database and nobody asks for the file: a sweep comes by itself
    // when the lastmod's time comes (the refresh period is an hour here) and measures it anew.
    let group = app.app.site().first().clone();
    let due = || group.snapshot().layout.pages()[0].skipped.future_due();
    assert!(due().is_some());
    let remeasured = eventually(
        "the sweep at the lastmod's time",
        || async { due() },
        Option::is_none,
    )
    .await;
    assert_eq!(remeasured, None);
    let xml = gunzip(&app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap());
    let text = String::from_utf8(xml).unwrap();
    assert!(
        text.contains("<url><loc>https://www.example.com/soon</loc><lastmod>"),
        "{text}"
    );
    // The render never met rows its ETag did not describe.
    assert_eq!(app.metric("sitemapd_stale_renders_total").await, 0.0);
}
