//! Staying current at any size: no body under the ETag of other bytes, a service that answers
//! while its first sweep is under way, changes made while it was stopped, compact files.

use std::collections::HashMap;

use crate::helpers::*;

crate::on_each_database!(a_render_that_meets_changed_rows_never_answers_under_the_old_etag,);

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
    // Renders of rows the file's validators do not describe.
    for path in ["/sitemap-2.xml.gz", "/sitemap-2.txt"] {
        remember(complete(&app, path).await);
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
        app.metric("sitemapd_stale_renders_total").await >= 2.0,
        "both stale renders were aborted"
    );
}
