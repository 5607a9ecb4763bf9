//! The accept loop: HTTP/1.1 connections with bounded header reads (a slowloris client is cut
//! off), per-request and per-body-frame timeouts, a cap on concurrent requests, and graceful
//! shutdown that lets downloads in flight finish.

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower_http::timeout::{ResponseBodyTimeoutLayer, TimeoutLayer};

/// Limits that keep one client from holding the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest wait for a request's headers.
    pub header_read: Duration,
    /// Longest time to produce a response's headers, and longest pause between body frames.
    pub request: Duration,
    /// Requests handled at once; more wait their turn.
    pub concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read: Duration::from_secs(10),
            request: Duration::from_secs(120),
            concurrency: 1024,
        }
    }
}

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
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
