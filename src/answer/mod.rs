//! The read side: from a site, a file and what the client accepts to a [`Document`] (its type
//! and validators, decided from its group's snapshot without touching the database), and, only
//! when a body must be sent, the bytes: from memory, from the cache, or a render streamed
//! through a single flight ([`Reader::open`]). A `304` or a HEAD never opens the body, so it
//! never renders or compresses.
//!
//! Open [`Reader::document`] first, then [`Reader::open`], [`render`] (rows → XML → gzip or
//! brotli), `compress.rs` (the codings, and compressing beside the reading) and `cache.rs`
//! (single flight, and what is kept: each coding of a page on its own).

mod cache;
mod compress;
mod document;
pub mod render;

use std::io;
use std::sync::Arc;
use std::time::Instant;

use async_compression::tokio::bufread::GzipDecoder;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use tokio_util::io::{ReaderStream, StreamReader};

use crate::files::{File, PageId};
use crate::metrics::Metrics;
use crate::notify::IndexNowKey;
use crate::site::{Group, Readiness, ServedPage, Site};
use crate::sitemap::Fingerprint;
use cache::{Finished, Flight, Landing, Lookup, PageCache, PageKey};

pub use compress::Coding;
pub use document::{Accepts, Body, Document, PageForm};

/// A body as it streams to the client; an error item aborts the response.
pub type ByteStream = BoxStream<'static, io::Result<Bytes>>;

/// An opened body: its bytes, and their length when known before they are sent.
pub struct Opened {
    pub stream: ByteStream,
    pub len: Option<usize>,
    /// The render met rows that changed since the document's validators were taken: the
    /// bytes are a whole file of their own, sent under these instead.
    pub revised: Option<Revised>,
    /// The bytes stream from a render too slow to wait for, before it is known which
    /// validators they carry: they go out under none (no ETag, no Last-Modified), so a body is
    /// never sent under the validators of other bytes, and never cut for it either.
    pub unvalidated: bool,
}

/// Validators of a rendered body that replace the document's (see [`Opened::revised`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revised {
    /// Strong ETag, quoted, of the bytes sent.
    pub etag: String,
    /// Unix seconds, for `Last-Modified`.
    pub changed_at: i64,
}

impl File {
    /// Files that do not depend on the database: answered from the first second.
    fn served_before_the_first_sweep(self) -> bool {
        matches!(
            self,
            File::Robots
                | File::IndexNowKey
                | File::Stylesheet
                | File::Css
                | File::License
                | File::Llms
                | File::GroupLlms(_)
        )
    }
}

