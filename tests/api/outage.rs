//! The database going away: before a request, in the middle of a streamed body, or killed from
//! the database side, on PostgreSQL and MariaDB. A TCP proxy written here sits between the
//! service and the database and can cut every connection, refuse new ones, restore, and
//! throttle what the database sends.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::time::{timeout, Instant};

use crate::helpers::*;

/// How long anything may take to answer at all (a liveness bound, not a timing assertion).
const ANSWER_WITHIN: Duration = Duration::from_secs(15);
/// How long a recovery may take to show, polled.
const RECOVER_WITHIN: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// The proxy
// ---------------------------------------------------------------------------------------------

struct ProxyState {
    upstream: SocketAddr,
    refusing: AtomicBool,
    /// Bytes per second from PostgreSQL to the service, per connection; 0: unlimited.
    rate: AtomicU64,
    /// Bumped to cut every connection open at that moment.
    cut: watch::Sender<u64>,
    /// Connections accepted and passed through, for the record.
    accepted: AtomicU64,
}

/// A TCP proxy to PostgreSQL on 127.0.0.1, port chosen by the system.
struct Proxy {
    addr: SocketAddr,
    state: Arc<ProxyState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        // Connections still open end with the cut signal.
        self.state.cut.send_modify(|g| *g += 1);
    }
}

impl Proxy {
    async fn start(database_url: &str) -> Self {
        let url = url::Url::parse(database_url).unwrap();
        let host = url.host_str().unwrap_or("127.0.0.1");
        let host = if host == "localhost" {
            "127.0.0.1"
        } else {
            host
        };
        let default_port = if url.scheme().starts_with("mysql") {
            3306
        } else {
            5432
        };
        let upstream: SocketAddr = format!("{host}:{}", url.port().unwrap_or(default_port))
            .parse()
            .expect("TEST_DATABASE_URL with an IP address host");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(ProxyState {
            upstream,
            refusing: AtomicBool::new(false),
            rate: AtomicU64::new(0),
            cut: watch::channel(0).0,
            accepted: AtomicU64::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, state.clone()));
        Self { addr, state, task }
    }

    /// `database_url` with the proxy as host and port (same database, user and options).
    fn url(&self, database_url: &str) -> String {
        let mut url = url::Url::parse(database_url).unwrap();
        url.set_host(Some(&self.addr.ip().to_string())).unwrap();
        url.set_port(Some(self.addr.port())).unwrap();
        url.to_string()
    }

    /// Drops every connection open now, both sides.
    fn cut(&self) {
        self.state.cut.send_modify(|g| *g += 1);
    }

    /// New connections are closed as soon as they are accepted.
    fn refuse(&self) {
        self.state.refusing.store(true, Ordering::SeqCst);
    }

    /// The database is unreachable: nothing open, nothing new.
    fn outage(&self) {
        self.refuse();
        self.cut();
    }

    fn restore(&self) {
        self.state.refusing.store(false, Ordering::SeqCst);
    }

    /// Limits what the database sends to the service, per connection; `None` lifts the limit.
    fn throttle(&self, bytes_per_sec: Option<u64>) {
        self.state
            .rate
            .store(bytes_per_sec.unwrap_or(0), Ordering::SeqCst);
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<ProxyState>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if state.refusing.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        state.accepted.fetch_add(1, Ordering::Relaxed);
        // Subscribed before the task starts: a cut from now on reaches this connection.
        let cut = state.cut.subscribe();
        tokio::spawn(pass_through(client, state.clone(), cut));
    }
}

