//! HTTP: which site and file a request names, and how a [`crate::answer::Document`] becomes a response
//! (conditional requests, HEAD, headers, the access log). What a file holds is the read side's
//! ([`crate::answer`]).
//!
//! URLs in bodies come from configuration only: no Host or X-Forwarded-* header changes them (a
//! proxy or a client could otherwise poison caches with another host's URLs).

pub mod client;
pub mod conditional;
mod error;
pub mod routes;
pub mod server;
mod signed;

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::stream::StreamExt;
use tokio::net::TcpListener;

use crate::crawlers::Trust;
use crate::files::File;
use crate::ledger::files::{ledger_name, ChangeTimes};
use crate::ledger::Fetch;
use crate::metrics::{GroupLabels, Metrics, RequestLabels};
use crate::site::sources::DatabaseNotReady;
use crate::site::{Readiness, Site};
use crate::sitemap::BaseUrl;
use crate::state::{App, AppState};
use crate::verify::{Claim, Decided};
use conditional::{http_date, is_not_modified, preferred_coding};
use error::HttpError;
use routes::{base_route, file_route, probe_route, Probe, Route};

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
    let host = request_host(&request);
    let (site, route) = match host {
        Ok(host) => app.resolve(host, &path),
        Err(_) => (None, None),
    };
    let logged_site = site.clone();
    let response = match route {
        _ if host.is_err() => Err(HttpError::BadHost),
        None => Err(HttpError::NotFound),
        Some(_) if method != Method::GET && method != Method::HEAD => {
            Err(HttpError::MethodNotAllowed)
        }
        Some(Route::Probe(probe)) => Ok(app.probe(probe).await),
        Some(Route::File(file)) => {
            let wanted = if method == Method::HEAD {
                Wanted::Headers
            } else {
                Wanted::Body
            };
            match site {
                Some(site) => app.file(site, file, &path, request.headers(), wanted).await,
                None => Err(HttpError::NotFound),
            }
        }
    };
    let mut response = response.unwrap_or_else(IntoResponse::into_response);
    app.finish(route, &mut response);
    if let (Some(site), Some(Route::File(file))) = (&logged_site, route) {
        app.record_crawler(site, file, &request, &response);
    }
    let log = AccessLog {
        method,
        path,
        site: logged_site,
        status: response.status().as_u16(),
        started,
        bytes: AtomicU64::new(0),
        metrics: app.metrics.clone(),
    };
    response.map(|body| log.wrap(body))
}

/// The host a request names: the URI's authority when it has one (HTTP/2's `:authority`, or an
/// absolute-form HTTP/1.1 target, which RFC 9112 says wins over Host), else its one Host
/// header. HTTP/1.1 without a Host header, or any request with two, is malformed.
fn request_host(request: &Request) -> Result<Option<&str>, HttpError> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let header = hosts.next();
    if hosts.next().is_some() {
        return Err(HttpError::BadHost);
    }
    if let Some(authority) = request.uri().authority() {
        return Ok(Some(authority.as_str()));
    }
    match header {
        Some(value) => Ok(value.to_str().ok()),
        None if request.version() == Version::HTTP_11 => Err(HttpError::BadHost),
        None => Ok(None),
    }
}

/// Whether the client wants the body or only the headers (HEAD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Body,
    Headers,
}

