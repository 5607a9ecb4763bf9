//! `SITEMAP_SITES_FILE`: several sites from one process, each a `[[site]]` table.

use std::path::PathBuf;

use super::groups::{check_group, GroupConfig, GroupKind};
use super::robots::{with_entry, RobotsEntry, SiteRobots};
use super::settings::{is_source_name, SOURCE_EXPECTED};
use super::{BaseUrl, ConfigError, MAX_URLS_PER_FILE};
use crate::crawlers::registry::Registry;
use crate::sitemap::publication::{is_news_language, NewsPublication};

/// What differs between the sites one process serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteConfig {
    /// The site's URLs: every entry must fall under it; robots.txt is at its host's root.
    pub base_url: BaseUrl,
    /// Where the site's sitemap files, feeds and stylesheet are published and served.
    pub sitemaps_url: BaseUrl,
    /// The site's groups in configured order (the order of the index), at least one.
    pub groups: Vec<GroupConfig>,
    pub robots_template: Option<PathBuf>,
    /// llms.txt, when the site serves it (`LLMS_TXT=on`; sites file: `llms_txt = true`).
    pub llms: Option<crate::llms::LlmsConfig>,
    /// ROBOTS_POLICY and ROBOTS_CONTENT_SIGNAL, or the site's `[site.robots]`.
    pub robots: SiteRobots,
    /// Where the site's entries are read (`source_database_url`, else `SOURCE_DATABASE_URL`);
    /// `None`: from `DATABASE_URL`.
    pub source_database_url: Option<super::DatabaseUrl>,
}

impl SiteConfig {
    /// Absolute URL of the site's sitemap index, where it is published.
    pub fn index_url(&self) -> String {
        self.sitemaps_url.file_url(crate::files::INDEX)
    }
}

/// One `[[site]]` table of SITEMAP_SITES_FILE, as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SiteEntry {
    base_url: String,
    sitemaps_url: Option<String>,
    source: Option<String>,
    robots_template: Option<PathBuf>,
    group: Option<Vec<GroupEntry>>,
    llms_txt: Option<bool>,
    name: Option<String>,
    description: Option<String>,
    robots: Option<RobotsEntry>,
    source_database_url: Option<String>,
}

/// One `[[site.group]]` table, as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupEntry {
    name: String,
    source: String,
    kind: Option<String>,
    page_size: Option<usize>,
    news_name: Option<String>,
    news_language: Option<String>,
    extensions: Option<bool>,
    title: Option<String>,
    llms_optional: Option<bool>,
    llms_path: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SitesFile {
    site: Vec<SiteEntry>,
}

/// Reads SITEMAP_SITES_FILE: `[[site]]` tables with `base_url`, optional `sitemaps_url`
/// (default: the base URL), `source` or `[[site.group]]` tables (defaulting to the groups of
/// SITEMAP_GROUPS or SITEMAP_SOURCE) and `robots_template` (defaulting to ROBOTS_TEMPLATE).
///
/// Requests are told apart by Host and path, so: one site per base URL host (robots.txt is one
/// file per host), and one site per sitemaps URL. Sitemaps URLs may nest (`/shop/` and
/// `/shop/outlet/` on one host): file names hold no `/`, so a request's directory names exactly
/// one of them.
pub(super) fn read_sites_file(
    path: &PathBuf,
    default_groups: &[GroupConfig],
    default_template: Option<&PathBuf>,
    default_robots: &SiteRobots,
    llms: &super::llms::LlmsEnv,
    registry: &Registry,
) -> Result<Vec<SiteConfig>, ConfigError> {
    let shown = path.display().to_string();
    let fail = |expected: String| ConfigError::new("SITEMAP_SITES_FILE", &shown, expected);
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it ({e})")))?;
    let file: SitesFile = toml::from_str(&text).map_err(|e| {
        let message = e.message().to_string();
        fail(format!(
            "a TOML file of [[site]] tables with base_url, sitemaps_url, source, \
             source_database_url, robots_template, [site.robots] and [[site.group]] tables \
             ({message})"
        ))
    })?;
    if file.site.is_empty() {
        return Err(fail("at least one [[site]] table".into()));
    }
    let mut sites: Vec<SiteConfig> = Vec::with_capacity(file.site.len());
    for (n, entry) in file.site.into_iter().enumerate() {
        let n = n + 1;
        let base_url = BaseUrl::parse(&entry.base_url).map_err(|e| {
            fail(format!(
                "site {n}: base_url {:?} must be {e}",
                entry.base_url
            ))
        })?;
        let sitemaps_url = match &entry.sitemaps_url {
            Some(value) => BaseUrl::parse(value)
                .map_err(|e| fail(format!("site {n}: sitemaps_url {value:?} must be {e}")))?,
            None => base_url.clone(),
        };
        let groups = match (entry.source, entry.group) {
            (Some(_), Some(_)) => {
                return Err(fail(format!(
                    "site {n}: either source or [[site.group]] tables, not both"
                )))
            }
            (Some(source), None) if !is_source_name(&source) => {
                return Err(fail(format!(
                    "site {n}: source {source:?} must be {SOURCE_EXPECTED}"
                )))
            }
            (Some(source), None) => vec![GroupConfig::unnamed(&source)],
            (None, Some(tables)) => {
                site_groups(tables).map_err(|e| fail(format!("site {n}: {e}")))?
            }
            (None, None) => default_groups.to_vec(),
        };
        if let Some(other) = sites
            .iter()
            .position(|s| s.base_url.shares_host_with(&base_url))
        {
            return Err(fail(format!(
                "site {n}: {} has the host of site {}; one site per host (one robots.txt per host)",
                base_url.as_str(),
                other + 1
            )));
        }
        if let Some(other) = sites.iter().position(|s| {
            s.sitemaps_url.shares_host_with(&sitemaps_url)
                && s.sitemaps_url.path() == sitemaps_url.path()
        }) {
            return Err(fail(format!(
                "site {n}: its sitemaps are published at {}, like those of site {}; \
                 give each site its own sitemaps_url (it defaults to base_url)",
                sitemaps_url.as_str(),
                other + 1
            )));
        }
        let source_database_url = match &entry.source_database_url {
            Some(value) => Some(
                super::DatabaseUrl::parse(value)
                    .map_err(|e| fail(format!("site {n}: source_database_url must be {e}")))?,
            ),
            None => None,
        };
        let site_llms = super::llms::site_llms(llms, entry.llms_txt, entry.name, entry.description);
        let robots = with_entry(default_robots, entry.robots, n, registry)
            .map_err(|e| fail(format!("site {n}: {e}")))?;
        sites.push(SiteConfig {
            base_url,
            sitemaps_url,
            groups,
            robots_template: entry.robots_template.or_else(|| default_template.cloned()),
            llms: site_llms,
            robots,
            source_database_url,
        });
    }
    Ok(sites)
}

