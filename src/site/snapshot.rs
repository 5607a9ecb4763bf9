//! The [`Snapshot`]: everything a request is answered from without touching the database (the
//! layout of the files with their validators, the index, robots.txt and feeds), and how a new
//! one is made from what the write side saved.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use chrono::Utc;

use crate::feed::FeedEntry;
use crate::files::{FEED_ATOM, FEED_RSS};
use crate::sitemap::BaseUrl;
use crate::sitemap::{DocumentStyle, Fingerprint, RawEntry};
use crate::store::{FileRecord, IdRange, SavedState};

use super::{Layout, Page};

/// Name of the index in `sitemapd_files`.
pub const INDEX_FILE: &str = "index";
/// Name of robots.txt in `sitemapd_files`.
pub const ROBOTS_FILE: &str = "robots";
/// Not a served file: the fingerprint of the settings the files were laid out under
/// ([`super::GroupSettings::fingerprint`]).
pub const SETTINGS_FILE: &str = "settings";
/// Not a served file: the fingerprint of what decides which entries robots.txt leaves out
/// ([`super::GroupSettings::robots_rules`]) when the files were last measured.
pub const ROBOTS_RULES_FILE: &str = "robots-rules";

/// Validators of one whole file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validators {
    pub fingerprint: Fingerprint,
    /// Unix seconds.
    pub changed_at: i64,
}

impl Validators {
    /// Validators of bytes first seen now.
    pub fn of_new(body: &[u8]) -> Self {
        Self {
            fingerprint: Fingerprint::of(body),
            changed_at: Utc::now().timestamp(),
        }
    }
}

/// Everything needed to answer a request without touching the database.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub layout: Layout,
    /// The sitemap index document, built once per sweep (it is small).
    pub index: SmallDoc,
    pub robots: SmallDoc,
    /// The Atom and RSS feeds, unless SITEMAP_FEED_SIZE is 0.
    pub feeds: Option<Feeds>,
    /// The instant (unix seconds) a news group's files were measured at: they list the
    /// articles published in the window before it. Renders read the same articles until the
    /// next sweep, so time alone never makes a render differ from its ETag. `None`: not a news
    /// group, or none measured yet in this process (renders take the window as of now).
    pub news_at: Option<i64>,
    /// The group's links in llms.txt, from its own sweeps; `None` until its first sweep, or
    /// when the site serves no llms.txt.
    pub llms: Option<crate::llms::Section>,
}

/// A small whole document kept in memory, with its gzip form made on first request.
#[derive(Debug, Clone)]
pub struct SmallDoc {
    pub body: Bytes,
    pub gz: OnceLock<Bytes>,
    pub br: OnceLock<Bytes>,
    pub validators: Validators,
}

