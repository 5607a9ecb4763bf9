//! Text sitemaps: one URL per line, UTF-8, blank lines ignored, read line by line.

use std::io::{self, BufRead, Read};

use crate::sitemap::SkipReason;

/// Longer lines are not kept: no URL that long could be served (the limit is 2,048).
const MAX_LINE_BYTES: usize = 64 * 1024;

/// One non-blank line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextLine {
    /// 1-based.
    pub number: u64,
    /// The URL, trimmed; or why the line cannot be one.
    pub url: Result<String, SkipReason>,
}

/// The non-blank lines of a text sitemap.
pub struct TextLines<R> {
    reader: R,
    number: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> TextLines<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            number: 0,
            buf: Vec::with_capacity(256),
        }
    }

    /// Lines read so far.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The next non-blank line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<TextLine>> {
        loop {
            self.buf.clear();
            let limit = (MAX_LINE_BYTES + 1) as u64;
            if (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)?
                == 0
            {
                return Ok(None);
            }
            self.number += 1;
            if !self.buf.ends_with(b"\n") && self.buf.len() > MAX_LINE_BYTES {
                self.reader.skip_until(b'\n')?;
                return Ok(Some(self.line(Err(SkipReason::TooLong))));
            }
            let mut bytes = self.buf.as_slice();
            if self.number == 1 {
                bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            }
            let url = match std::str::from_utf8(bytes) {
                Ok(text) => text.trim_matches(|c: char| c.is_ascii_whitespace()),
                // A text sitemap must be UTF-8; guessing another encoding could change the URL.
                Err(_) => return Ok(Some(self.line(Err(SkipReason::InvalidUrl)))),
            };
            if !url.is_empty() {
                let url = url.to_string();
                return Ok(Some(self.line(Ok(url))));
            }
        }
    }

    fn line(&self, url: Result<String, SkipReason>) -> TextLine {
        TextLine {
            number: self.number,
            url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<(u64, Result<String, SkipReason>)> {
        let mut reader = TextLines::new(input);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push((line.number, line.url));
        }
        out
    }

    #[test]
    fn blank_lines_are_skipped_and_numbers_kept() {
        assert_eq!(
            lines(b"\xEF\xBB\xBFhttps://e.com/a\r\n\n   \nhttps://e.com/b  \nhttps://e.com/c"),
            vec![
                (1, Ok("https://e.com/a".into())),
                (4, Ok("https://e.com/b".into())),
                (5, Ok("https://e.com/c".into())),
            ]
        );
    }

    #[test]
    fn overlong_and_non_utf8_lines_are_refused_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES * 2];
        input.extend_from_slice(b"\n\xFF\xFE\nhttps://e.com/ok\n");
        assert_eq!(
            lines(&input),
            vec![
                (1, Err(SkipReason::TooLong)),
                (2, Err(SkipReason::InvalidUrl)),
                (3, Ok("https://e.com/ok".into())),
            ]
        );
    }
}
