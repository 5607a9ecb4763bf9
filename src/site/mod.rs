//! A served site: its [`Group`]s (one unnamed group unless configured otherwise), each with its
//! own source, files and snapshot, and what the site serves of them together: one index that
//! lists every group's files, the feeds of the newest entries of all groups, robots.txt.
//!
//! The two flows of the service meet at a group's snapshot. The read side ([`crate::answer`])
//! answers from [`Group::snapshot`] (or, for the site's index and feeds, from
//! [`Site::together`], composed of every group's snapshot); the write side ([`crate::sweep`])
//! installs the next snapshot of one group with [`Group::install`].

pub mod fingerprint;
mod group;
mod layout;
mod snapshot;
pub mod sources;

use std::sync::{Arc, RwLock};

use crate::feed::FeedSite;
use crate::sitemap::BaseUrl;
use crate::sitemap::Fingerprint;

pub use group::{Group, GroupSettings, News, Readiness, Stale, StaleReports};
#[cfg(test)]
pub use layout::test_layout;
pub use layout::{index_document, Layout, Page};
pub use snapshot::{
    FeedBodies, Feeds, Publication, ServedPage, SmallDoc, Snapshot, Validators, INDEX_FILE,
    ROBOTS_FILE, ROBOTS_RULES_FILE, SETTINGS_FILE,
};

/// A site: the groups it serves, in configured order (the order of its index).
pub struct Site {
    /// The site's base URL, as logs name the site.
    pub key: String,
    pub groups: Vec<Arc<Group>>,
    /// The documents made of every group's snapshot, remade when one of them is replaced.
    together: RwLock<Arc<Together>>,
    /// Which replica keeps the site's files current, as far as this one knows.
    keeper: RwLock<Option<Keeper>>,
}

/// The replica that keeps a site's files current (holds its lease).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Keeper {
    /// Host name and process id.
    pub replica: String,
    /// Since when (unix seconds).
    pub since: i64,
    /// Whether that is this replica.
    pub this_replica: bool,
}

/// What a site serves of all its groups together, and the snapshots it was made of.
pub struct Together {
    made_of: Vec<Arc<Snapshot>>,
    /// Every group's files, groups in configured order.
    pub index: SmallDoc,
    /// The newest entries of all groups; `None` until every group has read its own.
    pub feeds: Option<Feeds>,
    /// llms.txt of every group's section; `None` when the site serves none, or until every
    /// group has read its own.
    pub llms: Option<SmallDoc>,
    /// Per group (by position), the llms.txt under its `llms_path` holding its section alone;
    /// `None` for a group without one, or until it has read its section.
    pub group_llms: Vec<Option<SmallDoc>>,
}

impl Site {
    /// A site of `groups` (at least one), all of the same base URL.
    pub fn new(groups: Vec<Arc<Group>>) -> Arc<Self> {
        assert!(!groups.is_empty(), "a site has at least one group");
        let made_of: Vec<Arc<Snapshot>> = groups.iter().map(|g| g.snapshot()).collect();
        let together = Together::of(&groups, made_of);
        Arc::new(Self {
            key: groups[0].base.as_str().to_string(),
            groups,
            together: RwLock::new(Arc::new(together)),
            keeper: RwLock::new(None),
        })
    }

    /// Which replica keeps the site current, as far as this one knows.
    pub fn keeper(&self) -> Option<Keeper> {
        crate::sync::read(&self.keeper).clone()
    }

    pub fn set_keeper(&self, keeper: Option<Keeper>) {
        *crate::sync::write(&self.keeper) = keeper;
    }

    /// The first group: its robots.txt, base URL and sitemaps URL are the site's.
    pub fn first(&self) -> &Arc<Group> {
        &self.groups[0]
    }

    pub fn base(&self) -> &BaseUrl {
        &self.first().base
    }

    pub fn files(&self) -> &BaseUrl {
        &self.first().files
    }

    /// The group whose own llms.txt `path` is (`<llms_path>llms.txt`), by its position.
    pub fn group_llms_at(&self, path: &str) -> Option<usize> {
        self.groups.iter().position(|g| {
            let prefix = g.llms.as_ref().and_then(|llms| llms.path.as_deref());
            prefix.is_some_and(|prefix| crate::files::is_group_llms_path(path, prefix))
        })
    }

    /// The group files named `name` belong to (`None`: the unnamed group), by its position.
    pub fn group_position(&self, name: Option<&str>) -> Option<usize> {
        self.groups.iter().position(|g| g.name.as_deref() == name)
    }

    /// The one file of a site whose entries all fit in one: `/sitemap.xml` is then that file.
    /// A site of several groups always has an index.
    pub fn single_page(&self) -> Option<(Arc<Group>, ServedPage)> {
        let [only] = self.groups.as_slice() else {
            return None;
        };
        Some((only.clone(), only.snapshot().single_page()?))
    }

    /// The least readiness of the site's groups: the index lists all of them.
    pub fn readiness(&self) -> Readiness {
        self.groups
            .iter()
            .map(|g| g.readiness())
            .min()
            .unwrap_or(Readiness::Current)
    }

    /// Whether the site serves feeds: some group has them (news groups never do).
    pub fn has_feeds(&self) -> bool {
        self.groups.iter().any(|g| g.feed_size > 0)
    }

    /// The index and feeds of the groups' current snapshots (made again only when one of the
    /// snapshots changed since).
    pub fn together(&self) -> Arc<Together> {
        let made = crate::sync::read(&self.together).clone();
        if made.is_made_of(&self.groups) {
            return made;
        }
        let current = self.groups.iter().map(|g| g.snapshot()).collect();
        let next = Arc::new(Together::of(&self.groups, current));
        *crate::sync::write(&self.together) = next.clone();
        next
    }
}

