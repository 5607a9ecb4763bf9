//! `/readyz` tells whether the files can be served: a dropped source view makes it 503 with
//! a line naming the source, and it is 200 again once the view is back.

use crate::helpers::*;

crate::on_each_database!(readyz_fails_when_the_source_view_is_dropped,);

async fn readyz_fails_when_the_source_view_is_dropped(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let view = "CREATE VIEW shop_view AS SELECT id, loc, lastmod, changefreq, priority \
                FROM sitemap_entries";
    db.exec(view).await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "shop_view")]).await;
    assert_eq!(app.get("/readyz").await.status(), 200);
    db.exec("DROP VIEW shop_view").await;
    let text = eventually(
        "/readyz to notice the dropped view",
        || async {
            let resp = app.get("/readyz").await;
            (resp.status().as_u16(), resp.text().await.unwrap())
        },
        |(status, _)| *status == 503,
    )
    .await;
    assert_eq!(text.0, 503, "{}", text.1);
    assert!(text.1.contains("shop_view"), "{}", text.1);
    assert_eq!(text.1.lines().count(), 1, "{}", text.1);
    db.exec(view).await;
    let back = eventually(
        "/readyz to be 200 again",
        || async { app.get("/readyz").await.status().as_u16() },
        |status| *status == 200,
    )
    .await;
    assert_eq!(back, 200);
}

/// A client that gives up on an answer after `secs`: a probe that hangs fails the test.
fn impatient(secs: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(secs))
        .build()
        .unwrap()
}

/// `sitemapd serve` on `db` with a pool of `connections`.
async fn serve_with_pool(db: &TestDb, connections: &str) -> Serving {
    Sitemapd::new(["serve"])
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", &db.url)
        .env("DATABASE_MAX_CONNECTIONS", connections)
        .env("RUST_LOG", "error")
        .serve()
        .await
}

/// With one connection in its pool a process still sweeps, serves its files, answers `/readyz`
/// and hears of changes: the change listener and the lease hold connections of their own.
#[tokio::test]
async fn a_process_with_a_pool_of_one_serves_answers_readyz_and_follows_changes() {
    let db = TestDb::on(Backend::Postgres).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    // `serve` waits for /readyz to answer 200 (it never did with a pool of one).
    let serving = serve_with_pool(&db, "1").await;
    let client = impatient(20);
    let ready = client.get(serving.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    db.exec("UPDATE sitemap_entries SET loc = '/a2' WHERE id = 1")
        .await;
    let wanted = vec![format!("{BASE}a2"), format!("{BASE}b")];
    let served = eventually(
        "the change in the file served",
        || async {
            let file = client.get(serving.url("/sitemap.xml")).send().await;
            match file {
                Ok(r) if r.status() == 200 => locs(&r.bytes().await.unwrap()),
                _ => Vec::new(),
            }
        },
        |served| *served == wanted,
    )
    .await;
    assert_eq!(served, wanted);
}

/// With every connection of the pool taken (here the one connection, by the change log's
/// reader waiting on a lock the test holds), `/readyz` answers `503` saying why, and `200`
/// again once a connection is free: it never waits for one for ever.
#[tokio::test]
async fn readyz_answers_503_with_the_reason_while_the_pool_gives_no_connection() {
    let db = TestDb::on(Backend::Postgres).await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let serving = serve_with_pool(&db, "1").await;
    let client = impatient(20);
    let held = db.hold_table("sitemapd_change_log").await.unwrap();
    let (status, body) = eventually(
        "/readyz to say the pool gave no connection",
        || async {
            let answer = client.get(serving.url("/readyz")).send().await.unwrap();
            (answer.status().as_u16(), answer.text().await.unwrap())
        },
        |(status, _)| *status == 503,
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("no answer within"), "{body}");
    assert!(body.contains("DATABASE_MAX_CONNECTIONS"), "{body}");
    assert_eq!(body.lines().count(), 1, "{body}");
    held.release().await;
    let back = eventually(
        "/readyz to be 200 again",
        || async {
            let answer = client.get(serving.url("/readyz")).send().await.unwrap();
            answer.status().as_u16()
        },
        |status| *status == 200,
    )
    .await;
    assert_eq!(back, 200);
}
