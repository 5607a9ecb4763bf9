//! The key directories of the registry's signers, each known by its URL (an origin's
//! `<origin>/.well-known/http-message-signatures-directory`, or the URL the registry names):
//! fetched only for those URLs, one fetch at a time per directory however many requests wait
//! for it, never following a redirect, at most [`MAX_BODY`] within [`FETCH_TIMEOUT`], and kept as the response's cache
//! headers say between [`MIN_FRESH`] and [`MAX_FRESH`]. A failed fetch keeps the last good keys
//! (and is not tried again for [`RETRY_AFTER`]); a directory fetched without a key drops it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE};
use tokio::sync::watch;

use super::keys::{Keys, KeysError};
use crate::sync::lock;

pub use crate::crawlers::signer::WELL_KNOWN;
/// The media type of a key directory.
pub const MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";
/// The largest directory read.
pub const MAX_BODY: usize = 64 * 1024;
/// How long a fetch may take, all of it.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A directory is kept at least this long, whatever its headers say.
pub const MIN_FRESH: Duration = Duration::from_secs(5 * 60);
/// A directory is kept at most this long.
pub const MAX_FRESH: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a directory without cache headers is kept.
pub const DEFAULT_FRESH: Duration = Duration::from_secs(60 * 60);
/// How long after a failed fetch the next is tried (requests meanwhile use the last good keys).
pub const RETRY_AFTER: Duration = MIN_FRESH;

/// Why a directory was not fetched.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("fetch failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the server answered {0} (redirects are not followed)")]
    Status(reqwest::StatusCode),
    #[error("the content type {0:?} is not a key directory's")]
    ContentType(String),
    #[error("the directory is larger than {MAX_BODY} bytes")]
    TooLarge,
    #[error("not a key directory: {0}")]
    Keys(#[from] KeysError),
}

/// What is known of one directory.
#[derive(Debug, Default)]
struct State {
    /// The last good keys; `None`: never fetched.
    keys: Option<Arc<Keys>>,
    /// Until when they are used without asking again.
    fresh_until: Option<Instant>,
    /// After a failed fetch: when the next may start.
    retry_at: Option<Instant>,
    /// The last fetch's error, if it failed.
    error: Option<String>,
    /// When the keys in use were fetched (unix seconds).
    fetched_at: Option<i64>,
}

/// The keys of a directory now, or that it must be fetched first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The keys to check with (maybe the last good ones while a failed fetch waits to retry).
    Keys(Arc<Keys>),
    /// A fetch failed and no keys were ever fetched.
    Unreachable,
    /// A fetch is due.
    Fetch,
}

/// One directory's state, for the status page.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DirectoryStatus {
    /// The origin of its URL.
    pub origin: String,
    /// The URL it is fetched from: what names the signers verified with it.
    pub url: String,
    /// Usable keys in use.
    pub keys: usize,
    /// When they were fetched (unix seconds); `None`: never.
    pub fetched_at: Option<i64>,
    pub error: Option<String>,
}

struct Directory {
    state: Mutex<State>,
    /// The fetch under way, which later requests wait for.
    in_flight: Mutex<Option<watch::Receiver<bool>>>,
}

/// Every registry signer's directory, by URL. Shared by the request path and the crawl log.
pub struct Directories {
    by_url: HashMap<String, Directory>,
    client: reqwest::Client,
    fetches: AtomicU64,
}

