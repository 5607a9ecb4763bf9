//! Change notification against a real HTTP receiver on 127.0.0.1: the JSON IndexNow gets,
//! batching, retries, coalescing, dedupe, the drain at shutdown, and the ping URL.
//!
//! The receiver records every request and answers from a script (then 200). Tests wait for
//! the n-th request to arrive, never for time to pass; the interval is 1 s so they stay short.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use sitemapd::config::{Config, Defaults, Vars};
use sitemapd::metrics::Metrics;
use sitemapd::notify::Notifier;
use tokio::sync::watch;

/// Longest a test waits for a request before failing (a hang guard, not a measurement).
const PATIENCE: Duration = Duration::from_secs(90);

#[derive(Debug, Clone)]
struct Recorded {
    method: Method,
    /// Path and query, as sent.
    target: String,
    content_type: String,
    user_agent: String,
    body: Bytes,
}

impl Recorded {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    fn url_list(&self) -> Vec<String> {
        self.json()["urlList"]
            .as_array()
            .expect("urlList is an array")
            .iter()
            .map(|u| u.as_str().expect("URLs are strings").to_string())
            .collect()
    }
}

/// A canned answer: status, Retry-After, body.
type Answer = (u16, Option<&'static str>, &'static str);

#[derive(Clone)]
struct Receiver {
    requests: Arc<Mutex<Vec<Recorded>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    count: Arc<watch::Sender<usize>>,
    addr: std::net::SocketAddr,
}

