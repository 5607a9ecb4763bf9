//! `/sitemap.xsl` and SITEMAP_STYLESHEET: served like robots.txt, announced in every document,
//! and rendered by a real headless Chromium.

use std::process::Command;

use crate::helpers::*;

const PI: &str = "<?xml-stylesheet type=\"text/xsl\" href=\"";

#[tokio::test]
async fn the_stylesheet_is_served_with_strong_validators_and_304() {
    let db = TestDb::new().await;
    let app = spawn_app(&db.url, &[]).await;

    let resp = app.get("/sitemap.xsl").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "text/xsl; charset=utf-8");
    assert!(header(&resp, "cache-control").starts_with("public, max-age=300, "));
    let etag = header(&resp, "etag").to_string();
    assert!(
        etag.starts_with('"') && etag.len() > 20,
        "a strong ETag: {etag}"
    );
    let last_modified = header(&resp, "last-modified").to_string();
    assert!(
        httpdate::parse_http_date(&last_modified).is_ok(),
        "{last_modified}"
    );
    let body = resp.text().await.unwrap();
    assert_eq!(body, sitemapd::stylesheet::BODY);
    assert_eq!(schema_errors_of_xslt(body.as_bytes()), None);

    let again = app
        .get_with("/sitemap.xsl", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status(), 304);
    assert_eq!(header(&again, "etag"), etag);
    assert_eq!(header(&again, "last-modified"), last_modified);
    assert!(again.bytes().await.unwrap().is_empty());

    // Another process (a restart, a replica) answers with the same validators.
    let other = spawn_app(&db.url, &[]).await;
    let resp = other.get("/sitemap.xsl").await;
    assert_eq!(header(&resp, "etag"), etag);
    assert_eq!(header(&resp, "last-modified"), last_modified);
}

/// Whether xmllint finds the stylesheet well-formed (it is XML before it is XSLT).
fn schema_errors_of_xslt(xsl: &[u8]) -> Option<String> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xsl).unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--nonet"])
        .arg(file.path())
        .output()
        .expect("xmllint (Debian package libxml2-utils); ./scripts/test.sh installs it");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn with_the_setting_every_document_names_the_stylesheet_and_still_validates() {
    let db = TestDb::new().await;
    drop(spawn_app(&db.url, &[]).await);
    let rows: Vec<(i64, String)> = (1..=25).map(|i| (i, format!("/p/{i}?a=1&b=2"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    let app = spawn_app(
        &db.url,
        &[("SITEMAP_STYLESHEET", "true"), ("SITEMAP_PAGE_SIZE", "10")],
    )
    .await;
    let announce = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{PI}{BASE}sitemap.xsl\"?>\n\
         <?xml-stylesheet type=\"text/css\" href=\"{BASE}sitemap.css\"?>\n"
    );

    let index = app.get("/sitemap_index.xml").await.bytes().await.unwrap();
    assert!(index.starts_with(announce.as_bytes()), "{index:?}");
    assert_valid(&index, Schema::Index);
    for file in app.index_pages().await {
        let xml = gunzip(&app.get(&format!("/{file}")).await.bytes().await.unwrap());
        assert!(xml.starts_with(announce.as_bytes()), "{file}");
        assert_valid(&xml, Schema::Urlset);
    }
    assert_eq!(app.all_locs().await.len(), 25);

    let plain_db = TestDb::new().await;
    let plain = spawn_app(&plain_db.url, &[]).await;
    let xml = plain.get("/sitemap.xml").await.text().await.unwrap();
    assert!(!xml.contains("xml-stylesheet"), "off by default: {xml}");
}

#[tokio::test]
async fn under_a_mount_path_the_stylesheet_lives_there_too() {
    let db = TestDb::new().await;
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_BASE_URL", "https://example.com/catalog/"),
            ("SITEMAP_STYLESHEET", "true"),
        ],
    )
    .await;
    assert_eq!(app.get("/catalog/sitemap.xsl").await.status(), 200);
    assert_eq!(app.get("/sitemap.xsl").await.status(), 404);
    let xml = app.get("/catalog/sitemap.xml").await.text().await.unwrap();
    assert!(
        xml.contains(&format!("{PI}https://example.com/catalog/sitemap.xsl\"?>")),
        "{xml}"
    );
}

/// `(href, text)` of every link to a sitemap entry, in document order, text unescaped.
fn links(dom: &str) -> Vec<(String, String)> {
    dom.split("<a class=\"loc\" href=\"")
        .skip(1)
        .map(|rest| {
            let (href, rest) = rest.split_once("\">").expect("a link");
            let (text, _) = rest.split_once("</a>").expect("a link's end");
            (unescape_html(href), unescape_html(text))
        })
        .collect()
}

