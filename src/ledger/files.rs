//! What the crawler ledger ([`super::Ledger`]) calls a site's files: one name per file,
//! whatever form was fetched (`sitemap-3.xml`, `.xml.gz` and `.txt` are file 3), and each of
//! them as served now (its fingerprint, the version every form's ETag names, and when it last
//! changed), for the files a crawler is behind on.

use std::borrow::Cow;
use std::collections::HashMap;

use super::Served;
use crate::files::{self, page_name, File};
use crate::site::{Site, Validators};

/// The ledger's name of `file` of `site`; `None` for what crawlers are not followed on (the
/// stylesheet, the IndexNow key).
pub fn ledger_name(site: &Site, file: File) -> Option<Cow<'static, str>> {
    Some(match file {
        File::Robots => files::ROBOTS.into(),
        File::Index => files::INDEX.into(),
        File::Sitemap => files::SITEMAP.into(),
        File::SitemapTxt => files::SITEMAP_TXT.into(),
        File::FeedAtom => files::FEED_ATOM.into(),
        File::FeedRss => files::FEED_RSS.into(),
        File::PageGz(id) | File::PageXml(id) | File::PageTxt(id) => {
            let group = site.groups.get(id.group)?;
            page_name(group.name.as_deref(), id.no).into()
        }
        File::Stylesheet
        | File::Css
        | File::IndexNowKey
        | File::Llms
        | File::License
        | File::GroupLlms(_) => return None,
    })
}

/// Each file of each site as served now, by site key and ledger name: made once per look at
/// the ledger (a few thousand files at most), not per request.
pub struct ChangeTimes(HashMap<String, HashMap<String, Served>>);

/// A file as the ledger compares it: its version and when it changed.
fn served(validators: Validators) -> Served {
    Served {
        changed_at: validators.changed_at,
        version: Some(validators.fingerprint.0),
    }
}

impl ChangeTimes {
    pub fn of(sites: &[std::sync::Arc<Site>]) -> Self {
        let mut all = HashMap::with_capacity(sites.len());
        for site in sites {
            let mut times = HashMap::new();
            let together = site.together();
            let index = served(together.index.validators);
            let robots = served(site.first().snapshot().robots.validators);
            times.insert(files::ROBOTS.to_string(), robots);
            times.insert(files::INDEX.to_string(), index);
            for group in &site.groups {
                let snapshot = group.snapshot();
                for page in snapshot.layout.pages() {
                    let name = page_name(group.name.as_deref(), page.no);
                    times.insert(name, served(page.validators()));
                }
            }
            // sitemap.xml is the one file when there is one, else the index.
            let single = site.single_page().map(|(_, p)| served(p.page.validators()));
            times.insert(files::SITEMAP.to_string(), single.unwrap_or(index));
            if let Some(at) = single {
                times.insert(files::SITEMAP_TXT.to_string(), at);
            }
            if let Some(feeds) = &together.feeds {
                times.insert(files::FEED_ATOM.to_string(), served(feeds.atom.validators));
                times.insert(files::FEED_RSS.to_string(), served(feeds.rss.validators));
            }
            all.insert(site.key.clone(), times);
        }
        Self(all)
    }

    /// `file` of `site` as served now; `None` when it is gone.
    pub fn get(&self, site: &str, file: &str) -> Option<Served> {
        self.0.get(site)?.get(file).copied()
    }
}