impl Together {
    /// Whether this was made of the groups' current snapshots.
    fn is_made_of(&self, groups: &[Arc<Group>]) -> bool {
        self.made_of.len() == groups.len()
            && self
                .made_of
                .iter()
                .zip(groups)
                .all(|(made, group)| Arc::ptr_eq(made, &group.snapshot()))
    }

    /// A site of one group serves that group's own index and feeds, with their stored
    /// validators (so a site without groups serves what it always did). Several groups: one
    /// index of every group's files, its time the latest of theirs.
    fn of(groups: &[Arc<Group>], made_of: Vec<Arc<Snapshot>>) -> Self {
        let llms = llms_document(groups, &made_of);
        let group_llms = groups
            .iter()
            .zip(&made_of)
            .map(|(group, snapshot)| group_llms_document(group, snapshot))
            .collect();
        if let [only] = made_of.as_slice() {
            return Self {
                index: only.index.clone(),
                feeds: only.feeds.clone(),
                llms,
                group_llms,
                made_of,
            };
        }
        let entries = groups
            .iter()
            .zip(&made_of)
            .flat_map(|(group, snapshot)| snapshot.layout.index_entries(group.publication()))
            .collect();
        let body = index_document(&groups[0].style, entries);
        let index = SmallDoc::new(
            body.clone(),
            Validators {
                fingerprint: Fingerprint::of(&body),
                changed_at: latest(made_of.iter().map(|s| s.index.validators.changed_at)),
            },
        );
        let feeds = merged_feeds(groups, &made_of);
        Self {
            made_of,
            index,
            feeds,
            llms,
            group_llms,
        }
    }
}

/// A group's own llms.txt (under its `llms_path`): the site's header and its section alone,
/// the links under that path, dated by its section.
fn group_llms_document(group: &Group, snapshot: &Snapshot) -> Option<SmallDoc> {
    let llms = group.llms.as_deref()?;
    let prefix = llms.path.as_deref()?;
    let section = snapshot.llms.as_ref()?;
    let under: Vec<crate::llms::Link> = section
        .links
        .iter()
        .filter(|link| url::Url::parse(&link.url).is_ok_and(|url| url.path().starts_with(prefix)))
        .cloned()
        .collect();
    // Under its own title even when the site's file lists it under `## Optional`.
    let own = crate::llms::SectionText {
        optional: false,
        ..llms.section(&under)
    };
    let body = bytes::Bytes::from(crate::llms::render(&llms.header, &[own]));
    let validators = Validators {
        fingerprint: Fingerprint::of(&body),
        changed_at: section.changed_at,
    };
    Some(SmallDoc::new(body, validators))
}

/// The site's llms.txt, composed of its groups' sections, dated by the latest change of theirs;
/// `None` when the site serves none, or until each group has read its section.
fn llms_document(groups: &[Arc<Group>], snapshots: &[Arc<Snapshot>]) -> Option<SmallDoc> {
    let parts: Vec<_> = groups
        .iter()
        .zip(snapshots)
        .map(|(group, snapshot)| Some((group.llms.as_deref()?, snapshot.llms.as_ref()?)))
        .collect::<Option<_>>()?;
    let header = &parts.first()?.0.header;
    let body = bytes::Bytes::from(crate::llms::compose(header, parts.iter().copied()));
    let validators = Validators {
        fingerprint: Fingerprint::of(&body),
        changed_at: latest(parts.iter().map(|(_, section)| section.changed_at)),
    };
    Some(SmallDoc::new(body, validators))
}

/// The feeds of the newest entries of all groups that have feeds (news groups have none),
/// dated by the latest change of theirs; `None` until each of them has read its feeds.
fn merged_feeds(groups: &[Arc<Group>], snapshots: &[Arc<Snapshot>]) -> Option<Feeds> {
    let first = &groups[0];
    let all: Vec<&Feeds> = groups
        .iter()
        .zip(snapshots)
        .filter(|(group, _)| group.feed_size > 0)
        .map(|(_, s)| s.feeds.as_ref())
        .collect::<Option<_>>()?;
    if all.is_empty() {
        return None;
    }
    let mut entries: Vec<_> = all.iter().flat_map(|f| f.entries.iter().cloned()).collect();
    // Newest first; ties in a fixed order, so replicas write the same bytes.
    entries.sort_by(|a, b| (b.updated, b.loc.as_str()).cmp(&(a.updated, a.loc.as_str())));
    entries.truncate(groups.iter().map(|g| g.feed_size).max().unwrap_or_default());
    let site = FeedSite {
        base: &first.base,
        files: &first.files,
        license: first.license.as_ref().map(|(license, _)| license.as_ref()),
    };
    let dated = |body: Vec<u8>, changed: fn(&Feeds) -> i64| {
        let body = bytes::Bytes::from(body);
        let validators = Validators {
            fingerprint: Fingerprint::of(&body),
            changed_at: latest(all.iter().map(|f| changed(f))),
        };
        SmallDoc::new(body, validators)
    };
    Some(Feeds {
        atom: dated(site.atom(&entries), |f| f.atom.validators.changed_at),
        rss: dated(site.rss(&entries), |f| f.rss.validators.changed_at),
        entries: Arc::new(entries),
        candidates: Arc::default(),
    })
}

fn latest(times: impl Iterator<Item = i64>) -> i64 {
    times.max().unwrap_or_default()
}
