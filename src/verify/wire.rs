//! The few DNS messages verification needs (RFC 1035): a query for one name and type, and the
//! answer records of a reply (A, AAAA, PTR; names read through compression pointers).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const TYPE_A: u16 = 1;
pub const TYPE_PTR: u16 = 12;
pub const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;

/// A reply that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("malformed DNS message: {0}")]
pub struct Malformed(&'static str);

/// What a reply's answer section carries that we read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    Address(IpAddr),
    Name(String),
    Other,
}

/// One answer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub name: String,
    pub kind: u16,
    pub ttl: u32,
    pub data: Data,
}

/// A reply's header facts and answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub id: u16,
    pub truncated: bool,
    /// RCODE: 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED…
    pub rcode: u8,
    /// The first question, lower-cased, and its type.
    pub question: Option<(String, u16)>,
    pub answers: Vec<Record>,
}

/// A recursive query for `name` (absolute, dots between labels) of type `kind`.
pub fn query(id: u16, name: &str, kind: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(18 + name.len());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // one question
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        let label = &label.as_bytes()[..label.len().min(63)];
        out.push(label.len() as u8);
        out.extend_from_slice(label);
    }
    out.push(0);
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out
}

/// Reads a reply.
pub fn parse(message: &[u8]) -> Result<Reply, Malformed> {
    let header = message.get(..12).ok_or(Malformed("short header"))?;
    let word = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
    let flags = word(2);
    if flags & 0x8000 == 0 {
        return Err(Malformed("not a response"));
    }
    let (questions, answers) = (word(4), word(6));
    let mut at = 12;
    let mut question = None;
    for i in 0..questions {
        let (name, next) = read_name(message, at)?;
        let kind = read_u16(message, next)?;
        at = next + 4;
        if i == 0 {
            question = Some((name, kind));
        }
    }
    let mut records = Vec::with_capacity(usize::from(answers));
    for _ in 0..answers {
        let (name, next) = read_name(message, at)?;
        let kind = read_u16(message, next)?;
        let ttl =
            u32::from(read_u16(message, next + 4)?) << 16 | u32::from(read_u16(message, next + 6)?);
        let len = usize::from(read_u16(message, next + 8)?);
        let start = next + 10;
        let rdata = message
            .get(start..start + len)
            .ok_or(Malformed("short record"))?;
        let data = match (kind, len) {
            (TYPE_A, 4) => Data::Address(IpAddr::V4(Ipv4Addr::new(
                rdata[0], rdata[1], rdata[2], rdata[3],
            ))),
            (TYPE_AAAA, 16) => {
                let bytes: [u8; 16] = rdata.try_into().map_err(|_| Malformed("AAAA"))?;
                Data::Address(IpAddr::V6(Ipv6Addr::from(bytes)))
            }
            (TYPE_PTR, _) => Data::Name(read_name(message, start)?.0),
            _ => Data::Other,
        };
        records.push(Record {
            name,
            kind,
            ttl: ttl.min(i32::MAX as u32),
            data,
        });
        at = start + len;
    }
    Ok(Reply {
        id: word(0),
        truncated: flags & 0x0200 != 0,
        rcode: (flags & 0x000f) as u8,
        question,
        answers: records,
    })
}

fn read_u16(message: &[u8], at: usize) -> Result<u16, Malformed> {
    match message.get(at..at + 2) {
        Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
        None => Err(Malformed("short field")),
    }
}

