//! One policy, read back from every place sitemapd writes it: for each purpose rule and sample
//! path, robots.txt (Google's parser, for a crawler of that purpose), the 403 rules of
//! `robots enforce nginx` (its regular expressions run as nginx runs them: first match wins),
//! llms.txt (the `ai-search` rule) and license.xml (the longest matching `<content>`) must give
//! the same answer as the rule itself.

use std::process::Command;

use crate::helpers::*;
use crate::license::contents;

const POLICY: &str = "search=allow,ai-training=disallow,ai-search=disallow:/premium/ /*.pdf$";

/// Each purpose rule: a crawler of that purpose (its User-Agent and robots.txt token), its RSL
/// usage, and the paths it disallows (`None`: the whole site).
struct Rule {
    user_agent: &'static str,
    token: &'static str,
    usage: &'static str,
    disallowed: fn(&str) -> bool,
    whole_site: bool,
}

const RULES: [Rule; 3] = [
    Rule {
        user_agent: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        token: "Googlebot",
        usage: "search",
        disallowed: |_| false,
        whole_site: false,
    },
    Rule {
        user_agent: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
        token: "GPTBot",
        usage: "ai-train",
        disallowed: |_| true,
        whole_site: true,
    },
    Rule {
        user_agent: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot",
        token: "OAI-SearchBot",
        usage: "ai-input",
        disallowed: |path| path.starts_with("/premium/") || path.ends_with(".pdf"),
        whole_site: false,
    },
];

const PATHS: [&str; 5] = [
    "/",
    "/blog/a",
    "/premium/x",
    "/docs/a.pdf",
    "/docs/a.pdf?x=1",
];

/// An RFC 9309 pattern as a regular expression anchored at the start.
fn pattern_regex(pattern: &str) -> regex::Regex {
    let (body, end) = match pattern.strip_suffix('$') {
        Some(body) => (body, "$"),
        None => (pattern, ""),
    };
    let pieces: Vec<String> = body.split('*').map(regex::escape).collect();
    regex::Regex::new(&format!("^{}{end}", pieces.join(".*"))).unwrap()
}

/// Whether license.xml permits `usage` on `path`: the longest matching `<content url>`.
fn licence_permits(licence: &str, usage: &str, path: &str) -> bool {
    let all = contents(licence);
    let (_, permits, prohibits) = all
        .iter()
        .filter(|(url, ..)| pattern_regex(url).is_match(path))
        .max_by_key(|(url, ..)| url.len())
        .expect("the / content matches every path");
    let has = |list: &str| list.split(',').any(|u| u == usage);
    assert!(
        has(permits) != has(prohibits),
        "{usage} on {path}: {licence}"
    );
    has(permits)
}

/// The nginx snippet's 403 rules as nginx runs them: the first `~*` regex of the User-Agent
/// map that matches decides, and `/robots.txt` is never refused.
struct NginxRules(Vec<(regex::Regex, bool)>);

impl NginxRules {
    fn of(snippet: &str) -> Self {
        let agents = snippet
            .split("map $http_user_agent $sitemapd_refused_agent {")
            .nth(1)
            .and_then(|rest| rest.split("\n}").next())
            .expect("the User-Agent map");
        let rules = agents
            .lines()
            .filter_map(|line| {
                let line = line.trim().strip_prefix("\"~*")?;
                let (regex, refused) = line.rsplit_once("\" ")?;
                let regex = regex::RegexBuilder::new(&regex.replace("\\\"", "\""))
                    .case_insensitive(true)
                    .build()
                    .unwrap();
                Some((regex, refused.trim_end_matches(';') == "1"))
            })
            .collect();
        Self(rules)
    }

    fn refuses(&self, user_agent: &str, path: &str) -> bool {
        path != "/robots.txt"
            && self
                .0
                .iter()
                .find(|(regex, _)| regex.is_match(user_agent))
                .is_some_and(|(_, refused)| *refused)
    }
}

#[tokio::test]
async fn each_rule_reads_the_same_in_robots_txt_the_403_rules_llms_txt_and_the_licence() {
    let db = TestDb::new().await;
    db.migrate().await;
    let rows: Vec<(i64, &str)> = PATHS
        .iter()
        .enumerate()
        .map(|(i, p)| (i as i64 + 1, *p))
        .collect();
    db.insert(&rows).await;
    let vars = [("ROBOTS_POLICY", POLICY), ("LLMS_TXT", "on")];
    let app = spawn_app(&db.url, &vars).await;
    let robots = app.get("/robots.txt").await.text().await.unwrap();
    let llms = app.get("/llms.txt").await.text().await.unwrap();
    let licence = app.get("/license.xml").await.text().await.unwrap();
    let snippet = Command::new(env!("CARGO_BIN_EXE_sitemapd"))
        .args(["robots", "enforce", "nginx"])
        .env_clear()
        .env("SITEMAP_BASE_URL", BASE)
        .env("ROBOTS_POLICY", POLICY)
        .output()
        .unwrap();
    assert!(snippet.status.success());
    let nginx = NginxRules::of(&String::from_utf8(snippet.stdout).unwrap());

    for rule in &RULES {
        for path in PATHS {
            let allowed = !(rule.disallowed)(path);
            let url = format!("https://www.example.com{path}");
            let google = robotstxt::DefaultMatcher::default()
                .one_agent_allowed_by_robots(&robots, rule.token, &url);
            assert_eq!(
                google, allowed,
                "robots.txt, {} on {path}:\n{robots}",
                rule.token
            );
            assert_eq!(
                licence_permits(&licence, rule.usage, path),
                allowed,
                "license.xml, {} on {path}",
                rule.usage
            );
            // The 403 rules speak for a crawler closed on the whole site; a path rule is left
            // to robots.txt, so they refuse nothing there.
            let refused = nginx.refuses(rule.user_agent, path);
            assert_eq!(
                refused,
                rule.whole_site && !allowed,
                "403, {} on {path}",
                rule.token
            );
            if rule.usage == "ai-input" {
                let listed = llms.contains(&format!("]({url})"));
                assert_eq!(listed, allowed, "llms.txt, {path}:\n{llms}");
            }
        }
        assert!(!nginx.refuses(rule.user_agent, "/robots.txt"));
    }
}