impl Receiver {
    /// Starts a receiver that answers `script` in order, then 200 to everything.
    async fn start(script: &[Answer]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Self {
            requests: Arc::default(),
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
            count: Arc::new(watch::channel(0).0),
            addr: listener.local_addr().unwrap(),
        };
        let app = axum::Router::new()
            .fallback(record)
            .with_state(receiver.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        receiver
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Waits until at least `n` requests have arrived; returns all of them.
    async fn wait_for(&self, n: usize) -> Vec<Recorded> {
        let mut seen = self.count.subscribe();
        tokio::time::timeout(PATIENCE, seen.wait_for(|count| *count >= n))
            .await
            .unwrap_or_else(|_| panic!("request {n} never came: {:#?}", self.all()))
            .expect("receiver alive");
        self.all()
    }

    fn all(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn record(
    State(receiver): State<Receiver>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let request = Recorded {
        method,
        target: uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        content_type: header("content-type"),
        user_agent: header("user-agent"),
        body,
    };
    let answer = receiver.script.lock().unwrap().pop_front();
    receiver.requests.lock().unwrap().push(request);
    receiver.count.send_modify(|count| *count += 1);
    let (status, retry_after, body) = answer.unwrap_or((200, None, ""));
    let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", seconds.parse().unwrap());
    }
    response
}

const BASE: &str = "https://www.example.com/";
const KEY: &str = "5f2b9c7e-test-key";

/// The variables that turn IndexNow on with `key`, sending to `endpoint` every second.
fn indexnow_vars<'a>(key: &'a str, endpoint: &'a str) -> [(&'static str, &'a str); 3] {
    [
        ("INDEXNOW_KEY", key),
        ("INDEXNOW_ENDPOINT", endpoint),
        ("INDEXNOW_INTERVAL_SECS", "1"),
    ]
}

/// The service's configuration with IndexNow pointed at `receiver`, plus `extra` variables.
fn config(receiver: &Receiver, extra: &[(&str, &str)]) -> Config {
    let endpoint = receiver.url("/indexnow");
    let mut pairs = vec![("SITEMAP_BASE_URL", BASE)];
    pairs.extend(indexnow_vars(KEY, &endpoint));
    pairs.extend_from_slice(extra);
    Config::from_vars(&Vars::from_pairs(pairs), &Defaults::default()).expect("test config")
}

struct Service {
    config: Config,
    notifier: Notifier,
    metrics: Metrics,
}

impl Service {
    fn start(config: Config) -> Self {
        let metrics = Metrics::new();
        let notifier =
            Notifier::start(&config.notify, metrics.notify.clone()).expect("notifier starts");
        Self {
            config,
            notifier,
            metrics,
        }
    }

    fn submit(&self, urls: &[&str]) {
        let hosts = self
            .notifier
            .host_set(&self.config.first_site().base_url)
            .expect("IndexNow is on");
        self.notifier
            .submit(&hosts, urls.iter().map(|u| u.to_string()))
            .expect("notifier running");
    }

    async fn shutdown(&self) {
        self.notifier.shutdown(Duration::from_secs(30)).await;
    }

    /// Waits until a counter reaches `value`: the task has dealt with a response.
    async fn settled(&self, line_start: &str, value: f64) {
        let reached = async {
            while self.metric(line_start) < value {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(PATIENCE, reached)
            .await
            .unwrap_or_else(|_| panic!("{line_start} never reached {value}"));
    }

    /// A counter's value in the service's Prometheus text.
    fn metric(&self, line_start: &str) -> f64 {
        self.metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with(line_start))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

fn page(n: usize) -> String {
    format!("{BASE}page/{n}")
}

#[tokio::test]
async fn indexnow_gets_host_key_key_location_and_url_list_as_json() {
    let receiver = Receiver::start(&[(202, None, "")]).await;
    let service = Service::start(config(&receiver, &[]));
    service.submit(&[
        "https://www.example.com/fr/article.php?AIndex=12&x=%C3%A9",
        "https://www.example.com/",
    ]);
    let requests = receiver.wait_for(1).await;
    service.shutdown().await;

    let request = &requests[0];
    assert_eq!(request.method, Method::POST);
    assert_eq!(request.target, "/indexnow");
    assert_eq!(request.content_type, "application/json; charset=utf-8");
    assert_eq!(
        request.user_agent,
        format!("sitemapd/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        request.json(),
        serde_json::json!({
            "host": "www.example.com",
            "key": KEY,
            "keyLocation": format!("{BASE}{KEY}.txt"),
            "urlList": [
                "https://www.example.com/fr/article.php?AIndex=12&x=%C3%A9",
                "https://www.example.com/",
            ],
        })
    );
    assert_eq!(receiver.all().len(), 1);
    assert_eq!(
        service.metric("sitemapd_indexnow_submitted_urls_total"),
        2.0
    );
}

#[tokio::test]
async fn the_key_location_follows_the_mount_path_of_the_base() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(
        &receiver,
        &[("SITEMAP_BASE_URL", "https://example.com/catalog")],
    ));
    let key = service.notifier.indexnow_key().expect("IndexNow is on");
    assert_eq!(key.file_name(), format!("{KEY}.txt"));
    service.submit(&["https://example.com/catalog/item-1"]);
    let requests = receiver.wait_for(1).await;
    assert_eq!(requests[0].json()["host"], "example.com");
    assert_eq!(
        requests[0].json()["keyLocation"],
        format!("https://example.com/catalog/{KEY}.txt")
    );
}

#[tokio::test]
async fn twenty_five_thousand_urls_go_in_three_posts_of_at_most_ten_thousand() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(&receiver, &[]));
    let urls: Vec<String> = (0..25_000).map(page).collect();
    let hosts = service
        .notifier
        .host_set(&service.config.first_site().base_url)
        .unwrap();
    service.notifier.submit(&hosts, urls.clone()).unwrap();

    let requests = receiver.wait_for(3).await;
    service.shutdown().await;

    let lists: Vec<Vec<String>> = receiver.all().iter().map(Recorded::url_list).collect();
    let sizes: Vec<usize> = lists.iter().map(Vec::len).collect();
    assert_eq!(sizes, [10_000, 10_000, 5_000]);
    assert_eq!(lists.concat(), urls, "every URL once, in submission order");
    assert!(requests
        .iter()
        .all(|r| r.json()["host"] == "www.example.com"));
    assert_eq!(
        service.metric("sitemapd_indexnow_submitted_urls_total"),
        25_000.0
    );
}

#[tokio::test]
async fn a_503_is_retried_until_the_endpoint_accepts() {
    let receiver = Receiver::start(&[(503, None, "busy"), (500, None, "oops")]).await;
    let service = Service::start(config(&receiver, &[]));
    service.submit(&[&page(1), &page(2)]);
    let requests = receiver.wait_for(3).await;
    service.shutdown().await;

    assert_eq!(receiver.all().len(), 3);
    for request in &requests {
        assert_eq!(request.url_list(), [page(1), page(2)]);
    }
    assert_eq!(
        service.metric("sitemapd_notify_failed_requests_total{target=\"indexnow\"}"),
        2.0
    );
    assert_eq!(
        service.metric("sitemapd_indexnow_submitted_urls_total"),
        2.0
    );
}

#[tokio::test]
async fn after_a_429_the_same_batch_is_sent_again_before_newer_urls() {
    let receiver = Receiver::start(&[(429, Some("1"), "slow down")]).await;
    let service = Service::start(config(&receiver, &[]));
    service.submit(&[&page(1)]);
    receiver.wait_for(1).await;
    // Arrives while the endpoint asked us to wait: it must not jump the queue or merge.
    service.submit(&[&page(2)]);
    let requests = receiver.wait_for(3).await;
    service.shutdown().await;

    let lists: Vec<Vec<String>> = requests.iter().map(Recorded::url_list).collect();
    assert_eq!(lists, [vec![page(1)], vec![page(1)], vec![page(2)]]);
}

#[tokio::test]
async fn a_422_is_dropped_not_retried() {
    let receiver = Receiver::start(&[(422, None, "URLs don't belong to the host\nmore")]).await;
    let service = Service::start(config(&receiver, &[]));
    service.submit(&[&page(1)]);
    receiver.wait_for(1).await;
    service.submit(&[&page(2)]);
    receiver.wait_for(2).await;
    service.shutdown().await;

    let lists: Vec<Vec<String>> = receiver.all().iter().map(Recorded::url_list).collect();
    assert_eq!(lists, [vec![page(1)], vec![page(2)]]);
    assert_eq!(service.metric("sitemapd_indexnow_dropped_urls_total"), 1.0);
    assert_eq!(
        service.metric("sitemapd_indexnow_submitted_urls_total"),
        1.0
    );
}

#[tokio::test]
async fn submits_within_the_interval_are_coalesced_into_one_request() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(&receiver, &[("INDEXNOW_INTERVAL_SECS", "2")]));
    service.submit(&[&page(1)]);
    receiver.wait_for(1).await;
    service
        .settled("sitemapd_indexnow_submitted_urls_total", 1.0)
        .await;
    // The task is idle now. Without pacing it would send page 2 alone during this pause; the
    // pause only gives that mistake room to show (any length passes with pacing in place).
    service.submit(&[&page(2)]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    service.submit(&[&page(3), &page(4)]);
    receiver.wait_for(2).await;
    service.shutdown().await;

    let lists: Vec<Vec<String>> = receiver.all().iter().map(Recorded::url_list).collect();
    assert_eq!(lists, [vec![page(1)], vec![page(2), page(3), page(4)]]);
}

#[tokio::test]
async fn a_url_submitted_twice_while_pending_is_sent_once() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(&receiver, &[]));
    service.submit(&[&page(1), &page(2), &page(1)]);
    service.submit(&[&page(2), &page(3)]);
    receiver.wait_for(1).await;
    service.shutdown().await;

    let lists: Vec<Vec<String>> = receiver.all().iter().map(Recorded::url_list).collect();
    assert_eq!(lists, [vec![page(1), page(2), page(3)]]);
}