/// A site's `[[site.group]]` tables, checked: names, sources, kinds and page sizes.
fn site_groups(tables: Vec<GroupEntry>) -> Result<Vec<GroupConfig>, String> {
    if tables.is_empty() {
        return Err("at least one [[site.group]] table".into());
    }
    let mut groups: Vec<GroupConfig> = Vec::with_capacity(tables.len());
    for table in tables {
        check_group(&table.name, &table.source, &groups)?;
        let name = table.name;
        let kind = match table.kind.as_deref().unwrap_or("urls") {
            "urls" if table.news_name.is_some() || table.news_language.is_some() => {
                return Err(format!(
                    "group {name}: news_name and news_language are for kind = \"news\""
                ))
            }
            "urls" => GroupKind::Urls,
            "news" => GroupKind::News(news_publication(
                &name,
                table.news_name,
                table.news_language,
            )?),
            other => return Err(format!("group {name}: kind {other:?} must be urls or news")),
        };
        let most = match kind {
            GroupKind::News(_) => super::groups::NEWS_URLS_PER_FILE,
            GroupKind::Urls => MAX_URLS_PER_FILE,
        };
        if let Some(n) = table.page_size.filter(|n| !(1..=most).contains(n)) {
            return Err(format!(
                "group {name}: page_size {n} must be an integer from 1 to {most}"
            ));
        }
        if let Some(path) = table
            .llms_path
            .as_deref()
            .filter(|p| !super::groups::is_llms_path(p))
        {
            return Err(format!(
                "group {name}: llms_path {path:?} must be {}",
                super::groups::LLMS_PATH_EXPECTED
            ));
        }
        let is_news = matches!(kind, GroupKind::News(_));
        if is_news && table.extensions == Some(true) {
            return Err(format!(
                "news group {name}: extensions are for groups of URLs (kind = \"urls\")"
            ));
        }
        // By default the extension tables' ids are those of the first group of URLs.
        let first_of_urls = !is_news && groups.iter().all(|g| matches!(g.kind, GroupKind::News(_)));
        groups.push(GroupConfig {
            name: Some(name),
            source: table.source,
            kind,
            page_size: table.page_size,
            extensions: !is_news && table.extensions.unwrap_or(first_of_urls),
            title: table
                .title
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
            llms_optional: table.llms_optional.unwrap_or(false),
            llms_path: table.llms_path,
        });
    }
    Ok(groups)
}

/// A news group's publication: its name and language are required (rows may override them).
fn news_publication(
    group: &str,
    name: Option<String>,
    language: Option<String>,
) -> Result<NewsPublication, String> {
    let name = name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            format!("news group {group}: news_name is required (the publication's name)")
        })?;
    let language = language.unwrap_or_default();
    if !is_news_language(&language) {
        return Err(format!(
            "news group {group}: news_language {language:?} must be an ISO 639 code like en, fr or zh-cn"
        ));
    }
    Ok(NewsPublication { name, language })
}
