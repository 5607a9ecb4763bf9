//! Conditional requests (RFC 9110 §13) and content negotiation, as pure functions of headers.

use axum::http::header::{ACCEPT_ENCODING, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use axum::http::HeaderMap;
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

/// Whether `Accept-Encoding` allows gzip (q > 0 for `gzip`, or for `*` when gzip is unnamed).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip = None;
    let mut any = None;
    for value in headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
    {
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .or_else(|| p.trim().strip_prefix("Q="))
                })
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            match coding.as_str() {
                "gzip" | "x-gzip" => gzip = Some(q > 0.0),
                "*" => any = Some(q > 0.0),
                _ => {}
            }
        }
    }
    gzip.or(any).unwrap_or(false)
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

    #[test]
    fn gzip_negotiation_honours_q_values() {
        assert!(accepts_gzip(&headers(&[(
            "accept-encoding",
            "gzip, deflate, br"
        )])));
        assert!(!accepts_gzip(&headers(&[(
            "accept-encoding",
            "gzip;q=0, br"
        )])));
        assert!(accepts_gzip(&headers(&[("accept-encoding", "*")])));
        assert!(!accepts_gzip(&headers(&[(
            "accept-encoding",
            "*, gzip;q=0"
        )])));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn dates_are_imf_fixdate() {
        assert_eq!(http_date(T), "Wed, 01 May 2024 12:00:00 GMT");
    }
}