#[tokio::test]
async fn urls_of_another_host_are_not_submitted() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(&receiver, &[]));
    service.submit(&["https://evil.example/x", &page(1), "not a url"]);
    receiver.wait_for(1).await;
    service.shutdown().await;

    assert_eq!(receiver.all()[0].url_list(), [page(1)]);
    assert_eq!(service.metric("sitemapd_indexnow_dropped_urls_total"), 2.0);
}

#[tokio::test]
async fn shutdown_sends_what_is_waiting_when_the_interval_allows_it_within_the_grace() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(&receiver, &[("INDEXNOW_INTERVAL_SECS", "1")]));
    service.submit(&[&page(1)]);
    receiver.wait_for(1).await;
    service.submit(&[&page(2)]);
    service.shutdown().await;

    let lists: Vec<Vec<String>> = receiver.all().iter().map(Recorded::url_list).collect();
    assert_eq!(lists, [vec![page(1)], vec![page(2)]]);
    assert!(
        service
            .notifier
            .submit(
                &service
                    .notifier
                    .host_set(&service.config.first_site().base_url)
                    .unwrap(),
                vec![page(3)]
            )
            .is_err(),
        "a stopped notifier says so"
    );
}

#[tokio::test]
async fn shutdown_never_sends_sooner_than_the_interval() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(config(&receiver, &[("INDEXNOW_INTERVAL_SECS", "3600")]));
    service.submit(&[&page(1)]);
    receiver.wait_for(1).await;
    // The next request is an hour away, past any shutdown grace: dropped and counted, not sent.
    service.submit(&[&page(2)]);
    service.shutdown().await;

    assert_eq!(receiver.all().len(), 1);
    assert_eq!(service.metric("sitemapd_indexnow_dropped_urls_total"), 1.0);
}

