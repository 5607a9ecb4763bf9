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
