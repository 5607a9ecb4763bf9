//! The served property: arbitrary rows in each database, through HTTP, give schema-valid files
//! with exactly the `<url>` elements the oracle writes.

use std::collections::HashSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sitemapd::sitemap::entry::{RawAlternate, RawImage};
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::{write_url, RawEntry};

use super::checkers::{body_of, culprits, read_urlset, tags_as_the_protocol_says};
use super::model::{check_model, load, store, HeldRows, Stored, StoredCase};
use super::row_strategies::case_strategy;
use super::{oracle, PAGE_SIZE};
use crate::helpers::*;
use crate::strategies::{database_runner, Shrink};

/// The service's input for a held row: the values the database holds, the extension rows in
/// the order the database gives them.
fn raw_entry(row: &Stored, held: &HeldRows) -> RawEntry {
    RawEntry {
        id: row.id,
        loc: Some(row.loc.clone()),
        lastmod: row.meant,
        changefreq: row.changefreq.clone(),
        priority: row.priority,
        alternates: held
            .alternates
            .iter()
            .filter(|(id, _, _)| *id == row.id)
            .map(|(_, hreflang, href)| RawAlternate {
                hreflang: Some(hreflang.clone()),
                href: Some(href.clone()),
            })
            .collect(),
        images: held
            .images
            .iter()
            .filter(|(id, _)| *id == row.id)
            .map(|(_, loc)| RawImage {
                loc: Some(loc.clone()),
            })
            .collect(),
        ..RawEntry::default()
    }
}

async fn check_served(
    app: &TestApp,
    case: &StoredCase,
    held: &HeldRows,
) -> Result<(), TestCaseError> {
    let rules = oracle();
    let mut sorted: Vec<&Stored> = case.rows.iter().collect();
    sorted.sort_by_key(|r| r.id);
    let mut expected_locs = Vec::new();
    let mut expected_body = Vec::new();
    let mut written = Vec::new();
    // A file lists each URL once (once normalised): the files' id ranges say which repeats
    // share a file.
    let snapshot = app.app.site().first().snapshot();
    let file_of =
        |id: i64| (0..snapshot.layout.len()).position(|i| snapshot.layout.range(i).contains(id));
    let mut listed: HashSet<(Option<usize>, String)> = HashSet::new();
    for row in sorted {
        let raw = raw_entry(row, held);
        if let Ok(entry) = rules.accept(&raw) {
            if !listed.insert((file_of(row.id), entry.loc.as_str().to_string())) {
                continue;
            }
            expected_locs.push(entry.loc.as_str().to_string());
            let mut element = Vec::new();
            write_url(&mut element, &entry);
            let text = String::from_utf8_lossy(&element).into_owned();
            tags_as_the_protocol_says(row, &text).map_err(TestCaseError::fail)?;
            expected_body.extend_from_slice(&element);
            written.push((element, format!("{row:?}\n          {raw:?}")));
        }
    }

    let index = app.get("/sitemap_index.xml").await;
    prop_assert_eq!(index.status(), 200);
    let index = index.bytes().await.unwrap();
    if let Some(e) = schema_errors(&index, "siteindex.xsd") {
        return Err(TestCaseError::fail(format!("index invalid: {e}")));
    }

    let mut served_locs = Vec::new();
    let mut served_body = Vec::new();
    let files = app.index_pages().await;
    for file in &files {
        let resp = app.get(&format!("/{file}")).await;
        prop_assert_eq!(resp.status(), 200, "{}", file);
        let xml = gunzip(&resp.bytes().await.unwrap());
        let fail = |e: String| TestCaseError::fail(format!("{file}: {e}"));
        let page_locs = read_urlset(&xml).map_err(fail)?;
        let (body, _) = body_of(&xml).map_err(fail)?;
        prop_assert!(
            page_locs.len() <= PAGE_SIZE,
            "{} holds {}",
            file,
            page_locs.len()
        );
        if page_locs.is_empty() {
            // The one allowed empty urlset: a site with no entry at all, as page 1 alone.
            prop_assert!(
                expected_locs.is_empty() && files.len() == 1,
                "{} is an empty urlset among {:?}",
                file,
                files
            );
        } else if let Some(e) = schema_errors(&xml, "sitemap-extensions.xsd") {
            return Err(TestCaseError::fail(format!(
                "{file} invalid: {e}{}",
                culprits(&e, &xml, &written)
            )));
        }

        // The text form of the same file lists exactly the same URLs.
        let number = file
            .strip_prefix("sitemap-")
            .and_then(|f| f.strip_suffix(".xml.gz"))
            .expect("index lists sitemap-K.xml.gz");
        let text = app.get(&format!("/sitemap-{number}.txt")).await;
        prop_assert_eq!(text.status(), 200, "sitemap-{}.txt", number);
        prop_assert_eq!(header(&text, "content-type"), "text/plain; charset=utf-8");
        let text = text.text().await.unwrap();
        prop_assert!(
            text.is_empty() || text.ends_with('\n'),
            "sitemap-{}.txt does not end with LF",
            number
        );
        prop_assert_eq!(
            text.lines().collect::<Vec<_>>(),
            page_locs.iter().map(String::as_str).collect::<Vec<_>>(),
            "sitemap-{}.txt against {}",
            number,
            file
        );

        served_body.extend_from_slice(body);
        served_locs.extend(page_locs);
    }

    for loc in &served_locs {
        prop_assert!(loc.starts_with(BASE), "not under the base: {:?}", loc);
        prop_assert!(loc.len() <= MAX_LOC_CHARS, "{} chars: {:?}", loc.len(), loc);
        prop_assert!(loc.is_ascii(), "not ASCII: {:?}", loc);
    }
    prop_assert_eq!(&served_locs, &expected_locs);
    if served_body != expected_body {
        // The first `<url>` that differs, and the row the oracle wrote it from.
        let served = String::from_utf8_lossy(&served_body).into_owned();
        let at = served
            .lines()
            .zip(&written)
            .position(|(line, (element, _))| format!("{line}\n").as_bytes() != element)
            .unwrap_or(written.len().min(served.lines().count()));
        return Err(TestCaseError::fail(format!(
            "served <url> element {at} differs from the oracle's:\nserved:   {}\nexpected: {}\nfrom:     {}",
            served.lines().nth(at).unwrap_or("(none)"),
            written.get(at).map_or("(none)".into(), |(e, _)| String::from_utf8_lossy(e).into_owned()),
            written.get(at).map_or("", |(_, from)| from.as_str()),
        )));
    }
    Ok(())
}

