//! Path patterns of Allow/Disallow rules and the normal form that lets a pattern and a request
//! path be compared octet by octet (RFC 9309 sections 2.2.2 and 2.2.3).
//!
//! Normal form, applied to request paths and to the literal parts of patterns alike:
//! - `%XX` of an unreserved character (`A-Z a-z 0-9 - . _ ~`) is decoded (`/%62az` is `/baz`);
//!   any other `%XX` is kept with uppercase hex (`%2f` is `%2F`, never `/`);
//! - octets outside printable ASCII (so UTF-8 of non-ASCII characters), characters that a URI
//!   cannot hold verbatim, and a `%` that starts no escape are percent-encoded
//!   (`/café` is `/caf%C3%A9`);
//! - a literal `*` or `$` is encoded as `%2A` / `%24`: in a pattern these two are operators, so
//!   the RFC has authors write `%2A` to match a real `*`; encoding the path's `*` the same way
//!   makes that work.
//!
//! Not applied: the RFC's table also shows `:` and `/` inside a query encoded
//! (`?baz=https://foo.bar` as `?baz=https%3A%2F%2Ffoo.bar`). Doing that for every reserved
//! character would break `/`-separated patterns, and no crawler does it; a query is compared
//! as written, after the steps above.

use percent_encoding::percent_encode_byte;

/// A compiled pattern: literal pieces (normal form) separated by `*`, maybe anchored by `$`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pattern {
    /// Normal form with the operators, e.g. `/caf%C3%A9*.php$`; its length is the rule's weight.
    normal: String,
    pieces: Vec<String>,
    anchored: bool,
}

impl Pattern {
    /// `written` is the value of an Allow/Disallow line; `$` is an operator only at the end.
    pub(super) fn new(written: &str) -> Pattern {
        let (body, anchored) = match written.strip_suffix('$') {
            Some(body) => (body, true),
            None => (written, false),
        };
        let pieces: Vec<String> = body.split('*').map(normalise).collect();
        let mut normal = pieces.join("*");
        if anchored {
            normal.push('$');
        }
        Pattern {
            normal,
            pieces,
            anchored,
        }
    }

    /// "The most specific match is the match that has the most octets": the length of the
    /// pattern in normal form, so `/café` and `/caf%C3%A9` weigh the same.
    pub(super) fn octets(&self) -> usize {
        self.normal.len()
    }

    /// The normal form with its operators, e.g. `/caf%C3%A9*.php$`.
    pub(super) fn normal(&self) -> &str {
        &self.normal
    }

    /// Whether the pattern matches `path` (in normal form, see [`request_path`]) from its
    /// first octet. The empty pattern matches nothing: an empty Disallow allows everything.
    pub(super) fn matches(&self, path: &str) -> bool {
        if self.normal.is_empty() {
            return false;
        }
        let (first, rest) = self.pieces.split_first().expect("split yields a piece");
        let Some(mut tail) = path.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            return !self.anchored || tail.is_empty();
        };
        // With `*` as the only wildcard, taking each middle piece at its leftmost place leaves
        // the most room for the rest, so this greedy scan never misses a match.
        for piece in middle {
            match tail.find(piece.as_str()) {
                Some(at) => tail = &tail[at + piece.len()..],
                None => return false,
            }
        }
        if self.anchored {
            tail.ends_with(last.as_str())
        } else {
            tail.contains(last.as_str())
        }
    }
}

/// The path plus query that rules are matched against, in normal form. Accepts `/a/b?x=1` or a
/// whole `http(s)://` URL; a fragment is dropped, and a missing leading `/` is added.
pub(super) fn request_path(input: &str) -> String {
    let normal = match url_path_and_query(input) {
        Some(path) => normalise(&path),
        None => normalise(input.split('#').next().unwrap_or_default()),
    };
    if normal.starts_with('/') {
        normal
    } else {
        format!("/{normal}")
    }
}

fn url_path_and_query(input: &str) -> Option<String> {
    if input.starts_with('/') {
        return None;
    }
    let url = url::Url::parse(input).ok()?;
    if !url.has_host() {
        return None;
    }
    let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("{}{query}", url.path()))
}

