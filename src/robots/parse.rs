//! Strict parsing of robots.txt into groups: [`RobotsTxt::parse`].
//!
//! Groups follow RFC 9309 section 2.2: consecutive User-agent lines open one group, which ends
//! at the next User-agent line after one of its rules. Sitemap and Crawl-delay lines never end
//! a group (section 2.2.4). On top of the syntax checks of `lex.rs`, a file is refused when a
//! rule or Crawl-delay comes before any User-agent line (crawlers would silently ignore it), a
//! User-agent is not a product token, a pattern does not start with `/` or `*`, a Sitemap URL
//! is not absolute http(s), or the file is over [`MAX_BYTES`].

use super::lex::{self, Directive, Key};
use super::pattern::Pattern;
use super::{Group, RobotsError, RobotsTxt, Rule, MAX_BYTES};

impl RobotsTxt {
    /// Parses and validates `text`; the first error wins. Line numbers are 1-based.
    pub fn parse(text: &str) -> Result<RobotsTxt, RobotsError> {
        check_size(text)?;
        let mut robots = RobotsTxt::default();
        for directive in lex::directives(text) {
            let directive = directive?;
            robots.add(directive).map_err(|reason| RobotsError::Line {
                line: directive.line,
                reason,
            })?;
        }
        Ok(robots)
    }

    /// The `Sitemap:` URLs, in file order.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    fn add(&mut self, directive: Directive<'_>) -> Result<(), String> {
        let value = directive.value;
        match directive.key {
            Key::UserAgent => self.add_agent(value),
            Key::Allow | Key::Disallow => self.add_rule(directive),
            Key::Sitemap => {
                check_sitemap_url(value)
                    .map_err(|reason| format!("Sitemap URL {reason}, found {value:?}"))?;
                self.sitemaps.push(value.to_string());
                Ok(())
            }
            Key::CrawlDelay => {
                self.open_group(Key::CrawlDelay)?;
                check_crawl_delay(value)
            }
        }
    }

    fn add_agent(&mut self, agent: &str) -> Result<(), String> {
        check_product_token(agent)?;
        let agent = agent.to_ascii_lowercase();
        match self.groups.last_mut() {
            Some(group) if group.rules.is_empty() => group.agents.push(agent),
            _ => self.groups.push(Group {
                agents: vec![agent],
                rules: Vec::new(),
            }),
        }
        Ok(())
    }

    fn add_rule(&mut self, directive: Directive<'_>) -> Result<(), String> {
        let group = self.open_group(directive.key)?;
        check_pattern(directive)?;
        group.rules.push(Rule {
            line: directive.line,
            allow: directive.key == Key::Allow,
            written: directive.value.to_string(),
            pattern: Pattern::new(directive.value),
        });
        Ok(())
    }

    /// The group a member line belongs to; an error before the first User-agent line.
    fn open_group(&mut self, key: Key) -> Result<&mut Group, String> {
        self.groups.last_mut().ok_or_else(|| {
            format!(
                "{} outside any group (add a User-agent line before it)",
                key.name()
            )
        })
    }
}

fn check_size(text: &str) -> Result<(), RobotsError> {
    match text.len() {
        bytes if bytes > MAX_BYTES => Err(RobotsError::TooLarge { bytes }),
        _ => Ok(()),
    }
}

/// RFC 9309: `product-token = identifier / "*"`, `identifier = 1*(%x2D / %x41-5A / %x5F / %x61-7A)`.
fn check_product_token(agent: &str) -> Result<(), String> {
    if agent == "*" || is_identifier(agent) {
        return Ok(());
    }
    Err(format!(
        "User-agent must be a product token (letters, \"-\" and \"_\") or \"*\", found {agent:?}"
    ))
}

fn is_identifier(token: &str) -> bool {
    !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
}

/// RFC 9309: `path-pattern = "/" ...`; `*` first is accepted too (the RFC's own example has
/// `Disallow: *.gif$`, and every crawler supports it). Empty means "no rule".
fn check_pattern(directive: Directive<'_>) -> Result<(), String> {
    let value = directive.value;
    if value.is_empty() || value.starts_with(['/', '*']) {
        return Ok(());
    }
    Err(format!(
        "{} pattern must start with \"/\" or \"*\", found {value:?}",
        directive.key.name()
    ))
}

/// Crawlers fetch Sitemap URLs as they are, with no base to resolve against: absolute http(s)
/// only, and ASCII so that no crawler has to guess an encoding. The error completes
/// "Sitemap URL ...".
pub(super) fn check_sitemap_url(url: &str) -> Result<(), &'static str> {
    if !url.is_ascii() {
        return Err("must be ASCII (percent-encode it)");
    }
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        _ => Err("must be an absolute http(s) URL"),
    }
}

