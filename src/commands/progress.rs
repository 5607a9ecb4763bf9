//! Progress of a long command, on stderr, only once a run lasts more than a moment.

use std::time::{Duration, Instant};

/// Progress lines appear only for runs longer than this.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// Prints a count on stderr now and then, once a run has lasted more than a moment.
pub(super) struct Progress {
    what: &'static str,
    started: Instant,
    last: Instant,
}

impl Progress {
    pub(super) fn new(what: &'static str) -> Self {
        let now = Instant::now();
        Self {
            what,
            started: now,
            last: now,
        }
    }

    pub(super) fn tick(&mut self, done: u64) {
        if self.started.elapsed() > PROGRESS_AFTER && self.last.elapsed() > Duration::from_secs(1) {
            self.last = Instant::now();
            eprintln!("… {done} {}", self.what);
        }
    }
}
