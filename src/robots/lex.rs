//! Splits robots.txt text into directives: `Key: value` lines with their 1-based line numbers.
//!
//! The syntax is RFC 9309 section 2.2 with no leniency: the key must be one of the five known
//! directives spelt out in full (any case), the `:` is required, a value is one word, and
//! control characters are refused. Google accepts `Dissallow`, `useragent` or `Disallow /x`; a
//! file we serve must not depend on that.

use super::RobotsError;

/// The directives sitemapd accepts. Crawl-delay is not in RFC 9309 but is common, and crawlers
/// that do not know it ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    UserAgent,
    Allow,
    Disallow,
    Sitemap,
    CrawlDelay,
}

impl Key {
    /// Exact names only (ASCII case-insensitive, as ABNF strings are): no typo is a directive.
    fn parse(name: &str) -> Option<Key> {
        const KEYS: [(&str, Key); 5] = [
            ("user-agent", Key::UserAgent),
            ("allow", Key::Allow),
            ("disallow", Key::Disallow),
            ("sitemap", Key::Sitemap),
            ("crawl-delay", Key::CrawlDelay),
        ];
        let (_, key) = KEYS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        Some(*key)
    }

    /// The canonical spelling, for messages.
    pub(super) fn name(self) -> &'static str {
        match self {
            Key::UserAgent => "User-agent",
            Key::Allow => "Allow",
            Key::Disallow => "Disallow",
            Key::Sitemap => "Sitemap",
            Key::CrawlDelay => "Crawl-delay",
        }
    }
}

/// One meaningful line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Directive<'a> {
    pub line: usize,
    pub key: Key,
    /// Trimmed, comment removed; may be empty.
    pub value: &'a str,
}

/// Whitespace as RFC 9309 defines it (`WS = %x20 / %x09`).
const WS: [char; 2] = [' ', '\t'];

/// The directives of `text` in order, skipping blank and comment lines; the first bad line ends
/// the iteration with its error.
pub(super) fn directives(text: &str) -> impl Iterator<Item = Result<Directive<'_>, RobotsError>> {
    lines(text)
        .into_iter()
        .enumerate()
        .filter_map(|(i, raw)| lex_line(i + 1, raw).transpose())
}

/// Lines as RFC 9309 ends them: LF, CR or CRLF.
pub(super) fn lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\r', '\n']) {
        lines.push(&rest[..end]);
        let newline = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + newline..];
    }
    lines.push(rest);
    lines
}

/// `Ok(None)` for a blank or comment-only line.
fn lex_line(line: usize, raw: &str) -> Result<Option<Directive<'_>>, RobotsError> {
    let error = |reason: String| RobotsError::Line { line, reason };
    check_characters(line, raw).map_err(error)?;
    // A `#` starts a comment anywhere on the line, as in every parser.
    let content = raw.split('#').next().unwrap_or_default().trim_matches(WS);
    if content.is_empty() {
        return Ok(None);
    }
    let (key, value) = split_key_value(content).map_err(error)?;
    Ok(Some(Directive { line, key, value }))
}

fn check_characters(line: usize, raw: &str) -> Result<(), String> {
    if line == 1 && raw.starts_with('\u{feff}') {
        return Err(
            "starts with a byte order mark (U+FEFF); save the file as UTF-8 without BOM".into(),
        );
    }
    match raw.chars().find(|c| c.is_control() && *c != '\t') {
        Some(c) => Err(format!("control character U+{:04X}", u32::from(c))),
        None => Ok(()),
    }
}

fn split_key_value(content: &str) -> Result<(Key, &str), String> {
    let Some((name, value)) = content.split_once(':') else {
        return Err(missing_colon(content));
    };
    let name = name.trim_matches(WS);
    let key = Key::parse(name).ok_or_else(|| unknown_directive(name))?;
    let value = value.trim_matches(WS);
    // A User-agent or Crawl-delay with a space fails its own check, with a better message.
    if value.contains(WS) && matches!(key, Key::Allow | Key::Disallow | Key::Sitemap) {
        return Err(format!(
            "{} value {value:?} holds a space; percent-encode it as %20",
            key.name()
        ));
    }
    Ok((key, value))
}