fn ping_config(receiver: &Receiver, base: &str) -> Config {
    let template = receiver.url("/hook?sitemap={sitemap}&site=1");
    let pairs = vec![
        ("SITEMAP_BASE_URL", base),
        ("SITEMAP_PING_URL", template.as_str()),
        ("INDEXNOW_INTERVAL_SECS", "1"),
    ];
    Config::from_vars(&Vars::from_pairs(pairs), &Defaults::default()).expect("test config")
}

#[tokio::test]
async fn a_ping_gets_the_template_with_the_index_url_percent_encoded() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(ping_config(&receiver, "https://www.example.com/café/"));
    let index_url = service.config.first_site().index_url();
    assert_eq!(
        index_url,
        "https://www.example.com/caf%C3%A9/sitemap_index.xml"
    );
    service.notifier.ping(&index_url).unwrap();
    let requests = receiver.wait_for(1).await;
    service.shutdown().await;

    let request = &requests[0];
    assert_eq!(request.method, Method::GET);
    assert_eq!(
        request.target,
        "/hook?sitemap=https%3A%2F%2Fwww.example.com%2Fcaf%25C3%25A9%2Fsitemap_index.xml&site=1"
    );
    let query = url::Url::parse(&receiver.url(&request.target)).unwrap();
    let sent: Vec<(String, String)> = query.query_pairs().into_owned().collect();
    assert_eq!(
        sent,
        [
            ("sitemap".to_string(), index_url.clone()),
            ("site".to_string(), "1".to_string())
        ]
    );
    assert_eq!(service.metric("sitemapd_pings_total"), 1.0);
}

#[tokio::test]
async fn a_burst_of_index_changes_gives_one_ping_per_interval() {
    let receiver = Receiver::start(&[]).await;
    let service = Service::start(ping_config(&receiver, BASE));
    let index_url = service.config.first_site().index_url();
    for _ in 0..5 {
        service.notifier.ping(&index_url).unwrap();
    }
    receiver.wait_for(1).await;
    for _ in 0..3 {
        service.notifier.ping(&index_url).unwrap();
    }
    receiver.wait_for(2).await;
    service.shutdown().await;

    assert_eq!(receiver.all().len(), 2);
    // Only the ping is configured here: no IndexNow host set to submit with.
    assert!(service
        .notifier
        .host_set(&service.config.first_site().base_url)
        .is_none());
}

