//! Reverse DNS with forward confirmation, asked of one resolver (`DNS_SERVER`, else the
//! nameservers of /etc/resolv.conf) over UDP (TCP when an answer is truncated). Messages are
//! built and read with `hickory-proto`, the DNS message layer of the Hickory resolver project;
//! we send them ourselves rather than through `hickory-resolver`, because a verifier must not
//! trust a hosts file and the resolver answers 127.0.0.0/8 and `localhost` names itself: every
//! question, 127.0.0.0/8's included, goes to the server. Each query times out and is tried twice.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

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
    #[error("the server answered {0}")]
    Server(ResponseCode),
    #[error("malformed DNS message: {0}")]
    Message(String),
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
    Records { data: Vec<RData>, ttl: u32 },
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
        let (ptr, mut ttl) = match self.ask(&reverse_name(addr), RecordType::PTR).await {
            Ok(Answer::NoSuchName) => return (DnsOutcome::Denied, None),
            Ok(Answer::Records { data, ttl }) => (data, ttl),
            Err(_) => return (DnsOutcome::Failed, None),
        };
        let names: Vec<String> = ptr
            .into_iter()
            .filter_map(|data| match data {
                RData::PTR(name) => Some(name.0.to_ascii()),
                _ => None,
            })
            .filter(|name| under_suffix(name, suffixes))
            .take(MAX_NAMES)
            .collect();
        let mut failed = false;
        let forward = match addr {
            IpAddr::V4(_) => RecordType::A,
            IpAddr::V6(_) => RecordType::AAAA,
        };
        for name in names {
            match self.ask(&name, forward).await {
                Ok(Answer::Records { data, ttl: t }) => {
                    ttl = ttl.min(t);
                    if data.iter().any(|data| address_of(data) == Some(addr)) {
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
    async fn ask(&self, name: &str, kind: RecordType) -> Result<Answer, DnsError> {
        let name = Name::from_ascii(name).map_err(|e| DnsError::Message(e.to_string()))?;
        let mut last = DnsError::Timeout(QUERY_TIMEOUT);
        for _ in 0..ATTEMPTS {
            for server in &self.servers {
                match ask_one(*server, &name, kind).await {
                    Ok(answer) => return Ok(answer),
                    Err(e) => last = e,
                }
            }
        }
        Err(last)
    }
}

/// One recursive query to one server: over UDP, again over TCP when the answer is truncated.
async fn ask_one(server: SocketAddr, name: &Name, kind: RecordType) -> Result<Answer, DnsError> {
    let mut query = Message::query();
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name.clone(), kind));
    let bytes = query
        .to_vec()
        .map_err(|e| DnsError::Message(e.to_string()))?;
    let reply = tokio::time::timeout(QUERY_TIMEOUT, async {
        let reply = over_udp(server, &bytes, &query).await?;
        match reply.metadata.truncation {
            true => over_tcp(server, &bytes).await,
            false => Ok(reply),
        }
    })
    .await
    .map_err(|_| DnsError::Timeout(QUERY_TIMEOUT))??;
    answer(reply, kind)
}

/// The records of `kind` in `reply` (a CNAME chain's target included), or "no such name".
fn answer(reply: Message, kind: RecordType) -> Result<Answer, DnsError> {
    match reply.metadata.response_code {
        ResponseCode::NoError => {}
        ResponseCode::NXDomain => return Ok(Answer::NoSuchName),
        other => return Err(DnsError::Server(other)),
    }
    let records: Vec<_> = reply
        .answers
        .into_iter()
        .filter(|r| r.record_type() == kind)
        .collect();
    Ok(Answer::Records {
        ttl: records.iter().map(|r| r.ttl).min().unwrap_or(u32::MAX),
        data: records.into_iter().map(|r| r.data).collect(),
    })
}

/// The address an A or AAAA record holds.
fn address_of(data: &RData) -> Option<IpAddr> {
    match data {
        RData::A(a) => Some(IpAddr::V4(a.0)),
        RData::AAAA(aaaa) => Some(IpAddr::V6(aaaa.0)),
        _ => None,
    }
}

/// Whether `reply` answers `query`: the same id and the same first question.
fn answers_query(reply: &Message, query: &Message) -> bool {
    reply.metadata.id == query.metadata.id
        && reply.queries.first().is_some_and(|asked| {
            query.queries.first().is_some_and(|ours| {
                asked.query_type() == ours.query_type() && asked.name() == ours.name()
            })
        })
}

async fn over_udp(server: SocketAddr, bytes: &[u8], query: &Message) -> Result<Message, DnsError> {
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
        let Ok(reply) = Message::from_vec(&buffer[..len]) else {
            continue;
        };
        if answers_query(&reply, query) {
            return Ok(reply);
        }
    }
}

async fn over_tcp(server: SocketAddr, bytes: &[u8]) -> Result<Message, DnsError> {
    let mut stream = TcpStream::connect(server).await?;
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(bytes).await?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).await?;
    let mut buffer = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut buffer).await?;
    Message::from_vec(&buffer).map_err(|e| DnsError::Message(e.to_string()))
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

    fn question(name: &str, kind: RecordType) -> Message {
        let mut query = Message::query();
        query.add_query(Query::query(Name::from_ascii(name).unwrap(), kind));
        query
    }

    #[test]
    fn a_reply_counts_only_with_our_id_and_question() {
        let query = question("1.2.0.192.in-addr.arpa.", RecordType::PTR);
        let mut reply = Message::from_vec(&query.to_vec().unwrap()).unwrap();
        assert!(answers_query(&reply, &query));
        reply.metadata.id = query.metadata.id.wrapping_add(1);
        assert!(!answers_query(&reply, &query));
        let other = question("2.2.0.192.in-addr.arpa.", RecordType::PTR);
        assert!(!answers_query(&other, &query));
        let other_type = question("1.2.0.192.in-addr.arpa.", RecordType::A);
        assert!(!answers_query(&other_type, &query));
    }

    #[test]
    fn answers_read_their_records_and_no_such_name() {
        use hickory_proto::rr::rdata::{A, PTR};
        use hickory_proto::rr::Record;
        let mut reply = question("crawl.googlebot.com.", RecordType::A);
        let name = Name::from_ascii("crawl.googlebot.com.").unwrap();
        reply.answers.push(Record::from_rdata(
            name.clone(),
            300,
            RData::A(A::new(192, 0, 2, 1)),
        ));
        reply
            .answers
            .push(Record::from_rdata(name.clone(), 60, RData::PTR(PTR(name))));
        let bytes = reply.to_vec().unwrap();
        let Answer::Records { data, ttl } =
            answer(Message::from_vec(&bytes).unwrap(), RecordType::A).unwrap()
        else {
            panic!("records expected");
        };
        assert_eq!(ttl, 300, "only the asked type's records count");
        assert_eq!(address_of(&data[0]), Some("192.0.2.1".parse().unwrap()));
        let mut missing = question("nothing.example.", RecordType::A);
        missing.metadata.response_code = ResponseCode::NXDomain;
        assert!(matches!(
            answer(missing, RecordType::A),
            Ok(Answer::NoSuchName)
        ));
        let mut refused = question("x.example.", RecordType::A);
        refused.metadata.response_code = ResponseCode::Refused;
        assert!(matches!(
            answer(refused, RecordType::A),
            Err(DnsError::Server(_))
        ));
        assert!(
            Message::from_vec(&[0xff; 7]).is_err(),
            "a short message is an error"
        );
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
