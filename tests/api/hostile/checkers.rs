//! The test's own checkers of a served urlset, written without the library: framing and
//! declared namespaces, the `<loc>`s and extension URLs, the optional tags, xmllint's culprits.

use std::collections::HashSet;

use chrono::{Datelike, Utc};
use sitemapd::sitemap::entry::FUTURE_LASTMOD_ALLOWANCE_SECS;
use sitemapd::sitemap::loc::MAX_LOC_CHARS;
use sitemapd::sitemap::writer::{IMAGE_NS, SITEMAP_NS, XHTML_NS};
use sitemapd::sitemap::{DocumentStyle, Namespaces};

use super::model::Stored;

/// The `<url>` elements of one urlset as served, and the extension namespaces its root
/// declares, which must be exactly those its elements use.
pub(super) fn body_of(xml: &[u8]) -> Result<(&[u8], Namespaces), String> {
    let style = DocumentStyle::default();
    let close = style.urlset_close();
    let framing = || {
        format!(
            "unexpected framing: {}",
            String::from_utf8_lossy(&xml[..xml.len().min(400)])
        )
    };
    for declared in [
        Namespaces::NONE,
        Namespaces::XHTML,
        Namespaces::IMAGE,
        Namespaces::XHTML.union(Namespaces::IMAGE),
    ] {
        let open = style.urlset_open(declared);
        if xml.starts_with(&open) && xml.ends_with(close) {
            let body = &xml[open.len()..xml.len() - close.len()];
            // Text is escaped, so `<` starts an element: these are the extension elements.
            let contains = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
            let used = Namespaces {
                xhtml: contains(b"<xhtml:link "),
                image: contains(b"<image:image>"),
                ..Namespaces::NONE
            };
            if used != declared {
                return Err(format!(
                    "the root declares {declared:?} but the file uses {used:?}"
                ));
            }
            return Ok((body, declared));
        }
    }
    Err(framing())
}

/// The `<loc>` of each `<url>` (sitemap namespace only, not `image:loc`), read with a
/// namespace-aware parser, and the extension values, checked without the library: per `<url>`
/// no hreflang twice, every href and image URL absolute http(s) on some host, no credentials,
/// ASCII from RFC 3986's characters only, at most 2,048 characters.
pub(super) fn read_urlset(xml: &[u8]) -> Result<Vec<String>, String> {
    use quick_xml::events::Event;
    use quick_xml::name::{Namespace, ResolveResult};
    let mut reader = quick_xml::NsReader::from_reader(xml);
    let mut buf = Vec::new();
    let mut locs = Vec::new();
    let mut hreflangs = HashSet::new();
    let mut text_of: Option<&'static str> = None;
    loop {
        let (ns, event) = reader
            .read_resolved_event_into(&mut buf)
            .map_err(|e| format!("not well-formed: {e}"))?;
        let ns = match ns {
            ResolveResult::Bound(Namespace(ns)) => ns.to_vec(),
            _ => Vec::new(),
        };
        let ns = String::from_utf8_lossy(&ns).into_owned();
        match event {
            Event::Start(e) | Event::Empty(e) => {
                let local = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                match (ns.as_str(), local.as_str()) {
                    (SITEMAP_NS, "url") => hreflangs.clear(),
                    (SITEMAP_NS, "loc") => text_of = Some("loc"),
                    (IMAGE_NS, "loc") => text_of = Some("image"),
                    (XHTML_NS, "link") => {
                        let attribute = |name: &[u8]| {
                            e.try_get_attribute(name)
                                .ok()
                                .flatten()
                                .map(|a| a.unescape_value().unwrap().into_owned())
                        };
                        let hreflang = attribute(b"hreflang").unwrap_or_default();
                        if !hreflangs.insert(hreflang.clone()) {
                            return Err(format!("hreflang {hreflang:?} twice in one <url>"));
                        }
                        if attribute(b"rel").as_deref() != Some("alternate") {
                            return Err("an xhtml:link without rel=\"alternate\"".into());
                        }
                        web_url(&attribute(b"href").unwrap_or_default())?;
                    }
                    _ => {}
                }
            }
            Event::Text(t) => {
                let text = t.unescape().map_err(|e| e.to_string())?.into_owned();
                match text_of.take() {
                    Some("loc") => locs.push(text),
                    Some(_) => web_url(&text)?,
                    None => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(locs)
}

/// An absolute http(s) URL with a host and no credentials, RFC 3986 characters only.
pub(super) fn web_url(value: &str) -> Result<(), String> {
    let rfc3986 = |b: u8| b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b);
    if value.len() > MAX_LOC_CHARS || !value.bytes().all(rfc3986) {
        return Err(format!(
            "not an RFC 3986 URL of at most 2,048 characters: {value:?}"
        ));
    }
    let url = url::Url::parse(value).map_err(|e| format!("{value:?}: {e}"))?;
    let host = url.host_str().unwrap_or("");
    if !matches!(url.scheme(), "http" | "https")
        || host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=[]:%".contains(&b))
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(format!("not a web URL: {value:?}"));
    }
    Ok(())
}

/// The optional tags of one `<url>`, checked without the library: a lastmod in years 1 to 9999 as
/// chrono writes RFC 3339 with seconds, a changefreq from the protocol's list in any case, a
/// priority from 0 to 1 to four decimals; anything else leaves the tag out.
pub(super) fn tags_as_the_protocol_says(row: &Stored, element: &str) -> Result<(), String> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        element.find(&open).map(|i| {
            let rest = &element[i + open.len()..];
            rest[..rest.find(&close).unwrap_or(rest.len())].to_string()
        })
    };
    // A lastmod in the future (past the allowance for clock skew) is left out.
    let latest = Utc::now().timestamp() + FUTURE_LASTMOD_ALLOWANCE_SECS;
    let lastmod = row
        .meant
        .filter(|at| (1..=9999).contains(&at.year()) && at.timestamp() <= latest)
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, false));
    if tag("lastmod") != lastmod {
        return Err(format!(
            "lastmod {:?} for {row:?} in {element}",
            tag("lastmod")
        ));
    }
    let valid = [
        "always", "hourly", "daily", "weekly", "monthly", "yearly", "never",
    ];
    let changefreq = row
        .changefreq
        .as_deref()
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| valid.contains(&c.as_str()));
    if tag("changefreq") != changefreq {
        return Err(format!(
            "changefreq {:?} for {row:?} in {element}",
            tag("changefreq")
        ));
    }
    let priority = row.priority.filter(|p| (0.0..=1.0).contains(p));
    match (tag("priority"), priority) {
        (None, None) => {}
        (Some(text), Some(p))
            if text
                .parse::<f64>()
                .is_ok_and(|v| (v - p).abs() <= 0.00005 + 1e-9)
                && !text.contains(['e', 'E', '-', '+'])
                && text.contains('.') => {}
        (text, _) => return Err(format!("priority {text:?} for {row:?} in {element}")),
    }
    Ok(())
}

/// The lines xmllint names, and the rows they were written from: the failing input, exactly.
pub(super) fn culprits(errors: &str, xml: &[u8], written: &[(Vec<u8>, String)]) -> String {
    let text = String::from_utf8_lossy(xml);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for no in errors
        .lines()
        .filter_map(|l| l.split(':').nth(1)?.parse::<usize>().ok())
    {
        let Some(line) = lines.get(no.wrapping_sub(1)) else {
            continue;
        };
        out.push_str(&format!("\nline {no}: {line}"));
        for (element, from) in written {
            if element == format!("{line}\n").as_bytes() {
                out.push_str(&format!("\n  written from {from}"));
            }
        }
    }
    out
}
