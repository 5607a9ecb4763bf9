//! Published crawler IP ranges: parsing the operators' JSON lists, a set of prefixes answering
//! "is this address in it" by binary search, and the state of each list (the one in use, when
//! it was fetched, the last fetch's error). Fetching and storing are in [`super::fetch`].

use std::net::IpAddr;

use ipnet::IpNet;

/// Why a range list cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0:?} is not a CIDR prefix")]
    Prefix(String),
    #[error("no \"prefixes\" list of ipv4Prefix / ipv6Prefix entries")]
    Shape,
    #[error("the list holds no prefix")]
    Empty,
}

/// Keys under which the operators' lists name a prefix: Google, Bing, Apple, OpenAI and
/// Perplexity write `ipv4Prefix` / `ipv6Prefix`; AWS-style lists `ip_prefix` / `ipv6_prefix`.
const PREFIX_KEYS: [&str; 6] = [
    "ipv4Prefix",
    "ipv6Prefix",
    "ip_prefix",
    "ipv6_prefix",
    "prefix",
    "cidr",
];

/// The prefixes of a published list: `{"creationTime": …, "prefixes": [{"ipv4Prefix": …},
/// {"ipv6Prefix": …}]}` as the operators publish it, or a bare JSON array of such objects or of
/// CIDR strings. A bad prefix fails the whole list (a list half understood is not trusted); an
/// empty list is an error too.
pub fn parse_list(body: &[u8]) -> Result<Vec<IpNet>, ParseError> {
    let value: serde_json::Value = serde_json::from_slice(body)?;
    let items = match &value {
        serde_json::Value::Array(items) => items,
        serde_json::Value::Object(map) => match map.get("prefixes") {
            Some(serde_json::Value::Array(items)) => items,
            _ => return Err(ParseError::Shape),
        },
        _ => return Err(ParseError::Shape),
    };
    let mut prefixes = Vec::with_capacity(items.len());
    for item in items {
        let text = match item {
            serde_json::Value::String(text) => Some(text.as_str()),
            serde_json::Value::Object(map) => PREFIX_KEYS
                .iter()
                .find_map(|key| map.get(*key).and_then(serde_json::Value::as_str)),
            _ => None,
        };
        let Some(text) = text else {
            return Err(ParseError::Shape);
        };
        prefixes.push(parse_prefix(text)?);
    }
    if prefixes.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(prefixes)
}

/// A CIDR, or a bare address (a /32 or /128).
pub fn parse_prefix(text: &str) -> Result<IpNet, ParseError> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map(|net| net.trunc())
        .map_err(|_| ParseError::Prefix(text.to_string()))
}

/// Prefixes as stored: one CIDR per line.
pub fn to_text(prefixes: &[IpNet]) -> String {
    let lines: Vec<String> = prefixes.iter().map(IpNet::to_string).collect();
    lines.join("\n")
}

/// Prefixes from their stored text.
pub fn from_text(text: &str) -> Result<Vec<IpNet>, ParseError> {
    let prefixes = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(parse_prefix)
        .collect::<Result<Vec<_>, _>>()?;
    match prefixes.is_empty() {
        true => Err(ParseError::Empty),
        false => Ok(prefixes),
    }
}

/// A set of prefixes as sorted, merged intervals per address family: membership is one binary
/// search, whatever the list's size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
    prefixes: usize,
}

impl RangeSet {
    pub fn new(prefixes: &[IpNet]) -> Self {
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for net in prefixes {
            match net {
                IpNet::V4(net) => v4.push((u32::from(net.network()), u32::from(net.broadcast()))),
                IpNet::V6(net) => v6.push((u128::from(net.network()), u128::from(net.broadcast()))),
            }
        }
        Self {
            v4: merged(v4),
            v6: merged(v6),
            prefixes: prefixes.len(),
        }
    }

    /// How many prefixes the list held.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    pub fn is_empty(&self) -> bool {
        self.prefixes == 0
    }

    /// Whether `addr` (an IPv4-mapped IPv6 address counts as IPv4) is in a prefix.
    pub fn contains(&self, addr: IpAddr) -> bool {
        match addr.to_canonical() {
            IpAddr::V4(addr) => inside(&self.v4, u32::from(addr)),
            IpAddr::V6(addr) => inside(&self.v6, u128::from(addr)),
        }
    }
}

