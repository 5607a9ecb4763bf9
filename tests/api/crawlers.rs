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
    // Fetching the new file catches up on it (the `.txt` form is the same file). A change is
    // dated up to a second ahead (a change never shares its predecessor's second), so the
    // fetch is repeated until it is later than that.
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
