//! Reading what was served: gunzip, the `<loc>`s and `<url>` fields of a document, and
//! validation against the sitemap schemas with xmllint.

use std::io::Read;
use std::path::Path;
use std::process::Command;

pub fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("a complete gzip file");
    out
}

/// Text of every `<loc>`, unescaped, read with a real XML parser.
pub fn locs(xml: &[u8]) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut out = Vec::new();
    let mut in_loc = false;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            quick_xml::events::Event::Start(e) if e.local_name().as_ref() == b"loc" => {
                in_loc = true
            }
            quick_xml::events::Event::End(e) if e.local_name().as_ref() == b"loc" => in_loc = false,
            quick_xml::events::Event::Text(t) if in_loc => {
                out.push(t.unescape().expect("valid entities").into_owned())
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// The text of each `<url>`'s child elements (`loc`, `lastmod`, `priority`, …) by local name, in
/// document order.
pub fn url_fields(xml: &[u8]) -> Vec<std::collections::BTreeMap<String, String>> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    let mut path: Vec<String> = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name == "url" {
                    out.push(std::collections::BTreeMap::new());
                }
                path.push(name);
            }
            Event::End(_) => {
                path.pop();
            }
            Event::Text(t) if path.len() >= 2 && path[path.len() - 2] == "url" => {
                let value = t.unescape().expect("valid entities").into_owned();
                let field = path.last().unwrap().clone();
                out.last_mut().unwrap().insert(field, value);
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

pub enum Schema {
    Urlset,
    Index,
}

/// Validates with xmllint against the official sitemaps.org schemas and, for urlsets, the
/// extension schemas (copies in tests/schemas).
pub fn assert_valid(xml: &[u8], schema: Schema) {
    let xsd = match schema {
        Schema::Urlset => "sitemap-extensions.xsd",
        Schema::Index => "siteindex.xsd",
    };
    if let Some(errors) = schema_errors(xml, xsd) {
        panic!(
            "schema validation failed: {errors}\n{}",
            String::from_utf8_lossy(&xml[..xml.len().min(2000)])
        );
    }
}

/// xmllint's complaint about `xml` against `xsd` (a file in tests/schemas), if any.
pub fn schema_errors(xml: &[u8], xsd: &str) -> Option<String> {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas")
        .join(xsd);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xml).unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--nonet", "--schema"])
        .arg(&xsd)
        .arg(file.path())
        .output()
        .expect("xmllint (Debian package libxml2-utils) must be installed; ./scripts/test.sh installs it");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}
