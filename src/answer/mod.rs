//! The read side: from a site, a file and what the client accepts to a [`Document`] (its type
//! and validators, decided from its group's snapshot without touching the database), and, only
//! when a body must be sent, the bytes: from memory, from the cache, or a render streamed
//! through a single flight ([`Reader::open`]). A `304` or a HEAD never opens the body, so it
//! never renders or compresses.
//!
//! Open [`Reader::document`] first, then [`Reader::open`], [`render`] (rows → XML → gzip) and
//! `cache.rs` (single flight, and what is kept).

mod cache;
mod document;
pub mod render;

use std::io;
use std::sync::Arc;
use std::time::Instant;

use async_compression::tokio::bufread::GzipDecoder;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use tokio_util::io::{ReaderStream, StreamReader};

use crate::metrics::Metrics;
use crate::notify::IndexNowKey;
use crate::site::{Group, Readiness, ServedPage, Site};
use crate::sitemap::Fingerprint;
use cache::{Flight, Landing, Lookup, PageCache, PageKey};

pub use document::{Accepts, Body, Document, PageForm};

/// A body as it streams to the client; an error item aborts the response.
pub type ByteStream = BoxStream<'static, io::Result<Bytes>>;

/// An opened body: its bytes, and their length when known before they are sent.
pub struct Opened {
    pub stream: ByteStream,
    pub len: Option<usize>,
}

/// A file a site serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum File {
    /// `/robots.txt`, at the root of the site's host.
    Robots,
    /// `<key>.txt`: the IndexNow key, proving the site is ours.
    IndexNowKey,
    /// `/sitemap_index.xml`.
    Index,
    /// `/sitemap.xml`: the urlset when one file holds all, else the index.
    Sitemap,
    /// `/sitemap-K.xml.gz` (`/sitemap-<group>-K.xml.gz`).
    PageGz(PageId),
    /// `/sitemap-K.xml`.
    PageXml(PageId),
    /// `/sitemap-K.txt`: the same entries as file K, one URL per line.
    PageTxt(PageId),
    /// `/sitemap.txt`: the text sitemap when one file holds all.
    SitemapTxt,
    FeedAtom,
    FeedRss,
    /// `/sitemap.xsl`: the stylesheet browsers show sitemaps with.
    Stylesheet,
    /// `/llms.txt` and `/.well-known/llms.txt`, at the root of the site's host.
    Llms,
}

/// File K of one of a site's groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageId {
    /// The group's position among the site's groups.
    pub group: usize,
    pub no: i64,
}

impl File {
    /// Files that do not depend on the database: answered from the first second.
    fn served_before_the_first_sweep(self) -> bool {
        matches!(self, File::Robots | File::IndexNowKey | File::Stylesheet)
    }
}

/// Why a file cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("no such file")]
    NotFound,
    #[error("the file could not be read from the database")]
    Unavailable(#[source] io::Error),
    /// Nothing was stored for the site (or one of its groups) and its first sweep is under way.
    #[error("the site's first sweep is under way")]
    FirstSweep,
}

/// Answers requests for files from the sites' snapshots, rendering through one shared cache.
pub struct Reader {
    cache: PageCache,
    metrics: Arc<Metrics>,
    indexnow_key: Option<IndexNowKey>,
}

impl Reader {
    pub fn new(
        cache_budget_bytes: usize,
        metrics: Arc<Metrics>,
        indexnow_key: Option<IndexNowKey>,
    ) -> Self {
        Self {
            cache: PageCache::new(cache_budget_bytes),
            metrics,
            indexnow_key,
        }
    }

