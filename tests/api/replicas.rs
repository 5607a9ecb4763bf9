//! Replicas that share the work: per site one replica (the lease holder) keeps the files
//! current and the others serve the stored state, loading it when it changes. Three `sitemapd
//! serve` processes on one database; the holder is killed with SIGKILL during a burst of writes,
//! another takes over, and every change shows on every replica that is left.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::helpers::*;

const REPLICAS: usize = 3;
const SITE: &str = "https://www.example.com/";

/// A replica: `sitemapd serve` on the test's database, quiet (its log is not read).
async fn replica(db: &TestDb) -> Serving {
    replica_with(db, &[]).await
}

/// A replica with `vars` besides.
async fn replica_with(db: &TestDb, vars: &[(&str, &str)]) -> Serving {
    Sitemapd::new(["serve"])
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_PAGE_SIZE", "50")
        .env("SITEMAP_REFRESH_SECS", "5")
        .env("REPLICA_LEASE", "on")
        .env("RUST_LOG", "error")
        .envs(vars)
        .serve()
        .await
}

/// `sitemapd_lease_held` of `replica` for the site: 1 when it keeps the site current.
async fn holds(client: &reqwest::Client, replica: &Serving) -> Option<bool> {
    let text = client
        .get(replica.url("/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let line = format!("sitemapd_lease_held{{site=\"{SITE}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .map(|v| v.trim() == "1")
}

/// Which of `replicas` hold the lease, once exactly one does.
async fn the_one_holder(client: &reqwest::Client, replicas: &[&Serving]) -> usize {
    let held = eventually(
        "exactly one replica holding the lease",
        || async {
            let mut held = Vec::new();
            for (i, r) in replicas.iter().enumerate() {
                if holds(client, r).await == Some(true) {
                    held.push(i);
                }
            }
            held
        },
        |held| held.len() == 1,
    )
    .await;
    assert_eq!(held.len(), 1, "replicas holding the lease: {held:?}");
    held[0]
}

/// Every URL `replica` lists, read through its index; `Err` with the status of an answer that
/// was not 200.
async fn listed(client: &reqwest::Client, replica: &Serving) -> Result<BTreeSet<String>, u16> {
    let index = client
        .get(replica.url("/sitemap_index.xml"))
        .send()
        .await
        .map_err(|_| 0u16)?;
    if index.status() != 200 {
        return Err(index.status().as_u16());
    }
    let files = locs(&index.bytes().await.map_err(|_| 0u16)?);
    let mut urls = BTreeSet::new();
    for file in files {
        let path = file
            .strip_prefix(BASE.trim_end_matches('/'))
            .unwrap_or(&file);
        let response = client
            .get(replica.url(path))
            .send()
            .await
            .map_err(|_| 0u16)?;
        if response.status() != 200 {
            return Err(response.status().as_u16());
        }
        let body = response.bytes().await.map_err(|_| 0u16)?;
        urls.extend(locs(&gunzip(&body)));
    }
    Ok(urls)
}

/// What a follower must keep doing while the holder changes hands: answer `/readyz` with 200
/// (it serves the stored state) and every file its index lists without a 503.
async fn still_serving(client: &reqwest::Client, replica: &Serving) {
    let ready = client.get(replica.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200, "/readyz of {}", replica.addr);
    let files = listed(client, replica).await;
    assert_ne!(files, Err(503), "a file of {} answered 503", replica.addr);
}

/// The URLs the table holds.
async fn in_table(db: &TestDb) -> BTreeSet<String> {
    let n = db.scalar("SELECT MAX(id) FROM sitemap_entries").await;
    let mut urls = BTreeSet::new();
    for id in 1..=n {
        if db
            .scalar(&format!(
                "SELECT COUNT(*) FROM sitemap_entries WHERE id = {id}"
            ))
            .await
            == 1
        {
            urls.insert(format!("{BASE}p/{id}"));
        }
    }
    urls
}

crate::on_each_database!(a_killed_holder_is_taken_over_and_every_change_shows_on_every_replica);

async fn a_killed_holder_is_taken_over_and_every_change_shows_on_every_replica(backend: Backend) {
    if backend == Backend::Sqlite {
        return; // One process: nothing to share.
    }
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=200).map(|i| (i, format!("/p/{i}"))).collect();
    let rows: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&rows).await;
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Some(replica(&db).await));
    }
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let alive: Vec<&Serving> = replicas.iter().flatten().collect();
    let holder = the_one_holder(&client, &alive).await;

    // A burst of writes; the holder is killed in the middle of it.
    for id in 201..=230 {
        db.exec(&format!(
            "INSERT INTO sitemap_entries (id, loc) VALUES ({id}, '/p/{id}')"
        ))
        .await;
        if id == 215 {
            drop(replicas[holder].take()); // SIGKILL
        }
        for replica in replicas.iter().flatten() {
            still_serving(&client, replica).await;
        }
        if id % 3 == 0 {
            db.exec(&format!(
                "DELETE FROM sitemap_entries WHERE id = {}",
                id - 150
            ))
            .await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let alive: Vec<&Serving> = replicas.iter().flatten().collect();
    assert_eq!(alive.len(), REPLICAS - 1);
    the_one_holder(&client, &alive).await;
    let wanted = in_table(&db).await;
    for replica in &alive {
        let served = eventually(
            "every change on every replica",
            || listed(&client, replica),
            |served| served.as_ref() == Ok(&wanted),
        )
        .await;
        assert_eq!(served, Ok(wanted.clone()), "{}", replica.addr);
    }
}

crate::on_each_database!(followers_serve_what_the_holder_stores_and_take_over_on_a_clean_stop);

/// A follower answers from the stored state: with the holder stopped cleanly, another takes
/// over within seconds, and a follower's files never answer 503 meanwhile.
async fn followers_serve_what_the_holder_stores_and_take_over_on_a_clean_stop(backend: Backend) {
    if backend == Backend::Sqlite {
        return;
    }
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=120).map(|i| (i, format!("/p/{i}"))).collect();
    let rows: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&rows).await;
    let first = replica(&db).await;
    let second = replica(&db).await;
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let holder = the_one_holder(&client, &[&first, &second]).await;
    let (holding, following) = match holder {
        0 => (first, second),
        _ => (second, first),
    };
    let wanted = in_table(&db).await;
    assert_eq!(listed(&client, &following).await, Ok(wanted));
    // A change made now shows on the follower, which loads what the holder stored.
    db.exec("INSERT INTO sitemap_entries (id, loc) VALUES (121, '/p/121')")
        .await;
    let wanted = in_table(&db).await;
    let served = eventually(
        "the follower serving the holder's new files",
        || listed(&client, &following),
        |served| served.as_ref() == Ok(&wanted),
    )
    .await;
    assert_eq!(served, Ok(wanted));
    // A clean stop frees the lease at once: the follower takes over.
    holding.terminate();
    let _ = holding.wait_with_output().await;
    assert!(
        eventually(
            "the follower taking over",
            || holds(&client, &following),
            |held| *held == Some(true)
        )
        .await
            == Some(true)
    );
    db.exec("DELETE FROM sitemap_entries WHERE id = 7").await;
    let wanted = in_table(&db).await;
    let served = eventually(
        "the new holder keeping the files current",
        || listed(&client, &following),
        |served| served.as_ref() == Ok(&wanted),
    )
    .await;
    assert_eq!(served, Ok(wanted));
}

