//! Conditional requests (RFC 9110 §13) and content negotiation, as pure functions of headers.

use axum::http::header::{ACCEPT_ENCODING, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use axum::http::HeaderMap;

use crate::answer::Accepts;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Whether the client's copy is current: `If-None-Match` decides when present and well formed,
/// otherwise `If-Modified-Since`. Malformed headers are ignored, as RFC 9110 asks.
pub fn is_not_modified(headers: &HeaderMap, etag: &str, last_modified: i64) -> bool {
    let inm: Vec<&str> = headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if !inm.is_empty() {
        if let Some(tags) = parse_entity_tags(&inm.join(",")) {
            return tags.matches(etag);
        }
    }
    let Some(since) = headers.get(IF_MODIFIED_SINCE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    match httpdate::parse_http_date(since.trim()) {
        Ok(since) => unix_time(since) >= last_modified,
        Err(_) => false,
    }
}

enum EntityTags {
    Any,
    List(Vec<String>),
}

impl EntityTags {
    /// Weak comparison, which is what If-None-Match uses.
    fn matches(&self, etag: &str) -> bool {
        let ours = etag.trim_start_matches("W/");
        match self {
            Self::Any => true,
            Self::List(tags) => tags.iter().any(|t| t == ours),
        }
    }
}

/// `*` or a comma-separated list of `"opaque"` / `W/"opaque"`; `None` if malformed.
fn parse_entity_tags(value: &str) -> Option<EntityTags> {
    let value = value.trim();
    if value == "*" {
        return Some(EntityTags::Any);
    }
    let mut tags = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let tag = item.strip_prefix("W/").unwrap_or(item);
        let valid = tag.len() >= 2
            && tag.starts_with('"')
            && tag.ends_with('"')
            && !tag[1..tag.len() - 1].contains('"');
        if !valid {
            return None;
        }
        tags.push(tag.to_string());
    }
    (!tags.is_empty()).then_some(EntityTags::List(tags))
}

/// The coding to send a document in, from `Accept-Encoding` (RFC 9110 §12.5.3): brotli when
/// the client allows it and weighs it at least as much as gzip, else gzip when allowed, else the
/// bytes as they are. `*` stands for every coding the header does not name; `q=0` refuses one.
/// zstd is never chosen: crawlers do not ask for it, and every coding is one more form of each
/// page to render and cache.
pub fn preferred_coding(headers: &HeaderMap) -> Accepts {
    let weights = Weights::of(headers);
    let brotli = weights.brotli.or(weights.any).unwrap_or(0.0);
    let gzip = weights.gzip.or(weights.any).unwrap_or(0.0);
    if brotli > 0.0 && brotli >= gzip {
        Accepts::Brotli
    } else if gzip > 0.0 {
        Accepts::Gzip
    } else {
        Accepts::Identity
    }
}

/// The q-values `Accept-Encoding` gives the codings sitemapd can send (`None`: not named).
#[derive(Debug, Default)]
struct Weights {
    brotli: Option<f32>,
    gzip: Option<f32>,
    any: Option<f32>,
}

impl Weights {
    fn of(headers: &HeaderMap) -> Self {
        let mut weights = Self::default();
        let items = headers
            .get_all(ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|value| value.split(','));
        for item in items {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts.find_map(q_value).unwrap_or(1.0);
            match coding.as_str() {
                "br" => weights.brotli = Some(q),
                "gzip" | "x-gzip" => weights.gzip = Some(q),
                "*" => weights.any = Some(q),
                _ => {}
            }
        }
        weights
    }
}

/// The weight of a `q=` parameter; a malformed one counts as absent (weight 1).
fn q_value(parameter: &str) -> Option<f32> {
    let (name, value) = parameter.trim().split_once('=')?;
    if !name.trim().eq_ignore_ascii_case("q") {
        return None;
    }
    value
        .trim()
        .parse::<f32>()
        .ok()
        .filter(|q| (0.0..=1.0).contains(q))
}

pub fn http_date(unix: i64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64))
}

