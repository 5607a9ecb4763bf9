//! HTTP: the router, the handlers and how documents become responses.
//!
//! Handlers ask the site's snapshot for validators first and answer `304` from them, without
//! rendering or compressing anything. Bodies stream; a render that fails after the status line
//! aborts the connection, so a truncated file never looks complete. URLs in bodies come from
//! configuration only: no Host or X-Forwarded-* header changes them (a proxy or a client could
//! otherwise poison caches with another host's URLs).

pub mod conditional;
pub mod routes;
pub mod server;

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_compression::tokio::bufread::GzipDecoder;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use tokio::net::TcpListener;
use tokio_util::io::{ReaderStream, StreamReader};

use crate::cache::{Flight, Lookup, PageCache, PageKey};
use crate::config::BaseUrl;
use crate::error::HttpError;
use crate::metrics::{Metrics, RequestLabels};
use crate::notify::Notifier;
use crate::render;
use crate::site::{ServedPage, Site, SmallDoc, Validators};
use conditional::{accepts_gzip, http_date, is_not_modified};
use routes::{base_route, file_route, probe_route, Route};

const XML: &str = "application/xml; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
const GZIP: &str = "application/gzip";
const ATOM: &str = "application/atom+xml; charset=utf-8";
const RSS: &str = "application/rss+xml; charset=utf-8";
const XSL: &str = "text/xsl; charset=utf-8";

/// Everything a handler needs; built once at start.
pub struct App {
    /// The sites served: one, or those of SITEMAP_SITES_FILE.
    pub sites: Vec<Arc<Site>>,
    /// Whether a request's Host header chooses its site (else the one site answers any Host).
    pub routed_by_host: bool,
    /// Change notification; its IndexNow key file is served under each site's base URL.
    pub notifier: Arc<Notifier>,
    pub cache: PageCache,
    pub metrics: Arc<Metrics>,
    pub cache_control: HeaderValue,
    /// `X-Robots-Tag` for every response (staging), or only documents (production).
    pub staging: bool,
}

pub type AppState = Arc<App>;

pub fn router(app: AppState) -> Router {
    Router::new().fallback(handle).with_state(app)
}

/// Serves until `shutdown` completes, then lets in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    app: AppState,
    limits: server::Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    server::serve(listener, router(app), limits, shutdown).await
}

async fn handle(State(app): State<AppState>, request: Request) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let (site, route) = app.resolve(request.headers(), &path);
    let site = site.cloned();
    let mut response = match route {
        None => HttpError::NotFound.into_response(),
        Some(_) if method != Method::GET && method != Method::HEAD => {
            HttpError::MethodNotAllowed.into_response()
        }
        Some(route) => match app
            .answer(site, route, request.headers(), method == Method::HEAD)
            .await
        {
            Ok(response) => response,
            Err(e) => e.into_response(),
        },
    };
    app.finish(route, &mut response);
    let log = AccessLog {
        method,
        path,
        status: response.status().as_u16(),
        started,
        bytes: AtomicU64::new(0),
        metrics: app.metrics.clone(),
    };
    response.map(|body| log.wrap(body))
}

/// One log line per request, written when the body has been sent (or abandoned), with the
/// bytes that actually left.
struct AccessLog {
    method: Method,
    path: String,
    status: u16,
    started: Instant,
    bytes: AtomicU64,
    metrics: Arc<Metrics>,
}

impl AccessLog {
    fn wrap(self, body: Body) -> Body {
        let log = Arc::new(self);
        Body::from_stream(body.into_data_stream().inspect(move |chunk| {
            if let Ok(bytes) = chunk {
                log.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                log.metrics.bytes_served.inc_by(bytes.len() as u64);
            }
        }))
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        tracing::info!(
            method = %self.method,
            path = %self.path,
            status = self.status,
            bytes = self.bytes.load(Ordering::Relaxed),
            ms = self.started.elapsed().as_secs_f64() * 1000.0,
            "request"
        );
    }
}

/// A document as the client will get it, before conditional checks.
struct Document {
    content_type: &'static str,
    etag: String,
    validators: Validators,
    encoding: Option<&'static str>,
    vary: bool,
    body: DocumentBody,
}

enum DocumentBody {
    Bytes(Bytes),
    Page {
        page: ServedPage,
        gzip: bool,
    },
    /// A page as a text sitemap, rendered for each request (it is not cached).
    Text(ServedPage),
}

impl App {
    /// The first (or only) site.
    pub fn site(&self) -> &Arc<Site> {
        &self.sites[0]
    }

