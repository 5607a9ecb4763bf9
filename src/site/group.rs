//! A group of a site: the files read from one source (a site without groups has one unnamed
//! group). What configuration says about it (where its URLs and files live, the rules every
//! entry passes, how its documents are written), and the current [`Snapshot`] of its files.
//!
//! The two flows of the service meet here. The read side ([`crate::answer`]) answers from
//! [`Group::snapshot`] and, when a render meets rows the snapshot does not describe, says so
//! with [`Group::report_stale`]. The write side ([`crate::sweep`]) re-measures files, saves
//! their validators and installs the next snapshot with [`Group::install`].

use std::sync::{Arc, RwLock};

use bytes::Bytes;
use futures::stream::BoxStream;
use tokio::sync::{mpsc, watch};

use crate::sitemap::publication::NewsPublication;
use crate::sitemap::BaseUrl;
use crate::sitemap::{DocumentStyle, EntryRules, Fingerprint, Namespaces, RawEntry};
use crate::store::{IdRange, Store, StoreError};

use super::{Publication, ServedPage, Snapshot};

/// Stale reports waiting for the write side; more are dropped (the periodic sweep covers them).
const STALE_REPORTS_QUEUED: usize = 64;

/// What a group is, as configuration and robots.txt make it.
pub struct GroupSettings {
    /// `None` for the unnamed group of a site without groups.
    pub name: Option<String>,
    /// A news group's publication and how long articles stay listed; `None`: a urlset.
    pub news: Option<News>,
    /// The site's URLs: entries must fall under it; robots.txt and the IndexNow key file are
    /// served on its host.
    pub base: BaseUrl,
    /// Where the site's files are published (`sitemaps_url`, by default `base`): the index
    /// lists them there, robots.txt announces the index there, and they are served there.
    pub files: BaseUrl,
    pub rules: EntryRules,
    pub style: DocumentStyle,
    pub page_size: usize,
    pub feed_size: usize,
    /// The table or view entries are read from.
    pub source: String,
    /// Whether the extension tables' rows belong to this group's entries.
    pub extensions: bool,
    /// Of a site with named groups: a fingerprint of its groups (names, sources, kinds, in
    /// order), which dates this group's index too, so the site's one index gets a new time
    /// when a group is added, removed or moved, even if no group's own files changed.
    pub site_groups: Option<Fingerprint>,
    /// robots.txt as served.
    pub robots_body: Bytes,
    /// A fingerprint of what decides which entries robots.txt leaves out (its rules and the
    /// agents they are checked for): when it changes, entries it now leaves out are announced.
    pub robots_rules: Fingerprint,
    /// The site's `/license.xml` (the same for every group of the site), with its bytes.
    pub license: Option<(Arc<crate::robots::License>, Bytes)>,
    /// The `Link` header every answer of the site carries: the licence (`rel="license"`) and
    /// llms.txt (`rel="describedby"`), when the site serves them.
    pub links: Option<axum::http::HeaderValue>,
    /// The group's part of the site's llms.txt; `None` when the site serves none.
    pub llms: Option<Arc<crate::llms::GroupLlms>>,
    /// A fingerprint of everything besides the rows that decides the files' bytes (format
    /// version, URLs, page size, rules, style; see [`super::fingerprint`]): files laid out, and
    /// summaries of rows taken, under other settings do not count.
    pub fingerprint: Fingerprint,
}

/// A news group's publication (defaults for rows that leave it NULL) and its window: articles
/// published longer ago than that leave the files by themselves.
#[derive(Debug, Clone)]
pub struct News {
    pub publication: NewsPublication,
    pub window_secs: i64,
}

impl News {
    /// The oldest publication time (unix seconds) still listed at `now` (articles published
    /// after `now` wait for their time).
    pub fn since(&self, now: i64) -> i64 {
        now.saturating_sub(self.window_secs)
    }
}

/// One group: what it serves (its settings, read through [`std::ops::Deref`]: `group.base` is
/// `group.settings.base`), and the snapshot requests are answered from.
pub struct Group {
    /// Key of this group's rows in our state tables: the site's base URL, followed by
    /// `#<name>` for a named group.
    pub key: String,
    /// What configuration and robots.txt make of the group.
    pub settings: GroupSettings,
    /// The database, reading this site's source.
    pub store: Store,
    snapshot: RwLock<Arc<Snapshot>>,
    readiness: watch::Sender<Readiness>,
    stale: mpsc::Sender<Stale>,
    /// Tables behind the watched source found without their triggers (and which sitemapd could
    /// not put back): their changes show only at the hourly check.
    unwatched: std::sync::Mutex<Vec<String>>,
}

impl std::ops::Deref for Group {
    type Target = GroupSettings;

    fn deref(&self) -> &GroupSettings {
        &self.settings
    }
}

/// How far a group's snapshot can be trusted, for `/readyz` and the sitemap routes; ordered
/// from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Readiness {
    /// Nothing was stored: the first sweep is under way, and sitemap routes answer 503.
    FirstSweep,
    /// The stored files are served while they are checked against the source.
    Verifying,
    /// The files were checked against the source (and are kept current since).
    Current,
}

