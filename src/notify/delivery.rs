//! Delivery rules shared by every notification target: the HTTP client, how a response is
//! judged, backoff, pacing, and the background task that applies them to an [`Outbox`].
//!
//! The task owns its queue, so no lock is shared with callers: they send commands through a
//! channel, and the task keeps receiving them while a request is in flight or a backoff runs,
//! which is when new items coalesce into the next request.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Client, Response, StatusCode};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tokio::time::{sleep_until, Instant};

/// Whole-request bound: a stuck endpoint cannot hold a batch (or the drain) for long.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest `Retry-After` obeyed; a larger value (or a date years ahead) is read as this.
pub const RETRY_AFTER_LIMIT: Duration = Duration::from_secs(3600);
/// How much of an error response is read to log its first line.
const ERROR_BODY_LIMIT: usize = 4096;
const LOGGED_LINE_LIMIT: usize = 200;

/// The one client of all targets: rustls with the webpki roots, timeouts, our User-Agent,
/// and no redirects (a POST must not turn into a GET somewhere else; a 3xx is reported).
pub fn client() -> Result<Client, reqwest::Error> {
    Client::builder()
        .user_agent(concat!("sitemapd/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// How one request went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Accepted (any 2xx; IndexNow answers 200 or 202).
    Delivered,
    /// Worth trying again later: 408, 429, 5xx, or no answer at all.
    Retry {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Refused for good (400, 403, 422, any other status): retrying cannot help.
    Rejected { reason: String },
}

/// Turns the outcome of a request into an [`Attempt`], reading the start of an error body.
pub async fn judge(result: Result<Response, reqwest::Error>) -> Attempt {
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            return Attempt::Retry {
                reason: describe_transport_error(&error),
                retry_after: None,
            }
        }
    };
    let status = response.status();
    if status.is_success() {
        return Attempt::Delivered;
    }
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let reason = format!("HTTP {}: {}", status.as_u16(), first_line(response).await);
    if is_retryable(status) {
        Attempt::Retry {
            reason,
            retry_after,
        }
    } else {
        Attempt::Rejected { reason }
    }
}

fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

fn describe_transport_error(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    // The source chain says why (refused, DNS, TLS); reqwest's own Display repeats the URL.
    let mut cause = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(inner) = cause {
        detail = inner.to_string();
        cause = inner.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

/// The first non-blank line of the body, read up to a few KiB, shortened for a log line.
async fn first_line(mut response: Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    let text = String::from_utf8_lossy(&body);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    line.unwrap_or("(empty body)")
        .chars()
        .take(LOGGED_LINE_LIMIT)
        .collect()
}

/// `Retry-After` as a delay: delta-seconds or an HTTP date, at most [`RETRY_AFTER_LIMIT`].
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let delay = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .unwrap_or(Duration::ZERO),
    };
    Some(delay.min(RETRY_AFTER_LIMIT))
}

/// Exponential backoff between attempts of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub cap: Duration,
}

impl Backoff {
    /// Wait after the `failures`-th failed attempt (1-based): initial, ×2 each time, capped;
    /// never shorter than what the server asked for with `Retry-After`.
    pub fn delay(&self, failures: u32, retry_after: Option<Duration>) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        let exponential = self.initial.saturating_mul(1u32 << doublings).min(self.cap);
        exponential.max(retry_after.unwrap_or(Duration::ZERO))
    }
}

/// Pacing and retry rules of one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Least time between the starts of two requests.
    pub interval: Duration,
    pub backoff: Backoff,
    /// Attempts per request before it is dropped.
    pub max_attempts: u32,
}

const DEFAULT_BACKOFF: Backoff = Backoff {
    initial: Duration::from_secs(1),
    cap: Duration::from_secs(300),
};

impl Policy {
    /// IndexNow: 8 attempts span about four minutes of backoff (1 + 2 + … + 64 s).
    pub fn with_interval(interval: Duration) -> Self {
        Self {
            interval,
            backoff: DEFAULT_BACKOFF,
            max_attempts: 8,
        }
    }

