//! Whether a crawler may fetch a path: [`RobotsTxt::evaluate`], RFC 9309 section 2.2.
//!
//! 1. `/robots.txt` is always allowed.
//! 2. Groups: every group that lists the crawler's product token (ASCII case-insensitive) is
//!    obeyed, their rules combined; only when none does, every `*` group is. A specific group
//!    is never merged with `*`. No group at all: everything is allowed.
//! 3. Rules: among the rules of those groups that match the path, the one with the most
//!    octets wins; on a tie Allow wins (then the earliest line, so answers are stable). No
//!    matching rule: allowed.

use std::cmp::Reverse;

use super::pattern::request_path;
use super::{Group, MatchedRule, RobotsTxt, Rule, Verdict};

impl RobotsTxt {
    /// The verdict for `user_agent` fetching `path_and_query` (`/a/b?x=1`, or a whole URL),
    /// with the rule and line that decided it.
    ///
    /// `user_agent` is the crawler's product token (`Googlebot`); anything after the token, as
    /// in `Googlebot/2.1`, is ignored, and `*` (or no token) means "a crawler with no group of
    /// its own".
    pub fn evaluate(&self, user_agent: &str, path_and_query: &str) -> Verdict {
        let path = request_path(path_and_query);
        if is_robots_txt(&path) {
            return Verdict {
                allowed: true,
                decided_by: None,
            };
        }
        let token = product_token(user_agent);
        let rule = self
            .groups_for(&token)
            .flat_map(|group| &group.rules)
            .filter(|rule| rule.pattern.matches(&path))
            .max_by_key(|rule| (rule.pattern.octets(), rule.allow, Reverse(rule.line)));
        Verdict {
            allowed: rule.is_none_or(|rule| rule.allow),
            decided_by: rule.map(Rule::matched),
        }
    }

    /// Shorthand for `evaluate(..).allowed`.
    pub fn is_allowed(&self, user_agent: &str, path_and_query: &str) -> bool {
        self.evaluate(user_agent, path_and_query).allowed
    }

    /// Whether any path at all can be disallowed for `user_agent`: false when its groups hold
    /// no Disallow rule, so callers checking many URLs can skip the matching.
    pub fn may_disallow(&self, user_agent: &str) -> bool {
        let token = product_token(user_agent);
        self.groups_for(&token)
            .flat_map(|group| &group.rules)
            .any(|rule| !rule.allow)
    }

    /// The groups `token` (lowercase, maybe empty) obeys.
    pub(super) fn groups_for<'a>(&'a self, token: &str) -> impl Iterator<Item = &'a Group> {
        let has_own = !token.is_empty() && self.groups.iter().any(|g| g.lists(token));
        let wanted = if has_own { token } else { "*" }.to_string();
        self.groups.iter().filter(move |g| g.lists(&wanted))
    }
}

impl Group {
    pub(super) fn lists(&self, agent: &str) -> bool {
        self.agents.iter().any(|a| a == agent)
    }
}

impl Rule {
    fn matched(&self) -> MatchedRule {
        MatchedRule {
            line: self.line,
            allow: self.allow,
            pattern: self.written.clone(),
        }
    }
}

/// The product token at the start of a user agent (`Googlebot/2.1` gives `googlebot`),
/// lowercased to compare with the groups' agents. RFC 9309: letters, `-` and `_` only.
fn product_token(user_agent: &str) -> String {
    let agent = user_agent.trim();
    let end = agent
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(agent.len());
    agent[..end].to_ascii_lowercase()
}

/// "The /robots.txt URI is implicitly allowed", whatever its query.
fn is_robots_txt(path: &str) -> bool {
    path.split('?').next() == Some(crate::files::ROBOTS_PATH)
}

#[cfg(test)]
mod tests {
    #[test]
    fn may_disallow_tells_whether_matching_can_change_anything() {
        let robots = super::RobotsTxt::parse(
            "User-agent: *\nAllow: /\n\nUser-agent: Googlebot\nDisallow: /x\n",
        )
        .unwrap();
        assert!(!robots.may_disallow("*"));
        assert!(!robots.may_disallow("Bingbot"));
        assert!(robots.may_disallow("Googlebot"));
    }