    /// The document `file` of `site` is now, for a client that `accepts` these codings.
    pub fn document(
        &self,
        site: &Site,
        file: File,
        accepts: Accepts,
    ) -> Result<Document, AnswerError> {
        use document::{ATOM, MARKDOWN, RSS, TEXT, XML, XSL};
        let serving = |readiness: Readiness| {
            (file.served_before_the_first_sweep() || readiness.serves_files())
                .then_some(())
                .ok_or(AnswerError::FirstSweep)
        };
        let group_page = |id: PageId| {
            let group = site.groups.get(id.group).ok_or(AnswerError::NotFound)?;
            serving(group.readiness())?;
            let served = group.snapshot().page(id.no).ok_or(AnswerError::NotFound)?;
            Ok::<_, AnswerError>((group.clone(), served))
        };
        // A page answers by its group's readiness; anything else lists every group.
        if !matches!(file, File::PageGz(_) | File::PageXml(_) | File::PageTxt(_)) {
            serving(site.readiness())?;
        }
        let robots = || site.first().snapshot().robots.clone();
        Ok(match file {
            File::PageGz(id) => {
                let (group, served) = group_page(id)?;
                Document::gzip_file(group, served)
            }
            File::PageXml(id) => {
                let (group, served) = group_page(id)?;
                Document::xml_file(group, served, accepts)
            }
            File::PageTxt(id) => {
                let (group, served) = group_page(id)?;
                Document::text_file(group, served)
            }
            File::Robots => {
                let robots = robots();
                Document::bytes(TEXT, robots.validators, robots.body)
            }
            File::IndexNowKey => {
                let key = self.indexnow_key.as_ref().ok_or(AnswerError::NotFound)?;
                let body = Bytes::from(key.as_str().to_string());
                let validators = crate::site::Validators {
                    fingerprint: Fingerprint::of(&body),
                    changed_at: robots().validators.changed_at,
                };
                Document::bytes(TEXT, validators, body)
            }
            File::Index => Document::small(XML, &site.together().index, accepts),
            File::FeedAtom | File::FeedRss => {
                let together = site.together();
                let feeds = together.feeds.as_ref().ok_or(match site.has_feeds() {
                    false => AnswerError::NotFound,
                    // Stored files are served at once; the feeds come with the first sweep.
                    true => AnswerError::FirstSweep,
                })?;
                match file {
                    File::FeedAtom => Document::small(ATOM, &feeds.atom, accepts),
                    _ => Document::small(RSS, &feeds.rss, accepts),
                }
            }
            File::Stylesheet => Document::bytes(
                XSL,
                crate::stylesheet::validators(),
                Bytes::from_static(crate::stylesheet::BODY.as_bytes()),
            ),
            File::Sitemap => match site.single_page() {
                Some((group, only)) => Document::xml_file(group, only, accepts),
                None => Document::small(XML, &site.together().index, accepts),
            },
            File::Llms => {
                if site.first().llms.is_none() {
                    return Err(AnswerError::NotFound);
                }
                let together = site.together();
                // Stored files are served at once; llms.txt comes with the first sweeps.
                let llms = together.llms.as_ref().ok_or(AnswerError::FirstSweep)?;
                Document::small(MARKDOWN, llms, accepts)
            }
            File::SitemapTxt => {
                let (group, only) = site.single_page().ok_or(AnswerError::NotFound)?;
                Document::text_file(group, only)
            }
        })
    }

    /// The body's length when it is known without rendering (HEAD never renders to learn it).
    pub fn known_len(&self, body: &Body) -> Option<usize> {
        match body {
            Body::Bytes(bytes) => Some(bytes.len()),
            Body::Page {
                group,
                served,
                form: PageForm::Gzip,
            } => self
                .cache
                .peek(&PageKey::of(group, served))
                .map(|file| file.len()),
            Body::Page { .. } => None,
        }
    }

    /// The body's bytes as they stream. A database that fails before the first byte is an
    /// error here (a clean `503`); once bytes flow, a failure ends the stream with an error
    /// item, which aborts the connection, so a truncated file never looks complete.
    pub async fn open(self: &Arc<Self>, body: Body) -> Result<Opened, AnswerError> {
        let (group, served, form) = match body {
            Body::Bytes(bytes) => {
                let len = Some(bytes.len());
                let stream = futures::stream::once(async { Ok(bytes) }).boxed();
                return Ok(Opened { stream, len });
            }
            Body::Page {
                group,
                served,
                form,
            } => (group, *served, form),
        };
        let (stream, len) = match form {
            PageForm::Text => (self.render_text(group, served), None),
            PageForm::Gzip => self.gzip_stream(group, served),
            PageForm::Xml => (gunzip(self.gzip_stream(group, served).0), None),
        };
        Ok(Opened {
            stream: first_chunk_or_unavailable(stream).await?,
            len,
        })
    }