    /// Pings: a few attempts; the next index change brings another ping anyway.
    pub fn for_pings(interval: Duration) -> Self {
        Self {
            max_attempts: 4,
            ..Self::with_interval(interval)
        }
    }
}

/// A target's queue and how its requests are made. The task in [`run`] decides when.
pub trait Outbox: Send + 'static {
    /// What callers hand in.
    type Item: Send + 'static;
    /// What one request carries; kept while it is retried.
    type Batch: Send + 'static;
    /// Name in logs and metrics.
    const TARGET: &'static str;

    fn add(&mut self, item: Self::Item);
    /// Takes the next request's worth of pending items, if any.
    fn take(&mut self) -> Option<Self::Batch>;
    /// Items waiting (not counting a batch in flight or waiting for its retry).
    fn pending(&self) -> usize;
    /// Whether a newer pending item makes a batch waiting for its retry pointless.
    fn supersedes(&self, _batch: &Self::Batch) -> bool {
        false
    }
    /// Makes one attempt at delivering `batch`.
    fn deliver(&self, batch: &Self::Batch) -> BoxFuture<'static, Attempt>;
    /// How `batch` reads in a log line, e.g. "120 URLs for www.example.com".
    fn describe(&self, batch: &Self::Batch) -> String;
    fn delivered(&mut self, batch: &Self::Batch);
    fn attempt_failed(&mut self);
    /// `batch` will not be sent (rejected, out of attempts, or the drain ran out of time).
    fn dropped(&mut self, batch: &Self::Batch);
    /// Drops every pending item when the drain runs out of time; returns how many.
    fn drop_pending(&mut self) -> usize;
}

/// What callers send to the task.
pub enum Command<T> {
    Add(T),
    Drain(Drain),
}

impl<T> std::fmt::Debug for Command<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Add(_) => "Add",
            Self::Drain(_) => "Drain",
        })
    }
}

/// Flush what is pending by `deadline`, then stop and fire `done`.
pub struct Drain {
    pub deadline: Instant,
    pub done: oneshot::Sender<()>,
}

/// When the next request may start. Both bounds hold while draining too: the interval is a
/// promise to the endpoint, and a shutdown is no reason to break it.
struct Schedule {
    /// Pacing: a request started at T allows the next at T + interval.
    paced_until: Instant,
    /// Backoff or `Retry-After` after a failure.
    backed_off_until: Instant,
}

impl Schedule {
    fn next_start(&self) -> Instant {
        self.paced_until.max(self.backed_off_until)
    }
}

/// A batch with the attempts already made for it.
struct Tracked<B> {
    batch: B,
    attempts: u32,
}

