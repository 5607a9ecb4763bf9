//! The client address of a request: the TCP peer, unless the peer is a trusted proxy
//! (`TRUSTED_PROXIES`), then the address the proxy passes in `Forwarded` (RFC 7239), else
//! `X-Forwarded-For`, else `X-Real-IP`. An untrusted peer's headers change nothing. Only
//! crawler verification reads it; it is never stored.
//!
//! Reading it allocates nothing: header values are parsed in place.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The address a request came from, as the server saw the connection: put in each request's
/// extensions by [`crate::http::server`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub SocketAddr);

/// The client address of a request from `peer` carrying `headers`, given the trusted proxies.
/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are taken as the IPv4 address they map.
pub fn client_addr(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = canonical(peer);
    if !is_trusted(peer, trusted) {
        return peer;
    }
    forwarded(headers, trusted)
        .or_else(|| x_forwarded_for(headers, trusted))
        .or_else(|| x_real_ip(headers))
        .unwrap_or(peer)
}

/// `addr`, with an IPv4-mapped IPv6 address as the IPv4 address it maps.
pub fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn is_trusted(addr: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|net| net.contains(&addr))
}

/// The client among a header's hops, given from the rightmost (the proxy nearest us) to the
/// leftmost (the first client): the rightmost hop that is not a trusted proxy, or the leftmost
/// when all are. A hop that is not an address (`unknown`, an obfuscated id, garbage) hides
/// everything left of it, so it ends the walk with no answer. `None` also when there are no hops.
fn pick(right_to_left: impl Iterator<Item = Option<IpAddr>>, trusted: &[IpNet]) -> Option<IpAddr> {
    let mut leftmost = None;
    for hop in right_to_left {
        let addr = canonical(hop?);
        if !is_trusted(addr, trusted) {
            return Some(addr);
        }
        leftmost = Some(addr);
    }
    leftmost
}

/// The elements of every line of header `name`, from the rightmost to the leftmost (header
/// lines are one comma-separated list, in order: RFC 9110 §5.3).
fn elements_from_the_right<'h>(
    headers: &'h HeaderMap,
    name: &'static str,
) -> impl Iterator<Item = &'h str> + 'h {
    headers
        .get_all(name)
        .iter()
        .rev()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.rsplit(','))
        .map(str::trim)
        .filter(|element| !element.is_empty())
}

/// RFC 7239: the `for=` parameter of each element. Elements without one are skipped (they say
/// nothing of the client); `for=unknown` and obfuscated ids (`for=_hidden`) are not addresses.
fn forwarded(headers: &HeaderMap, trusted: &[IpNet]) -> Option<IpAddr> {
    let hops = elements_from_the_right(headers, "forwarded")
        .filter_map(for_param)
        .map(node_addr);
    pick(hops, trusted)
}

/// An element's `for=` value, unquoted.
fn for_param(element: &str) -> Option<&str> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        if !key.trim().eq_ignore_ascii_case("for") {
            return None;
        }
        let value = value.trim();
        Some(
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value),
        )
    })
}

fn x_forwarded_for(headers: &HeaderMap, trusted: &[IpNet]) -> Option<IpAddr> {
    pick(
        elements_from_the_right(headers, "x-forwarded-for").map(node_addr),
        trusted,
    )
}

fn x_real_ip(headers: &HeaderMap) -> Option<IpAddr> {
    let value = headers.get("x-real-ip")?.to_str().ok()?;
    node_addr(value.trim()).map(canonical)
}

