//! The status page's port as `serve` runs it: foreign Host headers refused (DNS rebinding),
//! security headers on every answer, a token required to listen beyond loopback, and a
//! robots.txt tester that says what it tested.

use crate::helpers::*;

/// `sitemapd serve` on SQLite with the status page at `admin` and `vars` besides.
async fn serve_with_status_page(db: &TestDb, admin: &str, vars: &[(&str, &str)]) -> Serving {
    Sitemapd::new(["serve"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("ADMIN_BIND_ADDR", admin)
        .envs(vars)
        .serve()
        .await
}

async fn sqlite_with_rows() -> TestDb {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/private/b")]).await;
    db
}

fn get(url: String, headers: &[(&str, &str)]) -> reqwest::RequestBuilder {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut request = client.get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
}

#[tokio::test]
async fn the_status_page_refuses_foreign_hosts_and_forbids_framing() {
    let db = sqlite_with_rows().await;
    let port = free_port();
    let admin = format!("127.0.0.1:{port}");
    let _serving = serve_with_status_page(&db, &admin, &[]).await;
    for path in ["/", "/status.json"] {
        let url = format!("http://{admin}{path}");
        let foreign = get(url.clone(), &[("host", "evil.example")])
            .send()
            .await
            .unwrap();
        assert_eq!(foreign.status(), 421, "{path}");
        let rebound = get(url.clone(), &[("host", &format!("evil.example:{port}"))])
            .send()
            .await
            .unwrap();
        assert_eq!(rebound.status(), 421, "{path}");
        for host in [admin.clone(), format!("localhost:{port}")] {
            let local = get(url.clone(), &[("host", &host)]).send().await.unwrap();
            assert_eq!(local.status(), 200, "{path} as {host}");
            let csp = header(&local, "content-security-policy");
            assert!(csp.contains("default-src 'none'"), "{csp}");
            assert!(!csp.contains("script-src"), "{csp}");
            assert_eq!(header(&local, "x-frame-options"), "DENY");
            assert_eq!(header(&local, "x-content-type-options"), "nosniff");
        }
    }
}

#[tokio::test]
async fn the_status_page_beyond_loopback_needs_a_token() {
    refused(
        &[("ADMIN_BIND_ADDR", "0.0.0.0:18081")],
        &["ADMIN_BIND_ADDR", "0.0.0.0:18081", "ADMIN_TOKEN"],
    );
    refused(
        &[
            ("ADMIN_BIND_ADDR", "0.0.0.0:18081"),
            ("ADMIN_TOKEN", "short"),
        ],
        &["ADMIN_TOKEN"],
    );
}

#[tokio::test]
async fn with_a_token_the_status_page_answers_only_to_who_carries_it() {
    const TOKEN: &str = "0123456789abcdef0123456789abcdef";
    let db = sqlite_with_rows().await;
    let port = free_port();
    let _serving =
        serve_with_status_page(&db, &format!("0.0.0.0:{port}"), &[("ADMIN_TOKEN", TOKEN)]).await;
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let none = get(url("/status.json"), &[]).send().await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(header(&none, "x-frame-options"), "DENY");
    let wrong = get(url("/status.json"), &[("authorization", "Bearer nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    // The token defends: any Host is fine with it.
    let bearer = get(
        url("/status.json"),
        &[
            ("authorization", &format!("Bearer {TOKEN}")),
            ("host", "status.example.com"),
        ],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(bearer.status(), 200);
    let login = get(url(&format!("/?token={TOKEN}")), &[])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let cookie = header(&login, "set-cookie").to_string();
    assert!(cookie.starts_with(&format!("token={TOKEN};")), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    let with_cookie = get(url("/"), &[("cookie", &format!("token={TOKEN}"))])
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status(), 200);
    assert!(with_cookie
        .text()
        .await
        .unwrap()
        .contains("robots.txt tester"));
}

#[tokio::test]
async fn the_robots_tester_refuses_other_schemes_and_names_a_foreign_host() {
    let db = sqlite_with_rows().await;
    let port = free_port();
    let admin = format!("127.0.0.1:{port}");
    let _serving = serve_with_status_page(&db, &admin, &[]).await;
    let ask = |url: &str| {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("url", url)
            .append_pair("agent", "Googlebot")
            .finish();
        format!("http://{admin}/status.json?{query}")
    };
    let json = |url: String| async move {
        let value: serde_json::Value = get(url, &[]).send().await.unwrap().json().await.unwrap();
        value["robots_test"].clone()
    };
    let foreign = json(ask("http://evil.example/x")).await;
    let note = foreign["note"].as_str().unwrap_or_default();
    assert!(note.contains("tested the path /x"), "{foreign:#}");
    assert!(
        note.contains("the host evil.example is not this site's"),
        "{foreign:#}"
    );
    let own = json(ask("https://www.example.com/x")).await;
    assert!(own["note"].is_null(), "{own:#}");
    assert_eq!(own["allowed"], true, "{own:#}");
    for scheme in ["javascript:alert(1)", "ftp://www.example.com/x"] {
        let refused = json(ask(scheme)).await;
        let why = refused["refused"].as_str().unwrap_or_default();
        assert!(why.contains("only http and https"), "{refused:#}");
    }
    let page = get(format!("http://{admin}/?url=javascript:alert(1)"), &[])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("not tested"), "{page}");
    let cli = Sitemapd::new(["robots", "test", "javascript:alert(1)"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .output();
    assert_eq!(cli.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&cli.stderr).contains("only http and https"));
    let cli = Sitemapd::new(["robots", "test", "http://evil.example/x"])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .output();
    let said = String::from_utf8_lossy(&cli.stdout);
    assert!(
        said.contains("the host evil.example is not this site's"),
        "{said}"
    );
}
