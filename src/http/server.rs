//! The accept loop: HTTP/1.1 and HTTP/2 connections with bounded header reads, idle limits for
//! both (a connection that sends nothing, only the HTTP/2 preface or a partial request, is
//! closed within the header timeout), HTTP/2 keep-alive pings, per-request and per-body-frame
//! timeouts, a cap on concurrent requests, a reserve of file descriptors (near the process
//! limit the oldest idle connections are closed to make room, so a flood of idle sockets never
//! starves robots.txt or the probes), each request's peer address in its extensions
//! ([`Peer`]), and graceful shutdown that lets downloads in flight finish.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::Instant;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::ServiceExt;
use tower_http::timeout::{ResponseBodyTimeoutLayer, TimeoutLayer};

use super::client::Peer;

/// Limits that keep one client from holding the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest wait for a request's headers, counted from the accept: a connection that has not
    /// started a request by then is closed, whatever protocol it speaks.
    pub header_read: Duration,
    /// Longest a connection may stay open with no request in flight after its last one.
    pub idle: Duration,
    /// Longest time to produce a response's headers, and longest pause between body frames.
    pub request: Duration,
    /// Requests handled at once; more wait their turn.
    pub concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            request: Duration::from_secs(120),
            concurrency: 1024,
        }
    }
}

/// Connections open across every listener of the process (they share its descriptors).
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// Serves `router` on `listener` until `shutdown` completes, then waits for open connections.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let router = router
        .layer(ResponseBodyTimeoutLayer::new(limits.request))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            limits.request,
        ))
        .layer(GlobalConcurrencyLimitLayer::new(limits.concurrency));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.header_read)
        .keep_alive_timeout(limits.header_read)
        .max_concurrent_streams(128);
    let registry = Arc::new(Registry::default());
    let budget = connection_budget();
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (EMFILE) and the like: make room, then wait a moment
                    // rather than spin on a listener that stays readable.
                    tracing::warn!(error = %e, "accept failed");
                    registry.evict_oldest_idle();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        if OPEN.load(Ordering::Relaxed) >= budget && !registry.evict_oldest_idle() {
            // Every connection is busy: refuse this one rather than take the descriptors the
            // database and the files need.
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let conn = registry.open();
        let service = TowerToHyperService::new(tracked(router.clone(), conn.clone(), Peer(peer)));
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        let registry = registry.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = connection => {}
                _ = conn.idle_out(limits) => {}
            }
            registry.close(conn.id);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// How many connections the process may hold: its descriptor limit less a reserve for the
/// database pool, files, logs and the runtime. The soft limit is raised to the hard one first.
fn connection_budget() -> usize {
    let limit = raise_descriptor_limit().unwrap_or(1024);
    let reserve = (limit / 4).max(64);
    limit.saturating_sub(reserve).max(16)
}

#[cfg(unix)]
fn raise_descriptor_limit() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read or write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    usize::try_from(limit.rlim_cur).ok()
}

#[cfg(not(unix))]
fn raise_descriptor_limit() -> Option<usize> {
    None
}

/// The open connections of one listener, oldest first.
#[derive(Default)]
struct Registry {
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<Conn>>>,
}

impl Registry {
    fn open(&self) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            opened: Instant::now(),
            in_flight: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            last_done: Mutex::new(Instant::now()),
            evict: Notify::new(),
        });
        OPEN.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(conn.id, conn.clone());
        conn
    }

    fn close(&self, id: u64) {
        if self.lock().remove(&id).is_some() {
            OPEN.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Asks the oldest connection without a request in flight to close, those that never
    /// started one first; false when every connection is busy.
    fn evict_oldest_idle(&self) -> bool {
        let open = self.lock();
        let victim = open
            .values()
            .find(|c| !c.started.load(Ordering::Relaxed))
            .or_else(|| open.values().find(|c| c.is_idle()));
        match victim {
            Some(conn) => {
                conn.evict.notify_one();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        crate::sync::lock(&self.open)
    }
}

/// What the accept loop knows of one connection.
struct Conn {
    id: u64,
    opened: Instant,
    in_flight: AtomicUsize,
    /// Whether any request ever reached the service.
    started: AtomicBool,
    /// When its last request ended.
    last_done: Mutex<Instant>,
    evict: Notify,
}

impl Conn {
    fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// When the connection must close if nothing happens: the header timeout from the accept
    /// until its first request, then the idle limit after each; none while one is in flight.
    fn deadline(&self, limits: Limits) -> Option<Instant> {
        if !self.is_idle() {
            return None;
        }
        if !self.started.load(Ordering::Acquire) {
            return Some(self.opened + limits.header_read);
        }
        let last = *crate::sync::lock(&self.last_done);
        Some(last + limits.idle)
    }

    /// Completes when the connection should be closed for idling (or to make room).
    async fn idle_out(&self, limits: Limits) {
        loop {
            let wake = self
                .deadline(limits)
                .unwrap_or_else(|| Instant::now() + limits.header_read);
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => {
                    if self.deadline(limits).is_some_and(|d| d <= Instant::now()) {
                        return;
                    }
                }
                _ = self.evict.notified() => {
                    if self.is_idle() {
                        return;
                    }
                }
            }
        }
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.started.store(true, Ordering::Release);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }
}

/// A request in flight on its connection, until its response body is done or dropped.
struct InFlight(Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        *crate::sync::lock(&self.0.last_done) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `router` for one connection: each request counts as in flight until its body ends, and
/// carries the connection's [`Peer`] in its extensions.
fn tracked(
    router: Router,
    conn: Arc<Conn>,
    peer: Peer,
) -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<Response<Body>, std::convert::Infallible>> + Send,
> + Clone {
    tower::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(peer);
        let in_flight = conn.begin();
        let answer = router.clone().oneshot(request);
        async move {
            let response = answer.await?;
            Ok(response.map(|body| Body::new(Tracked { body, in_flight })))
        }
    })
}

/// A response body that holds its request's [`InFlight`] until it ends.
struct Tracked {
    body: Body,
    in_flight: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let _ = &self.in_flight;
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
