use super::*;
use crate::crawlers::registry::CrawlerId;

/// A small registry for exact outputs.
const REGISTRY: &str = r#"
[[crawler]]
name = "Googlebot"
tokens = ["Googlebot"]
purpose = "search"

[[crawler]]
name = "Bingbot"
tokens = ["bingbot"]
purpose = "search"

[[crawler]]
name = "GPTBot"
tokens = ["GPTBot"]
purpose = "ai-training"

[[crawler]]
name = "CCBot"
tokens = ["CCBot"]
purpose = "ai-training"

[[crawler]]
name = "Google-Extended"
tokens = ["Google-Extended"]
user_agent = []
purpose = "ai-training"

[[crawler]]
name = "OAI-SearchBot"
tokens = ["OAI-SearchBot"]
purpose = "ai-search"

[[crawler]]
name = "ChatGPT-User"
tokens = ["ChatGPT-User"]
purpose = "ai-user"
"#;

fn small() -> Registry {
    Registry::parse(REGISTRY, "test").unwrap()
}

fn compiled(template: &str, policy: &str, registry: &Registry) -> String {
    let policy = Policy::parse(policy, "ROBOTS_POLICY").unwrap();
    let parsed = RobotsTxt::parse(template).unwrap();
    let (text, _) = compile(
        template,
        &parsed,
        Some(&policy),
        &ContentSignal::Derived,
        registry,
    )
    .unwrap();
    RobotsTxt::parse(&text).unwrap();
    text
}

#[test]
fn generated_groups_keep_the_templates_rules_and_share_equal_lines() {
    let template = "# Our site\nUser-agent: *\nDisallow: /admin/\n\nUser-agent: GPTBot\nDisallow: /gpt/\n\nSitemap: https://e.com/s.xml\n";
    let text = compiled(
        template,
        "ai-training=disallow:/premium/, search=allow, ai-search=disallow",
        &small(),
    );
    assert_eq!(
        text,
        "# Our site\nUser-agent: *\nContent-Signal: search=yes, ai-input=no, ai-train=yes\n\
         Disallow: /admin/\n\n\
         # Crawler policy \"ai-training=disallow:/premium/, search=allow, ai-search=disallow\": \
         each group below keeps what the template disallows for its agents.\n\
         User-agent: Googlebot\nUser-agent: bingbot\nDisallow: /admin/\n\n\
         User-agent: GPTBot\nDisallow: /premium/\nDisallow: /gpt/\n\n\
         User-agent: CCBot\nUser-agent: Google-Extended\nDisallow: /premium/\nDisallow: /admin/\n\n\
         User-agent: OAI-SearchBot\nDisallow: /\n\n\
         Sitemap: https://e.com/s.xml\n"
    );
}

#[test]
fn a_template_group_for_a_ruled_token_is_merged_not_repeated() {
    let template = "User-agent: GPTBot\nUser-agent: Other\nCrawl-delay: 5\nDisallow: /x/\n\n\
        User-agent: CCBot\nDisallow: /c/\n\nUser-agent: *\nDisallow: /admin/\n";
    let text = compiled(
        template,
        "GPTBot=disallow:/premium/,CCBot=disallow",
        &small(),
    );
    assert_eq!(
        text,
        "User-agent: Other\nCrawl-delay: 5\nDisallow: /x/\n\n\
         User-agent: *\nDisallow: /admin/\n\n\
         # Crawler policy \"GPTBot=disallow:/premium/,CCBot=disallow\": each group below \
         keeps what the template disallows for its agents.\n\
         User-agent: GPTBot\nCrawl-delay: 5\nDisallow: /premium/\nDisallow: /x/\n\n\
         User-agent: CCBot\nDisallow: /\n"
    );
    let robots = RobotsTxt::parse(&text).unwrap();
    assert!(!robots.is_allowed("Other", "/x/1"));
    assert!(robots.is_allowed("Other", "/premium/1"));
}

#[test]
fn allows_inside_a_policy_path_go_and_longer_overlapping_ones_are_outweighed() {
    let template =
        "User-agent: *\nDisallow: /\nAllow: /premium/free/\nAllow: /*.css$\nAllow: /p/\n";
    let text = compiled(template, "GPTBot=disallow:/premium/ /p/", &small());
    assert!(
        text.ends_with(
            "User-agent: GPTBot\nDisallow: /premium/\nDisallow: /p/*****\nAllow: /*.css$\n\
             Disallow: /\n"
        ),
        "{text}"
    );
    let robots = RobotsTxt::parse(&text).unwrap();
    for path in ["/premium/free/a", "/p/a.css", "/p/x", "/premium/a.css"] {
        assert!(!robots.is_allowed("GPTBot", path), "{path}");
    }
    assert!(robots.is_allowed("GPTBot", "/a.css"));
}

