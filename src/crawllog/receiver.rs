//! The UDP receiver: every datagram's lines are unframed, parsed and classified here, counted,
//! and crawlers' requests handed to the writer through a bounded queue. A full queue drops the
//! line and counts it: under a flood memory stays flat and the loss is visible.
//!
//! Each crawler's request gets its verdict here without stalling the socket: a verdict the
//! verification engine knows now ([`Verifier::cached`]) goes with the line at once; otherwise
//! the line waits off the loop ([`Verifier::later`]) and is queued when its verdict arrives.
//! When too many claims already wait, a line is counted unverified (as the engine answers
//! lookups beyond its rate) and `sitemapd_access_log_verify_busy_lines_total` shows it.

use std::sync::Arc;

use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use super::crawlers::{Crawlers, Known};
use super::line::{self, Fetch};
use super::metrics::CrawlLogMetrics;
use super::syslog;
use crate::crawlers::Trust;
use crate::verify::Verifier;

/// Largest datagram read; a longer one is truncated by the socket (and then fails to parse).
const DATAGRAM_BYTES: usize = 65_536;

/// A crawler's request, as the writer receives it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub fetch: Fetch,
    pub crawler: Known,
    /// What the client address proves of the crawler.
    pub trust: Trust,
}

/// Where a parsed crawler line goes: its verdict, then the writer's queue.
#[derive(Clone)]
pub struct Onward {
    pub verifier: Arc<Verifier>,
    pub queue: mpsc::Sender<Seen>,
    pub metrics: CrawlLogMetrics,
}

impl Onward {
    pub fn new(
        verifier: Arc<Verifier>,
        queue: mpsc::Sender<Seen>,
        metrics: CrawlLogMetrics,
    ) -> Self {
        Self {
            verifier,
            queue,
            metrics,
        }
    }

    /// Queues the line with its verdict, now or once the lookup ends; never waits.
    fn send(&self, fetch: Fetch, crawler: Known) {
        if let Some(trust) = self.verifier.cached(crawler.id, fetch.client) {
            return self.queue_line(Seen {
                fetch,
                crawler,
                trust,
            });
        }
        let (id, client) = (crawler.id, fetch.client);
        let onward = self.clone();
        let waited = self.verifier.later(id, client, move |trust| {
            onward.queue_line(Seen {
                fetch,
                crawler,
                trust,
            })
        });
        if !waited {
            self.metrics.verify_busy.inc();
        }
    }

    fn queue_line(&self, seen: Seen) {
        if self.queue.try_send(seen).is_err() {
            self.metrics.dropped.inc();
        }
    }
}

/// Receives until the task is dropped.
pub async fn receive(socket: UdpSocket, crawlers: Arc<Crawlers>, onward: Onward) {
    let mut buffer = vec![0u8; DATAGRAM_BYTES];
    loop {
        let length = match socket.recv_from(&mut buffer).await {
            Ok((length, _peer)) => length,
            Err(e) => {
                // A UDP socket reports an earlier send's ICMP error here; keep receiving.
                tracing::debug!(error = %e, "access log socket");
                continue;
            }
        };
        let datagram = String::from_utf8_lossy(&buffer[..length]);
        for text in datagram.split('\n').filter(|l| !l.trim().is_empty()) {
            take_line(text, &crawlers, &onward);
        }
    }
}

/// Counts one line and queues it when it is a crawler's GET or HEAD.
fn take_line(text: &str, crawlers: &Crawlers, onward: &Onward) {
    let metrics = &onward.metrics;
    let fetch = match line::parse(syslog::message(text)) {
        Ok(fetch) => fetch,
        Err(e) => {
            metrics.line("unparsed");
            tracing::debug!(error = %e, line = %text.chars().take(200).collect::<String>(), "access log line not parsed");
            return;
        }
    };
    let crawler = crawlers
        .classify(&fetch.user_agent)
        .filter(|_| matches!(fetch.method.as_str(), "GET" | "HEAD"));
    let Some(crawler) = crawler else {
        metrics.line("ignored");
        return;
    };
    metrics.line("parsed");
    onward.send(fetch, crawler);
}
