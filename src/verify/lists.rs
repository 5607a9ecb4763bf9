//! The published range lists in use: loaded from the database at start, fetched from their
//! URLs (at start, then daily), stored again after each good fetch. A fetch that fails or
//! gives a bad or empty list keeps the last good list and shows the error.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::ranges::{self, RangeSet};
use super::RangeList;
use crate::store::{Store, StoredRanges};

/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest list read (Google's is a few dozen KiB).
const MAX_BODY: usize = 8 << 20;

/// Why a list could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetch failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the server answered {0}")]
    Status(reqwest::StatusCode),
    #[error("the list is larger than {MAX_BODY} bytes")]
    TooLarge,
    #[error("unusable list: {0}")]
    Parse(#[from] ranges::ParseError),
}

/// The client lists are fetched with: [`FETCH_TIMEOUT`], sitemapd's User-Agent.
pub fn fetch_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .user_agent(concat!("sitemapd/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

/// The body `client` gets at `url`: a success status, at most [`MAX_BODY`] bytes.
pub async fn get_bounded(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, FetchError> {
    let mut response = client.get(url).send().await?;
    if !response.status().is_success() {
        return Err(FetchError::Status(response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[derive(Debug, Default)]
struct ListState {
    set: Option<Arc<RangeSet>>,
    fetched_at: Option<i64>,
    error: Option<String>,
}

/// What one crawler's lists say of an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeAnswer {
    /// The address is in a list.
    Inside,
    /// Every list is loaded and none holds it.
    Outside,
    /// A list was never loaded: the lists say nothing.
    Unknown,
    /// The crawler publishes no list.
    NoLists,
}

/// Every URL's list, shared by the request path and the fetcher.
pub struct Lists {
    lists: RwLock<BTreeMap<String, ListState>>,
    store: Option<Store>,
    client: reqwest::Client,
}

impl std::fmt::Debug for Lists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lists")
            .field("lists", &self.states())
            .finish_non_exhaustive()
    }
}

impl Lists {
    /// The lists of `urls`, none loaded yet.
    pub fn new(urls: impl IntoIterator<Item = String>, store: Option<Store>) -> Self {
        let lists = urls
            .into_iter()
            .map(|url| (url, ListState::default()))
            .collect();
        let client = fetch_client();
        Self {
            lists: RwLock::new(lists),
            store,
            client,
        }
    }

    /// Loads the copies kept in the database; a copy that cannot be read is an error shown.
    pub async fn load(&self) {
        let Some(store) = &self.store else { return };
        let stored = match store.crawler_ranges().await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(error = %crate::error::Chain(&e), "cannot read the stored crawler IP ranges");
                return;
            }
        };
        let mut lists = crate::sync::write(&self.lists);
        for row in stored {
            let Some(state) = lists.get_mut(&row.url) else {
                continue;
            };
            match ranges::from_text(&row.prefixes) {
                Ok(prefixes) => {
                    state.set = Some(Arc::new(RangeSet::new(&prefixes)));
                    state.fetched_at = Some(row.fetched_at);
                }
                Err(e) => state.error = Some(format!("stored copy unusable: {e}")),
            }
        }
    }

    /// Fetches every list once; each good one replaces the one in use and is stored. Lists that
    /// could not be fetched are logged in one line for the round (each list's error is on the
    /// status page, and in the debug log), so an offline machine is told once, not per list.
    pub async fn fetch_all(&self) {
        let urls: Vec<String> = self.read().keys().cloned().collect();
        let mut failed = Vec::new();
        for url in &urls {
            if let Err(error) = self.fetch_one(url).await {
                failed.push((url, error));
            }
        }
        if let Some((url, error)) = failed.first() {
            tracing::warn!(
                failed = failed.len(),
                lists = urls.len(),
                first = %url,
                error = %error,
                "crawler IP range lists not fetched; the last good lists stay (the status page lists each error)"
            );
        }
    }

    /// Fetches one list; `Err` is the error shown for it.
    async fn fetch_one(&self, url: &str) -> Result<(), String> {
        let fetched = self.download(url).await;
        let now = chrono::Utc::now().timestamp();
        let prefixes = match fetched {
            Ok(prefixes) => prefixes,
            Err(e) => {
                let error = crate::error::Chain(&e).to_string();
                tracing::debug!(url, error, "crawler IP ranges not fetched");
                if let Some(state) = self.write().get_mut(url) {
                    state.error = Some(error.clone());
                }
                return Err(error);
            }
        };
        let set = Arc::new(RangeSet::new(&prefixes));
        if let Some(state) = self.write().get_mut(url) {
            state.set = Some(set);
            state.fetched_at = Some(now);
            state.error = None;
        }
        if let Some(store) = &self.store {
            let row = StoredRanges {
                url: url.to_string(),
                fetched_at: now,
                prefixes: ranges::to_text(&prefixes),
            };
            if let Err(e) = store.save_crawler_ranges(&row).await {
                tracing::warn!(url, error = %crate::error::Chain(&e), "cannot store crawler IP ranges");
            }
        }
        Ok(())
    }

    async fn download(&self, url: &str) -> Result<Vec<ipnet::IpNet>, FetchError> {
        let body = get_bounded(&self.client, url).await?;
        Ok(ranges::parse_list(&body)?)
    }

    /// What `urls`' lists say of `addr`.
    pub fn check(&self, urls: &[String], addr: IpAddr) -> RangeAnswer {
        if urls.is_empty() {
            return RangeAnswer::NoLists;
        }
        let lists = self.read();
        let mut all_loaded = true;
        for url in urls {
            match lists.get(url).and_then(|state| state.set.as_ref()) {
                Some(set) if set.contains(addr) => return RangeAnswer::Inside,
                Some(_) => {}
                None => all_loaded = false,
            }
        }
        match all_loaded {
            true => RangeAnswer::Outside,
            false => RangeAnswer::Unknown,
        }
    }

    /// Each list's state, for the status page.
    pub fn states(&self) -> Vec<RangeList> {
        self.read()
            .iter()
            .map(|(url, state)| RangeList {
                url: url.clone(),
                fetched_at: state.fetched_at,
                prefixes: state.set.as_ref().map_or(0, |set| set.len()),
                error: state.error.clone(),
            })
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, ListState>> {
        crate::sync::read(&self.lists)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, ListState>> {
        crate::sync::write(&self.lists)
    }
}