fn merged<T: Ord + Copy + num_like::Successor>(mut ranges: Vec<(T, T)>) -> Vec<(T, T)> {
    ranges.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last.1.successor() => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

fn inside<T: Ord + Copy>(ranges: &[(T, T)], addr: T) -> bool {
    let after = ranges.partition_point(|(start, _)| *start <= addr);
    after > 0 && addr <= ranges[after - 1].1
}

mod num_like {
    /// The next value, saturating (intervals that touch merge).
    pub trait Successor {
        fn successor(self) -> Self;
    }
    impl Successor for u32 {
        fn successor(self) -> Self {
            self.saturating_add(1)
        }
    }
    impl Successor for u128 {
        fn successor(self) -> Self {
            self.saturating_add(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOGLE: &str = r#"{
      "creationTime": "2026-11-20T14:46:04.000000",
      "prefixes": [
        {"ipv6Prefix": "2001:4860:4801:10::/64"},
        {"ipv4Prefix": "66.249.64.0/27"},
        {"ipv4Prefix": "66.249.64.32/27"}
      ]
    }"#;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_operators_format_parses() {
        let prefixes = parse_list(GOOGLE.as_bytes()).unwrap();
        assert_eq!(prefixes.len(), 3);
        let set = RangeSet::new(&prefixes);
        assert_eq!(set.len(), 3);
        assert!(set.contains(ip("66.249.64.0")));
        assert!(set.contains(ip("66.249.64.63")));
        assert!(!set.contains(ip("66.249.64.64")));
        assert!(!set.contains(ip("66.249.63.255")));
        assert!(set.contains(ip("2001:4860:4801:10::1")));
        assert!(!set.contains(ip("2001:4860:4801:11::1")));
        assert!(
            set.contains(ip("::ffff:66.249.64.5")),
            "an IPv4-mapped address is IPv4"
        );
    }

    #[test]
    fn variants_are_accepted() {
        let aws = r#"{"prefixes": [{"ip_prefix": "3.0.0.0/15"}], "ipv6_prefixes": []}"#;
        assert_eq!(parse_list(aws.as_bytes()).unwrap().len(), 1);
        let bare = r#"["10.0.0.0/8", "192.0.2.7"]"#;
        let set = RangeSet::new(&parse_list(bare.as_bytes()).unwrap());
        assert!(set.contains(ip("192.0.2.7")) && !set.contains(ip("192.0.2.8")));
        let host_bits = r#"{"prefixes": [{"ipv4Prefix": "198.51.100.7/24"}]}"#;
        let set = RangeSet::new(&parse_list(host_bits.as_bytes()).unwrap());
        assert!(set.contains(ip("198.51.100.200")));
    }

    #[test]
    fn bad_or_empty_lists_are_errors() {
        assert!(matches!(parse_list(b"<html>"), Err(ParseError::Json(_))));
        assert!(matches!(
            parse_list(b"{\"prefixes\": []}"),
            Err(ParseError::Empty)
        ));
        assert!(matches!(
            parse_list(b"{\"items\": []}"),
            Err(ParseError::Shape)
        ));
        let bad = br#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/33"}]}"#;
        assert!(matches!(parse_list(bad), Err(ParseError::Prefix(_))));
        assert!(matches!(
            parse_list(br#"{"prefixes": [{"x": 1}]}"#),
            Err(ParseError::Shape)
        ));
    }

    #[test]
    fn stored_text_round_trips() {
        let prefixes = parse_list(GOOGLE.as_bytes()).unwrap();
        assert_eq!(from_text(&to_text(&prefixes)).unwrap(), prefixes);
        assert!(from_text("").is_err());
    }

    #[test]
    fn overlapping_and_touching_prefixes_merge() {
        let prefixes: Vec<IpNet> = ["10.0.0.0/25", "10.0.0.128/25", "10.0.0.0/24", "10.0.2.0/24"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        let set = RangeSet::new(&prefixes);
        assert_eq!(set.v4.len(), 2);
        assert!(set.contains(ip("10.0.0.255")));
        assert!(!set.contains(ip("10.0.1.0")));
        assert!(set.contains(ip("10.0.2.9")));
    }

    #[test]
    fn thousands_of_prefixes_answer() {
        let prefixes: Vec<IpNet> = (0..5000u32)
            .map(|i| IpNet::from(IpAddr::from((0x0a00_0000 + i * 4).to_be_bytes())))
            .collect();
        let set = RangeSet::new(&prefixes);
        assert!(set.contains(ip("10.0.0.4")));
        assert!(!set.contains(ip("10.0.0.5")));
    }
}
