//! `sitemapd import`: the real binary reading files and stdin into PostgreSQL and SQLite.

use std::io::Write;
use std::path::Path;
use std::process::Output;

use crate::helpers::*;

crate::on_each_database!(
    an_xml_sitemap_is_imported_with_its_fields_and_extensions,
    a_text_sitemap_on_stdin_adds_its_urls_and_leaves_existing_entries_alone,
    an_index_imports_its_files_and_reports_a_missing_one,
    importing_again_keeps_ids_and_takes_the_files_fields_and_extensions,
    rows_the_server_would_skip_are_counted_with_examples_not_imported,
    a_malformed_file_is_reported_with_its_position_and_what_came_before_stays,
    an_exported_site_imported_into_an_empty_database_serves_the_same_urls,
);

const NS: &str = r#"xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1""#;

/// Runs `sitemapd import ARG` in `dir` with SITEMAP_BASE_URL=BASE and `database_url`,
/// feeding `stdin` when given.
fn import(database_url: &str, dir: &Path, arg: &str, stdin: Option<&[u8]>) -> Output {
    import_with(database_url, dir, arg, stdin, &[])
}

fn import_with(
    database_url: &str,
    dir: &Path,
    arg: &str,
    stdin: Option<&[u8]>,
    vars: &[(&str, &str)],
) -> Output {
    Sitemapd::new(["import", arg])
        .current_dir(dir)
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", database_url)
        .envs(vars)
        .stdin(stdin.unwrap_or_default())
        .output()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts the exit code, showing everything the command said when it differs.
fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(out),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn urlset(urls: &str) -> String {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset {NS}>\n{urls}</urlset>\n")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

async fn migrated_db(backend: Backend) -> TestDb {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db
}

async fn an_xml_sitemap_is_imported_with_its_fields_and_extensions(backend: Backend) {
    let db = TestDb::on(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let xml = urlset(
        r#"  <url>
    <loc>https://www.example.com/fr/article.php?AIndex=12&amp;lang=fr</loc>
    <lastmod>2024-05-01T14:00:00+02:00</lastmod><changefreq>Weekly</changefreq><priority>0.8</priority>
    <xhtml:link rel="alternate" hreflang="en" href="https://www.example.com/en/article.php?AIndex=12"/>
    <xhtml:link rel="alternate" hreflang="x-default" href="https://www.example.com/article.php?AIndex=12"/>
    <image:image><image:loc>https://cdn.example.net/12/a.jpg</image:loc></image:image>
    <image:image><image:loc>https://cdn.example.net/12/b.jpg</image:loc></image:image>
    <video:video xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"><video:title>t</video:title></video:video>
    <video:video xmlns:video="http://www.google.com/schemas/sitemap-video/1.1">
      <video:thumbnail_loc>https://cdn.example.net/12/t.jpg</video:thumbnail_loc>
      <video:title>Grilling &amp; more</video:title><video:description>How to</video:description>
      <video:player_loc allow_embed="yes">https://www.example.com/player?v=12</video:player_loc>
      <video:duration>600</video:duration><video:rating>4.2</video:rating>
    </video:video>
    <unknown:thing xmlns:unknown="urn:x"/>
  </url>
  <url><loc>https://www.example.com/caf%C3%A9</loc><lastmod>2024-06</lastmod></url>
  <url><loc>https://www.example.com/2024/merger</loc>
    <news:news xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
      <news:publication><news:name>The Example Times</news:name><news:language>en</news:language></news:publication>
      <news:publication_date>2024-07-01T10:00:00Z</news:publication_date><news:title>Merger</news:title>
    </news:news>
  </url>
"#,
    );
    std::fs::write(dir.path().join("sitemap.xml"), xml).unwrap();

    let out = import(&db.url, dir.path(), "sitemap.xml", None);
    assert_exit(&out, 0);
    let summary = stdout(&out);
    for line in [
        "files read: 1",
        "entries inserted: 3",
        "entries skipped: 0",
        "alternates: 2",
        "images: 2",
        "videos: 1",
        "invalid tags dropped: 1",
        "unknown extension elements ignored: 1",
    ] {
        assert!(summary.contains(line), "{line:?} in\n{summary}");
    }

    let entries = db.entries().await;
    assert_eq!(entries.len(), 3);
    // The article's publication date is its entry's lastmod.
    assert_eq!(entries[2].2.as_deref(), Some("2024-07-01T10:00:00"));
    let (id, loc, lastmod, changefreq, priority) = &entries[0];
    assert_eq!(
        loc,
        "https://www.example.com/fr/article.php?AIndex=12&lang=fr"
    );
    assert_eq!(lastmod.as_deref(), Some("2024-05-01T12:00:00"));
    assert_eq!(changefreq.as_deref(), Some("weekly"));
    assert_eq!(*priority, Some(0.8));
    assert_eq!(entries[1].1, "https://www.example.com/caf%C3%A9");
    assert_eq!(entries[1].2.as_deref(), Some("2024-06-01T00:00:00"));
    assert!(entries[1].0 > *id, "ids follow the file's order");

    let alternates = db.strings(&format!("SELECT hreflang || ' ' || href FROM sitemap_alternates WHERE entry_id = {id} ORDER BY hreflang"),
    )
    .await;
    assert_eq!(
        alternates,
        [
            "en https://www.example.com/en/article.php?AIndex=12",
            "x-default https://www.example.com/article.php?AIndex=12"
        ]
    );
    let images = db
        .strings(&format!(
            "SELECT loc FROM sitemap_images WHERE entry_id = {id} ORDER BY id"
        ))
        .await;
    assert_eq!(
        images,
        [
            "https://cdn.example.net/12/a.jpg",
            "https://cdn.example.net/12/b.jpg"
        ]
    );
    let videos = db
        .strings(&format!(
            "SELECT title || ' ' || player_loc || ' ' || duration FROM sitemap_videos \
             WHERE entry_id = {id} AND content_loc IS NULL"
        ))
        .await;
    assert_eq!(
        videos,
        ["Grilling & more https://www.example.com/player?v=12 600"]
    );
}

#[tokio::test]
async fn a_gzipped_sitemap_is_recognised_by_its_content_not_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let database_url = format!("sqlite://{}", dir.path().join("site.db").display());
    let xml = urlset(
        "<url><loc>https://www.example.com/a</loc><priority>0.3</priority>\
         <image:image><image:loc>https://cdn.example.net/a.png</image:loc></image:image></url>\n\
         <url><loc>https://www.example.com/b</loc></url>\n",
    );
    std::fs::write(dir.path().join("old-sitemap.bin"), gzip(xml.as_bytes())).unwrap();

    let out = import(&database_url, dir.path(), "old-sitemap.bin", None);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("entries inserted: 2"),
        "{}",
        stdout(&out)
    );

    let pool = sqlx::SqlitePool::connect(&database_url).await.unwrap();
    let rows: Vec<(String, Option<f64>)> =
        sqlx::query_as("SELECT loc, priority FROM sitemap_entries ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        [
            ("https://www.example.com/a".to_string(), Some(0.3)),
            ("https://www.example.com/b".to_string(), None)
        ]
    );
    let images: Vec<String> = sqlx::query_scalar("SELECT loc FROM sitemap_images")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(images, ["https://cdn.example.net/a.png"]);
}

