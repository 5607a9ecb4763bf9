//! Reverse DNS with forward confirmation, asked of one resolver (`DNS_SERVER`, else the
//! nameservers of /etc/resolv.conf) over UDP (TCP when an answer is truncated), with the
//! messages of [`super::wire`]. No hosts file and no special names: every question,
//! 127.0.0.0/8's included, goes to the server. Each query times out and is tried twice.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

use super::wire::{self, Data, Reply, TYPE_A, TYPE_AAAA, TYPE_PTR};

/// How long one query waits for its answer.
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// Tries per query (one retry), each over the servers in turn.
const ATTEMPTS: usize = 2;
/// PTR names checked forward per address (a PTR record set can be long; operators use one).
const MAX_NAMES: usize = 4;
/// A UDP answer's largest size we read.
const UDP_BUFFER: usize = 4096;

/// Why a lookup gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the server answered RCODE {0}")]
    Server(u8),
    #[error(transparent)]
    Message(#[from] wire::Malformed),
    #[error("DNS transport: {0}")]
    Io(#[from] std::io::Error),
}

/// What the lookups of one address say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsOutcome {
    /// A PTR name under an allowed suffix resolves back to the address.
    Confirmed,
    /// No PTR, none under a suffix, or none that resolves back.
    Denied,
    /// A lookup timed out or failed, and none confirmed.
    Failed,
}

/// The answer to one question: its records' data and the smallest TTL, or "no such name".
#[derive(Debug)]
enum Answer {
    Records { data: Vec<Data>, ttl: u32 },
    NoSuchName,
}

/// A stub resolver that asks its servers itself.
#[derive(Debug, Clone)]
pub struct Dns {
    servers: Vec<SocketAddr>,
}

impl Dns {
    /// `DNS_SERVER`, or the nameservers of /etc/resolv.conf (127.0.0.1:53 when it names none,
    /// as the C library does).
    pub fn new(server: Option<SocketAddr>) -> Self {
        let servers = match server {
            Some(server) => vec![server],
            None => std::fs::read_to_string("/etc/resolv.conf")
                .map(|text| nameservers(&text))
                .unwrap_or_default(),
        };
        let servers = match servers.is_empty() {
            true => vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53)],
            false => servers,
        };
        Self { servers }
    }

    /// Whether `addr`'s PTR names a host under one of `suffixes` whose A/AAAA gives `addr`
    /// back, and for how long the answer holds (the smallest TTL met; `None`: none met).
    pub async fn check(&self, addr: IpAddr, suffixes: &[String]) -> (DnsOutcome, Option<u32>) {
        let ptr = match self.ask(&reverse_name(addr), TYPE_PTR).await {
            Ok(Answer::NoSuchName) => return (DnsOutcome::Denied, None),
            Ok(Answer::Records { data, ttl }) => (data, ttl),
            Err(_) => return (DnsOutcome::Failed, None),
        };
        let names: Vec<String> = ptr
            .0
            .into_iter()
            .filter_map(|data| match data {
                Data::Name(name) => Some(name),
                _ => None,
            })
            .filter(|name| under_suffix(name, suffixes))
            .take(MAX_NAMES)
            .collect();
        let mut ttl = ptr.1;
        let mut failed = false;
        let forward = match addr {
            IpAddr::V4(_) => TYPE_A,
            IpAddr::V6(_) => TYPE_AAAA,
        };
        for name in names {
            match self.ask(&name, forward).await {
                Ok(Answer::Records { data, ttl: t }) => {
                    ttl = ttl.min(t);
                    if data.contains(&Data::Address(addr)) {
                        return (DnsOutcome::Confirmed, Some(ttl));
                    }
                }
                Ok(Answer::NoSuchName) => {}
                Err(_) => failed = true,
            }
        }
        match failed {
            true => (DnsOutcome::Failed, None),
            false => (DnsOutcome::Denied, Some(ttl)),
        }
    }

    /// Asks `name`/`kind` of each server in turn, twice over.
    async fn ask(&self, name: &str, kind: u16) -> Result<Answer, DnsError> {
        let mut last = DnsError::Timeout(QUERY_TIMEOUT);
        for _ in 0..ATTEMPTS {
            for server in &self.servers {
                match self.ask_one(*server, name, kind).await {
                    Ok(answer) => return Ok(answer),
                    Err(e) => last = e,
                }
            }
        }
        Err(last)
    }

    async fn ask_one(&self, server: SocketAddr, name: &str, kind: u16) -> Result<Answer, DnsError> {
        let id = message_id();
        let bytes = wire::query(id, name, kind);
        let question = (name.trim_end_matches('.').to_ascii_lowercase(), kind);
        let reply = tokio::time::timeout(QUERY_TIMEOUT, async {
            let reply = over_udp(server, &bytes, id, &question).await?;
            match reply.truncated {
                true => over_tcp(server, &bytes).await,
                false => Ok(reply),
            }
        })
        .await
        .map_err(|_| DnsError::Timeout(QUERY_TIMEOUT))??;
        answer(&reply, kind)
    }
}