impl Directories {
    /// The directories at `urls` (of the registry's `signature_agent` values), none fetched.
    pub fn new(urls: impl IntoIterator<Item = String>) -> Self {
        let by_url = urls
            .into_iter()
            .map(|url| {
                let directory = Directory {
                    state: Mutex::default(),
                    in_flight: Mutex::default(),
                };
                (url, directory)
            })
            .collect();
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(std::sync::Arc::new(super::resolver::PublicOnly))
            .user_agent(concat!("sitemapd/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Self {
            by_url,
            client,
            fetches: AtomicU64::new(0),
        }
    }

    /// Whether `url` is a registry signer's directory (only those are ever fetched).
    pub fn knows(&self, url: &str) -> bool {
        self.by_url.contains_key(url)
    }

    /// The keys of the directory at `url` usable now, without fetching.
    pub fn lookup(&self, url: &str, now: Instant) -> Lookup {
        let Some(directory) = self.by_url.get(url) else {
            return Lookup::Unreachable;
        };
        let state = lock(&directory.state);
        let fresh = state.fresh_until.is_some_and(|until| now < until);
        let waiting = state.retry_at.is_some_and(|at| now < at);
        match &state.keys {
            Some(keys) if fresh || waiting => Lookup::Keys(keys.clone()),
            None if waiting => Lookup::Unreachable,
            _ => Lookup::Fetch,
        }
    }

    /// The keys of the directory at `url`, fetching it when due (joining a fetch under way).
    /// The fetch runs in a task of its own, so a caller that stops waiting leaves it to finish.
    pub async fn keys(self: &Arc<Self>, url: &str) -> Lookup {
        let Some(directory) = self.by_url.get(url) else {
            return Lookup::Unreachable;
        };
        let mut waiting = {
            let mut in_flight = lock(&directory.in_flight);
            match self.lookup(url, Instant::now()) {
                Lookup::Fetch => {}
                decided => return decided,
            }
            match in_flight.as_ref() {
                Some(waiting) => waiting.clone(),
                None => {
                    let (done, waiting) = watch::channel(false);
                    *in_flight = Some(waiting.clone());
                    let (directories, url) = (self.clone(), url.to_string());
                    tokio::spawn(async move {
                        if let Some(directory) = directories.by_url.get(&url) {
                            directories.fetch(&url, directory).await;
                            *lock(&directory.in_flight) = None;
                        }
                        done.send_replace(true);
                    });
                    waiting
                }
            }
        };
        let _ = waiting.wait_for(|done| *done).await;
        self.after_fetch(url)
    }

    /// What a fetch just left: the keys, or unreachable.
    fn after_fetch(&self, url: &str) -> Lookup {
        match self.lookup(url, Instant::now()) {
            Lookup::Keys(keys) => Lookup::Keys(keys),
            _ => Lookup::Unreachable,
        }
    }

    /// Fetches one directory and keeps what it gave.
    async fn fetch(&self, url: &str, directory: &Directory) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let fetched = self.download(url).await;
        let now = Instant::now();
        let mut state = lock(&directory.state);
        match fetched {
            Ok((keys, fresh)) => {
                state.keys = Some(Arc::new(keys));
                state.fresh_until = Some(now + fresh);
                state.retry_at = None;
                state.error = None;
                state.fetched_at = Some(chrono::Utc::now().timestamp());
            }
            Err(e) => {
                let error = crate::error::Chain(&e).to_string();
                tracing::warn!(
                    url,
                    error,
                    "signature key directory not fetched; the last good keys stay"
                );
                state.retry_at = Some(now + RETRY_AFTER);
                state.error = Some(error);
            }
        }
    }

    async fn download(&self, url: &str) -> Result<(Keys, Duration), DirectoryError> {
        let mut response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, MEDIA_TYPE)
            .send()
            .await?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(DirectoryError::Status(response.status()));
        }
        let headers = response.headers();
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !is_directory_type(content_type) {
            return Err(DirectoryError::ContentType(content_type.to_string()));
        }
        let fresh = freshness(headers.get(CACHE_CONTROL).and_then(|v| v.to_str().ok()));
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(DirectoryError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok((Keys::from_jwks(&body)?, fresh))
    }

    /// Directory fetches started since the start.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Each directory's state, by URL.
    pub fn states(&self) -> Vec<DirectoryStatus> {
        let mut states: Vec<DirectoryStatus> = self
            .by_url
            .iter()
            .map(|(url, directory)| {
                let state = lock(&directory.state);
                let origin = url::Url::parse(url).map(|u| u.origin().ascii_serialization());
                DirectoryStatus {
                    origin: origin.unwrap_or_default(),
                    url: url.clone(),
                    keys: state.keys.as_ref().map_or(0, |keys| keys.len()),
                    fetched_at: state.fetched_at,
                    error: state.error.clone(),
                }
            })
            .collect();
        states.sort_by(|a, b| a.url.cmp(&b.url));
        states
    }
}

