//! robots.txt: template, strict validation, staging, and consistency with the sitemaps.

use crate::helpers::*;

crate::on_each_database!(
    urls_the_served_robots_txt_disallows_are_left_out_and_counted,
    staging_disallows_everything_and_tags_every_response,
    check_counts_served_and_skipped_and_fails_on_problems,
);

const TEMPLATE: &str = "User-agent: *\nDisallow: /admin/\nDisallow: /*.pdf$\nAllow: /admin/public\n\nUser-agent: Googlebot\nDisallow: /nogoogle/\n\nSitemap: {{ sitemap_index_url }}\n";

async fn site_with_rows(
    backend: Backend,
    rows: &[(i64, &str)],
    vars: &[(&str, &str)],
) -> (TestDb, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(rows).await;
    let app = spawn_app(&db.url, vars).await;
    (db, app)
}

async fn urls_the_served_robots_txt_disallows_are_left_out_and_counted(backend: Backend) {
    let template = template_file(TEMPLATE);
    let path = template.path().to_str().unwrap();
    let rows = [
        (1, "/ok"),
        (2, "/admin/x"),
        (3, "/admin/public/y"),
        (4, "/doc.pdf"),
        (5, "/doc.pdf?v=1"),
        (6, "/nogoogle/a"),
    ];
    let (_db, app) = site_with_rows(backend, &rows, &[("ROBOTS_TEMPLATE", path)]).await;
    assert_eq!(
        app.all_locs().await,
        vec![
            "https://www.example.com/ok",
            "https://www.example.com/admin/public/y",
            "https://www.example.com/doc.pdf?v=1",
            "https://www.example.com/nogoogle/a",
        ]
    );
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"robots_disallowed\"")
            .await,
        2.0
    );

    // Checking Googlebot too: its own group applies to it (groups are not merged with *).
    let (_db, app) = site_with_rows(
        backend,
        &rows,
        &[
            ("ROBOTS_TEMPLATE", path),
            ("ROBOTS_CHECK_AGENTS", "*,Googlebot"),
        ],
    )
    .await;
    assert_eq!(
        app.metric("sitemapd_entries_skipped{reason=\"robots_disallowed\"")
            .await,
        3.0
    );

    let robots = app.get("/robots.txt").await.text().await.unwrap();
    assert!(robots.contains("Disallow: /admin/\n"), "{robots}");
    assert!(
        robots.contains("Sitemap: https://www.example.com/sitemap_index.xml"),
        "{robots}"
    );
}

async fn staging_disallows_everything_and_tags_every_response(backend: Backend) {
    let (_db, app) = site_with_rows(backend, &[(1, "/a")], &[("SITEMAP_ENV", "staging")]).await;
    let robots = app.get("/robots.txt").await;
    assert_eq!(header(&robots, "x-robots-tag"), "noindex, nofollow");
    let text = robots.text().await.unwrap();
    assert!(text.contains("User-agent: *\nDisallow: /\n"), "{text}");
    for path in [
        "/sitemap_index.xml",
        "/sitemap-1.xml.gz",
        "/nope",
        "/healthz",
    ] {
        assert_eq!(
            header(&app.get(path).await, "x-robots-tag"),
            "noindex, nofollow",
            "{path}"
        );
    }
    // The sitemaps still show what production would list.
    assert_eq!(app.all_locs().await, vec!["https://www.example.com/a"]);
}

#[tokio::test]
async fn extra_sitemaps_on_other_hosts_are_announced() {
    let (_db, app) = site_with_rows(
        Backend::Postgres,
        &[(1, "/a")],
        &[(
            "ROBOTS_EXTRA_SITEMAPS",
            "https://cdn.example.net/s.xml, https://blog.example.org/sitemap.xml",
        )],
    )
    .await;
    let text = app.get("/robots.txt").await.text().await.unwrap();
    assert!(
        text.contains("Sitemap: https://cdn.example.net/s.xml\n"),
        "{text}"
    );
    assert!(
        text.contains("Sitemap: https://blog.example.org/sitemap.xml\n"),
        "{text}"
    );
}

fn sitemapd(vars: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let out = Sitemapd::new(args)
        .envs(vars)
        .env("SITEMAP_BASE_URL", BASE)
        .output();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_line_crawlers_would_misread_stops_the_start_with_its_line_number() {
    // A misspelt directive is only a warning of `check` (tests/api/policy.rs); a missing ":" is
    // read differently by Google and RFC 9309 crawlers.
    let template = template_file("User-agent: *\nDisallow /x\n");
    let (code, _, stderr) = sitemapd(
        &[("ROBOTS_TEMPLATE", template.path().to_str().unwrap())],
        &["robots", "test", "/"],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("line 2") && stderr.contains("Disallow"),
        "{stderr}"
    );

    let template = template_file("Disallow: /x\nUser-agent: *\n");
    let (code, _, stderr) = sitemapd(
        &[("ROBOTS_TEMPLATE", template.path().to_str().unwrap())],
        &["robots", "test", "/"],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("line 1"), "{stderr}");

    let template = template_file("User-agent: *\nDisallow:\nSitemap: /relative.xml\n");
    let (code, _, stderr) = sitemapd(
        &[("ROBOTS_TEMPLATE", template.path().to_str().unwrap())],
        &["robots", "test", "/"],
    );
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn robots_test_says_which_rule_decided() {
    let template = template_file(TEMPLATE);
    let vars = [("ROBOTS_TEMPLATE", template.path().to_str().unwrap())];
    let (code, stdout, _) = sitemapd(
        &vars,
        &["robots", "test", "https://www.example.com/admin/x"],
    );
    assert_eq!(code, 1);
    assert!(
        stdout.contains("disallowed")
            && stdout.contains("line 2")
            && stdout.contains("Disallow: /admin/"),
        "{stdout}"
    );
    let (code, stdout, _) = sitemapd(&vars, &["robots", "test", "/admin/public/x"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("line 4"), "{stdout}");
    let (code, _, _) = sitemapd(
        &vars,
        &["robots", "test", "/nogoogle/a", "--user-agent", "Googlebot"],
    );
    assert_eq!(code, 1);
    let (code, _, _) = sitemapd(
        &vars,
        &["robots", "test", "/admin/x", "--user-agent", "Googlebot"],
    );
    assert_eq!(code, 0, "Googlebot's own group has no /admin/ rule");
}

async fn check_counts_served_and_skipped_and_fails_on_problems(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/ok"), (2, "https://elsewhere.example/x")])
        .await;
    let (code, stdout, _) = sitemapd(&[("DATABASE_URL", &db.url)], &["check"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("entries served: 1") && stdout.contains("out_of_scope: 1"),
        "{stdout}"
    );
    db.exec("DELETE FROM sitemap_entries WHERE id = 2").await;
    let (code, stdout, _) = sitemapd(&[("DATABASE_URL", &db.url)], &["check"]);
    assert_eq!(code, 0, "{stdout}");
}
