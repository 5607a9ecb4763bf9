//! What the crawler ledger ([`crate::crawlers`]) calls a site's files: one name per file,
//! whatever form was fetched (`sitemap-3.xml`, `.xml.gz` and `.txt` are file 3), and the time
//! each of them last changed, for the files a crawler is behind on.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::answer::File;
use crate::site::{page_file_name, Site};

/// The ledger's name of `file` of `site`; `None` for what crawlers are not followed on (the
/// stylesheet, the IndexNow key).
/// Only a sitemap file's name is made (the others are constants).
pub fn ledger_name(site: &Site, file: File) -> Option<Cow<'static, str>> {
    Some(match file {
        File::Robots => ROBOTS.into(),
        File::Index => INDEX.into(),
        File::Sitemap => SITEMAP.into(),
        File::SitemapTxt => SITEMAP_TXT.into(),
        File::FeedAtom => crate::feed::ATOM_FILE.into(),
        File::FeedRss => crate::feed::RSS_FILE.into(),
        File::PageGz(id) | File::PageXml(id) | File::PageTxt(id) => {
            let group = site.groups.get(id.group)?;
            page_file_name(group.name.as_deref(), id.no).into()
        }
        File::Stylesheet | File::IndexNowKey | File::Llms => return None,
    })
}

const ROBOTS: &str = "robots.txt";
const INDEX: &str = "sitemap_index.xml";
const SITEMAP: &str = "sitemap.xml";
const SITEMAP_TXT: &str = "sitemap.txt";

/// When each file of each site last changed, by site key and ledger name: made once per look
/// at the ledger (a few thousand files at most), not per request.
pub struct ChangeTimes(HashMap<String, HashMap<String, i64>>);

impl ChangeTimes {
    pub fn of(sites: &[std::sync::Arc<Site>]) -> Self {
        let mut all = HashMap::with_capacity(sites.len());
        for site in sites {
            let mut files = HashMap::new();
            let together = site.together();
            let index = together.index.validators.changed_at;
            let robots = site.first().snapshot().robots.validators.changed_at;
            files.insert(ROBOTS.to_string(), robots);
            files.insert(INDEX.to_string(), index);
            for group in &site.groups {
                let snapshot = group.snapshot();
                for page in &snapshot.layout.0 {
                    let name = page_file_name(group.name.as_deref(), page.no);
                    files.insert(name, page.changed_at);
                }
            }
            // sitemap.xml is the one file when there is one, else the index.
            let single = site.single_page().map(|(_, p)| p.page.changed_at);
            files.insert(SITEMAP.to_string(), single.unwrap_or(index));
            if let Some(at) = single {
                files.insert(SITEMAP_TXT.to_string(), at);
            }
            if let Some(feeds) = &together.feeds {
                files.insert(
                    crate::feed::ATOM_FILE.to_string(),
                    feeds.atom.validators.changed_at,
                );
                files.insert(
                    crate::feed::RSS_FILE.to_string(),
                    feeds.rss.validators.changed_at,
                );
            }
            all.insert(site.key.clone(), files);
        }
        Self(all)
    }

    /// When `file` of `site` last changed; `None` when it is gone.
    pub fn get(&self, site: &str, file: &str) -> Option<i64> {
        self.0.get(site)?.get(file).copied()
    }
}
