//! `/license.xml` (RSL 1.0) from ROBOTS_POLICY and ROBOTS_LICENSE_*: served like every file,
//! valid against tests/schemas/rsl-1.0.rnc, named by robots.txt's `License:` line and by the
//! `Link` header of every answer, and carried by each RSS item as `<rsl:content>`.

use std::path::Path;
use std::process::Command;

use crate::feed_checks::{assert_valid_feed, Feed};
use crate::helpers::*;

const POLICY: &str =
    "ai-training=disallow,search=allow,ai-search=disallow:/premium/,GPTBot=disallow:/gpt/";
const LICENSE_URL: &str = "https://www.example.com/license.xml";

/// jing's complaints about `xml` against the RSL 1.0 schema, if any.
pub fn rsl_problems(xml: &[u8]) -> Option<String> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xml).unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/rsl-1.0.rnc");
    let out = Command::new(std::env::var("JING").unwrap_or_else(|_| "jing".into()))
        .arg("-c")
        .arg(&schema)
        .arg(file.path())
        .output()
        .expect("jing (Debian package jing) must be installed");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Each `<content url="…">` of a licence with its permitted and prohibited usages, read with
/// a real XML parser.
pub fn contents(xml: &str) -> Vec<(String, String, String)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut inside: Option<String> = None;
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) if e.local_name().as_ref() == b"content" => {
                let url = e
                    .try_get_attribute("url")
                    .unwrap()
                    .expect("content has a url")
                    .unescape_value()
                    .unwrap()
                    .into_owned();
                out.push((url, String::new(), String::new()));
            }
            Event::Start(e) => {
                inside = Some(String::from_utf8_lossy(e.local_name().as_ref()).into())
            }
            Event::Text(t) => {
                let text = t.unescape().unwrap().into_owned();
                if let Some(last) = out.last_mut() {
                    match inside.as_deref() {
                        Some("permits") => last.1 = text,
                        Some("prohibits") => last.2 = text,
                        _ => {}
                    }
                }
            }
            Event::End(_) => inside = None,
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn the_policy_is_served_as_an_rsl_licence_named_everywhere() {
    let db = TestDb::new().await;
    db.migrate().await;
    db.insert_rows(&[
        Row::new(1, "/blog/a").lastmod("2024-01-01 00:00:00"),
        Row::new(2, "/premium/b").lastmod("2024-02-01 00:00:00"),
    ])
    .await;
    let vars = [
        ("ROBOTS_POLICY", POLICY),
        (
            "ROBOTS_LICENSE_TERMS",
            "https://www.example.com/terms?a=1&b=2",
        ),
        (
            "ROBOTS_LICENSE_PAYMENT",
            "https://www.example.com/licensing",
        ),
        ("ROBOTS_LICENSE_CONTACT", "rights@example.com"),
    ];
    let app = spawn_app(&db.url, &vars).await;

    let resp = app.get("/license.xml").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header(&resp, "content-type"),
        "application/rsl+xml; charset=utf-8"
    );
    let etag = header(&resp, "etag").to_string();
    assert!(etag.starts_with('"') && etag.len() > 20, "strong: {etag}");
    let body = resp.text().await.unwrap();
    assert_eq!(rsl_problems(body.as_bytes()), None, "{body}");
    assert_eq!(
        contents(&body),
        [
            (
                "/".into(),
                "search,ai-index,ai-input".into(),
                "ai-train".into()
            ),
            (
                "/premium/".into(),
                "search".into(),
                "ai-train,ai-index,ai-input".into()
            ),
        ],
        "one content per pattern, GPTBot's own rule left to robots.txt: {body}"
    );
    assert_eq!(
        body.matches("<terms>https://www.example.com/terms?a=1&amp;b=2</terms>")
            .count(),
        2
    );
    assert!(
        body.contains("<custom>https://www.example.com/licensing</custom>"),
        "{body}"
    );
    assert!(
        body.contains("contactEmail=\"rights@example.com\""),
        "{body}"
    );
    let again = app
        .get_with("/license.xml", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());

    let robots = app.get("/robots.txt").await.text().await.unwrap();
    assert_eq!(
        robots.matches(&format!("License: {LICENSE_URL}\n")).count(),
        1,
        "{robots}"
    );
    let link = format!("<{LICENSE_URL}>; rel=\"license\"; type=\"application/rsl+xml\"");
    for path in ["/sitemap.xml", "/robots.txt", "/license.xml", "/feed.rss"] {
        let resp = app.get(path).await;
        assert_eq!(header(&resp, "link"), link, "{path}");
        let etag = header(&resp, "etag").to_string();
        let not_modified = app.get_with(path, &[("if-none-match", &etag)]).await;
        assert_eq!(not_modified.status(), 304, "{path}");
        assert_eq!(header(&not_modified, "link"), link, "{path} 304");
    }

    let rss = app.get("/feed.rss").await.bytes().await.unwrap();
    assert_valid_feed(&rss, Feed::Rss);
    let rss = String::from_utf8(rss.to_vec()).unwrap();
    assert!(
        rss.contains("xmlns:rsl=\"https://rslstandard.org/rsl\""),
        "{rss}"
    );
    let items = rss_licences(&rss);
    assert_eq!(items.len(), 2, "{rss}");
    for item in &items {
        assert_eq!(rsl_problems(item.as_bytes()), None, "{item}");
    }
    let terms: Vec<_> = items.iter().flat_map(|item| contents(item)).collect();
    assert!(terms.contains(&(
        "https://www.example.com/premium/b".into(),
        "search".into(),
        "ai-train,ai-index,ai-input".into()
    )));
    assert!(terms.contains(&(
        "https://www.example.com/blog/a".into(),
        "search,ai-index,ai-input".into(),
        "ai-train".into()
    )));
}