#[test]
fn a_rule_less_last_group_is_closed_before_the_generated_ones() {
    let template = "User-agent: *\nDisallow: /a/\n\nUser-agent: quxbot\n";
    let text = compiled(template, "GPTBot=disallow", &small());
    assert!(
        text.starts_with("User-agent: *\nDisallow: /a/\n\nUser-agent: quxbot\nDisallow:\n\n#"),
        "{text}"
    );
    let robots = RobotsTxt::parse(&text).unwrap();
    assert!(robots.is_allowed("quxbot", "/a/x"));
    assert!(!robots.is_allowed("GPTBot", "/x"));
}

#[test]
fn content_signal_goes_in_the_star_group_unless_it_has_one() {
    let registry = small();
    let run = |template: &str, signal: ContentSignal| {
        let policy = Policy::parse("ai-training=disallow", "ROBOTS_POLICY").unwrap();
        let parsed = RobotsTxt::parse(template).unwrap();
        compile(template, &parsed, Some(&policy), &signal, &registry).unwrap()
    };
    let (text, warnings) = run("User-agent: *\nAllow: /\n", ContentSignal::Derived);
    assert!(
        text.starts_with("User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n"),
        "{text}"
    );
    assert!(warnings.is_empty());
    let (text, _) = run("User-agent: *\nAllow: /\n", ContentSignal::Off);
    assert!(!text.contains("Content-Signal"), "{text}");
    let (text, _) = run(
        "User-agent: *\nAllow: /\n",
        ContentSignal::Value("search=yes, ai-train=no, ai-input=yes".into()),
    );
    assert!(text.contains("\nContent-Signal: search=yes, ai-train=no, ai-input=yes\n"));
    let own = "User-agent: *\nContent-Signal: search=yes\nAllow: /\n";
    let (text, warnings) = run(own, ContentSignal::Derived);
    assert_eq!(text.matches("Content-Signal").count(), 1, "{text}");
    assert!(text.starts_with(own));
    assert!(warnings.is_empty());
    let (_, warnings) = run(own, ContentSignal::Off);
    assert_eq!(warnings.len(), 1);
    // No `*` group: one is added for the line.
    let (text, _) = run("User-agent: a\nDisallow: /a\n", ContentSignal::Derived);
    assert!(
        text.ends_with("User-agent: *\nContent-Signal: ai-train=no\nAllow: /\n"),
        "{text}"
    );
    // Our matcher ignores the line: it is not a rule.
    let robots = RobotsTxt::parse(&text).unwrap();
    assert!(robots.is_allowed("x", "/search=yes"));
}

#[test]
fn nothing_to_add_keeps_the_template_byte_for_byte() {
    let template = "User-agent: *\r\nDisallow: /a\r\n";
    let parsed = RobotsTxt::parse(template).unwrap();
    let policy = Policy::parse("seo=disallow", "ROBOTS_POLICY").unwrap();
    let (text, _) = compile(
        template,
        &parsed,
        Some(&policy),
        &ContentSignal::Derived,
        &small(),
    )
    .unwrap();
    assert_eq!(text, template);
    let (text, _) = compile(template, &parsed, None, &ContentSignal::Derived, &small()).unwrap();
    assert_eq!(text, template);
}