#[tokio::test]
async fn a_failed_ping_is_retried() {
    let receiver = Receiver::start(&[(500, None, "down"), (503, Some("1"), "")]).await;
    let service = Service::start(ping_config(&receiver, BASE));
    service
        .notifier
        .ping(&service.config.first_site().index_url())
        .unwrap();
    let requests = receiver.wait_for(3).await;
    service.shutdown().await;

    assert_eq!(receiver.all().len(), 3);
    assert!(requests.iter().all(|r| r.target == requests[0].target));
    assert_eq!(
        service.metric("sitemapd_notify_failed_requests_total{target=\"ping\"}"),
        2.0
    );
    assert_eq!(service.metric("sitemapd_pings_total"), 1.0);
}

#[tokio::test]
async fn nothing_configured_means_nothing_sent_and_no_error() {
    let config = Config::from_vars(
        &Vars::from_pairs([("SITEMAP_BASE_URL", BASE)]),
        &Defaults::default(),
    )
    .unwrap();
    let service = Service::start(config);
    assert!(service.notifier.indexnow_key().is_none());
    service
        .notifier
        .ping(&service.config.first_site().index_url())
        .unwrap();
    service.shutdown().await;
}

// The service end to end: the key file, and changed entries submitted after their sweep.

const SERVICE_KEY: &str = "5f2b9c7e0a1d4e3b";

/// The service on `db_url` with IndexNow (key [`SERVICE_KEY`]) sending to `receiver`, plus
/// `extra` variables.
async fn indexnow_app(
    db_url: &str,
    receiver: &Receiver,
    extra: &[(&str, &str)],
) -> crate::helpers::TestApp {
    let endpoint = receiver.url("/indexnow");
    let mut vars = indexnow_vars(SERVICE_KEY, &endpoint).to_vec();
    vars.extend_from_slice(extra);
    crate::helpers::spawn_app(db_url, &vars).await
}

/// Rows of sitemap_entries with these `(id, loc)`, each last modified a day ago.
fn dated_yesterday<S: AsRef<str>>(
    rows: impl IntoIterator<Item = (i64, S)>,
) -> Vec<crate::helpers::Row> {
    let yesterday = chrono::Utc::now() - chrono::Duration::days(1);
    rows.into_iter()
        .map(|(id, loc)| crate::helpers::Row {
            lastmod: Some(yesterday),
            ..crate::helpers::Row::new(id, loc.as_ref())
        })
        .collect()
}

crate::on_each_database!(the_service_serves_its_key_and_submits_entries_changed_after_it_started);

async fn the_service_serves_its_key_and_submits_entries_changed_after_it_started(
    backend: crate::helpers::Backend,
) {
    use crate::helpers::*;
    let receiver = Receiver::start(&[]).await;
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert_rows(&dated_yesterday((1..=5).map(|i| (i, format!("/p/{i}")))))
        .await;
    let app = indexnow_app(&db.url, &receiver, &[]).await;
    let key_file = app.get(&format!("/{SERVICE_KEY}.txt")).await;
    assert_eq!(key_file.status(), 200);
    assert_eq!(
        header(&key_file, "content-type"),
        "text/plain; charset=utf-8"
    );
    assert_eq!(key_file.text().await.unwrap(), SERVICE_KEY);
    assert_eq!(app.get("/0000000000000000.txt").await.status(), 404);

    // What existed at start is not news; an entry modified now is.
    db.set_lastmod(3, chrono::Utc::now()).await;
    let sent = receiver.wait_for(1).await;
    assert_eq!(sent[0].url_list(), ["https://www.example.com/p/3"]);
    assert_eq!(
        sent[0].json()["keyLocation"],
        format!("{BASE}{SERVICE_KEY}.txt")
    );

    // A second replica on the same database does not submit it again; a new entry is sent once.
    let replica = indexnow_app(&db.url, &receiver, &[]).await;
    db.insert_rows(&[Row {
        lastmod: Some(chrono::Utc::now()),
        ..Row::new(6, "/p/6")
    }])
    .await;
    let sent = receiver.wait_for(2).await;
    assert_eq!(sent[1].url_list(), ["https://www.example.com/p/6"]);
    replica.sweep().await;
    app.sweep().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.all().len(), 2, "{:#?}", receiver.all());
}