/// A second replica with a pool of two beside a running one answers `/readyz` while it follows
/// and after it takes the lease over (its listeners used to take the whole pool, and its probe
/// waited for a connection for ever).
#[tokio::test]
async fn a_replica_with_a_small_pool_answers_readyz_following_and_after_taking_over() {
    let db = TestDb::on(Backend::Postgres).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=60).map(|i| (i, format!("/p/{i}"))).collect();
    let rows: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&rows).await;
    let first = replica(&db).await;
    let client = reqwest::Client::builder()
        .no_gzip()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let held = eventually(
        "the first replica holding the lease",
        || holds(&client, &first),
        |held| *held == Some(true),
    )
    .await;
    assert_eq!(held, Some(true));
    // `serve` waits for the small one's /readyz to answer 200.
    let small = replica_with(&db, &[("DATABASE_MAX_CONNECTIONS", "2")]).await;
    assert_eq!(holds(&client, &small).await, Some(false), "it follows");
    still_serving(&client, &small).await;
    first.terminate();
    let _ = first.wait_with_output().await;
    let held = eventually(
        "the small replica taking over",
        || holds(&client, &small),
        |held| *held == Some(true),
    )
    .await;
    assert_eq!(held, Some(true));
    db.exec("DELETE FROM sitemap_entries WHERE id = 7").await;
    let wanted = in_table(&db).await;
    let served = eventually(
        "the small replica keeping the files current",
        || listed(&client, &small),
        |served| served.as_ref() == Ok(&wanted),
    )
    .await;
    assert_eq!(served, Ok(wanted));
    still_serving(&client, &small).await;
}