/// Brings literal text to the normal form described in the module documentation.
pub(super) fn normalise(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match escaped_octet(&bytes[i..]) {
            Some(octet) if is_unreserved(octet) => {
                out.push(char::from(octet));
                i += 3;
            }
            Some(octet) => {
                out.push_str(percent_encode_byte(octet));
                i += 3;
            }
            None => {
                push_literal(&mut out, bytes[i]);
                i += 1;
            }
        }
    }
    out
}

/// The octet of a `%XX` escape at the start of `bytes`.
fn escaped_octet(bytes: &[u8]) -> Option<u8> {
    match bytes {
        [b'%', high, low, ..] => Some(hex_digit(*high)? << 4 | hex_digit(*low)?),
        _ => None,
    }
}

fn hex_digit(digit: u8) -> Option<u8> {
    let value = char::from(digit).to_digit(16)?;
    u8::try_from(value).ok()
}

fn push_literal(out: &mut String, octet: u8) {
    if must_encode(octet) {
        out.push_str(percent_encode_byte(octet));
    } else {
        out.push(char::from(octet));
    }
}

/// Octets that never appear verbatim in the normal form.
fn must_encode(octet: u8) -> bool {
    !octet.is_ascii_graphic() || b"%*$\"<>\\^`{|}".contains(&octet)
}

