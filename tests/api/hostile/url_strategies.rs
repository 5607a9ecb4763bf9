//! Generators of URL-like text: locs (in scope or not, of exactly the boundary length),
//! hreflangs and extension URLs, from fragments known to be trouble.

use proptest::prelude::*;
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::Loc;

use super::base;
use crate::helpers::BASE;

/// Fragments that are known to be trouble for URL parsers, XML or both.
pub(super) const NASTY: &[&str] = &[
    "&",
    "<",
    ">",
    "'",
    "\"",
    "%",
    "%2",
    "%41",
    "%zz",
    "%%",
    "%00",
    "%2e%2e",
    "%2F",
    " ",
    "\t",
    "\n",
    "\r",
    "\u{0}",
    "\u{1}",
    "\u{8}",
    "\u{b}",
    "\u{c}",
    "\u{1b}",
    "\u{1f}",
    "\u{7f}",
    "\u{80}",
    "\u{85}",
    "\u{9f}",
    "\u{a0}",
    "\u{200b}",
    "\u{2028}",
    "\u{feff}",
    "\u{d7ff}",
    "\u{e000}",
    "\u{fffd}",
    "\u{fffe}",
    "\u{ffff}",
    "\u{10000}",
    "\u{10ffff}",
    "é",
    "日本語",
    "😀",
    "İ",
    "ß",
    "#",
    "##",
    "?",
    "??",
    "/",
    "//",
    ".",
    "..",
    "/../",
    "/./",
    "[",
    "]",
    "|",
    "^",
    "{",
    "}",
    "`",
    "\\",
    "@",
    ":",
    ";",
    "=",
    "+",
    "$",
    ",",
    "!",
    "*",
    "(",
    ")",
    "~",
    "&amp;",
    "&#0;",
    "&#x1;",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<?",
    "?>",
    "\u{301}",
];

/// Starts of URLs: in scope, out of scope, other schemes, relative, tricky authorities.
pub(super) const PREFIXES: &[&str] = &[
    "",
    "/",
    "https://www.example.com/",
    "https://www.example.com",
    "https://www.example.com?",
    "https://www.example.com#",
    "HTTPS://WWW.EXAMPLE.COM/",
    "https://www.EXAMPLE.com/",
    "https://www.example.com:443/",
    "https://www.example.com:8443/",
    "https://www.example.com:/",
    "http://www.example.com/",
    "https://other.example.com/",
    "https://example.com/",
    "https://www.example.com.evil.com/",
    "https://www.example.com./",
    "https://user:pw@www.example.com/",
    "https://@www.example.com/",
    "https://www.example.com@evil.com/",
    "https://www.example.com\\@evil.com/",
    "https:www.example.com/",
    "https:/www.example.com/",
    "//www.example.com/",
    "//evil.com/",
    "/\\evil.com/",
    "\\\\evil.com/",
    "javascript:",
    "javascript:alert(1)//https://www.example.com/",
    "JavaScript://www.example.com/%0aalert(1)",
    "data:text/html,",
    "mailto:",
    "ftp://www.example.com/",
    "file:///",
    "ws://www.example.com/",
    "https://www.exämple.com/",
    "https://xn--www.example.com/",
    "https://[::1]/",
    "https://127.0.0.1/",
    "   ",
    "\t/",
    " https://www.example.com/",
    "relative/",
    "./",
    "../",
    "?q=",
    "#frag",
];

pub(super) fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9_.-]{1,10}",
        4 => prop::sample::select(NASTY).prop_map(String::from),
        2 => any::<char>().prop_map(String::from),
    ]
}

pub(super) fn pieces() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|v| v.concat())
}

/// A string of exactly `target` characters once encoded (2,048 fits, 2,049 does not), built
/// with encodable characters so the encoded length is not the raw length.
pub(super) fn exact_length() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![
            "/",
            "https://www.example.com/",
            "HTTPS://www.example.com:443/",
        ]),
        "[a-zé &<>'\"%|^日😀]{0,40}",
        prop::sample::select(vec![MAX_LOC_CHARS, MAX_LOC_CHARS + 1]),
    )
        .prop_map(|(prefix, middle, target)| {
            // 'z' is no hex digit, so the padding never completes a `%XX` escape.
            let start = format!("{prefix}{middle}z");
            let encoded = Loc::parse(&start, &base())
                .expect("the exact-length generator only uses in-scope, encodable text")
                .as_str()
                .len();
            format!("{start}{}", "z".repeat(target.saturating_sub(encoded)))
        })
}

