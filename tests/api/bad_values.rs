//! Bad data in a source view: a value that is no time or number is a skipped tag, rows that
//! share an id or have none are skipped rows; each counted with an example (metrics, `check`),
//! never a stopped group or rows that vanish without a word.

use crate::helpers::*;

crate::on_each_database!(
    an_unreadable_lastmod_or_priority_is_a_skipped_tag_not_a_stopped_group,
    rows_sharing_an_id_or_without_one_are_skipped_and_counted,
    a_long_read_in_parts_loses_no_row_and_splits_no_shared_id,
);
crate::on_each_server!(an_unsigned_id_beyond_64_bits_is_skipped_and_counted);

/// Every file the index lists answers 200; the locs they hold, in order.
async fn served_locs(app: &TestApp) -> Vec<String> {
    let index = app.get("/sitemap_index.xml").await;
    assert_eq!(index.status(), 200, "the index is served");
    app.all_locs().await
}

async fn an_unreadable_lastmod_or_priority_is_a_skipped_tag_not_a_stopped_group(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE cms (id bigint PRIMARY KEY, loc varchar(200) NOT NULL, lastmod varchar(40), changefreq varchar(20), priority varchar(20));
         INSERT INTO cms VALUES (1, '/a', '2024-05-01 12:00:00', NULL, '0.5');
         INSERT INTO cms VALUES (2, '/b', 'not a date', NULL, 'high');
         INSERT INTO cms VALUES (3, '/c', '2024-13-45 10:00:00', NULL, NULL);
         CREATE VIEW cms_pages AS SELECT id, loc, lastmod, changefreq, priority FROM cms;",
    )
    .await;
    let vars = [("SITEMAP_SOURCE", "cms_pages")];
    let app = spawn_app(&db.url, &vars).await;
    let resp = app.get("/sitemap.xml").await;
    assert_eq!(resp.status(), 200, "the group is served");
    let xml = resp.bytes().await.unwrap();
    assert_valid(&xml, Schema::Urlset);
    let fields = url_fields(&xml);
    assert_eq!(fields.len(), 3, "every entry stays: {fields:?}");
    assert_eq!(
        fields[0].get("lastmod").map(String::as_str),
        Some("2024-05-01T12:00:00+00:00")
    );
    assert_eq!(fields[0].get("priority").map(String::as_str), Some("0.5"));
    for bad in &fields[1..] {
        assert!(!bad.contains_key("lastmod"), "{bad:?}");
        assert!(!bad.contains_key("priority"), "{bad:?}");
    }
    assert_eq!(app.metric(&skipped_metric("invalid_lastmod")).await, 2.0);
    assert_eq!(app.metric(&skipped_metric("invalid_priority")).await, 1.0);

    let (code, out) = check(&db, &vars);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("entries served: 3"), "{out}");
    assert!(out.contains("invalid_lastmod: 2"), "{out}");
    assert!(
        out.contains("\"not a date\""),
        "the example names the value: {out}"
    );
    assert!(out.contains("invalid_priority: 1"), "{out}");
    assert!(out.contains("\"high\""), "{out}");
}