async fn a_text_sitemap_on_stdin_adds_its_urls_and_leaves_existing_entries_alone(backend: Backend) {
    let db = migrated_db(backend).await;
    db.exec(
        "INSERT INTO sitemap_entries (id, loc, changefreq) VALUES (7, 'https://www.example.com/kept', 'daily')",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let text = b"https://www.example.com/kept\n\nhttps://www.example.com/new-1\r\n  https://www.example.com/new-2  \n";

    let out = import(&db.url, dir.path(), "-", Some(text));
    assert_exit(&out, 0);
    let summary = stdout(&out);
    assert!(summary.contains("entries inserted: 2"), "{summary}");
    assert!(summary.contains("already present"), "{summary}");

    let entries = db.entries().await;
    let locs: Vec<&str> = entries.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(
        locs,
        [
            "https://www.example.com/kept",
            "https://www.example.com/new-1",
            "https://www.example.com/new-2"
        ]
    );
    assert_eq!(entries[0].0, 7);
    assert_eq!(
        entries[0].3.as_deref(),
        Some("daily"),
        "a URL-only line keeps the fields"
    );
    assert!(entries[1].0 > 7 && entries[2].0 > entries[1].0);
}

/// An index and the files it lists, named by the last segment of their URLs.
fn write_index_and_files(dir: &Path, listed: &[&str]) -> String {
    let sitemaps: String = listed
        .iter()
        .map(|name| {
            format!(
                "<sitemap><loc>https://www.example.com/static/{name}</loc><lastmod>2024-01-01</lastmod></sitemap>\n"
            )
        })
        .collect();
    std::fs::write(
        dir.join("sitemap-1.xml.gz"),
        gzip(urlset("<url><loc>https://www.example.com/one</loc></url>\n").as_bytes()),
    )
    .unwrap();
    std::fs::write(dir.join("sitemap-2.xml"), "https://www.example.com/two\n").unwrap();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{sitemaps}</sitemapindex>\n"
    )
}

