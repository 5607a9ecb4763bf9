//! `sitemapd crawlers update` against a local copy of ai.robots.txt's `robots.json` and a range
//! list served on loopback, and from a local file: what it writes loads back through
//! `CRAWLERS_FILE`, what it prints names the policy's new verdicts, and a failed fetch writes
//! nothing.

use std::path::Path;

use crate::helpers::*;

/// The list in the real file's shape: one agent the registry knows, three it does not.
const ROBOTS_JSON: &str = r#"{
    "GPTBot": {
        "operator": "[OpenAI](https://openai.com)",
        "respect": "Yes",
        "function": "Scrapes data to train OpenAI's products.",
        "frequency": "No information.",
        "description": "Data is used to train current and future models, removed paywalled data, PII and data that violates the company's policies."
    },
    "GPTBot-new": {
        "operator": "[OpenAI](https://openai.com)",
        "respect": "Yes",
        "function": "LLM training.",
        "frequency": "No information.",
        "description": "Downloads data to train models."
    },
    "HelperBot": {
        "operator": "Helper Inc, fetching pages when its users ask",
        "respect": "Unclear at this time.",
        "function": "AI Assistants",
        "frequency": "Only when prompted by a user.",
        "description": "HelperBot fetches a page when a user asks about it."
    },
    "MysteryBot": {
        "operator": "Unclear at this time.",
        "respect": "Unclear at this time.",
        "function": "Undocumented AI Agents",
        "frequency": "Unclear at this time.",
        "description": "Description unavailable from knownagents.com"
    }
}"#;

/// A range list in the shape the operators publish.
const RANGES_JSON: &str = r#"{"creationTime": "2026-12-01T00:00:00.000000", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}, {"ipv6Prefix": "2001:db8::/32"}]}"#;

/// Serves `/robots.json` and `/ranges.json`; anything else is 404. Returns the origin.
async fn list_server() -> String {
    use axum::routing::get;
    let router = axum::Router::new()
        .route("/robots.json", get(|| async { ROBOTS_JSON }))
        .route("/ranges.json", get(|| async { RANGES_JSON }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    origin
}

const POLICY: &str = "ai-training=disallow,ai-user=allow";

fn update(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut all = vec!["crawlers", "update"];
    all.extend_from_slice(args);
    let out = Sitemapd::new(all)
        .current_dir(dir)
        .env("SITEMAP_BASE_URL", BASE)
        .env("ROBOTS_POLICY", POLICY)
        .envs(vars)
        .output();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code(), said, err)
}

/// `robots test /` for `agent` with the written file as CRAWLERS_FILE: its exit code.
fn robots_test(file: &Path, agent: &str) -> (Option<i32>, String) {
    let out = Sitemapd::new(["robots", "test", "/", "--user-agent", agent])
        .env("SITEMAP_BASE_URL", BASE)
        .env("ROBOTS_POLICY", POLICY)
        .env("CRAWLERS_FILE", file)
        .output();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_adds_what_the_registry_lacks_keeps_the_owners_entries_and_loads_back() {
    let origin = list_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crawlers.toml");
    let owners = format!(
        "# the owner's own\n[[crawler]]\nname = \"OwnBot\"\ntokens = [\"OwnBot\"]\n\
         operator = \"Me\"\npurpose = \"other\"\nverify_ranges = [\"{origin}/ranges.json\"]\n\
         docs = [\"https://me.example/ownbot\"]\n"
    );
    std::fs::write(&file, &owners).unwrap();
    let from = format!("{origin}/robots.json");
    let file_var = file.to_str().unwrap();
    let (code, said, err) = update(
        dir.path(),
        &["--from", &from],
        &[("CRAWLERS_FILE", file_var)],
    );
    assert_eq!(code, Some(0), "{said}{err}");
    assert!(said.contains("4 agents listed, 3 new"), "{said}");
    assert!(!said.contains("+ GPTBot:"), "{said}");
    assert!(
        said.contains("+ GPTBot-new: operator OpenAI, purpose ai-training"),
        "{said}"
    );
    assert!(said.contains("+ HelperBot: operator Helper Inc"), "{said}");
    assert!(
        said.contains("+ MysteryBot: operator unknown, purpose ai-training (review"),
        "{said}"
    );
    assert!(
        said.contains("GPTBot-new: now disallowed on / by ai-training=disallow"),
        "{said}"
    );
    assert!(
        said.contains("HelperBot: now allowed by ai-user=allow"),
        "{said}"
    );
    assert!(
        said.contains(&format!("range list {origin}/ranges.json: 2 prefixes")),
        "{said}"
    );
    assert!(said.contains("3 crawlers added"), "{said}");

    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with(&owners), "{written}");
    assert!(
        written.contains("# review: purpose ai-training is a guess"),
        "{written}"
    );
    assert_eq!(written.matches("[[crawler]]").count(), 4, "{written}");

    // Read back as CRAWLERS_FILE: the new agent is a crawler the policy closes.
    let (code, verdict) = robots_test(&file, "Mozilla/5.0 (compatible; GPTBot-new/1.0)");
    assert_eq!(code, Some(1), "{verdict}");
    assert!(verdict.contains("GPTBot-new"), "{verdict}");
    let (code, verdict) = robots_test(&file, "HelperBot");
    assert_eq!(code, Some(0), "{verdict}");

    // Once more: nothing new, the file as it was.
    let (code, said, _) = update(
        dir.path(),
        &["--from", &from],
        &[("CRAWLERS_FILE", file_var)],
    );
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("0 new") && said.contains("left as it was"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fetch_exits_1_and_writes_nothing() {
    let origin = list_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new.toml");
    for from in [
        format!("{origin}/gone.json"),
        format!("http://127.0.0.1:{}/robots.json", free_port()),
        dir.path().join("no-such-file.json").display().to_string(),
        format!("{origin}/ranges.json"),
    ] {
        let (code, said, err) = update(
            dir.path(),
            &["--from", &from, "--out", file.to_str().unwrap()],
            &[],
        );
        assert_eq!(code, Some(1), "{from}: {said}{err}");
        assert!(err.contains(&from), "{err}");
        assert!(!file.exists(), "{from}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_file_and_a_crawlers_file_yet_to_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("robots.json");
    std::fs::write(&list, ROBOTS_JSON).unwrap();
    // No --out, no CRAWLERS_FILE: crawlers.toml in the working directory.
    let (code, said, err) = update(dir.path(), &["--from", list.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{said}{err}");
    let default = dir.path().join("crawlers.toml");
    let written = std::fs::read_to_string(&default).unwrap();
    assert!(written.contains("name = \"HelperBot\""), "{written}");
    assert!(written.contains(list.to_str().unwrap()), "{written}");
    // CRAWLERS_FILE naming a file not made yet: the update makes it.
    let later = dir.path().join("etc-crawlers.toml");
    let (code, said, err) = update(
        dir.path(),
        &["--from", list.to_str().unwrap()],
        &[("CRAWLERS_FILE", later.to_str().unwrap())],
    );
    assert_eq!(code, Some(0), "{said}{err}");
    let (code, verdict) = robots_test(&later, "MysteryBot");
    assert_eq!(code, Some(1), "{verdict}");
}
