//! Extensions: alternates (`xhtml:link`) and images (`image:image`) from their tables, with
//! their namespaces declared only in files that use them, valid against the extension schemas;
//! videos (`video:video`) valid against Google's schema.

use crate::helpers::*;

crate::on_each_database!(
    extensions_are_written_and_their_namespaces_declared_only_where_used,
    the_plain_and_text_forms_agree_with_the_gzip_file,
    an_added_image_changes_only_its_file_and_declares_the_namespace_there,
    extension_bytes_count_toward_the_size_limit,
    videos_are_written_and_a_row_without_what_google_requires_is_counted,
);

const XHTML: &str = "xmlns:xhtml=\"http://www.w3.org/1999/xhtml\"";
const IMAGE: &str = "xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\"";
const VIDEO: &str = "xmlns:video=\"http://www.google.com/schemas/sitemap-video/1.1\"";

/// 3 files of 10 entries (ids 10..300); images on file 1, alternates on file 2, none on file 3.
async fn site_with_extensions(backend: Backend) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<Row> = (1..=30)
        .map(|i| Row::new(i * 10, &format!("/p/{}", i * 10)))
        .collect();
    db.insert_rows(&rows).await;
    db.insert_images(&[
        (10, "https://cdn.example.net/a/café.jpg?w=1&h=2"),
        (10, "/img/second.png"),
        (20, "https://cdn.example.net/b.jpg"),
        (20, "ftp://cdn.example.net/no.jpg"),
        (9999, "https://cdn.example.net/orphan.jpg"),
    ])
    .await;
    db.insert_alternates(&[
        (110, "fr", "https://www.example.fr/p/110"),
        (110, "en-GB", "/p/110"),
        (110, "x-default", "/p/110"),
        (120, "not a tag", "https://www.example.fr/p/120"),
    ])
    .await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    (db, app)
}

async fn page_xml(app: &TestApp, no: i64) -> String {
    let gz = app
        .get(&format!("/sitemap-{no}.xml.gz"))
        .await
        .bytes()
        .await
        .unwrap();
    let xml = gunzip(&gz);
    assert_valid(&xml, Schema::Urlset);
    String::from_utf8(xml).unwrap()
}

fn root(xml: &str) -> &str {
    let start = xml.find("<urlset").unwrap();
    &xml[start..start + xml[start..].find('>').unwrap()]
}

async fn extensions_are_written_and_their_namespaces_declared_only_where_used(backend: Backend) {
    let (_db, app) = site_with_extensions(backend).await;
    let one = page_xml(&app, 1).await;
    assert!(
        root(&one).contains(IMAGE) && !root(&one).contains(XHTML),
        "{one}"
    );
    assert!(one.contains(
        "<url><loc>https://www.example.com/p/10</loc>\
         <image:image><image:loc>https://cdn.example.net/a/caf%C3%A9.jpg?w=1&amp;h=2</image:loc></image:image>\
         <image:image><image:loc>https://www.example.com/img/second.png</image:loc></image:image></url>"
    ), "{one}");
    assert!(!one.contains("ftp://") && !one.contains("orphan"));

    let two = page_xml(&app, 2).await;
    assert!(
        root(&two).contains(XHTML) && !root(&two).contains(IMAGE),
        "{two}"
    );
    assert!(two.contains(
        "<url><loc>https://www.example.com/p/110</loc>\
         <xhtml:link rel=\"alternate\" hreflang=\"en-GB\" href=\"https://www.example.com/p/110\"/>\
         <xhtml:link rel=\"alternate\" hreflang=\"fr\" href=\"https://www.example.fr/p/110\"/>\
         <xhtml:link rel=\"alternate\" hreflang=\"x-default\" href=\"https://www.example.com/p/110\"/></url>"
    ), "{two}");
    assert!(two.contains("<url><loc>https://www.example.com/p/120</loc></url>"));

    let three = page_xml(&app, 3).await;
    assert!(!three.contains("xmlns:xhtml") && !three.contains("xmlns:image"));

    // Bad extension rows are counted, and cost their entries nothing.
    assert_eq!(
        app.all_locs()
            .await
            .iter()
            .filter(|l| l.contains("/p/"))
            .count(),
        30
    );
    let skipped = |reason: &str| format!("{} 1", skipped_metric(reason));
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(&skipped("invalid_image")), "{metrics}");
    assert!(metrics.contains(&skipped("invalid_alternate")), "{metrics}");
}

