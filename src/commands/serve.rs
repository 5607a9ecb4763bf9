//! `sitemapd serve` (and `demo`, after its preparations): the whole service, its public
//! listener and, on `ADMIN_BIND_ADDR`, the status page, until SIGTERM or SIGINT.

use crate::app::{self, StartError};
use crate::config::Config;

/// Starts the service and serves until a shutdown signal; exit 0 once it has stopped.
pub async fn serve(config: &Config) -> Result<i32, StartError> {
    let service = app::Service::start(config).await?;
    let listener = tokio::net::TcpListener::bind(config.bind_addr)
        .await
        .map_err(|cause| StartError::Bind {
            addr: config.bind_addr.to_string(),
            cause,
        })?;
    tracing::info!(addr = %config.bind_addr, base = %config.first_site().base_url.as_str(), sites = config.sites.len(), database = %config.database_url, "listening");
    if let Some(addr) = config.admin_addr {
        serve_status_page(addr, config.admin_token.clone(), &service).await?;
    }
    service.serve(listener, shutdown_signal()).await;
    Ok(0)
}

/// The status page on its own listener (never the public one), for as long as the process.
async fn serve_status_page(
    addr: std::net::SocketAddr,
    token: Option<crate::config::AdminToken>,
    service: &app::Service,
) -> Result<(), StartError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|cause| StartError::Bind {
            addr: addr.to_string(),
            cause,
        })?;
    let access = crate::admin::access::Access { bind: addr, token };
    // Behind the Host or token check, with the public side's connection limits (header
    // timeout, idle limits).
    let router = crate::admin::access::guard(crate::admin::router(service.app.clone()), access);
    tokio::spawn(async move {
        let limits = crate::http::server::Limits::default();
        if let Err(e) =
            crate::http::server::serve(listener, router, limits, std::future::pending()).await
        {
            tracing::error!(error = %e, "the status page stopped");
        }
    });
    tracing::info!(addr = %addr, "status page listening");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
