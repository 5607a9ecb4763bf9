//! Where an import reads from: a file or stdin, gunzipped when it starts with the gzip magic,
//! and recognised as XML or as a text sitemap by its first bytes, never by its name.
//!
//! Everything here streams through a `BufRead`: a 50 MB sitemap is never held in memory.
//! [`Tracked`] counts the lines a reader has consumed, so parse errors can name a line.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The first two bytes of every gzip stream (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const READ_BUFFER: usize = 64 * 1024;

/// What `sitemapd import` was asked to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// `-`
    Stdin,
    File(PathBuf),
}

impl Input {
    /// `-` is stdin, anything else a path.
    pub fn from_arg(arg: &str) -> Self {
        if arg == "-" {
            Self::Stdin
        } else {
            Self::File(PathBuf::from(arg))
        }
    }

    /// How reports name it.
    pub fn label(&self) -> String {
        match self {
            Self::Stdin => "stdin".into(),
            Self::File(path) => path.display().to_string(),
        }
    }

    /// Where the files an index lists are looked for: beside the index, or in the current
    /// directory for an index read from stdin.
    pub fn directory(&self) -> PathBuf {
        match self {
            Self::File(path) => path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            Self::Stdin => PathBuf::from("."),
        }
    }

    fn open(&self) -> io::Result<Box<dyn BufRead>> {
        Ok(match self {
            Self::Stdin => Box::new(BufReader::with_capacity(READ_BUFFER, io::stdin())),
            Self::File(path) => Box::new(BufReader::with_capacity(READ_BUFFER, File::open(path)?)),
        })
    }
}

/// What an input's content turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Xml,
    Text,
}

/// An opened input, positioned at its first byte (after gunzipping).
pub struct Opened {
    pub format: Format,
    /// Whether the file was gzip: positions then count bytes of the gunzipped content.
    pub gzipped: bool,
    pub reader: Box<dyn BufRead>,
}

/// Opens `input`, gunzips it if its first bytes say gzip, and tells XML from text.
pub fn open(input: &Input) -> io::Result<Opened> {
    let mut reader = input.open()?;
    let gzipped = reader.fill_buf()?.starts_with(&GZIP_MAGIC);
    if gzipped {
        // Multi-member: `cat a.gz b.gz` is a valid gzip file of both.
        let gunzipped = flate2::bufread::MultiGzDecoder::new(reader);
        reader = Box::new(BufReader::with_capacity(READ_BUFFER, gunzipped));
    }
    let format = if looks_like_xml(reader.fill_buf()?) {
        Format::Xml
    } else {
        Format::Text
    };
    Ok(Opened {
        format,
        gzipped,
        reader,
    })
}

/// XML starts with `<` once a byte order mark and whitespace are skipped; a text sitemap
/// starts with a URL (or is empty).
fn looks_like_xml(start: &[u8]) -> bool {
    let start = start.strip_prefix(UTF8_BOM).unwrap_or(start);
    start.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<')
}

/// Bytes of recent input kept to find the line of a position shortly before the read point.
const TAIL_BYTES: usize = 64 * 1024;

/// A `BufRead` that counts the lines of what its consumer has consumed, and keeps the last
/// bytes so the line of a recent position (where a parser stopped, an element started) can
/// be told exactly.
pub struct Tracked<R> {
    inner: R,
    seen: Seen,
    /// Where the XML node being read began (see [`Tracked::begin_node`]); `None` for a reader
    /// of anything else, which has no nodes.
    node_start: Option<u64>,
}

/// Most bytes one XML node (a text, a comment, a tag with its attributes) may take. A `<loc>`
/// holds at most 2,048 characters; this leaves a wide margin, and keeps what the parser
/// buffers for one node, whatever the file holds, small.
pub const MAX_NODE_BYTES: u64 = 64 * 1024;

/// Why a read stopped: a node longer than [`MAX_NODE_BYTES`].
#[derive(Debug, thiserror::Error)]
#[error("an XML node (text, comment or tag) longer than {MAX_NODE_BYTES} bytes: the rest of the file is refused rather than held in memory")]
pub struct NodeTooLong;

/// What has been consumed so far: how much, how many newlines, and the last bytes.
struct Seen {
    bytes: u64,
    newlines: u64,
    tail: VecDeque<u8>,
}

impl<R: BufRead> Tracked<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            seen: Seen {
                bytes: 0,
                newlines: 0,
                tail: VecDeque::with_capacity(TAIL_BYTES),
            },
            node_start: None,
        }
    }

    /// A new XML node starts here: reading more than [`MAX_NODE_BYTES`] before the next call
    /// is an error ([`NodeTooLong`]).
    pub fn begin_node(&mut self) {
        self.node_start = Some(self.seen.bytes);
    }

    /// 1-based line of the byte at `position` (bytes from the start), if it is recent enough.
    pub fn line_at(&self, position: u64) -> Option<u64> {
        let seen = &self.seen;
        let back = usize::try_from(seen.bytes.checked_sub(position)?).ok()?;
        if back > seen.tail.len() {
            return None;
        }
        let after = seen
            .tail
            .iter()
            .skip(seen.tail.len() - back)
            .filter(|b| **b == b'\n')
            .count() as u64;
        Some(1 + seen.newlines - after)
    }
}

impl Seen {
    fn record(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        self.newlines += bytes.iter().filter(|b| **b == b'\n').count() as u64;
        let keep = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
        let overflow = (self.tail.len() + keep.len()).saturating_sub(TAIL_BYTES);
        self.tail.drain(..overflow);
        self.tail.extend(keep);
    }
}

impl<R: BufRead> Read for Tracked<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Tracked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self
            .node_start
            .is_some_and(|start| self.seen.bytes - start > MAX_NODE_BYTES)
        {
            return Err(io::Error::new(io::ErrorKind::InvalidData, NodeTooLong));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // The bytes being consumed are still in the inner buffer: fill_buf returns them again
        // without reading.
        if let Ok(buffer) = self.inner.fill_buf() {
            self.seen.record(&buffer[..amount.min(buffer.len())]);
        }
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_decides_the_format_not_the_name() {
        assert!(looks_like_xml(b"<?xml version=\"1.0\"?><urlset/>"));
        assert!(looks_like_xml(b"\xEF\xBB\xBF\n  <urlset/>"));
        assert!(!looks_like_xml(b"https://e.com/<a>\n"));
        assert!(!looks_like_xml(b""));
    }

    #[test]
    fn a_tracked_reader_knows_the_line_of_recent_positions() {
        let text = b"one\ntwo\nthree\nfour";
        let mut reader = Tracked::new(BufReader::with_capacity(3, &text[..]));
        let mut all = Vec::new();
        reader.read_to_end(&mut all).unwrap();
        assert_eq!(all, text);
        assert_eq!(reader.line_at(0), Some(1));
        assert_eq!(reader.line_at(3), Some(1));
        assert_eq!(reader.line_at(4), Some(2));
        assert_eq!(reader.line_at(14), Some(4));
        assert_eq!(reader.line_at(99), None);
    }

    #[test]
    fn positions_older_than_the_tail_have_no_line() {
        let text = "x\n".repeat(TAIL_BYTES);
        let mut reader = Tracked::new(BufReader::new(text.as_bytes()));
        io::copy(&mut reader, &mut io::sink()).unwrap();
        assert_eq!(reader.line_at(0), None);
        assert_eq!(
            reader.line_at(text.len() as u64 - 2),
            Some(TAIL_BYTES as u64)
        );
    }
}
