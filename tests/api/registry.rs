//! The crawler registry as a site owner meets it: AI crawlers counted and shown by their own
//! names, grouped by purpose, "other" only for User-Agents the registry does not know; the
//! robots.txt tester and `robots test` taking a whole User-Agent string; `CRAWLERS_FILE` adding
//! and replacing crawlers, and refusing a bad file by the entry at fault.

use crate::helpers::*;
use serde_json::Value;

const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
const CLAUDEBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)";
const CHATGPT_USER: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";
const UNKNOWN: &str = "Mozilla/5.0 (compatible; NobodyKnowsBot/0.1; +https://nobody.example/bot)";

fn requests(crawler: &str, status: u16) -> String {
    format!("sitemapd_crawler_requests_total{{crawler=\"{crawler}\",status=\"{status}\",verified=\"false\"}}")
}

async fn fetch_as(app: &TestApp, agent: &str, path: &str) -> u16 {
    app.get_with(path, &[("user-agent", agent)])
        .await
        .status()
        .as_u16()
}

async fn status_json(admin: &str) -> Value {
    reqwest::get(format!("{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn page_text(url: String) -> String {
    reqwest::get(url)
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .replace("&#x2f;", "/")
}

/// The status.json entry of the crawler that came, by name.
fn came<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["crawler"] == name)
}

/// The status.json registry entry of `name` under `purpose`.
fn known<'a>(status: &'a Value, purpose: &str, name: &str) -> Option<&'a Value> {
    status["purposes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["purpose"] == purpose)?["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
}

async fn site(vars: &[(&str, &str)]) -> (TestDb, TestApp) {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let app = spawn_app(&db.url, vars).await;
    (db, app)
}

