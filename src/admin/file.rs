//! A sitemap file as a person reads it, for the status page: its entries in order with their
//! lastmod, changefreq, priority and extensions, the rows of its range that were left out with
//! the reason, searchable by URL and paged. Read from the database like a render, never cached.

use futures::TryStreamExt;
use serde::Serialize;

use crate::files::{self, page_name, File};
use crate::site::{Group, ServedPage, Site};
use crate::sitemap::{Entry, Namespaces, RawEntry, SeenUrls, SkipReason, UrlKey};
use crate::store::StoreError;

/// Rows shown per page of the view.
pub const ROWS_PER_VIEW: usize = 100;

/// One page of the view of one file.
#[derive(Debug, Serialize)]
pub struct FileView {
    pub site: String,
    pub name: String,
    pub url: String,
    pub query: String,
    /// Rows matching the query, in the file's id order.
    pub matching: usize,
    pub page: usize,
    pub pages: usize,
    pub rows: Vec<ViewRow>,
}

/// An entry of the file, or a row of its range left out.
#[derive(Debug, Serialize)]
pub struct ViewRow {
    pub id: i64,
    /// The URL as served, or the row's `loc` as the source has it when it was left out.
    pub loc: String,
    pub lastmod: Option<String>,
    pub changefreq: Option<&'static str>,
    pub priority: Option<String>,
    /// `2 images`, `1 alternate`, `news`, … as served.
    pub extensions: Vec<String>,
    /// Why the row is not in the file; `None` when it is.
    pub skipped: Option<&'static str>,
}

/// The group and page `name` (a page's `.xml.gz` name, as the status page lists it) is, of
/// `site`.
pub fn find(site: &Site, name: &str) -> Option<(std::sync::Arc<Group>, ServedPage)> {
    let group = |name: Option<&str>| site.group_position(name);
    let Some(File::PageGz(id)) = files::parse_published_name(name, group) else {
        return None;
    };
    let group = site.groups.get(id.group)?;
    Some((group.clone(), group.snapshot().page(id.no)?))
}

/// Page `page` (from 0) of the rows of `served` whose URL contains `query` (any case).
pub async fn view(
    site: &Site,
    group: &Group,
    served: &ServedPage,
    query: &str,
    page: usize,
) -> Result<FileView, StoreError> {
    let name = page_name(group.name.as_deref(), served.page.no);
    let needle = query.trim().to_lowercase();
    let mut rows = group.rows(served.range, Namespaces::ALL, served.news_at);
    let mut seen = SeenUrls::default();
    let mut matching = 0;
    let mut shown = Vec::new();
    let first = page.saturating_mul(ROWS_PER_VIEW);
    while let Some(raw) = rows.try_next().await? {
        let accepted = group.rules.accept(&raw);
        // Every accepted row counts for duplicates, whether it matches or not.
        let duplicate = accepted
            .as_ref()
            .is_ok_and(|entry| !seen.first_time(UrlKey::of(&entry.loc)));
        let loc = match &accepted {
            Ok(entry) => entry.loc.as_str(),
            Err(_) => raw.loc.as_deref().unwrap_or_default(),
        };
        if !needle.is_empty() && !loc.to_lowercase().contains(&needle) {
            continue;
        }
        if matching >= first && shown.len() < ROWS_PER_VIEW {
            shown.push(view_row(&raw, accepted, duplicate));
        }
        matching += 1;
    }
    Ok(FileView {
        site: site.key.clone(),
        url: group.files.file_url(&name),
        name,
        query: query.to_string(),
        matching,
        page,
        pages: matching.div_ceil(ROWS_PER_VIEW).max(1),
        rows: shown,
    })
}

/// One row as the view shows it: an entry as served (or a repeat, left out), or a row skipped
/// and why.
fn view_row(raw: &RawEntry, accepted: Result<Entry, SkipReason>, duplicate: bool) -> ViewRow {
    match accepted {
        Ok(entry) => ViewRow {
            id: raw.id,
            loc: entry.loc.as_str().to_string(),
            lastmod: entry.lastmod.map(|l| l.w3c()),
            changefreq: entry.changefreq.map(|c| c.as_str()),
            priority: entry.priority.map(|p| p.to_decimal()),
            extensions: extensions(&entry),
            skipped: duplicate.then_some(SkipReason::Duplicate.as_str()),
        },
        Err(reason) => ViewRow {
            id: raw.id,
            loc: raw.loc.clone().unwrap_or_default(),
            lastmod: None,
            changefreq: None,
            priority: None,
            extensions: Vec::new(),
            skipped: Some(reason.as_str()),
        },
    }
}

fn extensions(entry: &Entry) -> Vec<String> {
    let count = |n: usize, one: &str| match n {
        0 => None,
        1 => Some(format!("1 {one}")),
        n => Some(format!("{n} {one}s")),
    };
    [
        count(entry.alternates.len(), "alternate"),
        count(entry.images.len(), "image"),
        count(entry.videos.len(), "video"),
        entry.article.as_ref().map(|a| format!("news: {}", a.title)),
        (entry.dropped.get(SkipReason::FutureLastmod) > 0)
            .then(|| "lastmod in the future left out".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect()
}
