//! Which URLs a save changed: every file a site serves from its snapshots (each group's pages,
//! the index, `sitemap.xml`, robots.txt, llms.txt, the feeds) with the fingerprint of its
//! bytes, taken just before and just after a snapshot is installed; the URLs of the files whose
//! fingerprint differs (or that appeared or went) are what a cache in front must drop. The
//! ETag of every representation is made of that fingerprint, so this is exactly the set of
//! files whose ETag changed.
//!
//! The feeds and llms.txt are not known until a sweep read them (after a restart, the first
//! one), and robots.txt is the new template's from the start: these files, stored whole, are
//! purged when the save stored other bytes for them than it replaced ([`Save`]), so a restart
//! purges what changed while the service was down, and nothing else.

use std::collections::BTreeMap;

use crate::files::{self, LLMS_PATHS, ROBOTS_PATH};
use crate::site::{Site, Validators, ROBOTS_FILE};
use crate::sitemap::Fingerprint;
use crate::store::SavedState;

/// A file whose bytes follow one fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Served {
    /// Page `no` of the group at `group` (its `.xml.gz`, `.xml` and `.txt` forms).
    Page {
        group: usize,
        no: i64,
    },
    Index,
    /// `sitemap.xml`: the one page when one file holds every entry (with `sitemap.txt`), else
    /// the index.
    SitemapXml,
    SitemapTxt,
    Robots,
    Llms,
    /// The llms.txt of the group at this position, under its `llms_path`.
    GroupLlms(usize),
    FeedAtom,
    FeedRss,
}

/// What a site serves, by file, at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServedFiles(BTreeMap<Served, Fingerprint>);

/// One save of a group: the state it replaced, and the one it stored.
#[derive(Clone, Copy)]
pub struct Save<'a> {
    pub replaced: &'a SavedState,
    pub stored: &'a SavedState,
}

impl Save<'_> {
    /// Whether the save stored other bytes for the whole file `name` than it replaced.
    fn changed(&self, name: &str) -> bool {
        let bytes = |state: &SavedState| state.file(name).map(|f| f.fingerprint);
        bytes(self.replaced) != bytes(self.stored)
    }
}

impl ServedFiles {
    /// The files `site` serves now, from its groups' current snapshots.
    pub fn of(site: &Site) -> Self {
        let mut files = BTreeMap::new();
        let of = |v: &Validators| v.fingerprint;
        for (group, g) in site.groups.iter().enumerate() {
            for page in g.snapshot().layout.pages() {
                files.insert(Served::Page { group, no: page.no }, page.fingerprint);
            }
        }
        let together = site.together();
        let index = of(&together.index.validators);
        files.insert(Served::Index, index);
        match site.single_page() {
            Some((_, only)) => {
                files.insert(Served::SitemapXml, only.page.fingerprint);
                files.insert(Served::SitemapTxt, only.page.fingerprint);
            }
            None => {
                files.insert(Served::SitemapXml, index);
            }
        }
        let robots = of(&site.first().snapshot().robots.validators);
        files.insert(Served::Robots, robots);
        if let Some(llms) = &together.llms {
            files.insert(Served::Llms, of(&llms.validators));
        }
        for (group, own) in together.group_llms.iter().enumerate() {
            if let Some(own) = own {
                files.insert(Served::GroupLlms(group), of(&own.validators));
            }
        }
        if let Some(feeds) = &together.feeds {
            files.insert(Served::FeedAtom, of(&feeds.atom.validators));
            files.insert(Served::FeedRss, of(&feeds.rss.validators));
        }
        Self(files)
    }

    /// The absolute URLs of `site` whose bytes differ between `self` (before) and `after`,
    /// with `save` in between: changed, new (a cache may hold its `404`) or gone.
    pub fn changed_urls(&self, after: &ServedFiles, site: &Site, save: Save<'_>) -> Vec<String> {
        let mut urls = Vec::new();
        for (file, fingerprint) in &after.0 {
            let stored_changed = || file.stored_as().is_some_and(|name| save.changed(name));
            let changed = match self.0.get(file) {
                Some(before) => before != fingerprint || stored_changed(),
                None if file.stored_as().is_some() => stored_changed(),
                None => true,
            };
            if changed {
                urls.extend(urls_of(*file, site));
            }
        }
        for file in self.0.keys() {
            if !after.0.contains_key(file) {
                urls.extend(urls_of(*file, site));
            }
        }
        urls
    }
}

impl Served {
    /// The name a group stores the file under when it is stored whole (robots.txt, the feeds,
    /// llms.txt): their bytes in this process may be known before a save (robots.txt, from
    /// the template) or only after it (the feeds, llms.txt, read by the first sweep).
    fn stored_as(self) -> Option<&'static str> {
        match self {
            Self::Robots => Some(ROBOTS_FILE),
            Self::FeedAtom => Some(files::FEED_ATOM),
            Self::FeedRss => Some(files::FEED_RSS),
            Self::Llms => Some(files::LLMS),
            _ => None,
        }
    }
}

/// The URLs `file` is served at on `site`.
fn urls_of(file: Served, site: &Site) -> Vec<String> {
    let published = |name: &str| site.files().file_url(name);
    let root = |path: &str| root_url(site, path);
    match file {
        Served::Page { group, no } => {
            let name = site.groups.get(group).and_then(|g| g.name.as_deref());
            let gz = files::page_name(name, no);
            let xml = gz.strip_suffix(".gz").unwrap_or(&gz).to_string();
            vec![
                published(&gz),
                published(&xml),
                published(&files::page_text_name(name, no)),
            ]
        }
        Served::Index => vec![published(files::INDEX)],
        Served::SitemapXml => vec![published(files::SITEMAP)],
        Served::SitemapTxt => vec![published(files::SITEMAP_TXT)],
        Served::Robots => vec![root(ROBOTS_PATH)],
        Served::Llms => LLMS_PATHS.iter().map(|path| root(path)).collect(),
        Served::GroupLlms(group) => site
            .groups
            .get(group)
            .and_then(|g| g.llms.as_ref()?.path.as_deref())
            .map(|prefix| vec![root(&format!("{prefix}{}", files::LLMS))])
            .unwrap_or_default(),
        Served::FeedAtom => vec![published(files::FEED_ATOM)],
        Served::FeedRss => vec![published(files::FEED_RSS)],
    }
}

/// `path` at the root of the host of `site`'s base URL (robots.txt and llms.txt live there,
/// whatever the mount path).
fn root_url(site: &Site, path: &str) -> String {
    let mut url = site.base().url().clone();
    url.set_path(path);
    url.to_string()
}
