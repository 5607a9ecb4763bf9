//! Running it: export, health, metrics, JSON logs, graceful shutdown, mount paths.

use crate::helpers::*;

crate::on_each_database!(
    export_writes_the_bytes_the_server_serves,
    health_readiness_and_metrics_answer,
);

async fn db_with_pages(backend: Backend) -> TestDb {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    // Every tenth row dated, so the feeds list something.
    let rows: Vec<Row> = (1..=250)
        .map(|i| {
            let row = Row::new(i, &format!("/p/{i}?a=1&b=é"));
            if i % 10 == 0 {
                row.lastmod(&format!("2024-03-{:02} 10:00:00", i / 10))
            } else {
                row
            }
        })
        .collect();
    db.insert_rows(&rows).await;
    db
}

async fn export_writes_the_bytes_the_server_serves(backend: Backend) {
    let db = db_with_pages(backend).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "100")]).await;
    let dir = export(&[
        ("SITEMAP_BASE_URL", BASE),
        ("DATABASE_URL", &db.url),
        ("SITEMAP_PAGE_SIZE", "100"),
    ]);
    let mut names: Vec<String> = ["sitemap_index.xml", "sitemap.xml", "robots.txt"]
        .map(String::from)
        .into();
    names.extend(["feed.atom", "feed.rss"].map(String::from));
    let pages = app.index_pages().await;
    assert_eq!(pages.len(), 3);
    for page in &pages {
        names.push(page.replace(".xml.gz", ".txt"));
        names.push(page.clone());
    }
    for name in &names {
        let served = app.get(&format!("/{name}")).await;
        assert_eq!(served.status(), 200, "{name}");
        let served = served.bytes().await.unwrap();
        let written = std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(served.to_vec(), written, "{name}");
    }
    let text = std::fs::read_to_string(dir.path().join("sitemap-1.txt")).unwrap();
    assert_eq!(text.lines().count(), 100);
    let feed = std::fs::read_to_string(dir.path().join("feed.atom")).unwrap();
    assert_eq!(feed.matches("<entry>").count(), 25, "{feed}");
    // Only one file (another database: files keep their boundaries once stored): the text
    // sitemap of all is written too.
    let db = db_with_pages(backend).await;
    let single = export(&[("SITEMAP_BASE_URL", BASE), ("DATABASE_URL", &db.url)]);
    let all = std::fs::read_to_string(single.path().join("sitemap.txt")).unwrap();
    assert_eq!(all.lines().count(), 250);
    assert_eq!(
        all.lines().next(),
        Some(&*format!("{BASE}p/1?a=1&b=%C3%A9"))
    );
}

#[tokio::test]
async fn export_writes_the_stylesheet_when_the_files_name_it() {
    let db = db_with_pages(Backend::Postgres).await;
    let vars = [("SITEMAP_PAGE_SIZE", "100"), ("SITEMAP_STYLESHEET", "true")];
    let app = spawn_app(&db.url, &vars).await;
    let export = |vars: &[(&str, &str)]| {
        let mut all = vec![
            ("SITEMAP_BASE_URL", BASE),
            ("DATABASE_URL", db.url.as_str()),
        ];
        all.extend_from_slice(vars);
        export(&all)
    };

    let dir = export(&vars);
    let pi = format!("<?xml-stylesheet type=\"text/xsl\" href=\"{BASE}sitemap.xsl\"?>");
    let mut documents = vec![
        std::fs::read(dir.path().join("sitemap_index.xml")).unwrap(),
        std::fs::read(dir.path().join("sitemap.xml")).unwrap(),
    ];
    for page in app.index_pages().await {
        documents.push(gunzip(&std::fs::read(dir.path().join(page)).unwrap()));
    }
    assert_eq!(documents.len(), 5);
    for doc in &documents {
        assert!(
            String::from_utf8_lossy(doc).contains(&pi),
            "{}",
            String::from_utf8_lossy(&doc[..doc.len().min(300)])
        );
    }
    let served = app.get("/sitemap.xsl").await.bytes().await.unwrap();
    let written = std::fs::read(dir.path().join("sitemap.xsl")).expect("sitemap.xsl exported");
    assert_eq!(served.to_vec(), written);

    // Without the stylesheet, no file names it and none is written.
    let plain = export(&[("SITEMAP_PAGE_SIZE", "100")]);
    assert!(!plain.path().join("sitemap.xsl").exists());
}

