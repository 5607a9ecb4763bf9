//! `import` of hostile files: memory does not follow the largest node (a huge `<loc>`, text or
//! comment is refused with a clear message after what came before it is imported), and an index
//! that lists one file again and again reads it once.

use std::io::Write;
use std::path::Path;

use crate::helpers::*;

crate::on_each_database!(an_index_listing_one_file_many_times_reads_it_once);

fn import(db: &TestDb, dir: &Path, file: &str) -> (Option<i32>, String) {
    let out = Sitemapd::new(["import", file])
        .current_dir(dir)
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", &db.url)
        .output();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// A gzip file: `head`, then `fill` repeated `times`, then `tail`, compressed as it is written.
fn gzip_file(path: &Path, head: &str, fill: &[u8], times: usize, tail: &str) {
    let file = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    gz.write_all(head.as_bytes()).unwrap();
    for _ in 0..times {
        gz.write_all(fill).unwrap();
    }
    gz.write_all(tail.as_bytes()).unwrap();
    gz.finish().unwrap();
}

const URLSET: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n<url><loc>https://www.example.com/before</loc></url>\n";

#[tokio::test]
async fn a_huge_loc_or_comment_is_refused_without_holding_it() {
    let db = TestDb::on(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let chunk = vec![b'a'; 1 << 20];
    // 256 MiB of one <loc>, a few hundred KB on disk.
    gzip_file(
        &dir.path().join("loc.xml.gz"),
        &format!("{URLSET}<url><loc>https://www.example.com/"),
        &chunk,
        256,
        "</loc></url>\n<url><loc>https://www.example.com/after</loc></url>\n</urlset>\n",
    );
    let (code, said) = import(&db, dir.path(), "loc.xml.gz");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("longer than 65536 bytes"), "{said}");
    assert!(said.contains("files failed: 1"), "{said}");
    assert_eq!(
        db.strings("SELECT loc FROM sitemap_entries ORDER BY id")
            .await,
        ["https://www.example.com/before"],
        "what came before the huge node is imported"
    );

    gzip_file(
        &dir.path().join("comment.xml.gz"),
        &format!("{URLSET}<!--"),
        &chunk,
        256,
        "-->\n</urlset>\n",
    );
    let (code, said) = import(&db, dir.path(), "comment.xml.gz");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("longer than 65536 bytes"), "{said}");
}

async fn an_index_listing_one_file_many_times_reads_it_once(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s-1.xml"),
        format!("{URLSET}<url><loc>https://www.example.com/one</loc></url>\n</urlset>\n"),
    )
    .unwrap();
    let mut index = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    for _ in 0..50_000 {
        index.push_str("<sitemap><loc>https://www.example.com/s-1.xml</loc></sitemap>\n");
    }
    index.push_str("</sitemapindex>\n");
    std::fs::write(dir.path().join("index.xml"), index).unwrap();
    let (code, said) = import(&db, dir.path(), "index.xml");
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("files listed again by the index (read once): 49999"),
        "{said}"
    );
    assert!(said.contains("files read: 2"), "{said}");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM sitemap_entries").await, 2);
}
