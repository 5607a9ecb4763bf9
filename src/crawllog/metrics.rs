//! The crawl log's metrics: lines received by result, every loss where it happened (untrusted
//! senders, lines dropped under overload), failed writes, and the reports as gauges; and the
//! intake's counts as the status page shows them ([`Intake`]).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::Serialize;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `parsed` (a crawler's request), `unparsed`, `ignored` (not a registry crawler's),
    /// `out_of_window` (dated further from its arrival than `ACCESS_LOG_MAX_SKEW_SECS`).
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CrawlerLabels {
    pub site: String,
    pub group: String,
    pub crawler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QuantileLabels {
    pub site: String,
    pub group: String,
    pub crawler: String,
    pub quantile: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViolationLabels {
    pub site: String,
    pub crawler: String,
    pub verified: &'static str,
}

/// Counters and gauges of the crawl log; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct CrawlLogMetrics {
    pub lines: Family<ResultLabels, Counter>,
    /// Crawler lines lost because the writer was behind (the queue was full).
    pub dropped: Counter,
    /// Datagrams dropped unread: their sender is not in `ACCESS_LOG_SENDERS`.
    pub untrusted: Counter,
    /// Datagrams read and dropped because the queue to the parsing task was full.
    pub queue_dropped: Counter,
    /// Datagrams the kernel dropped for the socket (its receive buffer was full), as it counts
    /// them (Linux).
    pub socket_drops: Counter,
    /// The socket's receive buffer as the kernel granted it, in bytes.
    pub receive_buffer: Gauge,
    /// Crawler lines counted unverified because too many waited for a verdict.
    pub verify_busy: Counter,
    /// Crawler lines whose batch the database took.
    pub written: Counter,
    /// Batches the database did not take (their lines are lost).
    pub write_failures: Counter,
    pub fetched: Family<CrawlerLabels, Gauge>,
    pub listed: Family<CrawlerLabels, Gauge>,
    pub waiting: Family<CrawlerLabels, Gauge>,
    pub freshness: Family<QuantileLabels, Gauge>,
    pub violations: Family<ViolationLabels, Gauge>,
    /// How long the last report took to make, in milliseconds.
    pub report_ms: Gauge,
}

/// What came into the crawl log since the start and what was lost on the way, for the status
/// page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Intake {
    /// Lines of registry crawlers' GET and HEAD requests.
    pub parsed_lines: u64,
    pub unparsed_lines: u64,
    /// Lines of anything else (browsers, other methods).
    pub ignored_lines: u64,
    /// Lines dated further from their arrival than `ACCESS_LOG_MAX_SKEW_SECS`: not stored.
    pub out_of_window_lines: u64,
    /// Datagrams dropped unread: their sender is not in `ACCESS_LOG_SENDERS`.
    pub untrusted_datagrams: u64,
    /// Datagrams the kernel dropped for the socket: its receive buffer was full (Linux).
    pub socket_drops: u64,
    /// Datagrams dropped because the queue between reading and parsing was full.
    pub queue_dropped_datagrams: u64,
    /// The socket's receive buffer as the kernel granted it, in bytes.
    pub receive_buffer_bytes: u64,
    /// Crawler lines dropped because the database writer was behind.
    pub dropped_lines: u64,
    /// Crawler lines counted unverified because too many waited for a verdict.
    pub verify_busy_lines: u64,
}

impl CrawlLogMetrics {
    pub fn line(&self, result: &'static str) {
        self.lines.get_or_create(&ResultLabels { result }).inc();
    }

    fn lines_of(&self, result: &'static str) -> u64 {
        self.lines.get_or_create(&ResultLabels { result }).get()
    }

    /// The counts since the start.
    pub fn intake(&self) -> Intake {
        Intake {
            parsed_lines: self.lines_of("parsed"),
            unparsed_lines: self.lines_of("unparsed"),
            ignored_lines: self.lines_of("ignored"),
            out_of_window_lines: self.lines_of("out_of_window"),
            untrusted_datagrams: self.untrusted.get(),
            socket_drops: self.socket_drops.get(),
            queue_dropped_datagrams: self.queue_dropped.get(),
            receive_buffer_bytes: u64::try_from(self.receive_buffer.get()).unwrap_or_default(),
            dropped_lines: self.dropped.get(),
            verify_busy_lines: self.verify_busy.get(),
        }
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "access_log_lines",
            "Access log lines received (ACCESS_LOG_ADDR), by result: parsed (a crawler's), unparsed, ignored (no registry crawler), out_of_window (dated too far from its arrival; not stored)",
            self.lines.clone(),
        );
        registry.register(
            "access_log_dropped_lines",
            "Crawler lines of the access log dropped because the database writer was behind",
            self.dropped.clone(),
        );
        registry.register(
            "access_log_untrusted_datagrams",
            "Access log datagrams dropped unread because their sender is not in ACCESS_LOG_SENDERS",
            self.untrusted.clone(),
        );
        registry.register(
            "access_log_socket_drops",
            "Access log datagrams the kernel dropped for the socket because its receive buffer was full (Linux: /proc/net/udp)",
            self.socket_drops.clone(),
        );
        registry.register(
            "access_log_queue_dropped_datagrams",
            "Access log datagrams read and dropped because the queue to the parser was full",
            self.queue_dropped.clone(),
        );
        registry.register(
            "access_log_receive_buffer_bytes",
            "The access log socket's receive buffer as the kernel granted it (at most twice net.core.rmem_max)",
            self.receive_buffer.clone(),
        );
        registry.register(
            "access_log_verify_busy_lines",
            "Crawler lines of the access log counted unverified because too many waited for a verdict",
            self.verify_busy.clone(),
        );
        registry.register(
            "access_log_written_lines",
            "Crawler lines of the access log written to the database (their batch was taken)",
            self.written.clone(),
        );
        registry.register(
            "access_log_write_failures",
            "Batches of crawler fetches the database did not take",
            self.write_failures.clone(),
        );
        registry.register(
            "crawl_coverage_fetched_urls",
            "Listed URLs each search crawler fetched in the last 30 days",
            self.fetched.clone(),
        );
        registry.register(
            "crawl_coverage_listed_urls",
            "Listed URLs, the whole coverage is measured against",
            self.listed.clone(),
        );
        registry.register(
            "crawl_waiting_for_recrawl_urls",
            "Listed URLs whose lastmod is newer than the crawler's last fetch of them",
            self.waiting.clone(),
        );
        registry.register(
            "crawl_freshness_seconds",
            "Time from a URL's lastmod to the crawler's first fetch after it (last 30 days), by quantile",
            self.freshness.clone(),
        );
        registry.register(
            "crawl_robots_violations",
            "Fetches of paths the robots.txt in force disallowed for the crawler, by verification",
            self.violations.clone(),
        );
        registry.register(
            "crawl_report_milliseconds",
            "How long the crawl log's last report took the database to make",
            self.report_ms.clone(),
        );
    }
}