/// Seconds between requests, as a non-negative decimal number.
fn check_crawl_delay(value: &str) -> Result<(), String> {
    match value.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 && !value.starts_with('+') => Ok(()),
        _ => Err(format!(
            "Crawl-delay must be a number of seconds, found {value:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        RobotsTxt::parse(text).unwrap_err().to_string()
    }

    fn agents(robots: &RobotsTxt) -> Vec<Vec<&str>> {
        let groups = robots.groups.iter();
        groups
            .map(|g| g.agents.iter().map(String::as_str).collect())
            .collect()
    }

    #[test]
    fn consecutive_user_agents_form_one_group() {
        let text = "User-agent: barbot\nUser-agent: BazBot\n\nDisallow: /x\nUser-agent: quxbot\n";
        let robots = RobotsTxt::parse(text).unwrap();
        assert_eq!(
            agents(&robots),
            vec![vec!["barbot", "bazbot"], vec!["quxbot"]]
        );
        assert_eq!(robots.groups[0].rules[0].line, 4);
        assert!(robots.groups[1].rules.is_empty());
    }

    #[test]
    fn sitemap_and_crawl_delay_do_not_end_a_group() {
        let text = "User-agent: a\nSitemap: https://e.com/s.xml\nCrawl-delay: 2\nUser-agent: b\nDisallow: /x";
        let robots = RobotsTxt::parse(text).unwrap();
        assert_eq!(agents(&robots), vec![vec!["a", "b"]]);
        assert_eq!(robots.sitemaps(), ["https://e.com/s.xml"]);
    }

    #[test]
    fn rules_before_any_user_agent_are_refused() {
        assert_eq!(
            error("# hi\nDisallow: /x\nUser-agent: *"),
            "robots template line 2: Disallow outside any group (add a User-agent line before it)"
        );
        assert!(error("Allow: /").starts_with("robots template line 1: Allow outside any group"));
        assert!(error("Crawl-delay: 1")
            .starts_with("robots template line 1: Crawl-delay outside any group"));
        // A Sitemap line belongs to no group.
        assert!(RobotsTxt::parse("Sitemap: https://e.com/s.xml\nUser-agent: *").is_ok());
    }

    #[test]
    fn user_agent_must_be_a_product_token() {
        assert_eq!(
            error("User-agent: Googlebot/2.1"),
            "robots template line 1: User-agent must be a product token \
             (letters, \"-\" and \"_\") or \"*\", found \"Googlebot/2.1\""
        );
        assert!(error("User-agent:").contains("found \"\""));
        assert!(error("User-agent: *bot").contains("found \"*bot\""));
        assert!(error("User-agent: Google bot").contains("found \"Google bot\""));
        assert!(RobotsTxt::parse("User-agent: Googlebot-News\nUser-agent: my_bot").is_ok());
    }

    #[test]
    fn patterns_must_be_paths() {
        assert_eq!(
            error("User-agent: *\nDisallow: admin/"),
            "robots template line 2: Disallow pattern must start with \"/\" or \"*\", found \"admin/\""
        );
        assert!(
            error("User-agent: *\nAllow: https://e.com/").contains("Allow pattern must start with")
        );
        assert!(error("User-agent: *\nDisallow: $").contains("found \"$\""));
        assert!(RobotsTxt::parse("User-agent: *\nDisallow:\nAllow: *.css$").is_ok());
    }

    #[test]
    fn sitemaps_must_be_absolute_http() {
        let relative = "User-agent: *\nAllow: /\nSitemap: /sitemap_index.xml";
        assert_eq!(
            error(relative),
            "robots template line 3: Sitemap URL must be an absolute http(s) URL, \
             found \"/sitemap_index.xml\""
        );
        assert!(error("Sitemap: ftp://e.com/s.xml").contains("absolute http(s) URL"));
        assert!(error("Sitemap:").contains("found \"\""));
        assert!(error("Sitemap: https://é.com/s.xml").contains("must be ASCII"));
        assert!(error("Sitemap: https://e.com/a b.xml").contains("holds a space"));
        assert!(RobotsTxt::parse("Sitemap: http://other.example.org:8080/s.xml?x=1").is_ok());
    }

    #[test]
    fn crawl_delay_is_a_number() {
        assert!(RobotsTxt::parse("User-agent: *\nCrawl-delay: 10\nCrawl-delay: 0.5").is_ok());
        for bad in ["soon", "-1", "", "inf", "NaN", "+3"] {
            let text = format!("User-agent: *\nCrawl-delay: {bad}");
            assert!(
                error(&text).starts_with("robots template line 2: Crawl-delay must be a number"),
                "{bad}"
            );
        }
    }

    #[test]
    fn size_limit_is_500_kib() {
        let line = "Disallow: /0123456789abcdef0123456789abcdef0123456789abcdef0123456789\n";
        let mut text = String::from("User-agent: *\n");
        while text.len() + line.len() <= MAX_BYTES {
            text.push_str(line);
        }
        assert!(RobotsTxt::parse(&text).is_ok());
        text.push_str(line);
        let bytes = text.len();
        assert_eq!(
            RobotsTxt::parse(&text).unwrap_err(),
            RobotsError::TooLarge { bytes }
        );
        assert_eq!(
            RobotsError::TooLarge { bytes: 512_001 }.to_string(),
            "robots.txt would be 512001 bytes, over the 512000-byte (500 KiB) limit"
        );
    }

    #[test]
    fn the_first_error_wins() {
        assert!(error("Dissallow: /\nHost: x").starts_with("robots template line 1:"));
    }

    #[test]
    fn an_empty_file_is_valid() {
        let robots = RobotsTxt::parse("").unwrap();
        assert!(robots.groups.is_empty() && robots.sitemaps().is_empty());
    }
}