/// The name at `at` (lower-cased, no final dot) and the offset after it where it is written.
fn read_name(message: &[u8], mut at: usize) -> Result<(String, usize), Malformed> {
    let mut name = String::new();
    let mut end = None;
    // Each pointer must go back: no loops.
    let mut limit = at;
    loop {
        let len = *message.get(at).ok_or(Malformed("short name"))?;
        match len {
            0 => {
                return Ok((name, end.unwrap_or(at + 1)));
            }
            len if len & 0xc0 == 0xc0 => {
                let low = *message.get(at + 1).ok_or(Malformed("short pointer"))?;
                let target = usize::from(len & 0x3f) << 8 | usize::from(low);
                if target >= limit {
                    return Err(Malformed("pointer forward"));
                }
                end.get_or_insert(at + 2);
                limit = target;
                at = target;
            }
            len if len & 0xc0 == 0 => {
                let label = message
                    .get(at + 1..at + 1 + usize::from(len))
                    .ok_or(Malformed("short label"))?;
                if !name.is_empty() {
                    name.push('.');
                }
                name.extend(label.iter().map(|b| b.to_ascii_lowercase() as char));
                if name.len() > 255 {
                    return Err(Malformed("name too long"));
                }
                at += 1 + usize::from(len);
            }
            _ => return Err(Malformed("label type")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply to `question` with `answers`, each (name pointer to the question, type, rdata).
    fn reply(id: u16, rcode: u8, question: &[u8], answers: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut out = question.to_vec();
        out[2] = 0x81; // QR, RD
        out[3] = 0x80 | rcode;
        out[6..8].copy_from_slice(&(answers.len() as u16).to_be_bytes());
        out[0..2].copy_from_slice(&id.to_be_bytes());
        for (kind, rdata) in answers {
            out.extend_from_slice(&[0xc0, 12]);
            out.extend_from_slice(&kind.to_be_bytes());
            out.extend_from_slice(&[0, 1, 0, 0, 0x0e, 0x10]);
            out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            out.extend_from_slice(rdata);
        }
        out
    }

    #[test]
    fn a_query_reads_back_as_its_question() {
        let q = query(7, "2.0.0.127.in-addr.arpa.", TYPE_PTR);
        let mut r = q.clone();
        r[2] |= 0x80;
        let parsed = parse(&r).unwrap();
        assert_eq!(parsed.id, 7);
        assert_eq!(
            parsed.question,
            Some(("2.0.0.127.in-addr.arpa".to_string(), TYPE_PTR))
        );
    }

    #[test]
    fn answers_with_compressed_names() {
        let q = query(9, "2.0.0.127.in-addr.arpa", TYPE_PTR);
        // PTR rdata: "crawl-2" then a pointer to... a fresh name "googlebot.com" written out.
        let mut rdata = vec![7];
        rdata.extend_from_slice(b"Crawl-2");
        rdata.push(9);
        rdata.extend_from_slice(b"googlebot");
        rdata.push(3);
        rdata.extend_from_slice(b"com");
        rdata.push(0);
        let r = reply(9, 0, &q, &[(TYPE_PTR, rdata), (TYPE_A, vec![127, 0, 0, 2])]);
        let parsed = parse(&r).unwrap();
        assert_eq!(parsed.rcode, 0);
        assert_eq!(parsed.answers.len(), 2);
        assert_eq!(parsed.answers[0].name, "2.0.0.127.in-addr.arpa");
        assert_eq!(parsed.answers[0].ttl, 3600);
        assert_eq!(
            parsed.answers[0].data,
            Data::Name("crawl-2.googlebot.com".into())
        );
        assert_eq!(
            parsed.answers[1].data,
            Data::Address("127.0.0.2".parse().unwrap())
        );
    }

    #[test]
    fn hostile_messages_are_errors_not_panics() {
        assert!(parse(&[0; 5]).is_err());
        let q = query(1, "a.b", TYPE_A);
        assert!(parse(&q).is_err(), "a query is no reply");
        let mut looping = reply(1, 0, &q, &[(TYPE_PTR, vec![0xc0, 12])]);
        let at = looping.len() - 2;
        looping[at + 1] = at as u8; // a pointer to itself
        assert!(parse(&looping).is_err());
        let mut cut = reply(1, 0, &q, &[(TYPE_A, vec![1, 2, 3, 4])]);
        cut.truncate(cut.len() - 2);
        assert!(parse(&cut).is_err());
        let nx = parse(&reply(1, 3, &q, &[])).unwrap();
        assert_eq!(nx.rcode, 3);
    }
}
