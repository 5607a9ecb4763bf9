//! The crawler policy (ROBOTS_POLICY, ROBOTS_CONTENT_SIGNAL, [site.robots]) compiled into the
//! served robots.txt, the template's extension lines kept as written, what `check` warns about,
//! `robots test` and `robots enforce`, and the settings refused at start.

use crate::helpers::*;

crate::on_each_database!(
    the_policy_is_served_and_leaves_the_sitemaps_alone_unless_checked,
    check_warns_of_what_crawlers_read_differently,
);

/// A template with a `*` group, a group of its own for GPTBot and Cloudflare's lines.
const TEMPLATE: &str =
    "User-agent: *\nContent-Signal: search=yes, ai-train=no\nDisallow: /admin/\n\n\
    User-agent: GPTBot\nDisallow: /gpt-only/\n\nLicense: https://www.example.com/license.xml\n\
    Content-Usage: train-ai=n\nHost: www.example.com\nClean-param: ref /articles/\n\n\
    Sitemap: {{ sitemap_index_url }}\n";

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

fn google_allows(robots: &str, agent: &str, path: &str) -> bool {
    let url = format!("https://www.example.com{path}");
    robotstxt::DefaultMatcher::default().one_agent_allowed_by_robots(robots, agent, &url)
}

async fn the_policy_is_served_and_leaves_the_sitemaps_alone_unless_checked(backend: Backend) {
    let template = template_file(TEMPLATE);
    let path = template.path().to_str().unwrap();
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[
        (1, "/"),
        (2, "/premium/a"),
        (3, "/admin/x"),
        (4, "/blog/post"),
    ])
    .await;
    let policy = "ai-training=disallow,GPTBot=disallow:/premium/,ai-search=allow";
    let vars = [("ROBOTS_TEMPLATE", path), ("ROBOTS_POLICY", policy)];
    let app = spawn_app(&db.url, &vars).await;
    let response = app.get("/robots.txt").await;
    let etag = header(&response, "etag").to_string();
    let robots = response.text().await.unwrap();
    // The template's extension lines as written, its own Content-Signal kept (nothing derived).
    for line in [
        "Content-Signal: search=yes, ai-train=no\n",
        "License: https://www.example.com/license.xml\n",
        "Content-Usage: train-ai=n\n",
        "Host: www.example.com\n",
        "Clean-param: ref /articles/\n",
    ] {
        assert_eq!(robots.matches(line).count(), 1, "{line} in\n{robots}");
    }
    // GPTBot: one group, the template's rules for it and the policy's.
    assert_eq!(
        robots.matches("User-agent: GPTBot\n").count(),
        1,
        "{robots}"
    );
    for (agent, path, allowed) in [
        ("GPTBot", "/gpt-only/x", false),
        ("GPTBot", "/premium/a", false),
        ("GPTBot", "/admin/x", true), // GPTBot's own group in the template does not close /admin/
        ("GPTBot", "/blog/post", true),
        ("CCBot", "/blog/post", false),
        ("Google-Extended", "/", false),
        ("ClaudeBot", "/", false),
        ("CCBot", "/robots.txt", true),
        ("OAI-SearchBot", "/blog/post", true),
        ("OAI-SearchBot", "/admin/x", false),
        ("Googlebot", "/premium/a", true),
        ("Googlebot", "/admin/x", false),
    ] {
        // Google's parser does not apply RFC 9309's "/robots.txt is always allowed".
        if path != "/robots.txt" {
            assert_eq!(
                google_allows(&robots, agent, path),
                allowed,
                "Google: {agent} {path} in\n{robots}"
            );
        }
        let (code, stdout, _) = sitemapd(&vars, &["robots", "test", path, "--user-agent", agent]);
        assert_eq!(
            code,
            if allowed { 0 } else { 1 },
            "{agent} {path}: {stdout}"
        );
    }
    // A whole User-Agent string is read as the crawler reads robots.txt.
    let (code, stdout, _) = sitemapd(
        &vars,
        &[
            "robots",
            "test",
            "/blog/post",
            "--user-agent",
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
        ],
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("for ClaudeBot"), "{stdout}");

    // The policy removes nothing from the sitemaps: ROBOTS_CHECK_AGENTS is `*`.
    assert_eq!(app.all_locs().await.len(), 3, "only /admin/x is left out");
    // Same configuration, same bytes and ETag.
    let again = spawn_app(&db.url, &vars).await;
    let response = again.get("/robots.txt").await;
    assert_eq!(header(&response, "etag"), etag);
    assert_eq!(response.text().await.unwrap(), robots);
    drop((app, again));

    // Unless ROBOTS_CHECK_AGENTS names the agents it disallows.
    let mut checked = vars.to_vec();
    checked.push(("ROBOTS_CHECK_AGENTS", "*,GPTBot"));
    let app = spawn_app(&db.url, &checked).await;
    assert_eq!(
        app.all_locs().await,
        [
            "https://www.example.com/",
            "https://www.example.com/blog/post"
        ]
    );

    // Staging still serves disallow-all.
    let mut staging = vars.to_vec();
    staging.push(("SITEMAP_ENV", "staging"));
    let app = spawn_app(&db.url, &staging).await;
    let text = app.get("/robots.txt").await.text().await.unwrap();
    assert!(
        text.contains("User-agent: *\nDisallow: /\n") && !text.contains("GPTBot"),
        "{text}"
    );
}

