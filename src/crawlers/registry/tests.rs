//! The registry's own tests: loading, checking entries, extending, resolving names and tokens.

use super::*;

fn entry_error(text: &str) -> String {
    let err = Registry::parse_extension(Registry::builtin(), text, "extra.toml")
        .expect_err("the file is refused");
    err.to_string()
}

#[test]
fn the_builtin_registry_loads_and_names_are_unique() {
    let registry = Registry::builtin();
    assert!(registry.len() > 200, "{} crawlers", registry.len());
    let mut names: Vec<String> = registry
        .crawlers()
        .iter()
        .map(|c| c.name.to_ascii_lowercase())
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), registry.len());
    for purpose in Purpose::ALL {
        assert!(
            registry.by_purpose(purpose).next().is_some(),
            "no crawler for {purpose}"
        );
    }
}

#[test]
fn no_two_builtin_crawlers_share_a_token_or_a_pattern() {
    let registry = Registry::builtin();
    let mut tokens = HashMap::new();
    let mut patterns = HashMap::new();
    for crawler in registry.crawlers() {
        for token in &crawler.tokens {
            let before = tokens.insert(token.to_ascii_lowercase(), &crawler.name);
            assert_eq!(before, None, "token {token} of {}", crawler.name);
        }
        for pattern in &crawler.user_agent {
            let before = patterns.insert(pattern.to_ascii_lowercase(), &crawler.name);
            assert_eq!(before, None, "pattern {pattern} of {}", crawler.name);
        }
    }
}

#[test]
fn the_operators_crawlers_have_the_documented_purpose_and_verification() {
    let registry = Registry::builtin();
    let info = |name: &str| registry.get(registry.by_name(name).expect(name)).clone();
    for (name, purpose) in [
        ("Googlebot", Purpose::Search),
        ("bingbot", Purpose::Search),
        ("GPTBot", Purpose::AiTraining),
        ("OAI-SearchBot", Purpose::AiSearch),
        ("ChatGPT-User", Purpose::AiUser),
        ("ClaudeBot", Purpose::AiTraining),
        ("Claude-SearchBot", Purpose::AiSearch),
        ("Claude-User", Purpose::AiUser),
        ("PerplexityBot", Purpose::AiSearch),
        ("Perplexity-User", Purpose::AiUser),
        ("CCBot", Purpose::AiTraining),
        ("Google-Extended", Purpose::AiTraining),
        ("Applebot-Extended", Purpose::AiTraining),
        ("AhrefsBot", Purpose::Seo),
        ("ia_archiver", Purpose::Archive),
        ("facebookexternalhit", Purpose::Preview),
    ] {
        assert_eq!(info(name).purpose, purpose, "{name}");
    }
    assert!(!info("Google-Extended").fetches());
    assert!(!info("Applebot-Extended").fetches());
    assert!(info("Googlebot")
        .verify_dns
        .contains(&"googlebot.com".to_string()));
    assert_eq!(info("bingbot").verify_dns, ["search.msn.com"]);
    assert_eq!(
        info("GPTBot").verify_ranges,
        ["https://openai.com/gptbot.json"]
    );
    assert!(info("GPTBot").is_verifiable());
    for name in ["ClaudeBot", "Claude-SearchBot", "Claude-User"] {
        assert_eq!(
            info(name).verify_ranges,
            ["https://claude.com/crawling/bots.json"],
            "{name}"
        );
    }
    assert_eq!(
        info("OAI-AdsBot").verify_ranges,
        ["https://openai.com/adsbot.json"]
    );
    assert_eq!(
        info("ChatGPT Agent").verify_ranges,
        ["https://openai.com/chatgpt-agents.json"]
    );
    assert_eq!(
        info("CCBot").verify_ranges,
        ["https://index.commoncrawl.org/ccbot.json"]
    );
    assert_eq!(info("CCBot").verify_dns, ["crawl.commoncrawl.org"]);
    for (name, purpose) in [
        ("AgentDataBot", Purpose::AiTraining),
        ("BixelBot", Purpose::AiTraining),
        ("CloudflareBrowserRenderingCrawler", Purpose::AiTraining),
        ("DoubaoBot", Purpose::AiTraining),
        ("ERNIEBot", Purpose::AiTraining),
        ("KeenableBot", Purpose::AiSearch),
        ("Kimi-Agent", Purpose::AiUser),
        ("qodercli", Purpose::AiUser),
        ("QwenBot", Purpose::AiTraining),
    ] {
        assert_eq!(info(name).purpose, purpose, "{name}");
        assert!(!info(name).docs.is_empty(), "{name}");
    }
    assert!(info("Googlebot")
        .docs
        .iter()
        .all(|d| d.starts_with("https://")));
}

