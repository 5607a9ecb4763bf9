//! Which registry crawler a User-Agent names: the registry's `user_agent` patterns matched only
//! where a product can stand (RFC 9110 §10.1.5), never as a word of a URL, an e-mail address or
//! comment text. The one rule every part of sitemapd names crawlers by ([`Matcher::classify`], on
//! every request's path, allocation-free and bounded), and the same rule written as a regular
//! expression for the web servers in front ([`product_regex`]).
//!
//! A pattern matches, ignoring ASCII case, where it is
//! - an item's first word: at the start of the string or after `(` or `;` (and optional spaces),
//!   followed by `/`, `;`, `)`, a space or the end: `Googlebot/2.1 (…)`, `(compatible; Bytespider;
//!   …)`, `(compatible; archive.org_bot +http://…)`;
//! - a `name/version` product anywhere else after a space: `… Safari/537.36 (compatible; Yahoo!
//!   Slurp/3.0)`, `… (KHTML, like Gecko) Code/1.90.0 Chrome/…`;
//! - a word outside any comment, after a space, followed by a space, `;` or the end (a product
//!   without a version, such as `… (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5`).
//!
//! So `+https://openai.com/adsbot` (after `/` or `.`), `spider-feedback@bytedance.com` (followed
//! by `-`) and the `code` of `(source code at …)` (comment text, no version) name nobody.

/// How much of a User-Agent [`Matcher::classify`] reads: real crawlers name themselves well
/// within it, and a huge header costs no more than this.
pub const USER_AGENT_SCAN_BYTES: usize = 512;

/// Bytes after which (and optional spaces) a comment item, or the string's first product, starts.
const ITEM_START: &[u8] = b"(;";

/// Bytes that may follow a product's name (besides the end of the string).
const PRODUCT_END: &[u8] = b"/;) ";

/// The User-Agent patterns, lowercase, bucketed by first byte and longest first, so a lookup
/// compares in place only the patterns that start with the byte at a possible product start.
#[derive(Clone, Debug)]
pub(crate) struct Matcher {
    /// Each pattern with the position (in the registry) of the crawler it names.
    buckets: Vec<Vec<(Box<[u8]>, u16)>>,
}

impl Matcher {
    /// The matcher of each crawler's patterns, crawlers named by their position in `patterns`.
    pub(crate) fn new<'a>(patterns: impl IntoIterator<Item = &'a [String]>) -> Self {
        let mut buckets: Vec<Vec<(Box<[u8]>, u16)>> = vec![Vec::new(); 256];
        for (i, crawler) in patterns.into_iter().enumerate() {
            for pattern in crawler {
                let lower: Box<[u8]> = pattern.to_ascii_lowercase().into_bytes().into();
                buckets[usize::from(lower[0])].push((lower, i as u16));
            }
        }
        for bucket in &mut buckets {
            // Stable: among equally long patterns, the file's order decides.
            bucket.sort_by_key(|(pattern, _)| std::cmp::Reverse(pattern.len()));
        }
        Self { buckets }
    }

    /// The crawler whose longest pattern stands as a product in the first
    /// [`USER_AGENT_SCAN_BYTES`] bytes of `user_agent`, if any.
    pub(crate) fn classify(&self, user_agent: &[u8]) -> Option<u16> {
        let scanned = &user_agent[..user_agent.len().min(USER_AGENT_SCAN_BYTES)];
        let mut best: Option<(usize, u16)> = None;
        let mut depth = 0usize;
        for start in 0..scanned.len() {
            if start > 0 {
                depth = comment_depth_after(depth, scanned[start - 1]);
            }
            let Some(place) = Place::of(scanned, start, depth) else {
                continue;
            };
            let first = scanned[start].to_ascii_lowercase();
            for (pattern, id) in &self.buckets[usize::from(first)] {
                if best.is_some_and(|(len, _)| pattern.len() <= len) {
                    break;
                }
                let end = start + pattern.len();
                if end <= scanned.len()
                    && scanned[start..end].eq_ignore_ascii_case(pattern)
                    && place.ends_product(user_agent.get(end).copied())
                {
                    best = Some((pattern.len(), *id));
                    break;
                }
            }
        }
        best.map(|(_, id)| id)
    }
}

