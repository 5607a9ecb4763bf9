//! Staying current at any size: no body under the ETag of other bytes, a service that answers
//! while its first sweep is under way, changes made while it was stopped, compact files.

use std::collections::HashMap;

use crate::helpers::*;

crate::on_each_database!(
    a_render_that_meets_changed_rows_never_answers_under_the_old_etag,
    no_response_carries_the_etag_of_other_bytes_under_concurrent_writes,
    a_change_made_while_stopped_shows_after_restart,
    files_merge_after_most_entries_are_deleted,
    after_a_page_size_change_the_files_are_laid_out_for_the_new_size,
);

/// A source the service is not told about (a view, refreshed hourly): a row changed behind it
/// is met first by a render, not by a sweep.
async fn unwatched_view(backend: Backend) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    db.exec("CREATE VIEW pages_view AS SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries")
        .await;
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_SOURCE", "pages_view"),
            ("SITEMAP_PAGE_SIZE", "10"),
            ("SITEMAP_REFRESH_SECS", "3600"),
        ],
    )
    .await;
    (db, app)
}

/// What a complete response said: its ETag and its body.
async fn complete(app: &TestApp, path: &str) -> Option<(String, Vec<u8>)> {
    let resp = app.get(path).await;
    if resp.status() != 200 {
        return None;
    }
    let etag = header(&resp, "etag").to_string();
    let body = resp.bytes().await.ok()?;
    Some((etag, body.to_vec()))
}

async fn a_render_that_meets_changed_rows_never_answers_under_the_old_etag(backend: Backend) {
    let (db, app) = unwatched_view(backend).await;
    let mut bodies: HashMap<String, Vec<Vec<u8>>> = HashMap::new();
    let mut remember = |seen: Option<(String, Vec<u8>)>| {
        if let Some((etag, body)) = seen {
            bodies.entry(etag).or_default().push(body);
        }
    };
    // Once each: asked for once, a file is rendered but not kept in the cache yet.
    for path in ["/sitemap-2.xml.gz", "/sitemap-2.txt"] {
        remember(complete(&app, path).await);
    }
    db.exec("UPDATE sitemap_entries SET loc = '/p/15-renamed' WHERE id = 15")
        .await;
    // Renders of rows the file's validators do not describe: each notices it, unless the sweep
    // the first one asked for has already dated the file anew (then it sends the new rows).
    let mut renders_of_new_rows = 0.0;
    for path in ["/sitemap-2.xml.gz", "/sitemap-2.txt"] {
        let seen = complete(&app, path).await;
        if seen.as_ref().is_some_and(|(_, body)| {
            let text = match path.ends_with(".gz") {
                true => gunzip(body),
                false => body.clone(),
            };
            String::from_utf8_lossy(&text).contains("15-renamed")
        }) {
            renders_of_new_rows += 1.0;
        }
        remember(seen);
    }
    // The render said so: a sweep dates the file anew, and its new bytes get a new ETag.
    let renamed = eventually(
        "the renamed URL under a new ETag",
        || complete(&app, "/sitemap-2.txt"),
        |seen| {
            seen.as_ref()
                .is_some_and(|(_, body)| String::from_utf8_lossy(body).contains("15-renamed"))
        },
    )
    .await;
    remember(renamed);
    for path in ["/sitemap-2.xml.gz", "/sitemap-2.xml", "/sitemap-2.txt"] {
        remember(complete(&app, path).await);
    }
    for (etag, seen) in &bodies {
        assert!(
            seen.windows(2).all(|pair| pair[0] == pair[1]),
            "{etag} was sent with {} different bodies",
            seen.iter().collect::<std::collections::HashSet<_>>().len()
        );
    }
    assert!(
        app.metric("sitemapd_stale_renders_total").await + renders_of_new_rows >= 2.0,
        "both renders after the change were noticed as stale or sent the new rows"
    );
}

/// Every ETag seen, with the bodies sent under it.
#[derive(Default)]
struct Seen(HashMap<String, Vec<Vec<u8>>>);

impl Seen {
    fn add(&mut self, response: Option<(String, Vec<u8>)>) {
        if let Some((etag, body)) = response {
            self.0.entry(etag).or_default().push(body);
        }
    }

    fn assert_one_body_per_etag(&self) {
        for (etag, bodies) in &self.0 {
            assert!(
                bodies.windows(2).all(|pair| pair[0] == pair[1]),
                "{etag} was sent with different bodies"
            );
        }
    }
}