fn unix_time(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    const T: i64 = 1_714_564_800; // Wed, 01 May 2024 12:00:00 GMT

    #[test]
    fn if_none_match_wins_over_if_modified_since() {
        let h = headers(&[
            ("if-none-match", "\"old\""),
            ("if-modified-since", "Wed, 01 May 2024 12:00:00 GMT"),
        ]);
        assert!(!is_not_modified(&h, "\"new\"", T));
        let h = headers(&[("if-none-match", "\"a\", W/\"new\"")]);
        assert!(is_not_modified(&h, "\"new\"", T));
        assert!(is_not_modified(
            &headers(&[("if-none-match", "*")]),
            "\"x\"",
            T
        ));
    }

    #[test]
    fn if_modified_since_compares_seconds() {
        let h = headers(&[("if-modified-since", "Wed, 01 May 2024 12:00:00 GMT")]);
        assert!(is_not_modified(&h, "\"x\"", T));
        assert!(!is_not_modified(&h, "\"x\"", T + 1));
    }

    #[test]
    fn malformed_conditions_are_ignored() {
        let h = headers(&[
            ("if-none-match", "not-quoted"),
            ("if-modified-since", "Wed, 01 May 2024 12:00:00 GMT"),
        ]);
        assert!(
            is_not_modified(&h, "\"x\"", T),
            "falls back to If-Modified-Since"
        );
        assert!(!is_not_modified(
            &headers(&[("if-modified-since", "yesterday")]),
            "\"x\"",
            T
        ));
    }

    fn coding(accept_encoding: &'static str) -> Accepts {
        preferred_coding(&headers(&[("accept-encoding", accept_encoding)]))
    }

    #[test]
    fn brotli_wins_when_allowed_at_least_as_much_as_gzip() {
        assert_eq!(coding("gzip, deflate, br"), Accepts::Brotli);
        assert_eq!(coding("br"), Accepts::Brotli);
        assert_eq!(coding("gzip;q=0.5, br;q=0.5"), Accepts::Brotli);
        assert_eq!(coding("*"), Accepts::Brotli);
        assert_eq!(coding("BR;Q=0.1"), Accepts::Brotli);
    }

    #[test]
    fn q_values_can_prefer_or_refuse_a_coding() {
        assert_eq!(coding("gzip;q=1, br;q=0.5"), Accepts::Gzip);
        assert_eq!(coding("gzip, br;q=0"), Accepts::Gzip);
        assert_eq!(coding("*, br;q=0"), Accepts::Gzip);
        assert_eq!(coding("gzip;q=0, br"), Accepts::Brotli);
        assert_eq!(coding("*, gzip;q=0, br;q=0"), Accepts::Identity);
        assert_eq!(coding("br;q=0"), Accepts::Identity);
        assert_eq!(coding("deflate, zstd"), Accepts::Identity);
        assert_eq!(coding("identity"), Accepts::Identity);
        assert_eq!(preferred_coding(&HeaderMap::new()), Accepts::Identity);
    }

    #[test]
    fn gzip_alone_is_gzip_as_before() {
        assert_eq!(coding("gzip"), Accepts::Gzip);
        assert_eq!(coding("x-gzip, deflate"), Accepts::Gzip);
        assert_eq!(coding("gzip;q=0.8"), Accepts::Gzip);
    }

    #[test]
    fn several_headers_count_together_and_bad_weights_count_as_one() {
        let h = headers(&[("accept-encoding", "gzip"), ("accept-encoding", "br;q=0.2")]);
        assert_eq!(preferred_coding(&h), Accepts::Gzip);
        assert_eq!(coding("gzip;q=0.5, br;q=abc"), Accepts::Brotli);
        assert_eq!(coding("gzip;q=0.5, br;q=7"), Accepts::Brotli);
    }

    #[test]
    fn dates_are_imf_fixdate() {
        assert_eq!(http_date(T), "Wed, 01 May 2024 12:00:00 GMT");
    }
}