#[tokio::test]
async fn ai_crawlers_are_counted_and_shown_by_name_and_unknown_bots_as_other() {
    // By what each User-Agent claims (tests/api/verification.rs has the verdicts).
    let (_db, app) = site(&[("CRAWLER_VERIFY", "off")]).await;
    assert_eq!(fetch_as(&app, GPTBOT, "/robots.txt").await, 200);
    assert_eq!(fetch_as(&app, GPTBOT, "/sitemap_index.xml").await, 200);
    assert_eq!(fetch_as(&app, CLAUDEBOT, "/sitemap_index.xml").await, 200);
    assert_eq!(fetch_as(&app, CHATGPT_USER, "/robots.txt").await, 200);
    assert_eq!(fetch_as(&app, UNKNOWN, "/robots.txt").await, 200);
    assert_eq!(fetch_as(&app, GPTBOT, "/sitemap-9.xml.gz").await, 404);

    assert_eq!(app.metric(&requests("GPTBot", 200)).await, 2.0);
    assert_eq!(app.metric(&requests("GPTBot", 404)).await, 1.0);
    assert_eq!(app.metric(&requests("ClaudeBot", 200)).await, 1.0);
    assert_eq!(app.metric(&requests("ChatGPT-User", 200)).await, 1.0);
    assert_eq!(app.metric(&requests("other", 200)).await, 1.0);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("sitemapd_crawler_files_behind{crawler=\"GPTBot\"} 0"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("crawler=\"NobodyKnowsBot\""),
        "an unknown bot is never a label of its own"
    );

    let admin = status_page(&app).await;
    let status = status_json(&admin).await;
    let gptbot = came(&status, "GPTBot").expect("GPTBot came");
    assert_eq!(gptbot["purpose"], "ai-training", "{gptbot}");
    assert_eq!(gptbot["operator"], "OpenAI");
    assert_eq!(gptbot["ok"], 2);
    assert_eq!(gptbot["files_fetched"], 2);
    assert!(gptbot["robots_txt_last_fetch"].is_string(), "{gptbot}");
    let claudebot = came(&status, "ClaudeBot").expect("ClaudeBot came");
    assert_eq!(claudebot["purpose"], "ai-training");
    assert!(
        claudebot["robots_txt_last_fetch"].is_null(),
        "ClaudeBot never read robots.txt: {claudebot}"
    );
    assert_eq!(came(&status, "ChatGPT-User").unwrap()["purpose"], "ai-user");
    let other = came(&status, "other").expect("other is always listed");
    assert_eq!(other["ok"], 1);
    assert!(other["purpose"].is_null());
    assert!(
        came(&status, "Googlebot").is_none(),
        "only crawlers that came"
    );
    let names: Vec<&str> = status["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["crawler"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["GPTBot", "ClaudeBot", "ChatGPT-User", "other"],
        "by purpose (training, then fetching for a person), other last"
    );

    // Every registry crawler by purpose, with who read robots.txt.
    let purposes: Vec<&str> = status["purposes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["purpose"].as_str().unwrap())
        .collect();
    assert_eq!(
        purposes,
        [
            "search",
            "ai-training",
            "ai-search",
            "ai-user",
            "seo",
            "archive",
            "preview",
            "other"
        ]
    );
    assert!(known(&status, "ai-training", "GPTBot").unwrap()["robots_txt_last_fetch"].is_string());
    assert!(known(&status, "ai-training", "CCBot").unwrap()["robots_txt_last_fetch"].is_null());
    assert!(known(&status, "search", "Googlebot").unwrap()["robots_txt_last_fetch"].is_null());
    assert_eq!(
        known(&status, "ai-training", "Google-Extended").unwrap()["fetches"],
        false
    );
    assert_eq!(
        known(&status, "ai-search", "PerplexityBot").unwrap()["verifiable"],
        true
    );
    let training = status["purposes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["purpose"] == "ai-training")
        .unwrap();
    assert_eq!(training["read_robots_txt"], 1, "GPTBot alone");

    let html = page_text(format!("{admin}/")).await;
    assert!(
        html.contains("<tr data-crawler=\"GPTBot\"><td>GPTBot"),
        "{html}"
    );
    assert!(html.contains("<tr class=\"purpose\"><th colspan=\"11\">AI training</th></tr>"));
    assert!(
        html.contains("<optgroup label=\"AI search and answers\">"),
        "{html}"
    );
    assert!(html.contains("<option value=\"PerplexityBot\">PerplexityBot</option>"));
    assert!(html.contains("never: cannot know the policy"));
}

#[tokio::test]
async fn the_tester_maps_a_whole_user_agent_to_the_token_its_crawler_obeys() {
    let template = template_file(
        "User-agent: GPTBot\nDisallow: /\n\nUser-agent: ChatGPT-User\nDisallow: /private/\n\nUser-agent: *\nAllow: /\n",
    );
    let path = template.path().to_str().unwrap();
    let (_db, app) = site(&[("ROBOTS_TEMPLATE", path)]).await;
    let admin = status_page(&app).await;
    let ask = |query: String| page_text(format!("{admin}/?url=/a&{query}"));

    let by_string = ask(format!("user_agent={}", urlencode(GPTBOT))).await;
    assert!(by_string.contains(">disallowed</span>"), "{by_string}");
    assert!(by_string.contains("for GPTBot <span class=\"soft\">(token GPTBot)</span>"));

    let by_name = ask("agent=ChatGPT-User".into()).await;
    assert!(by_name.contains(">allowed</span>"), "{by_name}");
    assert!(by_name.contains("<option value=\"ChatGPT-User\" selected>"));

    let unknown = ask(format!("user_agent={}", urlencode(UNKNOWN))).await;
    assert!(unknown.contains(">allowed</span>"), "{unknown}");
    assert!(unknown.contains("(token Mozilla)"), "{unknown}");

    // The command line answers the same way.
    let robots_test = |agent: &str, url: &str| {
        Sitemapd::new(["robots", "test", url, "--user-agent", agent])
            .env("SITEMAP_BASE_URL", BASE)
            .env("ROBOTS_TEMPLATE", path)
            .output()
    };
    let out = robots_test(GPTBOT, "/a");
    assert_eq!(
        out.status.code(),
        Some(1),
        "GPTBot's User-Agent is disallowed"
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("disallowed: /a for GPTBot"), "{said}");
    let out = robots_test(CHATGPT_USER, "/private/x");
    assert_eq!(out.status.code(), Some(1));
    let out = robots_test(CHATGPT_USER, "/a");
    assert_eq!(out.status.code(), Some(0));
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn a_crawlers_file_adds_crawlers_and_replaces_them_by_name() {
    let file = template_file(
        r#"
[[crawler]]
name = "ExampleBot"
tokens = ["ExampleBot"]
operator = "Example Inc."
purpose = "seo"
docs = ["https://example.net/bot"]

# GPTBot, as this site sees it: an extra User-Agent word and another purpose.
[[crawler]]
name = "GPTBot"
tokens = ["GPTBot"]
user_agent = ["GPTBot", "GPTBot-Next"]
operator = "OpenAI"
purpose = "ai-search"
"#,
    );
    let (_db, app) = site(&[
        ("CRAWLERS_FILE", file.path().to_str().unwrap()),
        ("CRAWLER_VERIFY", "off"),
    ])
    .await;
    assert_eq!(
        fetch_as(
            &app,
            "Mozilla/5.0 (compatible; ExampleBot/2.0)",
            "/robots.txt"
        )
        .await,
        200
    );
    assert_eq!(fetch_as(&app, "GPTBot-Next/0.1", "/robots.txt").await, 200);
    assert_eq!(fetch_as(&app, GPTBOT, "/sitemap_index.xml").await, 200);
    assert_eq!(app.metric(&requests("ExampleBot", 200)).await, 1.0);
    assert_eq!(app.metric(&requests("GPTBot", 200)).await, 2.0);

    let admin = status_page(&app).await;
    let status = status_json(&admin).await;
    assert_eq!(came(&status, "ExampleBot").unwrap()["purpose"], "seo");
    assert_eq!(came(&status, "GPTBot").unwrap()["purpose"], "ai-search");
    assert!(known(&status, "ai-search", "GPTBot").is_some());
    assert!(
        known(&status, "ai-training", "GPTBot").is_none(),
        "replaced, not listed twice"
    );
    assert_eq!(
        known(&status, "seo", "ExampleBot").unwrap()["operator"],
        "Example Inc."
    );
    assert!(
        known(&status, "ai-training", "ClaudeBot").is_some(),
        "the rest stays"
    );
}

#[test]
fn a_bad_crawlers_file_stops_the_start_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("s.db").display());
    let cases: [(&str, &[&str]); 4] = [
        (
            "[[crawler]]\nname = \"ExampleBot\"\ntokens = [\"ExampleBot\"]\npurpose = \"ads\"\n",
            &["\"ExampleBot\" (#1)", "unknown purpose \"ads\"", "ai-training"],
        ),
        (
            "[[crawler]]\nname = \"A\"\ntokens = [\"A\"]\npurpose = \"seo\"\n\n[[crawler]]\ntokens = [\"B\"]\npurpose = \"seo\"\n",
            &["crawler #2", "missing `name`"],
        ),
        (
            "[[crawler]]\nname = \"A\"\ntokens = [\"A\"]\npurpose = \"seo\"\n\n[[crawler]]\nname = \"a\"\ntokens = [\"B\"]\npurpose = \"seo\"\n",
            &["\"a\" (#2)", "already used by crawler #1"],
        ),
        (
            "[[crawler]]\nname = \"A\ntokens = [\"A\"]\npurpose = \"seo\"\n",
            &["line 2", "not a crawler registry"],
        ),
    ];
    for (text, named) in cases {
        let file = template_file(text);
        let path = file.path().to_str().unwrap();
        let mut wanted = vec!["CRAWLERS_FILE", path];
        wanted.extend_from_slice(named);
        refused(
            &[("CRAWLERS_FILE", path), ("DATABASE_URL", &database)],
            &wanted,
        );
    }
    refused(
        &[
            ("CRAWLERS_FILE", "/nonexistent/crawlers.toml"),
            ("DATABASE_URL", &database),
        ],
        &["CRAWLERS_FILE", "/nonexistent/crawlers.toml", "cannot read"],
    );
    assert!(
        !dir.path().join("s.db").exists(),
        "refused before touching the database"
    );

    // `robots test` reads the registry too.
    let file = template_file("[[crawler]]\nname = \"X\"\npurpose = \"seo\"\n");
    let out = Sitemapd::new(["robots", "test", "/", "--user-agent", "X"])
        .env("SITEMAP_BASE_URL", BASE)
        .env("CRAWLERS_FILE", file.path())
        .output();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"X\" (#1): missing `tokens`"), "{stderr}");
}

