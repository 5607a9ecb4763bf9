//! `/license.xml`: the crawler policy as an RSL 1.0 licence (Really Simple Licensing,
//! `application/rsl+xml`), and the owner's optional terms (`ROBOTS_LICENSE_*`).
//!
//! Only the policy's purpose rules speak here, each through the RSL usage its purpose maps to
//! ([`usages`]): `search` is `search`, `ai-training` is `ai-train`, `ai-search` is `ai-index`
//! and `ai-input`. RSL licenses uses, not agents, so a crawler's own rule
//! (`GPTBot=disallow:/premium/`) and purposes with no RSL usage stay in robots.txt alone.
//!
//! One `<content url="…">` per pattern the rules name (RFC 9309 patterns as written, `/` for
//! the whole site), each saying for every mapped purpose whether its usage is permitted or
//! prohibited there; RSL readers, like robots.txt parsers, take the longest matching `url`
//! ([`License::content_for`]), so each `<content>` carries every purpose's state, not only the
//! rule that named its pattern. Pure: policy and settings in, bytes out.

use super::pattern::{request_path, Pattern};
use super::policy::{Access, Policy, Who};
use crate::crawlers::registry::Purpose;

/// RSL 1.0's namespace.
pub const RSL_NS: &str = "https://rslstandard.org/rsl";
/// The media type of an RSL document.
pub const RSL_TYPE: &str = "application/rsl+xml";

/// The RSL usages a purpose's rule speaks for; none for purposes RSL has no usage for.
pub fn usages(purpose: Purpose) -> &'static [&'static str] {
    match purpose {
        Purpose::Search => &["search"],
        Purpose::AiTraining => &["ai-train"],
        Purpose::AiSearch => &["ai-index", "ai-input"],
        _ => &[],
    }
}

/// `ROBOTS_LICENSE_*`: the owner's terms written into every `<content>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LicenseTerms {
    /// `ROBOTS_LICENSE_TERMS`: a page of the owner's licensing terms, as `<terms>`.
    pub terms: Option<String>,
    /// `ROBOTS_LICENSE_PAYMENT`: where a licence for the permitted uses is obtained, as
    /// `<payment type="subscription"><custom>…</custom></payment>`.
    pub payment: Option<String>,
    /// `ROBOTS_LICENSE_CONTACT`: an e-mail address or a URL, as `<copyright>`'s contact.
    pub contact: Option<String>,
}

/// `ROBOTS_LICENSE`: `on` (default) or `off`, with the terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LicenseSetting {
    On(LicenseTerms),
    Off,
}

impl Default for LicenseSetting {
    fn default() -> Self {
        LicenseSetting::On(LicenseTerms::default())
    }
}

/// The licence of one pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The RFC 9309 pattern, as the policy writes it.
    pub url: String,
    pub permits: Vec<&'static str>,
    pub prohibits: Vec<&'static str>,
}

/// A site's licence: one [`Content`] per pattern, `/` first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct License {
    pub contents: Vec<Content>,
    terms: LicenseTerms,
    /// Who holds the rights, for `<copyright>` (the site's name, else its host).
    owner: String,
}

impl License {
    /// The licence `policy` makes, if it names a purpose RSL has a usage for and the setting
    /// is on.
    pub fn of(policy: Option<&Policy>, setting: &LicenseSetting, owner: &str) -> Option<License> {
        let (LicenseSetting::On(terms), Some(policy)) = (setting, policy) else {
            return None;
        };
        let rules: Vec<(Purpose, &Access)> = policy
            .rules()
            .iter()
            .filter_map(|rule| match rule.who {
                Who::Purpose(purpose) if !usages(purpose).is_empty() => {
                    Some((purpose, &rule.access))
                }
                _ => None,
            })
            .collect();
        if rules.is_empty() {
            return None;
        }
        let mut patterns: Vec<String> = vec!["/".to_string()];
        for (_, access) in &rules {
            if let Access::Disallow(paths) = access {
                for path in paths {
                    if !patterns.contains(path) && !super::policy::matches_everything(path) {
                        patterns.push(path.clone());
                    }
                }
            }
        }
        let contents = patterns
            .into_iter()
            .map(|url| content(url, &rules))
            .collect();
        Some(License {
            contents,
            terms: terms.clone(),
            owner: owner.to_string(),
        })
    }

    /// The `<content>` an RSL reader applies to `path` (a request path, with its query): the
    /// longest `url` pattern that matches it, as in RFC 9309.
    pub fn content_for(&self, path: &str) -> &Content {
        let path = request_path(path);
        self.contents
            .iter()
            .map(|c| (c, Pattern::new(&c.url)))
            .filter(|(_, pattern)| pattern.matches(&path))
            .max_by_key(|(_, pattern)| pattern.octets())
            .map_or(&self.contents[0], |(c, _)| c)
    }

