//! Content codings: every file that can be compressed goes out in brotli to a client that
//! allows `br` at least as much as gzip, in gzip to one that takes only gzip, as it is
//! otherwise; each coding under a strong ETag of its own, with `Vary: Accept-Encoding`, and
//! revalidated per coding. `/sitemap-K.xml.gz` stays a gzip file whatever is accepted.

use std::io::Read;

use crate::helpers::*;

crate::on_each_database!(
    every_compressible_file_goes_out_in_the_coding_asked_for,
    each_coding_revalidates_under_its_own_etag_without_rendering,
    the_gzip_file_stays_a_gzip_file_whatever_is_accepted,
    q_values_choose_between_brotli_gzip_and_none,
    head_says_what_a_get_would_send_in_each_coding,
);

/// What Googlebot and ChatGPT's agent send.
const CRAWLER: &str = "gzip, deflate, br";

/// Files of every kind that is sent compressed when the client allows it.
const COMPRESSIBLE: [&str; 6] = [
    "/sitemap-1.xml",
    "/sitemap-3.xml",
    "/sitemap_index.xml",
    "/robots.txt",
    "/feed.atom",
    "/feed.rss",
];

/// A site of 3 full files: ids 10, 20, …, 300, ten per file.
async fn three_pages(backend: Backend) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let rows: Vec<(i64, String)> = (1..=30)
        .map(|i| (i * 10, format!("/p/{}?a=1&b={}", i * 10, i % 3)))
        .collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    let app = spawn_app(&db.url, &[("SITEMAP_PAGE_SIZE", "10")]).await;
    (db, app)
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096)
        .read_to_end(&mut out)
        .expect("a complete brotli stream");
    out
}

/// A response's coding, ETag and decoded body.
struct Sent {
    encoding: String,
    etag: String,
    vary: String,
    decoded: Vec<u8>,
}

async fn fetch(app: &TestApp, path: &str, accept_encoding: Option<&str>) -> Sent {
    let headers: Vec<(&str, &str)> = accept_encoding
        .map(|value| ("accept-encoding", value))
        .into_iter()
        .collect();
    let resp = app.get_with(path, &headers).await;
    assert_eq!(resp.status(), 200, "{path} with {accept_encoding:?}");
    let encoding = header(&resp, "content-encoding").to_string();
    let etag = header(&resp, "etag").to_string();
    let vary = header(&resp, "vary").to_string();
    let body = resp.bytes().await.unwrap();
    let decoded = match encoding.as_str() {
        "br" => unbrotli(&body),
        "gzip" => gunzip(&body),
        "" => body.to_vec(),
        other => panic!("{path}: unexpected Content-Encoding {other}"),
    };
    Sent {
        encoding,
        etag,
        vary,
        decoded,
    }
}

async fn every_compressible_file_goes_out_in_the_coding_asked_for(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    for path in COMPRESSIBLE {
        let plain = fetch(&app, path, None).await;
        let brotli = fetch(&app, path, Some(CRAWLER)).await;
        let gzip = fetch(&app, path, Some("gzip")).await;
        assert_eq!(plain.encoding, "", "{path}");
        assert_eq!(brotli.encoding, "br", "{path}");
        assert_eq!(gzip.encoding, "gzip", "{path}");
        assert!(!plain.decoded.is_empty(), "{path}");
        assert_eq!(
            brotli.decoded, plain.decoded,
            "{path}: brotli decodes to the file"
        );
        assert_eq!(
            gzip.decoded, plain.decoded,
            "{path}: gzip decodes to the file"
        );
        for sent in [&plain, &brotli, &gzip] {
            assert_eq!(sent.vary, "Accept-Encoding", "{path}");
            assert!(
                sent.etag.starts_with('"') && !sent.etag.starts_with("W/"),
                "{path}: strong ETag {}",
                sent.etag
            );
        }
        let tags = [&plain.etag, &brotli.etag, &gzip.etag];
        assert!(
            tags[0] != tags[1] && tags[1] != tags[2] && tags[0] != tags[2],
            "{path}: one ETag per coding: {tags:?}"
        );
        // The same coding asked again: the same bytes under the same ETag (a cached render).
        let again = fetch(&app, path, Some(CRAWLER)).await;
        assert_eq!(again.etag, brotli.etag, "{path}");
        assert_eq!(again.decoded, plain.decoded, "{path}");
    }
    assert_valid(
        &fetch(&app, "/sitemap-2.xml", Some("br")).await.decoded,
        Schema::Urlset,
    );
}