impl App {
    /// The site and file a request is for, by its host ([`request_host`]) and path: robots.txt and the
    /// IndexNow key file on the host of a site's base URL, its other files under its sitemaps
    /// URL (host and mount path). When requests are not routed by host, the one site answers
    /// any Host. Otherwise a Host no site names gets the operational endpoints only. URLs in
    /// bodies still come from configuration.
    fn resolve(&self, host: Option<&str>, path: &str) -> (Option<Arc<Site>>, Option<Route>) {
        let names =
            |url: &BaseUrl| !self.routed_by_host || host.is_some_and(|h| url.is_named_by(h));
        let key_file = self.indexnow_key_file.as_deref();
        // Base routes first across every site, so the answer never depends on the sites' order.
        let found = self
            .sites
            .iter()
            .filter(|site| names(site.base()))
            .find_map(|site| {
                let route = base_route(path, site.base().path(), key_file).or_else(|| {
                    let group = site.group_llms_at(path)?;
                    Some(Route::File(File::GroupLlms(group)))
                })?;
                Some((site, route))
            })
            .or_else(|| {
                self.sites
                    .iter()
                    .filter(|site| names(site.files()))
                    .find_map(|site| {
                        let group = |name: Option<&str>| site.group_position(name);
                        Some((site, file_route(path, site.files().path(), group)?))
                    })
            });
        match found {
            Some((site, route)) => (Some(site.clone()), Some(route)),
            None => (None, probe_route(path)),
        }
    }

    /// A file's response: `304` from its validators alone, HEAD without opening the body.
    async fn file(
        &self,
        site: Arc<Site>,
        file: File,
        path: &str,
        headers: &HeaderMap,
        wanted: Wanted,
    ) -> Result<Response, HttpError> {
        let document = self
            .reader
            .document(&site, file, preferred_coding(headers))?;
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
            .header(
                header::CACHE_CONTROL,
                self.cache_headers.cache_control(&site, file),
            );
        response = crate::cache_headers::tagged(response, &site, file, path);
        if let Some(links) = &site.first().links {
            response = response.header(header::LINK, links.clone());
        }
        if document.varies_by_encoding {
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
        let (body, len) = match wanted {
            Wanted::Headers => (empty_body(), self.reader.known_len(&document.body)),
            Wanted::Body => {
                let opened = self.reader.open(document.body).await?;
                if let Some(headers) = response.headers_mut() {
                    if let Some(revised) = &opened.revised {
                        revise_validators(headers, revised);
                    }
                    if opened.unvalidated {
                        headers.remove(header::ETAG);
                        headers.remove(header::LAST_MODIFIED);
                    }
                }
                (Body::from_stream(opened.stream), opened.len)
            }
        };
        if let Some(len) = len {
            response = response.header(header::CONTENT_LENGTH, len);
        }
        Ok(response.body(body).unwrap_or_default())
    }

    async fn probe(&self, probe: Probe) -> Response {
        match probe {
            Probe::Health => (StatusCode::OK, "ok\n").into_response(),
            Probe::Ready => self.readiness().await,
            Probe::Metrics => self.metrics_text(),
        }
    }

    /// `/readyz`: 503 while the database is away or gives no answer within
    /// [`crate::site::sources::DATABASE_WAIT`], a group's source cannot be read (a dropped
    /// view) or a site's first sweep is under way; 200
    /// once every site serves files, saying whether stored ones are still being verified.
    async fn readiness(&self) -> Response {
        match self.sources.database(&self.site().first().store).await {
            Ok(()) => {}
            Err(DatabaseNotReady::Store(e)) => {
                self.metrics.database_errors.inc();
                return HttpError::NotReady(e).into_response();
            }
            Err(unanswered) => return not_ready(&unanswered.to_string()),
        }
        if let Err(reason) = self.sources.readable(&self.sites).await {
            return not_ready(&reason);
        }
        let least = self.sites.iter().map(|site| site.readiness()).min();
        match least.unwrap_or(Readiness::Current) {
            Readiness::FirstSweep => HttpError::FirstSweep.into_response(),
            Readiness::Verifying => (
                StatusCode::OK,
                "ready: serving stored files, verifying them\n",
            )
                .into_response(),
            Readiness::Current => (StatusCode::OK, "ready\n").into_response(),
        }
    }

    fn metrics_text(&self) -> Response {
        for site in &self.sites {
            for group in &site.groups {
                let layout = &group.snapshot().layout;
                let labels = GroupLabels {
                    site: site.key.clone(),
                    group: group.label().to_string(),
                };
                self.metrics.record_entries(
                    &labels,
                    layout.len(),
                    layout.served(),
                    &layout.skipped(),
                );
            }
        }
        for site in &self.sites {
            if let Some(source) = site.first().store.source_status() {
                self.metrics
                    .record_source_lag(&site.key, source.lag_seconds);
            }
        }
        let changed = ChangeTimes::of(&self.sites);
        self.ledger
            .refresh_files_behind(|site, file| changed.get(site, file));
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

    /// Notes a crawler's fetch of one of a site's files in the ledger, by the signer its Web Bot
    /// Auth signature names or else its User-Agent, and what its signature and client address
    /// prove (now, or once verification decides: never waited for), with the version of the
    /// file its ETag names.
    fn record_crawler(&self, site: &Arc<Site>, file: File, request: &Request, response: &Response) {
        let Some(name) = ledger_name(site, file) else {
            return;
        };
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get(header::ETAG)
            .and_then(|v| v.to_str().ok());
        let now = chrono::Utc::now().timestamp();
        let fetch = Fetch::of_etag(now, etag);
        let headers = request.headers();
        let user_agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        let by_user_agent = self.ledger.classify(user_agent);
        let signed = signed::signature(&self.verifier, request);
        let Some(crawler) = signed.as_ref().map(|s| s.crawler).or(by_user_agent) else {
            if let Some(agent) = user_agent {
                self.ledger.record_unknown_agent(agent);
            }
            // "other" is never verified.
            let trust = Trust::Unverified;
            return self
                .ledger
                .record_fetch(None, trust, &site.key, &name, status, fetch);
        };
        // A request with no peer (served without the accept loop) proves nothing.
        let addr = request
            .extensions()
            .get::<client::Peer>()
            .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |peer| {
                client::client_addr(peer.0.ip(), headers, &self.trusted_proxies)
            });
        let claim = Claim {
            crawler,
            addr,
            signed,
            at: now,
        };
        let (ledger, site, verifier) = (self.ledger.clone(), site.clone(), self.verifier.clone());
        let decided = self.verifier.decide(claim, move |verdict| {
            verifier.tally(crawler, verdict);
            ledger.record_fetch(
                Some(crawler),
                verdict.trust,
                &site.key,
                &name,
                status,
                fetch,
            )
        });
        if decided == Decided::Busy {
            self.ledger.metrics().verdicts_dropped.inc();
        }
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
            Some(Route::File(File::Robots)) => None,
            Some(Route::File(_)) => Some("noindex"),
            _ => None,
        };
        if let Some(tag) = tag {
            response
                .headers_mut()
                .insert("x-robots-tag", HeaderValue::from_static(tag));
        }
    }
}