/// The status page's crawler table and its robots.txt readers, as headless Chromium builds them.
#[tokio::test]
async fn chromium_shows_crawlers_by_purpose_and_who_read_robots_txt() {
    let browser = chromium();
    let (_db, app) = site(&[("CRAWLER_VERIFY", "off")]).await;
    fetch_as(&app, GPTBOT, "/robots.txt").await;
    fetch_as(&app, GOOGLEBOT, "/sitemap_index.xml").await;
    fetch_as(&app, UNKNOWN, "/sitemap_index.xml").await;
    let admin = status_page(&app).await;
    let dom = dump_dom(&browser, &format!("{admin}/")).await;
    let table = section(&dom, "id=\"crawler-table\"", "</table>");
    let rows: Vec<&str> = table
        .split("<tr")
        .skip(1)
        .filter_map(|row| row.split("data-crawler=\"").nth(1))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(rows, ["Googlebot", "GPTBot", "other"], "{table}");
    let headers: Vec<&str> = table
        .split("<tr class=\"purpose\"><th colspan=\"11\">")
        .skip(1)
        .map(|rest| rest.split('<').next().unwrap())
        .collect();
    assert_eq!(
        headers,
        ["Search engines", "AI training", "Not in the registry"],
        "{table}"
    );
    let readers = section(&dom, "id=\"purpose-ai-training\"", "</details>");
    assert!(
        readers.starts_with("id=\"purpose-ai-training\" open"),
        "a purpose someone read it for is open: {readers}"
    );
    assert!(readers.contains("1 of"), "{readers}");
    let gptbot = section(readers, "data-crawler=\"GPTBot\"", "</tr>");
    assert!(!gptbot.contains("never"), "{gptbot}");
    let ccbot = section(readers, "data-crawler=\"CCBot\"", "</tr>");
    assert!(ccbot.contains("never: cannot know the policy"), "{ccbot}");
    let search = section(&dom, "id=\"purpose-search\"", "</details>");
    let googlebot = section(search, "data-crawler=\"Googlebot\"", "</tr>");
    assert!(
        googlebot.contains("never: cannot know the policy"),
        "Googlebot fetched the index, not robots.txt: {googlebot}"
    );
}

