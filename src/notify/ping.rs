//! The sitemap ping: a GET of `SITEMAP_PING_URL`, a template whose `{sitemap}` becomes the
//! percent-encoded URL of the sitemap index that changed.
//!
//! Search engines have retired their ping endpoints (Google in 2023); this is for one's own
//! hooks and for services that still accept it. A burst of index changes gives one GET per
//! interval: pings of an index already waiting collapse into the waiting one.

use std::collections::VecDeque;

use futures::future::BoxFuture;
use reqwest::Client;

use super::delivery::{self, Attempt};
use super::NotifyMetrics;
use crate::notify::PingTemplate;

/// Distinct index URLs that may wait at once (one per site; more means something is wrong).
const PENDING_CAP: usize = 1_000;

/// One GET: the index it is for, and the filled-in URL.
#[derive(Debug, Clone)]
pub struct Ping {
    index_url: String,
    url: String,
}

/// The ping target of the delivery task.
pub struct Outbox {
    client: Client,
    template: PingTemplate,
    host: String,
    /// Index URLs waiting, oldest first, each once.
    pending: VecDeque<String>,
    metrics: NotifyMetrics,
}

impl Outbox {
    pub fn new(client: Client, template: PingTemplate, metrics: NotifyMetrics) -> Self {
        Self {
            client,
            host: template.host(),
            template,
            pending: VecDeque::new(),
            metrics,
        }
    }
}

impl delivery::Outbox for Outbox {
    type Item = String;
    type Batch = Ping;
    const TARGET: &'static str = "ping";

    fn add(&mut self, index_url: String) {
        if self.pending.contains(&index_url) {
            return;
        }
        if self.pending.len() >= PENDING_CAP {
            tracing::warn!(target: "sitemapd::notify", dropped = %self.pending[0], "too many pings waiting; the oldest was dropped");
            self.pending.pop_front();
        }
        self.pending.push_back(index_url);
        self.metrics.waiting(Self::TARGET, self.pending.len());
    }

    fn take(&mut self) -> Option<Ping> {
        let index_url = self.pending.pop_front()?;
        self.metrics.waiting(Self::TARGET, self.pending.len());
        Some(Ping {
            url: self.template.url_for(&index_url),
            index_url,
        })
    }

    fn pending(&self) -> usize {
        self.pending.len()
    }

    /// A newer ping of the same index replaces one waiting for its retry.
    fn supersedes(&self, ping: &Ping) -> bool {
        self.pending.contains(&ping.index_url)
    }

    fn deliver(&self, ping: &Ping) -> BoxFuture<'static, Attempt> {
        let request = self.client.get(&ping.url);
        Box::pin(async move { delivery::judge(request.send().await).await })
    }

    fn describe(&self, ping: &Ping) -> String {
        format!("ping to {} for {}", self.host, ping.index_url)
    }

    fn delivered(&mut self, _ping: &Ping) {
        self.metrics.pings.inc();
        self.metrics.succeeded(Self::TARGET);
    }

    fn attempt_failed(&mut self) {
        self.metrics.failed(Self::TARGET);
    }

    fn dropped(&mut self, _ping: &Ping) {}

    fn drop_pending(&mut self) -> usize {
        self.metrics.waiting(Self::TARGET, 0);
        std::mem::take(&mut self.pending).len()
    }
}