/// RFC 3986 section 2.3.
fn is_unreserved(octet: u8) -> bool {
    octet.is_ascii_alphanumeric() || b"-._~".contains(&octet)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        Pattern::new(pattern).matches(&request_path(path))
    }

    #[test]
    fn rfc_9309_encoding_table() {
        // Section 2.2.2: the path to match for each URI path.
        assert_eq!(request_path("/foo/bar?baz=quz"), "/foo/bar?baz=quz");
        assert_eq!(request_path("/foo/bar/\u{30C4}"), "/foo/bar/%E3%83%84");
        assert_eq!(request_path("/foo/bar/%E3%83%84"), "/foo/bar/%E3%83%84");
        assert_eq!(request_path("/foo/bar/%62%61%7A"), "/foo/bar/baz");
    }

    #[test]
    fn unreserved_escapes_decode_and_others_uppercase() {
        assert_eq!(normalise("/%7euser/%2d%5F%2e"), "/~user/-_.");
        assert_eq!(normalise("/a%2fb%3a"), "/a%2Fb%3A");
        assert_eq!(normalise("/100%"), "/100%25");
        assert_eq!(normalise("/%zz%4"), "/%25zz%254");
        assert_eq!(normalise("/%+1"), "/%25+1");
        assert_eq!(
            normalise("/a b\"<>{}|\\^`"),
            "/a%20b%22%3C%3E%7B%7D%7C%5C%5E%60"
        );
    }

    #[test]
    fn non_ascii_and_its_encoding_match_each_other() {
        assert!(matches("/café", "/caf%C3%A9"));
        assert!(matches("/caf%C3%A9", "/café"));
        assert!(matches("/caf%c3%a9", "/café/menu"));
        assert_eq!(
            Pattern::new("/café").octets(),
            Pattern::new("/caf%C3%A9").octets()
        );
        assert!(matches("/baz", "/%62%61%7A"));
        assert!(matches("/%62%61%7A", "/baz"));
    }

    #[test]
    fn reserved_escapes_stay_distinct() {
        assert!(!matches("/a/b", "/a%2Fb"));
        assert!(matches("/a%2fb", "/a%2Fb"));
        assert!(!matches("/a?x", "/a%3Fx"));
    }

    #[test]
    fn rfc_9309_special_characters() {
        // Section 2.2.3: `%2A` and `%24` in a pattern match a literal `*` and `$`.
        assert!(matches(
            "/path/file-with-a-%2A.html",
            "/path/file-with-a-*.html"
        ));
        assert!(!matches(
            "/path/file-with-a-%2A.html",
            "/path/file-with-a-x.html"
        ));
        assert!(matches("/path/foo-%24", "/path/foo-$"));
        // `$` other than last is literal.
        assert!(matches("/a$b", "/a$b"));
        assert!(matches("/a$$", "/a$"));
        assert!(!matches("/a$$", "/a$b"));
    }

    #[test]
    fn prefix_match_from_the_first_octet() {
        assert!(matches("/fish", "/fish"));
        assert!(matches("/fish", "/fish.html"));
        assert!(matches("/fish", "/fish/salmon.html"));
        assert!(matches("/fish", "/fishheads/yummy.html"));
        assert!(matches("/fish", "/fish.php?id=anything"));
        assert!(!matches("/fish", "/Fish.asp"));
        assert!(!matches("/fish", "/catfish"));
        assert!(!matches("/fish", "/?id=fish"));
        assert!(!matches("/fish", "/desert/fish"));
    }

    #[test]
    fn trailing_star_is_the_same_as_none() {
        for path in [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads/yummy.html",
        ] {
            assert!(matches("/fish*", path), "{path}");
        }
        for path in ["/Fish.bar", "/catfish", "/?id=fish"] {
            assert!(!matches("/fish*", path), "{path}");
        }
    }

    #[test]
    fn trailing_slash_matches_only_inside_the_folder() {
        assert!(matches("/fish/", "/fish/"));
        assert!(matches("/fish/", "/fish/?id=anything"));
        assert!(matches("/fish/", "/fish/salmon.htm"));
        assert!(!matches("/fish/", "/fish"));
        assert!(!matches("/fish/", "/fish.html"));
        assert!(!matches("/fish/", "/animals/fish/"));
        assert!(!matches("/fish/", "/Fish/Salmon.asp"));
    }

    #[test]
    fn star_and_dollar() {
        assert!(matches("/*.php", "/index.php"));
        assert!(matches("/*.php", "/folder/filename.php"));
        assert!(matches("/*.php", "/folder/filename.php?parameters"));
        assert!(matches("/*.php", "/folder/any.php.file.html"));
        assert!(matches("/*.php", "/filename.php/"));
        assert!(!matches("/*.php", "/"));
        assert!(!matches("/*.php", "/windows.PHP"));

        assert!(matches("/*.php$", "/filename.php"));
        assert!(matches("/*.php$", "/folder/filename.php"));
        assert!(!matches("/*.php$", "/filename.php?parameters"));
        assert!(!matches("/*.php$", "/filename.php/"));
        assert!(!matches("/*.php$", "/filename.php5"));
        assert!(!matches("/*.php$", "/windows.PHP"));

        assert!(matches("/fish*.php", "/fish.php"));
        assert!(matches("/fish*.php", "/fishheads/catfish.php?parameters"));
        assert!(!matches("/fish*.php", "/Fish.PHP"));

        assert!(matches("/$", "/"));
        assert!(!matches("/$", "/page"));
        assert!(!matches("/$", "/?x=1"));
    }

    #[test]
    fn several_stars() {
        assert!(matches("*.gif$", "/img/cat.gif"));
        assert!(matches(
            "/*/*/tree/master",
            "/google/robotstxt/tree/master/index.html"
        ));
        assert!(!matches("/*/*/tree/master", "/google/robotstxt/tree/abc"));
        assert!(matches("/a*b*c$", "/abxbc"));
        assert!(matches("/a*b*c$", "/a-b-b-c"));
        assert!(!matches("/a*b*c$", "/acb"));
        assert!(matches("/**x", "/yx"));
        // The anchored last piece must not reuse octets a middle piece consumed.
        assert!(!matches("/*ab*ba$", "/aba"));
    }

    #[test]
    fn the_empty_pattern_matches_nothing() {
        assert!(!Pattern::new("").matches("/"));
        assert!(Pattern::new("*").matches("/anything"));
    }

    #[test]
    fn octets_count_the_pattern_as_compared() {
        assert_eq!(Pattern::new("/fish").octets(), 5);
        assert_eq!(Pattern::new("/fish*").octets(), 6);
        assert_eq!(Pattern::new("/*.php$").octets(), 7);
        assert_eq!(Pattern::new("/%62").octets(), 2);
    }

    #[test]
    fn request_paths() {
        assert_eq!(request_path("https://example.com/a/b?x=1#top"), "/a/b?x=1");
        assert_eq!(request_path("https://example.com"), "/");
        assert_eq!(request_path("/a#frag"), "/a");
        assert_eq!(request_path(""), "/");
        assert_eq!(request_path("a/b"), "/a/b");
        assert_eq!(request_path("/a*b$"), "/a%2Ab%24");
    }
}
