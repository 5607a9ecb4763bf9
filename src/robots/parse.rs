//! Parsing robots.txt into groups: [`RobotsTxt::parse`].
//!
//! Groups follow RFC 9309 section 2.2: consecutive User-agent lines open one group, which ends
//! at the next User-agent line after one of its rules. Sitemap lines and the extension lines
//! (`Crawl-delay`, `Content-Signal`, ...) never end a group (section 2.2.4).
//!
//! Refused, because crawlers would read the file differently or silently drop a rule: the
//! syntax errors of `lex.rs`; an Allow or Disallow before any User-agent line; a User-agent
//! that does not start with a product token; a pattern that does not start with `/` or `*`; a
//! Sitemap URL that is not absolute http(s).
//!
//! Kept, with a [`Warning`] for `check` and the start's log: lines an engine ignores (an unknown
//! or misspelt directive, Crawl-delay, Host, Clean-param, Request-rate, an extension line
//! outside any group, a malformed Crawl-delay or Content-Signal value), a full User-Agent
//! string where a product token belongs (crawlers compare its first word only), and a file over
//! [`MAX_BYTES`] (crawlers stop reading there).

use super::lex::{self, likely_meant, Directive, Extension, Key};
use super::pattern::Pattern;
use super::{Extra, Group, RobotsError, RobotsTxt, Rule, Warning, MAX_BYTES};

impl RobotsTxt {
    /// Parses and validates `text`; the first error wins. Line numbers are 1-based.
    pub fn parse(text: &str) -> Result<RobotsTxt, RobotsError> {
        let mut robots = RobotsTxt::default();
        for directive in lex::directives(text) {
            let directive = directive?;
            robots.add(directive).map_err(|reason| RobotsError::Line {
                line: directive.line,
                reason,
            })?;
        }
        robots.check_size(text);
        Ok(robots)
    }

    /// The `Sitemap:` URLs, in file order.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    /// What crawlers will read differently from what the file seems to say, in line order.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    fn warn(&mut self, line: usize, message: String) {
        self.warnings.push(Warning {
            line: Some(line),
            message,
        });
    }

    fn add(&mut self, directive: Directive<'_>) -> Result<(), String> {
        let value = directive.value;
        match directive.key {
            Key::UserAgent => self.add_agent(directive.line, value),
            Key::Allow | Key::Disallow => self.add_rule(directive),
            Key::Sitemap => {
                check_sitemap_url(value)
                    .map_err(|reason| format!("Sitemap URL {reason}, found {value:?}"))?;
                self.sitemaps.push(value.to_string());
                Ok(())
            }
            Key::Extension(extension) => {
                self.add_extension(directive, extension);
                Ok(())
            }
            Key::Unknown => {
                let message = unknown_directive(directive.name);
                self.warn(directive.line, message);
                Ok(())
            }
        }
    }

    fn add_agent(&mut self, line: usize, agent: &str) -> Result<(), String> {
        let token = agent_token(agent)?;
        if token.len() < agent.len() {
            self.warn(line, full_user_agent(agent, token));
        }
        let token = token.to_ascii_lowercase();
        match self.groups.last_mut() {
            Some(group) if group.rules.is_empty() => {
                group.agents.push(token);
                group.agent_lines.push(line);
            }
            _ => self.groups.push(Group {
                agents: vec![token],
                agent_lines: vec![line],
                rules: Vec::new(),
                extras: Vec::new(),
            }),
        }
        Ok(())
    }

    fn add_rule(&mut self, directive: Directive<'_>) -> Result<(), String> {
        let group = self.groups.last_mut().ok_or_else(|| {
            format!(
                "{} outside any group (add a User-agent line before it)",
                directive.key.name()
            )
        })?;
        check_pattern(directive)?;
        group.rules.push(Rule {
            line: directive.line,
            allow: directive.key == Key::Allow,
            written: directive.value.to_string(),
            pattern: Pattern::new(directive.value),
        });
        Ok(())
    }

    /// Kept as written; a member of the group it follows, if any.
    fn add_extension(&mut self, directive: Directive<'_>, extension: Extension) {
        let line = directive.line;
        if let Some(problem) = extension_problem(extension, directive.value) {
            self.warn(line, format!("{}: {problem}", directive.name));
        }
        match self.groups.last_mut() {
            Some(group) => group.extras.push(Extra {
                line,
                extension,
                text: format!("{}: {}", directive.name, directive.value),
            }),
            None if is_group_member(extension) => self.warn(
                line,
                format!(
                    "{} outside any group: crawlers ignore it (put it after a User-agent line)",
                    directive.name
                ),
            ),
            None => {}
        }
    }

    fn check_size(&mut self, text: &str) {
        if text.len() <= MAX_BYTES {
            return;
        }
        let cut = (0..=MAX_BYTES)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let line = lex::lines(&text[..cut]).len();
        self.warn(
            line,
            format!(
                "the file is {} bytes, over the {MAX_BYTES} bytes (500 KiB) crawlers must read: \
                 they stop within this line and ignore the rest",
                text.len()
            ),
        );
    }
}

