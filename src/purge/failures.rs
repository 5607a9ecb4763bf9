//! One endpoint's failed purges, logged once per [`PERIOD`] with their counts, never once per
//! URL: the first failure opens a period, and its one line is written when a failure comes
//! after the period ended, when the endpoint's task sees it ended while idle, or when the process
//! drains ([`super::Purger::drain`]).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How often one endpoint's failures are logged at most.
pub const PERIOD: Duration = Duration::from_secs(60);

/// How a purge (one URL's, or one POST of a list) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The endpoint refused it (a 4xx): retrying cannot help.
    Refused(String),
    /// No answer, or a 5xx, at every try.
    GaveUp(String),
}

/// The failures of one endpoint not logged yet.
#[derive(Debug)]
pub struct FailureLog {
    /// The endpoint as logs show it (no credentials).
    endpoint: String,
    open: Mutex<Option<Period>>,
}

/// The failures of one period.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Period {
    started: Instant,
    /// URLs whose purge failed (a failed POST counts each URL of its list).
    urls: u64,
    refused: u64,
    gave_up: u64,
    last_reason: String,
}

impl FailureLog {
    pub fn new(endpoint: String) -> Self {
        Self {
            endpoint,
            open: Mutex::new(None),
        }
    }

    /// Notes `failure`, of `urls` URLs; logs the period's line when the period has ended.
    pub fn note(&self, failure: &Failure, urls: usize) {
        let ended = {
            let mut open = crate::sync::lock(&self.open);
            let period = open.get_or_insert_with(|| Period::new(Instant::now()));
            period.add(failure, urls);
            take_ended(&mut open, Instant::now())
        };
        if let Some(period) = ended {
            self.log(&period);
        }
    }

    /// When the open period ends, if one is open.
    pub fn due(&self) -> Option<Instant> {
        crate::sync::lock(&self.open)
            .as_ref()
            .map(|period| period.started + PERIOD)
    }

    /// Logs the open period's line when it has ended.
    pub fn log_if_ended(&self) {
        let ended = take_ended(&mut crate::sync::lock(&self.open), Instant::now());
        if let Some(period) = ended {
            self.log(&period);
        }
    }

    /// Logs the open period's line now, ended or not (the process is stopping).
    pub fn log_now(&self) {
        let open = crate::sync::lock(&self.open).take();
        if let Some(period) = open {
            self.log(&period);
        }
    }

    fn log(&self, period: &Period) {
        tracing::warn!(
            endpoint = %self.endpoint,
            urls = period.urls,
            refused = period.refused,
            gave_up = period.gave_up,
            last_reason = %period.last_reason,
            over_secs = period.started.elapsed().as_secs(),
            "cache purges failed at this endpoint; those files stay cached until their shared TTL ends"
        );
    }
}

impl Period {
    fn new(started: Instant) -> Self {
        Self {
            started,
            urls: 0,
            refused: 0,
            gave_up: 0,
            last_reason: String::new(),
        }
    }

    fn add(&mut self, failure: &Failure, urls: usize) {
        self.urls += urls as u64;
        let reason = match failure {
            Failure::Refused(reason) => {
                self.refused += 1;
                reason
            }
            Failure::GaveUp(reason) => {
                self.gave_up += 1;
                reason
            }
        };
        self.last_reason.clone_from(reason);
    }
}

/// The open period, taken, when it has ended at `now`.
fn take_ended(open: &mut Option<Period>, now: Instant) -> Option<Period> {
    let ended = open.as_ref()?.started + PERIOD <= now;
    if ended {
        open.take()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failures_add_up_until_their_period_ends() {
        let log = FailureLog::new("http://cache".into());
        assert_eq!(log.due(), None);
        log.note(&Failure::Refused("403 Forbidden".into()), 1);
        let due = log.due().expect("a period is open");
        tokio::time::advance(PERIOD / 2).await;
        log.note(&Failure::GaveUp("connection refused".into()), 30);
        log.log_if_ended();
        {
            let open = crate::sync::lock(&log.open);
            let period = open.as_ref().expect("still open: one line for both");
            assert_eq!((period.urls, period.refused, period.gave_up), (31, 1, 1));
            assert_eq!(period.last_reason, "connection refused");
        }
        assert_eq!(log.due(), Some(due), "the period does not restart");
        tokio::time::advance(PERIOD / 2).await;
        log.log_if_ended();
        assert_eq!(log.due(), None, "logged and closed");
        log.note(&Failure::Refused("403 Forbidden".into()), 1);
        log.log_now();
        assert_eq!(log.due(), None);
    }
}