/// llms.txt before the first sweeps have read its sections: the site's header and its link to
/// the sitemaps, no section. Never a 5xx (Lighthouse fails a site whose llms.txt answers one);
/// its bytes have validators of their own, so the real file replaces it at the next request.
fn provisional_llms(site: &Site) -> Result<Document, AnswerError> {
    let llms = site.first().llms.as_ref().ok_or(AnswerError::NotFound)?;
    let body = Bytes::from(crate::llms::render(&llms.header, &[]));
    let validators = crate::site::Validators {
        fingerprint: Fingerprint::of(&body),
        changed_at: site.first().snapshot().robots.validators.changed_at,
    };
    Ok(Document::bytes(document::MARKDOWN, validators, body))
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

/// How long a request waits for a page's render to end before it streams the render instead.
/// Waiting means the bytes sent are known whole and under their own validators (rows may
/// change while a file renders); a render slower than this (a database that crawls) streams
/// from its first bytes under no validators at all ([`Opened::unvalidated`]): the rows may turn
/// out to have changed, and the body is whole either way.
const WHOLE_RENDER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A page's compressed bytes as a request sends them.
enum CompressedBody {
    Whole(Finished),
    Streaming(ByteStream),
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
        use document::{ATOM, MARKDOWN, RSL, RSS, TEXT, XML, XSL};
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
            // Held by the snapshot itself, so each coding is compressed once per version.
            File::Robots => Document::small(TEXT, &site.first().snapshot().robots, accepts),
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
            File::Css => Document::bytes(
                document::CSS,
                crate::stylesheet::css_validators(),
                Bytes::from_static(crate::stylesheet::CSS_BODY.as_bytes()),
            ),
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
                let together = site.together();
                match &together.llms {
                    Some(llms) => Document::small(MARKDOWN, llms, accepts),
                    None => provisional_llms(site)?,
                }
            }
            File::GroupLlms(group) => {
                let together = site.together();
                let own = together
                    .group_llms
                    .get(group)
                    .ok_or(AnswerError::NotFound)?;
                match own {
                    Some(llms) => Document::small(MARKDOWN, llms, accepts),
                    None => provisional_llms(site)?,
                }
            }
            File::License => {
                let (_, body) = site.first().license.as_ref().ok_or(AnswerError::NotFound)?;
                // Dated with robots.txt, which names it and changes with the policy.
                let validators = crate::site::Validators {
                    fingerprint: Fingerprint::of(body),
                    changed_at: robots().validators.changed_at,
                };
                Document::bytes(RSL, validators, body.clone())
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
                form: form @ (PageForm::Gzip | PageForm::Brotli),
            } => {
                let coding = form.cached_as()?;
                let key = PageKey::of(group, served, coding);
                self.cache.peek(&key).map(|file| file.len())
            }
            Body::Page { .. } => None,
        }
    }

    /// The body's bytes. A page is rendered whole before its first byte goes out (or comes
    /// whole from the cache): a database failure is then a clean `503`, never a cut body, and
    /// rows that changed since the sweep give a whole file of their own, sent under its own
    /// validators ([`Opened::revised`]) while the sweep is told to catch up.
    pub async fn open(self: &Arc<Self>, body: Body) -> Result<Opened, AnswerError> {
        let (group, served, form) = match body {
            Body::Bytes(bytes) => {
                let len = Some(bytes.len());
                let stream = futures::stream::once(async { Ok(bytes) }).boxed();
                return Ok(Opened {
                    stream,
                    len,
                    revised: None,
                    unvalidated: false,
                });
            }
            Body::Page {
                group,
                served,
                form,
            } => (group, *served, form),
        };
        let Some(coding) = form.cached_as() else {
            return self.text_file(group, served).await;
        };
        // The identity XML is the gzip file decoded: one cached form serves both.
        let decoded = |stream| match form {
            PageForm::Xml => gunzip(stream),
            _ => stream,
        };
        let finished = match self.compressed_file(group, served, coding).await? {
            CompressedBody::Whole(finished) => finished,
            CompressedBody::Streaming(stream) => {
                return Ok(Opened {
                    stream: decoded(stream),
                    len: None,
                    revised: None,
                    unvalidated: true,
                });
            }
        };
        let revised = finished.revised.map(|v| Revised::of(v, form));
        let len = (form != PageForm::Xml).then(|| finished.file.len());
        Ok(Opened {
            stream: decoded(finished.file.stream()),
            len,
            revised,
            unvalidated: false,
        })
    }

    /// The page's whole file compressed as `coding`: from the cache, or from the render under
    /// way, or from a render this request starts; streamed instead when the render is too slow
    /// to wait for.
    async fn compressed_file(
        self: &Arc<Self>,
        group: Arc<Group>,
        served: ServedPage,
        coding: Coding,
    ) -> Result<CompressedBody, AnswerError> {
        let key = PageKey::of(&group, &served, coding);
        let flight = match self.cache.lookup(&key) {
            Lookup::Cached(file) => {
                self.metrics.cache_hits.inc();
                return Ok(CompressedBody::Whole(Finished {
                    file,
                    revised: None,
                }));
            }
            Lookup::Flight { flight, started } => {
                if started {
                    self.start_render(group, key, served, flight.clone());
                } else {
                    self.metrics.render_followers.inc();
                }
                flight
            }
        };
        match tokio::time::timeout(WHOLE_RENDER_WAIT, flight.finished()).await {
            Ok(finished) => finished
                .map(CompressedBody::Whole)
                .map_err(|e| AnswerError::Unavailable(io::Error::other(e))),
            Err(_slow) => {
                let stream = first_chunk_or_unavailable(flight.follow()).await?;
                Ok(CompressedBody::Streaming(stream))
            }
        }
    }

    /// Renders a page in a task of its own, so the others waiting for it get it if the first
    /// client leaves. A failure is not logged here: every request that waited for the render
    /// gets it as its error, and logs it once.
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
            let sink = flight.clone();
            let coding = key.coding;
            let result = render::page(&group, &served, coding, move |chunk| sink.push(chunk)).await;
            reader
                .metrics
                .render_seconds
                .observe(started.elapsed().as_secs_f64());
            let landing = match result {
                Ok((rendered, last)) => {
                    flight.push(last);
                    match reader.revised(&group, &served, &rendered) {
                        Some(validators) => Landing::Revised(validators),
                        None => Landing::Keep,
                    }
                }
                Err(e) => {
                    if let render::RenderError::Store(_) = e {
                        reader.metrics.database_errors.inc();
                    }
                    Landing::Failed(Arc::new(e))
                }
            };
            reader.cache.land(&key, landing);
        });
    }

    /// A page's text sitemap, rendered for this request.
    async fn text_file(
        self: &Arc<Self>,
        group: Arc<Group>,
        served: ServedPage,
    ) -> Result<Opened, AnswerError> {
        self.metrics.renders.inc();
        let (text, rendered) = render::page_text(&group, &served).await.map_err(|e| {
            self.metrics.database_errors.inc();
            AnswerError::Unavailable(io::Error::other(e))
        })?;
        let revised = self
            .revised(&group, &served, &rendered)
            .map(|v| Revised::of(v, PageForm::Text));
        Ok(Opened {
            len: Some(text.len()),
            stream: futures::stream::once(async { Ok(text) }).boxed(),
            revised,
            unvalidated: false,
        })
    }

    /// The validators of a render's bytes when they are not those the page was served under
    /// (the rows changed since the last sweep); the sweep is told to catch up.
    fn revised(
        &self,
        group: &Group,
        served: &ServedPage,
        rendered: &render::Rendered,
    ) -> Option<crate::site::Validators> {
        if !rendered.describes_another_state_than(&served.page) {
            return None;
        }
        group.report_stale(served);
        self.metrics.stale_renders.inc();
        let now = chrono::Utc::now().timestamp();
        Some(rendered.revised_validators(&served.page, now))
    }

    /// Bytes held by the cache's finished pages.
    pub fn cached_bytes(&self) -> usize {
        self.cache.used()
    }
}

impl PageKey {
    fn of(group: &Group, served: &ServedPage, coding: Coding) -> Self {
        PageKey {
            group: group.key.as_str().into(),
            page_no: served.page.no,
            fingerprint: served.page.fingerprint,
            coding,
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