/// How deep in `(` comments the byte after `byte` is.
fn comment_depth_after(depth: usize, byte: u8) -> usize {
    match byte {
        b'(' => depth + 1,
        b')' => depth.saturating_sub(1),
        _ => depth,
    }
}

/// Where a word starts, as far as naming a product goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The string's first word or a comment item's first word (after `(` or `;`).
    ItemStart,
    /// After a space, inside a comment: a product only as `name/version`.
    InComment,
    /// After a space, outside any comment: a product with or without a version.
    Outside,
}

impl Place {
    /// What the word starting at `start` is, or `None` where no product starts (after a letter,
    /// digit, `/`, `.`, `@`, `+`, `-` …: inside a URL, an address or a longer word).
    fn of(text: &[u8], start: usize, depth: usize) -> Option<Place> {
        let before = &text[..start];
        // Most bytes follow a letter, a digit or punctuation: no product starts there.
        match before.last() {
            None => return Some(Place::ItemStart),
            Some(b) if ITEM_START.contains(b) => return Some(Place::ItemStart),
            Some(b' ') => {}
            Some(_) => return None,
        }
        match before.iter().rev().find(|&&b| b != b' ') {
            None => Some(Place::ItemStart),
            Some(b) if ITEM_START.contains(b) => Some(Place::ItemStart),
            _ if depth == 0 => Some(Place::Outside),
            _ => Some(Place::InComment),
        }
    }

    /// Whether a name ending before `next` (`None`: the end) is a whole product here.
    fn ends_product(self, next: Option<u8>) -> bool {
        let Some(next) = next else {
            return self != Place::InComment;
        };
        match self {
            Place::ItemStart => PRODUCT_END.contains(&next),
            Place::InComment => next == b'/',
            Place::Outside => matches!(next, b'/' | b' ' | b';'),
        }
    }
}

/// The same rule as [`Matcher::classify`] as one regular expression over `patterns`, for a
/// case-insensitive match by PCRE (nginx, Apache) or RE2 (Caddy). Its three alternatives are the
/// three places of [`Place`]; the last keeps to words outside comments by reading the string from
/// its start through whole `(…)` comments.
pub fn product_regex(patterns: &[String]) -> String {
    let names = patterns
        .iter()
        .map(|p| escape(p))
        .collect::<Vec<_>>()
        .join("|");
    format!("(^|[(;]) *({names})([/;) ]|$)| ({names})/|^([^()]|\\([^()]*\\))* ({names})([ ;/]|$)")
}

/// [`product_regex`] over `patterns` cut into several expressions, each at most `limit` bytes
/// where a single pattern allows it, that together match what the one would: nginx refuses a
/// configuration parameter over 4 KiB, and a registry's worth of names is longer.
pub fn product_regexes(patterns: &[String], limit: usize) -> Vec<String> {
    let mut regexes = Vec::new();
    let mut chunk: Vec<String> = Vec::new();
    for pattern in patterns {
        chunk.push(pattern.clone());
        if chunk.len() > 1 && product_regex(&chunk).len() > limit {
            let last = chunk.pop().expect("just pushed");
            regexes.push(product_regex(&chunk));
            chunk = vec![last];
        }
    }
    if !chunk.is_empty() {
        regexes.push(product_regex(&chunk));
    }
    regexes
}

/// A pattern as a regular expression literal (PCRE and RE2 alike), lowercase.
fn escape(pattern: &str) -> String {
    let mut out = String::new();
    for c in pattern.to_ascii_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '/' || c == ' ' {
            out.push(c);
        } else if c.is_ascii() && !c.is_ascii_control() {
            out.push('\\');
            out.push(c);
        }
        // Anything else cannot be in a User-Agent header as the server sees it.
    }
    out
}

