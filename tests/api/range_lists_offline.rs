//! What `serve` and `demo` say of crawler IP-range lists they cannot fetch (an offline machine):
//! `serve` one line per round of fetches, whatever the number of lists; `demo` verifies no
//! crawler, so it fetches none and says nothing of them.

use serde_json::Value;

use crate::helpers::*;

/// A registry file adding two crawlers whose lists are on `addr`, where nothing listens.
fn crawlers_with_unreachable_lists(addr: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    let crawler = |name: &str| {
        format!(
            "[[crawler]]\nname = \"{name}\"\ntokens = [\"{name}\"]\nuser_agent = [\"{name}\"]\n\
             operator = \"Nobody\"\npurpose = \"search\"\nverify_dns = []\n\
             verify_ranges = [\"http://{addr}/{name}.json\"]\ndocs = []\n\n"
        )
    };
    std::fs::write(
        file.path(),
        crawler("OfflineBotA") + &crawler("OfflineBotB"),
    )
    .unwrap();
    file
}

/// Whether every range list of the status page was tried (fetched, or failed with an error).
fn every_list_tried(status: &Value) -> bool {
    status["verification"]["range_lists"]
        .as_array()
        .is_some_and(|lists| {
            !lists.is_empty()
                && lists
                    .iter()
                    .all(|l| !l["fetched_at"].is_null() || !l["error"].is_null())
        })
}

#[tokio::test]
async fn serve_says_once_per_round_that_range_lists_could_not_be_fetched() {
    let db = TestDb::new().await;
    db.migrate().await;
    let nowhere = format!("127.0.0.1:{}", free_port());
    let registry = crawlers_with_unreachable_lists(&nowhere);
    let admin = format!("127.0.0.1:{}", free_port());
    let server = Sitemapd::new(["serve"])
        .env("SITEMAP_BASE_URL", BASE)
        .env("DATABASE_URL", &db.url)
        .env("CRAWLERS_FILE", registry.path())
        .env("ADMIN_BIND_ADDR", &admin)
        .env("RUST_LOG", "warn")
        .serve()
        .await;
    let status_url = format!("http://{admin}/status.json");
    let status = eventually(
        "every range list to be tried",
        || async {
            match reqwest::get(&status_url).await {
                Ok(r) => r.json::<Value>().await.unwrap_or_default(),
                Err(_) => Value::Null,
            }
        },
        every_list_tried,
    )
    .await;
    assert!(every_list_tried(&status), "{status:#}");
    server.terminate();
    let log = String::from_utf8(server.wait_with_output().await.stderr).unwrap();
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("range list") || l.contains("IP ranges"))
        .collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(said[0].contains("WARN"), "{log}");
    assert!(
        said[0].contains(&nowhere),
        "the first list that failed is named: {log}"
    );
}

#[tokio::test]
async fn the_demo_fetches_no_range_list_and_says_nothing_of_them() {
    let admin = format!("127.0.0.1:{}", free_port());
    let server = Sitemapd::new(["demo"])
        .env("ADMIN_BIND_ADDR", &admin)
        .env("RUST_LOG", "info")
        .serve()
        .await;
    let status: Value = reqwest::get(format!("http://{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["verification"]["on"], false, "{status:#}");
    let never_fetched = status["verification"]["range_lists"]
        .as_array()
        .is_none_or(|lists| {
            lists
                .iter()
                .all(|l| l["error"].is_null() && l["fetched_at"].is_null())
        });
    assert!(never_fetched, "{status:#}");
    server.terminate();
    let log = String::from_utf8(server.wait_with_output().await.stderr).unwrap();
    // sitemapd's own warnings: the driver's note of a slow pool acquire on a loaded machine
    // says nothing of range lists.
    assert!(!log.lines().any(|l| l.contains(" WARN sitemapd")), "{log}");
    assert!(!log.contains("IP range"), "{log}");
}
