//! The crawl log (`ACCESS_LOG_ADDR`): the web server's access log, received as syslog over UDP,
//! turned into what crawlers did on the whole site — each search crawler's coverage of the
//! listed URLs, the URLs waiting for its recrawl, its freshness, the paths it fetched that no
//! sitemap lists — and every crawler's robots.txt violations.
//!
//! # Layout
//!
//! - [`syslog`] and [`line`]: a datagram's lines unframed and parsed into a [`line::Fetch`].
//! - `socket`: the UDP socket, bound with a receive buffer sized for bursts, and the kernel's
//!   count of its drops.
//! - `intake`: the reading task, kept apart from parsing: reads only the datagrams of the
//!   senders it trusts (`ACCESS_LOG_SENDERS`; any other is dropped unread and counted) and
//!   queues them with their arrival time in a bounded queue (full: dropped and counted).
//! - `receiver`: the parsing task; counts every line (`parsed`, `unparsed`, `ignored`,
//!   `out_of_window`), gets each crawler's request its verdict from [`crate::verify`] without
//!   waiting, and queues it for the writer in a bounded queue (full: dropped and counted,
//!   memory stays flat).
//! - `writer`: batches of the queue written to `sitemapd_crawls` and `sitemapd_crawl_paths`
//!   (see [`crate::store`]), by two writers so one looks up while the other writes.
//! - `crawls.rs`: the batch's rows of `sitemapd_crawls` (fetches and freshness per entry).
//! - [`paths`]: the paths counted beside the listed URLs (outside the sitemaps, disallowed).
//! - [`report`]: the summary the status page reads, remade in the background.
//!
//! Which crawler a line names is the registry's ([`Registry::classify`], or the signer a Web Bot
//! Auth signature names); crawlers of purpose `search` get coverage, recrawl and freshness, from
//! the fetches their verdict ([`crate::crawlers::Trust::counts_as_own`]) lets count; crawlers
//! whose operators document that they ignore robots.txt are exempt from the compliance report.

mod crawls;
mod intake;
pub mod line;
pub mod metrics;
pub mod paths;
mod receiver;
pub mod report;
mod socket;
pub mod syslog;
mod writer;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use ipnet::IpNet;

use tokio::sync::mpsc;

use crate::crawlers::Registry;
use crate::site::Site;
use crate::verify::Verifier;
pub use metrics::CrawlLogMetrics;
use report::{CrawlReport, Reporter};
use writer::Writer;

/// Crawler lines waiting for the writer at most: over two seconds at 20,000 lines a second, a
/// few megabytes. Beyond it lines are dropped and counted.
pub const QUEUE_LINES: usize = 50_000;

/// Where the crawl log listens and whom it believes (`ACCESS_LOG_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// `ACCESS_LOG_ADDR`: the UDP address the web server sends its access log to.
    pub addr: SocketAddr,
    /// `ACCESS_LOG_SENDERS`: the senders whose datagrams are read; any other's are dropped
    /// unread and counted.
    pub senders: Vec<IpNet>,
    /// `ACCESS_LOG_MAX_SKEW_SECS`: how far a line's time may be from its arrival, either way;
    /// a line outside is counted and not stored.
    pub max_skew: Duration,
}

impl Listen {
    /// Whether datagrams from `peer` are read (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn trusts(&self, peer: std::net::IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.senders.iter().any(|net| net.contains(&peer))
    }

    /// Whether a line dated `at` that arrived at `arrival` (unix seconds) is within
    /// [`Listen::max_skew`] of it, either way.
    pub fn in_window(&self, at: i64, arrival: i64) -> bool {
        at.abs_diff(arrival) <= self.max_skew.as_secs()
    }

    /// The time a signature in a line dated `at` that arrived at `arrival` is checked at: the
    /// line's, but never before the window's start, so no signature captured long ago verifies
    /// again in a backdated line.
    pub fn signature_time(&self, at: i64, arrival: i64) -> i64 {
        let earliest = arrival.saturating_sub_unsigned(self.max_skew.as_secs());
        at.max(earliest)
    }

    /// Says at start whom a socket beyond loopback believes: anyone who can reach it may send.
    fn announce(&self, local: SocketAddr) {
        if local.ip().is_loopback() {
            return;
        }
        let senders: Vec<String> = self.senders.iter().map(IpNet::to_string).collect();
        let senders = senders.join(",");
        if self.senders.iter().all(|net| net.addr().is_loopback()) {
            tracing::warn!(addr = %local, %senders, "the access log listens beyond loopback but reads loopback senders only (ACCESS_LOG_SENDERS): datagrams from other hosts are dropped and counted");
        } else {
            tracing::info!(addr = %local, %senders, "the access log listens beyond loopback; it reads only these senders (ACCESS_LOG_SENDERS)");
        }
    }
}