#[cfg(test)]
mod real_user_agents;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawlers::registry::Registry;

    fn registry() -> Registry {
        Registry::parse(
            r#"
            [[crawler]]
            name = "Bot"
            tokens = ["bot"]
            purpose = "other"
            [[crawler]]
            name = "Googlebot"
            tokens = ["Googlebot"]
            purpose = "search"
            [[crawler]]
            name = "Code"
            tokens = ["Code"]
            purpose = "ai-user"
            [[crawler]]
            name = "Slurp"
            tokens = ["Slurp"]
            user_agent = ["Yahoo! Slurp", "Slurp"]
            purpose = "search"
            "#,
            "t",
        )
        .unwrap()
    }

    fn name_of(user_agent: &str) -> Option<String> {
        let registry = registry();
        registry
            .classify(user_agent)
            .map(|id| registry.get(id).name.clone())
    }

    #[test]
    fn a_pattern_names_a_crawler_as_a_product_ignoring_case() {
        for (user_agent, expected) in [
            ("Googlebot/2.1", Some("Googlebot")),
            ("GOOGLEBOT", Some("Googlebot")),
            (
                "Mozilla/5.0 (compatible; googlebot/2.1; +http://x)",
                Some("Googlebot"),
            ),
            ("Mozilla/5.0 (compatible;Googlebot)", Some("Googlebot")),
            (
                "Mozilla/5.0 (compatible; Googlebot +http://x)",
                Some("Googlebot"),
            ),
            ("x (y) Googlebot", Some("Googlebot")),
            ("x (y) Googlebot z", Some("Googlebot")),
            ("Mozilla/5.0 (Windows) Code/1.90.0 Chrome/124", Some("Code")),
            (
                "Mozilla/5.0 (compatible; Yahoo! Slurp; http://x)",
                Some("Slurp"),
            ),
            ("some bot/1.0", Some("Bot")),
        ] {
            assert_eq!(name_of(user_agent).as_deref(), expected, "{user_agent}");
        }
    }

    #[test]
    fn urls_addresses_longer_words_and_comment_text_name_nobody() {
        for user_agent in [
            "xgooglebot",
            "googlebot2",
            "googlebo",
            "robot",
            "Googlebot-Image/1.0",
            "Mozilla/5.0 (compatible; Other/1.0; +http://www.google.com/googlebot)",
            "Mozilla/5.0 (compatible; Other/1.0; googlebot@example.com)",
            "Mozilla/5.0 (compatible; Other/1.0; +googlebot.example.com)",
            "Mozilla/5.0 (compatible; Other/1.0; see the code here)",
            "Mozilla/5.0 (compatible; Other/1.0; a bot; x)",
            "Mozilla/5.0 (compatible; Other/1.0; spider-code@example.com)",
            "Mozilla/5.0 (compatible; Other/1.0; é googlebot é)",
            "",
        ] {
            assert_eq!(name_of(user_agent), None, "{user_agent}");
        }
    }

    #[test]
    fn the_longest_product_wins_within_a_bounded_prefix() {
        assert_eq!(
            name_of("Googlebot/2.1 (compatible; bot/1.0)").as_deref(),
            Some("Googlebot")
        );
        let padded = format!("{}Googlebot/2.1", "x ".repeat(USER_AGENT_SCAN_BYTES / 2));
        assert_eq!(name_of(&padded), None);
    }

    #[test]
    fn the_regex_has_one_alternative_per_place_and_escapes_patterns() {
        let regex = product_regex(&["GPTBot".into(), "odd.bot (x)".into()]);
        let names = "gptbot|odd\\.bot \\(x\\)";
        assert_eq!(
            regex,
            format!(
                "(^|[(;]) *({names})([/;) ]|$)| ({names})/|^([^()]|\\([^()]*\\))* ({names})([ ;/]|$)"
            )
        );
    }
}
