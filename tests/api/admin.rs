//! The status page (`ADMIN_BIND_ADDR`): only on its own listener, with the files, the rows
//! left out, the audit, crawler activity and a robots.txt tester, as HTML and as JSON; and a
//! look at it in headless Chromium.

use crate::helpers::*;

crate::on_each_database!(the_status_says_what_was_served_skipped_and_fetched,);

/// The text of `url`, with `/` as minijinja escapes it in HTML text (`&#x2f;`) read back.
async fn page_text(url: String) -> String {
    reqwest::get(url)
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .replace("&#x2f;", "/")
}

async fn the_status_says_what_was_served_skipped_and_fetched(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "ftp://elsewhere/c")])
        .await;
    db.set_lastmod(2, chrono::Utc::now() + chrono::Duration::days(30))
        .await;
    // /a names /b as its French version; /b names nothing back.
    db.insert_alternates(&[(1, "en", "/a"), (1, "fr", "/b")])
        .await;
    let app = spawn_app(&db.url, &[("CRAWLER_VERIFY", "off")]).await;
    app.get_with("/sitemap_index.xml", &[("user-agent", GOOGLEBOT)])
        .await;
    let admin = status_page(&app).await;
    let client = reqwest::Client::new();
    let status: serde_json::Value = client
        .get(format!("{admin}/status.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let group = &status["sites"][0]["groups"][0];
    assert_eq!(group["entries"], 2, "{status:#}");
    assert_eq!(group["files"][0]["name"], "sitemap-1.xml.gz");
    assert_eq!(group["files"][0]["urls"], 2);
    let skipped: Vec<(String, u64)> = group["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["reason"].as_str().unwrap().to_string(),
                s["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(skipped.contains(&("out_of_scope".into(), 1)), "{skipped:?}");
    assert!(
        skipped.contains(&("future_lastmod".into(), 1)),
        "{skipped:?}"
    );
    let out_of_scope = group["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["reason"] == "out_of_scope")
        .unwrap();
    assert_eq!(
        out_of_scope["examples"],
        serde_json::json!(["id 3: \"ftp://elsewhere/c\""])
    );
    let findings = group["findings"].to_string();
    assert!(findings.contains("lastmod in the future"), "{findings}");
    let googlebot = status["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["crawler"] == "Googlebot")
        .unwrap();
    assert_eq!(googlebot["ok"], 1, "{googlebot}");
    assert_eq!(googlebot["files_fetched"], 1);

    let html = page_text(format!("{admin}/?url=/b&agent=Googlebot")).await;
    assert!(html.contains("<h1>sitemapd status</h1>"), "{html}");
    assert!(html.contains("sitemap-1.xml.gz"));
    assert!(html.contains("future_lastmod"));
    assert!(html.contains("id=\"verdict\""), "{html}");
    assert!(html.contains(">allowed</span>"), "{html}");

    // Each file as a table: its entries, and the rows of its range left out with why.
    let file =
        |query: &'static str| page_text(format!("{admin}/file?name=sitemap-1.xml.gz{query}"));
    let all = file("").await;
    assert!(all.contains("https://www.example.com/a"), "{all}");
    assert!(all.contains("left out: out_of_scope"), "{all}");
    assert!(all.contains("lastmod in the future left out"), "{all}");
    assert!(all.contains("3 rows"), "{all}");
    let searched = file("&q=/B").await;
    assert!(searched.contains("https://www.example.com/b"), "{searched}");
    assert!(
        !searched.contains("https://www.example.com/a<"),
        "{searched}"
    );
    assert!(searched.contains("1 row with"), "{searched}");
    // The whole audit, on demand.
    let audit = page_text(format!("{admin}/audit")).await;
    assert!(
        audit.contains("1 alternates that are entries of the site but do not link back"),
        "{audit}"
    );
    assert!(
        audit.contains("https://www.example.com/b, which does not link back"),
        "{audit}"
    );
    let missing = client
        .get(format!("{admin}/file?name=sitemap-9.xml.gz"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn the_status_page_listens_only_on_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::helpers::free_port();
    let admin = format!("127.0.0.1:{port}");
    let server = Sitemapd::new(["serve"])
        .env(
            "DATABASE_URL",
            format!("sqlite://{}", dir.path().join("s.db").display()),
        )
        .env("SITEMAP_BASE_URL", BASE)
        .env("ADMIN_BIND_ADDR", &admin)
        .serve()
        .await;
    let client = reqwest::Client::new();
    for path in ["/status.json", "/"] {
        let public = client.get(server.url(path)).send().await.unwrap();
        assert_eq!(public.status(), 404, "{path} on the public port");
    }
    let json = client
        .get(format!("http://{admin}/status.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(json.status(), 200);
    assert!(json.text().await.unwrap().contains("\"crawlers\""));

    // Never the public address.
    refused(
        &[
            ("SITEMAP_BASE_URL", BASE),
            ("BIND_ADDR", "127.0.0.1:8080"),
            ("ADMIN_BIND_ADDR", "0.0.0.0:8080"),
        ],
        &["ADMIN_BIND_ADDR"],
    );
}

/// The page in headless Chromium, wide and narrow: screenshots of the window's size that the
/// test looks at (saved under `target/screenshots/`), nothing wider than the window.
#[tokio::test]
async fn chromium_shows_the_status_page_without_overflow() {
    let browser = chromium();
    let db = TestDb::new().await;
    db.migrate().await;
    let rows: Vec<Row> = (1..=25)
        .map(|i| {
            Row::new(
                i,
                &format!("/articles/{i}/a-rather-long-title-for-a-page-{i}"),
            )
        })
        .collect();
    db.insert_rows(&rows).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    for path in ["/robots.txt", "/sitemap_index.xml", "/sitemap-1.xml.gz"] {
        app.get_with(path, &[("user-agent", GOOGLEBOT)]).await;
    }
    let admin = status_page(&app).await;
    let url = format!("{admin}/?url=/articles/3/x&agent=Googlebot");
    let dom = dump_dom(&browser, &url).await;
    assert!(dom.contains("sitemap-3.xml.gz"), "{dom}");
    assert!(dom.contains("id=\"verdict\""), "{dom}");
    for (name, width, height) in [
        ("status-page.png", 1280, 900),
        ("status-page-narrow.png", 390, 844),
    ] {
        let png = screenshot_path(name);
        std::fs::create_dir_all(png.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&png);
        run_chromium(
            &browser,
            &[
                &format!("--screenshot={}", png.display()),
                &format!("--window-size={width},{height}"),
                "--hide-scrollbars",
            ],
            &url,
        )
        .await;
        let image = Screenshot::read(&png);
        assert_eq!((image.width, image.height), (width, height), "{name}");
        // Something is drawn: the page is not blank.
        assert!(image.distinct_colours() > 8, "{name} looks blank");
        // Nothing runs past the right edge: the last columns are the page's background.
        let background = image.pixel(width - 1, 2);
        for x in width - 4..width {
            for y in 0..height {
                assert_eq!(
                    image.pixel(x, y),
                    background,
                    "{name}: something drawn at the right edge ({x}, {y}): it overflows"
                );
            }
        }
        println!("screenshot of the status page: {}", png.display());
    }
}

/// A decoded RGBA screenshot.
struct Screenshot {
    width: u32,
    height: u32,
    rgba: Vec<u8>,
}

impl Screenshot {
    fn read(path: &std::path::Path) -> Self {
        let decoder = png::Decoder::new(std::fs::File::open(path).expect("the screenshot"));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("a frame");
        let channels = info.color_type.samples();
        let rgba = buf[..info.buffer_size()]
            .chunks(channels)
            .flat_map(|p| [p[0], p[1], p[2], *p.get(3).unwrap_or(&255)])
            .collect();
        Self {
            width: info.width,
            height: info.height,
            rgba,
        }
    }

    fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    fn distinct_colours(&self) -> usize {
        let mut seen: Vec<[u8; 4]> = self
            .rgba
            .chunks(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }
}