/// The directory's media type, or the JSON ones servers commonly send for it.
fn is_directory_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    [MEDIA_TYPE, "application/jwk-set+json", "application/json"]
        .iter()
        .any(|t| essence.eq_ignore_ascii_case(t))
}

/// How long to keep a directory: its `Cache-Control` `max-age` (none: `no-store` or `no-cache`
/// keep it the least), within [`MIN_FRESH`] and [`MAX_FRESH`].
fn freshness(cache_control: Option<&str>) -> Duration {
    let Some(text) = cache_control else {
        return DEFAULT_FRESH;
    };
    let mut fresh = None;
    for directive in text.split(',').map(str::trim) {
        let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
        match name.to_ascii_lowercase().as_str() {
            "no-store" | "no-cache" => return MIN_FRESH,
            "max-age" => fresh = value.trim_matches('"').parse::<u64>().ok(),
            _ => {}
        }
    }
    fresh
        .map_or(DEFAULT_FRESH, Duration::from_secs)
        .clamp(MIN_FRESH, MAX_FRESH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_headers_are_kept_between_five_minutes_and_a_day() {
        assert_eq!(freshness(None), DEFAULT_FRESH);
        assert_eq!(freshness(Some("max-age=60")), MIN_FRESH);
        assert_eq!(
            freshness(Some("public, max-age=3600")),
            Duration::from_secs(3600)
        );
        assert_eq!(freshness(Some("max-age=604800")), MAX_FRESH);
        assert_eq!(freshness(Some("no-store")), MIN_FRESH);
    }

    #[test]
    fn the_directory_type_and_json_are_accepted() {
        assert!(is_directory_type(MEDIA_TYPE));
        assert!(is_directory_type("application/json; charset=utf-8"));
        assert!(!is_directory_type("text/html"));
    }

    #[test]
    fn a_directory_not_in_the_registry_is_never_fetched() {
        let chatgpt = format!("https://chatgpt.com{WELL_KNOWN}");
        let directories = Directories::new([chatgpt.clone()]);
        assert!(directories.knows(&chatgpt));
        assert_eq!(
            directories.lookup(&format!("https://evil.example{WELL_KNOWN}"), Instant::now()),
            Lookup::Unreachable
        );
        assert_eq!(directories.lookup(&chatgpt, Instant::now()), Lookup::Fetch);
    }

    /// Forgets when the keys were fetched and when a fetch failed: the next look fetches.
    fn make_due(directories: &Directories, url: &str) {
        let mut state = lock(&directories.by_url[url].state);
        state.fresh_until = None;
        state.retry_at = None;
    }

    #[tokio::test]
    async fn a_failed_fetch_keeps_the_last_good_keys_and_a_directory_without_them_drops_them() {
        let key = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE"}]}"#;
        let answer = Arc::new(Mutex::new((200u16, key.to_string())));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/keys.json", listener.local_addr().unwrap());
        let shared = answer.clone();
        let app = axum::Router::new().fallback(move || {
            let (status, body) = shared.lock().unwrap().clone();
            let status = axum::http::StatusCode::from_u16(status).unwrap();
            async move { (status, [("content-type", MEDIA_TYPE)], body) }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        let directories = Arc::new(Directories::new([url.clone()]));
        let keys = |lookup: Lookup| match lookup {
            Lookup::Keys(keys) => keys.len(),
            other => panic!("no keys: {other:?}"),
        };

        assert_eq!(keys(directories.keys(&url).await), 1);
        make_due(&directories, &url);
        *answer.lock().unwrap() = (503, String::new());
        assert_eq!(
            keys(directories.keys(&url).await),
            1,
            "the last good keys stay"
        );
        assert!(directories.states()[0].error.is_some());
        assert_eq!(
            keys(directories.lookup(&url, Instant::now())),
            1,
            "and are used, without asking again, until the retry"
        );
        make_due(&directories, &url);
        *answer.lock().unwrap() = (200, r#"{"keys":[]}"#.to_string());
        assert_eq!(
            keys(directories.keys(&url).await),
            0,
            "a directory without the key drops it"
        );
        assert_eq!(directories.fetches(), 3);
    }
}