async fn an_index_imports_its_files_and_reports_a_missing_one(backend: Backend) {
    let db = TestDb::on(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("old");
    std::fs::create_dir(&sub).unwrap();
    let index = write_index_and_files(
        &sub,
        &["sitemap-1.xml.gz", "sitemap-9.xml.gz", "sitemap-2.xml"],
    );
    std::fs::write(sub.join("sitemap_index.xml"), index).unwrap();

    // Run from elsewhere: the listed files are found beside the index.
    let out = import(&db.url, dir.path(), "old/sitemap_index.xml", None);
    assert_exit(&out, 1);
    let summary = stdout(&out);
    assert!(summary.contains("files read: 3"), "{summary}");
    assert!(summary.contains("files failed: 1"), "{summary}");
    assert!(
        summary
            .contains("old/sitemap-9.xml.gz: not found (listed in old/sitemap_index.xml line 4)"),
        "{summary}"
    );
    let locs = db
        .strings("SELECT loc FROM sitemap_entries ORDER BY id")
        .await;
    assert_eq!(
        locs,
        ["https://www.example.com/one", "https://www.example.com/two"]
    );
}

#[tokio::test]
async fn an_index_on_stdin_finds_its_files_in_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let database_url = format!("sqlite://{}", dir.path().join("site.db").display());
    let index = write_index_and_files(dir.path(), &["sitemap-1.xml.gz", "sitemap-2.xml"]);

    let out = import(&database_url, dir.path(), "-", Some(index.as_bytes()));
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("files read: 3"), "{}", stdout(&out));
    let pool = sqlx::SqlitePool::connect(&database_url).await.unwrap();
    let locs: Vec<String> = sqlx::query_scalar("SELECT loc FROM sitemap_entries ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(
        locs,
        ["https://www.example.com/one", "https://www.example.com/two"]
    );
}

async fn importing_again_keeps_ids_and_takes_the_files_fields_and_extensions(backend: Backend) {
    let db = migrated_db(backend).await;
    // Rows a CMS inserted with ids of its own: new rows must not collide with them.
    db.insert_rows(&[
        Row::new(40, "https://www.example.com/a")
            .lastmod("2020-01-01 00:00:00")
            .priority(0.1),
        Row::new(41, "https://www.example.com/b"),
    ])
    .await;
    db.insert_alternates(&[(40, "de", "https://www.example.com/de/a")])
        .await;
    db.insert_images(&[(40, "https://cdn.example.net/old.jpg")])
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sitemap.xml"),
        urlset(
            r#"<url><loc>https://www.example.com/a</loc><lastmod>2024-02-02T10:00:00Z</lastmod>
  <xhtml:link rel="alternate" hreflang="fr" href="https://www.example.com/fr/a"/></url>
<url><loc>https://www.example.com/new</loc><priority>1.0</priority></url>
"#,
        ),
    )
    .unwrap();

    let out = import(&db.url, dir.path(), "sitemap.xml", None);
    assert_exit(&out, 0);
    let summary = stdout(&out);
    assert!(summary.contains("entries inserted: 1"), "{summary}");
    assert!(summary.contains("entries updated: 1"), "{summary}");

    let entries = db.entries().await;
    let new_id = entries.last().map_or(0, |e| e.0);
    // After the ids already there (an upsert may leave gaps: ids are only an order).
    assert!(new_id > 41, "{entries:?}");
    assert_eq!(
        entries,
        [
            (
                40,
                "https://www.example.com/a".into(),
                Some("2024-02-02T10:00:00".into()),
                None,
                None
            ),
            (41, "https://www.example.com/b".into(), None, None, None),
            (
                new_id,
                "https://www.example.com/new".into(),
                None,
                None,
                Some(1.0)
            ),
        ]
    );
    let alternates = db
        .strings("SELECT hreflang || ' ' || href FROM sitemap_alternates")
        .await;
    assert_eq!(alternates, ["fr https://www.example.com/fr/a"]);
    let images = db.strings("SELECT loc FROM sitemap_images").await;
    assert!(
        images.is_empty(),
        "the file has no images for /a: {images:?}"
    );

    // The same file again changes nothing and counts updates; the application's own inserts
    // still get fresh ids.
    let out = import(&db.url, dir.path(), "sitemap.xml", None);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("entries updated: 2"),
        "{}",
        stdout(&out)
    );
    assert_eq!(db.entries().await, entries);
    db.exec("INSERT INTO sitemap_entries (loc) VALUES ('https://www.example.com/by-the-cms')")
        .await;
}

