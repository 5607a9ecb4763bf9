//! Crawler requests whose verdict is not known yet: the request hands them to a bounded queue and
//! goes on; one task waits for the [`Verifier`]'s verdicts (a few lookups at a time) and records
//! each request in the [`Ledger`] under its verdict. A request never waits: with the queue full
//! it is recorded as unverified at once and the drop is counted
//! (`sitemapd_crawler_verdicts_dropped_total`).

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use futures::stream::StreamExt;
use tokio::sync::mpsc;

use crate::crawlers::{CrawlerId, Ledger, Trust};
use crate::site::Site;
use crate::verify::Verifier;

/// Requests waiting for their verdict, at most.
pub const QUEUE: usize = 4096;
/// Verdicts awaited at once.
pub const AT_ONCE: usize = 16;

/// One crawler request whose verdict is awaited.
struct Pending {
    crawler: CrawlerId,
    addr: IpAddr,
    site: Arc<Site>,
    file: Cow<'static, str>,
    status: u16,
    at: i64,
}

/// Records crawler requests in the ledger under their verdict. Dropping it ends its task once
/// the requests queued are recorded.
#[derive(Debug)]
pub struct Verdicts {
    ledger: Arc<Ledger>,
    verifier: Arc<Verifier>,
    queue: mpsc::Sender<Pending>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("crawler", &self.crawler)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Verdicts {
    /// Starts the task that awaits verdicts (on the current runtime).
    pub fn start(ledger: Arc<Ledger>, verifier: Arc<Verifier>) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(record_when_decided(
            waiting,
            ledger.clone(),
            verifier.clone(),
        ));
        Self {
            ledger,
            verifier,
            queue,
        }
    }

    /// The verifier the verdicts come from.
    pub fn verifier(&self) -> &Arc<Verifier> {
        &self.verifier
    }

    /// Records that `crawler` (`None`: other), from `addr`, was answered `status` for `file` of
    /// `site` at `at`: now when its verdict is known (or it is "other"), else once the verifier
    /// decides. Never waits.
    pub fn record(
        &self,
        crawler: Option<CrawlerId>,
        addr: IpAddr,
        site: &Arc<Site>,
        file: Cow<'static, str>,
        status: u16,
        at: i64,
    ) {
        let Some(crawler) = crawler else {
            self.ledger
                .record(None, Trust::Unverified, &site.key, &file, status, at);
            return;
        };
        if let Some(trust) = self.verifier.cached(crawler, addr) {
            self.ledger
                .record(Some(crawler), trust, &site.key, &file, status, at);
            return;
        }
        let pending = Pending {
            crawler,
            addr,
            site: site.clone(),
            file,
            status,
            at,
        };
        if let Err(e) = self.queue.try_send(pending) {
            let pending = match e {
                mpsc::error::TrySendError::Full(p) | mpsc::error::TrySendError::Closed(p) => p,
            };
            self.ledger.metrics().verdicts_dropped.inc();
            self.ledger.record(
                Some(crawler),
                Trust::Unverified,
                &pending.site.key,
                &pending.file,
                status,
                at,
            );
        }
    }
}

/// Awaits the verdict of each queued request, [`AT_ONCE`] at a time, and records it.
async fn record_when_decided(
    waiting: mpsc::Receiver<Pending>,
    ledger: Arc<Ledger>,
    verifier: Arc<Verifier>,
) {
    receiver_stream(waiting)
        .map(|pending| {
            let verifier = verifier.clone();
            async move {
                let trust = verifier.verdict(pending.crawler, pending.addr).await;
                (pending, trust)
            }
        })
        .buffer_unordered(AT_ONCE)
        .for_each(|(pending, trust)| {
            ledger.record(
                Some(pending.crawler),
                trust,
                &pending.site.key,
                &pending.file,
                pending.status,
                pending.at,
            );
            std::future::ready(())
        })
        .await;
}

/// The receiver as a stream.
fn receiver_stream<T: Send + 'static>(
    mut receiver: mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}
