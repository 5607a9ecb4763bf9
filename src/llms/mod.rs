//! llms.txt (llmstxt.org): a short markdown map of a site for language models, served at
//! `/llms.txt` and `/.well-known/llms.txt` when `LLMS_TXT=on`.
//!
//! Each group's part (its [`Section`]: the newest links the sitemaps list and the `ai-search`
//! policy allows, with the source's optional `title` and `description`) is read by the group's
//! sweep, as the feeds are, and kept in its snapshot with the time its bytes last changed
//! (stored as the whole file [`crate::files::LLMS`], so replicas and restarts agree). The site's file is
//! then composed in memory from its groups' sections ([`compose`]) whenever one of them
//! changes: a request, a `304` or a HEAD never reads the database. The file's size is bounded:
//! at most `LLMS_TXT_PER_GROUP` links per group, each title and description cut short.

mod format;
mod policy;

use std::sync::Arc;

use crate::sitemap::{EntryRules, SeenUrls, UrlKey};
use crate::store::{Store, StoreError};

pub use format::{
    destination, inline, link_line, render, Header, SectionText, MAX_DESCRIPTION_CHARS,
    MAX_TITLE_CHARS, OPTIONAL_SECTION,
};
pub use policy::{ai_search_tokens, allowed_for_all, AiSearchPolicy};

/// The `Link` header value that points at the llms.txt at `path` (llms.txt v2): on sitemapd's
/// answers and, through the enforce snippets, on the site's pages.
pub fn described_by(path: &str) -> String {
    format!("<{path}>; rel=\"describedby\"; type=\"text/markdown\"")
}
/// Title of the unnamed group's section.
pub const UNNAMED_SECTION: &str = "Pages";
/// Most reads per sweep for a section's rows: 2N + 50 rows, then four times as many each
/// round, as the feeds read (rows skipped or disallowed for `ai-search` do not count).
const READ_ROUNDS: usize = 4;

/// A site's llms.txt settings, as configuration gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmsConfig {
    /// `SITE_NAME` (sites file: `name`); `None`: the host.
    pub name: Option<String>,
    /// `SITE_DESCRIPTION` (sites file: `description`); `None`: no summary.
    pub description: Option<String>,
    /// `LLMS_TXT_PER_GROUP`.
    pub per_group: usize,
}

/// What a group contributes to its site's llms.txt, and what decides its links.
pub struct GroupLlms {
    /// The site's header (the same for every group of the site).
    pub header: Arc<Header>,
    /// The section's heading.
    pub title: String,
    /// Listed under `## Optional` (for v1 readers; nothing else depends on it).
    pub optional: bool,
    /// The path prefix whose `llms.txt` holds this group's section alone (`llms_path`).
    pub path: Option<String>,
    /// A news group lists no section: its articles are a 48-hour window for news engines, and
    /// the site's pages are its groups of URLs.
    pub listed: bool,
    pub policy: AiSearchPolicy,
}

/// One link as the file shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The absolute URL, as the sitemaps list it.
    pub url: String,
    /// What stands for a missing title: the URL's path (and query), readable.
    pub path: String,
    pub title: Option<String>,
    pub description: Option<String>,
}

/// A group's links as its last sweep read them, and when their text last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub links: Arc<Vec<Link>>,
    /// Unix seconds (stored with [`crate::files::LLMS`]).
    pub changed_at: i64,
}

impl GroupLlms {
    /// The text this group's part decides, with the header: its fingerprint dates the section,
    /// so a new name or summary dates the file too.
    pub fn section_text(&self, links: &[Link]) -> String {
        render(&self.header, &[self.section(links)])
    }

    pub fn section<'a>(&'a self, links: &'a [Link]) -> SectionText<'a> {
        SectionText {
            title: &self.title,
            optional: self.optional,
            links: if self.listed { links } else { &[] },
        }
    }
}

/// The site's llms.txt from its groups' parts, in configured order.
pub fn compose<'a>(
    header: &Header,
    groups: impl Iterator<Item = (&'a GroupLlms, &'a Section)>,
) -> String {
    let sections: Vec<SectionText<'a>> = groups
        .map(|(group, section)| group.section(&section.links))
        .collect();
    render(header, &sections)
}

/// A group's links as the database holds them now: its newest entries (by lastmod, then id;
/// then those without a lastmod, by id) that the sitemaps list under `rules` and the policy
/// allows, each URL once, at most `per_group`.
pub async fn read_links(
    store: &Store,
    rules: &EntryRules,
    llms: &GroupLlms,
) -> Result<Vec<Link>, StoreError> {
    let wanted = llms.header.per_group;
    if !llms.listed || wanted == 0 {
        return Ok(Vec::new());
    }
    let mut limit = wanted as i64 * 2 + 50;
    let mut links = Vec::new();
    for _ in 0..READ_ROUNDS {
        let rows = store.newest_titled(limit).await?;
        let exhausted = (rows.len() as i64) < limit;
        let mut seen = SeenUrls::default();
        links = rows
            .into_iter()
            .filter_map(|row| {
                let entry = rules.accept(&row.entry).ok()?;
                let allowed = llms.policy.allows(entry.loc.path_and_query());
                (allowed && seen.first_time(UrlKey::of(&entry.loc))).then(|| Link {
                    url: entry.loc.as_str().to_string(),
                    path: crate::feed::readable_title(&entry.loc),
                    title: row.title,
                    description: row.description,
                })
            })
            .take(wanted)
            .collect();
        if links.len() == wanted || exhausted {
            break;
        }
        limit = limit.saturating_mul(4);
    }
    Ok(links)
}