#[tokio::test]
async fn ids_are_kept_on_sqlite_too() {
    let dir = tempfile::tempdir().unwrap();
    let database_url = format!("sqlite://{}", dir.path().join("site.db").display());
    let file = |lastmod: &str| {
        urlset(&format!(
            "<url><loc>https://www.example.com/a</loc><lastmod>{lastmod}</lastmod>\
             <xhtml:link rel=\"alternate\" hreflang=\"{lastmod}\" href=\"https://www.example.com/x\"/></url>\n\
             <url><loc>https://www.example.com/b</loc></url>\n"
        ))
    };
    std::fs::write(dir.path().join("s.xml"), file("2024")).unwrap();
    assert_exit(&import(&database_url, dir.path(), "s.xml", None), 0);
    std::fs::write(dir.path().join("s.xml"), file("2025-03-04")).unwrap();
    let out = import(&database_url, dir.path(), "s.xml", None);
    assert_exit(&out, 0);
    let pool = sqlx::SqlitePool::connect(&database_url).await.unwrap();
    let rows: Vec<(i64, String, Option<String>)> =
        sqlx::query_as("SELECT id, loc, lastmod FROM sitemap_entries ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        rows,
        [
            (
                1,
                "https://www.example.com/a".into(),
                Some("2025-03-04T00:00:00+00:00".into())
            ),
            (2, "https://www.example.com/b".into(), None)
        ]
    );
    // The hreflang was not a language either time: dropped, so no alternates; the exit code
    // says nothing about dropped tags.
    let alternates: i64 = sqlx::query_scalar("SELECT count(*) FROM sitemap_alternates")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(alternates, 0);
    assert!(stdout(&out).contains("xhtml:link: 1"), "{}", stdout(&out));
}

async fn rows_the_server_would_skip_are_counted_with_examples_not_imported(backend: Backend) {
    let db = TestDb::on(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let robots = dir.path().join("robots.txt");
    std::fs::write(&robots, "User-agent: *\nDisallow: /admin/\n").unwrap();
    let long = format!("https://www.example.com/{}", "x".repeat(2100));
    std::fs::write(
        dir.path().join("sitemap.xml"),
        urlset(&format!(
            "<url><loc>https://www.example.com/ok</loc><lastmod>last tuesday</lastmod><changefreq>sometimes</changefreq></url>\n\
             <url><loc>https://elsewhere.example.org/a</loc></url>\n\
             <url><loc>http://www.example.com/wrong-scheme</loc></url>\n\
             <url><loc>https://www.example.com/admin/secret</loc></url>\n\
             <url><loc>{long}</loc></url>\n\
             <url><loc>relative/path</loc></url>\n\
             <url><lastmod>2024-01-01</lastmod></url>\n"
        )),
    )
    .unwrap();

    let out = import_with(
        &db.url,
        dir.path(),
        "sitemap.xml",
        None,
        &[("ROBOTS_TEMPLATE", robots.to_str().unwrap())],
    );
    assert_exit(&out, 1);
    let summary = stdout(&out);
    for line in [
        "entries inserted: 1",
        "entries skipped: 6",
        "  invalid_url: 2",
        "  out_of_scope: 2",
        "    sitemap.xml line 4: \"https://elsewhere.example.org/a\"",
        "  robots_disallowed: 1",
        "    sitemap.xml line 6: \"https://www.example.com/admin/secret\"",
        "  too_long: 1",
        "invalid tags dropped: 2",
        "  changefreq: 1",
        "  lastmod: 1",
        "    sitemap.xml line 3: \"last tuesday\"",
    ] {
        assert!(summary.contains(line), "{line:?} in\n{summary}");
    }
    let entries = db.entries().await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (&entries[0].1, &entries[0].2, &entries[0].3),
        (&"https://www.example.com/ok".to_string(), &None, &None)
    );
}