    /// The site and file a request is for, by its Host header and path: robots.txt and the
    /// IndexNow key file on the host of a site's base URL, its other files under its sitemaps
    /// URL (host and mount path). When requests are not routed by host, the one site answers
    /// any Host. Otherwise a Host no site names gets the operational endpoints only. URLs in
    /// bodies still come from configuration.
    fn resolve(&self, headers: &HeaderMap, path: &str) -> (Option<&Arc<Site>>, Option<Route>) {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let names =
            |url: &BaseUrl| !self.routed_by_host || host.is_some_and(|h| url.is_named_by(h));
        let key_file = self.notifier.indexnow_key().map(|key| key.file_name());
        // Base routes first across every site, so the answer never depends on the sites' order.
        let found = self
            .sites
            .iter()
            .filter(|site| names(&site.base))
            .find_map(|site| {
                Some((
                    site,
                    base_route(path, site.base.path(), key_file.as_deref())?,
                ))
            })
            .or_else(|| {
                self.sites
                    .iter()
                    .filter(|site| names(&site.files))
                    .find_map(|site| Some((site, file_route(path, site.files.path())?)))
            });
        match found {
            Some((site, route)) => (Some(site), Some(route)),
            None => (None, probe_route(path)),
        }
    }

    async fn answer(
        self: &Arc<Self>,
        site: Option<Arc<Site>>,
        route: Route,
        headers: &HeaderMap,
        head: bool,
    ) -> Result<Response, HttpError> {
        match route {
            Route::Health => return Ok((StatusCode::OK, "ok\n").into_response()),
            Route::Ready => return Ok(self.readiness().await),
            Route::Metrics => return Ok(self.metrics_text()),
            _ => {}
        }
        let site = site.ok_or(HttpError::NotFound)?;
        let snapshot = site.snapshot();
        let document = match route {
            Route::Health | Route::Ready | Route::Metrics => return Err(HttpError::NotFound),
            Route::Robots => {
                Document::bytes(TEXT, snapshot.robots, snapshot.robots_body.clone(), None)
            }
            Route::IndexNowKey => {
                let key = self.notifier.indexnow_key().ok_or(HttpError::NotFound)?;
                let body = Bytes::from(key.as_str().to_string());
                let validators = Validators {
                    fingerprint: crate::sitemap::Fingerprint::of(&body),
                    changed_at: snapshot.robots.changed_at,
                };
                Document::bytes(TEXT, validators, body, None)
            }
            Route::Index => small_document(XML, &snapshot.index, headers),
            Route::FeedAtom | Route::FeedRss => {
                let feeds = snapshot.feeds.as_ref().ok_or(HttpError::NotFound)?;
                match route {
                    Route::FeedAtom => small_document(ATOM, &feeds.atom, headers),
                    _ => small_document(RSS, &feeds.rss, headers),
                }
            }
            Route::Stylesheet => Document::bytes(
                XSL,
                crate::stylesheet::validators(),
                Bytes::from_static(crate::stylesheet::BODY.as_bytes()),
                None,
            ),
            Route::Sitemap => match snapshot.single_page() {
                Some(only) => page_document(only, PageForm::Negotiated(accepts_gzip(headers))),
                None => small_document(XML, &snapshot.index, headers),
            },
            Route::PageTxt(no) => text_document(snapshot.page(no).ok_or(HttpError::NotFound)?),
            Route::SitemapTxt => text_document(snapshot.single_page().ok_or(HttpError::NotFound)?),
            Route::PageGz(no) | Route::PageXml(no) => match snapshot.page(no) {
                None => return Err(HttpError::NotFound),
                Some(page) if matches!(route, Route::PageGz(_)) => {
                    page_document(page, PageForm::GzipFile)
                }
                Some(page) => page_document(page, PageForm::Negotiated(accepts_gzip(headers))),
            },
        };
        let not_modified = is_not_modified(headers, &document.etag, document.validators.changed_at);
        let mut response = Response::builder()
            .status(if not_modified {
                StatusCode::NOT_MODIFIED
            } else {
                StatusCode::OK
            })
            .header(header::ETAG, &document.etag)
            .header(
                header::LAST_MODIFIED,
                http_date(document.validators.changed_at),
            )
            .header(header::CACHE_CONTROL, self.cache_control.clone());
        if document.vary {
            response = response.header(header::VARY, "Accept-Encoding");
        }
        if not_modified {
            self.metrics.not_modified.inc();
            return Ok(response.body(Body::empty()).unwrap_or_default());
        }
        response = response.header(header::CONTENT_TYPE, document.content_type);
        if let Some(encoding) = document.encoding {
            response = response.header(header::CONTENT_ENCODING, encoding);
        }
        let (body, len) = self.body(&site, document.body, head).await?;
        if let Some(len) = len {
            response = response.header(header::CONTENT_LENGTH, len);
        }
        Ok(response.body(body).unwrap_or_default())
    }