/// The part of `text` from `start` to the next `end`.
fn section<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("{start} not in {text}"));
    let rest = &text[from..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The status page shows the policy: per purpose its rule and crawlers, the rule each crawler
/// gets (its own replacing its purpose's) and whether the compiled robots.txt lets it fetch `/`.
#[tokio::test]
async fn the_status_page_shows_the_policy_per_purpose_and_what_each_crawler_may_fetch() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    let policy = "ai-training=disallow,GPTBot=disallow:/premium/";
    let app = spawn_app(&db.url, &[("ROBOTS_POLICY", policy)]).await;
    let admin = status_page(&app).await;
    let status = status_json(&admin).await;
    let summary = &status["sites"][0]["policy"];
    assert!(
        summary["policy"].as_str().unwrap().contains("GPTBot"),
        "{summary}"
    );
    let purpose = |name: &str| {
        summary["purposes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["purpose"] == name)
            .unwrap_or_else(|| panic!("purpose {name} in {summary}"))
            .clone()
    };
    let crawler = |purpose: &Value, name: &str| {
        purpose["crawlers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {purpose}"))
            .clone()
    };
    let training = purpose("ai-training");
    assert_eq!(training["rule"], "disallow");
    assert_eq!(crawler(&training, "CCBot")["may_fetch_root"], false);
    let gptbot = crawler(&training, "GPTBot");
    assert_eq!(gptbot["own_rule"], true, "{gptbot}");
    assert_eq!(gptbot["may_fetch_root"], true, "{gptbot}");
    assert_eq!(
        crawler(&purpose("search"), "Googlebot")["may_fetch_root"],
        true
    );
    let html = page_text(admin.clone()).await;
    assert!(
        html.contains("Crawler policy") && html.contains("CCBot"),
        "{html}"
    );
}

#[tokio::test]
async fn the_status_page_dates_the_registry_and_lists_the_unknown_agents_seen_most() {
    let (_db, app) = site(&[("CRAWLER_VERIFY", "off")]).await;
    for _ in 0..3 {
        assert_eq!(fetch_as(&app, UNKNOWN, "/robots.txt").await, 200);
    }
    assert_eq!(
        fetch_as(&app, "curl/8.5.0", "/sitemap_index.xml").await,
        200
    );
    assert_eq!(fetch_as(&app, GPTBOT, "/robots.txt").await, 200);
    let admin = status_page(&app).await;
    let status = status_json(&admin).await;
    assert_eq!(status["registry"]["source"], "built in", "{status}");
    let date = status["registry"]["date"].as_str().unwrap();
    assert!(
        chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok(),
        "{date}"
    );
    let unknown = status["unknown_agents"].as_array().unwrap();
    assert_eq!(unknown.len(), 2, "{unknown:?}");
    assert_eq!(unknown[0]["user_agent"], UNKNOWN);
    assert_eq!(unknown[0]["requests"], 3);
    assert_eq!(unknown[1]["user_agent"], "curl/8.5.0");
    assert!(
        unknown.iter().all(|a| a["user_agent"] != GPTBOT),
        "a registry crawler is never unknown"
    );
    let page = page_text(admin.clone()).await;
    let registry = section(&page, "Crawler registry", "Crawler verification");
    assert!(registry.contains(date), "{registry}");
    assert!(registry.contains("NobodyKnowsBot/0.1"), "{registry}");

    // With CRAWLERS_FILE, the file's modification time.
    let file = template_file("");
    let (_db, app) = site(&[("CRAWLERS_FILE", file.path().to_str().unwrap())]).await;
    let status = status_json(&status_page(&app).await).await;
    assert_eq!(
        status["registry"]["source"],
        file.path().display().to_string()
    );
    assert!(
        status["registry"]["date"]
            .as_str()
            .unwrap()
            .ends_with(" UTC"),
        "{status}"
    );
}
