//! One access-log line as the shipped snippets write it, parsed into a [`Fetch`]: the tab-separated
//! `sitemapd` format of nginx (`escape=json`) and Apache (its own escapes), and Caddy's JSON
//! access log.
//!
//! The tab-separated format, in order: time (ISO 8601), client address, `"host"`, `"method"`,
//! `"request URI"`, status, body bytes, `"User-Agent"`, then `"Signature-Agent"`,
//! `"Signature-Input"` and `"Signature"` (Web Bot Auth; lines of the older 8-field format have
//! none); quoted fields carry their escapes (`\"`, `\\`, `\t`, `\uXXXX` from nginx, `\xHH`
//! from Apache), so no field holds a raw tab. An empty or `-` header field is an absent header.

use std::net::IpAddr;

use chrono::DateTime;

/// One request as the web server logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// When it was served, unix seconds.
    pub at: i64,
    /// The client address the web server logged (after its own proxy handling).
    pub client: IpAddr,
    /// The Host the request named, as logged (a port may follow).
    pub host: String,
    pub method: String,
    /// Path and query as requested.
    pub target: String,
    pub status: u16,
    pub user_agent: String,
}

/// The Web Bot Auth headers a line carries (`Signature-Input` at least).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedSignature {
    pub agent: Option<String>,
    pub input: String,
    pub signature: Option<String>,
}

/// Why a line is not a [`Fetch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("not the sitemapd log format (8 or 11 tab-separated fields) nor Caddy's JSON")]
    Shape,
    #[error("the time is not ISO 8601")]
    Time,
    #[error("the client is not an IP address")]
    Client,
    #[error("the status is not a number from 100 to 999")]
    Status,
    #[error("a quoted field is not quoted")]
    Quote,
}

/// Parses one message of the access log.
pub fn parse(message: &str) -> Result<Fetch, LineError> {
    parse_signed(message).map(|(fetch, _)| fetch)
}

/// Parses one message of the access log, with the Web Bot Auth headers it carries.
pub fn parse_signed(message: &str) -> Result<(Fetch, Option<LoggedSignature>), LineError> {
    let message = message.trim_end_matches(['\n', '\r']);
    if message.starts_with('{') {
        return parse_caddy(message);
    }
    let fields: Vec<&str> = message.split('\t').collect();
    let (fields, signed) = match fields.len() {
        8 => (&fields[..], None),
        11 => (&fields[..8], Some(&fields[8..])),
        _ => return Err(LineError::Shape),
    };
    let [time, client, host, method, target, status, _bytes, user_agent] = fields[..] else {
        return Err(LineError::Shape);
    };
    let fetch = Fetch {
        at: parse_time(time)?,
        client: client.trim().parse().map_err(|_| LineError::Client)?,
        host: unquote(host)?,
        method: unquote(method)?,
        target: unquote(target)?,
        status: parse_status(status.trim())?,
        user_agent: unquote(user_agent)?,
    };
    let signature = match signed {
        Some([agent, input, signature]) => logged_signature(
            present(unquote(agent)?),
            present(unquote(input)?),
            present(unquote(signature)?),
        ),
        _ => None,
    };
    Ok((fetch, signature))
}

/// A logged header's value; `None` for what web servers log for an absent one (`-`, empty).
fn present(value: String) -> Option<String> {
    (!value.is_empty() && value != "-").then_some(value)
}

fn logged_signature(
    agent: Option<String>,
    input: Option<String>,
    signature: Option<String>,
) -> Option<LoggedSignature> {
    Some(LoggedSignature {
        agent,
        input: input?,
        signature,
    })
}

/// RFC 3339 (nginx `$time_iso8601`) or `%Y-%m-%dT%H:%M:%S%z` (Apache's strftime).
fn parse_time(text: &str) -> Result<i64, LineError> {
    let text = text.trim();
    DateTime::parse_from_rfc3339(text)
        .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%z"))
        .map(|t| t.timestamp())
        .map_err(|_| LineError::Time)
}

