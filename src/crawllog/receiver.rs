//! The UDP receiver: every datagram's lines are unframed, parsed and classified here, counted,
//! and crawlers' requests handed to the writer through a bounded queue. A full queue drops the
//! line and counts it: under a flood memory stays flat and the loss is visible.
//!
//! Each crawler's request gets its verdict here without stalling the socket: a verdict the
//! verification engine knows now ([`Verifier::cached`]) goes with the line at once; otherwise
//! the line waits off the loop for [`Verifier::verdict`], at most [`PENDING_VERDICTS`] lines at
//! a time, and is queued when its verdict arrives. Beyond that bound a line is counted
//! unverified (as the engine answers lookups beyond its rate) and
//! `sitemapd_access_log_verify_busy_lines_total` shows it.

use std::sync::Arc;

use tokio::net::UdpSocket;
use tokio::sync::{mpsc, Semaphore};

use super::crawlers::{Crawlers, Known};
use super::line::{self, Fetch};
use super::metrics::CrawlLogMetrics;
use super::syslog;
use crate::crawlers::Trust;
use crate::verify::Verifier;

/// Most crawler lines waiting for a verdict at once (each a few hundred bytes).
pub const PENDING_VERDICTS: usize = 1024;

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
    pub pending: Arc<Semaphore>,
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
            pending: Arc::new(Semaphore::new(PENDING_VERDICTS)),
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
        let Ok(permit) = self.pending.clone().try_acquire_owned() else {
            self.metrics.verify_busy.inc();
            let trust = Trust::Unverified;
            return self.queue_line(Seen {
                fetch,
                crawler,
                trust,
            });
        };
        let onward = self.clone();
        tokio::spawn(async move {
            let trust = onward.verifier.verdict(crawler.id, fetch.client).await;
            onward.queue_line(Seen {
                fetch,
                crawler,
                trust,
            });
            drop(permit);
        });
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
