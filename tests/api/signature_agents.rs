//! Web Bot Auth as signers send it now: `Signature-Agent` as a bare origin, as the well-known
//! directory URL or as any URL of a JWKS; requests carrying several signatures; signatures
//! covering `@target-uri`; a captured signature replayed from another address; `http://localhost`
//! refused. Signed by Cloudflare's `web-bot-auth` npm package (which signs `@target-uri` and
//! takes any `Signature-Agent` value), against key directories served on loopback that record
//! the paths they are asked for.

use serde_json::Value;
use sitemapd::crawlers::signer::WELL_KNOWN;

use crate::crawl_log::{crawl_log, report, Nginx, HOST};
use crate::helpers::{
    all_of, eventually, refused, signer_registry, spawn_app, template_file, Backend,
    DirectoryAnswer, KeyDirectory, Options, SigningKey, TestApp, TestDb, BASE,
};
use crate::signatures::{counts, counts_become, fetch_signed, now, serve, status_json, CHROME};

/// A GET of `path` from the source address `from`, as a browser with `headers`; its status.
async fn get_from(app: &TestApp, from: &str, path: &str, headers: &[(String, String)]) -> u16 {
    let client = reqwest::Client::builder()
        .local_address(from.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let mut request = client.get(app.url(path)).header("user-agent", CHROME);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    request.send().await.unwrap().status().as_u16()
}

/// The directory `url` in `/status.json`.
fn directory(status: &Value, url: &str) -> Value {
    let all = status["verification"]["signature_directories"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let found = all.into_iter().find(|d| d["url"] == url);
    found.unwrap_or_else(|| panic!("{url} not listed: {status}"))
}

/// A registry signer named by its origin, by its well-known URL or by a JWKS at another path is
/// verified whichever of the forms (origin, well-known URL) the request names it by; each
/// directory is fetched once, at the URL it is named by and nowhere else; a JWKS's origin alone
/// names no signer and makes sitemapd fetch nothing.
#[tokio::test]
async fn each_signature_agent_form_is_verified_from_the_directory_it_names() {
    let db = TestDb::new().await;
    db.migrate().await;
    let key = SigningKey::generate();
    let keys = || DirectoryAnswer::Keys(vec![key.public.clone()]);
    let by_origin = KeyDirectory::serve_at(Some(WELL_KNOWN), keys()).await;
    let by_well_known = KeyDirectory::serve_at(Some(WELL_KNOWN), keys()).await;
    let jwks = KeyDirectory::serve_at(Some("/bots/keys.json"), keys()).await;
    let jwks_url = jwks.url("/bots/keys.json");
    let (app, admin, _registry) = serve(
        &db,
        &[
            ("OriginAgent", &by_origin.origin()),
            ("WellKnownAgent", &by_well_known.url(WELL_KNOWN)),
            ("JwksAgent", &jwks_url),
        ],
    )
    .await;
    let url = app.url("/robots.txt");
    let t = now();
    let member = |agent: &str| format!("sig1=\"{agent}\"");
    let forms = |server: &KeyDirectory| {
        [
            member(&server.origin()),
            member(&server.url(WELL_KNOWN)),
            format!("\"{}/\"", server.origin()),
        ]
    };

    for (name, server) in [
        ("OriginAgent", &by_origin),
        ("WellKnownAgent", &by_well_known),
    ] {
        for (n, agent) in (1..).zip(forms(server)) {
            assert_eq!(
                fetch_signed(&app, &key.sign(&url, &agent, t, t + 300)).await,
                200
            );
            assert_eq!(
                counts_become(&admin, name, (n, 0, 0, n)).await,
                (n, 0, 0, n),
                "{name} named by {agent}"
            );
        }
        assert_eq!(server.paths(), [WELL_KNOWN], "{name}: one fetch");
    }

    fetch_signed(&app, &key.sign(&url, &member(&jwks_url), t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "JwksAgent", (1, 0, 0, 1)).await,
        (1, 0, 0, 1)
    );
    fetch_signed(&app, &key.sign(&url, &member(&jwks.origin()), t, t + 300)).await;
    assert_eq!(
        counts_become(&admin, "other", (0, 1, 0, 0)).await,
        (0, 1, 0, 0),
        "the JWKS's origin is no listed signer: judged by its User-Agent"
    );
    assert_eq!(
        jwks.paths(),
        ["/bots/keys.json"],
        "fetched as named, once; never at the well-known path"
    );

    let status = status_json(&admin).await;
    assert_eq!(directory(&status, &jwks_url)["keys"], 1);
    assert_eq!(
        directory(&status, &by_origin.url(WELL_KNOWN))["origin"],
        by_origin.origin().as_str()
    );
}

/// Of two `web-bot-auth` signatures, the second verifying is enough; one forged alone, or two
/// forged, are forged; a first signature naming a signer no registry lists is passed over.
#[tokio::test]
async fn a_request_is_verified_when_its_second_signature_verifies() {
    let db = TestDb::new().await;
    db.migrate().await;
    let (key, stranger) = (SigningKey::generate(), SigningKey::generate());
    let server = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = server.origin();
    let (app, admin, _registry) = serve(&db, &[("TwoSigAgent", &origin)]).await;
    let url = app.url("/robots.txt");
    let t = now();
    let agent = format!("sig1=\"{origin}\", sig2=\"{origin}\"");
    let labelled = |label| Options {
        label,
        ..Options::default()
    };
    let sign = |by: &SigningKey, agent: &str, label| {
        by.sign_with(&url, agent, t, t + 300, labelled(label))
    };

    let headers = all_of(&[sign(&stranger, &agent, "sig1"), sign(&key, &agent, "sig2")]);
    assert!(headers[2].1.starts_with("sig1=("), "{headers:?}");
    assert_eq!(fetch_signed(&app, &headers).await, 200);
    assert_eq!(
        counts_become(&admin, "TwoSigAgent", (1, 0, 0, 1)).await,
        (1, 0, 0, 1),
        "the second verifies"
    );
    fetch_signed(&app, &all_of(&[sign(&stranger, &agent, "sig1")])).await;
    assert_eq!(
        counts_become(&admin, "TwoSigAgent", (1, 0, 1, 1)).await,
        (1, 0, 1, 1),
        "the first alone is forged"
    );
    let both_bad = all_of(&[
        sign(&stranger, &agent, "sig1"),
        sign(&stranger, &agent, "sig2"),
    ]);
    fetch_signed(&app, &both_bad).await;
    assert_eq!(
        counts_become(&admin, "TwoSigAgent", (1, 0, 2, 1)).await,
        (1, 0, 2, 1),
        "both forged"
    );
    let unlisted = format!("sig1=\"https://unlisted.example\", sig2=\"{origin}\"");
    let headers = all_of(&[sign(&key, &unlisted, "sig1"), sign(&key, &unlisted, "sig2")]);
    fetch_signed(&app, &headers).await;
    assert_eq!(
        counts_become(&admin, "TwoSigAgent", (2, 0, 2, 2)).await,
        (2, 0, 2, 2),
        "the listed one is tried"
    );
    assert_eq!(server.requests(), 1);
}

/// A signature covering `@target-uri` instead of `@authority` is checked against the public base
/// URL (`https://www.example.com`) with the path and query the request was sent to: verified as
/// signed for the public URL, forged when signed for the address the service listens on or for
/// another path; one covering neither `@authority` nor `@target-uri` is forged.
#[tokio::test]
async fn a_target_uri_signature_is_checked_against_the_public_base_url() {
    let db = TestDb::new().await;
    db.migrate().await;
    let key = SigningKey::generate();
    let server = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = server.origin();
    let (app, admin, _registry) = serve(&db, &[("TargetAgent", &origin)]).await;
    let (t, agent) = (now(), format!("sig1=\"{origin}\""));
    let target_uri = Options {
        label: "sig1",
        components: &["@target-uri", "signature-agent"],
    };
    let public = format!("{BASE}robots.txt?x=1");
    let sign = |url: &str, options| key.sign_with(url, &agent, t, t + 300, options);

    let signed = sign(&public, target_uri);
    assert!(
        signed[2].1.starts_with("sig1=(\"@target-uri\""),
        "{signed:?}"
    );
    assert_eq!(
        get_from(&app, "127.0.0.1", "/robots.txt?x=1", &signed).await,
        200
    );
    assert_eq!(
        counts_become(&admin, "TargetAgent", (1, 0, 0, 1)).await,
        (1, 0, 0, 1),
        "signed for {public}"
    );
    let cases = [
        (
            app.url("/robots.txt?x=1"),
            target_uri,
            "the listening address",
        ),
        (format!("{BASE}robots.txt?x=2"), target_uri, "another query"),
        (format!("{BASE}sitemap.xml?x=1"), target_uri, "another path"),
        (
            public.clone(),
            Options {
                label: "sig1",
                components: &["signature-agent"],
            },
            "neither @authority nor @target-uri",
        ),
    ];
    for (forged, (url, options, what)) in (1..).zip(cases) {
        get_from(&app, "127.0.0.1", "/robots.txt?x=1", &sign(&url, options)).await;
        assert_eq!(
            counts_become(&admin, "TargetAgent", (1, 0, forged, 1)).await,
            (1, 0, forged, 1),
            "{what}"
        );
    }
}

/// A signature verified from one client address is not verified again from another within its
/// validity (`unverified`), while the first address may send it again; a fresh signature from
/// the second address is verified.
#[tokio::test]
async fn a_signature_replayed_from_another_address_is_not_verified_again() {
    let db = TestDb::new().await;
    db.migrate().await;
    let key = SigningKey::generate();
    let server = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = server.origin();
    let (app, admin, _registry) = serve(&db, &[("ReplayedAgent", &origin)]).await;
    let (url, t, member) = (app.url("/robots.txt"), now(), format!("sig1=\"{origin}\""));
    let captured = key.sign(&url, &member, t, t + 300);

    let steps = [
        ("127.0.0.1", &captured, (1, 0, 0, 1), "first seen"),
        (
            "127.0.0.1",
            &captured,
            (2, 0, 0, 2),
            "again from its address",
        ),
        (
            "127.0.0.2",
            &captured,
            (2, 1, 0, 2),
            "replayed from another",
        ),
        ("127.0.0.1", &captured, (3, 1, 0, 3), "its address still"),
    ];
    for (from, headers, expected, what) in steps {
        assert_eq!(get_from(&app, from, "/robots.txt", headers).await, 200);
        assert_eq!(
            counts_become(&admin, "ReplayedAgent", expected).await,
            expected,
            "{what}"
        );
    }
    let fresh = key.sign(&url, &member, t, t + 300);
    get_from(&app, "127.0.0.2", "/robots.txt", &fresh).await;
    assert_eq!(
        counts_become(&admin, "ReplayedAgent", (4, 1, 0, 4)).await,
        (4, 1, 0, 4),
        "a fresh signature"
    );
}

/// A GET through `nginx` of `path` on the crawl-log tests' host from the source address `from`,
/// as a browser with `headers`.
async fn through_nginx_from(nginx: &Nginx, from: &str, path: &str, headers: &[(String, String)]) {
    let client = reqwest::Client::builder()
        .local_address(from.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let answered = eventually(
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
    .await;
    assert_eq!(answered.unwrap().status(), 200);
}

/// The crawl log's signed lines follow the same rule: a line whose signature another client
/// address was counted with is unverified.
#[tokio::test]
async fn the_crawl_log_does_not_verify_a_replayed_line_again() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    let key = SigningKey::generate();
    let server = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let origin = server.origin();
    let registry = signer_registry(&[("LoggedAgent", &origin)]);
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
    let captured = key.sign(&format!("http://{HOST}/private/x"), &member, t, t + 300);
    let violations = |report: &Value| {
        report["sites"][0]["robots_violations"]
            .as_array()
            .and_then(|all| all.iter().find(|v| v["crawler"] == "LoggedAgent").cloned())
            .unwrap_or(Value::Null)
    };

    through_nginx_from(&nginx, "127.0.0.1", "/private/x", &captured).await;
    eventually(
        "the first line to be verified",
        || async { violations(&report(&app)) },
        |v| v["verified"] == 1,
    )
    .await;
    through_nginx_from(&nginx, "127.0.0.2", "/private/x", &captured).await;
    let seen = eventually(
        "the replayed line to be counted",
        || async { violations(&report(&app)) },
        |v| v["unverified"] == 1,
    )
    .await;
    assert_eq!(seen["verified"], 1, "{seen}");
    assert_eq!(seen["unverified"], 1, "{seen}");
    assert_eq!(seen["forged"], 0, "{seen}");
}

/// `http://localhost:…` is a name the hosts file decides: a registry naming it is refused at
/// start (exit 2, naming the entry's field), and a request naming it is not the signer of the
/// loopback address it points to: nothing is fetched for it.
#[tokio::test]
async fn http_localhost_is_refused() {
    let key = SigningKey::generate();
    let server = KeyDirectory::serve(DirectoryAnswer::Keys(vec![key.public.clone()])).await;
    let by_name = format!("http://localhost:{}", server.addr.port());
    let registry = signer_registry(&[("LocalAgent", &by_name)]);
    refused(
        &[("CRAWLERS_FILE", registry.path().to_str().unwrap())],
        &["signature_agent", "localhost", "literal loopback"],
    );

    let db = TestDb::new().await;
    db.migrate().await;
    let (app, admin, _registry) = serve(&db, &[("LoopAgent", &server.origin())]).await;
    let t = now();
    let named = key.sign(
        &app.url("/robots.txt"),
        &format!("sig1=\"{by_name}\""),
        t,
        t + 300,
    );
    fetch_signed(&app, &named).await;
    assert_eq!(
        counts_become(&admin, "other", (0, 1, 0, 0)).await,
        (0, 1, 0, 0)
    );
    assert_eq!(
        counts(&status_json(&admin).await, "LoopAgent"),
        (0, 0, 0, 0)
    );
    assert_eq!(server.requests(), 0, "nothing fetched for http://localhost");
}
