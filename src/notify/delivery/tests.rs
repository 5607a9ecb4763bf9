use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use reqwest::header::HeaderValue;

use super::*;

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn backoff_doubles_from_one_second_up_to_the_cap() {
    let delays: Vec<u64> = (1..=11)
        .map(|n| DEFAULT_BACKOFF.delay(n, None).as_secs())
        .collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    assert_eq!(DEFAULT_BACKOFF.delay(u32::MAX, None), DEFAULT_BACKOFF.cap);
}

#[test]
fn backoff_is_never_shorter_than_retry_after() {
    assert_eq!(DEFAULT_BACKOFF.delay(1, Some(20 * SECOND)), 20 * SECOND);
    assert_eq!(DEFAULT_BACKOFF.delay(5, Some(3 * SECOND)), 16 * SECOND);
}

fn headers(retry_after: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(RETRY_AFTER, HeaderValue::from_str(retry_after).unwrap());
    headers
}

#[test]
fn retry_after_is_read_as_seconds_or_a_date_and_bounded() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert_eq!(retry_after(&headers("7"), now), Some(7 * SECOND));
    let in_ninety = httpdate::fmt_http_date(now + 90 * SECOND);
    assert_eq!(retry_after(&headers(&in_ninety), now), Some(90 * SECOND));
    let past = httpdate::fmt_http_date(now - 90 * SECOND);
    assert_eq!(retry_after(&headers(&past), now), Some(Duration::ZERO));
    assert_eq!(
        retry_after(&headers("999999999"), now),
        Some(RETRY_AFTER_LIMIT)
    );
    assert_eq!(retry_after(&headers("soon"), now), None);
    assert_eq!(retry_after(&HeaderMap::new(), now), None);
}

#[test]
fn statuses_worth_retrying_are_rate_limits_timeouts_and_server_errors() {
    for code in [408, 429, 500, 502, 503, 504] {
        assert!(is_retryable(StatusCode::from_u16(code).unwrap()), "{code}");
    }
    for code in [400, 403, 404, 422, 301] {
        assert!(!is_retryable(StatusCode::from_u16(code).unwrap()), "{code}");
    }
}

/// An outbox of numbered items, one per batch, whose attempts follow a script and whose
/// every event is recorded with the (paused, virtual) time since the start.
struct Scripted {
    pending: VecDeque<u32>,
    script: Arc<Mutex<VecDeque<Attempt>>>,
    log: Arc<Mutex<Vec<(u64, String)>>>,
    start: Instant,
}

impl Scripted {
    fn record(&self, event: String) {
        let at = (Instant::now() - self.start).as_secs();
        self.log.lock().unwrap().push((at, event));
    }
}

impl Outbox for Scripted {
    type Item = u32;
    type Batch = u32;
    const TARGET: &'static str = "test";

    fn add(&mut self, item: u32) {
        self.pending.push_back(item);
    }
    fn take(&mut self) -> Option<u32> {
        self.pending.pop_front()
    }
    fn pending(&self) -> usize {
        self.pending.len()
    }
    fn deliver(&self, batch: &u32) -> BoxFuture<'static, Attempt> {
        self.record(format!("send {batch}"));
        let next = self.script.lock().unwrap().pop_front();
        Box::pin(async move { next.unwrap_or(Attempt::Delivered) })
    }
    fn describe(&self, batch: &u32) -> String {
        format!("item {batch}")
    }
    fn delivered(&mut self, batch: &u32) {
        self.record(format!("delivered {batch}"));
    }
    fn attempt_failed(&mut self) {}
    fn dropped(&mut self, batch: &u32) {
        self.record(format!("dropped {batch}"));
    }
    fn drop_pending(&mut self) -> usize {
        let n = self.pending.len();
        for item in std::mem::take(&mut self.pending) {
            self.record(format!("dropped {item}"));
        }
        n
    }
}

fn retry(after: Option<u64>) -> Attempt {
    Attempt::Retry {
        reason: "HTTP 503".into(),
        retry_after: after.map(Duration::from_secs),
    }
}