/// The records of `kind` in `reply` (a CNAME chain's target included), or "no such name".
fn answer(reply: &Reply, kind: u16) -> Result<Answer, DnsError> {
    match reply.rcode {
        0 => {}
        3 => return Ok(Answer::NoSuchName),
        other => return Err(DnsError::Server(other)),
    }
    let records: Vec<_> = reply.answers.iter().filter(|r| r.kind == kind).collect();
    Ok(Answer::Records {
        ttl: records.iter().map(|r| r.ttl).min().unwrap_or(u32::MAX),
        data: records.into_iter().map(|r| r.data.clone()).collect(),
    })
}

async fn over_udp(
    server: SocketAddr,
    bytes: &[u8],
    id: u16,
    question: &(String, u16),
) -> Result<Reply, DnsError> {
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(server).await?;
    socket.send(bytes).await?;
    let mut buffer = vec![0u8; UDP_BUFFER];
    loop {
        let len = socket.recv(&mut buffer).await?;
        // A stray or forged datagram is skipped: the answer must echo our id and question.
        let Ok(reply) = wire::parse(&buffer[..len]) else {
            continue;
        };
        if reply.id == id && reply.question.as_ref() == Some(question) {
            return Ok(reply);
        }
    }
}

async fn over_tcp(server: SocketAddr, bytes: &[u8]) -> Result<Reply, DnsError> {
    let mut stream = TcpStream::connect(server).await?;
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(bytes).await?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).await?;
    let mut buffer = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut buffer).await?;
    Ok(wire::parse(&buffer)?)
}

/// A query id no one can guess from the last (the source port is the kernel's random one).
fn message_id() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish() as u16
}

/// `4.3.2.1.in-addr.arpa.` / the nibbles of an IPv6 address under `ip6.arpa.`.
pub fn reverse_name(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa.")
        }
        IpAddr::V6(v6) => {
            let mut text = String::with_capacity(73);
            for byte in v6.octets().iter().rev() {
                text.push_str(&format!("{:x}.{:x}.", byte & 0xf, byte >> 4));
            }
            text.push_str("ip6.arpa.");
            text
        }
    }
}

/// Whether `name` is one of `suffixes` or under one, whole labels only ("crawl-1.googlebot.com"
/// is under "googlebot.com", "evilgooglebot.com" is not), ignoring case and a final dot.
pub fn under_suffix(name: &str, suffixes: &[String]) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    suffixes.iter().any(|suffix| {
        let suffix = suffix.trim_end_matches('.').to_ascii_lowercase();
        !suffix.is_empty()
            && (name == suffix
                || name
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|head| head.ends_with('.') && head.len() > 1))
    })
}

/// The `nameserver` lines of a resolv.conf.
fn nameservers(text: &str) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => words.next(),
                _ => None,
            }
        })
        .filter_map(|addr| addr.split('%').next()?.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suffixes() -> Vec<String> {
        vec!["googlebot.com".into(), "google.com".into()]
    }

    #[test]
    fn suffixes_match_whole_labels() {
        assert!(under_suffix(
            "crawl-66-249-66-1.googlebot.com.",
            &suffixes()
        ));
        assert!(under_suffix("Crawl-1.GoogleBot.com", &suffixes()));
        assert!(under_suffix("a.b.google.com", &suffixes()));
        assert!(under_suffix("googlebot.com", &suffixes()));
        assert!(!under_suffix("evilgooglebot.com", &suffixes()));
        assert!(!under_suffix("googlebot.com.evil.example", &suffixes()));
        assert!(!under_suffix("x.googlebot.co", &suffixes()));
        assert!(!under_suffix(".googlebot.com", &suffixes()));
        assert!(!under_suffix("x.googlebot.com", &[String::new()]));
    }

    #[test]
    fn reverse_names() {
        assert_eq!(
            reverse_name("66.249.66.1".parse().unwrap()),
            "1.66.249.66.in-addr.arpa."
        );
        let v6 = reverse_name("2001:db8::567:89ab".parse().unwrap());
        assert_eq!(
            v6,
            "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa."
        );
    }

    #[test]
    fn resolv_conf_nameservers() {
        let text = "# comment\nsearch example\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\n\
                    nameserver bogus\noptions ndots:1\n";
        let servers = nameservers(text);
        assert_eq!(
            servers,
            vec![
                "10.0.0.2:53".parse().unwrap(),
                "[fe80::1]:53".parse().unwrap()
            ]
        );
    }
}