    use super::*;

    fn robots(text: &str) -> RobotsTxt {
        RobotsTxt::parse(text).unwrap()
    }

    /// RFC 9309 section 5.1.
    const SIMPLE: &str = "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n\
        User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n\
        User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\nUser-Agent: quxbot\n";

    #[test]
    fn rfc_9309_simple_example() {
        let r = robots(SIMPLE);
        // `*`: everyone without a group of its own.
        assert!(!r.is_allowed("otherbot", "/img/cat.gif"));
        assert!(!r.is_allowed("otherbot", "/example/x"));
        assert!(r.is_allowed("otherbot", "/publications/2024"));
        assert!(r.is_allowed("otherbot", "/img/cat.gifs"));
        // foobot: only its own two URLs.
        assert!(r.is_allowed("foobot", "/example/page.html"));
        assert!(r.is_allowed("foobot", "/example/allowed.gif"));
        assert!(!r.is_allowed("foobot", "/example/other.html"));
        assert!(!r.is_allowed("foobot", "/publications/2024"));
        // barbot and bazbot share a group; `*` does not apply to them.
        for bot in ["barbot", "bazbot"] {
            assert!(!r.is_allowed(bot, "/example/page.html"), "{bot}");
            assert!(r.is_allowed(bot, "/example/other"), "{bot}");
            assert!(r.is_allowed(bot, "/img/cat.gif"), "{bot}");
        }
        // quxbot: an empty last group allows everything.
        assert!(r.is_allowed("quxbot", "/example/x"));
        assert!(r.is_allowed("quxbot", "/img/cat.gif"));
    }

    #[test]
    fn rfc_9309_longest_match_example() {
        let r = robots(
            "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
        );
        let verdict = r.evaluate("foobot", "/example/page/disallowed.gif");
        assert!(!verdict.allowed);
        assert_eq!(verdict.decided_by.unwrap().line, 3);
        assert!(r.is_allowed("foobot", "/example/page/other.gif"));
    }

    #[test]
    fn groups_for_the_same_agent_are_combined() {
        // RFC 9309 section 2.2.1, figure 2.
        let r = robots("user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n");
        for path in ["/foo", "/bar", "/baz"] {
            assert!(!r.is_allowed("ExampleBot", path), "{path}");
        }
        assert!(r.is_allowed("ExampleBot", "/qux"));
    }

    #[test]
    fn star_groups_apply_only_without_a_specific_one() {
        // RFC 9309 section 2.2.1, figure 3.
        let r = robots(
            "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n",
        );
        assert!(!r.is_allowed("ExampleBot", "/foo"));
        assert!(r.is_allowed("ExampleBot", "/baz"));
        assert!(r.is_allowed("BazBot", "/foo"));
        assert!(!r.is_allowed("BazBot", "/baz"));
    }

    #[test]
    fn a_specific_group_is_never_merged_with_star() {
        let r =
            robots("User-agent: *\nDisallow: /private/\n\nUser-agent: Goodbot\nDisallow: /tmp/\n");
        assert!(r.is_allowed("goodbot", "/private/x"));
        assert!(!r.is_allowed("goodbot", "/tmp/x"));
        assert!(!r.is_allowed("*", "/private/x"));
    }

    #[test]
    fn several_star_groups_are_combined() {
        let r = robots("User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nUser-agent: *\nDisallow: /b\n");
        assert!(!r.is_allowed("other", "/a"));
        assert!(!r.is_allowed("other", "/b"));
        assert!(r.is_allowed("other", "/c"));
    }

    #[test]
    fn agents_match_by_product_token_case_insensitively() {
        let r = robots("User-agent: GoogleBot\nDisallow: /g\n\nUser-agent: *\nDisallow: /s\n");
        for agent in ["googlebot", "GOOGLEBOT", "Googlebot/2.1", " Googlebot "] {
            assert!(!r.is_allowed(agent, "/g"), "{agent}");
            assert!(r.is_allowed(agent, "/s"), "{agent}");
        }
        // Exact token only: Googlebot-News has no group here, so it obeys `*`.
        assert!(r.is_allowed("Googlebot-News", "/g"));
        assert!(!r.is_allowed("Googlebot-News", "/s"));
        // No token at all: the `*` group.
        for agent in ["*", "", "2.1"] {
            assert!(!r.is_allowed(agent, "/s"), "{agent:?}");
        }
    }

