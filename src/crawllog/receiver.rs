//! The parsing task: the lines of every datagram the reading task ([`super::intake`]) queued
//! are unframed, parsed and classified here, counted, and crawlers' requests handed to the
//! writer through a bounded queue. A full queue drops the line and counts it: under a flood
//! memory stays flat and the loss is visible.
//!
//! A line dated further from its arrival than `ACCESS_LOG_MAX_SKEW_SECS`, either way, is
//! counted (`out_of_window`) and not stored: a line dated 2099 would keep its URL out of
//! "waiting for recrawl" for ever, one backdated would replay an old signature.
//!
//! A line whose Web Bot Auth headers name a registry signer is that signer's crawler, whatever
//! its User-Agent says; its signature is checked as the request path checks one, at the line's
//! time but never before its arrival minus the window ([`Listen::signature_time`]). Each
//! crawler's request gets its verdict here without stalling the parse: a verdict the
//! verification engine knows now goes with the line at once; otherwise the line waits off the
//! loop ([`Verifier::decide`]) and is queued when its verdict arrives.
//! When too many claims already wait, a line is counted unverified (as the engine answers
//! lookups beyond its rate) and `sitemapd_access_log_verify_busy_lines_total` shows it.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::intake::Datagrams;
use super::line::{self, Fetch, LoggedSignature};
use super::metrics::CrawlLogMetrics;
use super::syslog;
use super::Listen;
use crate::crawlers::{CrawlerId, Registry, Trust};
use crate::verify::{Claim, Decided, Message, SignatureHeaders, Signed, Verifier};

/// A crawler's request, as the writer receives it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub fetch: Fetch,
    /// The registry crawler the line names.
    pub crawler: CrawlerId,
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

    /// Queues the line with its verdict, now or once the lookups end; never waits. Its
    /// signature is checked at `signature_time` ([`Listen::signature_time`]).
    fn send(&self, fetch: Fetch, crawler: CrawlerId, signed: Option<Signed>, signature_time: i64) {
        let claim = Claim {
            crawler,
            addr: fetch.client,
            signed,
            at: signature_time,
        };
        let onward = self.clone();
        let decided = self.verifier.decide(claim, move |verdict| {
            onward.queue_line(Seen {
                fetch,
                crawler,
                trust: verdict.trust,
            })
        });
        if decided == Decided::Busy {
            self.metrics.verify_busy.inc();
        }
    }

    /// The line's signature when its Web Bot Auth headers name a registry signer: the base is
    /// rebuilt from what the line kept (method, Host, target and these headers).
    fn signed(&self, fetch: &Fetch, logged: &LoggedSignature) -> Option<Signed> {
        let field = |name: &str| match name {
            "signature-agent" => logged.agent.clone(),
            "signature-input" => Some(logged.input.clone()),
            "signature" => logged.signature.clone(),
            "user-agent" => Some(fetch.user_agent.clone()),
            _ => None,
        };
        let message = Message {
            method: &fetch.method,
            authority: &fetch.host,
            target: &fetch.target,
            field: &field,
        };
        let headers = SignatureHeaders {
            agent: logged.agent.as_deref(),
            input: &logged.input,
            signature: logged.signature.as_deref(),
        };
        self.verifier.signed(headers, &message)
    }

    fn queue_line(&self, seen: Seen) {
        if self.queue.try_send(seen).is_err() {
            self.metrics.dropped.inc();
        }
    }
}

/// Parses every datagram queued until the reading task ends.
pub async fn parse(
    mut datagrams: Datagrams,
    listen: Listen,
    registry: Arc<Registry>,
    onward: Onward,
) {
    while let Some(datagram) = datagrams.next().await {
        let text = String::from_utf8_lossy(&datagram.bytes);
        for line in text.split('\n').filter(|l| !l.trim().is_empty()) {
            take_line(line, datagram.arrival, &listen, &registry, &onward);
        }
    }
}

/// Counts one line that arrived at `arrival` (unix seconds) and queues it when it is a
/// crawler's GET or HEAD dated within `listen`'s window of its arrival.
fn take_line(text: &str, arrival: i64, listen: &Listen, registry: &Registry, onward: &Onward) {
    let metrics = &onward.metrics;
    let (fetch, logged) = match line::parse_signed(syslog::message(text)) {
        Ok(parsed) => parsed,
        Err(e) => {
            metrics.line("unparsed");
            tracing::debug!(error = %e, line = %text.chars().take(200).collect::<String>(), "access log line not parsed");
            return;
        }
    };
    if !listen.in_window(fetch.at, arrival) {
        metrics.line("out_of_window");
        tracing::debug!(
            at = fetch.at,
            arrival,
            "access log line dated outside ACCESS_LOG_MAX_SKEW_SECS of its arrival"
        );
        return;
    }
    if !matches!(fetch.method.as_str(), "GET" | "HEAD") {
        metrics.line("ignored");
        return;
    }
    let signed = logged.and_then(|logged| onward.signed(&fetch, &logged));
    let crawler = match &signed {
        Some(signed) => registry.checked(signed.crawler),
        None => registry.classify(&fetch.user_agent),
    };
    let Some(crawler) = crawler else {
        metrics.line("ignored");
        return;
    };
    metrics.line("parsed");
    let signature_time = listen.signature_time(fetch.at, arrival);
    onward.send(fetch, crawler, signed, signature_time);
}
