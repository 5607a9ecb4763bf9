//! `SITEMAP_SITES_FILE`: several sites from one process, each a `[[site]]` table.

use std::path::PathBuf;

use super::{is_source_name, BaseUrl, ConfigError, SOURCE_EXPECTED};

/// What differs between the sites one process serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteConfig {
    /// The site's URLs: every entry must fall under it; robots.txt is at its host's root.
    pub base_url: BaseUrl,
    /// Where the site's sitemap files, feeds and stylesheet are published and served.
    pub sitemaps_url: BaseUrl,
    pub source: String,
    pub robots_template: Option<PathBuf>,
}

impl SiteConfig {
    /// Absolute URL of the site's sitemap index, where it is published.
    pub fn index_url(&self) -> String {
        self.sitemaps_url.file_url("sitemap_index.xml")
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
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SitesFile {
    site: Vec<SiteEntry>,
}

/// Reads SITEMAP_SITES_FILE: `[[site]]` tables with `base_url`, optional `sitemaps_url`
/// (default: the base URL), `source` and `robots_template` (defaulting to SITEMAP_SOURCE and
/// ROBOTS_TEMPLATE).
///
/// Requests are told apart by Host and path, so: one site per base URL host (robots.txt is one
/// file per host), and one site per sitemaps URL. Sitemaps URLs may nest (`/shop/` and
/// `/shop/outlet/` on one host): file names hold no `/`, so a request's directory names exactly
/// one of them.
pub(super) fn read_sites_file(
    path: &PathBuf,
    default_source: &str,
    default_template: Option<&PathBuf>,
) -> Result<Vec<SiteConfig>, ConfigError> {
    let shown = path.display().to_string();
    let fail = |expected: String| ConfigError::new("SITEMAP_SITES_FILE", &shown, expected);
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it ({e})")))?;
    let file: SitesFile = toml::from_str(&text).map_err(|e| {
        let message = e.message().to_string();
        fail(format!(
            "a TOML file of [[site]] tables with base_url, sitemaps_url, source, robots_template ({message})"
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
        let source = entry.source.unwrap_or_else(|| default_source.to_string());
        if !is_source_name(&source) {
            return Err(fail(format!(
                "site {n}: source {source:?} must be {SOURCE_EXPECTED}"
            )));
        }
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
        sites.push(SiteConfig {
            base_url,
            sitemaps_url,
            source,
            robots_template: entry.robots_template.or_else(|| default_template.cloned()),
        });
    }
    Ok(sites)
}