/// The running crawl log: where it listens and its last report.
pub struct CrawlLog {
    local_addr: SocketAddr,
    last: Arc<RwLock<Arc<CrawlReport>>>,
}

/// The crawl log's tasks; they stop when this is dropped.
pub struct CrawlLogTasks(Vec<tokio::task::JoinHandle<()>>);

impl Drop for CrawlLogTasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Why the crawl log could not start.
#[derive(Debug, thiserror::Error)]
#[error("ACCESS_LOG_ADDR={addr}: cannot listen for the access log")]
pub struct CrawlLogError {
    pub addr: SocketAddr,
    #[source]
    pub cause: std::io::Error,
}

impl CrawlLog {
    /// Binds `listen.addr` and starts receiving, writing and reporting for `sites`, knowing
    /// crawlers by `registry` and telling true ones from forged ones by `verifier`.
    pub async fn start(
        listen: Listen,
        sites: Vec<Arc<Site>>,
        routed_by_host: bool,
        registry: Arc<Registry>,
        verifier: Arc<Verifier>,
        metrics: CrawlLogMetrics,
    ) -> Result<(Arc<Self>, CrawlLogTasks), CrawlLogError> {
        let addr = listen.addr;
        let bound = socket::bind(addr).map_err(|cause| CrawlLogError { addr, cause })?;
        let local_addr = bound
            .socket
            .local_addr()
            .map_err(|cause| CrawlLogError { addr, cause })?;
        metrics.receive_buffer.set(bound.receive_buffer as i64);
        let (queue, lines) = mpsc::channel(QUEUE_LINES);
        let last = Arc::new(RwLock::new(Arc::new(CrawlReport::default())));
        let lines: writer::Queue = Arc::new(tokio::sync::Mutex::new(lines));
        let spellings = Arc::new(writer::Spellings::default());
        let writers: Vec<_> = (0..writer::WRITERS)
            .map(|n| {
                let writer = Writer::new(
                    sites.clone(),
                    registry.clone(),
                    verifier.is_on(),
                    metrics.clone(),
                    routed_by_host,
                    spellings.clone(),
                );
                tokio::spawn(writer.run(lines.clone(), n == 0))
            })
            .collect();
        let reporter = Reporter {
            sites,
            registry: registry.clone(),
            metrics: metrics.clone(),
            last: last.clone(),
        };
        let (to_parse, datagrams) = intake::queue();
        let mut tasks = vec![
            tokio::spawn(intake::read(
                bound.socket,
                listen.clone(),
                to_parse,
                metrics.clone(),
            )),
            tokio::spawn(receiver::parse(
                datagrams,
                listen.clone(),
                registry,
                receiver::Onward::new(verifier, queue, metrics.clone()),
            )),
            tokio::spawn(bound.drops.watch(metrics)),
            tokio::spawn(reporter.run()),
        ];
        tasks.extend(writers);
        let tasks = CrawlLogTasks(tasks);
        tracing::info!(addr = %local_addr, "receiving the access log");
        listen.announce(local_addr);
        socket::announce(bound.receive_buffer);
        Ok((Arc::new(Self { local_addr, last }), tasks))
    }

    /// Where the access log is received (the port chosen when `ACCESS_LOG_ADDR` asked for 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The last report made (empty until the first).
    pub fn report(&self) -> Arc<CrawlReport> {
        crate::sync::read(&self.last).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen(max_skew: u64) -> Listen {
        Listen {
            addr: "127.0.0.1:0".parse().unwrap(),
            senders: vec!["127.0.0.1/32".parse().unwrap()],
            max_skew: Duration::from_secs(max_skew),
        }
    }

    #[test]
    fn a_line_is_in_its_window_up_to_the_skew_either_way() {
        let listen = listen(300);
        let arrival = 1_800_000_000;
        for at in [arrival, arrival - 300, arrival + 300] {
            assert!(listen.in_window(at, arrival), "{at}");
        }
        for at in [arrival - 301, arrival + 301, 0, i64::MAX, i64::MIN] {
            assert!(!listen.in_window(at, arrival), "{at}");
        }
    }

    #[test]
    fn a_signature_is_never_checked_before_the_windows_start() {
        let listen = listen(300);
        let arrival = 1_800_000_000;
        assert_eq!(listen.signature_time(arrival - 100, arrival), arrival - 100);
        assert_eq!(listen.signature_time(arrival + 100, arrival), arrival + 100);
        assert_eq!(
            listen.signature_time(arrival - 30 * 86_400, arrival),
            arrival - 300
        );
    }

    #[test]
    fn only_listed_senders_are_trusted_mapped_addresses_as_ipv4() {
        let listen = listen(300);
        assert!(listen.trusts("127.0.0.1".parse().unwrap()));
        assert!(listen.trusts("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!listen.trusts("127.0.0.2".parse().unwrap()));
        assert!(!listen.trusts("::1".parse().unwrap()));
    }
}
