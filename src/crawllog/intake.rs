//! Reading the socket, kept apart from parsing: the reading task only receives, drops the
//! datagrams of senders not in `ACCESS_LOG_SENDERS` (unread, counted), notes each datagram's
//! arrival and pushes it to a bounded queue ([`QUEUE_DATAGRAMS`] datagrams and
//! [`QUEUE_BYTES`] at most) that the parsing task ([`super::receiver`]) empties. A full queue
//! drops the datagram and counts it; the socket is drained again at once, so a slow parse costs
//! queued datagrams, never the kernel's buffer first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use super::metrics::CrawlLogMetrics;
use super::Listen;

/// Largest datagram read; a longer one is truncated by the socket (and then fails to parse).
const DATAGRAM_BYTES: usize = 65_536;
/// Datagrams waiting to be parsed at most: over a second of a 20,000 lines a second log.
pub const QUEUE_DATAGRAMS: usize = 32_768;
/// Bytes of datagrams waiting to be parsed at most, whatever their sizes.
pub const QUEUE_BYTES: usize = 32 << 20;

/// A datagram as read: its bytes, and when it arrived (unix seconds).
#[derive(Debug)]
pub struct Datagram {
    pub arrival: i64,
    pub bytes: Bytes,
}

/// The queue between reading and parsing, bounded in datagrams (the channel's) and in bytes.
pub struct Queue {
    sender: mpsc::Sender<Datagram>,
    backlog: Arc<Backlog>,
}

/// The queue's other end: what the parsing task receives.
pub struct Datagrams {
    receiver: mpsc::Receiver<Datagram>,
    backlog: Arc<Backlog>,
}

/// Bytes queued and not parsed yet.
#[derive(Debug, Default)]
struct Backlog(AtomicUsize);

impl Backlog {
    /// Takes room for `bytes`; false (nothing taken) when the queue would hold more than
    /// [`QUEUE_BYTES`].
    fn take(&self, bytes: usize) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                let after = queued + bytes;
                (after <= QUEUE_BYTES).then_some(after)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.0.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// A new queue between the reading task and the parsing task.
pub fn queue() -> (Queue, Datagrams) {
    let (sender, receiver) = mpsc::channel(QUEUE_DATAGRAMS);
    let backlog = Arc::new(Backlog::default());
    (
        Queue {
            sender,
            backlog: backlog.clone(),
        },
        Datagrams { receiver, backlog },
    )
}

impl Queue {
    /// Queues `datagram` without waiting; false (dropped) when the queue is full.
    fn push(&self, datagram: Datagram) -> bool {
        let bytes = datagram.bytes.len();
        if !self.backlog.take(bytes) {
            return false;
        }
        if self.sender.try_send(datagram).is_err() {
            self.backlog.give_back(bytes);
            return false;
        }
        true
    }
}

impl Datagrams {
    /// The next datagram; `None` once the reading task has ended.
    pub async fn next(&mut self) -> Option<Datagram> {
        let datagram = self.receiver.recv().await?;
        self.backlog.give_back(datagram.bytes.len());
        Some(datagram)
    }
}

/// Reads `socket` until the task is dropped: a trusted sender's datagram is queued with its
/// arrival time, any other dropped unread (the first stranger named in the log); both losses are
/// counted.
pub async fn read(socket: UdpSocket, listen: Listen, queue: Queue, metrics: CrawlLogMetrics) {
    let mut buffer = vec![0u8; DATAGRAM_BYTES];
    let mut stranger_named = false;
    loop {
        let (length, peer) = match socket.recv_from(&mut buffer).await {
            Ok(received) => received,
            Err(e) => {
                // A UDP socket reports an earlier send's ICMP error here; keep receiving.
                tracing::debug!(error = %e, "access log socket");
                continue;
            }
        };
        if !listen.trusts(peer.ip()) {
            metrics.untrusted.inc();
            if !std::mem::replace(&mut stranger_named, true) {
                tracing::warn!(sender = %peer.ip(), "access log datagram from a sender not in ACCESS_LOG_SENDERS dropped unread; further ones are only counted (sitemapd_access_log_untrusted_datagrams_total)");
            }
            continue;
        }
        let datagram = Datagram {
            arrival: chrono::Utc::now().timestamp(),
            bytes: Bytes::copy_from_slice(&buffer[..length]),
        };
        if !queue.push(datagram) {
            metrics.queue_dropped.inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(bytes: usize) -> Datagram {
        Datagram {
            arrival: 0,
            bytes: Bytes::from(vec![b'x'; bytes]),
        }
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_gives_room_back_when_parsed() {
        let (queue, mut datagrams) = queue();
        let big = DATAGRAM_BYTES;
        let fit = QUEUE_BYTES / big;
        for _ in 0..fit {
            assert!(queue.push(datagram(big)));
        }
        assert!(!queue.push(datagram(1)), "full in bytes");
        assert_eq!(datagrams.next().await.unwrap().bytes.len(), big);
        assert!(queue.push(datagram(big)), "room again once one is parsed");
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_datagrams() {
        let (queue, _datagrams) = queue();
        for _ in 0..QUEUE_DATAGRAMS {
            assert!(queue.push(datagram(1)));
        }
        assert!(!queue.push(datagram(1)));
        assert_eq!(queue.backlog.0.load(Ordering::Acquire), QUEUE_DATAGRAMS);
    }
}