    /// The body and, when known in advance, its length. HEAD never renders.
    async fn body(
        self: &Arc<Self>,
        site: &Arc<Site>,
        body: DocumentBody,
        head: bool,
    ) -> Result<(Body, Option<usize>), HttpError> {
        let (page, gzip) = match body {
            DocumentBody::Bytes(bytes) => {
                let len = bytes.len();
                return Ok((
                    if head {
                        Body::empty()
                    } else {
                        Body::from(bytes)
                    },
                    Some(len),
                ));
            }
            DocumentBody::Page { page, gzip } => (page, gzip),
            DocumentBody::Text(_) if head => {
                return Ok((
                    Body::from_stream(futures::stream::empty::<io::Result<Bytes>>()),
                    None,
                ))
            }
            DocumentBody::Text(served) => {
                return Ok((
                    Body::from_stream(self.render_text(site, served).await?),
                    None,
                ))
            }
        };
        let key = PageKey {
            site: site.key.as_str().into(),
            page_no: page.page.no,
            fingerprint: page.page.fingerprint,
        };
        if head {
            // The length is known only for a cached gzip file; HEAD never renders to learn it.
            let len = self.cache.peek(&key).filter(|_| gzip).map(|b| b.len());
            let empty = futures::stream::empty::<io::Result<Bytes>>();
            return Ok((Body::from_stream(empty), len));
        }
        let (gz, len) = match self.cache.lookup(&key) {
            Lookup::Cached(file) => {
                self.metrics.cache_hits.inc();
                (file.stream(), Some(file.len()))
            }
            Lookup::Flight { flight, started } => {
                if started {
                    self.start_render(site.clone(), key, page, flight.clone());
                } else {
                    self.metrics.render_followers.inc();
                }
                (first_chunk_or_unavailable(flight.follow()).await?, None)
            }
        };
        Ok(if gzip {
            (Body::from_stream(gz), len)
        } else {
            (Body::from_stream(gunzip(gz)), None)
        })
    }

    /// Streams a page's text sitemap from a task of its own, through a small bounded channel so
    /// a slow client slows the render instead of growing memory.
    async fn render_text(
        self: &Arc<Self>,
        site: &Arc<Site>,
        served: ServedPage,
    ) -> Result<BoxStream<'static, io::Result<Bytes>>, HttpError> {
        let (tx, rx) = futures::channel::mpsc::channel(2);
        let site = site.clone();
        self.metrics.renders.inc();
        tokio::spawn(async move {
            let ServedPage { page, range } = served;
            let rendered = render::page_text(&site, &page, range, tx).await;
            if rendered.is_some_and(|r| r.describes_another_state_than(&page)) {
                // The rows changed since the last sweep: let the sweep catch up.
                site.catch_up(&page, range).await.ok();
            }
        });
        first_chunk_or_unavailable(rx.boxed()).await
    }

    /// Renders a page in a task of its own, so followers keep streaming if the first client leaves.
    fn start_render(
        self: &Arc<Self>,
        site: Arc<Site>,
        key: PageKey,
        served: ServedPage,
        flight: Arc<Flight>,
    ) {
        let app = self.clone();
        tokio::spawn(async move {
            app.metrics.renders.inc();
            let started = Instant::now();
            let ServedPage { page, range } = served;
            let result = render::page_gz(&site, &page, range, |chunk| flight.push(chunk)).await;
            app.metrics
                .render_seconds
                .observe(started.elapsed().as_secs_f64());
            match result {
                Ok(rendered) => {
                    let current = !rendered.describes_another_state_than(&page);
                    app.cache.land(&key, Some(current));
                    if !current {
                        // The rows changed since the last sweep: let the sweep catch up.
                        tokio::spawn(async move { site.catch_up(&page, range).await });
                    }
                }
                Err(e) => {
                    app.metrics.database_errors.inc();
                    tracing::error!(page = page.no, error = %e, "render failed; aborting the response");
                    app.cache.land(&key, None);
                }
            }
        });
    }

    async fn readiness(&self) -> Response {
        match self.site().store.ready().await {
            Ok(()) => (StatusCode::OK, "ready\n").into_response(),
            Err(e) => {
                self.metrics.database_errors.inc();
                HttpError::Unavailable(e.to_string()).into_response()
            }
        }
    }

    fn metrics_text(&self) -> Response {
        let (mut served, mut skipped) = (0, crate::sitemap::SkipCounts::default());
        for site in &self.sites {
            let snapshot = site.snapshot();
            served += snapshot.served();
            skipped.merge(&snapshot.skipped());
        }
        self.metrics.record_entries(served, &skipped);
        let body = self.metrics.encode();
        (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            body,
        )
            .into_response()
    }

    fn finish(&self, route: Option<Route>, response: &mut Response) {
        let status = response.status().as_u16();
        self.metrics
            .requests
            .get_or_create(&RequestLabels {
                route: route.map_or("unknown", Route::name),
                status,
            })
            .inc();
        let tag = match route {
            _ if self.staging => Some("noindex, nofollow"),
            Some(r) if r.is_document() && r != Route::Robots => Some("noindex"),
            _ => None,
        };
        if let Some(tag) = tag {
            response
                .headers_mut()
                .insert("x-robots-tag", HeaderValue::from_static(tag));
        }
    }
}

