//! The crawler ledger: requests for robots.txt, the index and each file, by the registry crawler
//! their User-Agent names (any of them, AI crawlers included), and the files that changed since a
//! crawler last fetched them.

use crate::helpers::*;

crate::on_each_database!(crawlers_are_counted_by_user_agent_and_files_behind_follow_changes,);

const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
const BINGBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36";

async fn get_as(app: &TestApp, agent: &str, path: &str, etag: Option<&str>) -> reqwest::Response {
    let mut headers = vec![("user-agent", agent)];
    if let Some(etag) = etag {
        headers.push(("if-none-match", etag));
    }
    app.get_with(path, &headers).await
}

fn requests(crawler: &str, status: u16) -> String {
    format!("sitemapd_crawler_requests_total{{crawler=\"{crawler}\",status=\"{status}\",verified=\"false\"}}")
}

fn behind(crawler: &str) -> String {
    format!("sitemapd_crawler_files_behind{{crawler=\"{crawler}\"}}")
}

async fn crawlers_are_counted_by_user_agent_and_files_behind_follow_changes(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "/c")]).await;
    // Counted by what each User-Agent claims: verification off (tests/api/verification.rs has
    // the verdicts).
    let app = spawn_app(
        &db.url,
        &[("SITEMAP_PAGE_SIZE", "2"), ("CRAWLER_VERIFY", "off")],
    )
    .await;

    assert_eq!(
        get_as(&app, BINGBOT, "/robots.txt", None).await.status(),
        200
    );
    assert_eq!(
        get_as(&app, GOOGLEBOT, "/sitemap_index.xml", None)
            .await
            .status(),
        200
    );
    let first = get_as(&app, GOOGLEBOT, "/sitemap-1.xml.gz", None).await;
    let etag = header(&first, "etag").to_string();
    assert_eq!(
        get_as(&app, GOOGLEBOT, "/sitemap-1.xml.gz", Some(&etag))
            .await
            .status(),
        304
    );
    assert_eq!(
        get_as(&app, GPTBOT, "/sitemap-1.xml.gz", None)
            .await
            .status(),
        200
    );
    assert_eq!(
        get_as(&app, "curl/8.5.0", "/sitemap-2.xml.gz", None)
            .await
            .status(),
        200
    );
    assert_eq!(app.metric(&requests("Googlebot", 200)).await, 2.0);
    assert_eq!(app.metric(&requests("Googlebot", 304)).await, 1.0);
    assert_eq!(app.metric(&requests("bingbot", 200)).await, 1.0);
    assert_eq!(app.metric(&requests("GPTBot", 200)).await, 1.0);
    assert_eq!(app.metric(&requests("other", 200)).await, 1.0);
    assert_eq!(app.metric(&behind("Googlebot")).await, 0.0);
    assert_eq!(app.metric(&behind("GPTBot")).await, 0.0);

    // File 1 changes after Googlebot read it (and so does the index that dates it): it is
    // behind on both; Bing, which read robots.txt only, on nothing.
    db.exec("UPDATE sitemap_entries SET loc = '/a2' WHERE id = 1")
        .await;
    app.sweep().await;
    assert_eq!(app.metric(&behind("Googlebot")).await, 2.0);
    assert_eq!(app.metric(&behind("bingbot")).await, 0.0);
    assert_eq!(
        app.metric(&behind("GPTBot")).await,
        1.0,
        "file 1 changed since"
    );
    // Fetching the new file catches up on it (the `.txt` form is the same file): its version
    // is compared, not the second it changed in.
    let after = eventually(
        "Googlebot's fetch of file 1 to catch up on it",
        || async {
            get_as(&app, GOOGLEBOT, "/sitemap-1.txt", None).await;
            app.metric(&behind("Googlebot")).await
        },
        |behind| *behind == 1.0,
    )
    .await;
    assert_eq!(after, 1.0, "the index is still behind, file 1 no more");
}

crate::on_each_database!(a_change_in_the_second_of_the_fetch_puts_the_crawler_behind,);

/// Googlebot's files behind, as the metric and the status page count them.
async fn googlebot_behind(app: &TestApp, admin: &str) -> (f64, serde_json::Value) {
    let status: serde_json::Value = reqwest::get(format!("{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let googlebot = status["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["crawler"] == "Googlebot")
        .cloned()
        .unwrap_or_default();
    (
        app.metric(&behind("Googlebot")).await,
        googlebot["files_behind"].clone(),
    )
}

/// Googlebot fetches the index and the three files, and a row changes at once, most often in
/// the same second: what it fetched (the version its ETag names) is compared with what is
/// served, so it is behind on the index and that file whatever the clock says, and current again
/// as soon as it fetches them (no second has to pass).
async fn a_change_in_the_second_of_the_fetch_puts_the_crawler_behind(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[
        (1, "/a"),
        (2, "/b"),
        (3, "/c"),
        (4, "/d"),
        (5, "/e"),
        (6, "/f"),
    ])
    .await;
    let app = spawn_app(
        &db.url,
        &[("SITEMAP_PAGE_SIZE", "2"), ("CRAWLER_VERIFY", "off")],
    )
    .await;
    let admin = status_page(&app).await;
    let files = [
        "/sitemap_index.xml",
        "/sitemap-1.xml.gz",
        "/sitemap-2.xml.gz",
        "/sitemap-3.xml.gz",
    ];
    for path in files {
        assert_eq!(
            get_as(&app, GOOGLEBOT, path, None).await.status(),
            200,
            "{path}"
        );
    }
    db.exec("UPDATE sitemap_entries SET loc = '/a2' WHERE id = 1")
        .await;
    app.sweep().await;
    let (metric, listed) = googlebot_behind(&app, &admin).await;
    assert_eq!(metric, 2.0, "the index and file 1");
    assert_eq!(listed, 2, "the status page counts them too");
    // The text form is the same file: fetching it catches up on file 1 at once.
    get_as(&app, GOOGLEBOT, "/sitemap-1.txt", None).await;
    get_as(&app, GOOGLEBOT, "/sitemap_index.xml", None).await;
    let (metric, listed) = googlebot_behind(&app, &admin).await;
    assert_eq!((metric, listed), (0.0, serde_json::json!(0)));
}