#[test]
fn tokens_names_and_user_agents_resolve_to_crawlers() {
    let registry = Registry::builtin();
    let name = |id: Option<CrawlerId>| id.map(|id| registry.get(id).name.as_str());
    assert_eq!(name(registry.by_token("gptbot")), Some("GPTBot"));
    assert_eq!(name(registry.by_token("msnbot")), Some("bingbot"));
    assert_eq!(name(registry.by_token("iaskspider/2.0")), Some("iAskBot"));
    assert_eq!(name(registry.by_token("panscient.com")), Some("Panscient"));
    assert_eq!(
        name(registry.by_token("Kangaroo Bot")),
        Some("Kangaroo Bot")
    );
    assert_eq!(name(registry.by_name("Kangaroo Bot")), Some("Kangaroo Bot"));
    assert_eq!(name(registry.by_name("CHATGPT-USER")), Some("ChatGPT-User"));
    assert_eq!(registry.by_name("nobody"), None);
    assert_eq!(registry.robots_token("Googlebot-News"), "Googlebot-News");
    assert_eq!(
        registry.robots_token("Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)"),
        "GPTBot"
    );
    assert_eq!(
        registry.robots_token("ExampleBot/3.1 (+https://x)"),
        "ExampleBot"
    );
    // A whole User-Agent is named as a request would be: by its products, not by a URL's words.
    let adsbot = "Mozilla/5.0 (compatible; OAI-AdsBot/1.0; +https://openai.com/adsbot)";
    assert_eq!(name(registry.resolve(adsbot)), Some("OAI-AdsBot"));
    assert_eq!(registry.robots_token(adsbot), "OAI-AdsBot");
    assert_eq!(
        name(registry.resolve("Diffbot-User/1.0")),
        Some("Diffbot-User")
    );
    assert_eq!(name(registry.resolve("iaskspider/2.0")), Some("iAskBot"));
    assert_eq!(name(registry.resolve("Yandex")), Some("YandexBot"));
    assert_eq!(
        registry.resolve("Mozilla/5.0 (compatible; Other/1.0; +https://openai.com/)"),
        None
    );
}

#[test]
fn every_builtin_entry_cites_its_docs_and_range_lists_are_https() {
    // SPEC lets a CRAWLERS_FILE name http range lists; what ships is held to https.
    for crawler in Registry::builtin().crawlers() {
        assert!(!crawler.docs.is_empty(), "{} cites no docs", crawler.name);
        for url in crawler.docs.iter().chain(&crawler.verify_ranges) {
            assert!(url.starts_with("https://"), "{}: {url}", crawler.name);
        }
    }
}