fn parse_status(text: &str) -> Result<u16, LineError> {
    text.parse::<u16>()
        .ok()
        .filter(|s| (100..=999).contains(s))
        .ok_or(LineError::Status)
}

/// `"…"` with JSON or Apache escapes → its text (bytes that are not UTF-8 become U+FFFD).
fn unquote(field: &str) -> Result<String, LineError> {
    let inner = field
        .strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'))
        .ok_or(LineError::Quote)?;
    if !inner.contains('\\') {
        return Ok(inner.to_string());
    }
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if b != b'\\' || i == bytes.len() {
            out.push(b);
            continue;
        }
        let escape = bytes[i];
        i += 1;
        match escape {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'x' => match hex(bytes.get(i..i + 2)) {
                Some(v) => {
                    out.push(v as u8);
                    i += 2;
                }
                None => out.extend_from_slice(b"\\x"),
            },
            b'u' => match hex(bytes.get(i..i + 4)) {
                Some(v) => {
                    let c = char::from_u32(v).unwrap_or('\u{fffd}');
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    i += 4;
                }
                None => out.extend_from_slice(b"\\u"),
            },
            other => out.push(other),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn hex(digits: Option<&[u8]>) -> Option<u32> {
    let digits = std::str::from_utf8(digits?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

/// Caddy's access log entry (`format json`): `ts`, `status`, and `request` with `client_ip`
/// (Caddy ≥ 2.7, after its trusted proxies) or `remote_ip`, `host`, `method`, `uri` and
/// `headers`.
fn parse_caddy(message: &str) -> Result<(Fetch, Option<LoggedSignature>), LineError> {
    let entry: serde_json::Value = serde_json::from_str(message).map_err(|_| LineError::Shape)?;
    let request = entry.get("request").ok_or(LineError::Shape)?;
    let text = |value: Option<&serde_json::Value>| {
        value
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or(LineError::Shape)
    };
    let at = entry
        .get("ts")
        .and_then(|ts| ts.as_f64())
        .ok_or(LineError::Time)? as i64;
    let client = text(request.get("client_ip"))
        .or_else(|_| text(request.get("remote_ip")))?
        .parse()
        .map_err(|_| LineError::Client)?;
    let status = entry
        .get("status")
        .and_then(|s| s.as_u64())
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=999).contains(s))
        .ok_or(LineError::Status)?;
    let header = |name: &str| caddy_header(request.get("headers"), name);
    let fetch = Fetch {
        at,
        client,
        host: text(request.get("host"))?,
        method: text(request.get("method"))?,
        target: text(request.get("uri"))?,
        status,
        user_agent: header("User-Agent").unwrap_or_default(),
    };
    let signature = logged_signature(
        header("Signature-Agent"),
        header("Signature-Input"),
        header("Signature"),
    );
    Ok((fetch, signature))
}

/// A request header of Caddy's log (`{"Name": ["value", …]}`), its values joined with `, `.
fn caddy_header(headers: Option<&serde_json::Value>, name: &str) -> Option<String> {
    let values = headers?.get(name)?.as_array()?;
    let values: Vec<&str> = values.iter().filter_map(|v| v.as_str()).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOGLEBOT: &str =
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

    #[test]
    fn nginx_lines_parse_with_their_json_escapes() {
        let line = format!(
            "2026-11-25T21:00:00+00:00\t66.249.66.1\t\"www.example.com\"\t\"GET\"\t\"/a?q=\\\"x\\\"\"\t200\t512\t\"{GOOGLEBOT}\""
        );
        let fetch = parse(&line).unwrap();
        assert_eq!(fetch.at, 1_795_640_400);
        assert_eq!(fetch.client, "66.249.66.1".parse::<IpAddr>().unwrap());
        assert_eq!(fetch.host, "www.example.com");
        assert_eq!(fetch.target, "/a?q=\"x\"");
        assert_eq!(fetch.status, 200);
        assert_eq!(fetch.user_agent, GOOGLEBOT);
    }

    #[test]
    fn apache_lines_parse_with_their_hex_escapes_and_offset() {
        let line = "2026-11-25T22:00:00+0100\t::1\t\"example.com:8080\"\t\"HEAD\"\t\"/caf\\xc3\\xa9\"\t304\t0\t\"-\"";
        let fetch = parse(line).unwrap();
        assert_eq!(fetch.at, 1_795_640_400);
        assert_eq!(fetch.target, "/café");
        assert_eq!(fetch.method, "HEAD");
        assert_eq!(fetch.status, 304);
    }

    #[test]
    fn caddy_json_lines_parse() {
        let line = r#"{"level":"info","ts":1795640400.25,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"10.0.0.1","client_ip":"66.249.66.1","proto":"HTTP/1.1","method":"GET","host":"www.example.com","uri":"/p/1","headers":{"User-Agent":["bingbot/2.0"]}},"size":10,"status":404}"#;
        let fetch = parse(line).unwrap();
        assert_eq!(fetch.at, 1_795_640_400);
        assert_eq!(fetch.client, "66.249.66.1".parse::<IpAddr>().unwrap());
        assert_eq!(fetch.user_agent, "bingbot/2.0");
        assert_eq!(fetch.status, 404);
    }

    #[test]
    fn signature_headers_follow_the_user_agent() {
        let line = "2026-11-25T21:00:00+00:00\t127.0.0.1\t\"www.example.com\"\t\"GET\"\t\"/a\"\t200\t5\t\"Mozilla/5.0\"\t\"sig1=\\\"https://chatgpt.com\\\"\"\t\"sig1=(\\\"@authority\\\");tag=\\\"web-bot-auth\\\"\"\t\"sig1=:AAEC:\"";
        let (fetch, signature) = parse_signed(line).unwrap();
        assert_eq!(fetch.user_agent, "Mozilla/5.0");
        let signature = signature.expect("signed");
        assert_eq!(
            signature.agent.as_deref(),
            Some("sig1=\"https://chatgpt.com\"")
        );
        assert_eq!(
            signature.input,
            "sig1=(\"@authority\");tag=\"web-bot-auth\""
        );
        assert_eq!(signature.signature.as_deref(), Some("sig1=:AAEC:"));
        let unsigned = "2026-11-25T21:00:00+00:00\t127.0.0.1\t\"h\"\t\"GET\"\t\"/a\"\t200\t5\t\"ua\"\t\"-\"\t\"\"\t\"-\"";
        assert_eq!(parse_signed(unsigned).unwrap().1, None);
        let caddy = r#"{"ts":1795640400,"status":200,"request":{"remote_ip":"127.0.0.1","host":"h","method":"GET","uri":"/","headers":{"Signature-Input":["sig1=()"],"Signature-Agent":["\"https://a.example\""]}}}"#;
        let signature = parse_signed(caddy).unwrap().1.expect("signed");
        assert_eq!(signature.agent.as_deref(), Some("\"https://a.example\""));
        assert_eq!(signature.signature, None);
    }

    #[test]
    fn other_lines_are_errors_not_panics() {
        assert_eq!(
            parse("127.0.0.1 - - [25/Nov/2026] \"GET / HTTP/1.1\" 200"),
            Err(LineError::Shape)
        );
        assert_eq!(
            parse("yesterday\t1.2.3.4\t\"h\"\t\"GET\"\t\"/\"\t200\t0\t\"ua\""),
            Err(LineError::Time)
        );
        assert_eq!(
            parse("2026-11-25T21:00:00Z\tnobody\t\"h\"\t\"GET\"\t\"/\"\t200\t0\t\"ua\""),
            Err(LineError::Client)
        );
        assert_eq!(parse("{\"request\":{}}"), Err(LineError::Time));
        assert_eq!(parse("{"), Err(LineError::Shape));
        assert!(parse("2026-11-25T21:00:00Z\t1.2.3.4\t\"h\"\t\"GET\"\t\"/\\").is_err());
    }
}