async fn the_plain_and_text_forms_agree_with_the_gzip_file(backend: Backend) {
    let (_db, app) = site_with_extensions(backend).await;
    let gz = page_xml(&app, 1).await;
    let plain = app.get("/sitemap-1.xml").await.text().await.unwrap();
    assert_eq!(plain, gz);
    let text = app.get("/sitemap-1.txt").await.text().await.unwrap();
    let expected: Vec<String> = (1..=10).map(|i| format!("{BASE}p/{}", i * 10)).collect();
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

async fn an_added_image_changes_only_its_file_and_declares_the_namespace_there(backend: Backend) {
    let (db, app) = site_with_extensions(backend).await;
    let etag = |no: i64| {
        let app = &app;
        async move { header(&app.get(&format!("/sitemap-{no}.xml.gz")).await, "etag").to_string() }
    };
    let before = [etag(1).await, etag(2).await, etag(3).await];
    db.insert_images(&[(250, "https://cdn.example.net/new.jpg")])
        .await;
    let now = eventually("a new ETag of file 3", || etag(3), |now| *now != before[2]).await;
    assert_ne!(
        now, before[2],
        "the image table's trigger reaches the service"
    );
    assert_eq!(
        [etag(1).await, etag(2).await],
        [before[0].clone(), before[1].clone()]
    );
    let three = page_xml(&app, 3).await;
    assert!(root(&three).contains(IMAGE));
    assert!(three.contains("<image:loc>https://cdn.example.net/new.jpg</image:loc>"));
}

async fn extension_bytes_count_toward_the_size_limit(backend: Backend) {
    // 30 entries with 1,000 images of about 2 KB each: about 62 MB of XML, more than one file
    // may hold although 30 URLs are far below the count limit.
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<Row> = (1..=30).map(|i| Row::new(i, &format!("/p/{i}"))).collect();
    db.insert_rows(&rows).await;
    let images: Vec<String> = (1..=30)
        .flat_map(|e| {
            (1..=1000).map(move |n| format!("https://cdn.example.net/{e}/{n}/{}", "x".repeat(2000)))
        })
        .collect();
    let images: Vec<(i64, &str)> = images
        .iter()
        .enumerate()
        .map(|(i, loc)| (i as i64 / 1000 + 1, loc.as_str()))
        .collect();
    db.insert_images(&images).await;
    let app = spawn_app(&db.url, &[]).await;
    let snapshot = app.app.site().first().snapshot();
    assert!(snapshot.layout.len() >= 2, "split by bytes");
    let mut urls = 0;
    for page in snapshot.layout.pages() {
        let xml = page_xml(&app, page.no).await;
        assert!(
            xml.len() <= 52_428_800,
            "file {} is {} bytes",
            page.no,
            xml.len()
        );
        assert_eq!(page.bytes, xml.len(), "the sweep measured the bytes served");
        assert_eq!(xml.matches("<image:image>").count(), 1000 * page.urls);
        urls += page.urls;
    }
    assert_eq!(urls, 30);
}

async fn videos_are_written_and_a_row_without_what_google_requires_is_counted(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/recipes/steak"), (2, "/recipes/soup"), (3, "/about")])
        .await;
    db.insert_videos(&[
        VideoRow::complete(1),
        // A player instead of the file, text to escape, a duration Google refuses (left out).
        VideoRow {
            title: Some("Tom & Jerry <3"),
            content_loc: None,
            player_loc: Some("/player?v=2&autoplay=1"),
            duration: Some(99_999),
            publication_date: None,
            ..VideoRow::complete(1)
        },
        VideoRow {
            thumbnail_loc: None,
            ..VideoRow::complete(2)
        },
        VideoRow {
            content_loc: None,
            player_loc: None,
            ..VideoRow::complete(2)
        },
        VideoRow {
            description: Some("   "),
            ..VideoRow::complete(2)
        },
    ])
    .await;
    let app = spawn_app(&db.url, &[]).await;
    // Checked against Google's sitemap-video.xsd on the way.
    let xml = page_xml(&app, 1).await;
    assert!(root(&xml).contains(VIDEO), "{xml}");
    assert!(
        xml.contains(
            "<url><loc>https://www.example.com/recipes/steak</loc>\
             <video:video><video:thumbnail_loc>https://cdn.example.net/thumbs/1.jpg</video:thumbnail_loc>\
             <video:title>Grilling steaks for summer</video:title>\
             <video:description>Alkis shows you how to get perfectly done steaks &amp; more.</video:description>\
             <video:content_loc>https://cdn.example.net/video/1.mp4</video:content_loc>\
             <video:duration>600</video:duration>\
             <video:publication_date>2026-11-01T10:00:00"
        ),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<video:video><video:thumbnail_loc>https://cdn.example.net/thumbs/1.jpg</video:thumbnail_loc>\
             <video:title>Tom &amp; Jerry &lt;3</video:title>\
             <video:description>Alkis shows you how to get perfectly done steaks &amp; more.</video:description>\
             <video:player_loc>https://www.example.com/player?v=2&amp;autoplay=1</video:player_loc>\
             </video:video></url>"
        ),
        "{xml}"
    );
    // The entries whose videos were all refused stay, without them.
    assert!(
        xml.contains("<url><loc>https://www.example.com/recipes/soup</loc></url>"),
        "{xml}"
    );
    assert_eq!(app.all_locs().await.len(), 3);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(&format!("{} 3", skipped_metric("invalid_video"))),
        "{metrics}"
    );
    // `check` counts them as rows of the videos table, not as entries left out.
    let (_, stdout) = check(&db, &[]);
    assert!(stdout.contains("invalid_video"), "{stdout}");
    assert!(stdout.contains("entries served: 3"), "{stdout}");
}