    /// The standalone document, `/license.xml`.
    pub fn document(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!("<rsl xmlns=\"{RSL_NS}\">\n"));
        for content in &self.contents {
            self.push_content(&mut out, "", &xml(&content.url), content);
            out.push('\n');
        }
        out.push_str("</rsl>\n");
        out
    }

    /// `<rsl:content url="…">` for an RSS item whose link is `url` (absolute) and path `path`.
    pub fn rss_item(&self, url: &str, path: &str) -> String {
        let mut out = String::new();
        self.push_content(&mut out, "rsl:", &xml(url), self.content_for(path));
        out
    }

    fn push_content(&self, out: &mut String, prefix: &str, url: &str, content: &Content) {
        out.push_str(&format!("<{prefix}content url=\"{url}\">"));
        out.push_str(&format!("<{prefix}license>"));
        for (element, list) in [
            ("permits", &content.permits),
            ("prohibits", &content.prohibits),
        ] {
            if !list.is_empty() {
                out.push_str(&format!(
                    "<{prefix}{element} type=\"usage\">{}</{prefix}{element}>",
                    list.join(",")
                ));
            }
        }
        if let Some(payment) = &self.terms.payment {
            out.push_str(&format!(
                "<{prefix}payment type=\"subscription\"><{prefix}custom>{}</{prefix}custom></{prefix}payment>",
                xml(payment)
            ));
        }
        out.push_str(&format!("</{prefix}license>"));
        if let Some(contact) = &self.terms.contact {
            let attribute = match contact.contains('@') && !contact.contains("://") {
                true => "contactEmail",
                false => "contactUrl",
            };
            out.push_str(&format!(
                "<{prefix}copyright type=\"organization\" {attribute}=\"{}\">{}</{prefix}copyright>",
                xml(contact),
                xml(&self.owner)
            ));
        }
        if let Some(terms) = &self.terms.terms {
            out.push_str(&format!("<{prefix}terms>{}</{prefix}terms>", xml(terms)));
        }
        out.push_str(&format!("</{prefix}content>"));
    }
}

/// The licence of `url`: each purpose's usages permitted, unless its rule disallows the
/// pattern itself or the path the pattern starts with.
fn content(url: String, rules: &[(Purpose, &Access)]) -> Content {
    let sample: String = url
        .chars()
        .take_while(|c| !matches!(c, '*' | '$'))
        .collect();
    let sample = if sample.is_empty() {
        "/".into()
    } else {
        sample
    };
    let (mut permits, mut prohibits) = (Vec::new(), Vec::new());
    for (purpose, access) in rules {
        let closed = match access {
            Access::Allow => false,
            Access::Disallow(paths) => paths.contains(&url) || !access.allows(&sample),
        };
        let list = if closed { &mut prohibits } else { &mut permits };
        list.extend_from_slice(usages(*purpose));
    }
    Content {
        url,
        permits,
        prohibits,
    }
}

fn xml(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn license(policy: &str, terms: LicenseTerms) -> Option<License> {
        let policy = Policy::parse(policy, "ROBOTS_POLICY").unwrap();
        License::of(Some(&policy), &LicenseSetting::On(terms), "example.com")
    }

    #[test]
    fn each_pattern_says_every_purpose_it_maps() {
        let found = license(
            "ai-training=disallow,search=allow,ai-search=disallow:/premium/ /*.pdf$,GPTBot=disallow:/x/",
            LicenseTerms::default(),
        )
        .unwrap();
        let urls: Vec<&str> = found.contents.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(urls, ["/", "/premium/", "/*.pdf$"]);
        assert_eq!(
            found.contents[0].permits,
            ["search", "ai-index", "ai-input"]
        );
        assert_eq!(found.contents[0].prohibits, ["ai-train"]);
        assert_eq!(
            found.contents[1].prohibits,
            ["ai-train", "ai-index", "ai-input"]
        );
        assert_eq!(found.contents[2].permits, ["search"]);
        assert_eq!(found.content_for("/premium/a").url, "/premium/");
        assert_eq!(found.content_for("/a/b.pdf").url, "/*.pdf$");
        assert_eq!(found.content_for("/a/b.pdf?x").url, "/");
        assert_eq!(found.content_for("/blog/").url, "/");
    }

    #[test]
    fn no_licence_without_a_purpose_rsl_knows_or_when_off() {
        assert!(license("GPTBot=disallow,seo=disallow", LicenseTerms::default()).is_none());
        let policy = Policy::parse("ai-training=disallow", "ROBOTS_POLICY").unwrap();
        assert!(License::of(Some(&policy), &LicenseSetting::Off, "e").is_none());
        assert!(License::of(None, &LicenseSetting::default(), "e").is_none());
    }

    #[test]
    fn the_owners_terms_are_in_every_content_escaped() {
        let terms = LicenseTerms {
            terms: Some("https://e.com/terms?a=1&b=2".into()),
            payment: Some("https://e.com/buy".into()),
            contact: Some("rights@e.com".into()),
        };
        let doc = license("ai-training=disallow:/p/", terms)
            .unwrap()
            .document();
        assert_eq!(
            doc.matches("<terms>https://e.com/terms?a=1&amp;b=2</terms>")
                .count(),
            2
        );
        assert!(doc.contains("<payment type=\"subscription\"><custom>https://e.com/buy</custom>"));
        assert!(doc.contains("contactEmail=\"rights@e.com\">example.com</copyright>"));
        assert!(doc.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rsl xmlns=\"https://rslstandard.org/rsl\">\n<content url=\"/\">"));
    }
}