#[test]
fn fetchers_their_operators_say_ignore_robots_txt_are_marked_so() {
    let registry = Registry::builtin();
    let info = |name: &str| registry.get(registry.by_name(name).expect(name)).clone();
    for name in [
        "ChatGPT-User",
        "Perplexity-User",
        "Meta-ExternalFetcher",
        "Kimi-User",
        "FeedFetcher-Google",
        "Google-Read-Aloud",
        "Google-NotebookLM",
        "Google-Pinpoint",
        "Google-Agent",
    ] {
        assert!(!info(name).obeys_robots, "{name}");
    }
    for name in [
        "Googlebot",
        "GPTBot",
        "OAI-SearchBot",
        "OAI-AdsBot",
        "ClaudeBot",
        "Claude-User",
    ] {
        assert!(info(name).obeys_robots, "{name}");
    }
    assert_eq!(
        info("ChatGPT Agent").signature_agent,
        ["https://chatgpt.com"]
    );
    assert_eq!(
        info("Google-Agent").signature_agent,
        ["https://agent.bot.goog"]
    );
}

#[test]
fn a_signer_may_be_an_origin_or_a_directory_url() {
    let text = "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"ai-user\"\n\
                signature_agent = [\"https://foo.example/\", \"https://keys.foo.example/bots/jwks.json\"]\n";
    let registry = Registry::parse_extension(Registry::builtin(), text, "extra.toml").unwrap();
    let foo = registry.get(registry.by_name("Foo").unwrap());
    assert_eq!(
        foo.signature_agent,
        [
            "https://foo.example",
            "https://keys.foo.example/bots/jwks.json"
        ]
    );
}

#[test]
fn google_crawlers_read_the_range_list_of_their_kind() {
    let registry = Registry::builtin();
    let ranges = |name: &str| {
        registry
            .get(registry.by_name(name).expect(name))
            .verify_ranges
            .clone()
    };
    let list =
        |file: &str| format!("https://developers.google.com/static/crawling/ipranges/{file}.json");
    assert_eq!(ranges("Googlebot"), [list("googlebot")]);
    assert_eq!(ranges("GoogleOther"), [list("common-crawlers")]);
    assert_eq!(ranges("AdsBot-Google"), [list("special-crawlers")]);
    assert_eq!(
        ranges("Google-Read-Aloud"),
        [
            list("user-triggered-fetchers"),
            list("user-triggered-fetchers-google")
        ]
    );
    assert_eq!(ranges("Google-Agent"), [list("user-triggered-agents")]);
    for crawler in registry.crawlers() {
        for url in &crawler.verify_ranges {
            assert!(
                !url.contains("/search/apis/ipranges/"),
                "{}: {url}",
                crawler.name
            );
        }
    }
}

#[test]
fn an_extension_replaces_by_name_and_adds_new_crawlers() {
    let builtin = Registry::builtin();
    let count = builtin.len();
    let gptbot = builtin.by_name("GPTBot").unwrap();
    let registry = Registry::parse_extension(
        builtin,
        r#"
        [[crawler]]
        name = "gptbot"
        tokens = ["GPTBot"]
        user_agent = ["GPTBot", "GPTBot-Next"]
        operator = "OpenAI (local note)"
        purpose = "ai-search"

        [[crawler]]
        name = "ExampleBot"
        tokens = ["ExampleBot"]
        operator = "Example"
        purpose = "seo"
        verify_dns = [".Example.net"]
        docs = ["https://example.net/bot"]
        "#,
        "extra.toml",
    )
    .unwrap();
    assert_eq!(registry.len(), count + 1);
    assert_eq!(
        registry.by_name("GPTBot"),
        Some(gptbot),
        "replaced in place"
    );
    let replaced = registry.get(gptbot);
    assert_eq!(replaced.operator, "OpenAI (local note)");
    assert_eq!(replaced.purpose, Purpose::AiSearch);
    assert_eq!(registry.classify("GPTBot-Next/0.1"), Some(gptbot));
    let example = registry.by_name("examplebot").unwrap();
    assert_eq!(example.index(), count);
    let info = registry.get(example);
    assert_eq!(
        info.user_agent,
        ["ExampleBot"],
        "user_agent defaults to the tokens"
    );
    assert_eq!(info.verify_dns, ["example.net"]);
    assert_eq!(registry.classify("ExampleBot/1.0"), Some(example));
    assert_eq!(registry.by_purpose(Purpose::Seo).last(), Some(example));
}

