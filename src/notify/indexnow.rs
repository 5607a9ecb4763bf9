//! IndexNow (<https://www.indexnow.org/documentation>): the key, the host set a submission
//! names, and the outbox that dedupes changed URLs and batches them into JSON POSTs.
//!
//! A POST names one host, the key and the keyLocation where the key file proves ownership,
//! and at most [`MAX_URLS_PER_REQUEST`] URLs of that host. Pending URLs are capped at
//! [`PENDING_CAP`]; beyond it the oldest are dropped with a warning, since a later full sitemap
//! fetch by the engine catches up anyway.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use reqwest::header::CONTENT_TYPE;
use reqwest::Client;
use serde::Serialize;
use url::Url;

use super::delivery::{self, Attempt};
use super::{NotifyError, NotifyMetrics};
use crate::notify::IndexNowKey;
use crate::sitemap::BaseUrl;

/// Most URLs one IndexNow request may carry (the protocol's limit).
pub const MAX_URLS_PER_REQUEST: usize = 10_000;
/// Most URLs waiting to be submitted, all hosts together.
pub const PENDING_CAP: usize = 100_000;

/// What one IndexNow request names besides its URLs: the host, the key, and keyLocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostSet {
    host: String,
    key: IndexNowKey,
    key_location: Url,
}

impl HostSet {
    /// The set for the host of `key_location`, the URL where the key file is served.
    pub fn new(key: IndexNowKey, key_location: Url) -> Result<Self, NotifyError> {
        let refuse = |expected| NotifyError::KeyLocation {
            url: key_location.to_string(),
            expected,
        };
        if !matches!(key_location.scheme(), "http" | "https") {
            return Err(refuse("an http:// or https:// URL"));
        }
        let host = match key_location.host_str() {
            Some(host) if !host.is_empty() => host.to_string(),
            _ => return Err(refuse("a URL with a host")),
        };
        Ok(Self {
            host,
            key,
            key_location,
        })
    }

    /// The usual set of a site: its host, keyLocation `<base>/<key>.txt`.
    pub fn for_site(base: &BaseUrl, key: &IndexNowKey) -> Self {
        let mut key_location = base.url().clone();
        key_location.set_path(&format!("{}{}", base.path(), key.file_name()));
        Self {
            host: base.host().to_string(),
            key: key.clone(),
            key_location,
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn key(&self) -> &IndexNowKey {
        &self.key
    }

    pub fn key_location(&self) -> &Url {
        &self.key_location
    }

    /// Whether IndexNow would accept `url` under this set: absolute http(s) on the same host.
    fn covers(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|u| {
            matches!(u.scheme(), "http" | "https") && u.host_str() == Some(self.host.as_str())
        })
    }
}

/// URLs handed to the outbox by [`super::Notifier::submit`].
#[derive(Debug)]
pub struct Submission {
    pub hosts: HostSet,
    pub urls: Vec<String>,
}

/// The JSON body of one request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    host: &'a str,
    key: &'a str,
    key_location: &'a str,
    url_list: Vec<&'a str>,
}

/// One request's worth: the host, how many URLs, and the serialized body.
#[derive(Debug, Clone)]
pub struct Batch {
    host: String,
    urls: usize,
    body: Bytes,
}

/// The URLs of one host waiting for their turn, oldest first, each once.
#[derive(Debug)]
struct HostQueue {
    hosts: HostSet,
    urls: VecDeque<Arc<str>>,
    queued: HashSet<Arc<str>>,
}

impl HostQueue {
    fn new(hosts: HostSet) -> Self {
        Self {
            hosts,
            urls: VecDeque::new(),
            queued: HashSet::new(),
        }
    }

    /// Queues `url` unless it is already waiting; says whether it was new.
    fn push(&mut self, url: String) -> bool {
        let url: Arc<str> = url.into();
        if !self.queued.insert(url.clone()) {
            return false;
        }
        self.urls.push_back(url);
        true
    }