/// `/readyz`'s `503` saying why, to be asked again in a few seconds.
fn not_ready(reason: &str) -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("not ready: {reason}\n"),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// A body that sends nothing, for HEAD: its length header, when known, is left as it is.
fn empty_body() -> Body {
    Body::from_stream(futures::stream::empty::<io::Result<bytes::Bytes>>())
}

/// One log line per request, written when the body has been sent (or abandoned), with the
/// bytes that actually left.
struct AccessLog {
    method: Method,
    path: String,
    /// The site the request named (its base URL is logged, `-` when none).
    site: Option<Arc<Site>>,
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
            site = self.site.as_ref().map_or("-", |site| site.key.as_str()),
            status = self.status,
            bytes = self.bytes.load(Ordering::Relaxed),
            // Whole microseconds, so the log says 0.062, not 0.06189600000000001.
            ms = self.started.elapsed().as_micros() as f64 / 1000.0,
            "request"
        );
    }
}

/// A body rendered from rows that changed since the file's validators were taken goes out
/// under the validators of its own bytes.
fn revise_validators(headers: &mut HeaderMap, revised: &crate::answer::Revised) {
    if let Ok(etag) = HeaderValue::from_str(&revised.etag) {
        headers.insert(header::ETAG, etag);
    }
    if let Ok(date) = HeaderValue::from_str(&http_date(revised.changed_at)) {
        headers.insert(header::LAST_MODIFIED, date);
    }
}
