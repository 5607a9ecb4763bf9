//! The binary: configuration errors, exit codes, secrets.

use crate::helpers::Sitemapd;

fn sitemapd(vars: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    Sitemapd::new(args).envs(vars).output()
}

#[test]
fn a_bad_setting_stops_the_start_with_exit_2_and_one_line_naming_it() {
    let out = sitemapd(
        &[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("SITEMAP_PAGE_SIZE", "0"),
        ],
        &["serve"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("SITEMAP_PAGE_SIZE")
            && stderr.contains("\"0\"")
            && stderr.contains("1 to 50000"),
        "{stderr}"
    );
}

#[test]
fn a_missing_base_url_is_named() {
    let out = sitemapd(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("SITEMAP_BASE_URL"));
}

#[test]
fn a_database_password_is_never_printed() {
    let out = sitemapd(
        &[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("DATABASE_URL", "postgres://u:hunter2@127.0.0.1:1/db"),
            ("BIND_ADDR", "nonsense"),
        ],
        &["serve"],
    );
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("BIND_ADDR"), "{all}");
    assert!(!all.contains("hunter2"), "{all}");
    let out = sitemapd(
        &[
            ("SITEMAP_BASE_URL", "https://e.com"),
            ("DATABASE_URL", "postgres://u:hunter2@127.0.0.1:1/db"),
        ],
        &["migrate"],
    );
    assert_ne!(out.status.code(), Some(0));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("hunter2"), "{all}");
}

#[test]
fn every_command_has_help() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["migrate", "--help"],
        &["check", "--help"],
        &["robots", "test", "--help"],
        &["export", "--help"],
        &["import", "--help"],
        &["demo", "--help"],
    ] {
        let out = sitemapd(&[], args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
    }
}

#[tokio::test]
async fn migrate_creates_the_tables_and_can_run_again() {
    let db = crate::helpers::TestDb::new().await;
    for _ in 0..2 {
        let out = sitemapd(
            &[
                ("SITEMAP_BASE_URL", "https://e.com"),
                ("DATABASE_URL", &db.url),
            ],
            &["migrate"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_tables WHERE tablename IN ('sitemap_entries', 'sitemapd_pages', 'sitemapd_files')",
    )
    .fetch_one(db.pg())
    .await
    .unwrap();
    assert_eq!(tables, 3);
}