#[tokio::test]
async fn content_signal_is_derived_set_or_off() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    let policies = [
        (
            "search=allow,ai-training=disallow",
            None,
            Some("search=yes, ai-train=no"),
        ),
        (
            "ai-training=disallow,ai-search=disallow,ai-user=disallow",
            None,
            Some("ai-input=no, ai-train=no"),
        ),
        (
            "ai-search=allow,ai-training=disallow:/premium/",
            None,
            Some("ai-input=yes, ai-train=yes"),
        ),
        ("GPTBot=disallow", None, None),
        ("ai-training=disallow", Some("off"), None),
        (
            "ai-training=disallow",
            Some("search=yes, ai-input=yes, ai-train=no"),
            Some("search=yes, ai-input=yes, ai-train=no"),
        ),
    ];
    for (policy, signal, expected) in policies {
        let mut vars = vec![("ROBOTS_POLICY", policy)];
        if let Some(signal) = signal {
            vars.push(("ROBOTS_CONTENT_SIGNAL", signal));
        }
        let app = spawn_app(&db.url, &vars).await;
        let robots = app.get("/robots.txt").await.text().await.unwrap();
        match expected {
            Some(value) => assert!(
                robots.contains(&format!(
                    "User-agent: *\nContent-Signal: {value}\nAllow: /\n"
                )),
                "{policy}: {robots}"
            ),
            None => assert!(!robots.contains("Content-Signal"), "{policy}: {robots}"),
        }
    }
    // Without a policy or a signal the built-in template is served as before.
    let app = spawn_app(&db.url, &[]).await;
    let robots = app.get("/robots.txt").await.text().await.unwrap();
    assert!(!robots.contains("Content-Signal") && !robots.contains("GPTBot"));
}

#[tokio::test]
async fn the_sites_file_sets_a_policy_per_site() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    let sites = template_file(
        "[[site]]\nbase_url = \"https://a.example.com/\"\n[site.robots]\npolicy = \"ai-training=disallow\"\n\n\
         [[site]]\nbase_url = \"https://b.example.com/\"\n",
    );
    let vars = [
        ("SITEMAP_SITES_FILE", sites.path().to_str().unwrap()),
        ("ROBOTS_POLICY", "search=disallow:/search/"),
    ];
    let app = spawn_app(&db.url, &vars).await;
    let a = text_as(&app, "a.example.com", "/robots.txt").await;
    let b = text_as(&app, "b.example.com", "/robots.txt").await;
    assert!(!google_allows(&a, "GPTBot", "/x"), "{a}");
    assert!(google_allows(&a, "Googlebot", "/search/x"), "{a}");
    assert!(google_allows(&b, "GPTBot", "/x"), "{b}");
    assert!(!google_allows(&b, "Googlebot", "/search/x"), "{b}");
}

#[test]
fn bad_policies_and_signals_stop_the_start() {
    for (policy, named) in [
        ("ai-trainng=disallow", "ai-trainng"),
        ("GPTBott=disallow", "GPTBott"),
        ("ai-training", "ai-training"),
        ("ai-training=block", "ai-training=block"),
        ("GPTBot=disallow:", "GPTBot=disallow:"),
        ("GPTBot=disallow:premium/", "premium/"),
        (
            "ai-training=disallow,ai-training=allow",
            "ai-training=allow",
        ),
    ] {
        refused(&[("ROBOTS_POLICY", policy)], &["ROBOTS_POLICY", named]);
    }
    refused(
        &[("ROBOTS_CONTENT_SIGNAL", "maybe")],
        &["ROBOTS_CONTENT_SIGNAL", "maybe", "search=yes"],
    );
    let sites = template_file(
        "[[site]]\nbase_url = \"https://a.example.com/\"\n[site.robots]\npolicy = \"nobody=disallow\"\n",
    );
    refused(
        &[("SITEMAP_SITES_FILE", sites.path().to_str().unwrap())],
        &["SITEMAP_SITES_FILE", "nobody"],
    );
}

