//! The crawl log's robots.txt compliance report keeps fetches by crawlers whose operators
//! document that they ignore robots.txt (`obeys_robots = false`: fetches a person asked for,
//! such as ChatGPT-User's and Perplexity-User's) apart, as exempt, and never counts them as
//! violations; a crawler that obeys robots.txt and fetches a disallowed path is still a violator.
//! Lines reach the crawl log as a web server sends them, through syslog over UDP.

use serde_json::Value;

use crate::crawl_log::{crawl_log, report, start, HOST};
use crate::helpers::{eventually, status_page, template_file, Backend, TestDb};

/// As OpenAI and Perplexity document them (developers.openai.com/api/docs/bots,
/// docs.perplexity.ai/guides/bots).
const CHATGPT_USER: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; \
                            ChatGPT-User/1.0; +https://openai.com/bot";
const PERPLEXITY_USER: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; \
                               Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)";
const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; \
                      GPTBot/1.3; +https://openai.com/gptbot";
const OAI_ADSBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; \
                          OAI-AdsBot/1.0; +https://openai.com/adsbot";

fn crawlers_in<'a>(report: &'a Value, list: &str) -> Vec<&'a str> {
    report["sites"][0][list]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter_map(|v| v["crawler"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

async fn fetches_a_person_asked_for_are_exempt_never_violations(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = start(&db, robots.path()).await;
    let addr = crawl_log(&app).local_addr();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for (path, user_agent) in [
        ("/private/asked", CHATGPT_USER),
        ("/private/asked", PERPLEXITY_USER),
        ("/private/crawled", GPTBOT),
        ("/private/ad", OAI_ADSBOT),
    ] {
        let now = crate::crawl_log_trust::logged_now();
        let line = format!(
            "<190>Nov 25 22:00:00 web sitemapd: {now}\t20.0.0.1\t\"{HOST}\"\
             \t\"GET\"\t\"{path}\"\t200\t5\t\"{user_agent}\""
        );
        socket.send_to(line.as_bytes(), addr).unwrap();
    }

    let seen = eventually(
        "the four fetches in the compliance report",
        || async { report(&app) },
        |r| crawlers_in(r, "robots_violations").len() + crawlers_in(r, "robots_exempt").len() == 4,
    )
    .await;
    assert_eq!(
        crawlers_in(&seen, "robots_violations"),
        ["GPTBot", "OAI-AdsBot"],
        "{seen:#}"
    );
    assert_eq!(
        crawlers_in(&seen, "robots_exempt"),
        ["ChatGPT-User", "Perplexity-User"],
        "{seen:#}"
    );
    let exempt = &seen["sites"][0]["robots_exempt"][0];
    assert_eq!(exempt["unverified"], 1, "{seen:#}");
    assert_eq!(exempt["examples"][0]["path"], "/private/asked", "{seen:#}");

    let status: Value =
        serde_json::to_value(sitemapd::admin::status::Status::of(&app.app)).unwrap();
    assert_eq!(
        crawlers_in(&status, "robots_exempt"),
        ["ChatGPT-User", "Perplexity-User"],
        "{status:#}"
    );
    assert_eq!(
        crawlers_in(&status, "robots_violations"),
        ["GPTBot", "OAI-AdsBot"],
        "{status:#}"
    );
    let admin = status_page(&app).await;
    let page = reqwest::get(format!("{admin}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let exempt_at = page.find("Exempt:").expect("an exempt section");
    assert!(page[exempt_at..].contains("Perplexity-User"), "{page}");
    let violations_at = page.find("robots.txt violations").expect("violations");
    assert!(
        !page[violations_at..exempt_at].contains("Perplexity-User"),
        "{page}"
    );
}

crate::on_each_database!(fetches_a_person_asked_for_are_exempt_never_violations);
