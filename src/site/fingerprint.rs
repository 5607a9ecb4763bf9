//! The fingerprints stored files are checked against before they are served after a start: a
//! stable encoding of exactly the settings that change a file's bytes or the entries it holds,
//! hashed with the writer's format version ([`crate::sitemap::Fingerprint`] is seeded with it).
//!
//! Nothing here depends on the crate version or on `{:?}` output, so a new build that writes the
//! same bytes serves the stored files at once; a change to the writer's output raises its format
//! version instead (the pinned fingerprints below fail until it is raised on purpose).

use crate::sitemap::Fingerprint;

/// What of a group's configuration decides its files' bytes.
#[derive(Debug, Clone, Copy)]
pub struct ByteSettings<'a> {
    /// The site's base URL: entries resolve against it and must fall under it.
    pub base_url: &'a str,
    /// Where the files are published (the index lists them there).
    pub files_url: &'a str,
    pub page_size: usize,
    /// Whether documents carry the `<?xml-stylesheet?>` line.
    pub stylesheet: bool,
    /// The agents robots.txt's rules are checked for, and those rules as text.
    pub robots: RobotsRules<'a>,
    /// The table or view the entries are read from.
    pub source: &'a str,
    /// Of a named group: its name, news publication and whether extensions apply.
    pub named: Option<NamedGroup<'a>>,
}

/// What decides which entries robots.txt leaves out.
#[derive(Debug, Clone, Copy)]
pub struct RobotsRules<'a> {
    pub check_agents: &'a [String],
    pub rules_text: &'a str,
}

/// A named group's own part of the settings.
#[derive(Debug, Clone, Copy)]
pub struct NamedGroup<'a> {
    pub name: &'a str,
    /// Publication name, language and window in seconds, for a news group.
    pub news: Option<(&'a str, &'a str, i64)>,
    pub extensions: bool,
}

/// A group of a site with named groups, as the site's index dates it.
#[derive(Debug, Clone, Copy)]
pub struct IndexedGroup<'a> {
    pub name: Option<&'a str>,
    pub source: &'a str,
    /// `urls`, or `news` with the publication name and language.
    pub kind: (&'a str, Option<(&'a str, &'a str)>),
}

/// Writes `key=value` fields, each value length-prefixed so no value can forge another field.
#[derive(Default)]
struct Encoder(Vec<u8>);

impl Encoder {
    fn field(&mut self, key: &str, value: &str) -> &mut Self {
        self.0.extend_from_slice(key.as_bytes());
        self.0
            .extend_from_slice(format!("={}:", value.len()).as_bytes());
        self.0.extend_from_slice(value.as_bytes());
        self.0.push(b'\n');
        self
    }

    fn list(&mut self, key: &str, values: &[impl AsRef<str>]) -> &mut Self {
        self.field(key, &values.len().to_string());
        for value in values {
            self.field("-", value.as_ref());
        }
        self
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.0)
    }
}

impl ByteSettings<'_> {
    /// The fingerprint stored with a group's files.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut e = Encoder::default();
        e.field("settings", "1")
            .field("base", self.base_url)
            .field("files", self.files_url)
            .field("page_size", &self.page_size.to_string())
            .field("stylesheet", if self.stylesheet { "xsl+css" } else { "no" })
            .field("source", self.source);
        self.robots.encode(&mut e);
        if let Some(named) = &self.named {
            e.field("group", named.name);
            match named.news {
                None => e.field("news", "no"),
                Some((name, language, window)) => e
                    .field("news", "yes")
                    .field("news_name", name)
                    .field("news_language", language)
                    .field("news_window", &window.to_string()),
            };
            e.field("extensions", if named.extensions { "yes" } else { "no" });
        }
        e.fingerprint()
    }
}

impl RobotsRules<'_> {
    fn encode(&self, e: &mut Encoder) {
        e.list("check_agents", self.check_agents)
            .field("rules", self.rules_text);
    }

    /// The fingerprint that tells whether robots.txt now leaves out other entries.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut e = Encoder::default();
        e.field("robots", "1");
        self.encode(&mut e);
        e.fingerprint()
    }
}

/// The fingerprint of a site's groups (names, sources, kinds, in order).
pub fn site_groups_fingerprint(groups: &[IndexedGroup<'_>]) -> Fingerprint {
    let mut e = Encoder::default();
    e.field("groups", &groups.len().to_string());
    for group in groups {
        e.field("name", group.name.unwrap_or(""))
            .field("unnamed", if group.name.is_none() { "yes" } else { "no" })
            .field("source", group.source)
            .field("kind", group.kind.0);
        if let Some((name, language)) = group.kind.1 {
            e.field("news_name", name).field("news_language", language);
        }
    }
    e.fingerprint()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings<'a>(agents: &'a [String]) -> ByteSettings<'a> {
        ByteSettings {
            base_url: "https://www.example.com/",
            files_url: "https://www.example.com/",
            page_size: 50_000,
            stylesheet: false,
            robots: RobotsRules {
                check_agents: agents,
                rules_text: "User-agent: *\nDisallow: /private/\n",
            },
            source: "sitemap_entries",
            named: None,
        }
    }

    /// Pinned: stored files of every site are served at once after an upgrade only while this
    /// holds. Change it only with the writer's format version (a release that changes bytes).
    #[test]
    fn the_settings_fingerprint_is_pinned() {
        let agents = vec!["*".to_string()];
        assert_eq!(
            settings(&agents).fingerprint().hex(),
            "a1110f385e12d86cdee707cf71c6ef30",
            "the stored settings fingerprint changed: every stored file would be re-made after \
             an upgrade; only change it together with the writer's format version"
        );
    }

    #[test]
    fn every_setting_that_changes_bytes_changes_the_fingerprint() {
        let agents = vec!["*".to_string()];
        let base = settings(&agents);
        let other_agents = vec!["Googlebot".to_string()];
        let variants = [
            ByteSettings {
                base_url: "https://example.com/",
                ..base
            },
            ByteSettings {
                files_url: "https://cdn.example.com/",
                ..base
            },
            ByteSettings {
                page_size: 1000,
                ..base
            },
            ByteSettings {
                stylesheet: true,
                ..base
            },
            ByteSettings {
                source: "other",
                ..base
            },
            ByteSettings {
                robots: RobotsRules {
                    check_agents: &other_agents,
                    ..base.robots
                },
                ..base
            },
            ByteSettings {
                robots: RobotsRules {
                    rules_text: "",
                    ..base.robots
                },
                ..base
            },
            ByteSettings {
                named: Some(NamedGroup {
                    name: "posts",
                    news: None,
                    extensions: false,
                }),
                ..base
            },
        ];
        for variant in variants {
            assert_ne!(variant.fingerprint(), base.fingerprint(), "{variant:?}");
        }
    }

    #[test]
    fn values_cannot_spill_into_other_fields() {
        let a = vec!["a,b".to_string()];
        let b = vec!["a".to_string(), "b".to_string()];
        assert_ne!(settings(&a).fingerprint(), settings(&b).fingerprint());
    }
}