impl Readiness {
    /// Whether sitemap files may be served.
    pub fn serves_files(self) -> bool {
        self != Readiness::FirstSweep
    }
}

/// A render found rows that `page`'s validators do not describe: they changed since the last
/// sweep, and the write side should re-measure the page.
#[derive(Debug, Clone)]
pub struct Stale {
    pub page_no: i64,
    /// The fingerprint the render was served under: if a sweep has changed it since, the
    /// report is old news.
    pub fingerprint: Fingerprint,
    pub range: IdRange,
}

/// The write side's end of [`Group::report_stale`].
pub type StaleReports = mpsc::Receiver<Stale>;

impl Group {
    /// A group whose first sweep is under way (until the write side installs what its database
    /// holds, sitemap routes answer 503);
    /// with the receiver of its stale reports, for that write side.
    pub fn new(settings: GroupSettings, store: Store, now: i64) -> (Arc<Self>, StaleReports) {
        let publication = Publication {
            style: &settings.style,
            files: &settings.files,
            group: settings.name.as_deref(),
        };
        let snapshot = Snapshot::empty(publication, settings.robots_body.clone(), now);
        let (stale, reports) = mpsc::channel(STALE_REPORTS_QUEUED);
        let key = match &settings.name {
            None => settings.base.as_str().to_string(),
            Some(name) => format!("{}#{name}", settings.base.as_str()),
        };
        let group = Self {
            key,
            settings,
            store,
            snapshot: RwLock::new(Arc::new(snapshot)),
            readiness: watch::Sender::new(Readiness::FirstSweep),
            stale,
            unwatched: std::sync::Mutex::new(Vec::new()),
        };
        (Arc::new(group), reports)
    }

    /// Tables behind the watched source that have lost their triggers, as last checked.
    pub fn unwatched(&self) -> Vec<String> {
        crate::sync::lock(&self.unwatched).clone()
    }

    pub fn set_unwatched(&self, tables: Vec<String>) {
        *crate::sync::lock(&self.unwatched) = tables;
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        crate::sync::read(&self.snapshot).clone()
    }

    /// Makes `snapshot` the one every request is answered from.
    pub fn install(&self, snapshot: Snapshot) {
        *crate::sync::write(&self.snapshot) = Arc::new(snapshot);
    }

    /// Key of the group's change-log cursor: its files cover one source's log only.
    pub fn cursor_key(&self) -> String {
        format!("{} {}", self.key, self.source)
    }

    pub fn readiness(&self) -> Readiness {
        *self.readiness.borrow()
    }

    /// Moves the group to `readiness`; a group never goes back to [`Readiness::FirstSweep`].
    pub fn set_readiness(&self, readiness: Readiness) {
        self.readiness.send_if_modified(|now| {
            let moved = *now != readiness && readiness != Readiness::FirstSweep;
            if moved {
                *now = readiness;
            }
            moved
        });
    }

    /// Waits until the group has reached `readiness` (or gone past it).
    pub async fn reached(&self, readiness: Readiness) {
        let mut rx = self.readiness.subscribe();
        let _ = rx.wait_for(|now| *now >= readiness).await;
    }

    /// How this group's documents are written and where its files are published.
    pub fn publication(&self) -> Publication<'_> {
        Publication {
            style: &self.style,
            files: &self.files,
            group: self.name.as_deref(),
        }
    }

    /// The group's rows with ids in `range`, in id order: a news group's articles published in
    /// its window before `news_at` (by default, now) with the publication's defaults filled in;
    /// any other group's entries with the extension rows `wanted` names (none unless the
    /// extension tables belong to this group).
    pub fn rows(
        &self,
        range: IdRange,
        wanted: Namespaces,
        news_at: Option<i64>,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        let Some(news) = &self.news else {
            let wanted = match self.extensions {
                true => wanted,
                false => Namespaces::NONE,
            };
            return self.store.entries(range, wanted);
        };
        let at = news_at.unwrap_or_else(|| chrono::Utc::now().timestamp());
        self.store
            .articles(range, news.since(at), at, &news.publication)
    }

    /// What the validators of the group's index are dated by: its bytes, and for named groups
    /// the site's list of groups too (see [`GroupSettings::site_groups`]).
    pub fn index_fingerprint(&self, index: &[u8]) -> Fingerprint {
        let own = Fingerprint::of(index);
        match self.site_groups {
            None => own,
            Some(groups) => Fingerprint::of(format!("{} {}", own.hex(), groups.hex()).as_bytes()),
        }
    }

    /// The group's name as a metric label: empty for the unnamed group.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// Tells the write side that `served` no longer describes its rows. Never waits: when
    /// reports pile up, this one is dropped and the next sweep covers it.
    pub fn report_stale(&self, served: &ServedPage) {
        let _ = self.stale.try_send(Stale {
            page_no: served.page.no,
            fingerprint: served.page.fingerprint,
            range: served.range,
        });
    }
}