#[test]
fn unknown_crawler_names_are_refused_with_the_rule() {
    let policy = Policy::parse("ai-training=disallow, GPTbott=disallow", "ROBOTS_POLICY").unwrap();
    let parsed = RobotsTxt::parse("").unwrap();
    let error = compile(
        "",
        &parsed,
        Some(&policy),
        &ContentSignal::Derived,
        &small(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with(
            "ROBOTS_POLICY=\"ai-training=disallow, GPTbott=disallow\": rule \"GPTbott=disallow\": \
             \"GPTbott\" is neither a purpose nor a registry crawler's name"
        ),
        "{error}"
    );
}

/// Templates of the proof: a `*` group, and groups of their own for a search engine and an
/// AI crawler (which the policies below also rule).
const TEMPLATES: [&str; 2] = [
    "User-agent: *\nAllow: /\nDisallow: /admin/\nDisallow: /private/\nAllow: /private/open/\n\
     Allow: /*.css$\n\nUser-agent: Googlebot\nDisallow: /nogoogle/\nDisallow: /admin/\n\n\
     User-agent: GPTBot\nDisallow: /gpt-only/\nAllow: /premium/free/\nDisallow: /private/\n\n\
     Sitemap: https://example.com/sitemap_index.xml\n",
    "# the built-in shape\nUser-agent: *\nAllow: /\n\nUser-agent: bingbot\nCrawl-delay: 2\n\
     Disallow: /search\n",
];

const POLICIES: [&str; 5] = [
    // Search engines yes, AI training no.
    "search=allow,ai-training=disallow",
    // No AI at all.
    "ai-training=disallow,ai-search=disallow,ai-user=disallow",
    // AI answers yes, training no.
    "ai-search=allow,ai-user=allow,ai-training=disallow",
    // A crawler's own path rule beside its purpose's.
    "ai-training=disallow,GPTBot=disallow:/premium/ /private/,Googlebot=disallow:/premium/",
    // Short paths that longer template Allows overlap.
    "search=disallow:/p/ /private/op,seo=disallow:/*.css$",
];

const PATHS: [&str; 12] = [
    "/",
    "/admin/",
    "/admin/x",
    "/premium/x",
    "/premium/free/a",
    "/blog/post",
    "/private/a",
    "/private/open/b",
    "/nogoogle/x",
    "/gpt-only/x",
    "/p/style.css",
    "/search?q=1",
];

/// For every registry crawler and each of its tokens: the compiled file's verdict, from our
/// matcher and from Google's parser, is "allowed by the template for that agent AND allowed
/// by the policy" (the policy of the crawler the registry says owns the token).
#[test]
fn compiled_verdicts_are_template_and_policy_for_every_registry_crawler() {
    let registry = Registry::builtin();
    for template in TEMPLATES {
        let original = RobotsTxt::parse(template).unwrap();
        for written in POLICIES {
            let policy = Policy::parse(written, "ROBOTS_POLICY").unwrap();
            let (text, _) = compile(
                template,
                &original,
                Some(&policy),
                &ContentSignal::Derived,
                &registry,
            )
            .unwrap();
            let ours = RobotsTxt::parse(&text).unwrap();
            assert!(text.len() <= super::super::MAX_BYTES);
            assert_one_group_per_token(&text);
            let again = compile(
                template,
                &original,
                Some(&policy),
                &ContentSignal::Derived,
                &registry,
            )
            .unwrap()
            .0;
            assert_eq!(text, again, "deterministic");
            let mut tokens: Vec<(String, CrawlerId)> = Vec::new();
            for id in registry.ids() {
                for token in &registry.get(id).tokens {
                    let Some(token) = writable_token(token) else {
                        continue;
                    };
                    if !tokens.iter().any(|(t, _)| t.eq_ignore_ascii_case(token)) {
                        let owner = registry.by_token(token).unwrap_or(id);
                        tokens.push((token.to_string(), owner));
                    }
                }
            }
            tokens.push(("SomeUnknownBot".into(), CrawlerId(u16::MAX)));
            for (token, owner) in &tokens {
                let rule = (owner.0 != u16::MAX)
                    .then(|| policy.rule_for(&registry, *owner))
                    .flatten();
                for path in PATHS {
                    let expected = original.is_allowed(token, path)
                        && rule.is_none_or(|access| access.allows(path));
                    let url = format!("https://example.com{path}");
                    let google = robotstxt::DefaultMatcher::default()
                        .one_agent_allowed_by_robots(&text, token, &url);
                    assert_eq!(
                        ours.is_allowed(token, path),
                        expected,
                        "ours: {token} {path} with {written:?} in\n{text}"
                    );
                    assert_eq!(
                        google, expected,
                        "Google: {token} {path} with {written:?} in\n{text}"
                    );
                }
            }
        }
    }
}

fn writable_token(token: &str) -> Option<&str> {
    let end = token
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(token.len());
    (end > 0).then(|| &token[..end])
}

fn assert_one_group_per_token(text: &str) {
    let robots = RobotsTxt::parse(text).unwrap();
    let mut seen: Vec<&str> = Vec::new();
    for group in &robots.groups {
        for agent in &group.agents {
            assert!(!seen.contains(&agent.as_str()), "{agent} twice in\n{text}");
            seen.push(agent);
        }
    }
}