/// Each item's `<rsl:content>` as a licence document of its own.
fn rss_licences(rss: &str) -> Vec<String> {
    rss.split("<rsl:content ")
        .skip(1)
        .map(|rest| {
            let end = rest.find("</rsl:content>").unwrap();
            format!(
                "<rsl xmlns=\"https://rslstandard.org/rsl\"><content {}</content></rsl>",
                rest[..end].replace("rsl:", "")
            )
        })
        .collect()
}

#[tokio::test]
async fn no_licence_when_off_or_when_the_policy_names_no_purpose() {
    let db = TestDb::new().await;
    for vars in [
        vec![("ROBOTS_POLICY", POLICY), ("ROBOTS_LICENSE", "off")],
        vec![("ROBOTS_POLICY", "GPTBot=disallow")],
        vec![],
    ] {
        let app = spawn_app(&db.url, &vars).await;
        assert_eq!(app.get("/license.xml").await.status(), 404, "{vars:?}");
        let resp = app.get("/robots.txt").await;
        assert!(resp.headers().get("link").is_none(), "{vars:?}");
        let robots = resp.text().await.unwrap();
        assert!(!robots.contains("License:"), "{vars:?}: {robots}");
        let rss = app.get("/feed.rss").await.text().await.unwrap();
        assert!(!rss.contains("rsl"), "{vars:?}: {rss}");
    }
}

#[test]
fn bad_licence_settings_stop_the_start() {
    for (name, value) in [
        ("ROBOTS_LICENSE", "maybe"),
        ("ROBOTS_LICENSE_TERMS", "ftp://e.com/terms"),
        ("ROBOTS_LICENSE_PAYMENT", "/licensing"),
        ("ROBOTS_LICENSE_CONTACT", "not an address"),
    ] {
        let out = Sitemapd::new(["check"])
            .env("SITEMAP_BASE_URL", BASE)
            .env("ROBOTS_POLICY", "ai-training=disallow")
            .env(name, value)
            .output();
        assert_eq!(out.status.code(), Some(2), "{name}={value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(name), "{name}: {stderr}");
    }
}

#[test]
fn the_schema_accepts_the_specifications_example_and_refuses_what_it_forbids() {
    let example = "<rsl xmlns=\"https://rslstandard.org/rsl\"><content url=\"/\"><license>\
        <permits type=\"usage\">ai-train</permits><payment type=\"subscription\">\
        <custom>https://your-website.com/contact-form.html</custom></payment></license>\
        </content></rsl>";
    assert_eq!(rsl_problems(example.as_bytes()), None);
    for bad in [
        example.replace("ai-train", "train-ai"),
        example.replace(" url=\"/\"", ""),
        example.replace("type=\"usage\"", "type=\"use\""),
        example.replace("rslstandard.org/rsl", "rslstandard.org/rsl/1.0"),
        example.replace("<license>", "<license><allows/>"),
    ] {
        assert!(rsl_problems(bad.as_bytes()).is_some(), "{bad}");
    }
}