impl Document {
    fn bytes(
        content_type: &'static str,
        validators: Validators,
        body: Bytes,
        encoding: Option<&'static str>,
    ) -> Self {
        Self {
            content_type,
            etag: etag(validators, encoding.is_some()),
            validators,
            encoding,
            vary: false,
            body: DocumentBody::Bytes(body),
        }
    }
}

/// A small in-memory document, gzip-encoded when the client accepts it.
fn small_document(content_type: &'static str, doc: &SmallDoc, headers: &HeaderMap) -> Document {
    let gzip = accepts_gzip(headers);
    let body = if gzip {
        doc.gz.get_or_init(|| render::gzip(&doc.body)).clone()
    } else {
        doc.body.clone()
    };
    let mut document = Document::bytes(content_type, doc.validators, body, gzip.then_some("gzip"));
    document.vary = true;
    document
}

/// The text sitemap of a page: its ETag derives from the XML's fingerprint (the same entries),
/// so it changes whenever the file does.
fn text_document(served: ServedPage) -> Document {
    let validators = served.page.validators();
    Document {
        content_type: TEXT,
        etag: format!("\"{}-txt\"", validators.fingerprint.hex()),
        validators,
        encoding: None,
        vary: false,
        body: DocumentBody::Text(served),
    }
}

enum PageForm {
    /// `/sitemap-K.xml.gz`: the gzip file itself.
    GzipFile,
    /// `/sitemap-K.xml`: XML, gzip-encoded when the client accepts it.
    Negotiated(bool),
}

fn page_document(served: ServedPage, form: PageForm) -> Document {
    let validators = served.page.validators();
    let (content_type, gzip, encoding, vary) = match form {
        PageForm::GzipFile => (GZIP, true, None, false),
        PageForm::Negotiated(true) => (XML, true, Some("gzip"), true),
        PageForm::Negotiated(false) => (XML, false, None, true),
    };
    Document {
        content_type,
        etag: etag(validators, gzip),
        validators,
        encoding,
        vary,
        body: DocumentBody::Page { page: served, gzip },
    }
}

/// Strong ETag from the fingerprint of the XML; gzip bytes are another representation.
fn etag(validators: Validators, gzip: bool) -> String {
    let suffix = if gzip { "-gz" } else { "" };
    format!("\"{}{suffix}\"", validators.fingerprint.hex())
}

/// Waits for the render's first bytes: a database that fails before any byte was produced
/// gets a clean `503`; once bytes flow, a failure aborts the connection instead.
async fn first_chunk_or_unavailable(
    mut stream: BoxStream<'static, io::Result<Bytes>>,
) -> Result<BoxStream<'static, io::Result<Bytes>>, HttpError> {
    match stream.next().await {
        Some(Ok(first)) => Ok(futures::stream::once(async move { Ok(first) })
            .chain(stream)
            .boxed()),
        Some(Err(e)) => Err(HttpError::Unavailable(e.to_string())),
        None => Ok(stream),
    }
}

fn gunzip(gz: BoxStream<'static, io::Result<Bytes>>) -> BoxStream<'static, io::Result<Bytes>> {
    ReaderStream::new(GzipDecoder::new(StreamReader::new(gz))).boxed()
}