async fn rows_sharing_an_id_or_without_one_are_skipped_and_counted(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let mut inserts = String::from(
        "CREATE TABLE loose (id bigint NULL, loc varchar(200) NOT NULL, lastmod timestamp NULL, changefreq varchar(20), priority real);
         INSERT INTO loose (id, loc) VALUES (1, '/one');
         INSERT INTO loose (id, loc) VALUES (2, '/two');
         INSERT INTO loose (id, loc) VALUES (8, '/eight');
         INSERT INTO loose (id, loc) VALUES (9, '/nine');
         INSERT INTO loose (id, loc) VALUES (NULL, '/no-id');",
    );
    for n in 1..=7 {
        inserts.push_str(&format!(
            "INSERT INTO loose (id, loc) VALUES (5, '/five-{n}');"
        ));
    }
    inserts.push_str(
        "CREATE VIEW loose_pages AS SELECT id, loc, lastmod, changefreq, priority FROM loose;",
    );
    db.exec(&inserts).await;
    let vars = [
        ("SITEMAP_SOURCE", "loose_pages"),
        ("SITEMAP_PAGE_SIZE", "3"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    let files = app.index_pages().await;
    let expected = ["one", "two", "eight", "nine"].map(|p| format!("{BASE}{p}"));
    assert_eq!(served_locs(&app).await, expected);
    // Sweeping again lays the files out the same way: nothing left to renumber.
    app.sweep().await;
    app.sweep().await;
    assert_eq!(app.index_pages().await, files, "the layout holds");
    assert_eq!(served_locs(&app).await, expected);
    assert_eq!(app.metric(&skipped_metric("duplicate_id")).await, 7.0);
    assert_eq!(app.metric(&skipped_metric("null_id")).await, 1.0);

    let (code, out) = check(&db, &vars);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("entries served: 4"), "{out}");
    assert!(out.contains("duplicate_id: 7"), "{out}");
    assert!(out.contains("null_id: 1"), "{out}");
    assert!(out.contains("id NULL: \"/no-id\""), "{out}");
}

/// MySQL's `BIGINT UNSIGNED` holds ids no signed 64-bit integer does (PostgreSQL has no such
/// integer type: the test runs its MariaDB half only).
async fn an_unsigned_id_beyond_64_bits_is_skipped_and_counted(backend: Backend) {
    if backend != Backend::MariaDb {
        return;
    }
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE wide (id bigint unsigned PRIMARY KEY, loc varchar(200) NOT NULL);
         INSERT INTO wide (id, loc) VALUES (1, '/small'), (18446744073709551615, '/huge');
         CREATE VIEW wide_pages AS SELECT id, loc, NULL AS lastmod, NULL AS changefreq, NULL AS priority FROM wide;",
    )
    .await;
    let vars = [("SITEMAP_SOURCE", "wide_pages")];
    let app = spawn_app(&db.url, &vars).await;
    assert_eq!(served_locs(&app).await, [format!("{BASE}small")]);
    assert_eq!(app.metric(&skipped_metric("id_out_of_range")).await, 1.0);
    let (code, out) = check(&db, &vars);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("id_out_of_range: 1"), "{out}");
    assert!(out.contains("18446744073709551615"), "{out}");
}

/// A first sweep reads the whole source in parts of 100,000 rows per statement (a statement
/// timeout covers each one whole). 250,002 rows whose id 100,000 has three rows, the first of
/// them the first part's last row: every other row is served once, the three are skipped.
async fn a_long_read_in_parts_loses_no_row_and_splits_no_shared_id(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let numbers = match backend {
        Backend::Postgres => "SELECT i FROM generate_series(1, 250000) AS g(i)",
        Backend::MariaDb => "SELECT seq AS i FROM seq_1_to_250000",
        Backend::Sqlite => {
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250000) \
             SELECT i FROM n"
        }
    };
    let concat = match backend {
        Backend::MariaDb => "CONCAT('/p/', i)",
        _ => "'/p/' || i",
    };
    db.exec(&format!(
        "CREATE TABLE bulk (id bigint NULL, loc varchar(200) NOT NULL, lastmod timestamp NULL, changefreq varchar(20), priority real);
         INSERT INTO bulk (id, loc) SELECT i, {concat} FROM ({numbers}) AS numbers;
         INSERT INTO bulk (id, loc) VALUES (100000, '/again-1');
         INSERT INTO bulk (id, loc) VALUES (100000, '/again-2');
         CREATE VIEW bulk_pages AS SELECT id, loc, lastmod, changefreq, priority FROM bulk;"
    ))
    .await;
    let vars = [("SITEMAP_SOURCE", "bulk_pages")];
    let app = spawn_app(&db.url, &vars).await;
    let locs = served_locs(&app).await;
    assert_eq!(locs.len(), 249_999, "every row but the three of id 100,000");
    assert_eq!(
        locs.first().map(String::as_str),
        Some(&*format!("{BASE}p/1"))
    );
    assert_eq!(
        locs.last().map(String::as_str),
        Some(&*format!("{BASE}p/250000"))
    );
    assert!(!locs
        .iter()
        .any(|l| l.ends_with("/p/100000") || l.contains("again")));
    assert_eq!(
        locs.iter().collect::<std::collections::HashSet<_>>().len(),
        249_999
    );
    assert_eq!(app.metric(&skipped_metric("duplicate_id")).await, 3.0);
}