    fn pop_oldest(&mut self) -> Option<Arc<str>> {
        let url = self.urls.pop_front()?;
        self.queued.remove(&url);
        Some(url)
    }
}

/// Pending URLs of every host, deduplicated and capped.
#[derive(Debug)]
pub struct Pending {
    queues: Vec<HostQueue>,
    total: usize,
    cap: usize,
    /// Queue whose turn is next, so one busy host cannot starve the others.
    turn: usize,
}

/// What one [`Pending::add`] did with its URLs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Added {
    pub queued: usize,
    pub duplicates: usize,
    /// Of another host, or not absolute http(s).
    pub refused: usize,
    /// Oldest pending URLs dropped to stay within the cap.
    pub evicted: usize,
}

impl Pending {
    pub fn new(cap: usize) -> Self {
        Self {
            queues: Vec::new(),
            total: 0,
            cap: cap.max(1),
            turn: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn add(&mut self, submission: Submission) -> Added {
        let mut added = Added::default();
        let index = self.queue_of(submission.hosts);
        for url in submission.urls {
            let queue = &mut self.queues[index];
            if !queue.hosts.covers(&url) {
                added.refused += 1;
            } else if queue.push(url) {
                added.queued += 1;
                self.total += 1;
            } else {
                added.duplicates += 1;
            }
        }
        added.evicted = self.evict_over_cap();
        self.queues.retain(|q| !q.urls.is_empty());
        added
    }

    fn queue_of(&mut self, hosts: HostSet) -> usize {
        match self.queues.iter().position(|q| q.hosts == hosts) {
            Some(index) => index,
            None => {
                self.queues.push(HostQueue::new(hosts));
                self.queues.len() - 1
            }
        }
    }

    /// Drops the oldest URLs of the longest queue until the total is within the cap.
    fn evict_over_cap(&mut self) -> usize {
        let mut evicted = 0;
        while self.total > self.cap {
            let longest = self.queues.iter_mut().max_by_key(|q| q.urls.len());
            match longest.and_then(HostQueue::pop_oldest) {
                Some(_) => {
                    self.total -= 1;
                    evicted += 1;
                }
                None => break,
            }
        }
        evicted
    }

    /// Up to `max` of the oldest URLs of the host whose turn it is, with their host set.
    pub fn take(&mut self, max: usize) -> Option<(HostSet, Vec<Arc<str>>)> {
        if self.queues.is_empty() {
            return None;
        }
        let index = self.turn % self.queues.len();
        let queue = &mut self.queues[index];
        let count = queue.urls.len().min(max);
        let urls: Vec<Arc<str>> = queue.urls.drain(..count).collect();
        for url in &urls {
            queue.queued.remove(url);
        }
        let hosts = queue.hosts.clone();
        self.total -= urls.len();
        if queue.urls.is_empty() {
            self.queues.remove(index);
        } else {
            self.turn = index + 1;
        }
        Some((hosts, urls))
    }
}

/// Serializes one request body.
fn body(hosts: &HostSet, urls: &[Arc<str>]) -> Bytes {
    let body = Body {
        host: &hosts.host,
        key: hosts.key.as_str(),
        key_location: hosts.key_location.as_str(),
        url_list: urls.iter().map(|u| &**u).collect(),
    };
    // Serializing strings into a Vec cannot fail.
    serde_json::to_vec(&body).unwrap_or_default().into()
}

/// The IndexNow target of the delivery task.
pub struct Outbox {
    client: Client,
    endpoint: Url,
    pending: Pending,
    metrics: NotifyMetrics,
}

impl Outbox {
    pub fn new(client: Client, endpoint: Url, cap: usize, metrics: NotifyMetrics) -> Self {
        Self {
            client,
            endpoint,
            pending: Pending::new(cap),
            metrics,
        }
    }
}

impl delivery::Outbox for Outbox {
    type Item = Submission;
    type Batch = Batch;
    const TARGET: &'static str = "indexnow";

    fn add(&mut self, submission: Submission) {
        let host = submission.hosts.host.clone();
        let added = self.pending.add(submission);
        if added.refused > 0 {
            tracing::warn!(
                target: "sitemapd::notify", %host, refused = added.refused,
                "URLs not absolute http(s) URLs of this host were not submitted to IndexNow"
            );
        }
        if added.evicted > 0 {
            tracing::warn!(
                target: "sitemapd::notify", evicted = added.evicted, cap = self.pending.cap,
                "too many URLs waiting for IndexNow; the oldest were dropped"
            );
        }
        self.metrics
            .dropped_urls
            .inc_by((added.refused + added.evicted) as u64);
        self.metrics.waiting(Self::TARGET, self.pending.len());
    }

    fn take(&mut self) -> Option<Batch> {
        let (hosts, urls) = self.pending.take(MAX_URLS_PER_REQUEST)?;
        self.metrics.waiting(Self::TARGET, self.pending.len());
        Some(Batch {
            body: body(&hosts, &urls),
            host: hosts.host,
            urls: urls.len(),
        })
    }

    fn pending(&self) -> usize {
        self.pending.len()
    }

    fn deliver(&self, batch: &Batch) -> BoxFuture<'static, Attempt> {
        let request = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json; charset=utf-8")
            .body(batch.body.clone());
        Box::pin(async move { delivery::judge(request.send().await).await })
    }

    fn describe(&self, batch: &Batch) -> String {
        format!("{} URLs for {}", batch.urls, batch.host)
    }

    fn delivered(&mut self, batch: &Batch) {
        self.metrics.submitted_urls.inc_by(batch.urls as u64);
        self.metrics.succeeded(Self::TARGET);
    }

    fn attempt_failed(&mut self) {
        self.metrics.failed(Self::TARGET);
    }

    fn dropped(&mut self, batch: &Batch) {
        self.metrics.dropped_urls.inc_by(batch.urls as u64);
    }

    fn drop_pending(&mut self) -> usize {
        let dropped = self.pending.len();
        self.pending = Pending::new(self.pending.cap);
        self.metrics.waiting(Self::TARGET, 0);
        self.metrics.dropped_urls.inc_by(dropped as u64);
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> IndexNowKey {
        IndexNowKey::parse("a1b2c3d4").unwrap()
    }

    fn site(base: &str) -> HostSet {
        HostSet::for_site(&BaseUrl::parse(base).unwrap(), &key())
    }

    fn submission(hosts: &HostSet, urls: &[&str]) -> Submission {
        Submission {
            hosts: hosts.clone(),
            urls: urls.iter().map(|u| u.to_string()).collect(),
        }
    }

    fn strs(urls: &[Arc<str>]) -> Vec<&str> {
        urls.iter().map(|u| &**u).collect()
    }

    #[test]
    fn key_file_is_served_under_the_base_path() {
        let hosts = site("https://example.com/catalog");
        assert_eq!(hosts.host(), "example.com");
        assert_eq!(
            hosts.key_location().as_str(),
            "https://example.com/catalog/a1b2c3d4.txt"
        );
    }

    #[test]
    fn a_key_location_must_be_an_http_url() {
        let ftp = Url::parse("ftp://example.com/a1b2c3d4.txt").unwrap();
        assert!(HostSet::new(key(), ftp).is_err());
        let https = Url::parse("https://www.example.com/k/a1b2c3d4.txt").unwrap();
        assert_eq!(
            HostSet::new(key(), https).unwrap().host(),
            "www.example.com"
        );
    }

    #[test]
    fn duplicates_of_pending_urls_are_ignored() {
        let hosts = site("https://e.com/");
        let mut pending = Pending::new(100);
        let first = pending.add(submission(
            &hosts,
            &["https://e.com/a", "https://e.com/b", "https://e.com/a"],
        ));
        let second = pending.add(submission(&hosts, &["https://e.com/b", "https://e.com/c"]));
        assert_eq!((first.queued, first.duplicates), (2, 1));
        assert_eq!((second.queued, second.duplicates), (1, 1));
        let (_, urls) = pending.take(10).unwrap();
        assert_eq!(
            strs(&urls),
            ["https://e.com/a", "https://e.com/b", "https://e.com/c"]
        );
        assert!(pending.is_empty());
        // Once taken, a URL may be queued again: it changed again after its submission.
        assert_eq!(
            pending.add(submission(&hosts, &["https://e.com/a"])).queued,
            1
        );
    }

    #[test]
    fn urls_of_another_host_or_scheme_are_refused() {
        let hosts = site("https://e.com/");
        let mut pending = Pending::new(100);
        let added = pending.add(submission(
            &hosts,
            &[
                "https://other.com/a",
                "ftp://e.com/b",
                "/relative",
                "http://e.com/c",
            ],
        ));
        assert_eq!((added.queued, added.refused), (1, 3));
    }

    #[test]
    fn batches_hold_at_most_the_limit_oldest_first() {
        let hosts = site("https://e.com/");
        let urls: Vec<String> = (0..25).map(|i| format!("https://e.com/{i}")).collect();
        let mut pending = Pending::new(100);
        pending.add(Submission {
            hosts: hosts.clone(),
            urls,
        });
        let sizes: Vec<usize> = std::iter::from_fn(|| pending.take(10))
            .map(|(_, urls)| urls.len())
            .collect();
        assert_eq!(sizes, [10, 10, 5]);
    }

    #[test]
    fn hosts_take_turns_and_a_batch_names_one_host() {
        let a = site("https://a.com/");
        let b = site("https://b.com/");
        let mut pending = Pending::new(100);
        pending.add(submission(
            &a,
            &["https://a.com/1", "https://a.com/2", "https://a.com/3"],
        ));
        pending.add(submission(&b, &["https://b.com/1"]));
        let order: Vec<(String, Vec<String>)> = std::iter::from_fn(|| pending.take(2))
            .map(|(hosts, urls)| {
                (
                    hosts.host().to_string(),
                    urls.iter().map(|u| u.to_string()).collect(),
                )
            })
            .collect();
        let expected = [
            ("a.com", vec!["https://a.com/1", "https://a.com/2"]),
            ("b.com", vec!["https://b.com/1"]),
            ("a.com", vec!["https://a.com/3"]),
        ];
        let expected: Vec<(String, Vec<String>)> = expected
            .iter()
            .map(|(h, u)| (h.to_string(), u.iter().map(|s| s.to_string()).collect()))
            .collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn over_the_cap_the_oldest_urls_of_the_longest_queue_go() {
        let a = site("https://a.com/");
        let b = site("https://b.com/");
        let mut pending = Pending::new(4);
        pending.add(submission(&b, &["https://b.com/1"]));
        pending.add(submission(
            &a,
            &["https://a.com/1", "https://a.com/2", "https://a.com/3"],
        ));
        let added = pending.add(submission(&a, &["https://a.com/4", "https://a.com/5"]));
        assert_eq!((added.queued, added.evicted), (2, 2));
        assert_eq!(pending.len(), 4);
        let mut left = Vec::new();
        while let Some((_, urls)) = pending.take(10) {
            left.extend(urls.iter().map(|u| u.to_string()));
        }
        left.sort();
        assert_eq!(
            left,
            [
                "https://a.com/3",
                "https://a.com/4",
                "https://a.com/5",
                "https://b.com/1"
            ]
        );
        // An evicted URL is no longer a duplicate: it may be queued again.
        assert_eq!(pending.add(submission(&a, &["https://a.com/1"])).queued, 1);
    }

    #[test]
    fn the_body_names_host_key_key_location_and_urls() {
        let hosts = site("https://e.com/shop/");
        let urls: Vec<Arc<str>> = vec!["https://e.com/shop/a?x=1&y=\"2\"".into()];
        let json: serde_json::Value = serde_json::from_slice(&body(&hosts, &urls)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "host": "e.com",
                "key": "a1b2c3d4",
                "keyLocation": "https://e.com/shop/a1b2c3d4.txt",
                "urlList": ["https://e.com/shop/a?x=1&y=\"2\""],
            })
        );
    }
}
