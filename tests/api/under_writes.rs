//! Fetches while the site is being edited: a render that meets rows changed since the sweep is
//! sent whole under the ETag of its own bytes (the same on every replica, the same the sweep
//! then stores), never answered 503, cut, or sent under the file's old validators.

use std::collections::HashMap;

use crate::helpers::*;

crate::on_each_database!(
    a_render_of_changed_rows_is_sent_whole_under_the_etag_of_its_bytes,
    fetches_under_steady_writes_never_fail,
);

/// A view the service is not told about (refreshed hourly): changed rows are met first by a
/// render, not by a sweep. 30 rows, 10 per file.
async fn quiet_view(db: &TestDb) {
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    db.exec(
        "CREATE VIEW edited AS SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries",
    )
    .await;
}

const VARS: &[(&str, &str)] = &[
    ("SITEMAP_SOURCE", "edited"),
    ("SITEMAP_PAGE_SIZE", "10"),
    ("SITEMAP_REFRESH_SECS", "3600"),
];

async fn a_render_of_changed_rows_is_sent_whole_under_the_etag_of_its_bytes(backend: Backend) {
    let db = TestDb::on(backend).await;
    quiet_view(&db).await;
    let (one, two) = (
        spawn_app(&db.url, VARS).await,
        spawn_app(&db.url, VARS).await,
    );
    let old = header(&one.get("/sitemap-2.xml.gz").await, "etag").to_string();
    db.exec("UPDATE sitemap_entries SET loc = '/p/15-renamed', lastmod = '2024-05-01 12:00:00' WHERE id = 15")
        .await;
    let mut seen: HashMap<String, Vec<u8>> = HashMap::new();
    for app in [&one, &two] {
        for path in ["/sitemap-2.xml.gz", "/sitemap-2.xml", "/sitemap-2.txt"] {
            let resp = app.get(path).await;
            assert_eq!(resp.status(), 200, "{path} while its rows changed");
            let etag = header(&resp, "etag").to_string();
            assert!(
                !etag.starts_with(old.trim_end_matches("-gz\"")),
                "{path}: old ETag {etag}"
            );
            assert!(!header(&resp, "last-modified").is_empty());
            let body = resp.bytes().await.unwrap().to_vec();
            let text = match path {
                "/sitemap-2.xml.gz" => gunzip(&body),
                _ => body.clone(),
            };
            assert!(
                String::from_utf8_lossy(&text).contains("15-renamed"),
                "{path}: the bytes sent are those of the rows read"
            );
            if path != "/sitemap-2.txt" {
                assert_valid(&text, Schema::Urlset);
            }
            if let Some(earlier) = seen.insert(etag.clone(), body.clone()) {
                assert_eq!(
                    earlier, body,
                    "{etag} named two bodies (replicas disagree?)"
                );
            }
        }
    }
    assert_eq!(
        seen.len(),
        3,
        "one ETag per representation on both replicas"
    );
    // The sweep the render set going stores the same fingerprint: the ETag crawlers got stays.
    let revised_gz = seen.keys().find(|e| e.ends_with("-gz\"")).unwrap().clone();
    let (one, revised_gz) = (&one, revised_gz.as_str());
    let settled = eventually(
        "the sweep to store the file's new validators",
        move || async move {
            let resp = one
                .get_with("/sitemap-2.xml.gz", &[("if-none-match", revised_gz)])
                .await;
            resp.status().as_u16()
        },
        |status| *status == 304,
    )
    .await;
    assert_eq!(settled, 304, "the revised ETag is the one the sweep stores");
    assert!(one.metric("sitemapd_stale_renders_total").await >= 1.0);
}

/// A crawler fetches every file again and again while rows are inserted, renamed and deleted
/// behind a view the service is not told about: every answer is a whole 200 (or 304), and an
/// ETag never names two bodies.
async fn fetches_under_steady_writes_never_fail(backend: Backend) {
    let db = TestDb::on(backend).await;
    quiet_view(&db).await;
    let app = spawn_app(&db.url, VARS).await;
    let files = app.index_pages().await;
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let writer = {
        let db = &db;
        async move {
            let mut n = 0i64;
            while !*stop_rx.borrow_and_update() {
                n += 1;
                let id = 1 + n % 30;
                db.exec(&format!(
                    "UPDATE sitemap_entries SET loc = '/p/{id}-v{n}' WHERE id = {id}"
                ))
                .await;
                tokio::task::yield_now().await;
            }
            n
        }
    };
    let crawler = async {
        let mut by_etag: HashMap<String, Vec<u8>> = HashMap::new();
        let mut failures = Vec::new();
        for _round in 0..15 {
            for file in &files {
                for path in [
                    format!("/{file}"),
                    format!("/{}", file.trim_end_matches(".gz")),
                ] {
                    let resp = app.get(&path).await;
                    let status = resp.status().as_u16();
                    let etag = header(&resp, "etag").to_string();
                    match resp.bytes().await {
                        Ok(body) if status == 200 => {
                            let body = body.to_vec();
                            if let Some(earlier) = by_etag.insert(etag.clone(), body.clone()) {
                                assert_eq!(earlier, body, "{etag} named two bodies");
                            }
                        }
                        Ok(_) => failures.push(format!("{path}: {status}")),
                        Err(e) => failures.push(format!("{path}: cut ({e})")),
                    }
                }
            }
        }
        stop_tx.send_replace(true);
        failures
    };
    let (writes, failures) = tokio::join!(writer, crawler);
    assert!(writes > 0);
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );
}