async fn no_response_carries_the_etag_of_other_bytes_under_concurrent_writes(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    let writes = 30;
    let writer = async {
        for n in 1..=writes {
            let id = 11 + n % 10;
            db.exec(&format!(
                "UPDATE sitemap_entries SET loc = '/p/{id}-v{n}' WHERE id = {id}"
            ))
            .await;
            tokio::time::sleep(std::time::Duration::from_millis(15)).await;
        }
    };
    let reader = async {
        let mut seen = Seen::default();
        for _ in 0..60 {
            for path in ["/sitemap-2.xml.gz", "/sitemap-2.txt", "/sitemap-2.xml"] {
                seen.add(complete(&app, path).await);
            }
        }
        seen
    };
    let ((), mut seen) = tokio::join!(writer, reader);
    let last = format!("/p/{}-v{writes}", 11 + writes % 10);
    let settled = eventually(
        "the last write in file 2",
        || complete(&app, "/sitemap-2.txt"),
        |seen| {
            seen.as_ref()
                .is_some_and(|(_, body)| String::from_utf8_lossy(body).contains(&last))
        },
    )
    .await;
    seen.add(settled);
    for path in ["/sitemap-2.xml.gz", "/sitemap-2.xml"] {
        seen.add(complete(&app, path).await);
    }
    seen.assert_one_body_per_etag();
}

/// A cursor row: the version of the change log the site's stored files cover.
async fn stored_cursors(db: &TestDb) -> i64 {
    db.scalar("SELECT count(*) FROM sitemapd_cursors").await
}

async fn a_change_made_while_stopped_shows_after_restart(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    let vars = [("SITEMAP_PAGE_SIZE", "10")];
    let first = spawn_app(&db.url, &vars).await;
    let (before, _) = complete(&first, "/sitemap-2.txt").await.expect("file 2");
    let (untouched, _) = complete(&first, "/sitemap-3.txt").await.expect("file 3");
    assert_eq!(
        stored_cursors(&db).await,
        1,
        "the first sweep stored its cursor"
    );
    drop(first);

    db.exec("UPDATE sitemap_entries SET loc = '/p/15-while-stopped' WHERE id = 15")
        .await;
    let second = spawn_app_listening(&db.url, &vars).await;
    let (after, body) = eventually(
        "the change made while stopped",
        || complete(&second, "/sitemap-2.txt"),
        |seen| {
            seen.as_ref()
                .is_some_and(|(_, body)| String::from_utf8_lossy(body).contains("15-while-stopped"))
        },
    )
    .await
    .expect("file 2");
    assert_ne!(after, before, "new bytes, new ETag");
    assert!(!String::from_utf8_lossy(&body).contains("/p/15\n"));
    let (still, _) = complete(&second, "/sitemap-3.txt").await.expect("file 3");
    assert_eq!(
        still, untouched,
        "a file the change did not touch keeps its ETag"
    );
}

#[tokio::test]
async fn while_the_first_sweep_is_held_back_robots_answers_and_stored_files_are_served() {
    let db = TestDb::on(Backend::Postgres).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    let vars = [("SITEMAP_PAGE_SIZE", "10")];

    // Nothing stored, and the source locked: the first sweep cannot read a row.
    let lock = hold_entries(&db).await;
    let app = spawn_app_listening(&db.url, &vars).await;
    assert_eq!(app.get("/robots.txt").await.status(), 200);
    assert_eq!(app.get("/healthz").await.status(), 200);
    assert_eq!(app.get("/metrics").await.status(), 200);
    for path in [
        "/sitemap_index.xml",
        "/sitemap.xml",
        "/sitemap-1.xml.gz",
        "/feed.atom",
    ] {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 503, "{path} before the first sweep");
        assert!(
            !header(&resp, "retry-after").is_empty(),
            "{path}: Retry-After"
        );
    }
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503, "not ready before the first sweep");
    drop(lock);
    let index = eventually(
        "the index after the first sweep",
        || app.get("/sitemap_index.xml"),
        |resp| resp.status() == 200,
    )
    .await;
    let index_etag = header(&index, "etag").to_string();
    let file = app.get("/sitemap-2.xml.gz").await;
    let file_etag = header(&file, "etag").to_string();
    drop(app);

    // Stored files, and the source locked again: they are served while their check waits.
    let lock = hold_entries(&db).await;
    let app = spawn_app_listening(&db.url, &vars).await;
    let index = app.get("/sitemap_index.xml").await;
    assert_eq!(index.status(), 200, "the stored index is served at once");
    assert_eq!(header(&index, "etag"), index_etag);
    let revalidated = app
        .get_with("/sitemap-2.xml.gz", &[("if-none-match", &file_etag)])
        .await;
    assert_eq!(revalidated.status(), 304, "a stored file revalidates");
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    assert!(ready.text().await.unwrap().contains("verifying"));
    drop(lock);
    eventually(
        "the stored files verified",
        || async { app.get("/readyz").await.text().await.unwrap_or_default() },
        |body| body == "ready\n",
    )
    .await;
}

