//! Fuzzes the URL normaliser and escaper: `Loc::parse` and `write_url`.
//!
//! For any UTF-8 input and two bases (the root of a host, and a mount path), `Loc::parse` either
//! refuses it or gives a URL that is ASCII, at most 2,048 characters, under the base, a fixed
//! point of the normaliser, and that `write_url` writes so that an XML parser reads it back
//! unchanged. Run with `scripts/fuzz.sh [SECONDS]`.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use quick_xml::events::Event;
use quick_xml::Reader;
use sitemapd::config::BaseUrl;
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::{write_url, DocumentStyle, EntryRules, Loc, Namespaces, RawEntry};

const BASES: [&str; 2] = [
    "https://www.example.com/",
    "http://example.com:8080/catalog/",
];

fn rules() -> &'static [(BaseUrl, EntryRules); 2] {
    static RULES: OnceLock<[(BaseUrl, EntryRules); 2]> = OnceLock::new();
    RULES.get_or_init(|| {
        BASES.map(|b| {
            let base = BaseUrl::parse(b).expect("base");
            (base.clone(), EntryRules::new(base, None, vec![]))
        })
    })
}

/// Every `<loc>` text of a document, unescaped by quick-xml; panics if it is not well-formed.
fn read_locs(xml: &[u8]) -> Vec<String> {
    let mut reader = Reader::from_reader(xml);
    let mut out = Vec::new();
    let mut in_loc = false;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Err(e) => panic!(
                "not well-formed XML ({e}): {}",
                String::from_utf8_lossy(xml)
            ),
            Ok(Event::Start(e)) if e.local_name().as_ref() == b"loc" => in_loc = true,
            Ok(Event::End(e)) if e.local_name().as_ref() == b"loc" => in_loc = false,
            Ok(Event::Text(t)) if in_loc => out.push(
                t.unescape()
                    .unwrap_or_else(|e| {
                        panic!("bad entity ({e}): {}", String::from_utf8_lossy(xml))
                    })
                    .into_owned(),
            ),
            Ok(Event::Eof) => break,
            Ok(_) => {}
        }
        buf.clear();
    }
    out
}

fuzz_target!(|raw: &str| {
    for (base, rules) in rules() {
        let Ok(loc) = Loc::parse(raw, base) else {
            continue;
        };
        let s = loc.as_str();
        assert!(s.is_ascii(), "not ASCII: {s:?} from {raw:?}");
        assert!(
            s.len() <= MAX_LOC_CHARS,
            "{} chars: {s:?} from {raw:?}",
            s.len()
        );
        assert!(
            s.starts_with(base.as_str()),
            "not under {}: {s:?} from {raw:?}",
            base.as_str()
        );
        assert!(
            !s.bytes().any(|b| b.is_ascii_control() || b == b' '),
            "control or space in {s:?} from {raw:?}"
        );
        assert_eq!(
            Loc::parse(s, base).as_ref(),
            Ok(&loc),
            "not a fixed point: {s:?} from {raw:?}"
        );

        let entry = rules
            .accept(&RawEntry {
                id: 1,
                loc: Some(raw.to_string()),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("Loc::parse accepted {raw:?}, EntryRules refused: {e:?}"));
        let style = DocumentStyle::default();
        let mut doc = style.urlset_open(Namespaces::NONE);
        write_url(&mut doc, &entry);
        doc.extend_from_slice(style.urlset_close());
        assert_eq!(read_locs(&doc), [s], "XML round trip of {raw:?}");
    }
});
