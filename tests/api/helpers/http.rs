//! Asking the service over HTTP: a path as a host, a response's header, a crawler's
//! User-Agent, and waiting until what it answers holds.

use super::app::TestApp;
use super::xml::{gunzip, locs};

/// `path` requested with `host` as its Host header (sitemapd routes by it).
pub async fn get_as(app: &TestApp, host: &str, path: &str) -> reqwest::Response {
    app.get_with(path, &[("host", host)]).await
}

/// `path`'s headers alone (HEAD) as `host`: the validators the last sweep stored, which a GET
/// sends too unless its render is slow enough to be streamed under none.
pub async fn head_as(app: &TestApp, host: &str, path: &str) -> reqwest::Response {
    app.client
        .head(app.url(path))
        .header("host", host)
        .send()
        .await
        .expect("HEAD")
}

/// Every `<loc>` of the XML document at `host` `path`, which must be found.
pub async fn locs_as(app: &TestApp, host: &str, path: &str) -> Vec<String> {
    locs(&xml_as(app, host, path).await)
}

/// The XML document at `host` `path` (gunzipped for `.gz`), which must be found.
pub async fn xml_as(app: &TestApp, host: &str, path: &str) -> Vec<u8> {
    let resp = get_as(app, host, path).await;
    xml_of(resp, host, path).await
}

/// [`xml_as`] from a service whose pool may be busy a while: a `503` (no connection free within
/// the pool's wait, as when one connection serves the sweeps of several groups on a loaded
/// machine) is asked again.
pub async fn xml_as_when_free(app: &TestApp, host: &str, path: &str) -> Vec<u8> {
    let resp = eventually(
        &format!("{host}{path} to answer other than 503"),
        || get_as(app, host, path),
        |resp| resp.status() != 503,
    )
    .await;
    xml_of(resp, host, path).await
}

async fn xml_of(resp: reqwest::Response, host: &str, path: &str) -> Vec<u8> {
    assert_eq!(resp.status(), 200, "{host}{path}");
    let body = resp.bytes().await.unwrap();
    if path.ends_with(".gz") {
        gunzip(&body)
    } else {
        body.to_vec()
    }
}

/// The text at `host` `path`, which must be found.
pub async fn text_as(app: &TestApp, host: &str, path: &str) -> String {
    let resp = get_as(app, host, path).await;
    assert_eq!(resp.status(), 200, "{host}{path}");
    resp.text().await.unwrap()
}

pub fn header<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

/// How long a test waits for something to happen (a change to reach the service, a server to
/// come up). Generous: it bounds a wait, it asserts no timing.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// Polls `probe` until `done` holds for what it returns, or [`PATIENCE`] has passed; returns
/// the last value either way, so the caller's assertion says what was seen. `awaited` names
/// what the test waits for, in the log of a test that gave up.
pub async fn eventually<T, F, Fut>(awaited: &str, mut probe: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let value = probe().await;
        if done(&value) {
            return value;
        }
        if tokio::time::Instant::now() >= deadline {
            eprintln!("gave up after {PATIENCE:?} waiting for {awaited}");
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A Googlebot User-Agent, as Google's crawler sends it.
pub const GOOGLEBOT: &str =
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
