//! The UDP receiver: every datagram's lines are unframed, parsed and classified here, counted,
//! and crawlers' requests handed to the writer through a bounded queue. A full queue drops the
//! line and counts it: under a flood memory stays flat and the loss is visible.

use std::sync::Arc;

use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use super::crawlers::{Crawlers, Known};
use super::line::{self, Fetch};
use super::metrics::CrawlLogMetrics;
use super::syslog;

/// Largest datagram read; a longer one is truncated by the socket (and then fails to parse).
const DATAGRAM_BYTES: usize = 65_536;

/// A crawler's request, as the writer receives it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub fetch: Fetch,
    pub crawler: Known,
}

/// Receives until the task is dropped.
pub async fn receive(
    socket: UdpSocket,
    crawlers: Arc<Crawlers>,
    queue: mpsc::Sender<Seen>,
    metrics: CrawlLogMetrics,
) {
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
            take_line(text, &crawlers, &queue, &metrics);
        }
    }
}

/// Counts one line and queues it when it is a crawler's GET or HEAD.
fn take_line(
    text: &str,
    crawlers: &Crawlers,
    queue: &mpsc::Sender<Seen>,
    metrics: &CrawlLogMetrics,
) {
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
    if queue.try_send(Seen { fetch, crawler }).is_err() {
        metrics.dropped.inc();
    }
}
