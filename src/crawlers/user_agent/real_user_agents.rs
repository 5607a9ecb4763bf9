//! User-Agent strings as the operators document them, each with the built-in registry crawler it
//! must name (and, beside it, strings that must name none), checked against the classifier and
//! against the regular expression the web servers in front are given.

use crate::crawlers::registry::Registry;
use crate::crawlers::user_agent::{product_regex, product_regexes};

/// (User-Agent, the crawler it names). Each group cites the page the strings are copied from.
pub(super) const NAMED: &[(&str, &str)] = &[
    // https://developers.google.com/crawling/docs/crawlers-fetchers/google-common-crawlers
    ("Googlebot/2.1 (+http://www.google.com/bot.html)", "Googlebot"),
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
    (
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like \
         Gecko) Chrome/W.X.Y.Z Mobile Safari/537.36 (compatible; Googlebot/2.1; \
         +http://www.google.com/bot.html)",
        "Googlebot",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; \
         +http://www.google.com/bot.html) Chrome/W.X.Y.Z Safari/537.36",
        "Googlebot",
    ),
    ("Googlebot-Image/1.0", "Googlebot-Image"),
    ("Googlebot-Video/1.0", "Googlebot-Video"),
    (
        "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like \
         Gecko) Chrome/W.X.Y.Z Safari/537.36",
        "Storebot-Google",
    ),
    ("Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)", "Google-InspectionTool"),
    ("GoogleOther", "GoogleOther"),
    ("GoogleOther-Image/1.0", "GoogleOther-Image"),
    // https://developers.google.com/crawling/docs/crawlers-fetchers/google-special-case-crawlers
    ("AdsBot-Google (+http://www.google.com/adsbot.html)", "AdsBot-Google"),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 14_7_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like \
         Gecko) Version/14.1.2 Mobile/15E148 Safari/604.1 (compatible; AdsBot-Google-Mobile; \
         +http://www.google.com/mobile/adsbot.html)",
        "AdsBot-Google-Mobile",
    ),
    ("Mediapartners-Google", "Mediapartners-Google"),
    (
        "APIs-Google (+https://developers.google.com/webmasters/APIs-Google.html)",
        "APIs-Google",
    ),
    // https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers
    ("Mozilla/5.0 (compatible; Google-CWS)", "Google-CWS"),
    ("FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)", "FeedFetcher-Google"),
    (
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/138.0.0.0 Mobile Safari/537.36 (compatible; Google-GeminiNotebook; \
         +https://developers.google.com/crawling/docs/crawlers-fetchers/google-gemininotebook)",
        "Google-GeminiNotebook",
    ),
    ("Google-NotebookLM", "Google-NotebookLM"),
    ("Google-Pinpoint", "Google-Pinpoint"),
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/W.X.Y.Z Safari/537.36 (compatible; Google-Read-Aloud; \
         +https://support.google.com/webmasters/answer/1061943)",
        "Google-Read-Aloud",
    ),
    ("Mozilla/5.0 (compatible; Google-Site-Verification/1.0)", "Google-Site-Verification"),
    // https://www.bing.com/webmasters/help/which-crawlers-does-bing-use-8c184ec0
    ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "bingbot"),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; \
         +http://www.bing.com/bingbot.htm) Chrome/W.X.Y.Z Safari/537.36",
        "bingbot",
    ),
    ("Mozilla/5.0 (compatible; adidxbot/2.0; +http://www.bing.com/bingbot.htm)", "AdIdxBot"),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MicrosoftPreview/2.0; \
         +https://aka.ms/MicrosoftPreview) Chrome/W.X.Y.Z Safari/537.36",
        "MicrosoftPreview",
    ),
    // https://support.apple.com/en-us/119829
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) \
         Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
        "Applebot",
    ),
    // https://yandex.com/support/webmaster/robot-workings/user-agent.html
    ("Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", "YandexBot"),
    // https://www.baidu.com/search/spider.html
    (
        "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
        "Baiduspider",
    ),
    // https://duckduckgo.com/duckduckgo-help-pages/results/duckduckbot
    ("DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", "DuckDuckBot"),
    ("DuckDuckBot-Https/1.1; (+https://duckduckgo.com/duckduckbot)", "DuckDuckBot"),
    // https://duckduckgo.com/duckduckgo-help-pages/results/duckassistbot
    ("DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)", "DuckAssistBot"),
    // https://help.yahoo.com/kb/SLN22600.html
    (
        "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)",
        "Slurp",
    ),
    // https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/
    (
        "Mozilla/5.0 (compatible; SeznamBot/4.0; \
         +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)",
        "SeznamBot",
    ),
    // https://webmaster.petalsearch.com/site/petalbot
    (
        "Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile \
         Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
        "PetalBot",
    ),
    // https://help.coccoc.com/en/search-engine/coc-coc-robots
    (
        "Mozilla/5.0 (compatible; coccocbot-web/1.0; +http://help.coccoc.com/searchengine)",
        "coccocbot",
    ),
    // https://www.sogou.com/docs/help/webmasters.htm#07
    (
        "Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)",
        "Sogou web spider",
    ),
    // https://developers.openai.com/api/docs/bots
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; \
         +https://openai.com/gptbot",
        "GPTBot",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; \
         +https://openai.com/gptbot)",
        "GPTBot",
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/131.0.0.0 Safari/537.36; compatible; OAI-SearchBot/1.3; \
         +https://openai.com/searchbot",
        "OAI-SearchBot",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; \
         +https://openai.com/bot",
        "ChatGPT-User",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-AdsBot/1.0; \
         +https://openai.com/adsbot",
        "OAI-AdsBot",
    ),
    (
        "Mozilla/5.0 (compatible; OAI-AdsBot/1.0; +https://openai.com/adsbot)",
        "OAI-AdsBot",
    ),
    // https://support.anthropic.com/en/articles/8896518-does-anthropic-crawl-data-from-the-web-and-how-can-site-owners-block-the-crawler
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; \
         +claudebot@anthropic.com)",
        "ClaudeBot",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; \
         +Claude-User@anthropic.com)",
        "Claude-User",
    ),
    // https://docs.perplexity.ai/guides/bots
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; \
         +https://perplexity.ai/perplexitybot)",
        "PerplexityBot",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; \
         +https://perplexity.ai/perplexity-user)",
        "Perplexity-User",
    ),
    // https://docs.mistral.ai/robots
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; \
         +https://docs.mistral.ai/robots)",
        "MistralAI-User",
    ),
    // https://commoncrawl.org/ccbot
    ("CCBot/2.0 (https://commoncrawl.org/faq/)", "CCBot"),
    // https://commoncrawl.org/faq (the older version's string)
    ("CCBot/1.0 (+https://commoncrawl.org/bot.html)", "CCBot"),
    // KeenableBot: as sites' logs quote it (no Keenable page was reached).
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; KeenableBot/1.0; \
         +https://keenable.ai/)",
        "KeenableBot",
    ),
    // https://developers.facebook.com/docs/sharing/webmasters/web-crawlers/
    (
        "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
        "Meta-ExternalAgent",
    ),
    (
        "meta-externalfetcher/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
        "Meta-ExternalFetcher",
    ),
    (
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        "facebookexternalhit",
    ),
    // https://developer.amazon.com/amazonbot
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; \
         +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36",
        "Amazonbot",
    ),
    // The ai.robots.txt list (https://github.com/ai-robots-txt/ai.robots.txt): ByteDance
    // publishes no page of its own.
    (
        "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile \
         Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
        "Bytespider",
    ),
    // https://archive.org/details/archive.org_bot
    (
        "Mozilla/5.0 (compatible; archive.org_bot +http://archive.org/details/archive.org_bot)",
        "archive.org_bot",
    ),
    // https://ahrefs.com/robot
    ("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "AhrefsBot"),
    // https://www.semrush.com/bot/
    (
        "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)",
        "SemrushBot",
    ),
    // https://mj12bot.com/
    ("Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", "MJ12bot"),
    // https://moz.com/help/moz-procedures/crawlers/dotbot
    (
        "Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)",
        "DotBot",
    ),
    // https://www.screamingfrog.co.uk/seo-spider/user-guide/configuration/#user-agent
    ("Screaming Frog SEO Spider/20.0", "Screaming Frog SEO Spider"),
    // https://developer.x.com/en/docs/x-for-websites/cards/guides/getting-started
    ("Twitterbot/1.0", "Twitterbot"),
    // https://api.slack.com/robots
    ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "Slackbot"),
    // https://discord.com/developers/docs/resources/message#embed-object
    ("Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", "Discordbot"),
];