fn unescape_html(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The text of the first element with `id`.
fn text_of_id(dom: &str, id: &str) -> String {
    let start = dom
        .find(&format!("id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no #{id} in\n{dom}"));
    let rest = &dom[start + id.len() + 6..];
    rest[..rest.find('<').unwrap()].to_string()
}

#[tokio::test]
async fn chromium_shows_pages_and_the_index_as_sortable_tables() {
    let browser = chromium();
    let db = TestDb::new().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    drop(spawn_app(&db.url, &[]).await);
    db.exec(
        "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority) VALUES \
         (1, '/fr/article.php?AIndex=12&lang=fr', '2024-05-01T12:00:00Z', 'weekly', 0.8), \
         (2, '/café-crème?q=<b>&x=''1''', '2025-01-03T08:30:00Z', NULL, 0.3), \
         (3, '/about', NULL, 'monthly', NULL), \
         (4, '/', '2026-02-01T00:00:00Z', 'daily', 1.0), \
         (5, '/next-page', NULL, NULL, NULL)",
    )
    .await;
    let app = spawn_app_on(
        listener,
        &db.url,
        &[
            ("SITEMAP_BASE_URL", &base),
            ("SITEMAP_STYLESHEET", "true"),
            ("SITEMAP_PAGE_SIZE", "4"),
        ],
    )
    .await;
    let page_url = app.url("/sitemap-1.xml");

    // Sorted by priority, highest first, from the address; empty cells last.
    let dom = dump_dom(&browser, &format!("{page_url}#sort=-priority")).await;
    assert!(
        dom.contains("<table class=\"sortable\" id=\"urls\">"),
        "{dom}"
    );
    assert_eq!(text_of_id(&dom, "url-count"), "4");
    assert!(dom.contains("aria-sort=\"descending\""), "{dom}");
    let expected = [
        (base.clone(), base.clone()),
        (
            format!("{base}fr/article.php?AIndex=12&lang=fr"),
            format!("{base}fr/article.php?AIndex=12&lang=fr"),
        ),
        (
            format!("{base}caf%C3%A9-cr%C3%A8me?q=%3Cb%3E&x=%271%27"),
            format!("{base}café-crème?q=<b>&x='1'"),
        ),
        (format!("{base}about"), format!("{base}about")),
    ];
    assert_eq!(links(&dom), expected);
    assert!(dom.contains("2024-05-01 12:00 UTC"), "{dom}");
    assert!(!dom.contains("&amp;amp;"), "entities shown as text: {dom}");

    let index = dump_dom(&browser, &app.url("/sitemap_index.xml")).await;
    assert!(
        index.contains("<table class=\"sortable\" id=\"sitemaps\">"),
        "{index}"
    );
    assert_eq!(text_of_id(&index, "sitemap-count"), "2");
    assert_eq!(
        links(&index),
        [
            (
                format!("{base}sitemap-1.xml"),
                format!("{base}sitemap-1.xml.gz")
            ),
            (
                format!("{base}sitemap-2.xml"),
                format!("{base}sitemap-2.xml.gz")
            ),
        ],
        "links open the XML form, which a browser shows"
    );

    let png = screenshot_path("sitemap-page.png");
    std::fs::create_dir_all(png.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&png);
    run_chromium(
        &browser,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,900",
        ],
        &page_url,
    )
    .await;
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(bytes.len() > 20_000, "{} bytes: a blank page?", bytes.len());
    println!("screenshot of a rendered sitemap page: {}", png.display());
}

#[tokio::test]
async fn chromium_counts_images_and_alternates_when_a_sitemap_has_them() {
    use axum::routing::get;
    let browser = chromium();
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
{PI}/sitemap.xsl"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
<url><loc>https://e.com/a</loc>
  <xhtml:link rel="alternate" hreflang="fr" href="https://e.com/fr/a"/>
  <xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/a"/>
  <image:image><image:loc>https://cdn.e.com/1.jpg</image:loc></image:image>
  <image:image><image:loc>https://cdn.e.com/2.jpg</image:loc></image:image>
  <image:image><image:loc>https://cdn.e.com/3.jpg</image:loc></image:image>
</url>
<url><loc>https://e.com/b</loc></url>
</urlset>
"#
    );
    // A plain file server: browsers apply only stylesheets of the document's own origin.
    let files = axum::Router::new()
        .route(
            "/ext.xml",
            get(move || async move { ([("content-type", "application/xml")], xml) }),
        )
        .route(
            "/sitemap.xsl",
            get(|| async { ([("content-type", "text/xsl")], sitemapd::stylesheet::BODY) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, files).await });

    let dom = dump_dom(&browser, &format!("http://{addr}/ext.xml")).await;
    server.abort();
    assert!(dom.contains(">Images</th>"), "{dom}");
    assert!(dom.contains(">Alternates</th>"), "{dom}");
    let cells: Vec<&str> = dom
        .split("<td class=\"num\">")
        .skip(1)
        .map(|rest| rest.split_once("</td>").unwrap().0)
        .collect();
    // Priority, images, alternates for each of the two URLs.
    assert_eq!(cells, ["", "3", "2", "", "0", "0"]);
}
