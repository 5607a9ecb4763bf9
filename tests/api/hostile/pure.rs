//! The pure property: any string through `Loc::parse` and `write_url`, no database.

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::{write_url, DocumentStyle, Loc, Namespaces, RawEntry, SkipReason};

use super::row_strategies::utc;
use super::url_strategies::{exact_length, loc_strategy, pieces, NASTY, PREFIXES};
use super::{base, oracle};
use crate::helpers::*;

/// What must hold for any input string; `Err` describes the violation.
fn check_loc(raw: &str) -> Result<(), String> {
    let base = base();
    let loc = match Loc::parse(raw, &base) {
        Err(_) => return Ok(()),
        Ok(loc) => loc,
    };
    let s = loc.as_str();
    if !s.is_ascii() {
        return Err(format!("not ASCII: {s:?}"));
    }
    if s.len() > MAX_LOC_CHARS {
        return Err(format!("{} chars: {s:?}", s.len()));
    }
    if !s.starts_with(BASE) {
        return Err(format!("not under the base: {s:?}"));
    }
    if s.chars().any(|c| c.is_ascii_control() || c == ' ') {
        return Err(format!("control or space left in: {s:?}"));
    }
    let url = url::Url::parse(s).map_err(|e| format!("does not parse back ({e}): {s:?}"))?;
    if url.scheme() != "https"
        || url.host_str() != Some("www.example.com")
        || url.port().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(format!("parses back out of scope: {s:?}"));
    }
    // A served URL is a fixed point: normalising it again changes nothing.
    match Loc::parse(s, &base) {
        Ok(again) if again == loc => {}
        other => return Err(format!("not a fixed point: {s:?} -> {other:?}")),
    }
    // Written as XML and read back by a real parser, the text is the URL itself.
    let entry = oracle()
        .accept(&RawEntry {
            id: 1,
            loc: Some(raw.to_string()),
            ..Default::default()
        })
        .map_err(|e| format!("Loc::parse accepted but EntryRules refused: {e:?}"))?;
    let style = DocumentStyle::default();
    let mut doc = style.urlset_open(Namespaces::NONE);
    write_url(&mut doc, &entry);
    doc.extend_from_slice(style.urlset_close());
    let read = std::panic::catch_unwind(|| locs(&doc))
        .map_err(|_| format!("not well-formed XML: {}", String::from_utf8_lossy(&doc)))?;
    if read != [s] {
        return Err(format!("XML round trip gave {read:?} for {s:?}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_string_is_refused_or_becomes_a_safe_absolute_loc(
        raw in prop_oneof![
            loc_strategy(),
            // NUL and friends can reach Loc::parse from SQLite or a view even if not from TEXT.
            (pieces(), pieces()).prop_map(|(a, b)| format!("/{a}\u{0}{b}")),
        ]
    ) {
        check_loc(&raw).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn the_boundary_lengths_are_exactly_in_and_out() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&exact_length(), |raw| {
            match Loc::parse(&raw, &base()) {
                Ok(loc) => prop_assert_eq!(loc.as_str().len(), MAX_LOC_CHARS, "{:?}", raw),
                Err(reason) => prop_assert_eq!(reason, SkipReason::TooLong, "{:?}", raw),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn known_hostile_locs_hold_the_properties() {
    for raw in NASTY.iter().chain(PREFIXES) {
        for candidate in [
            raw.to_string(),
            format!("/{raw}"),
            format!("{BASE}{raw}"),
            format!("{raw}/x"),
        ] {
            if let Err(e) = check_loc(&candidate) {
                panic!("{candidate:?}: {e}");
            }
        }
    }
}

/// Found by the served property (`served.rs`): PostgreSQL holds years before 1 AD (`0001-06-15
/// BC` is year 0 in chrono's proleptic calendar), and `0000` is no year in XSD 1.0, so the tag
/// must go.
#[test]
fn a_lastmod_in_1_bc_is_dropped_not_written_as_year_0000() {
    for at in [
        utc(0, 6, 15, 12, 0, 0),
        utc(0, 1, 1, 0, 0, 0),
        utc(0, 12, 31, 23, 59, 59),
    ] {
        let entry = oracle()
            .accept(&RawEntry {
                id: 1,
                loc: Some("/a".into()),
                lastmod: Some(at),
                ..Default::default()
            })
            .unwrap();
        let mut element = Vec::new();
        write_url(&mut element, &entry);
        let element = String::from_utf8(element).unwrap();
        assert!(
            !element.contains("<lastmod>0000-"),
            "{at:?} is written as {element}"
        );
    }
    let first_ad = oracle()
        .accept(&RawEntry {
            id: 1,
            loc: Some("/a".into()),
            lastmod: Some(utc(1, 1, 1, 0, 0, 0)),
            ..Default::default()
        })
        .unwrap();
    assert!(
        first_ad.lastmod.is_some(),
        "year 1 is a valid xsd:dateTime year"
    );
}