/// Sweeps `app` until `receiver` has got at least `n` URLs; all it got, sorted.
async fn sorted_submissions(
    app: &crate::helpers::TestApp,
    receiver: &Receiver,
    n: usize,
) -> Vec<String> {
    let mut sent = crate::helpers::eventually(
        &format!("{n} URLs at the IndexNow endpoint"),
        || async {
            app.sweep().await;
            receiver
                .all()
                .iter()
                .flat_map(Recorded::url_list)
                .collect::<Vec<_>>()
        },
        |urls| urls.len() >= n,
    )
    .await;
    sent.sort();
    sent
}

crate::on_each_database!(deleted_entries_and_former_urls_are_submitted_too);

/// IndexNow takes removed URLs: a deleted entry's URL, and the former URL of an entry whose
/// loc changed, are submitted after their sweep (the engine then finds them gone).
async fn deleted_entries_and_former_urls_are_submitted_too(backend: crate::helpers::Backend) {
    use crate::helpers::*;
    let receiver = Receiver::start(&[]).await;
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b"), (3, "/c")]).await;
    let app = indexnow_app(&db.url, &receiver, &[]).await;
    db.exec("DELETE FROM sitemap_entries WHERE id = 2").await;
    db.exec("UPDATE sitemap_entries SET loc = '/c-renamed' WHERE id = 3")
        .await;
    let sent = sorted_submissions(&app, &receiver, 2).await;
    assert_eq!(sent, [format!("{BASE}b"), format!("{BASE}c")]);
    // Taken once: nothing is left to send again.
    let removed_left = db.scalar("SELECT COUNT(*) FROM sitemapd_removed").await;
    assert_eq!(removed_left, 0);
    // The status page's delivery figures: the last success, nothing waiting.
    let last_success = eventually(
        "the accepted request in the metrics",
        || app.metric("sitemapd_notify_last_success_seconds{target=\"indexnow\"}"),
        |t| *t > 0.0,
    )
    .await;
    assert!(last_success >= (chrono::Utc::now().timestamp() - 600) as f64);
    assert_eq!(
        app.metric("sitemapd_notify_pending{target=\"indexnow\"}")
            .await,
        0.0
    );
}

crate::on_each_database!(entries_robots_txt_leaves_out_after_its_rules_change_are_submitted);

/// A row no change touched can leave the sitemaps too: robots.txt's new rules disallow it.
/// After the restart that brings them, the entries they leave out are submitted; the next
/// restart under the same rules submits nothing of the kind.
async fn entries_robots_txt_leaves_out_after_its_rules_change_are_submitted(
    backend: crate::helpers::Backend,
) {
    use crate::helpers::*;
    let receiver = Receiver::start(&[]).await;
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert_rows(&dated_yesterday([
        (1, "/a"),
        (2, "/private/b"),
        (3, "/private/c"),
    ]))
    .await;
    let before = template_file("User-agent: *\nDisallow: /admin/\n");
    let after = template_file("User-agent: *\nDisallow: /admin/\nDisallow: /private/\n");
    let start = |template: &tempfile::NamedTempFile| {
        let robots = template.path().to_str().unwrap().to_string();
        let (db_url, receiver) = (&db.url, &receiver);
        async move { indexnow_app(db_url, receiver, &[("ROBOTS_TEMPLATE", &robots)]).await }
    };
    let app = start(&before).await;
    app.sweep().await;
    drop(app);

    let app = start(&after).await;
    let sent = receiver.wait_for(1).await;
    let mut urls = sent[0].url_list();
    urls.sort();
    assert_eq!(
        urls,
        [format!("{BASE}private/b"), format!("{BASE}private/c")]
    );
    assert!(!app
        .get("/sitemap.txt")
        .await
        .text()
        .await
        .unwrap()
        .contains("private"));
    drop(app);

    // The same rules again: only what changes is submitted.
    let app = start(&after).await;
    app.sweep().await;
    db.set_lastmod(1, chrono::Utc::now()).await;
    let sent = receiver.wait_for(2).await;
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[1].url_list(), [format!("{BASE}a")]);
}

crate::on_each_database!(a_view_row_that_left_or_is_now_skipped_is_submitted_with_the_url_it_had);