#[test]
fn extension_lines_and_misspellings_never_refuse_a_start() {
    let template = template_file(
        "User-agent: *\nContent-Signal: search=yes, ai-train=no\nDissallow: /x\nCrawl-delay: 5\n\
         Request-rate: 1/5\nUser-agent: Mozilla/5.0 (compatible; GPTBot/1.2)\nDisallow: /y\n",
    );
    let vars = [("ROBOTS_TEMPLATE", template.path().to_str().unwrap())];
    let (code, stdout, stderr) = sitemapd(&vars, &["robots", "test", "/x"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

async fn check_warns_of_what_crawlers_read_differently(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/ok")]).await;
    let template = template_file(
        "User-agent: *\nDissallow: /x\nUser-Agnet: b\nCrawl-delay: 5\nHost: e.com\n\
         Content-Signal: search=yes\nAllow: /\nUser-agent: Mozilla/5.0 (compatible; GPTBot/1.2)\nDisallow: /\n",
    );
    let (code, stdout) = check(
        &db,
        &[("ROBOTS_TEMPLATE", template.path().to_str().unwrap())],
    );
    assert_eq!(code, Some(0), "warnings are not failures: {stdout}");
    for expected in [
        "warning: robots template line 2: unknown directive \"Dissallow\", probably a misspelt Disallow",
        "warning: robots template line 3: unknown directive \"User-Agnet\", probably a misspelt User-agent",
        "warning: robots template line 4: Crawl-delay: Google ignores Crawl-delay",
        "warning: robots template line 5: Host: no major crawler reads Host",
        "warning: robots template line 8: User-agent \"Mozilla/5.0 (compatible; GPTBot/1.2)\" is not a product token",
        "e.g. \"User-agent: GPTBot\"",
    ] {
        assert!(stdout.contains(expected), "{expected} in\n{stdout}");
    }
    assert!(
        !stdout.contains("line 6"),
        "Content-Signal is fine: {stdout}"
    );
}

#[test]
fn enforce_prints_a_snippet_per_server() {
    let vars = [(
        "ROBOTS_POLICY",
        "ai-training=disallow,ai-search=disallow:/premium/",
    )];
    for server in ["nginx", "apache", "caddy"] {
        let (code, stdout, stderr) = sitemapd(&vars, &["robots", "enforce", server]);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.contains("gptbot") && stdout.contains("ccbot"),
            "{stdout}"
        );
        // Only crawlers disallowed on / are refused: OAI-SearchBot may fetch / (it may appear
        // in the snippet's allow-list, never among the refused).
        let refused = stdout
            .lines()
            .find(|l| l.starts_with("# except /robots.txt. Crawlers:"))
            .unwrap_or_else(|| panic!("the refused crawlers' line in {stdout}"));
        assert!(!refused.contains("OAI-SearchBot"), "{refused}");
        assert!(stdout.contains("robots"), "{stdout}");
    }
    let (code, _, stderr) = sitemapd(&vars, &["robots", "enforce", "iis"]);
    assert_eq!(code, 2, "{stderr}");
}

/// OpenAI's ad checker names openai.com only in its URL: with AI training closed, the tester and
/// the enforcement snippet take it for OAI-AdsBot (allowed), never for OpenAI's training crawler;
/// Diffbot-User is not Diffbot.
#[test]
fn a_user_agent_is_the_crawler_its_products_name() {
    let vars = [("ROBOTS_POLICY", "ai-training=disallow")];
    for (user_agent, named, allowed) in [
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-AdsBot/1.0; \
             +https://openai.com/adsbot",
            "for OAI-AdsBot",
            true,
        ),
        (
            "Mozilla/5.0 (compatible; OAI-AdsBot/1.0; +https://openai.com/adsbot)",
            "for OAI-AdsBot",
            true,
        ),
        ("Diffbot-User/1.0", "for Diffbot-User", true),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; \
             +https://openai.com/gptbot",
            "for GPTBot",
            false,
        ),
    ] {
        let (code, stdout, stderr) = sitemapd(
            &vars,
            &["robots", "test", "/page", "--user-agent", user_agent],
        );
        assert_eq!(
            code,
            if allowed { 0 } else { 1 },
            "{user_agent}: {stdout}{stderr}"
        );
        assert!(stdout.contains(named), "{user_agent}: {stdout}");
    }
    let (code, stdout, stderr) = sitemapd(&vars, &["robots", "enforce", "nginx"]);
    assert_eq!(code, 0, "{stderr}");
    let refused = stdout
        .lines()
        .find(|l| l.starts_with("# except /robots.txt. Crawlers:"))
        .unwrap_or_else(|| panic!("the refused crawlers' line in {stdout}"));
    assert!(
        refused.contains(" GPTBot,") && refused.contains(" OpenAI,"),
        "{refused}"
    );
    assert!(
        !refused.contains("OAI-AdsBot") && !refused.contains("Diffbot-User"),
        "{refused}"
    );
}