    #[test]
    fn a_group_can_list_star_and_a_specific_agent() {
        let r =
            robots("User-agent: a\nUser-agent: *\nDisallow: /x\n\nUser-agent: b\nDisallow: /y\n");
        assert!(!r.is_allowed("a", "/x"));
        assert!(!r.is_allowed("other", "/x"));
        assert!(r.is_allowed("b", "/x"));
    }

    #[test]
    fn longest_match_wins_whatever_the_order() {
        let r = robots("User-agent: *\nDisallow: /\nAllow: /shop/\nDisallow: /shop/cart\n");
        assert!(!r.is_allowed("*", "/about"));
        assert!(r.is_allowed("*", "/shop/shoes"));
        assert!(!r.is_allowed("*", "/shop/cart?item=1"));
        let r = robots("User-agent: *\nAllow: /page\nDisallow: /*.php\n");
        // `/*.php` (6) is longer than `/page` (5).
        assert!(!r.is_allowed("*", "/page.php"));
        assert!(r.is_allowed("*", "/page.html"));
    }

    #[test]
    fn allow_wins_a_tie() {
        for text in [
            "User-agent: *\nDisallow: /a\nAllow: /a\n",
            "User-agent: *\nAllow: /a\nDisallow: /a\n",
        ] {
            let verdict = robots(text).evaluate("*", "/a/b");
            assert!(verdict.allowed, "{text}");
            assert!(verdict.decided_by.unwrap().allow);
        }
        // Same length, different patterns: `/fish*` (6) against `/fish/` (6).
        let r = robots("User-agent: *\nDisallow: /fish/\nAllow: /fish*\n");
        assert!(r.is_allowed("*", "/fish/salmon"));
        // Equal rules of one kind: the first line decides.
        let r = robots("User-agent: *\nDisallow: /a\nDisallow: /a\n");
        assert_eq!(r.evaluate("*", "/a").decided_by.unwrap().line, 2);
    }

    #[test]
    fn percent_encoding_is_normalised_on_both_sides() {
        let r =
            robots("User-agent: *\nDisallow: /café\nDisallow: /%7Euser/\nAllow: /caf%C3%A9/menu\n");
        assert!(!r.is_allowed("*", "/caf%C3%A9"));
        assert!(!r.is_allowed("*", "/caf%c3%a9/x"));
        assert!(!r.is_allowed("*", "/café/x"));
        assert!(r.is_allowed("*", "/café/menu"));
        assert!(!r.is_allowed("*", "/~user/x"));
        assert!(!r.is_allowed("*", "/%7euser/x"));
    }

    #[test]
    fn empty_disallow_disallows_nothing() {
        let r = robots("User-agent: *\nDisallow:\n");
        let verdict = r.evaluate("*", "/anything");
        assert!(verdict.allowed);
        assert_eq!(verdict.decided_by, None);
        let r = robots("User-agent: *\nDisallow:\nDisallow: /x\n");
        assert!(!r.is_allowed("*", "/x"));
    }

    #[test]
    fn no_rule_or_no_group_allows() {
        assert!(robots("").is_allowed("*", "/x"));
        assert!(robots("User-agent: other\nDisallow: /\n").is_allowed("mybot", "/x"));
        let verdict = robots("User-agent: *\nDisallow: /x\n").evaluate("*", "/y");
        assert_eq!(verdict.to_string(), "allowed: no rule matched");
    }

    #[test]
    fn robots_txt_is_always_allowed() {
        let r = robots("User-agent: *\nDisallow: /\n");
        assert!(r.is_allowed("*", "/robots.txt"));
        assert!(r.is_allowed("*", "/robots.txt?v=2"));
        assert!(r.is_allowed("*", "https://example.com/robots.txt"));
        assert!(!r.is_allowed("*", "/robots.txt.bak"));
        assert!(!r.is_allowed("*", "/sub/robots.txt"));
    }

