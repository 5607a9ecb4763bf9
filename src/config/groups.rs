//! Groups: a site's sitemaps split by kind (posts, pages, news), each read from its own source.
//! `SITEMAP_GROUPS` for the one site of the variables, `[[site.group]]` tables in the sites
//! file. Without either, a site has one unnamed group with today's file names.

use super::settings::{is_source_name, SOURCE_EXPECTED};
use crate::sitemap::publication::NewsPublication;

/// Most URLs in one news sitemap file (Google's news sitemap rule).
pub const NEWS_URLS_PER_FILE: usize = 1000;

/// One group of a site, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `None` for the one unnamed group of a site without groups: files `sitemap-K.*`.
    /// Named groups serve `sitemap-<name>-K.*`.
    pub name: Option<String>,
    /// The table or view the group's entries are read from.
    pub source: String,
    pub kind: GroupKind,
    /// Most URLs per file, when the group sets its own (else SITEMAP_PAGE_SIZE; news: 1,000).
    pub page_size: Option<usize>,
    /// Whether rows of the extension tables (`sitemap_alternates`, `sitemap_images`,
    /// `sitemap_videos`), keyed by entry id, belong to this group's entries. Groups have ids of
    /// their own, so by default only a site's first group of URLs has them.
    pub extensions: bool,
    /// The heading of the group's section in llms.txt (sites file: `title`); `None`: the
    /// group's name, `Pages` for the unnamed group.
    pub title: Option<String>,
    /// Whether llms.txt lists the group under `## Optional` (sites file: `llms_optional`).
    pub llms_optional: bool,
    /// The path prefix of the group's pages (sites file: `llms_path`, e.g. `/blog/`): the group
    /// also gets a file of its own at `<prefix>llms.txt` (llms.txt v2).
    pub llms_path: Option<String>,
}

/// What a group's rows are and how its files are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupKind {
    /// Entries with `loc`, `lastmod`, `changefreq`, `priority`: a urlset.
    Urls,
    /// Articles with `publication_date` and `title`: a Google News sitemap of the last 48 hours.
    News(NewsPublication),
}

impl GroupConfig {
    /// The one unnamed group of a site without groups.
    pub fn unnamed(source: &str) -> Self {
        Self {
            name: None,
            source: source.to_string(),
            kind: GroupKind::Urls,
            page_size: None,
            extensions: true,
            title: None,
            llms_optional: false,
            llms_path: None,
        }
    }

    /// The group's page size, given the process-wide one.
    pub fn page_size(&self, default: usize) -> usize {
        match (&self.kind, self.page_size) {
            (_, Some(n)) => n,
            (GroupKind::News(_), None) => NEWS_URLS_PER_FILE.min(default),
            (GroupKind::Urls, None) => default,
        }
    }
}

pub(super) const NAME_EXPECTED: &str =
    "1 to 32 of a-z, 0-9 and _, starting with a letter, each name once";

/// Whether `name` may name a group: it becomes part of file names and metric labels.
pub fn is_group_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `SITEMAP_GROUPS`: `name=source` pairs, comma-separated. Says what is wrong in one phrase.
pub fn parse_group_list(raw: &str) -> Result<Vec<GroupConfig>, String> {
    let mut groups: Vec<GroupConfig> = Vec::new();
    for pair in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, source)) = pair.split_once('=') else {
            return Err(format!(
                "{pair:?} is not name=source; expected comma-separated name=source pairs"
            ));
        };
        let (name, source) = (name.trim(), source.trim());
        check_group(name, source, &groups)?;
        groups.push(GroupConfig {
            name: Some(name.to_string()),
            source: source.to_string(),
            kind: GroupKind::Urls,
            page_size: None,
            // The extension tables' ids are the first group's.
            extensions: groups.is_empty(),
            title: None,
            llms_optional: false,
            llms_path: None,
        });
    }
    if groups.is_empty() {
        return Err("at least one name=source pair".into());
    }
    Ok(groups)
}

/// A group's name (valid, not yet taken among `groups`) and source, as both ways of
/// configuring groups check them.
pub(super) fn check_group(name: &str, source: &str, groups: &[GroupConfig]) -> Result<(), String> {
    check_name(name, groups)?;
    if !is_source_name(source) {
        return Err(format!(
            "group {name}: source {source:?} must be {SOURCE_EXPECTED}"
        ));
    }
    Ok(())
}

/// A group name that is valid and not yet taken among `groups`.
fn check_name(name: &str, groups: &[GroupConfig]) -> Result<(), String> {
    if !is_group_name(name) {
        return Err(format!("group name {name:?} must be {NAME_EXPECTED}"));
    }
    if groups.iter().any(|g| g.name.as_deref() == Some(name)) {
        return Err(format!("group name {name:?} is repeated; {NAME_EXPECTED}"));
    }
    Ok(())
}

/// What `llms_path` must be, for errors.
pub const LLMS_PATH_EXPECTED: &str =
    "a path prefix other than / that starts and ends with / and holds only letters, digits, \
     -, _, . and ~ between them, e.g. /blog/";

/// Whether `path` can be a group's llms.txt prefix: the file goes at `<path>llms.txt`, and the
/// snippets match it in regular expressions without escaping more than `.`.
pub fn is_llms_path(path: &str) -> bool {
    path.len() > 1
        && path.starts_with('/')
        && path.ends_with('/')
        && !path.contains("//")
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~/".contains(&b))
        && !path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitemap::publication::is_news_language;

    #[test]
    fn group_names_are_short_lowercase_identifiers() {
        for good in ["posts", "p", "news_2", &"a".repeat(32)] {
            assert!(is_group_name(good), "{good}");
        }
        for bad in [
            "",
            "Posts",
            "2posts",
            "_x",
            "my-posts",
            "café",
            &"a".repeat(33),
        ] {
            assert!(!is_group_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_group_list_keeps_its_order_and_refuses_repeats() {
        let groups = parse_group_list("posts=sitemap_posts, pages=cms.pages").unwrap();
        let names: Vec<_> = groups.iter().map(|g| g.name.as_deref().unwrap()).collect();
        assert_eq!(names, ["posts", "pages"]);
        assert_eq!(groups[1].source, "cms.pages");
        assert!(parse_group_list("posts=a,posts=b")
            .unwrap_err()
            .contains("repeated"));
        assert!(parse_group_list("Posts=a").unwrap_err().contains("Posts"));
        assert!(parse_group_list("posts")
            .unwrap_err()
            .contains("name=source"));
        assert!(parse_group_list("posts=a;b")
            .unwrap_err()
            .contains("source"));
        assert!(parse_group_list(" , ").is_err());
    }

    #[test]
    fn news_groups_hold_at_most_a_thousand_urls_per_file() {
        let news = GroupConfig {
            kind: GroupKind::News(NewsPublication {
                name: "The Daily".into(),
                language: "en".into(),
            }),
            ..GroupConfig::unnamed("articles")
        };
        assert_eq!(news.page_size(50_000), 1000);
        assert_eq!(news.page_size(10), 10);
        assert_eq!(GroupConfig::unnamed("x").page_size(50_000), 50_000);
        assert!(is_news_language("zh-tw") && is_news_language("en"));
        assert!(!is_news_language("EN") && !is_news_language("english"));
    }
}
