//! `sitemapd export DIR` into a directory a static host serves: files replaced whole by rename,
//! symlinks never followed, files of an earlier layout removed, nothing else touched.

use crate::helpers::*;

crate::on_each_database!(export_replaces_links_and_removes_an_earlier_layout,);

fn export_into(db: &TestDb, dir: &std::path::Path, page_size: &str) -> String {
    let out = Sitemapd::new([std::ffi::OsStr::new("export"), dir.as_os_str()])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("SITEMAP_PAGE_SIZE", page_size)
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn export_replaces_links_and_removes_an_earlier_layout(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "/c"), (4, "/d"), (5, "/e")])
        .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    // An earlier layout: five files of one URL each.
    export_into(&db, out, "1");
    assert!(out.join("sitemap-5.xml.gz").exists());
    // A symlink where robots.txt goes, pointing at a file that must stay as it is.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("precious.txt");
    std::fs::write(&target, "keep me\n").unwrap();
    std::fs::remove_file(out.join("robots.txt")).unwrap();
    std::os::unix::fs::symlink(&target, out.join("robots.txt")).unwrap();
    std::fs::write(out.join("index.html"), "<p>the site</p>").unwrap();
    std::fs::write(out.join("robots.txt.bak"), "old").unwrap();

    export_into(&db, out, "50000");

    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
    let robots = std::fs::symlink_metadata(out.join("robots.txt")).unwrap();
    assert!(
        robots.file_type().is_file(),
        "robots.txt is a regular file now"
    );
    assert!(std::fs::read_to_string(out.join("robots.txt"))
        .unwrap()
        .contains("Sitemap: https://www.example.com/sitemap_index.xml"));
    let mut names: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "feed.atom",
            "feed.rss",
            "index.html",
            "robots.txt",
            "robots.txt.bak",
            "sitemap-1.txt",
            "sitemap-1.xml.gz",
            "sitemap.txt",
            "sitemap.xml",
            "sitemap_index.xml",
        ]
    );
    assert_eq!(
        locs(&gunzip(
            &std::fs::read(out.join("sitemap-1.xml.gz")).unwrap()
        ))
        .len(),
        5
    );
}

/// A registry extension of one verifiable crawler whose IP ranges are published at `addr`: a
/// verifier fetches them as soon as it starts.
fn crawler_with_ranges_at(addr: std::net::SocketAddr) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        format!(
            "[[crawler]]\nname = \"RangeBot\"\ntokens = [\"RangeBot\"]\nuser_agent = [\"RangeBot\"]\n\
             operator = \"Nobody\"\npurpose = \"search\"\nverify_dns = []\n\
             verify_ranges = [\"http://{addr}/ranges.json\"]\ndocs = []\n"
        ),
    )
    .unwrap();
    file
}

/// On a server `export` reads the environment the service reads (`.env`, `ACCESS_LOG_ADDR`,
/// `CRAWLER_VERIFY`): it still writes the files, and opens neither the access log's UDP port
/// (the running service holds it) nor a connection to fetch crawlers' IP ranges.
#[tokio::test]
async fn an_export_beside_the_running_service_opens_no_socket() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let app = spawn_app(
        &db.url,
        &[
            ("ACCESS_LOG_ADDR", "127.0.0.1:0"),
            ("CRAWLER_VERIFY", "off"),
        ],
    )
    .await;
    let access_log = app
        .app
        .crawl_log
        .as_deref()
        .expect("ACCESS_LOG_ADDR is set")
        .local_addr();
    let ranges = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ranges.set_nonblocking(true).unwrap();
    let registry = crawler_with_ranges_at(ranges.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let export = Sitemapd::new([std::ffi::OsStr::new("export"), dir.path().as_os_str()])
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("ACCESS_LOG_ADDR", access_log.to_string())
        .env("CRAWLER_VERIFY", "on")
        .env("CRAWLERS_FILE", registry.path());
    let out = tokio::task::spawn_blocking(move || export.output())
        .await
        .unwrap();

    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(dir.path().join("sitemap_index.xml")).unwrap();
    assert!(index.contains("sitemap-1.xml.gz"), "{index}");
    assert!(
        std::net::UdpSocket::bind(access_log).is_err(),
        "the service still holds {access_log}"
    );
    assert_eq!(
        ranges.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "export fetched no IP ranges"
    );
}