/// An open transaction holding an exclusive lock on `sitemap_entries` until it is dropped.
async fn hold_entries(db: &TestDb) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let TestPool::Postgres(pool) = &db.pool else {
        panic!("PostgreSQL only");
    };
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE sitemap_entries IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

async fn with_entries(backend: Backend, n: i64) -> TestDb {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=n).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    db
}

async fn files_merge_after_most_entries_are_deleted(backend: Backend) {
    let db = with_entries(backend, 100).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    assert_eq!(app.index_pages().await.len(), 10);
    db.exec("DELETE FROM sitemap_entries WHERE id % 4 <> 0")
        .await;
    // 25 entries: never more than ⌈2 × 25 / 10⌉ + 1 = 6 files.
    let files = eventually(
        "the files merged",
        || app.index_pages(),
        |files| files.len() <= 6,
    )
    .await;
    assert!(files.len() <= 6, "{files:?}");
    let expected: Vec<String> = (1..=25).map(|i| format!("{BASE}p/{}", i * 4)).collect();
    assert_eq!(
        app.all_locs().await,
        expected,
        "every entry listed once, in id order"
    );
}

async fn after_a_page_size_change_the_files_are_laid_out_for_the_new_size(backend: Backend) {
    let db = with_entries(backend, 250).await;
    let expected: Vec<String> = (1..=250).map(|i| format!("{BASE}p/{i}")).collect();
    for (page_size, files) in [("50", 5), ("10", 25), ("50", 5)] {
        let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", page_size)]).await;
        assert_eq!(
            app.index_pages().await.len(),
            files,
            "SITEMAP_PAGE_SIZE={page_size}"
        );
        assert_eq!(app.all_locs().await, expected);
    }
}

/// A view over a CMS's table, on PostgreSQL: sitemapd puts triggers on the table, so a change
/// behind the view gets its new ETag without waiting for the refresh (an hour here) and without
/// any request rendering the file (HEAD only reads validators).
#[tokio::test]
async fn a_change_behind_a_watched_view_shows_without_waiting_for_the_refresh() {
    let db = TestDb::on(Backend::Postgres).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE cms_pages (page_id bigint PRIMARY KEY, path text NOT NULL, visible boolean NOT NULL);
         INSERT INTO cms_pages SELECT i, '/page/' || i, true FROM generate_series(1, 30) AS i;
         CREATE VIEW cms_sitemap AS SELECT page_id AS id, path AS loc, NULL::timestamptz AS lastmod,
           NULL::text AS changefreq, NULL::real AS priority FROM cms_pages WHERE visible;",
    )
    .await;
    let vars = [
        ("SITEMAP_SOURCE", "cms_sitemap"),
        ("SITEMAP_PAGE_SIZE", "10"),
        ("SITEMAP_REFRESH_SECS", "3600"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    let etag = |path: &'static str| {
        let app = &app;
        async move {
            let resp = app.client.head(app.url(path)).send().await.unwrap();
            header(&resp, "etag").to_string()
        }
    };
    let (before, untouched) = (
        etag("/sitemap-2.xml.gz").await,
        etag("/sitemap-3.xml.gz").await,
    );
    db.exec("UPDATE cms_pages SET visible = false WHERE page_id = 15")
        .await;
    let after = eventually(
        "a new ETag for the file that held page 15",
        || etag("/sitemap-2.xml.gz"),
        |now| *now != before,
    )
    .await;
    assert_ne!(after, before);
    assert_eq!(etag("/sitemap-3.xml.gz").await, untouched);
    let body = app.get("/sitemap-2.txt").await.text().await.unwrap();
    assert!(!body.contains("/page/15\n"), "{body}");
    assert!(body.contains("/page/14\n"), "{body}");

    let out = Sitemapd::new(["migrate"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_SOURCE", "cms_sitemap")
        .output();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("cms_sitemap: watching cms_pages"), "{said}");
}