/// Runs `outbox` until every sender is gone and the queue is empty, or a drain completes.
pub async fn run<O: Outbox>(
    mut outbox: O,
    mut commands: UnboundedReceiver<Command<O::Item>>,
    policy: Policy,
) {
    let now = Instant::now();
    let mut schedule = Schedule {
        paced_until: now,
        backed_off_until: now,
    };
    let mut retry: Option<Tracked<O::Batch>> = None;
    let mut in_flight: Option<(Tracked<O::Batch>, BoxFuture<'static, Attempt>)> = None;
    let mut drains: Vec<Drain> = Vec::new();
    let mut open = true;
    loop {
        let idle = in_flight.is_none() && retry.is_none() && outbox.pending() == 0;
        if idle && (!drains.is_empty() || !open) {
            break;
        }
        let ready = in_flight.is_none() && (retry.is_some() || outbox.pending() > 0);
        let deadline = drains.iter().map(|d| d.deadline).min();
        if ready && deadline.is_some_and(|deadline| schedule.next_start() > deadline) {
            // The next request's turn comes after the drain must end: waiting is pointless.
            give_up_draining(&mut outbox, retry.take(), None);
            break;
        }
        tokio::select! {
            command = commands.recv(), if open => match command {
                Some(Command::Add(item)) => outbox.add(item),
                Some(Command::Drain(drain)) => drains.push(drain),
                None => open = false,
            },
            () = sleep_until(schedule.next_start()), if ready => {
                if let Some(next) = next_batch(&mut outbox, &mut retry) {
                    let attempt = outbox.deliver(&next.batch);
                    schedule.paced_until = Instant::now() + policy.interval;
                    in_flight = Some((next, attempt));
                }
            },
            attempt = poll_in_flight(&mut in_flight) => {
                if let Some((mut tracked, _)) = in_flight.take() {
                    tracked.attempts += 1;
                    retry = settle(&mut outbox, &policy, &mut schedule, tracked, attempt);
                }
            },
            () = sleep_until_some(deadline) => {
                give_up_draining(&mut outbox, retry.take(), in_flight.take());
                break;
            },
        }
    }
    // Closed before `done` fires, so a submit after the shutdown returns errs at once.
    commands.close();
    for drain in drains {
        let _ = drain.done.send(());
    }
}

/// The batch waiting for its retry, unless something newer supersedes it; else a fresh one.
fn next_batch<O: Outbox>(
    outbox: &mut O,
    retry: &mut Option<Tracked<O::Batch>>,
) -> Option<Tracked<O::Batch>> {
    match retry.take() {
        Some(waiting) if !outbox.supersedes(&waiting.batch) => Some(waiting),
        _ => outbox.take().map(|batch| Tracked { batch, attempts: 0 }),
    }
}

/// Records how an attempt went; returns the batch if it is to be tried again.
fn settle<O: Outbox>(
    outbox: &mut O,
    policy: &Policy,
    schedule: &mut Schedule,
    tracked: Tracked<O::Batch>,
    attempt: Attempt,
) -> Option<Tracked<O::Batch>> {
    let what = outbox.describe(&tracked.batch);
    let target = O::TARGET;
    match attempt {
        Attempt::Delivered => {
            tracing::info!(target: "sitemapd::notify", destination = target, "sent {what}");
            outbox.delivered(&tracked.batch);
            None
        }
        Attempt::Rejected { reason } => {
            outbox.attempt_failed();
            tracing::warn!(target: "sitemapd::notify", destination = target, reason = ?reason, "{what} refused; not retrying");
            outbox.dropped(&tracked.batch);
            None
        }
        Attempt::Retry {
            reason,
            retry_after,
        } => {
            outbox.attempt_failed();
            if tracked.attempts >= policy.max_attempts {
                tracing::error!(
                    target: "sitemapd::notify", destination = target, reason = ?reason, attempts = tracked.attempts,
                    "{what} dropped: out of attempts"
                );
                outbox.dropped(&tracked.batch);
                return None;
            }
            let delay = policy.backoff.delay(tracked.attempts, retry_after);
            tracing::warn!(
                target: "sitemapd::notify", destination = target, reason = ?reason, attempt = tracked.attempts,
                retry_in_secs = delay.as_secs_f64(), "{what} failed; will retry"
            );
            schedule.backed_off_until = Instant::now() + delay;
            Some(tracked)
        }
    }
}

fn give_up_draining<O: Outbox>(
    outbox: &mut O,
    retry: Option<Tracked<O::Batch>>,
    in_flight: Option<(Tracked<O::Batch>, BoxFuture<'static, Attempt>)>,
) {
    let unsent = retry
        .into_iter()
        .chain(in_flight.map(|(tracked, _)| tracked));
    for tracked in unsent {
        tracing::warn!(target: "sitemapd::notify", destination = O::TARGET, "{} dropped at shutdown", outbox.describe(&tracked.batch));
        outbox.dropped(&tracked.batch);
    }
    let pending = outbox.drop_pending();
    if pending > 0 {
        tracing::warn!(target: "sitemapd::notify", destination = O::TARGET, pending, "pending notifications dropped: their turn would come after the shutdown deadline");
    }
}

/// Waits for the request in flight; pending forever when there is none.
fn poll_in_flight<'a, B>(
    in_flight: &'a mut Option<(B, BoxFuture<'static, Attempt>)>,
) -> impl Future<Output = Attempt> + 'a {
    std::future::poll_fn(move |cx| match in_flight {
        Some((_, attempt)) => Pin::new(attempt).poll(cx),
        None => Poll::Pending,
    })
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