/// Strings that name no registry crawler: browsers, tools, a token that never fetches, and
/// crawler words inside URLs, addresses, longer names and comment text.
pub(super) const NAMELESS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) \
     Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like \
     Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) \
     Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51",
    "curl/8.5.0",
    "python-requests/2.31.0",
    "Go-http-client/1.1",
    // Google-Extended is a robots.txt token only: no request carries it.
    "Mozilla/5.0 (compatible; Google-Extended)",
    "Mozilla/5.0 (compatible; LinkChecker/1.0; +https://openai.com/gptbot)",
    "Mozilla/5.0 (compatible; Monitor/2.0; contact spider-feedback@example.com)",
    "Mozilla/5.0 (compatible; Monitor/2.0; +https://example.com/ccbot-and-gptbot.html)",
    "Mozilla/5.0 (compatible; Checker/1.0; see the source code at https://example.com)",
    "Mozilla/5.0 (compatible; Checker/1.0; ask the operator first)",
    "Mozilla/5.0 (compatible; Checker/1.0; +mailto:code@example.com)",
    "Mozilla/5.0 (compatible; GPTBotChecker/1.0)",
    "Mozilla/5.0 (compatible; NotGooglebot/2.1)",
];

fn name_of(registry: &Registry, user_agent: &str) -> Option<String> {
    registry
        .classify(user_agent)
        .map(|id| registry.get(id).name.clone())
}