/// A node as proxies write it: `192.0.2.7`, `192.0.2.7:4711`, `[2001:db8::7]`,
/// `[2001:db8::7]:4711` or a bare `2001:db8::7`; `None` for anything else.
fn node_addr(node: &str) -> Option<IpAddr> {
    if let Ok(addr) = node.parse::<IpAddr>() {
        return Some(addr);
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        if !(after.is_empty() || is_port(after.strip_prefix(':')?)) {
            return None;
        }
        return v6.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let (v4, port) = node.split_once(':')?;
    if !is_port(port) {
        return None;
    }
    v4.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// RFC 7239 allows a port number or an obfuscated port (`_abc`) after a node.
fn is_port(port: &str) -> bool {
    !port.is_empty()
        && (port.bytes().all(|b| b.is_ascii_digit())
            || (port.starts_with('_')
                && port[1..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn nets(list: &str) -> Vec<IpNet> {
        list.split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .unwrap()
            })
            .collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_client_address_follows_the_trusted_proxies_headers() {
        const TRUSTED: &str = "127.0.0.1,::1,10.0.0.0/8";
        // (peer, header lines, expected client address)
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            // No header: the peer.
            ("127.0.0.1", &[], "127.0.0.1"),
            ("203.0.113.9", &[], "203.0.113.9"),
            // An untrusted peer's headers change nothing.
            (
                "203.0.113.9",
                &[("x-forwarded-for", "66.249.66.1")],
                "203.0.113.9",
            ),
            (
                "203.0.113.9",
                &[("forwarded", "for=66.249.66.1")],
                "203.0.113.9",
            ),
            (
                "203.0.113.9",
                &[("x-real-ip", "66.249.66.1")],
                "203.0.113.9",
            ),
            // X-Forwarded-For: the rightmost address that is not a trusted proxy.
            (
                "127.0.0.1",
                &[("x-forwarded-for", "66.249.66.1")],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("x-forwarded-for", "1.2.3.4, 66.249.66.1")],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("x-forwarded-for", "1.2.3.4, 66.249.66.1, 10.1.1.1")],
                "66.249.66.1",
            ),
            // All trusted: the leftmost.
            (
                "127.0.0.1",
                &[("x-forwarded-for", "10.0.0.5, 10.0.0.6")],
                "10.0.0.5",
            ),
            // Several lines are one list, in order.
            (
                "127.0.0.1",
                &[
                    ("x-forwarded-for", "1.2.3.4"),
                    ("x-forwarded-for", "66.249.66.1, 10.0.0.1"),
                ],
                "66.249.66.1",
            ),
            // Ports and brackets, as some proxies write them.
            (
                "127.0.0.1",
                &[("x-forwarded-for", "66.249.66.1:4711")],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("x-forwarded-for", "[2001:4860:4801:10::1]:443")],
                "2001:4860:4801:10::1",
            ),
            (
                "127.0.0.1",
                &[("x-forwarded-for", "2001:4860:4801:10::1")],
                "2001:4860:4801:10::1",
            ),
            // Garbage hides what is left of it; with no usable hop, the next header or the peer.
            (
                "127.0.0.1",
                &[("x-forwarded-for", "66.249.66.1, nonsense")],
                "127.0.0.1",
            ),
            (
                "127.0.0.1",
                &[
                    ("x-forwarded-for", "nonsense"),
                    ("x-real-ip", "66.249.66.2"),
                ],
                "66.249.66.2",
            ),
            ("127.0.0.1", &[("x-forwarded-for", "")], "127.0.0.1"),
            // Forwarded (RFC 7239) wins over X-Forwarded-For.
            (
                "127.0.0.1",
                &[
                    ("forwarded", "for=66.249.66.1"),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("forwarded", "for=\"66.249.66.1:4711\";proto=https")],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("forwarded", "For=\"[2001:db8:cafe::17]:4711\"")],
                "2001:db8:cafe::17",
            ),
            (
                "127.0.0.1",
                &[("forwarded", "for=\"[2001:db8:cafe::17]\";by=10.0.0.1")],
                "2001:db8:cafe::17",
            ),
            (
                "127.0.0.1",
                &[(
                    "forwarded",
                    "for=1.2.3.4, for=66.249.66.1;proto=https, for=10.0.0.3",
                )],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[
                    ("forwarded", "for=1.2.3.4"),
                    ("forwarded", "for=66.249.66.1"),
                ],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("forwarded", "proto=https;host=example.com, for=66.249.66.1")],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("forwarded", "for=10.0.0.7, for=10.0.0.8")],
                "10.0.0.7",
            ),
            // unknown and obfuscated ids are not addresses: the next header, else the peer.
            ("127.0.0.1", &[("forwarded", "for=unknown")], "127.0.0.1"),
            (
                "127.0.0.1",
                &[
                    ("forwarded", "for=_hidden"),
                    ("x-forwarded-for", "66.249.66.1"),
                ],
                "66.249.66.1",
            ),
            (
                "127.0.0.1",
                &[("forwarded", "for=66.249.66.1, for=unknown")],
                "127.0.0.1",
            ),
            ("127.0.0.1", &[("forwarded", "for=\"[::1]:_port\"")], "::1"),
            // X-Real-IP last.
            ("127.0.0.1", &[("x-real-ip", "66.249.66.1")], "66.249.66.1"),
            (
                "127.0.0.1",
                &[("x-real-ip", " 66.249.66.1:80 ")],
                "66.249.66.1",
            ),
            ("127.0.0.1", &[("x-real-ip", "bogus")], "127.0.0.1"),
            // IPv4-mapped IPv6 is IPv4: as a peer, and in headers.
            (
                "::ffff:127.0.0.1",
                &[("x-forwarded-for", "66.249.66.1")],
                "66.249.66.1",
            ),
            (
                "::ffff:203.0.113.9",
                &[("x-forwarded-for", "66.249.66.1")],
                "203.0.113.9",
            ),
            (
                "::1",
                &[("x-forwarded-for", "::ffff:66.249.66.1")],
                "66.249.66.1",
            ),
            (
                "::1",
                &[("x-forwarded-for", "1.2.3.4, ::ffff:10.0.0.1")],
                "1.2.3.4",
            ),
        ];
        let trusted = nets(TRUSTED);
        for (peer, lines, expected) in cases {
            let mut headers = HeaderMap::new();
            for (name, value) in *lines {
                headers.append(*name, HeaderValue::from_str(value).unwrap());
            }
            assert_eq!(
                client_addr(ip(peer), &headers, &trusted),
                ip(expected),
                "peer {peer}, headers {lines:?}"
            );
        }
    }

    #[test]
    fn no_trusted_proxy_means_the_peer_always() {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", HeaderValue::from_static("66.249.66.1"));
        assert_eq!(client_addr(ip("127.0.0.1"), &headers, &[]), ip("127.0.0.1"));
    }

    #[test]
    fn nodes_parse_as_proxies_write_them() {
        for (node, addr) in [
            ("192.0.2.7", Some("192.0.2.7")),
            ("192.0.2.7:4711", Some("192.0.2.7")),
            ("192.0.2.7:_obf", Some("192.0.2.7")),
            ("[2001:db8::7]", Some("2001:db8::7")),
            ("[2001:db8::7]:4711", Some("2001:db8::7")),
            ("2001:db8::7", Some("2001:db8::7")),
            ("192.0.2.7:", None),
            ("192.0.2.7:80x", None),
            ("[2001:db8::7]x", None),
            ("[192.0.2.7]", None),
            ("unknown", None),
            ("_hidden", None),
            ("", None),
        ] {
            assert_eq!(node_addr(node), addr.map(ip), "{node}");
        }
    }
}
