//! Signed requests (Web Bot Auth) as agents send them: signed by Cloudflare's `web-bot-auth`
//! npm package under Node, with a browser's User-Agent, against key directories served on
//! loopback by a real HTTP server that counts what it is asked. The ledger's verdicts are read
//! from `/status.json`; the crawl log's through a real nginx with the shipped log format.

use serde_json::Value;

use futures::StreamExt as _;

use crate::crawl_log::{crawl_log, report, Nginx, HOST};
use crate::helpers::{
    eventually, signer_registry, spawn_app, status_page, template_file, Backend, DirectoryAnswer,
    KeyDirectory, SigningKey, TestApp, TestDb,
};

/// ChatGPT's agent fetches with a plain Chrome User-Agent: only its signature names it.
pub(crate) const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

pub(crate) fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

pub(crate) async fn status_json(admin: &str) -> Value {
    reqwest::get(format!("{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `name`'s (verified, unverified, forged) counts and its verified-by-signature count.
pub(crate) fn counts(status: &Value, name: &str) -> (u64, u64, u64, u64) {
    let crawlers = status["crawlers"].as_array().unwrap();
    let Some(c) = crawlers.iter().find(|c| c["crawler"] == name) else {
        return (0, 0, 0, 0);
    };
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("{c}"));
    (
        n(&c["verified"]),
        n(&c["unverified"]),
        n(&c["forged"]),
        n(&c["verified_by"]["signature"]),
    )
}

/// Polls until `name`'s counts are `expected`; returns them as last seen.
pub(crate) async fn counts_become(
    admin: &str,
    name: &str,
    expected: (u64, u64, u64, u64),
) -> (u64, u64, u64, u64) {
    eventually(
        &format!("{name}'s counts to be {expected:?}"),
        || async { counts(&status_json(admin).await, name) },
        |seen| *seen == expected,
    )
    .await
}

/// A GET of `/robots.txt` from a browser User-Agent with `headers`; its status.
pub(crate) async fn fetch_signed(app: &TestApp, headers: &[(String, String)]) -> u16 {
    let mut request = app
        .client
        .get(app.url("/robots.txt"))
        .header("user-agent", CHROME);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    request.send().await.unwrap().status().as_u16()
}

/// The service with a registry of these signer crawlers (`CRAWLERS_FILE`).
pub(crate) async fn serve(
    db: &TestDb,
    signers: &[(&str, &str)],
) -> (TestApp, String, tempfile::NamedTempFile) {
    let registry = signer_registry(signers);
    let app = spawn_app(
        &db.url,
        &[("CRAWLERS_FILE", registry.path().to_str().unwrap())],
    )
    .await;
    let admin = status_page(&app).await;
    (app, admin, registry)
}

/// Valid signatures in both Signature-Agent forms are verified and counted under the signer's
/// crawler despite a browser User-Agent; a tampered, expired, unknown-key or other-authority
/// signature is forged; the RFC 9421 test key is never trusted.
#[tokio::test]
async fn signed_requests_are_the_signers_verified_or_forged_by_their_signature() {
    let db = TestDb::new().await;
    db.migrate().await;
    let key = SigningKey::generate();
    let stranger = SigningKey::generate();
    let test_key = SigningKey::rfc9421_test_key();
    let agent_dir = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let test_dir = KeyDirectory::serve(DirectoryAnswer::Keys(vec![test_key.public.clone()])).await;
    let (origin, test_origin) = (agent_dir.origin(), test_dir.origin());
    let (app, admin, _registry) = serve(
        &db,
        &[("SignedAgent", &origin), ("TestKeyAgent", &test_origin)],
    )
    .await;
    let url = app.url("/robots.txt");
    let (t, member) = (now(), format!("sig1=\"{origin}\""));
    let string = format!("\"{origin}\"");

    assert_eq!(
        fetch_signed(&app, &key.sign(&url, &member, t, t + 300)).await,
        200
    );
    assert_eq!(
        counts_become(&admin, "SignedAgent", (1, 0, 0, 1)).await,
        (1, 0, 0, 1)
    );
    assert_eq!(
        counts(&status_json(&admin).await, "other"),
        (0, 0, 0, 0),
        "not counted by its User-Agent"
    );
    fetch_signed(&app, &key.sign(&url, &string, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "SignedAgent", (2, 0, 0, 2)).await,
        (2, 0, 0, 2)
    );

    let mut tampered = key.sign(&url, &member, t, t + 300);
    tampered[1].1 = tampered[1].1.replacen(':', ":AAAA", 1);
    fetch_signed(&app, &tampered).await;
    assert_eq!(
        counts_become(&admin, "SignedAgent", (2, 0, 1, 2)).await,
        (2, 0, 1, 2),
        "tampered"
    );
    fetch_signed(&app, &key.sign(&url, &member, t - 600, t - 60)).await;
    assert_eq!(
        counts_become(&admin, "SignedAgent", (2, 0, 2, 2)).await,
        (2, 0, 2, 2),
        "expired"
    );
    fetch_signed(&app, &key.sign(&url, &member, t, t + 25 * 3600)).await;
    assert_eq!(
        counts_become(&admin, "SignedAgent", (2, 0, 3, 2)).await,
        (2, 0, 3, 2),
        "valid for over a day"
    );
    fetch_signed(&app, &stranger.sign(&url, &member, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "SignedAgent", (2, 0, 4, 2)).await,
        (2, 0, 4, 2),
        "unknown key"
    );
    let elsewhere = "http://www.other.example/robots.txt";
    fetch_signed(&app, &key.sign(elsewhere, &member, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "SignedAgent", (2, 0, 5, 2)).await,
        (2, 0, 5, 2),
        "other authority"
    );
    assert_eq!(
        agent_dir.requests(),
        1,
        "one directory fetch for all of them"
    );

    let test_member = format!("sig1=\"{test_origin}\"");
    fetch_signed(&app, &test_key.sign(&url, &test_member, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "TestKeyAgent", (0, 0, 1, 0)).await,
        (0, 0, 1, 0),
        "RFC 9421 test key"
    );

    let status = status_json(&admin).await;
    let directories = status["verification"]["signature_directories"]
        .as_array()
        .unwrap();
    let ours = directories
        .iter()
        .find(|d| d["origin"] == origin.as_str())
        .expect("listed");
    assert_eq!(ours["keys"], 1, "{ours}");
    let theirs = directories
        .iter()
        .find(|d| d["origin"] == test_origin.as_str())
        .expect("listed");
    assert_eq!(theirs["keys"], 0, "the test key is dropped: {theirs}");
    let page = reqwest::get(format!("{admin}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("by signature 2"),
        "the status page says how SignedAgent was verified"
    );
}

/// A directory that cannot be fetched (nothing listens, or it redirects) leaves signed requests
/// unverified; the redirect is never followed; an origin no registry entry names is never
/// fetched and its requests are judged by their User-Agent.
#[tokio::test]
async fn unreachable_redirecting_or_unknown_directories_verify_nothing_and_fetch_nothing_more() {
    let db = TestDb::new().await;
    db.migrate().await;
    let key = SigningKey::generate();
    let good = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let unnamed = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let to = format!(
        "{}/.well-known/http-message-signatures-directory",
        good.origin()
    );
    let redirecting = KeyDirectory::serve(DirectoryAnswer::Redirect(to)).await;
    let down = format!("http://127.0.0.1:{}", crate::helpers::free_port());
    let (app, admin, _registry) = serve(
        &db,
        &[("DownAgent", &down), ("MovedAgent", &redirecting.origin())],
    )
    .await;
    let url = app.url("/robots.txt");
    let t = now();

    fetch_signed(
        &app,
        &key.sign(&url, &format!("sig1=\"{down}\""), t, t + 300),
    )
    .await;
    assert_eq!(
        counts_become(&admin, "DownAgent", (0, 1, 0, 0)).await,
        (0, 1, 0, 0)
    );
    let moved = format!("sig1=\"{}\"", redirecting.origin());
    fetch_signed(&app, &key.sign(&url, &moved, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "MovedAgent", (0, 1, 0, 0)).await,
        (0, 1, 0, 0)
    );
    assert_eq!(redirecting.requests(), 1);
    assert_eq!(good.requests(), 0, "the redirect was not followed");

    let stranger = format!("\"{}\"", unnamed.origin());
    fetch_signed(&app, &key.sign(&url, &stranger, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "other", (0, 1, 0, 0)).await,
        (0, 1, 0, 0)
    );
    assert_eq!(
        unnamed.requests(),
        0,
        "an origin the registry does not name is never fetched"
    );
}

/// 10,000 signed requests from one agent, all verified, fetch its directory once.
#[tokio::test]
async fn ten_thousand_signed_requests_fetch_the_directory_once() {
    let db = TestDb::new().await;
    db.migrate().await;
    let key = SigningKey::generate();
    let directory = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = directory.origin();
    let (app, admin, _registry) = serve(&db, &[("BusyAgent", &origin)]).await;
    let t = now();
    let signed = key.sign(
        &app.url("/robots.txt"),
        &format!("sig1=\"{origin}\""),
        t,
        t + 3600,
    );
    const REQUESTS: u64 = 10_000;
    let mut pending = futures::stream::iter(0..REQUESTS)
        .map(|_| fetch_signed(&app, &signed))
        .buffer_unordered(16);
    while let Some(status) = futures::StreamExt::next(&mut pending).await {
        assert_eq!(status, 200);
    }
    let seen = counts_become(&admin, "BusyAgent", (REQUESTS, 0, 0, REQUESTS)).await;
    assert_eq!(seen, (REQUESTS, 0, 0, REQUESTS));
    assert_eq!(
        directory.requests(),
        1,
        "the directory server was asked once"
    );
}

/// A list of the one address `127.0.0.2`, in the operators' range format, served on loopback.
async fn ranges_naming_127_0_0_2() -> String {
    let body = serde_json::json!({"prefixes": [{"ipv4Prefix": "127.0.0.2/32"}]}).to_string();
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "application/json")], body) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/ranges.json", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// A crawler proved both by a signer and by a range list: verified when either says so (by the
/// method that did), forged only when both say no.
#[tokio::test]
async fn a_signed_request_from_a_listed_address_is_verified_when_either_method_says_so() {
    let db = TestDb::new().await;
    db.migrate().await;
    let (key, stranger) = (SigningKey::generate(), SigningKey::generate());
    let directory = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let (origin, ranges) = (directory.origin(), ranges_naming_127_0_0_2().await);
    let registry = template_file(&format!(
        "[[crawler]]\nname = \"BothAgent\"\ntokens = [\"BothAgent\"]\nuser_agent = [\"BothAgent\"]\n\
         operator = \"Tests\"\npurpose = \"ai-user\"\nverify_dns = []\nverify_ranges = [\"{ranges}\"]\n\
         signature_agent = [\"{origin}\"]\ndocs = [\"https://example.com/both\"]\n"
    ));
    let app = spawn_app(
        &db.url,
        &[("CRAWLERS_FILE", registry.path().to_str().unwrap())],
    )
    .await;
    let admin = status_page(&app).await;
    eventually(
        "the range list to be fetched",
        || async {
            status_json(&admin).await["verification"]["range_lists"][0]["prefixes"].clone()
        },
        |prefixes| *prefixes == 1,
    )
    .await;
    let t = now();
    let member = format!("sig1=\"{origin}\"");
    let from = |source: &str| {
        reqwest::Client::builder()
            .local_address(source.parse::<std::net::IpAddr>().unwrap())
            .build()
            .unwrap()
    };
    let send = |client: reqwest::Client, headers: Vec<(String, String)>| {
        let url = app.url("/robots.txt");
        async move {
            let mut request = client.get(&url).header("user-agent", CHROME);
            for (name, value) in &headers {
                request = request.header(name.as_str(), value.as_str());
            }
            request.send().await.unwrap().status().as_u16()
        }
    };
    let url = app.url("/robots.txt");
    let by = |status: &Value| {
        let c = status["crawlers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["crawler"] == "BothAgent")
            .cloned();
        c.map(|c| c["verified_by"].clone()).unwrap_or(Value::Null)
    };

    send(from("127.0.0.2"), stranger.sign(&url, &member, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "BothAgent", (1, 0, 0, 0)).await,
        (1, 0, 0, 0),
        "listed address, bad signature"
    );
    assert_eq!(by(&status_json(&admin).await)["ranges"], 1);
    send(from("127.0.0.1"), stranger.sign(&url, &member, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "BothAgent", (1, 0, 1, 0)).await,
        (1, 0, 1, 0),
        "both say no"
    );
    send(from("127.0.0.1"), key.sign(&url, &member, t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "BothAgent", (2, 0, 1, 1)).await,
        (2, 0, 1, 1),
        "good signature, other address"
    );
}

/// A GET through `nginx` of `path` on the crawl-log tests' host, as a browser with `headers`.
async fn through_nginx(nginx: &Nginx, path: &str, headers: &[(String, String)]) -> u16 {
    let client = reqwest::Client::new();
    let response = eventually(
        "nginx to answer",
        || {
            let mut request = client
                .get(format!("http://127.0.0.1:{}{path}", nginx.port))
                .header("host", HOST)
                .header("user-agent", CHROME);
            for (name, value) in headers {
                request = request.header(name.as_str(), value.as_str());
            }
            request.send()
        },
        |r| r.is_ok(),
    )
    .await
    .expect("nginx answers");
    response.status().as_u16()
}

/// A signed fetch of a closed path through a real nginx logging in the shipped format is the
/// signer's, verified at the line's time; a tampered one is forged; a browser's unsigned fetch is
/// nobody's.
#[tokio::test]
async fn the_crawl_log_verifies_signed_lines_from_nginx() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let key = SigningKey::generate();
    let directory = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = directory.origin();
    let registry = signer_registry(&[("SignedAgent", &origin)]);
    let robots = template_file("User-agent: *\nDisallow: /private/\n");
    let app = spawn_app(
        &db.url,
        &[
            ("ACCESS_LOG_ADDR", "127.0.0.1:0"),
            ("ROBOTS_TEMPLATE", robots.path().to_str().unwrap()),
            ("CRAWLERS_FILE", registry.path().to_str().unwrap()),
        ],
    )
    .await;
    let nginx = Nginx::start(crawl_log(&app).local_addr());
    let (t, member) = (now(), format!("sig1=\"{origin}\""));
    let signed = key.sign(&format!("http://{HOST}/private/x"), &member, t, t + 300);
    let mut tampered = signed.clone();
    tampered[1].1 = tampered[1].1.replacen(':', ":AAAA", 1);

    assert_eq!(through_nginx(&nginx, "/private/x", &signed).await, 200);
    assert_eq!(through_nginx(&nginx, "/private/x", &tampered).await, 200);
    assert_eq!(through_nginx(&nginx, "/private/y", &[]).await, 200);
    let violations = |report: &Value| {
        report["sites"][0]["robots_violations"]
            .as_array()
            .and_then(|all| all.iter().find(|v| v["crawler"] == "SignedAgent").cloned())
            .unwrap_or(Value::Null)
    };
    let seen = eventually(
        "SignedAgent's violations from the log",
        || async { violations(&report(&app)) },
        |v| v["verified"] == 1 && v["forged"] == 1,
    )
    .await;
    assert_eq!(seen["verified"], 1, "{seen}");
    assert_eq!(seen["forged"], 1, "{seen}");
    assert_eq!(seen["unverified"], 0, "{seen}");
    assert_eq!(directory.requests(), 1);
    let all = report(&app);
    let crawlers: Vec<&Value> = all["sites"][0]["robots_violations"]
        .as_array()
        .map(|a| a.iter().map(|v| &v["crawler"]).collect())
        .unwrap_or_default();
    assert_eq!(
        crawlers,
        vec!["SignedAgent"],
        "the browser's fetch is nobody's: {all}"
    );
}
