//! The service run in the test's process: started on a random port over the test's database,
//! swept on demand, its metrics, and its status page.

use std::net::SocketAddr;
use std::sync::Arc;

use sitemapd::app::Service;
use sitemapd::config::{Config, Defaults, Vars};
use sitemapd::site::Readiness;
use sitemapd::state::App;
use sitemapd::store::{Change, StoreError};
use sitemapd::sweep::{SweepError, Sweeper};

use super::xml::{assert_valid, gunzip, locs, Schema};

/// The real server, listening on a random port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    sweepers: Vec<Arc<Sweeper>>,
    pub client: reqwest::Client,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub const BASE: &str = "https://www.example.com/";

/// Starts a server on `database_url` with the given variables (SITEMAP_BASE_URL defaults to BASE).
pub async fn spawn_app(database_url: &str, vars: &[(&str, &str)]) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn_app_on(listener, database_url, vars).await
}

/// [`spawn_app`] on a listener bound already, for a base URL that names its own address.
pub async fn spawn_app_on(
    listener: tokio::net::TcpListener,
    database_url: &str,
    vars: &[(&str, &str)],
) -> TestApp {
    let app = start_app(listener, database_url, vars).await;
    // Tests start from what the database holds, as a crawler would see a service that has been
    // up a while: its files checked against the source.
    for group in app.app.sites.iter().flat_map(|site| &site.groups) {
        group.reached(Readiness::Current).await;
    }
    app
}

/// The service as it is the moment it listens: its first sweep (or the verification of its
/// stored files) may still be under way.
pub async fn spawn_app_listening(database_url: &str, vars: &[(&str, &str)]) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    start_app(listener, database_url, vars).await
}

async fn start_app(
    listener: tokio::net::TcpListener,
    database_url: &str,
    vars: &[(&str, &str)],
) -> TestApp {
    let mut pairs: Vec<(&str, &str)> = vec![
        ("SITEMAP_BASE_URL", BASE),
        ("DATABASE_URL", database_url),
        ("SITEMAP_REFRESH_SECS", "3600"),
    ];
    // Verifying crawlers fetches their operators' IP-range lists from the internet: a test that
    // is not about crawlers keeps it off, so it neither depends on the network nor waits, as its
    // runtime ends, for a lookup of those hosts that gets no answer (5 s where no DNS answers).
    let about_crawlers = vars
        .iter()
        .any(|(name, _)| matches!(*name, "CRAWLER_VERIFY" | "CRAWLERS_FILE"));
    if !about_crawlers {
        pairs.push(("CRAWLER_VERIFY", "off"));
    }
    pairs.extend_from_slice(vars);
    let config =
        Config::from_vars(&Vars::from_pairs(pairs), &Defaults::default()).expect("test config");
    let service = Service::start(&config).await.expect("start the service");
    let (app, sweepers) = (service.app.clone(), service.sweepers.clone());
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(service.serve(listener, std::future::pending()));
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    TestApp {
        addr,
        app,
        sweepers,
        client,
        server,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.expect("GET")
    }

    /// Re-measures everything of every group now, as the background sweep would after a change.
    /// A sweep that found no free connection (the background sweeps hold a small pool on a
    /// loaded machine) is tried again, a few times.
    pub async fn sweep(&self) {
        for sweeper in &self.sweepers {
            let mut tries = 0;
            loop {
                match sweeper.sweep(Change::Everything).await {
                    Ok(_) => break,
                    Err(SweepError::Store(StoreError::Database(sqlx::Error::PoolTimedOut)))
                        if tries < 5 =>
                    {
                        tries += 1
                    }
                    Err(e) => panic!("sweep: {e:?}"),
                }
            }
        }
    }

    /// Page numbers the index lists, in order.
    pub async fn index_pages(&self) -> Vec<String> {
        let body = self.get("/sitemap_index.xml").await.text().await.unwrap();
        locs(body.as_bytes())
            .into_iter()
            .map(|l| {
                l.strip_prefix(BASE)
                    .expect("index loc under base")
                    .to_string()
            })
            .collect()
    }

    /// Every loc of every page, in order, checking each page against the schema on the way.
    pub async fn all_locs(&self) -> Vec<String> {
        let mut all = Vec::new();
        for file in self.index_pages().await {
            let gz = self.get(&format!("/{file}")).await.bytes().await.unwrap();
            let xml = gunzip(&gz);
            assert_valid(&xml, Schema::Urlset);
            all.extend(locs(&xml));
        }
        all
    }

    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").await.text().await.unwrap();
        text.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

/// The metric of the rows of the single-site default group ([`BASE`]) left out for `reason`.
pub fn skipped_metric(reason: &str) -> String {
    format!("sitemapd_entries_skipped{{reason=\"{reason}\",site=\"{BASE}\",group=\"\"}}")
}

/// The status page's router over `app`, on a port of its own, as `serve` runs it on
/// ADMIN_BIND_ADDR.
pub async fn status_page(app: &TestApp) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = sitemapd::admin::router(app.app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}