struct Harness {
    commands: tokio::sync::mpsc::UnboundedSender<Command<u32>>,
    log: Arc<Mutex<Vec<(u64, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

fn start(script: Vec<Attempt>, policy: Policy) -> Harness {
    let log = Arc::new(Mutex::new(Vec::new()));
    let outbox = Scripted {
        pending: VecDeque::new(),
        script: Arc::new(Mutex::new(script.into())),
        log: log.clone(),
        start: Instant::now(),
    };
    let (commands, receiver) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(run(outbox, receiver, policy));
    Harness {
        commands,
        log,
        task,
    }
}

impl Harness {
    fn add(&self, item: u32) {
        self.commands.send(Command::Add(item)).unwrap();
    }
    /// Closes the channel and waits until the task has sent everything.
    async fn finish(self) -> Vec<(u64, String)> {
        drop(self.commands);
        self.task.await.unwrap();
        self.log.lock().unwrap().clone()
    }
}

fn events(log: &[(u64, &str)]) -> Vec<(u64, String)> {
    log.iter().map(|(t, e)| (*t, e.to_string())).collect()
}

// Time is paused in these tests: it advances only when every task waits, so the recorded
// seconds are exact and the tests take no real time.

#[tokio::test(start_paused = true)]
async fn requests_are_paced_one_interval_apart_from_their_starts() {
    let h = start(vec![], Policy::with_interval(10 * SECOND));
    h.add(1);
    h.add(2);
    h.add(3);
    let log = h.finish().await;
    let expected = [
        (0, "send 1"),
        (0, "delivered 1"),
        (10, "send 2"),
        (10, "delivered 2"),
        (20, "send 3"),
        (20, "delivered 3"),
    ];
    assert_eq!(log, events(&expected));
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_backs_off_exponentially_and_honours_retry_after() {
    let script = vec![
        retry(None),
        retry(None),
        retry(Some(30)),
        Attempt::Delivered,
    ];
    let h = start(script, Policy::with_interval(SECOND));
    h.add(1);
    let log = h.finish().await;
    let expected = [
        (0, "send 1"),
        (1, "send 1"),
        (3, "send 1"),
        (33, "send 1"),
        (33, "delivered 1"),
    ];
    assert_eq!(log, events(&expected));
}

#[tokio::test(start_paused = true)]
async fn the_interval_holds_after_a_short_backoff() {
    let h = start(vec![retry(None)], Policy::with_interval(60 * SECOND));
    h.add(1);
    let log = h.finish().await;
    let expected = [(0, "send 1"), (60, "send 1"), (60, "delivered 1")];
    assert_eq!(log, events(&expected));
}

#[tokio::test(start_paused = true)]
async fn a_batch_out_of_attempts_is_dropped_and_the_next_one_goes() {
    let policy = Policy {
        max_attempts: 3,
        ..Policy::with_interval(SECOND)
    };
    let h = start(vec![retry(None), retry(None), retry(None)], policy);
    h.add(1);
    h.add(2);
    let log = h.finish().await;
    let expected = [
        (0, "send 1"),
        (1, "send 1"),
        (3, "send 1"),
        (3, "dropped 1"),
        (4, "send 2"),
        (4, "delivered 2"),
    ];
    assert_eq!(log, events(&expected));
}

#[tokio::test(start_paused = true)]
async fn a_rejected_batch_is_not_retried() {
    let rejected = Attempt::Rejected {
        reason: "HTTP 422".into(),
    };
    let h = start(vec![rejected], Policy::with_interval(SECOND));
    h.add(1);
    let log = h.finish().await;
    assert_eq!(log, events(&[(0, "send 1"), (0, "dropped 1")]));
}

/// Starts a drain that must end within `grace`, and waits for it.
async fn drain(h: &Harness, grace: Duration) -> Vec<(u64, String)> {
    let (done, finished) = oneshot::channel();
    let deadline = Instant::now() + grace;
    h.commands
        .send(Command::Drain(Drain { deadline, done }))
        .unwrap();
    finished.await.unwrap();
    h.log.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_drain_sends_what_pending_as_the_interval_allows() {
    let h = start(vec![], Policy::with_interval(SECOND));
    h.add(1);
    h.add(2);
    let expected = [
        (0, "send 1"),
        (0, "delivered 1"),
        (1, "send 2"),
        (1, "delivered 2"),
    ];
    assert_eq!(drain(&h, 5 * SECOND).await, events(&expected));
}

#[tokio::test(start_paused = true)]
async fn a_drain_never_shortens_the_interval_or_a_backoff() {
    let h = start(vec![], Policy::with_interval(3600 * SECOND));
    h.add(1);
    h.add(2);
    let expected = [(0, "send 1"), (0, "delivered 1"), (0, "dropped 2")];
    assert_eq!(drain(&h, 5 * SECOND).await, events(&expected));

    let h = start(vec![retry(Some(60))], Policy::with_interval(SECOND));
    h.add(1);
    h.add(2);
    let expected = [(0, "send 1"), (0, "dropped 1"), (0, "dropped 2")];
    assert_eq!(drain(&h, 5 * SECOND).await, events(&expected));
}
