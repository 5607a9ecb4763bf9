//! One endpoint's task: takes the lists saves left in its queue, in order, and sends them, a
//! few `PURGE`s at a time or one JSON POST per list, each request retried with exponential
//! backoff (honouring `Retry-After`) before it is counted as failed, and noted for the
//! endpoint's one log line per period ([`super::failures`]). With replicas, a list is
//! kept until the followers caught up: `PURGE`s are sent again then, the POST only then; lists
//! received meanwhile are sent as they come.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::HOST;
use reqwest::{Client, Method, StatusCode};
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};
use url::Url;

use super::failures::{Failure, FailureLog};
use super::{Batch, Endpoint, PurgeMetrics};
use crate::notify::delivery::{judge, Attempt, Backoff};

/// `PURGE`s in flight at once for one endpoint.
const PARALLEL: usize = 8;
/// Tries of one request: 1 + 2 + … + 60 s of backoff, about four minutes.
const TRIES: u32 = 8;
const BACKOFF: Backoff = Backoff {
    initial: Duration::from_secs(1),
    cap: Duration::from_secs(60),
};

/// What an endpoint's task sends with.
pub(super) struct Sender {
    pub endpoint: Endpoint,
    pub client: Client,
    pub metrics: PurgeMetrics,
    /// Lists not sent yet (see [`super::Purger::drain`]).
    pub pending: Arc<watch::Sender<usize>>,
    /// The endpoint's failures not logged yet.
    pub failures: Arc<FailureLog>,
}

impl Sender {
    /// Sends every list the queue receives until every sender is gone (and the lists kept for
    /// the followers are sent).
    pub async fn run(self, mut queue: mpsc::Receiver<Arc<Batch>>) {
        let mut kept: VecDeque<(Instant, Arc<Batch>)> = VecDeque::new();
        let mut open = true;
        while open || !kept.is_empty() {
            let due = kept.front().map(|(at, _)| *at);
            let log_due = self.failures.due();
            tokio::select! {
                () = sleep_until(log_due.unwrap_or_else(Instant::now)), if log_due.is_some() => {
                    self.failures.log_if_ended();
                }
                received = queue.recv(), if open => match received {
                    Some(batch) => self.received(batch, &mut kept).await,
                    None => open = false,
                },
                () = sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                    if let Some((_, batch)) = kept.pop_front() {
                        self.send(&batch).await;
                        self.sent();
                    }
                }
            }
        }
    }

    /// Sends `batch` now (a POST only without replicas), and keeps it for the followers.
    async fn received(&self, batch: Arc<Batch>, kept: &mut VecDeque<(Instant, Arc<Batch>)>) {
        let post = matches!(self.endpoint, Endpoint::Post(_));
        if !post || batch.followers_caught_up.is_none() {
            self.send(&batch).await;
        }
        match batch.followers_caught_up {
            Some(at) => kept.push_back((at, batch)),
            None => self.sent(),
        }
    }

    /// One list is done with (see [`super::Purger::drain`]).
    fn sent(&self) {
        self.pending.send_modify(|n| *n = n.saturating_sub(1));
    }

    async fn send(&self, batch: &Batch) {
        match &self.endpoint {
            Endpoint::Purge(cache) => {
                futures::stream::iter(&batch.urls)
                    .for_each_concurrent(PARALLEL, |url| self.purge_one(cache, url))
                    .await
            }
            Endpoint::Post(relay) => self.post_list(relay, batch).await,
        }
    }

    /// `PURGE <prefix><path>` at the cache, with the file's `Host`.
    async fn purge_one(&self, cache: &Url, file: &str) {
        let Some((host, target)) = purge_target(cache, file) else {
            tracing::warn!(url = file, "not a URL to purge");
            return;
        };
        let purge = Method::from_bytes(b"PURGE").expect("PURGE is a method token");
        let delivered = self
            .with_retries(|| {
                let request = self
                    .client
                    .request(purge.clone(), target.clone())
                    .header(HOST, host.clone());
                async move {
                    match request.send().await {
                        // Nothing cached under it (nginx's cache purge, Squid): nothing to drop.
                        Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                            Attempt::Delivered
                        }
                        other => judge(other).await,
                    }
                }
            })
            .await;
        self.count(delivered, 1);
    }

    /// One JSON POST of every URL of the list.
    async fn post_list(&self, relay: &Url, batch: &Batch) {
        let delivered = self
            .with_retries(|| {
                let request = self.client.post(relay.clone()).json(&batch.urls);
                async move { judge(request.send().await).await }
            })
            .await;
        self.count(delivered, batch.urls.len());
    }

    /// Makes the request `attempt` builds until it is delivered, refused, or [`TRIES`] ran
    /// out; how it ended.
    async fn with_retries<F, Fut>(&self, attempt: F) -> Result<(), Failure>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Attempt>,
    {
        let mut tried = 1;
        loop {
            match attempt().await {
                Attempt::Delivered => return Ok(()),
                Attempt::Rejected { reason } => return Err(Failure::Refused(reason)),
                Attempt::Retry { reason, .. } if tried >= TRIES => {
                    return Err(Failure::GaveUp(reason))
                }
                Attempt::Retry {
                    reason,
                    retry_after,
                } => {
                    self.metrics.retries.inc();
                    let pause = BACKOFF.delay(tried, retry_after);
                    tracing::debug!(endpoint = %self.endpoint.shown(), %reason, pause_secs = pause.as_secs(), "purge failed; trying again");
                    tokio::time::sleep(pause).await;
                    tried += 1;
                }
            }
        }
    }

    /// Counts `urls` purged or failed; a failure is noted for the endpoint's next log line.
    fn count(&self, delivered: Result<(), Failure>, urls: usize) {
        match delivered {
            Ok(()) => self.metrics.count("purged", urls),
            Err(failure) => {
                self.metrics.count("failed", urls);
                self.failures.note(&failure, urls);
            }
        }
    }
}

/// The `Host` of `file` (an absolute URL) and the URL of its purge at `cache`: the cache's
/// origin, the cache URL's path as a prefix, then the file's path.
fn purge_target(cache: &Url, file: &str) -> Option<(String, Url)> {
    let file = Url::parse(file).ok()?;
    let host = match file.port() {
        Some(port) => format!("{}:{port}", file.host_str()?),
        None => file.host_str()?.to_string(),
    };
    let mut target = cache.clone();
    let prefix = cache.path().trim_end_matches('/');
    target.set_path(&format!("{prefix}{}", file.path()));
    Some((host, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_purge_goes_to_the_cache_with_the_files_host_and_path() {
        let cache = Url::parse("http://127.0.0.1:6081").unwrap();
        let (host, target) =
            purge_target(&cache, "https://www.example.com/sitemap-2.xml.gz").unwrap();
        assert_eq!(host, "www.example.com");
        assert_eq!(target.as_str(), "http://127.0.0.1:6081/sitemap-2.xml.gz");
        let prefixed = Url::parse("http://cache:8080/purge/").unwrap();
        let (host, target) = purge_target(&prefixed, "http://shop.test:8000/robots.txt").unwrap();
        assert_eq!(host, "shop.test:8000");
        assert_eq!(target.as_str(), "http://cache:8080/purge/robots.txt");
    }
}
