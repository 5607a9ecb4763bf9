//! The crawl log's rows are joined in the database: the writer reads nothing before it writes,
//! so a batch's fetches added to what is stored must give what one pass over every fetch
//! gives, in any order of batches, and writers adding at once must lose no fetch.

use sitemapd::store::{CrawlRow, PathRow};

use crate::helpers::{Backend, TestDb};

crate::on_each_database!(
    a_batch_joins_the_stored_fetches_as_one_pass_would,
    concurrent_writers_lose_no_fetch,
);

const SITE: &str = "https://www.example.com/";

/// Googlebot's row for `entry_id` as a batch makes it (nothing stored assumed).
fn fetched(
    entry_id: i64,
    fetches: i64,
    last: (i64, i64, &str),
    lastmod: Option<i64>,
    fresh_at: Option<i64>,
) -> CrawlRow {
    let (last_fetch, last_status, path) = last;
    CrawlRow {
        crawler: "Googlebot".into(),
        entry_id,
        path: path.into(),
        fetches,
        last_fetch,
        last_status,
        lastmod,
        fresh_at,
        freshness: fresh_at.zip(lastmod).map(|(at, changed)| at - changed),
    }
}

/// entry_id → (fetches, last_fetch, last_status, lastmod, fresh_at, freshness).
async fn stored(db: &TestDb) -> Vec<Vec<Option<i64>>> {
    db.int_rows(
        "SELECT entry_id, fetches, last_fetch, last_status, lastmod, fresh_at, freshness \
         FROM sitemapd_crawls ORDER BY entry_id",
    )
    .await
}

fn ints(values: &[Option<i64>]) -> Vec<Option<i64>> {
    values.to_vec()
}

async fn a_batch_joins_the_stored_fetches_as_one_pass_would(backend: Backend) {
    let db = TestDb::on(backend).await;
    let store = db.store().await;
    let first = [
        fetched(1, 1, (100, 200, "/a"), Some(50), Some(100)),
        fetched(2, 1, (100, 200, "/b"), Some(150), None),
        fetched(3, 1, (100, 200, "/c"), None, None),
        fetched(4, 1, (300, 200, "/d"), Some(50), Some(300)),
    ];
    store.add_crawls(SITE, "", &first).await.unwrap();
    let second = [
        // Same lastmod, later fetches: counts add, the last fetch moves, the first fetch after
        // the lastmod stays the earlier one.
        fetched(1, 2, (200, 304, "/a?x"), Some(50), Some(180)),
        // A new lastmod: the wait starts over and ends at this batch's fetch.
        fetched(2, 1, (260, 200, "/b"), Some(250), Some(260)),
        // An older batch (a late datagram) of an entry without lastmod: only the count moves.
        fetched(3, 1, (90, 404, "/c-old"), None, None),
        // An older batch with the same lastmod: its earlier first fetch after it wins.
        fetched(4, 1, (200, 200, "/d"), Some(50), Some(200)),
        // A first fetch.
        fetched(5, 1, (400, 301, "/e"), Some(10), None),
    ];
    store.add_crawls(SITE, "", &second).await.unwrap();
    let s = |v: i64| Some(v);
    assert_eq!(
        stored(&db).await,
        vec![
            ints(&[s(1), s(3), s(200), s(304), s(50), s(100), s(50)]),
            ints(&[s(2), s(2), s(260), s(200), s(250), s(260), s(10)]),
            ints(&[s(3), s(2), s(100), s(200), None, None, None]),
            ints(&[s(4), s(2), s(300), s(200), s(50), s(200), s(150)]),
            ints(&[s(5), s(1), s(400), s(301), s(10), None, None]),
        ]
    );
    // The later fetch's path is the example kept; the older batch's is not.
    let paths = db
        .int_rows(
            "SELECT entry_id FROM sitemapd_crawls \
             WHERE path IN ('/a?x', '/b', '/c', '/d', '/e') ORDER BY entry_id",
        )
        .await;
    assert_eq!(paths.len(), 5, "{paths:?}");

    let path = |fetches: i64, last_fetch: i64| PathRow {
        kind: "outside",
        crawler: "Googlebot".into(),
        verification: "verified".into(),
        path_key: 7,
        status: 404,
        path: "/gone".into(),
        fetches,
        last_fetch,
        rule: None,
    };
    store.add_paths(SITE, &[path(2, 500)]).await.unwrap();
    store.add_paths(SITE, &[path(3, 400)]).await.unwrap();
    assert_eq!(
        db.int_rows("SELECT fetches, last_fetch FROM sitemapd_crawl_paths")
            .await,
        vec![ints(&[s(5), s(500)])]
    );
}

async fn concurrent_writers_lose_no_fetch(backend: Backend) {
    let db = TestDb::on(backend).await;
    let store = db.store().await;
    const WRITERS: i64 = 6;
    const ENTRIES: i64 = 600;
    let writes = (0..WRITERS).map(|w| {
        let store = store.clone();
        tokio::spawn(async move {
            // Each writer's batch holds every entry, in key order, as the writer sends them.
            let rows: Vec<CrawlRow> = (1..=ENTRIES)
                .map(|id| fetched(id, 1, (1_000 + w, 200, "/p"), Some(500), Some(1_000 + w)))
                .collect();
            store.add_crawls(SITE, "", &rows).await
        })
    });
    for write in writes.collect::<Vec<_>>() {
        write.await.unwrap().expect("every writer's batch lands");
    }
    let totals = db
        .int_rows(&format!(
            "SELECT count(*), min(fresh_at), max(last_fetch) FROM sitemapd_crawls \
                 WHERE fetches = {WRITERS}"
        ))
        .await;
    assert_eq!(
        totals,
        vec![vec![Some(ENTRIES), Some(1_000), Some(1_000 + WRITERS - 1)]]
    );
}