async fn health_readiness_and_metrics_answer(backend: Backend) {
    let db = db_with_pages(backend).await;
    let app = spawn_app(&db.url, &[]).await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    assert_eq!(app.get("/readyz").await.status(), 200);
    app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap();
    app.get_with("/sitemap-1.xml.gz", &[("if-none-match", "*")])
        .await;
    let metrics = app.get("/metrics").await;
    assert!(header(&metrics, "content-type").starts_with("text/plain"));
    let text = metrics.text().await.unwrap();
    for name in [
        "sitemapd_http_requests_total{route=\"page_gz\",status=\"200\"} 1",
        "sitemapd_http_requests_total{route=\"page_gz\",status=\"304\"} 1",
        "sitemapd_not_modified_total 1",
        "sitemapd_renders_total 1",
        "sitemapd_render_seconds_count 1",
        "sitemapd_entries_served{site=\"https://www.example.com/\",group=\"\"} 250",
        "sitemapd_entries_skipped{reason=\"out_of_scope\",site=\"https://www.example.com/\",group=\"\"} 0",
        "sitemapd_bytes_served_total",
        "sitemapd_cache_hits_total",
        "sitemapd_database_errors_total 0",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
}

/// `sitemapd serve` as a child process on a free port, with its log on stderr.
fn server(db_url: &str) -> Sitemapd {
    Sitemapd::new(["serve"])
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", db_url)
}

#[tokio::test]
async fn sigterm_lets_downloads_finish_and_exits_zero_with_json_logs() {
    let db = db_with_pages(Backend::Postgres).await;
    let server = server(&db.url).env("LOG_FORMAT", "json").serve().await;
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let response = client
        .get(server.url("/sitemap-1.xml"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    server.terminate();
    // The response that was under way completes.
    let body = response.text().await.unwrap();
    assert!(body.ends_with("</urlset>\n"));
    let status = server.wait_with_output().await;
    assert_eq!(status.status.code(), Some(0));
    let log = String::from_utf8(status.stderr).unwrap();
    let request_line = log
        .lines()
        .find(|l| l.contains("\"path\":\"/sitemap-1.xml\""))
        .expect("a log line for the request");
    let parsed: serde_json::Value = serde_json::from_str(request_line).expect("JSON log line");
    let fields = &parsed["fields"];
    assert_eq!(fields["method"], "GET");
    assert_eq!(fields["status"], 200);
    assert_eq!(fields["site"], BASE);
    assert!(fields["bytes"].as_u64().unwrap() > 0);
    // A duration a log pipeline can read: milliseconds, to the microsecond.
    let ms = fields["ms"].as_f64().expect("ms is a number");
    assert!(ms >= 0.0);
    let text = fields["ms"].to_string();
    assert!(
        text.split('.')
            .nth(1)
            .is_none_or(|decimals| decimals.len() <= 3),
        "{text}"
    );
    for line in log.lines().filter(|l| l.starts_with('{')) {
        serde_json::from_str::<serde_json::Value>(line).expect("every log line is JSON");
    }
    assert!(!log.contains("hunter2"));
}

#[tokio::test]
async fn a_password_in_the_database_url_stays_out_of_the_logs() {
    let db = db_with_pages(Backend::Postgres).await;
    let mut url = url::Url::parse(&db.url).unwrap();
    url.set_password(Some("hunter2")).unwrap();
    let server = server(url.as_str()).serve().await;
    server.terminate();
    let output = server.wait_with_output().await;
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("listening"), "{log}");
    assert!(!log.contains("hunter2"), "{log}");
}

/// `sitemapd demo` as a newcomer runs it: no variables (but a free port), an empty directory.
#[tokio::test]
async fn the_demo_needs_no_configuration_and_serves_valid_files_dated_in_the_past() {
    // Its status page on any free port: the one after BIND_ADDR's may be another test's.
    let server = Sitemapd::new(["demo"])
        .env("ADMIN_BIND_ADDR", "127.0.0.1:0")
        .serve()
        .await;
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let get = |path: String| {
        let client = &client;
        let url = server.url(&path);
        async move { client.get(url).send().await.unwrap().bytes().await.unwrap() }
    };
    let index = get("/sitemap_index.xml".into()).await;
    assert_valid(&index, Schema::Index);
    let files = locs(&index);
    assert!(files.len() >= 3, "several files: {files:?}");
    let base = format!("http://{}/", server.addr);
    let now = chrono::Utc::now();
    for file in &files {
        let path = file
            .strip_prefix(&base)
            .expect("under the default base URL");
        let xml = gunzip(&get(format!("/{path}")).await);
        assert_valid(&xml, Schema::Urlset);
        let text = String::from_utf8(xml).unwrap();
        for lastmod in text.split("<lastmod>").skip(1) {
            let at = lastmod.split('<').next().unwrap();
            let at = chrono::DateTime::parse_from_rfc3339(at).expect("a W3C datetime");
            assert!(at <= now, "{at} is in the future");
        }
    }
    let sample = String::from_utf8(gunzip(&get("/sitemap-1.xml.gz".into()).await)).unwrap();
    assert!(sample.contains("&amp;"), "URLs with & in the sample");
    assert!(sample.contains("%C3%A9"), "non-ASCII URLs in the sample");
}