async fn pass_through(client: TcpStream, state: Arc<ProxyState>, mut cut: watch::Receiver<u64>) {
    let socket = TcpSocket::new_v4().unwrap();
    // A small, fixed receive buffer: throttling must hold PostgreSQL back, not let the kernel
    // swallow the whole result set ahead of the service.
    let _ = socket.set_recv_buffer_size(64 * 1024);
    let upstream = tokio::select! {
        connected = socket.connect(state.upstream) => match connected {
            Ok(s) => s,
            Err(_) => return,
        },
        _ = cut.changed() => return,
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let to_db = copy(client_read, upstream_write, None);
    let from_db = copy(upstream_read, client_write, Some(state.clone()));
    tokio::select! {
        _ = async { tokio::join!(to_db, from_db) } => {}
        _ = cut.changed() => {}
    }
    // Dropping both halves of both sockets closes them.
}

/// Copies until EOF or an error, then shuts the write side; throttled when `rate` says so.
async fn copy(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    rate: Option<Arc<ProxyState>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let limit = rate.as_ref().map_or(0, |s| s.rate.load(Ordering::SeqCst));
        let want = if limit == 0 {
            buf.len()
        } else {
            buf.len().min((limit / 16).max(512) as usize)
        };
        let n = match from.read(&mut buf[..want]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
        if limit > 0 {
            tokio::time::sleep(Duration::from_secs_f64(n as f64 / limit as f64)).await;
        }
    }
    let _ = to.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Helpers of these tests
// ---------------------------------------------------------------------------------------------

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    timeout(ANSWER_WITHIN, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {ANSWER_WITHIN:?}"))
}

/// Polls `path` until it answers 200, within RECOVER_WITHIN; returns the body.
async fn until_ok(app: &TestApp, path: &str) -> bytes::Bytes {
    let deadline = Instant::now() + RECOVER_WITHIN;
    let mut last = String::new();
    while Instant::now() < deadline {
        match timeout(ANSWER_WITHIN, app.client.get(app.url(path)).send()).await {
            Ok(Ok(resp)) if resp.status() == 200 => {
                if let Ok(Ok(body)) = timeout(RECOVER_WITHIN, resp.bytes()).await {
                    return body;
                }
                last = "body cut".into();
            }
            Ok(Ok(resp)) => last = format!("status {}", resp.status()),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "no answer".into(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{path} did not recover within {RECOVER_WITHIN:?}; last: {last}");
}

/// Reads the rest of a body that must end with an error; returns what arrived.
async fn rest_must_fail(
    app: &TestApp,
    mut resp: reqwest::Response,
    mut got: Vec<u8>,
    what: &str,
) -> Vec<u8> {
    let outcome = timeout(Duration::from_secs(60), async {
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => got.extend_from_slice(&chunk),
                Ok(None) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    })
    .await;
    let Ok(outcome) = outcome else {
        // What the service says of its renders, for whoever reads a failure.
        let metrics = app.get("/metrics").await.text().await.unwrap();
        let told = [
            "sitemapd_renders_total",
            "sitemapd_database_errors_total",
            "sitemapd_render_seconds_sum",
            "sitemapd_http_requests_total",
        ];
        let renders: Vec<&str> = metrics
            .lines()
            .filter(|line| told.iter().any(|name| line.starts_with(name)))
            .collect();
        panic!(
            "{what}: the body neither ended nor failed after {} bytes; the service says:\n{}",
            got.len(),
            renders.join("\n")
        );
    };
    assert!(
        outcome.is_err(),
        "{what}: the body ended cleanly after {} bytes although the database went away mid-stream",
        got.len()
    );
    got
}

fn is_complete_gzip(bytes: &[u8]) -> bool {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .is_ok()
}

/// A site whose page 1 is one big file: 20,000 URLs of about 500 characters (about 10 MB of
/// XML), little of it compressible, so a throttled render takes tens of seconds.
async fn big_site(backend: Backend) -> (TestDb, Proxy, TestApp) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let proxy = Proxy::start(&db.url).await;
    let app = spawn_app(
        &proxy.url(&db.url),
        &[
            ("SITEMAP_PAGE_SIZE", "50000"),
            ("DATABASE_MAX_CONNECTIONS", "4"),
        ],
    )
    .await;
    let rows: Vec<Row> = (1..=20_000)
        .map(|g| Row::new(g, &format!("/p/{g}/{}", noise(g as u64, 480))))
        .collect();
    db.insert_rows(&rows).await;
    app.sweep().await;
    assert_eq!(app.index_pages().await, vec!["sitemap-1.xml.gz"]);
    (db, proxy, app)
}

const THROTTLE: u64 = 256 * 1024;

/// `len` hex digits that depend on `seed` and hardly compress (xorshift).
fn noise(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from_digit((x % 16) as u32, 16).unwrap()
        })
        .collect()
}

crate::on_each_server!(
    multi_thread: while_the_database_is_down_cached_pages_still_serve_and_others_get_503,
    a_database_cut_mid_stream_never_looks_like_a_complete_file,
    a_backend_killed_mid_stream_aborts_the_body_and_the_service_keeps_serving,
    a_change_whose_sweep_fails_shows_once_the_database_answers_again,
);

/// Kills the service's connections that are running a statement (the render), as an operator
/// or the database's own watchdog might; returns how many.
async fn kill_the_services_busy_connections(db: &TestDb) -> usize {
    match db.backend {
        Backend::Postgres => {
            let killed: Vec<bool> = sqlx::query_scalar(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND application_name = 'sitemapd' \
                   AND pid <> pg_backend_pid()",
            )
            .fetch_all(db.pg())
            .await
            .unwrap();
            killed.into_iter().filter(|k| *k).count()
        }
        _ => {
            let busy = db
                .strings(
                    "SELECT CAST(ID AS CHAR) FROM information_schema.PROCESSLIST \
                     WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND IN ('Query', 'Execute')",
                )
                .await;
            for id in &busy {
                db.exec(&format!("KILL CONNECTION {id}")).await;
            }
            busy.len()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

async fn while_the_database_is_down_cached_pages_still_serve_and_others_get_503(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    let proxy = Proxy::start(&db.url).await;
    let app = spawn_app(
        &proxy.url(&db.url),
        &[
            ("SITEMAP_PAGE_SIZE", "10"),
            ("DATABASE_MAX_CONNECTIONS", "3"),
        ],
    )
    .await;
    let rows: Vec<(i64, String)> = (1..=30).map(|i| (i, format!("/p/{i}"))).collect();
    let refs: Vec<(i64, &str)> = rows.iter().map(|(i, l)| (*i, l.as_str())).collect();
    db.insert(&refs).await;
    app.sweep().await;
    assert_eq!(app.index_pages().await.len(), 3);

    // Asked for twice, the page is in the cache proper (not only on probation).
    app.get("/sitemap-1.xml.gz").await.bytes().await.unwrap();
    let warm = app.get("/sitemap-1.xml.gz").await;
    assert_eq!(warm.status(), 200);
    let warm_etag = header(&warm, "etag").to_string();
    let warm = warm.bytes().await.unwrap();
    let index = app.get("/sitemap_index.xml").await.bytes().await.unwrap();
    assert!(
        proxy.state.accepted.load(Ordering::Relaxed) > 0,
        "traffic goes through the proxy"
    );

    proxy.outage();

    let stale = within("cached page", app.get("/sitemap-1.xml.gz")).await;
    assert_eq!(stale.status(), 200, "a cached page survives the outage");
    assert_eq!(header(&stale, "etag"), warm_etag);
    assert_eq!(stale.bytes().await.unwrap(), warm, "same bytes as before");
    let identity = within("cached page, identity", app.get("/sitemap-1.xml")).await;
    assert_eq!(identity.status(), 200);
    assert_eq!(identity.bytes().await.unwrap().to_vec(), gunzip(&warm));
    let index_now = within("index", app.get("/sitemap_index.xml")).await;
    assert_eq!(index_now.status(), 200);
    assert_eq!(index_now.bytes().await.unwrap(), index);

    let cold = within("uncached page", app.get("/sitemap-2.xml.gz")).await;
    assert_eq!(cold.status(), 503, "a page never rendered cannot be served");
    let retry_after = header(&cold, "retry-after").to_string();
    assert!(
        retry_after.parse::<u64>().is_ok_and(|s| s > 0),
        "Retry-After in seconds, got {retry_after:?}"
    );
    assert_eq!(header(&cold, "cache-control"), "no-store");

    let ready = within("readyz", app.get("/readyz")).await;
    assert_eq!(ready.status(), 503);
    let health = within("healthz", app.get("/healthz")).await;
    assert_eq!(health.status(), 200);

    proxy.restore();
    let body = until_ok(&app, "/sitemap-2.xml.gz").await;
    let xml = gunzip(&body);
    assert_valid(&xml, Schema::Urlset);
    assert_eq!(
        locs(&xml),
        (11..=20)
            .map(|i| format!("{BASE}p/{i}"))
            .collect::<Vec<_>>()
    );
    until_ok(&app, "/readyz").await;
}

async fn a_database_cut_mid_stream_never_looks_like_a_complete_file(backend: Backend) {
    let (_db, proxy, app) = big_site(backend).await;
    proxy.throttle(Some(THROTTLE));

    // The gzip file itself.
    let resp = within("gzip page", app.get("/sitemap-1.xml.gz")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "application/gzip");
    let mut resp = resp;
    let first = within("first chunk", resp.chunk())
        .await
        .expect("first chunk")
        .expect("a first chunk");
    proxy.outage();
    let got = rest_must_fail(&app, resp, first.to_vec(), "gzip page").await;
    assert!(
        !is_complete_gzip(&got),
        "the {} bytes received decode as a complete gzip file",
        got.len()
    );

    // The same page as XML decompressed on the fly (no Accept-Encoding).
    proxy.restore();
    let resp = within("identity page", app.get("/sitemap-1.xml")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-encoding"), "");
    let mut resp = resp;
    let first = within("first chunk", resp.chunk())
        .await
        .expect("first chunk")
        .expect("a first chunk");
    proxy.outage();
    let got = rest_must_fail(&app, resp, first.to_vec(), "identity page").await;
    assert!(got.starts_with(b"<?xml"), "the body is the XML");
    assert!(
        !got.ends_with(b"</urlset>\n"),
        "a cut body must not end like a complete document ({} bytes)",
        got.len()
    );

    // Once the database is back, the page is served whole.
    proxy.throttle(None);
    proxy.restore();
    let body = until_ok(&app, "/sitemap-1.xml.gz").await;
    let xml = gunzip(&body);
    assert!(xml.ends_with(b"</urlset>\n"));
    assert_eq!(xml.windows(5).filter(|w| w == b"<url>").count(), 20_000);
}

async fn a_backend_killed_mid_stream_aborts_the_body_and_the_service_keeps_serving(
    backend: Backend,
) {
    let (db, proxy, app) = big_site(backend).await;
    proxy.throttle(Some(THROTTLE));

    let resp = within("gzip page", app.get("/sitemap-1.xml.gz")).await;
    assert_eq!(resp.status(), 200);
    let mut resp = resp;
    let first = within("first chunk", resp.chunk())
        .await
        .expect("first chunk")
        .expect("a first chunk");
    let killed = kill_the_services_busy_connections(&db).await;
    assert!(killed > 0, "the render's connection is found and killed");
    // What the database had already handed to the socket drains quickly now; then the cut shows.
    proxy.throttle(None);
    let got = rest_must_fail(&app, resp, first.to_vec(), "killed backend").await;
    assert!(
        !is_complete_gzip(&got),
        "a killed render must not give a complete gzip file"
    );

    let body = until_ok(&app, "/sitemap-1.xml.gz").await;
    let xml = gunzip(&body);
    assert!(xml.ends_with(b"</urlset>\n"));
    assert_eq!(xml.windows(5).filter(|w| w == b"<url>").count(), 20_000);
    assert_eq!(within("readyz", app.get("/readyz")).await.status(), 200);
    assert_eq!(within("healthz", app.get("/healthz")).await.status(), 200);
}

async fn a_change_whose_sweep_fails_shows_once_the_database_answers_again(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert_rows(&[Row::new(1, "/before")]).await;
    let app = spawn_app(
        &db.url,
        &[
            ("DATABASE_STATEMENT_TIMEOUT_SECS", "1"),
            ("SITEMAP_PAGE_SIZE", "1"),
        ],
    )
    .await;
    assert_eq!(app.index_pages().await, ["sitemap-1.xml.gz"]);

    // The sweep the next change sets going reads the rows, then times out storing the new
    // validators: the state table is locked. (The statement timeout ends a wait for a table lock
    // on PostgreSQL and MariaDB; MySQL 8's max_execution_time bounds only SELECTs.)
    let held = db
        .hold_table("sitemapd_pages")
        .await
        .expect("a server database");
    db.insert_rows(&[Row::new(2, "/during")]).await;
    within("a failed sweep", async {
        while app.metric("sitemapd_sweep_failures_total").await < 1.0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    held.release().await;

    // No further change comes, and no page is asked for (a render that meets rows its
    // validators do not describe would set a sweep going): the failed sweep runs again by itself
    // and the index lists the new file.
    let pages = {
        let app = &app;
        eventually(
            "the index to list the new file",
            move || async move { app.index_pages().await },
            |pages| pages.len() == 2,
        )
        .await
    };
    assert_eq!(
        pages,
        ["sitemap-1.xml.gz", "sitemap-2.xml.gz"],
        "the change shows once the database answers again"
    );
    assert_eq!(
        app.all_locs().await,
        [format!("{BASE}before"), format!("{BASE}during")]
    );
}