#[test]
fn bad_entries_are_refused_naming_the_entry_and_the_problem() {
    let cases = [
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"ads\"\n",
            ["\"Foo\" (#1)", "unknown purpose \"ads\"", "ai-training"],
        ),
        (
            "[[crawler]]\ntokens = [\"Foo\"]\npurpose = \"seo\"\n",
            ["crawler #1", "missing `name`", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"A\"\ntokens = [\"A\"]\npurpose = \"seo\"\n\
             [[crawler]]\nname = \"Foo\"\npurpose = \"seo\"\n",
            ["\"Foo\" (#2)", "missing `tokens`", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\n\
             [[crawler]]\nname = \"foo\"\ntokens = [\"Bar\"]\npurpose = \"seo\"\n",
            ["\"foo\" (#2)", "already used by crawler #1", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\ncolour = 1\n",
            ["\"Foo\" (#1)", "colour", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = \"Foo\"\npurpose = \"seo\"\n",
            ["\"Foo\" (#1)", "sequence", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo Bot\"]\npurpose = \"seo\"\n",
            ["\"Foo\" (#1)", "not a robots.txt product token", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\nuser_agent = [\"-Foo\"]\npurpose = \"seo\"\n",
            ["\"Foo\" (#1)", "letter or digit", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\nverify_ranges = [\"ftp://x/y.json\"]\n",
            ["\"Foo\" (#1)", "http or https", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = []\nuser_agent = []\npurpose = \"seo\"\n",
            ["\"Foo\" (#1)", "neither", "extra.toml"],
        ),
        (
            "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\nsignature_agent = [\"http://localhost:8080\"]\n",
            ["\"Foo\" (#1)", "signature_agent \"http://localhost", "literal loopback"],
        ),
    ];
    for (text, wanted) in cases {
        let message = entry_error(text);
        for part in wanted {
            assert!(message.contains(part), "{part:?} not in {message:?}");
        }
    }
}

#[test]
fn bad_toml_is_refused_with_its_line() {
    let message =
        entry_error("[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"\n\n\npurpose = \"seo\"\n");
    assert!(message.starts_with("extra.toml: line 6"), "{message}");
    assert!(!message.contains('\n'), "{message}");
    let message = entry_error("[[crawler]]\nname = \"Foo\ntokens = []\n");
    assert!(message.starts_with("extra.toml: line 2"), "{message}");
    let message = entry_error("\n\n[robots]\nx = 1\n");
    assert!(message.starts_with("extra.toml: line 3"), "{message}");
}

#[test]
fn a_missing_file_is_a_read_error_naming_it() {
    let err = Registry::with_file(Path::new("/nonexistent/crawlers.toml")).unwrap_err();
    assert!(matches!(err, RegistryError::Read { .. }));
    assert!(err.to_string().contains("/nonexistent/crawlers.toml"));
}

#[test]
fn purposes_round_trip_through_their_names() {
    for purpose in Purpose::ALL {
        assert_eq!(Purpose::parse(purpose.as_str()), Some(purpose));
        let json = serde_json::to_string(&purpose).unwrap();
        assert_eq!(json, format!("\"{purpose}\""));
    }
    assert_eq!(Purpose::parse("AI-training"), None);
}

#[test]
fn the_builtin_registry_is_dated_and_a_file_by_its_modification_time() {
    let builtin = Registry::builtin();
    let date = &builtin.dated().date;
    assert!(
        chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok(),
        "{date}"
    );
    assert_eq!(builtin.dated().source, "built in");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "").unwrap();
    let extended = Registry::with_file(file.path()).unwrap();
    let modified = std::fs::metadata(file.path()).unwrap().modified().unwrap();
    let expected = chrono::DateTime::<chrono::Utc>::from(modified)
        .format("%Y-%m-%d %H:%M UTC")
        .to_string();
    assert_eq!(extended.dated().date, expected);
    assert_eq!(extended.dated().source, file.path().display().to_string());
}
