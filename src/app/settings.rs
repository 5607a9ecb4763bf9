//! What a group is, from its site's configuration and robots.txt: the settings a group is made
//! with, and the fingerprint of everything that shapes its bytes.

use bytes::Bytes;

use super::ServedRobots;
use crate::config::{Config, GroupConfig, GroupKind, SiteConfig};
use crate::site::fingerprint::{
    site_groups_fingerprint, ByteSettings, IndexedGroup, NamedGroup, RobotsRules,
};
use crate::site::{GroupSettings, News};
use crate::sitemap::DocumentStyle;

/// What a group is, from its site's configuration and robots.txt.
pub fn group_settings(
    config: &Config,
    site: &SiteConfig,
    group: &GroupConfig,
    robots: &ServedRobots,
) -> GroupSettings {
    let page_size = group.page_size(config.page_size);
    let news = match &group.kind {
        GroupKind::Urls => None,
        GroupKind::News(publication) => Some(News {
            publication: publication.clone(),
            window_secs: config.news_window.as_secs() as i64,
        }),
    };
    let robots_rules = RobotsRules {
        check_agents: &config.check_agents,
        rules_text: &robots.rules_text,
    };
    let settings = ByteSettings {
        base_url: site.base_url.as_str(),
        files_url: site.sitemaps_url.as_str(),
        page_size,
        stylesheet: config.stylesheet,
        robots: robots_rules,
        source: &group.source,
        named: group.name.as_deref().map(|name| NamedGroup {
            name,
            news: news.as_ref().map(|news| {
                (
                    news.publication.name.as_str(),
                    news.publication.language.as_str(),
                    news.window_secs,
                )
            }),
            extensions: group.extensions,
        }),
    }
    .fingerprint();
    GroupSettings {
        name: group.name.clone(),
        news,
        fingerprint: settings,
        rules: super::entry_rules(config, site, robots),
        style: DocumentStyle {
            stylesheet: config
                .stylesheet
                .then(|| site.sitemaps_url.file_url(crate::files::STYLESHEET)),
            css: config
                .stylesheet
                .then(|| site.sitemaps_url.file_url(crate::files::CSS)),
        },
        base: site.base_url.clone(),
        files: site.sitemaps_url.clone(),
        page_size,
        // A news group's articles are not entries with a lastmod: they are in no feed.
        feed_size: match group.kind {
            GroupKind::Urls => config.feed_size,
            GroupKind::News(_) => 0,
        },
        source: group.source.clone(),
        extensions: group.extensions,
        site_groups: group.name.is_some().then(|| {
            let groups: Vec<IndexedGroup> = site.groups.iter().map(indexed_group).collect();
            site_groups_fingerprint(&groups)
        }),
        robots_body: Bytes::from(robots.body.clone()),
        robots_rules: robots_rules.fingerprint(),
        llms: crate::config::group_llms(site, group, robots.rules.clone(), &config.crawlers),
        license: robots
            .license
            .as_ref()
            .map(|license| (license.clone(), Bytes::from(license.document()))),
        links: links(site, robots).and_then(|links| axum::http::HeaderValue::from_str(&links).ok()),
    }
}

/// The `Link` header of every answer of `site` (and, through the enforce snippets, of its
/// pages): its licence and its llms.txt, when served.
pub fn links(site: &SiteConfig, robots: &ServedRobots) -> Option<String> {
    links_to(site, robots, crate::files::LLMS_PATHS[0])
}

/// For each group with a llms.txt of its own, its path prefix and the `Link` of the pages under
/// it (its own llms.txt, the most specific), longest prefix first.
pub fn links_by_prefix(site: &SiteConfig, robots: &ServedRobots) -> Vec<(String, String)> {
    if site.llms.is_none() {
        return Vec::new();
    }
    let mut found: Vec<(String, String)> = site
        .groups
        .iter()
        .filter_map(|g| g.llms_path.clone())
        .filter_map(|prefix| {
            let own = format!("{prefix}{}", crate::files::LLMS);
            Some((prefix, links_to(site, robots, &own)?))
        })
        .collect();
    found.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

/// The licence's link and llms.txt's at `llms`, for the site's answers and pages.
fn links_to(site: &SiteConfig, robots: &ServedRobots, llms: &str) -> Option<String> {
    let mut links = Vec::new();
    if robots.license.is_some() {
        links.push(format!(
            "<{}>; rel=\"license\"; type=\"{}\"",
            super::license_url(&site.base_url),
            crate::robots::RSL_TYPE
        ));
    }
    if site.llms.is_some() {
        links.push(crate::llms::described_by(llms));
    }
    (!links.is_empty()).then(|| links.join(", "))
}

/// A group as the site's index dates the site's groups.
fn indexed_group(group: &GroupConfig) -> IndexedGroup<'_> {
    IndexedGroup {
        name: group.name.as_deref(),
        source: &group.source,
        kind: match &group.kind {
            GroupKind::Urls => ("urls", None),
            GroupKind::News(publication) => (
                "news",
                Some((publication.name.as_str(), publication.language.as_str())),
            ),
        },
    }
}
