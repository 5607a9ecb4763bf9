//! Splits robots.txt text into directives: `Key: value` lines with their 1-based line numbers.
//!
//! The syntax is RFC 9309 section 2.2: the `:` is required, an Allow, Disallow or Sitemap value
//! is one word, and control characters are refused, since engines split such lines differently.
//! Keys are not refused: the four of RFC 9309 (spelt out in full, any case) are directives, the
//! extensions crawlers and CDNs read (`Crawl-delay`, `Content-Signal`, ...) are kept as written,
//! and anything else is a line crawlers ignore, which `check` reports (with the directive a
//! misspelling most likely meant: Google reads `Dissallow` as `Disallow`, RFC 9309 crawlers
//! ignore it).

use super::RobotsError;

/// What a line's key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    UserAgent,
    Allow,
    Disallow,
    Sitemap,
    /// A line beyond RFC 9309 that some crawlers or CDNs read; never a rule.
    Extension(Extension),
    /// A key no crawler we know reads: the line is ignored.
    Unknown,
}

/// The lines beyond RFC 9309 that templates may carry, kept as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extension {
    CrawlDelay,
    RequestRate,
    ContentSignal,
    ContentUsage,
    License,
    Host,
    CleanParam,
}

/// Every key with a meaning, by its canonical spelling (compared ASCII case-insensitively).
const KEYS: [(&str, Key); 11] = [
    ("User-agent", Key::UserAgent),
    ("Allow", Key::Allow),
    ("Disallow", Key::Disallow),
    ("Sitemap", Key::Sitemap),
    ("Crawl-delay", Key::Extension(Extension::CrawlDelay)),
    ("Request-rate", Key::Extension(Extension::RequestRate)),
    ("Content-Signal", Key::Extension(Extension::ContentSignal)),
    ("Content-Usage", Key::Extension(Extension::ContentUsage)),
    ("License", Key::Extension(Extension::License)),
    ("Host", Key::Extension(Extension::Host)),
    ("Clean-param", Key::Extension(Extension::CleanParam)),
];

impl Key {
    /// Exact names only (ASCII case-insensitive, as ABNF strings are): a typo is [`Key::Unknown`].
    fn parse(name: &str) -> Key {
        KEYS.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or(Key::Unknown, |(_, key)| *key)
    }

    /// The canonical spelling, for messages.
    pub(super) fn name(self) -> &'static str {
        KEYS.iter()
            .find(|(_, key)| *key == self)
            .map_or("unknown", |(name, _)| name)
    }
}

/// The known key `name` most likely misspells (`Dissallow`, `User-Agnet`, `useragent`), if any:
/// at most one edit for every four letters (at least one), ignoring case, `-`, `_` and spaces.
pub(super) fn likely_meant(name: &str) -> Option<&'static str> {
    let squeeze = |s: &str| -> Vec<u8> {
        s.bytes()
            .filter(|b| !matches!(b, b'-' | b'_' | b' ' | b'\t'))
            .map(|b| b.to_ascii_lowercase())
            .collect()
    };
    let written = squeeze(name);
    if written.is_empty() {
        return None;
    }
    KEYS.iter()
        .map(|(known, _)| (known, squeeze(known)))
        .map(|(known, squeezed)| (edit_distance(&written, &squeezed), squeezed.len(), *known))
        .filter(|(distance, len, _)| *distance <= (len / 4).max(1))
        .min_by_key(|(distance, _, _)| *distance)
        .map(|(_, _, known)| known)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and transpositions
/// of neighbours each cost one.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// One meaningful line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Directive<'a> {
    pub line: usize,
    pub key: Key,
    /// The key as written (trimmed).
    pub name: &'a str,
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
    let (key, name, value) = split_key_value(content).map_err(error)?;
    Ok(Some(Directive {
        line,
        key,
        name,
        value,
    }))
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

fn split_key_value(content: &str) -> Result<(Key, &str, &str), String> {
    let Some((name, value)) = content.split_once(':') else {
        return Err(missing_colon(content));
    };
    let name = name.trim_matches(WS);
    let key = Key::parse(name);
    let value = value.trim_matches(WS);
    // A User-agent with a space fails its own check, with a better message.
    if value.contains(WS) && matches!(key, Key::Allow | Key::Disallow | Key::Sitemap) {
        return Err(format!(
            "{} value {value:?} holds a space; percent-encode it as %20",
            key.name()
        ));
    }
    Ok((key, name, value))
}

/// `Disallow /x`: engines disagree on such a line (Google reads it, RFC 9309 crawlers do not).
fn missing_colon(content: &str) -> String {
    let word = content.split(WS).next().unwrap_or_default();
    match (Key::parse(word), likely_meant(word)) {
        (Key::Unknown, None) => {
            format!("{content:?} is not a directive (\"Key: value\") or a comment (\"# ...\")")
        }
        (Key::Unknown, Some(meant)) => format!("missing \":\" after {word:?} (meant {meant}?)"),
        _ => format!("missing \":\" after {word:?}"),
    }
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
                (5, Key::Extension(Extension::CrawlDelay), "5"),
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
    fn extension_lines_are_kept_with_their_values_as_written() {
        let text = "User-agent: *\nContent-Signal: search=yes, ai-train=no\n\
            Content-Usage: train-ai=n\nLicense: https://e.com/license.xml\nHost: e.com\n\
            Clean-param: ref /articles/\nRequest-rate: 1/10s\n";
        let found = lex(text).unwrap();
        assert_eq!(
            found[1],
            (
                2,
                Key::Extension(Extension::ContentSignal),
                "search=yes, ai-train=no"
            )
        );
        let keys: Vec<&str> = found.iter().map(|(_, key, _)| key.name()).collect();
        assert_eq!(
            keys,
            [
                "User-agent",
                "Content-Signal",
                "Content-Usage",
                "License",
                "Host",
                "Clean-param",
                "Request-rate"
            ]
        );
        assert_eq!(found[5].2, "ref /articles/");
    }

    #[test]
    fn unknown_and_misspelt_keys_are_lines_crawlers_ignore() {
        let found = lex("User-agent: *\nDissallow: /x\nNoindex: /y\n").unwrap();
        assert_eq!(found[1], (2, Key::Unknown, "/x"));
        assert_eq!(found[2], (3, Key::Unknown, "/y"));
        assert_eq!(likely_meant("Dissallow"), Some("Disallow"));
        assert_eq!(likely_meant("User-Agnet"), Some("User-agent"));
        assert_eq!(likely_meant("useragent"), Some("User-agent"));
        assert_eq!(likely_meant("user agent"), Some("User-agent"));
        assert_eq!(likely_meant("Site-map"), Some("Sitemap"));
        assert_eq!(likely_meant("Alow"), Some("Allow"));
        assert_eq!(likely_meant("Crawl-Dealy"), Some("Crawl-delay"));
        assert_eq!(likely_meant("Content-Signals"), Some("Content-Signal"));
        assert_eq!(likely_meant("Noindex"), None);
        assert_eq!(likely_meant(""), None);
        assert_eq!(likely_meant("Foo"), None);
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
        assert_eq!(
            error("Dissallow /x"),
            "robots template line 1: missing \":\" after \"Dissallow\" (meant Disallow?)"
        );
        assert_eq!(
            error("This is our robots file"),
            "robots template line 1: \"This is our robots file\" is not a directive \
             (\"Key: value\") or a comment (\"# ...\")"
        );
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