/// Extension lines that belong to the group they follow (copied into a generated group for
/// its agents, removed with a group the policy replaces). Host, License and Clean-param speak
/// for the whole site and stay where they are.
pub(super) fn is_group_member(extension: Extension) -> bool {
    matches!(
        extension,
        Extension::CrawlDelay
            | Extension::RequestRate
            | Extension::ContentSignal
            | Extension::ContentUsage
    )
}

/// What crawlers will make of an extension line, when it is not what it seems to say.
fn extension_problem(extension: Extension, value: &str) -> Option<String> {
    match extension {
        Extension::CrawlDelay if check_crawl_delay(value).is_err() => Some(format!(
            "must be a number of seconds, found {value:?}; crawlers ignore the line"
        )),
        Extension::CrawlDelay => {
            Some("Google ignores Crawl-delay (Bing and Yandex read it)".into())
        }
        Extension::RequestRate => Some("Google, Bing and Yandex ignore Request-rate".into()),
        Extension::Host => Some(
            "no major crawler reads Host any more (Yandex stopped in 2018); redirect to the \
             preferred host instead"
                .into(),
        ),
        Extension::CleanParam => Some("only Yandex reads Clean-param".into()),
        Extension::ContentSignal if !is_content_signal(value) => Some(format!(
            "expected comma-separated signals like \"search=yes, ai-train=no\", found {value:?}"
        )),
        Extension::ContentSignal | Extension::ContentUsage | Extension::License => None,
    }
}

/// `search=yes, ai-input=no, ai-train=no`: comma-separated `name=value` pairs of letters,
/// digits and `-`.
pub(super) fn is_content_signal(value: &str) -> bool {
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    !value.trim().is_empty()
        && value.split(',').all(|pair| {
            pair.trim()
                .split_once('=')
                .is_some_and(|(name, value)| word(name.trim()) && word(value.trim()))
        })
}

fn unknown_directive(name: &str) -> String {
    match likely_meant(name) {
        Some(meant) => format!(
            "unknown directive {name:?}, probably a misspelt {meant}: crawlers that follow \
             RFC 9309 ignore the line (Google may read it as {meant})"
        ),
        None => format!("unknown directive {name:?}: crawlers ignore the line"),
    }
}

/// The product token a User-agent line names: all of it (RFC 9309: `product-token =
/// identifier / "*"`, `identifier = 1*(%x2D / %x41-5A / %x5F / %x61-7A)`) or, for a full
/// User-Agent string, its first word, which is what crawlers compare (with a warning).
fn agent_token(agent: &str) -> Result<&str, String> {
    if agent == "*" {
        return Ok(agent);
    }
    let end = agent
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(agent.len());
    if end == 0 {
        return Err(format!(
            "User-agent must be a product token (letters, \"-\" and \"_\") or \"*\", found {agent:?}"
        ));
    }
    Ok(&agent[..end])
}