async fn each_coding_revalidates_under_its_own_etag_without_rendering(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    for path in COMPRESSIBLE {
        for accepted in [CRAWLER, "gzip", "identity"] {
            let first = fetch(&app, path, Some(accepted)).await;
            let renders = app.metric("sitemapd_renders_total").await;
            let headers = [
                ("accept-encoding", accepted),
                ("if-none-match", &first.etag),
            ];
            let again = app.get_with(path, &headers).await;
            assert_eq!(again.status(), 304, "{path} with {accepted}");
            assert_eq!(header(&again, "etag"), first.etag, "{path} with {accepted}");
            assert_eq!(header(&again, "vary"), "Accept-Encoding", "{path}");
            assert!(again.bytes().await.unwrap().is_empty());
            assert_eq!(
                app.metric("sitemapd_renders_total").await,
                renders,
                "{path} with {accepted}: a 304 renders nothing"
            );
        }
        // The tag of one coding does not stand for another: those bytes differ.
        let brotli = fetch(&app, path, Some(CRAWLER)).await;
        let headers = [("accept-encoding", "gzip"), ("if-none-match", &brotli.etag)];
        let other = app.get_with(path, &headers).await;
        assert_eq!(other.status(), 200, "{path}");
        assert_eq!(header(&other, "content-encoding"), "gzip", "{path}");
    }
}

async fn the_gzip_file_stays_a_gzip_file_whatever_is_accepted(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    let mut answers = Vec::new();
    for accepted in [None, Some(CRAWLER), Some("br"), Some("gzip")] {
        let headers: Vec<(&str, &str)> = accepted
            .map(|a| ("accept-encoding", a))
            .into_iter()
            .collect();
        let resp = app.get_with("/sitemap-2.xml.gz", &headers).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "content-type"), "application/gzip");
        assert_eq!(header(&resp, "content-encoding"), "", "{accepted:?}");
        let etag = header(&resp, "etag").to_string();
        answers.push((etag, resp.bytes().await.unwrap()));
    }
    assert!(
        answers.windows(2).all(|w| w[0] == w[1]),
        "the same file each time"
    );
    let xml = gunzip(&answers[0].1);
    assert_eq!(
        xml,
        fetch(&app, "/sitemap-2.xml", Some(CRAWLER)).await.decoded
    );
}

async fn q_values_choose_between_brotli_gzip_and_none(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    let cases = [
        ("br;q=0", ""),
        ("gzip;q=1, br;q=0.5", "gzip"),
        ("gzip, br;q=0", "gzip"),
        ("gzip;q=0.5, br", "br"),
        ("*", "br"),
        ("*, br;q=0", "gzip"),
        ("*;q=0", ""),
        ("deflate, zstd", ""),
    ];
    for path in ["/sitemap-1.xml", "/robots.txt"] {
        for (accepted, expected) in cases {
            let sent = fetch(&app, path, Some(accepted)).await;
            assert_eq!(
                sent.encoding, expected,
                "{path} with Accept-Encoding: {accepted}"
            );
        }
    }
}

async fn head_says_what_a_get_would_send_in_each_coding(backend: Backend) {
    let (_db, app) = three_pages(backend).await;
    for path in ["/sitemap_index.xml", "/robots.txt", "/sitemap-1.xml"] {
        for accepted in [CRAWLER, "gzip", "identity"] {
            let get = app.get_with(path, &[("accept-encoding", accepted)]).await;
            let (etag, encoding) = (
                header(&get, "etag").to_string(),
                header(&get, "content-encoding").to_string(),
            );
            let length = get.bytes().await.unwrap().len();
            let head = app
                .client
                .head(app.url(path))
                .header("accept-encoding", accepted)
                .send()
                .await
                .unwrap();
            assert_eq!(head.status(), 200);
            assert_eq!(header(&head, "etag"), etag, "{path} with {accepted}");
            assert_eq!(
                header(&head, "content-encoding"),
                encoding,
                "{path} with {accepted}"
            );
            assert_eq!(header(&head, "vary"), "Accept-Encoding");
            let said = header(&head, "content-length").to_string();
            // A page's length is known without rendering only once it is cached.
            assert!(
                said.is_empty() || said == length.to_string(),
                "{path}: {said} vs {length}"
            );
            if !path.starts_with("/sitemap-") {
                assert_eq!(said, length.to_string(), "{path} with {accepted}");
            }
            assert!(head.bytes().await.unwrap().is_empty());
        }
    }
}