    #[test]
    fn the_query_is_part_of_the_match() {
        let r = robots("User-agent: *\nDisallow: /*?sessionid=\nDisallow: /search?\n");
        assert!(!r.is_allowed("*", "/fr/article.php?sessionid=1"));
        assert!(r.is_allowed("*", "/fr/article.php?AIndex=12"));
        assert!(!r.is_allowed("*", "https://example.com/search?q=x"));
        assert!(r.is_allowed("*", "/search"));
    }

    #[test]
    fn verdicts_name_the_deciding_rule() {
        let r = robots("# site\nUser-agent: *\nAllow: /\nDisallow: /admin/\n");
        let verdict = r.evaluate("Googlebot", "/admin/login.php");
        let rule = MatchedRule {
            line: 4,
            allow: false,
            pattern: "/admin/".into(),
        };
        assert_eq!(
            verdict,
            Verdict {
                allowed: false,
                decided_by: Some(rule)
            }
        );
        assert_eq!(
            verdict.to_string(),
            "disallowed by line 4: Disallow: /admin/"
        );
        assert_eq!(
            r.evaluate("x", "/").to_string(),
            "allowed by line 3: Allow: /"
        );
    }

    /// Google's parser (the `robotstxt` port) must agree wherever RFC 9309 and Google agree.
    /// Where they differ we follow the RFC; see `google_quirks_we_do_not_copy`.
    #[test]
    fn agrees_with_googles_parser_on_common_ground() {
        let texts = [
            SIMPLE,
            "User-agent: *\nDisallow: /\nAllow: /shop/\nDisallow: /shop/cart\nAllow: /*.css$\n",
            "User-agent: a\nUser-agent: b\nDisallow: /x\nAllow: /x/y\n\nUser-agent: *\nDisallow: /\n",
            "User-agent: *\nDisallow: /a*b*c$\nAllow: /a\nDisallow: /fish/\nAllow: /fish*\n",
        ];
        let agents = ["a", "b", "foobot", "barbot", "quxbot", "otherbot"];
        let paths = [
            "/",
            "/x",
            "/x/y",
            "/x/yz",
            "/shop/",
            "/shop/cart",
            "/shop/cart?x=1",
            "/s.css",
            "/s.css?v=1",
            "/img/cat.gif",
            "/example/page.html",
            "/example/allowed.gif",
            "/publications/a",
            "/abc",
            "/abxc",
            "/a-b-c-d",
            "/fish/",
            "/fish/s",
            "/fishy",
        ];
        for text in texts {
            let ours = robots(text);
            for agent in agents {
                for path in paths {
                    let url = format!("https://example.com{path}");
                    let mut google = robotstxt::DefaultMatcher::default();
                    let theirs = google.one_agent_allowed_by_robots(text, agent, &url);
                    assert_eq!(
                        ours.is_allowed(agent, path),
                        theirs,
                        "{agent} {path} in\n{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn google_quirks_we_do_not_copy() {
        let google = |text: &str, path: &str| {
            let url = format!("https://example.com{path}");
            robotstxt::DefaultMatcher::default().one_agent_allowed_by_robots(text, "bot", &url)
        };
        // A Sitemap line ends the group for Google; RFC 9309 section 2.2.4 forbids that.
        let text =
            "User-agent: bot\nSitemap: https://e.com/s.xml\nUser-agent: other\nDisallow: /x\n";
        assert!(google(text, "/x"));
        assert!(!robots(text).is_allowed("bot", "/x"));
        // Google does not decode %XX of unreserved characters; the RFC says to.
        let text = "User-agent: bot\nDisallow: /baz\n";
        assert!(google(text, "/%62az"));
        assert!(!robots(text).is_allowed("bot", "/%62az"));
        // Google treats `Allow: /d/index.html` as also allowing `/d/`.
        let text = "User-agent: bot\nDisallow: /d/\nAllow: /d/index.html\n";
        assert!(google(text, "/d/"));
        assert!(!robots(text).is_allowed("bot", "/d/"));
    }
}