impl SmallDoc {
    pub fn new(body: Bytes, validators: Validators) -> Self {
        Self {
            body,
            gz: OnceLock::new(),
            br: OnceLock::new(),
            validators,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Feeds {
    pub atom: SmallDoc,
    pub rss: SmallDoc,
    /// What they list, newest first: a site of several groups lists the newest of all.
    pub entries: Arc<Vec<FeedEntry>>,
    /// The rows a view's feeds were chosen from (see `sweep/feeds.rs`); empty otherwise.
    pub candidates: Arc<Vec<RawEntry>>,
}

/// Feed bodies read by a sweep, before their validators are settled.
#[derive(Debug, Clone)]
pub struct FeedBodies {
    pub atom: Bytes,
    pub rss: Bytes,
    pub entries: Arc<Vec<FeedEntry>>,
    pub candidates: Arc<Vec<RawEntry>>,
}

/// A page as one request serves it: its validators and the ids it holds, taken together so a
/// render reads exactly the range the validators describe.
#[derive(Debug, Clone)]
pub struct ServedPage {
    pub page: Page,
    pub range: IdRange,
    /// See [`Snapshot::news_at`].
    pub news_at: Option<i64>,
}

/// Where a group's documents are written for: the style of every document, the URL its files
/// are published at (the index lists them there) and the group's name in their file names.
#[derive(Clone, Copy)]
pub struct Publication<'a> {
    pub style: &'a DocumentStyle,
    pub files: &'a BaseUrl,
    pub group: Option<&'a str>,
}

impl Snapshot {
    /// What a site serves before anything is known of its database: one empty file.
    pub fn empty(publication: Publication<'_>, robots_body: Bytes, now: i64) -> Self {
        let layout = Layout::empty(publication.style, now);
        let index = layout.index_document(publication);
        let dated = |body: &Bytes| Validators {
            fingerprint: Fingerprint::of(body),
            changed_at: now,
        };
        Snapshot {
            index: SmallDoc::new(index.clone(), dated(&index)),
            robots: SmallDoc::new(robots_body.clone(), dated(&robots_body)),
            feeds: None,
            layout,
            news_at: None,
            llms: None,
        }
    }

    /// Page `no` with the ids it holds, both from this snapshot.
    pub fn page(&self, no: i64) -> Option<ServedPage> {
        let (index, page) = self.layout.find(no)?;
        Some(ServedPage {
            page: page.clone(),
            range: self.layout.range(index),
            news_at: self.news_at,
        })
    }

    /// The one page when a single file holds every entry.
    pub fn single_page(&self) -> Option<ServedPage> {
        self.page(self.layout.only_page()?.no)
    }

    /// This snapshot with what another writer stored: its layout and the history of the
    /// whole files whose bytes this process has too (robots.txt comes from this process's
    /// template, feeds from its own sweeps).
    pub fn with_stored(&self, stored: &SavedState, publication: Publication<'_>) -> Self {
        let SavedState { pages, files } = stored;
        let mut next = self.clone();
        if !pages.is_empty() {
            next.layout = Layout::from_records(pages).with_measures_of(&self.layout);
        }
        for f in files {
            let stored = validators_of(f);
            match f.name.as_str() {
                INDEX_FILE => next.index.validators = stored,
                ROBOTS_FILE => next.robots.take_history(stored),
                FEED_ATOM | FEED_RSS => {
                    if let Some(feeds) = next.feeds.as_mut() {
                        let doc = if f.name == FEED_ATOM {
                            &mut feeds.atom
                        } else {
                            &mut feeds.rss
                        };
                        doc.take_history(stored);
                    }
                }
                _ => {}
            }
        }
        let index = next.layout.index_document(publication);
        next.index = SmallDoc::new(index, next.index.validators);
        next
    }

    /// The snapshot after a sweep saved `saved`: its layout (with the skip counts `measured`
    /// found), its index, and the whole files with their stored validators.
    pub fn settled(
        &self,
        measured: &Layout,
        saved: &SavedState,
        feeds: Option<FeedBodies>,
        publication: Publication<'_>,
    ) -> Self {
        let SavedState { pages, files } = saved;
        let layout = Layout::from_records(pages).with_measures_of(measured);
        let index = layout.index_document(publication);
        let stored = |name: &str, fallback: Validators| {
            files
                .iter()
                .find(|f| f.name == name)
                .map(validators_of)
                .unwrap_or(fallback)
        };
        let doc = |name: &str, body: Bytes| {
            let validators = stored(name, Validators::of_new(&body));
            SmallDoc::new(body, validators)
        };
        Snapshot {
            index: SmallDoc::new(index, stored(INDEX_FILE, self.index.validators)),
            robots: SmallDoc::new(
                self.robots.body.clone(),
                stored(ROBOTS_FILE, self.robots.validators),
            ),
            feeds: feeds.map(|f| Feeds {
                atom: doc(FEED_ATOM, f.atom),
                rss: doc(FEED_RSS, f.rss),
                entries: f.entries,
                candidates: f.candidates,
            }),
            layout,
            news_at: self.news_at,
            llms: self.llms.clone(),
        }
    }
}

impl SmallDoc {
    /// Takes the stored time of these very bytes (the first time they were served).
    fn take_history(&mut self, stored: Validators) {
        if stored.fingerprint == self.validators.fingerprint {
            self.validators = stored;
        }
    }
}

fn validators_of(f: &FileRecord) -> Validators {
    Validators {
        fingerprint: f.fingerprint,
        changed_at: f.changed_at,
    }
}
