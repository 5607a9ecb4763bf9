//! A sitemap opened in a browser without XSLT (Chromium `--disable-features=XSLT`, what Chrome
//! does from M158): readable through `/sitemap.css`, announced after `/sitemap.xsl`, while every
//! client, Googlebot's `text/html`-first Accept included, gets the same XML bytes.

use crate::helpers::*;

const NO_XSLT: &str = "--disable-features=XSLT";
/// The colour `templates/sitemap.css` gives each `<loc>`; Chromium's XML viewer uses none like it.
const LOC_BLUE: [u8; 3] = [0x0b, 0x6b, 0xcb];
const GOOGLEBOT_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// How many pixels of the PNG at `path` are within a few steps of `rgb`.
fn pixels_near(path: &std::path::Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::fs::File::open(path).expect("the screenshot"));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    buf[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .filter(|p| (0..3).all(|i| p[i].abs_diff(rgb[i]) <= 6))
        .count()
}

async fn screenshot(browser: &str, name: &str, url: &str) -> std::path::PathBuf {
    let png = screenshot_path(name);
    std::fs::create_dir_all(png.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&png);
    let shot = format!("--screenshot={}", png.display());
    run_chromium(browser, &[NO_XSLT, &shot, "--window-size=1280,900"], url).await;
    png
}

#[tokio::test]
async fn without_xslt_a_sitemap_is_still_a_page_and_crawlers_get_the_same_xml() {
    let browser = chromium();
    let db = TestDb::new().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    drop(spawn_app(&db.url, &[]).await);
    db.insert(&[(1, "/a"), (2, "/b?x=1&y=2"), (3, "/c"), (4, "/d")])
        .await;
    let vars = [
        ("SITEMAP_BASE_URL", base.as_str()),
        ("SITEMAP_STYLESHEET", "true"),
        ("SITEMAP_PAGE_SIZE", "2"),
    ];
    let app = spawn_app_on(listener, &db.url, &vars).await;

    let css = app.get("/sitemap.css").await;
    assert_eq!(css.status(), 200);
    assert_eq!(header(&css, "content-type"), "text/css; charset=utf-8");
    let etag = header(&css, "etag").to_string();
    assert_eq!(
        app.get_with("/sitemap.css", &[("if-none-match", &etag)])
            .await
            .status(),
        304
    );

    for path in ["/sitemap-1.xml", "/sitemap_index.xml"] {
        let dom = dump_dom(&browser, &app.url(path)).await;
        let dom_without = run_chromium(&browser, &[NO_XSLT, "--dump-dom"], &app.url(path)).await;
        assert!(
            dom.contains("<table"),
            "XSLT still applies where it runs: {dom}"
        );
        assert!(
            !dom_without.contains("xml-viewer-style") && !dom_without.contains("<table"),
            "{path} without XSLT: the document itself, styled, not the raw viewer: {dom_without}"
        );
        assert!(
            dom_without.contains(&format!("<loc>{base}")),
            "{dom_without}"
        );
    }
    for (name, path) in [
        ("no-xslt-page.png", "/sitemap-1.xml"),
        ("no-xslt-index.png", "/sitemap_index.xml"),
    ] {
        let png = screenshot(&browser, name, &app.url(path)).await;
        let blue = pixels_near(&png, LOC_BLUE);
        assert!(
            blue > 50,
            "{path}: {blue} pixels in the URLs' colour, so the CSS applied"
        );
        println!("screenshot without XSLT: {}", png.display());
    }

    // Googlebot asks for text/html first: it still gets the XML, the same bytes as anyone.
    for path in ["/sitemap-1.xml", "/sitemap_index.xml", "/sitemap.xml"] {
        let plain = app.get(path).await;
        let plain_type = header(&plain, "content-type").to_string();
        let plain = plain.bytes().await.unwrap();
        let as_googlebot = app.get_with(path, &[("accept", GOOGLEBOT_ACCEPT)]).await;
        assert_eq!(header(&as_googlebot, "content-type"), plain_type, "{path}");
        assert!(
            plain_type.starts_with("application/xml"),
            "{path}: {plain_type}"
        );
        assert_eq!(as_googlebot.bytes().await.unwrap(), plain, "{path}");
    }
}
