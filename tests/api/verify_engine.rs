//! The verification engine against real parts: dnsmasq on a loopback port holding PTR and
//! A/AAAA records, a UDP socket that never answers, published range lists in the operators'
//! format served over HTTP by a local server, and the range lists kept in a real database
//! across a restart with the range server down.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sitemapd::crawlers::{CrawlerId, Registry, Trust};
use sitemapd::verify::{Limits, RangeList, Verifier, VerifySettings};

use crate::helpers::{Backend, TestDb};

/// dnsmasq answering for the test's names only, on a free loopback port, logging each query.
struct Dnsmasq {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Dnsmasq {
    fn start(records: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("queries.log");
        let port = crate::helpers::free_port();
        let mut command = Command::new("dnsmasq");
        command
            .args([
                "--keep-in-foreground",
                "--conf-file=/dev/null",
                "--no-resolv",
                "--no-hosts",
                "--no-poll",
                "--bind-interfaces",
                "--listen-address=127.0.0.1",
                "--pid-file=",
                "--user=root",
                "--log-queries",
                // Names of these zones that no record holds are "no such name", not "refused".
                "--local=/in-addr.arpa/",
                "--local=/ip6.arpa/",
                "--local=/com/",
                "--cache-size=0",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--log-facility={}", log.display()))
            .args(records)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let child = command
            .spawn()
            .expect("dnsmasq runs (apt-get install -y dnsmasq)");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        // Ready when its socket holds the port.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::UdpSocket::bind(addr).is_ok() {
            assert!(Instant::now() < deadline, "dnsmasq did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            addr,
            log,
            _dir: dir,
        }
    }

    /// Queries received so far.
    fn queries(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("query["))
            .count()
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The records of the DNS cases.
const RECORDS: &[&str] = &[
    // Verified: the PTR is under the suffix and its A gives the address back.
    "--host-record=crawl-2.googlebot.com,127.0.0.2",
    // Forged: a PTR name under no suffix.
    "--ptr-record=3.0.0.127.in-addr.arpa,evil.example.com",
    // Forged: under the suffix, but its A is another address.
    "--ptr-record=4.0.0.127.in-addr.arpa,crawl-4.googlebot.com",
    "--host-record=crawl-4.googlebot.com,127.0.0.9",
    // Forged: a name that only looks like the suffix.
    "--ptr-record=6.0.0.127.in-addr.arpa,crawl-6.evilgooglebot.com",
    "--host-record=crawl-6.evilgooglebot.com,127.0.0.6",
    // IPv6, verified.
    "--host-record=crawl-v6.googlebot.com,2001:db8::2",
];

/// A registry of test crawlers: DNS only, ranges only, and both.
fn registry(ranges_url: &str) -> Arc<Registry> {
    let text = format!(
        r#"
[[crawler]]
name = "DnsBot"
tokens = ["DnsBot"]
purpose = "search"
verify_dns = ["googlebot.com", "google.com"]

[[crawler]]
name = "RangeBot"
tokens = ["RangeBot"]
purpose = "ai-training"
verify_ranges = ["{ranges_url}"]

[[crawler]]
name = "Googlebot"
tokens = ["Googlebot"]
purpose = "search"
verify_dns = ["googlebot.com", "google.com"]
verify_ranges = ["{ranges_url}"]

[[crawler]]
name = "PlainBot"
tokens = ["PlainBot"]
purpose = "seo"
"#
    );
    Arc::new(Registry::parse(&text, "test registry").unwrap())
}

fn id(registry: &Registry, name: &str) -> CrawlerId {
    registry.by_name(name).unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn settings(dns: SocketAddr) -> VerifySettings {
    VerifySettings {
        on: true,
        dns_server: Some(dns),
    }
}

/// Google's published format.
const GOOGLE_FORMAT: &str = r#"{
  "creationTime": "2026-11-20T14:46:04.000000",
  "prefixes": [
    {"ipv6Prefix": "2001:4860:4801:10::/64"},
    {"ipv4Prefix": "66.249.64.0/27"},
    {"ipv4Prefix": "127.0.10.0/24"}
  ]
}"#;

/// A local HTTP server answering the range list it holds (503 without one).
struct RangeServer {
    url: String,
    body: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl RangeServer {
    async fn start(body: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(Mutex::new(Some(body.to_string())));
        let state = held.clone();
        let app = axum::Router::new().route(
            "/ipranges/googlebot.json",
            axum::routing::get(move || {
                let body = state.lock().unwrap().clone();
                async move {
                    match body {
                        Some(body) => (axum::http::StatusCode::OK, body),
                        None => (axum::http::StatusCode::SERVICE_UNAVAILABLE, String::new()),
                    }
                }
            }),
        );
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}/ipranges/googlebot.json"),
            body: held,
            task,
        }
    }

    fn serve(&self, body: Option<&str>) {
        *self.body.lock().unwrap() = body.map(str::to_string);
    }

    fn stop(self) -> String {
        self.task.abort();
        self.url
    }
}

fn the_list(verifier: &Verifier) -> RangeList {
    let lists = verifier.range_lists();
    assert_eq!(lists.len(), 1, "{lists:?}");
    lists.into_iter().next().unwrap()
}

/// Waits (bounded) until the list shows what `done` looks for.
async fn list_until(verifier: &Verifier, done: impl Fn(&RangeList) -> bool) -> RangeList {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = the_list(verifier);
        if done(&list) {
            return list;
        }
        assert!(Instant::now() < deadline, "range list stays {list:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn reverse_dns_with_forward_confirmation_on_a_real_dns_server() {
    let dns = Dnsmasq::start(RECORDS);
    let registry = registry("http://127.0.0.1:9/never-fetched.json");
    let verifier = Verifier::with_limits(
        registry.clone(),
        settings(dns.addr),
        None,
        Limits::default(),
    )
    .await;
    let bot = id(&registry, "DnsBot");
    let cases = [
        ("127.0.0.2", Trust::Verified),
        ("127.0.0.3", Trust::Forged),
        ("127.0.0.4", Trust::Forged),
        ("127.0.0.5", Trust::Forged),
        ("127.0.0.6", Trust::Forged),
        ("2001:db8::2", Trust::Verified),
        ("2001:db8::3", Trust::Forged),
    ];
    for (addr, expected) in cases {
        assert_eq!(
            verifier.cached(bot, ip(addr)),
            None,
            "{addr} not looked up yet"
        );
        assert_eq!(verifier.verdict(bot, ip(addr)).await, expected, "{addr}");
        assert_eq!(
            verifier.cached(bot, ip(addr)),
            Some(expected),
            "{addr} cached"
        );
    }
    // An IPv4-mapped IPv6 address is the IPv4 address: its verdict is already known.
    assert_eq!(
        verifier.cached(bot, ip("::ffff:127.0.0.2")),
        Some(Trust::Verified)
    );
    // Googlebot has DNS and a range list never fetched: the list says nothing, so DNS alone
    // verifies, and a DNS "no" is not every method saying no.
    let google = id(&registry, "Googlebot");
    assert_eq!(
        verifier.verdict(google, ip("127.0.0.2")).await,
        Trust::Verified
    );
    assert_eq!(
        verifier.verdict(google, ip("127.0.0.3")).await,
        Trust::Unverified
    );
    // No method, or verification off: unverified, without a lookup.
    let plain = id(&registry, "PlainBot");
    assert_eq!(
        verifier.cached(plain, ip("127.0.0.2")),
        Some(Trust::Unverified)
    );
    let off = Verifier::with_limits(
        registry.clone(),
        VerifySettings {
            on: false,
            dns_server: Some(dns.addr),
        },
        None,
        Limits::default(),
    )
    .await;
    assert!(!off.is_on());
    assert_eq!(off.cached(bot, ip("127.0.0.2")), Some(Trust::Unverified));
    assert_eq!(off.verdict(bot, ip("127.0.0.3")).await, Trust::Unverified);
    assert_eq!(off.stats().lookups, 0);

    // 1,000 claims from one address at once: one lookup.
    let fresh = Verifier::with_limits(
        registry.clone(),
        settings(dns.addr),
        None,
        Limits::default(),
    )
    .await;
    let before = dns.queries();
    let claims = (0..1000).map(|_| fresh.verdict(bot, ip("127.0.0.2")));
    let verdicts = futures::future::join_all(claims).await;
    assert!(verdicts.iter().all(|v| *v == Trust::Verified));
    assert_eq!(fresh.stats().lookups, 1);
    let queries = dns.queries() - before;
    assert!(queries <= 2, "{queries} queries for one address");
}

#[tokio::test]
async fn a_server_that_never_answers_leaves_claims_unverified() {
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let drain = tokio::spawn(async move {
        let mut buffer = [0u8; 512];
        while silent.recv_from(&mut buffer).await.is_ok() {}
    });
    let registry = registry("http://127.0.0.1:9/never-fetched.json");
    let verifier =
        Verifier::with_limits(registry.clone(), settings(addr), None, Limits::default()).await;
    let bot = id(&registry, "DnsBot");
    assert_eq!(
        verifier.verdict(bot, ip("127.0.0.2")).await,
        Trust::Unverified
    );
    // Kept briefly: asked again, it is answered from the cache, not looked up again.
    assert_eq!(
        verifier.cached(bot, ip("127.0.0.2")),
        Some(Trust::Unverified)
    );
    assert_eq!(verifier.stats().lookups, 1);
    drain.abort();
}

#[tokio::test]
async fn published_ranges_verify_without_dns() {
    let server = RangeServer::start(GOOGLE_FORMAT).await;
    let registry = registry(&server.url);
    // A DNS server that never answers: a range's answer must not wait for it.
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let verifier = Verifier::with_limits(
        registry.clone(),
        settings(silent.local_addr().unwrap()),
        None,
        Limits::default(),
    )
    .await;
    let ranges = id(&registry, "RangeBot");
    let google = id(&registry, "Googlebot");
    // Never fetched: the list says nothing.
    assert_eq!(
        verifier.cached(ranges, ip("66.249.64.1")),
        Some(Trust::Unverified)
    );
    assert_eq!(the_list(&verifier).fetched_at, None);

    verifier.fetch_ranges().await;
    let list = the_list(&verifier);
    assert_eq!(
        (list.prefixes, list.error.as_deref()),
        (3, None),
        "{list:?}"
    );
    assert!(list.fetched_at.is_some());
    for (addr, expected) in [
        ("66.249.64.1", Trust::Verified),
        ("127.0.10.77", Trust::Verified),
        ("2001:4860:4801:10::2", Trust::Verified),
        ("66.249.64.32", Trust::Forged),
        ("2001:4860:4801:11::2", Trust::Forged),
    ] {
        assert_eq!(verifier.cached(ranges, ip(addr)), Some(expected), "{addr}");
        assert_eq!(verifier.verdict(ranges, ip(addr)).await, expected, "{addr}");
    }
    assert_eq!(
        verifier.cached(google, ip("66.249.64.1")),
        Some(Trust::Verified)
    );
    assert_eq!(
        verifier.stats().lookups,
        0,
        "no DNS lookup for a range's answer"
    );

    // A bad or empty list is an error shown; the last good list stays in use.
    for bad in [
        Some("<html>oops</html>"),
        Some(r#"{"creationTime": "x", "prefixes": []}"#),
        None,
    ] {
        server.serve(bad);
        verifier.fetch_ranges().await;
        let after = the_list(&verifier);
        assert!(after.error.is_some(), "{bad:?}: {after:?}");
        assert_eq!((after.prefixes, after.fetched_at), (3, list.fetched_at));
        assert_eq!(
            verifier.cached(ranges, ip("66.249.64.1")),
            Some(Trust::Verified)
        );
    }
    // Other operators' variants (OpenAI/Bing/Apple write the same shape; AWS-style keys too).
    server.serve(Some(
        r#"{"creationTime": "2026-11-01", "prefixes": [{"ip_prefix": "192.0.2.0/24"}]}"#,
    ));
    verifier.fetch_ranges().await;
    let list = the_list(&verifier);
    assert_eq!((list.prefixes, list.error), (1, None));
    assert_eq!(
        verifier.cached(ranges, ip("192.0.2.9")),
        Some(Trust::Verified)
    );
    assert_eq!(
        verifier.cached(ranges, ip("66.249.64.1")),
        Some(Trust::Forged)
    );
    server.stop();
}

async fn restart_keeps_the_last_good_list(backend: Backend) {
    let db = TestDb::on(backend).await;
    let server = RangeServer::start(GOOGLE_FORMAT).await;
    let registry = registry(&server.url);
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let dns = settings(silent.local_addr().unwrap());
    let ranges = id(&registry, "RangeBot");

    let first = Verifier::start(registry.clone(), dns.clone(), Some(db.store().await), &[]).await;
    let fetched = list_until(&first, |list| list.fetched_at.is_some()).await;
    assert_eq!((fetched.prefixes, fetched.error.as_deref()), (3, None));
    drop(first);

    let url = server.stop();
    let second = Verifier::start(registry.clone(), dns, Some(db.store().await), &[]).await;
    // In use at once, from the database, before any fetch.
    assert_eq!(
        second.cached(ranges, ip("66.249.64.1")),
        Some(Trust::Verified)
    );
    let shown = list_until(&second, |list| list.error.is_some()).await;
    assert_eq!(shown.url, url);
    assert_eq!(
        shown.fetched_at, fetched.fetched_at,
        "the old fetch time shows"
    );
    assert_eq!(shown.prefixes, 3);
    assert_eq!(
        second.cached(ranges, ip("66.249.64.1")),
        Some(Trust::Verified)
    );
    assert_eq!(
        second.cached(ranges, ip("66.249.64.99")),
        Some(Trust::Forged)
    );
}

crate::on_each_database!(restart_keeps_the_last_good_list);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_claims_keeps_lookups_and_memory_bounded() {
    let dns = Dnsmasq::start(RECORDS);
    let registry = registry("http://127.0.0.1:9/never-fetched.json");
    let limits = Limits::default();
    let verifier = Verifier::with_limits(registry.clone(), settings(dns.addr), None, limits).await;
    let bot = id(&registry, "DnsBot");
    let before = dns.queries();
    let started = Instant::now();
    let mut claims = tokio::task::JoinSet::new();
    for _round in 0..10 {
        for i in 0..1000u32 {
            let verifier = verifier.clone();
            let addr = IpAddr::from([127, 1, (i / 250) as u8, (i % 250) as u8]);
            claims.spawn(async move { verifier.verdict(bot, addr).await });
        }
    }
    let mut counts = std::collections::HashMap::new();
    while let Some(verdict) = claims.join_next().await {
        *counts.entry(verdict.unwrap()).or_insert(0usize) += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let stats = verifier.stats();
    let queries = dns.queries() - before;
    eprintln!(
        "burst: 10000 claims from 1000 addresses in {elapsed:.2}s: {counts:?}, {stats:?}, \
         {queries} DNS queries"
    );
    assert_eq!(counts.values().sum::<usize>(), 10_000);
    assert!(!counts.contains_key(&Trust::Verified));
    let allowed = f64::from(limits.per_second) * (elapsed + 1.0);
    assert!((stats.lookups as f64) <= allowed, "{stats:?} in {elapsed}s");
    assert!(stats.lookups <= 1000);
    assert!(
        queries as u64 <= 2 * stats.lookups,
        "{queries} queries, {stats:?}"
    );
    assert!(stats.cached <= limits.cache_cap);

    // The cache keeps at most its cap, however many addresses come.
    let small = Limits {
        cache_cap: 50,
        in_flight: 64,
        per_second: 10_000,
    };
    let verifier = Verifier::with_limits(registry.clone(), settings(dns.addr), None, small).await;
    for i in 0..300u32 {
        let addr = IpAddr::from([127, 2, (i / 250) as u8, (i % 250) as u8]);
        verifier.verdict(bot, addr).await;
        assert!(verifier.stats().cached <= 50);
    }
    assert_eq!(verifier.stats().lookups, 300);
}