/// A view has no triggers to note a deleted row: while IndexNow is on, sitemapd keeps what each
/// file listed, and a row that leaves the view, is now skipped or has another loc, is submitted
/// with the URL it had. What the view listed when IndexNow started is not news.
async fn a_view_row_that_left_or_is_now_skipped_is_submitted_with_the_url_it_had(
    backend: crate::helpers::Backend,
) {
    use crate::helpers::*;
    let receiver = Receiver::start(&[]).await;
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.exec(
        "CREATE TABLE pages (id int PRIMARY KEY, loc text, visible int);
         INSERT INTO pages VALUES (1, '/a', 1), (2, '/b', 1), (3, '/c', 1), (4, '/d', 1),
           (5, '/e', 1), (6, '/f', 0);
         CREATE VIEW sitemap_pages AS SELECT id, loc, NULL AS lastmod, NULL AS changefreq,
           NULL AS priority FROM pages WHERE visible = 1;",
    )
    .await;
    let app = indexnow_app(
        &db.url,
        &receiver,
        &[
            ("SITEMAP_SOURCE", "sitemap_pages"),
            ("SITEMAP_PAGE_SIZE", "2"),
        ],
    )
    .await;
    app.sweep().await;
    // The first sweep serves the files first and notes what it listed in the background: the
    // URLs the rows had are known once the five are noted.
    eventually(
        "the five listed URLs noted",
        || db.scalar("SELECT COUNT(*) FROM sitemapd_listed"),
        |&noted| noted >= 5,
    )
    .await;
    db.exec(
        "UPDATE pages SET visible = 0 WHERE id = 2;
         UPDATE pages SET loc = 'https://elsewhere.example/c' WHERE id = 3;
         UPDATE pages SET loc = '/d-renamed' WHERE id = 4;
         UPDATE pages SET visible = 1 WHERE id = 6;",
    )
    .await;
    let sent = sorted_submissions(&app, &receiver, 3).await;
    assert_eq!(
        sent,
        [format!("{BASE}b"), format!("{BASE}c"), format!("{BASE}d")]
    );
    let listed = db
        .scalar("SELECT COUNT(*) FROM sitemapd_listed WHERE loc LIKE '%/f'")
        .await;
    assert_eq!(listed, 1, "the row that entered the view is noted");
}

crate::on_each_database!(every_site_on_one_table_submits_its_own_deleted_urls);

/// Two sites read one built-in table: a row of each deleted at once reaches IndexNow for both
/// (each site reads every removed URL and submits those under its own base URL), and what both
/// have read is cleared.
async fn every_site_on_one_table_submits_its_own_deleted_urls(backend: crate::helpers::Backend) {
    use crate::helpers::*;
    let receiver = Receiver::start(&[]).await;
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[
        (1, "https://a.example.com/one"),
        (2, "https://a.example.com/two"),
        (3, "https://b.example.org/one"),
        (4, "https://b.example.org/two"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites.toml");
    std::fs::write(
        &sites,
        "[[site]]\nbase_url = \"https://a.example.com\"\n\n\
         [[site]]\nbase_url = \"https://b.example.org\"\n",
    )
    .unwrap();
    let endpoint = receiver.url("/indexnow");
    let mut vars = indexnow_vars(SERVICE_KEY, &endpoint).to_vec();
    vars.push(("SITEMAP_SITES_FILE", sites.to_str().unwrap()));
    let app = spawn_app(&db.url, &vars).await;
    db.exec("DELETE FROM sitemap_entries WHERE id IN (2, 4)")
        .await;
    let sent = sorted_submissions(&app, &receiver, 2).await;
    assert_eq!(
        sent,
        ["https://a.example.com/two", "https://b.example.org/two"]
    );
    let removed_left = eventually(
        "the removed URLs both sites read cleared",
        || async {
            app.sweep().await;
            db.scalar("SELECT COUNT(*) FROM sitemapd_removed").await
        },
        |left| *left == 0,
    )
    .await;
    assert_eq!(removed_left, 0);
}