/// `User-agent: Mozilla/5.0 (compatible; GPTBot/1.2)`: crawlers read `Mozilla`.
fn full_user_agent(agent: &str, token: &str) -> String {
    let meant = named_product(agent).unwrap_or(token);
    format!(
        "User-agent {agent:?} is not a product token: crawlers compare only its first word \
         {token:?}; write the crawler's token, e.g. \"User-agent: {meant}\""
    )
}

/// The product a User-Agent string names: its first `Name/version` that is not a browser part.
fn named_product(agent: &str) -> Option<&str> {
    const BROWSER: [&str; 8] = [
        "mozilla",
        "applewebkit",
        "khtml",
        "gecko",
        "chrome",
        "safari",
        "version",
        "mobile",
    ];
    agent
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '/'))
        .filter_map(|word| word.split_once('/').map(|(name, _)| name))
        .filter(|name| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
        })
        .find(|name| !BROWSER.contains(&name.to_ascii_lowercase().as_str()))
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

    fn warnings(text: &str) -> Vec<String> {
        let robots = RobotsTxt::parse(text).unwrap();
        robots.warnings().iter().map(|w| w.to_string()).collect()
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
        assert_eq!(robots.groups[0].agent_lines, [1, 2]);
        assert!(robots.groups[1].rules.is_empty());
    }

    #[test]
    fn sitemap_and_extension_lines_do_not_end_a_group() {
        let text = "User-agent: a\nSitemap: https://e.com/s.xml\nCrawl-delay: 2\n\
            Content-Signal: search=yes\nUser-agent: b\nDisallow: /x";
        let robots = RobotsTxt::parse(text).unwrap();
        assert_eq!(agents(&robots), vec![vec!["a", "b"]]);
        assert_eq!(robots.sitemaps(), ["https://e.com/s.xml"]);
        let extras: Vec<&str> = robots.groups[0]
            .extras
            .iter()
            .map(|e| e.text.as_str())
            .collect();
        assert_eq!(extras, ["Crawl-delay: 2", "Content-Signal: search=yes"]);
    }

    #[test]
    fn rules_before_any_user_agent_are_refused() {
        assert_eq!(
            error("# hi\nDisallow: /x\nUser-agent: *"),
            "robots template line 2: Disallow outside any group (add a User-agent line before it)"
        );
        assert!(error("Allow: /").starts_with("robots template line 1: Allow outside any group"));
        // A Sitemap line belongs to no group.
        assert!(RobotsTxt::parse("Sitemap: https://e.com/s.xml\nUser-agent: *").is_ok());
    }

    #[test]
    fn extension_lines_are_kept_and_warned_about_where_crawlers_ignore_them() {
        let text = "License: https://e.com/license.xml\nHost: e.com\nCrawl-delay: 1\n\
            User-agent: *\nContent-Signal: search=yes, ai-train=no\nContent-Usage: train-ai=n\n\
            Clean-param: ref /a/\nRequest-rate: 1/10s\nAllow: /\n";
        assert_eq!(
            warnings(text),
            [
                "robots template line 2: Host: no major crawler reads Host any more (Yandex \
                 stopped in 2018); redirect to the preferred host instead",
                "robots template line 3: Crawl-delay: Google ignores Crawl-delay (Bing and Yandex read it)",
                "robots template line 3: Crawl-delay outside any group: crawlers ignore it (put \
                 it after a User-agent line)",
                "robots template line 7: Clean-param: only Yandex reads Clean-param",
                "robots template line 8: Request-rate: Google, Bing and Yandex ignore Request-rate",
            ]
        );
        let robots = RobotsTxt::parse(text).unwrap();
        assert!(robots.is_allowed("GPTBot", "/x"));
    }

    #[test]
    fn bad_extension_values_are_warnings() {
        for bad in ["soon", "-1", "", "inf", "NaN", "+3"] {
            let text = format!("User-agent: *\nCrawl-delay: {bad}");
            let found = warnings(&text);
            assert!(
                found[0].starts_with("robots template line 2: Crawl-delay: must be a number"),
                "{bad}: {found:?}"
            );
        }
        let found = warnings("User-agent: *\nContent-Signal: yes please\n");
        assert!(
            found[0].contains("expected comma-separated signals"),
            "{found:?}"
        );
        assert!(is_content_signal("search=yes, ai-input=no,ai-train=no"));
        assert!(!is_content_signal("search"));
        assert!(!is_content_signal("search=yes,"));
    }

    #[test]
    fn unknown_and_misspelt_directives_are_warnings() {
        let found = warnings("User-agent: *\nDissallow: /x\nUser-Agnet: b\nNoindex: /y\n");
        assert_eq!(
            found,
            [
                "robots template line 2: unknown directive \"Dissallow\", probably a misspelt \
                 Disallow: crawlers that follow RFC 9309 ignore the line (Google may read it as Disallow)",
                "robots template line 3: unknown directive \"User-Agnet\", probably a misspelt \
                 User-agent: crawlers that follow RFC 9309 ignore the line (Google may read it as User-agent)",
                "robots template line 4: unknown directive \"Noindex\": crawlers ignore the line",
            ]
        );
        let robots = RobotsTxt::parse("User-agent: *\nDissallow: /x\n").unwrap();
        assert!(robots.is_allowed("bot", "/x"));
    }

    #[test]
    fn user_agent_must_start_with_a_product_token() {
        assert_eq!(
            error("User-agent: /2.1"),
            "robots template line 1: User-agent must be a product token \
             (letters, \"-\" and \"_\") or \"*\", found \"/2.1\""
        );
        assert!(error("User-agent:").contains("found \"\""));
        assert!(error("User-agent: *bot").contains("found \"*bot\""));
        assert!(RobotsTxt::parse("User-agent: Googlebot-News\nUser-agent: my_bot").is_ok());
    }

    #[test]
    fn a_full_user_agent_string_is_read_as_its_first_word() {
        let text = "User-agent: Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)\n\
            Disallow: /\nUser-agent: Googlebot/2.1\nDisallow: /g\n";
        let robots = RobotsTxt::parse(text).unwrap();
        assert_eq!(agents(&robots), vec![vec!["mozilla"], vec!["googlebot"]]);
        assert_eq!(
            warnings(text),
            [
                "robots template line 1: User-agent \"Mozilla/5.0 (compatible; GPTBot/1.2; \
                 +https://openai.com/gptbot)\" is not a product token: crawlers compare only its \
                 first word \"Mozilla\"; write the crawler's token, e.g. \"User-agent: GPTBot\"",
                "robots template line 3: User-agent \"Googlebot/2.1\" is not a product token: \
                 crawlers compare only its first word \"Googlebot\"; write the crawler's token, \
                 e.g. \"User-agent: Googlebot\"",
            ]
        );
        // As Google reads it: the group is Mozilla's, not GPTBot's.
        assert!(robots.is_allowed("GPTBot", "/x"));
        let mut google = robotstxt::DefaultMatcher::default();
        assert!(google.one_agent_allowed_by_robots(text, "GPTBot", "https://e.com/x"));
        let mut google = robotstxt::DefaultMatcher::default();
        assert!(!google.one_agent_allowed_by_robots(text, "Googlebot", "https://e.com/g"));
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
    fn over_500_kib_is_a_warning_naming_the_line_where_crawlers_stop() {
        let line = "Disallow: /0123456789abcdef0123456789abcdef0123456789abcdef0123456789\n";
        let mut text = String::from("User-agent: *\n");
        while text.len() + line.len() <= MAX_BYTES {
            text.push_str(line);
        }
        assert!(warnings(&text).is_empty());
        let lines_within = text.lines().count();
        text.push_str(line);
        let found = warnings(&text);
        assert_eq!(
            found,
            [format!(
                "robots template line {}: the file is {} bytes, over the 512000 bytes (500 KiB) \
                 crawlers must read: they stop within this line and ignore the rest",
                lines_within + 1,
                text.len()
            )]
        );
    }

    #[test]
    fn the_first_error_wins() {
        assert!(error("Disallow: /\nAllow /x").starts_with("robots template line 1:"));
    }

    #[test]
    fn an_empty_file_is_valid() {
        let robots = RobotsTxt::parse("").unwrap();
        assert!(robots.groups.is_empty() && robots.sitemaps().is_empty());
    }
}