/// `Disallow /x`: judge the first word, the directive the author meant.
fn missing_colon(content: &str) -> String {
    let word = content.split(WS).next().unwrap_or_default();
    match Key::parse(word) {
        Some(_) => format!("missing \":\" after {word:?}"),
        None => unknown_directive(word),
    }
}

fn unknown_directive(name: &str) -> String {
    format!(
        "unknown directive {name:?} (expected User-agent, Allow, Disallow, Sitemap or Crawl-delay)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(text: &str) -> Result<Vec<(usize, Key, &str)>, RobotsError> {
        directives(text)
            .map(|d| d.map(|d| (d.line, d.key, d.value)))
            .collect()
    }

    fn error(text: &str) -> String {
        lex(text).unwrap_err().to_string()
    }

    #[test]
    fn keys_are_case_insensitive_and_values_trimmed() {
        let text =
            "USER-AGENT:*\nallow :\t/a \ndisallow:\nSiteMap: https://e.com/s.xml\ncrawl-delay: 5";
        assert_eq!(
            lex(text).unwrap(),
            vec![
                (1, Key::UserAgent, "*"),
                (2, Key::Allow, "/a"),
                (3, Key::Disallow, ""),
                (4, Key::Sitemap, "https://e.com/s.xml"),
                (5, Key::CrawlDelay, "5"),
            ]
        );
    }

    #[test]
    fn comments_and_blank_lines_are_skipped_but_counted() {
        let text = "# hello\n\n  \t\nUser-agent: * # everyone\n#Disallow: /x";
        assert_eq!(lex(text).unwrap(), vec![(4, Key::UserAgent, "*")]);
    }

    #[test]
    fn lf_cr_and_crlf_each_end_a_line() {
        assert_eq!(lines("a\r\nb\rc\nd\n"), vec!["a", "b", "c", "d", ""]);
        assert_eq!(lines("a\n\r\nb"), vec!["a", "", "b"]);
        let text = "User-agent: *\r\n\r\nDisallow: /x\rAllow: /y";
        let found: Vec<usize> = lex(text).unwrap().iter().map(|d| d.0).collect();
        assert_eq!(found, vec![1, 3, 4]);
    }

    #[test]
    fn misspelt_directives_are_refused_with_their_line() {
        assert_eq!(
            error("User-agent: *\n\nDissallow: /x"),
            "robots template line 3: unknown directive \"Dissallow\" \
             (expected User-agent, Allow, Disallow, Sitemap or Crawl-delay)"
        );
        assert!(error("useragent: *")
            .starts_with("robots template line 1: unknown directive \"useragent\""));
        assert!(error("Site-map: https://e.com/").contains("unknown directive \"Site-map\""));
    }

    #[test]
    fn non_standard_directives_are_refused() {
        assert!(error("User-agent: *\nHost: example.com")
            .starts_with("robots template line 2: unknown directive \"Host\""));
        assert!(error("Noindex: /x").contains("unknown directive \"Noindex\""));
        assert!(error(": /x").contains("unknown directive \"\""));
    }

    #[test]
    fn the_colon_is_required() {
        assert_eq!(
            error("User-agent: *\nDisallow /x"),
            "robots template line 2: missing \":\" after \"Disallow\""
        );
        assert_eq!(
            error("Disallow"),
            "robots template line 1: missing \":\" after \"Disallow\""
        );
        assert!(error("Dissallow").contains("unknown directive \"Dissallow\""));
    }

    #[test]
    fn a_value_is_one_word() {
        assert_eq!(
            error("Disallow: /a b"),
            "robots template line 1: Disallow value \"/a b\" holds a space; percent-encode it as %20"
        );
    }

    #[test]
    fn control_characters_and_bom_are_refused() {
        assert_eq!(
            error("User-agent: *\nDisallow: /a\u{7}"),
            "robots template line 2: control character U+0007"
        );
        assert!(error("\u{feff}User-agent: *")
            .starts_with("robots template line 1: starts with a byte order mark"));
        assert_eq!(
            lex("User-agent:\t*").unwrap(),
            vec![(1, Key::UserAgent, "*")]
        );
    }
}