#[test]
fn real_user_agents_name_the_crawler_their_operator_documents() {
    let registry = Registry::builtin();
    assert!(NAMED.len() >= 40, "{} strings", NAMED.len());
    for (user_agent, expected) in NAMED {
        assert!(
            registry.by_name(expected).is_some(),
            "{expected} is in the registry"
        );
        assert_eq!(
            name_of(&registry, user_agent).as_deref(),
            Some(*expected),
            "{user_agent}"
        );
    }
}

#[test]
fn browsers_tools_and_crawler_words_outside_products_name_nobody() {
    let registry = Registry::builtin();
    for user_agent in NAMELESS {
        assert_eq!(name_of(&registry, user_agent), None, "{user_agent}");
    }
}

#[test]
fn the_web_servers_regex_finds_a_crawler_exactly_where_the_classifier_does() {
    let registry = Registry::builtin();
    for id in registry.ids() {
        let crawler = registry.get(id);
        if crawler.user_agent.is_empty() {
            continue;
        }
        let regex = regex::RegexBuilder::new(&product_regex(&crawler.user_agent))
            .case_insensitive(true)
            .build()
            .unwrap();
        let strings = NAMED
            .iter()
            .map(|(ua, _)| *ua)
            .chain(NAMELESS.iter().copied());
        for user_agent in strings {
            // The regex finds any of the crawler's products; the classifier names the longest.
            let named = NAMED
                .iter()
                .any(|(ua, name)| *ua == user_agent && name == &crawler.name);
            if named {
                assert!(
                    regex.is_match(user_agent),
                    "{} in {user_agent}",
                    crawler.name
                );
            }
            if NAMELESS.contains(&user_agent) {
                assert!(
                    !regex.is_match(user_agent),
                    "{} in {user_agent}",
                    crawler.name
                );
            }
        }
    }
}

#[test]
fn the_regex_cut_into_short_ones_matches_what_the_whole_one_does() {
    let registry = Registry::builtin();
    let patterns: Vec<String> = registry
        .crawlers()
        .iter()
        .flat_map(|c| c.user_agent.iter().cloned())
        .collect();
    let build = |regex: &str| {
        regex::RegexBuilder::new(regex)
            .case_insensitive(true)
            .size_limit(1 << 26)
            .build()
            .unwrap()
    };
    let whole = build(&product_regex(&patterns));
    let parts: Vec<regex::Regex> = product_regexes(&patterns, 3000)
        .iter()
        .inspect(|r| assert!(r.len() <= 3000, "{} bytes", r.len()))
        .map(|r| build(r))
        .collect();
    assert!(parts.len() > 1);
    let strings = NAMED
        .iter()
        .map(|(ua, _)| *ua)
        .chain(NAMELESS.iter().copied());
    for user_agent in strings {
        assert_eq!(
            parts.iter().any(|r| r.is_match(user_agent)),
            whole.is_match(user_agent),
            "{user_agent}"
        );
    }
}