async fn a_malformed_file_is_reported_with_its_position_and_what_came_before_stays(
    backend: Backend,
) {
    let db = TestDb::on(backend).await;
    let dir = tempfile::tempdir().unwrap();
    // More than one batch of good entries, then a broken one.
    let good: String = (1..=1500)
        .map(|i| format!("<url><loc>https://www.example.com/p/{i}</loc></url>\n"))
        .collect();
    let xml = urlset(&format!(
        "{good}<url><loc>https://www.example.com/broken</loc>\n<lastmod>2024-01-01</lastmod></ur>\n"
    ));
    let line = xml.lines().position(|l| l.ends_with("</ur>")).unwrap() + 1;
    let byte = xml.find("</ur>").unwrap();
    std::fs::write(dir.path().join("sitemap.xml.gz"), gzip(xml.as_bytes())).unwrap();

    let out = import(&db.url, dir.path(), "sitemap.xml.gz", None);
    assert_exit(&out, 1);
    let summary = stdout(&out);
    assert!(
        summary.contains(&format!(
            "sitemap.xml.gz: line {line}, byte {byte}: malformed XML"
        )),
        "line {line}, byte {byte} in\n{summary}"
    );
    assert!(summary.contains("gunzipped"), "{summary}");
    assert!(summary.contains("files read: 0"), "{summary}");
    assert!(summary.contains("entries inserted: 1500"), "{summary}");
    let count = db.scalar("SELECT count(*) FROM sitemap_entries").await;
    assert_eq!(count, 1500);
}

#[tokio::test]
async fn a_configuration_error_exits_2_and_a_missing_file_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = Sitemapd::new(["import", "sitemap.xml"])
        .current_dir(dir.path())
        .output();
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("SITEMAP_BASE_URL"));

    let database_url = format!("sqlite://{}", dir.path().join("site.db").display());
    let out = import(&database_url, dir.path(), "nowhere.xml", None);
    assert_exit(&out, 1);
    assert!(
        stdout(&out).contains("nowhere.xml: not found"),
        "{}",
        stdout(&out)
    );
}

async fn an_exported_site_imported_into_an_empty_database_serves_the_same_urls(backend: Backend) {
    let source = migrated_db(backend).await;
    let start = utc("2024-01-01 00:00:00");
    let rows: Vec<Row> = (1..=250)
        .map(|i| Row {
            id: i * 3,
            loc: format!("/p/{i}?a=1&b=é's"),
            lastmod: (i % 4 != 0).then(|| start + chrono::Duration::hours(i)),
            changefreq: [Some("daily"), Some("weekly"), None][(i % 3) as usize].map(str::to_string),
            priority: (i % 2 == 0).then_some(0.5),
        })
        .collect();
    source.insert_rows(&rows).await;
    let original = spawn_app(&source.url, &[("SITEMAP_PAGE_SIZE", "100")]).await;
    let expected = original.all_locs().await;
    assert_eq!(expected.len(), 250);

    let dir = tempfile::tempdir().unwrap();
    let out = Sitemapd::new([std::ffi::OsStr::new("export"), dir.path().as_os_str()])
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", &source.url)
        .env("SITEMAP_PAGE_SIZE", "100")
        .output();
    assert_exit(&out, 0);

    let target = TestDb::on(backend).await;
    let out = import(&target.url, dir.path(), "sitemap_index.xml", None);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("files read: 4"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("entries inserted: 250"),
        "{}",
        stdout(&out)
    );

    let imported = spawn_app(&target.url, &[("SITEMAP_PAGE_SIZE", "100")]).await;
    assert_eq!(imported.all_locs().await, expected);
    // Fields survive too: the first file is byte for byte the original's.
    let page = |app: &TestApp| {
        let url = app.url("/sitemap-1.xml");
        let client = app.client.clone();
        async move { client.get(url).send().await.unwrap().bytes().await.unwrap() }
    };
    assert_eq!(page(&imported).await, page(&original).await);
}