    /// The page's gzip bytes: from the cache, or following the render under way, or from a
    /// render this request starts.
    fn gzip_stream(
        self: &Arc<Self>,
        group: Arc<Group>,
        served: ServedPage,
    ) -> (ByteStream, Option<usize>) {
        let key = PageKey::of(&group, &served);
        match self.cache.lookup(&key) {
            Lookup::Cached(file) => {
                self.metrics.cache_hits.inc();
                (file.stream(), Some(file.len()))
            }
            Lookup::Flight { flight, started } => {
                if started {
                    self.start_render(group, key, served, flight.clone());
                } else {
                    self.metrics.render_followers.inc();
                }
                (flight.follow(), None)
            }
        }
    }

    /// Renders a page in a task of its own, so followers keep streaming if the first client
    /// leaves. A failure is not logged here: every request that followed the render gets it
    /// as its error, and logs it once.
    fn start_render(
        self: &Arc<Self>,
        group: Arc<Group>,
        key: PageKey,
        served: ServedPage,
        flight: Arc<Flight>,
    ) {
        let reader = self.clone();
        tokio::spawn(async move {
            reader.metrics.renders.inc();
            let started = Instant::now();
            let page = &served.page;
            let result = render::page_gz(&group, &served, |chunk| flight.push(chunk)).await;
            reader
                .metrics
                .render_seconds
                .observe(started.elapsed().as_secs_f64());
            let landing = match result {
                Ok((rendered, _)) if rendered.describes_another_state_than(page) => {
                    // The rows changed since the last sweep: let the sweep catch up.
                    group.report_stale(&served);
                    reader.metrics.stale_renders.inc();
                    Landing::Stale
                }
                Ok((_, last)) => {
                    flight.push(last);
                    Landing::Keep
                }
                Err(e) => {
                    reader.metrics.database_errors.inc();
                    Landing::Failed(Arc::new(e))
                }
            };
            reader.cache.land(&key, landing);
        });
    }

    /// Streams a page's text sitemap from a task of its own, through a small bounded channel so
    /// a slow client slows the render instead of growing memory.
    fn render_text(self: &Arc<Self>, group: Arc<Group>, served: ServedPage) -> ByteStream {
        let (tx, rx) = futures::channel::mpsc::channel(2);
        self.metrics.renders.inc();
        let metrics = self.metrics.clone();
        tokio::spawn(async move {
            let rendered = render::page_text(&group, &served, tx).await;
            if rendered.is_some_and(|r| r.describes_another_state_than(&served.page)) {
                group.report_stale(&served);
                metrics.stale_renders.inc();
            }
        });
        rx.boxed()
    }

    /// Bytes held by the cache's finished pages.
    pub fn cached_bytes(&self) -> usize {
        self.cache.used()
    }
}

impl PageKey {
    fn of(group: &Group, served: &ServedPage) -> Self {
        PageKey {
            group: group.key.as_str().into(),
            page_no: served.page.no,
            fingerprint: served.page.fingerprint,
        }
    }
}

/// Waits for the first bytes: a failure before any byte is the request's error.
async fn first_chunk_or_unavailable(mut stream: ByteStream) -> Result<ByteStream, AnswerError> {
    match stream.next().await {
        Some(Ok(first)) => Ok(futures::stream::once(async move { Ok(first) })
            .chain(stream)
            .boxed()),
        Some(Err(e)) => Err(AnswerError::Unavailable(e)),
        None => Ok(stream),
    }
}

fn gunzip(gz: ByteStream) -> ByteStream {
    ReaderStream::new(GzipDecoder::new(StreamReader::new(gz))).boxed()
}
