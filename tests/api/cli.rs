//! The binary: configuration errors, exit codes, secrets, what the demo prints.

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
        &["crawlers", "update", "--help"],
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

/// `sitemapd demo` opens the status page on the port after `BIND_ADDR`'s and prints where both
/// are; both answer there.
#[tokio::test]
async fn the_demo_prints_its_sitemaps_and_its_status_page_and_serves_both() {
    use std::io::BufRead;
    let port = two_free_ports();
    let cwd = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sitemapd"))
        .env_clear()
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .current_dir(cwd.path())
        .arg("demo")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start sitemapd demo");
    let stdout = child.stdout.take().unwrap();
    let _running = KillOnDrop(child);
    let line = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|line| line.contains("status page"))
    })
    .await
    .unwrap()
    .expect("the demo says where it serves");
    let index = format!("http://127.0.0.1:{port}/sitemap_index.xml");
    let status = format!("http://127.0.0.1:{}/", port + 1);
    assert_eq!(
        line,
        format!("sitemaps at {index}, status page at {status}")
    );
    let client = reqwest::Client::new();
    for url in [&index, &status] {
        let answered = crate::helpers::eventually(
            url,
            || async {
                match client.get(url.as_str()).send().await {
                    Ok(resp) => resp.status().as_u16(),
                    Err(_) => 0,
                }
            },
            |status| *status == 200,
        )
        .await;
        assert_eq!(answered, 200, "{url}");
    }
    let page = client
        .get(&status)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("sitemap-1.xml.gz"),
        "the status page lists the demo's files"
    );
}

/// A port P of 127.0.0.1 such that P and P + 1 were both free a moment ago.
fn two_free_ports() -> u16 {
    loop {
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
