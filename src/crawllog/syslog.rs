//! Syslog framing: the message of an RFC 3164 (nginx's `syslog:` output) or RFC 5424 (util-linux
//! `logger`) datagram, or the datagram itself when it has no syslog header (Caddy's `net`
//! output sends bare JSON lines).

/// The message carried by one syslog line; the line itself when it has no `<PRI>` header.
pub fn message(line: &str) -> &str {
    let Some(rest) = strip_priority(line) else {
        return line;
    };
    match rest.strip_prefix("1 ") {
        Some(rfc5424) => after_rfc5424_header(rfc5424),
        None => after_rfc3164_header(rest),
    }
}

/// `<13>rest` → `rest`.
fn strip_priority(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('<')?;
    let end = rest.find('>')?;
    let pri = &rest[..end];
    (!pri.is_empty() && pri.len() <= 3 && pri.bytes().all(|b| b.is_ascii_digit()))
        .then(|| &rest[end + 1..])
}

/// `TIMESTAMP HOST APP PROCID MSGID SD [MSG]` → `MSG` (without a leading BOM).
fn after_rfc5424_header(rest: &str) -> &str {
    let mut tail = rest;
    for _ in 0..5 {
        tail = match tail.split_once(' ') {
            Some((_, after)) => after,
            None => return "",
        };
    }
    let message = skip_structured_data(tail);
    let message = message.strip_prefix(' ').unwrap_or(message);
    message.strip_prefix('\u{feff}').unwrap_or(message)
}

/// `-` or `[id k="v" …][…]` at the start of `tail`, skipped.
fn skip_structured_data(tail: &str) -> &str {
    if let Some(after) = tail.strip_prefix('-') {
        return after;
    }
    let bytes = tail.as_bytes();
    let mut i = 0;
    while bytes.get(i) == Some(&b'[') {
        let mut quoted = false;
        i += 1;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b']' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    tail.get(i..).unwrap_or("")
}

/// `Mmm dd hh:mm:ss [HOST] TAG: MSG` → `MSG` (nginx leaves the host out with `nohostname`).
/// A header that does not look like that leaves the rest after the time as the message.
fn after_rfc3164_header(rest: &str) -> &str {
    let Some(after_time) = rest
        .get(16..)
        .filter(|_| rest.as_bytes().get(15) == Some(&b' '))
    else {
        return rest;
    };
    let Some((first, after_first)) = after_time.split_once(' ') else {
        return after_time;
    };
    if first.ends_with(':') {
        return after_first;
    }
    match after_first.split_once(' ') {
        Some((tag, message)) if tag.ends_with(':') => message,
        _ => after_first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_rfc3164_messages_lose_their_header() {
        assert_eq!(
            message("<190>Nov 25 21:00:00 web1 sitemapd: 2026-11-25T21:00:00+00:00\t1.2.3.4"),
            "2026-11-25T21:00:00+00:00\t1.2.3.4"
        );
    }

    #[test]
    fn logger_rfc5424_messages_lose_header_and_structured_data() {
        let line = "<13>1 2026-11-25T21:00:00.123456+00:00 web1 sitemapd - - \
                    [timeQuality tzKnown=\"1\" isSynced=\"0\"] hello world";
        assert_eq!(message(line), "hello world");
        assert_eq!(
            message("<13>1 2026-11-25T21:00:00Z h app 12 - - msg"),
            "msg"
        );
        assert_eq!(
            message("<13>1 2026-11-25T21:00:00Z h app 12 - [a b=\"]\"] x"),
            "x"
        );
    }

    #[test]
    fn nginx_without_hostname_is_understood_too() {
        assert_eq!(message("<190>Nov  5 21:00:00 sitemapd: a: b; c"), "a: b; c");
    }

    #[test]
    fn lines_without_a_header_are_their_own_message() {
        assert_eq!(message("{\"ts\":1}"), "{\"ts\":1}");
        assert_eq!(message("<x>y"), "<x>y");
    }
}