crate::on_each_database!(arbitrary_rows_give_valid_files_with_exactly_the_accepted_urls);

/// Arbitrary entries and extension rows, as each database holds them, served with tiny pages:
/// every file valid against the official schema and the extension schemas, declaring only the
/// namespaces it uses, its text form listing the same URLs, and all of them together exactly
/// the `<url>` elements the oracle writes for the held rows, once each, in id order.
async fn arbitrary_rows_give_valid_files_with_exactly_the_accepted_urls(backend: Backend) {
    // proptest's runner is synchronous: it runs on a thread of its own, with its own runtime.
    let outcome = tokio::task::spawn_blocking(move || served_property(backend)).await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// The files of the site as the service holds them: `no@first_id:urls`.
fn layout(app: &TestApp) -> String {
    let snapshot = app.app.site().first().snapshot();
    let files: Vec<String> = snapshot
        .layout
        .pages()
        .iter()
        .map(|p| format!("{}@{}:{}", p.no, p.first_id, p.urls))
        .collect();
    files.join(" ")
}

/// One database and one server for all cases: each case replaces the rows and sweeps.
fn served_property(backend: Backend) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (db, app) = rt.block_on(async {
        let db = TestDb::on(backend).await;
        db.migrate().await;
        let page_size = PAGE_SIZE.to_string();
        let app = spawn_app(
            &db.url,
            &[
                ("SITEMAP_PAGE_SIZE", page_size.as_str()),
                ("DATABASE_MAX_CONNECTIONS", "3"),
            ],
        )
        .await;
        (db, app)
    });
    // HOSTILE_CASES=N runs more cases, for a deeper search than the suite's default. The
    // failure message names the offending rows, so a short shrink is enough.
    let mut runner = database_runner(
        "HOSTILE_CASES",
        32,
        Shrink {
            iterations: 1000,
            millis: 20_000,
        },
    );
    let result = runner.run(&case_strategy(), |case| {
        let case = store(backend, &case);
        rt.block_on(async {
            load(&db, &case).await;
            let held = check_model(&db, &case).await?;
            app.sweep().await;
            let swept = layout(&app);
            if let Err(e) = check_served(&app, &case, &held).await {
                // Whether the files were wrong for the data, or for a moment only: a second
                // sweep tells.
                let failed = layout(&app);
                app.sweep().await;
                let again = match check_served(&app, &case, &held).await {
                    Ok(()) => "passes".to_string(),
                    Err(again) => format!("fails: {again}"),
                };
                return Err(TestCaseError::fail(format!(
                    "{e}\nfiles (no@first_id:urls) after the sweep: {swept}\nwhen it failed: \
                     {failed}\nafter another sweep the check {again}"
                )));
            }
            Ok(())
        })
    });
    rt.block_on(async move {
        drop(app);
        match &db.pool {
            TestPool::Postgres(pool) => pool.close().await,
            TestPool::MariaDb(pool) => pool.close().await,
            TestPool::Sqlite(pool) => pool.close().await,
        }
    });
    if let Err(e) = result {
        panic!("{backend:?}: {e}");
    }
}