pub(super) fn loc_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (prop::sample::select(PREFIXES), pieces()).prop_map(|(p, s)| format!("{p}{s}")),
        2 => any::<String>(),
        2 => any::<String>().prop_map(|s| format!("/{s}")),
        2 => any::<String>().prop_map(|s| format!("{BASE}{s}")),
        2 => exact_length(),
        1 => (1usize..3000).prop_map(|n| format!("{BASE}{}", "é".repeat(n / 6))),
    ]
}

/// Language tags: valid, valid but odd (case, spaces, private use), near misses, and junk.
pub(super) fn hreflang_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "fr", "en", "en-GB", "en-gb", "EN-GB", "de-CH-1901", "zh-Hant", "zh-Hant-TW", "es-419",
            "sr-Latn-RS", "x-default", "X-Default", "haw", "fr", "FR", " fr", "fr ", "\tfr\n",
            "\u{a0}fr\u{3000}", "\u{85}de",
        ])
        .prop_map(String::from),
        3 => "[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8}){0,3}",
        3 => prop::sample::select(vec![
            "", " ", "f", "english", "en_GB", "en-", "-en", "en--GB", "fr-toolongsubtag", "e1",
            "123", "fr\"x", "fr<", "fr&amp;", "fr'", "x-defaults", "x-default-", "xx-default",
            "i-klingon", "x-klingon", "fr\u{0}", "\u{0}fr", "f\u{0}r", "én", "ﬀ", "İt", "fr\u{301}",
            "ｆｒ", "fr\u{200b}", "fr\u{feff}", "d\u{1}e", "en-GB-", "a-b", "abcd",
        ])
        .prop_map(String::from),
        1 => pieces(),
        1 => any::<String>(),
    ]
}

/// Starts of alternate and image URLs, which may be on any http(s) host: other hosts fine and
/// hostile, hosts with characters RFC 3986 does not allow in a host, credentials, odd ports.
pub(super) const OTHER_HOSTS: &[&str] = &[
    "https://www.example.fr/",
    "http://cdn.example.net/",
    "HTTPS://CDN.EXAMPLE.NET/",
    "https://cdn.example.net:8443/",
    "https://cdn.example.net:99999/",
    "https://cdn.example.net:0/",
    "https://[::1]:8080/",
    "https://[::ffff:127.0.0.1]/",
    "https://127.1/",
    "https://0x7f.0.0.1/",
    "https://bücher.example/",
    "https://xn--bcher-kva.example/",
    "https://xn--/",
    "https://ex%41mple.com/",
    "https://a{b}.example/",
    "https://a\"b.example/",
    "https://a`b.example/",
    "https://a'b.example/",
    "https://a!$&()*+,;=.example/",
    "https://a~b_c.example/",
    "https://a..b.example/",
    "https://.example/",
    "https://user@cdn.example.net/",
    "https://:pw@cdn.example.net/",
    "https://cdn.example.net\\x.jpg",
    "http:/cdn.example.net/",
    "https:///cdn.example.net/",
    "ftp://cdn.example.net/",
    "data:image/png;base64,",
    "//cdn.example.net/",
];

/// A URL of exactly `target` characters once encoded on another host (2,048 fits, 2,049 not).
pub(super) fn exact_length_anywhere() -> impl Strategy<Value = String> {
    (
        "[a-zé &<>'\"%|^日😀]{0,40}",
        prop::sample::select(vec![MAX_LOC_CHARS, MAX_LOC_CHARS + 1]),
    )
        .prop_map(|(middle, target)| {
            let start = format!("https://cdn.example.net/{middle}z");
            let encoded = Loc::parse_anywhere(&start, &base())
                .expect("the exact-length generator only uses encodable text")
                .as_str()
                .len();
            format!("{start}{}", "z".repeat(target.saturating_sub(encoded)))
        })
}

pub(super) fn href_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "(https://www\\.example\\.(fr|de)|http://cdn\\.example\\.net|)/[a-z0-9/._-]{0,30}",
        4 => (prop::sample::select(OTHER_HOSTS), pieces()).prop_map(|(p, s)| format!("{p}{s}")),
        4 => loc_strategy(),
        1 => exact_length_anywhere(),
    ]
}
