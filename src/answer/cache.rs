//! In-memory cache of rendered pages, each coding (gzip, brotli) on its own, with single flight.
//!
//! Many requests for the same cold page cause one render: the first starts it, everyone
//! (the first included) waits for its end and sends the same whole file, under the validators
//! of its bytes (see [`Flight`]). A finished page stays cached, keyed by its
//! fingerprint, while the total stays within the budget (oldest out first).
//!
//! A version is kept once it has been asked for twice (two renders, or one render that other
//! requests followed): a crawler walking every file once neither grows memory with the group's
//! size nor pushes out the pages that are asked for again and again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::watch;

use super::render::RenderError;
use crate::site::Validators;
use crate::sitemap::Fingerprint;
use crate::sync::lock;

/// A page version in one coding: group, page number, the fingerprint of its XML, and how it is
/// compressed (a client that takes brotli and one that takes gzip get different bytes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub group: Arc<str>,
    pub page_no: i64,
    pub fingerprint: Fingerprint,
    pub coding: super::Coding,
}

/// Where a request gets its bytes from.
pub enum Lookup {
    /// The whole compressed file, from the cache.
    Cached(CachedFile),
    /// A render in progress (started by this request if `started`).
    Flight { flight: Arc<Flight>, started: bool },
}

/// A finished file, kept as the chunks it was rendered in: no large contiguous copy, which
/// keeps the allocator from holding on to big freed blocks as pages come and go.
#[derive(Debug, Clone)]
pub struct CachedFile(Arc<[Bytes]>);

impl CachedFile {
    pub fn len(&self) -> usize {
        self.0.iter().map(Bytes::len).sum()
    }

    /// The file as a body stream.
    pub fn stream(&self) -> BoxStream<'static, io::Result<Bytes>> {
        let chunks = self.0.clone();
        stream::iter((0..chunks.len()).map(move |i| Ok(chunks[i].clone()))).boxed()
    }

    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u8> {
        self.0.iter().flat_map(|c| c.iter().copied()).collect()
    }
}

#[derive(Debug, Clone)]
enum Progress {
    /// Chunks are coming (each one sends this anew, waking the requests that follow).
    Running,
    /// Every chunk is there; `Some`: they are not the bytes the key names (see
    /// [`Landing::Revised`]).
    Done(Option<Validators>),
    Failed(Arc<RenderError>),
}

/// How a render ended, for [`PageCache::land`].
#[derive(Debug)]
pub enum Landing {
    /// The bytes are those of the key: keep them if they have been asked for twice.
    Keep,
    /// The rows changed since the sweep: the bytes are a whole, valid file, but not the one
    /// the key names. Its requests send them under these validators, computed from the bytes
    /// themselves (the same on every replica), and they are not kept under the key.
    Revised(Validators),
    /// The render failed: its requests end with this error.
    Failed(Arc<RenderError>),
}

/// A render's failure as its requests report it; the cause is kept.
#[derive(Debug, thiserror::Error)]
pub enum RenderFailed {
    #[error("the render failed")]
    Render(#[source] Arc<RenderError>),
}

/// A finished render as each of its requests gets it.
pub struct Finished {
    pub file: CachedFile,
    /// Validators of other bytes than the key's (see [`Landing::Revised`]).
    pub revised: Option<Validators>,
}

/// One render in progress: the chunks so far and how it ended.
///
/// Requests wait for the end before they send anything ([`Flight::finished`]): only then is it
/// known which validators the bytes carry (the rows may have changed since the sweep), so a
/// body never goes out under the ETag of other bytes. The whole file is held here during the
/// render anyway, so waiting costs time to the first byte, never memory. A render too slow to
/// wait for (a database that crawls) is streamed instead ([`Flight::follow`]).
pub struct Flight {
    chunks: Mutex<Vec<Bytes>>,
    progress: watch::Sender<Progress>,
    /// Requests that joined after the first: a version asked for twice is worth keeping.
    followers: std::sync::atomic::AtomicUsize,
}

impl Flight {
    fn new() -> Self {
        Self {
            chunks: Mutex::new(Vec::new()),
            progress: watch::channel(Progress::Running).0,
            followers: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub fn push(&self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        let mut chunks = lock(&self.chunks);
        chunks.push(chunk);
        // Wakes the requests that follow, while the render runs. An end is final: a chunk that
        // comes after it (a compressor winding down after the rows failed) must not turn a
        // failed flight back into a running one, which nobody would ever end.
        self.progress
            .send_if_modified(|progress| matches!(progress, Progress::Running));
    }

    fn whole(&self) -> CachedFile {
        CachedFile(crate::sync::lock(&self.chunks).iter().cloned().collect())
    }

    fn finish(&self, revised: Option<Validators>) -> CachedFile {
        self.progress.send_replace(Progress::Done(revised));
        self.whole()
    }

    fn fail(&self, error: Arc<RenderError>) {
        self.progress.send_replace(Progress::Failed(error));
    }

    /// The whole file once the render ends, or its failure.
    pub async fn finished(&self) -> Result<Finished, RenderFailed> {
        let mut rx = self.progress.subscribe();
        loop {
            match rx.borrow_and_update().clone() {
                Progress::Running => {}
                Progress::Done(revised) => {
                    return Ok(Finished {
                        file: self.whole(),
                        revised,
                    })
                }
                Progress::Failed(error) => return Err(RenderFailed::Render(error)),
            }
            // The flight owns the sender, so this only waits for the next change.
            let _ = rx.changed().await;
        }
    }

    /// The file from its first byte, as fast as the render produces it, for a request that
    /// sends it under no validators (see `Opened::unvalidated`): a render whose rows changed
    /// meanwhile is still a whole, valid file, so it goes out whole; only a failed render ends
    /// the stream with an error, aborting the response.
    pub fn follow(self: Arc<Self>) -> BoxStream<'static, io::Result<Bytes>> {
        let rx = self.progress.subscribe();
        stream::unfold((self, rx, 0usize), |(flight, mut rx, next)| async move {
            loop {
                if next == usize::MAX {
                    return None;
                }
                let progress = rx.borrow_and_update().clone();
                let done = match progress {
                    Progress::Running => false,
                    Progress::Done(_) => true,
                    Progress::Failed(error) => {
                        let err = io::Error::other(RenderFailed::Render(error));
                        return Some((Err(err), (flight, rx, usize::MAX)));
                    }
                };
                let chunk = crate::sync::lock(&flight.chunks).get(next).cloned();
                if let Some(chunk) = chunk {
                    return Some((Ok(chunk), (flight, rx, next + 1)));
                }
                if done || rx.changed().await.is_err() {
                    return None;
                }
            }
        })
        .boxed()
    }
}

#[derive(Default)]
struct Inner {
    ready: HashMap<PageKey, CachedFile>,
    order: VecDeque<PageKey>,
    used: usize,
    flights: HashMap<PageKey, Arc<Flight>>,
    /// Versions rendered once for a single request; the next render of one of them is kept.
    seen_once: HashSet<PageKey>,
}

/// Forgetting one-time versions past this many keeps the admission memory small.
const SEEN_ONCE_MAX: usize = 10_000;

/// Rendered pages within a byte budget, and the renders under way.
pub struct PageCache {
    budget: usize,
    inner: Mutex<Inner>,
}

impl PageCache {
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            budget: budget_bytes,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The cached file, if any, without starting anything.
    pub fn peek(&self, key: &PageKey) -> Option<CachedFile> {
        crate::sync::lock(&self.inner).ready.get(key).cloned()
    }

    /// The cached file, the render under way, or a new flight the caller must run.
    pub fn lookup(&self, key: &PageKey) -> Lookup {
        let mut inner = lock(&self.inner);
        if let Some(bytes) = inner.ready.get(key) {
            return Lookup::Cached(bytes.clone());
        }
        if let Some(flight) = inner.flights.get(key) {
            flight
                .followers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Lookup::Flight {
                flight: flight.clone(),
                started: false,
            };
        }
        let flight = Arc::new(Flight::new());
        inner.flights.insert(key.clone(), flight.clone());
        Lookup::Flight {
            flight,
            started: true,
        }
    }

    /// Ends a flight: its requests get the whole file (or the error), and the file is
    /// kept when the landing says so, it has been asked for twice and it fits the budget.
    pub fn land(&self, key: &PageKey, landing: Landing) {
        let mut inner = lock(&self.inner);
        let Some(flight) = inner.flights.remove(key) else {
            return;
        };
        match landing {
            Landing::Failed(error) => return flight.fail(error),
            Landing::Revised(validators) => {
                flight.finish(Some(validators));
                return;
            }
            Landing::Keep => {}
        }
        let whole = flight.finish(None);
        let followed = flight.followers.load(std::sync::atomic::Ordering::Relaxed) > 0;
        if whole.len() > self.budget {
            return;
        }
        if followed || inner.seen_once.remove(key) {
            self.admit(&mut inner, key.clone(), whole);
        } else {
            if inner.seen_once.len() >= SEEN_ONCE_MAX {
                inner.seen_once.clear();
            }
            inner.seen_once.insert(key.clone());
        }
    }

    fn admit(&self, inner: &mut Inner, key: PageKey, bytes: CachedFile) {
        if bytes.len() > self.budget {
            return;
        }
        inner.used += bytes.len();
        inner.order.push_back(key.clone());
        inner.ready.insert(key, bytes);
        self.evict(inner);
    }

    fn evict(&self, inner: &mut Inner) {
        while inner.used > self.budget {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(bytes) = inner.ready.remove(&old) {
                inner.used -= bytes.len();
            }
        }
    }

    /// Bytes held by finished pages.
    pub fn used(&self) -> usize {
        lock(&self.inner).used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(no: i64) -> PageKey {
        PageKey {
            group: "s".into(),
            page_no: no,
            fingerprint: Fingerprint(no as u128),
            coding: super::super::Coding::Gzip,
        }
    }

    /// The render of page `no` under way, started or followed.
    fn flight_of(cache: &PageCache, no: i64) -> Arc<Flight> {
        let Lookup::Flight { flight, .. } = cache.lookup(&key(no)) else {
            panic!("page {no} is cached")
        };
        flight
    }

    /// A render that failed on the database.
    fn failure() -> Landing {
        Landing::Failed(Arc::new(RenderError::Store(
            crate::store::StoreError::Database(sqlx::Error::PoolTimedOut),
        )))
    }

    #[tokio::test]
    async fn every_request_of_a_flight_gets_the_whole_file() {
        let cache = PageCache::new(1024);
        let Lookup::Flight {
            flight,
            started: true,
        } = cache.lookup(&key(1))
        else {
            panic!("first lookup starts a flight")
        };
        flight.push(Bytes::from_static(b"ab"));
        let Lookup::Flight {
            flight: same,
            started: false,
        } = cache.lookup(&key(1))
        else {
            panic!("second lookup follows")
        };
        let follower = tokio::spawn(async move { same.finished().await });
        flight.push(Bytes::from_static(b"cd"));
        cache.land(&key(1), Landing::Keep);
        let finished = follower.await.unwrap().unwrap();
        assert_eq!(finished.file.to_vec(), b"abcd");
        assert!(finished.revised.is_none());
        assert!(
            matches!(cache.lookup(&key(1)), Lookup::Cached(b) if b.to_vec() == b"abcd"),
            "asked twice: kept"
        );
    }

    #[tokio::test]
    async fn a_revised_render_is_sent_whole_under_its_own_validators_and_not_kept() {
        let cache = PageCache::new(1024);
        let revised = Validators {
            fingerprint: Fingerprint(99),
            changed_at: 7,
        };
        for _ in 0..2 {
            let Lookup::Flight { flight, .. } = cache.lookup(&key(1)) else {
                panic!("a revised render is never cached")
            };
            flight.push(Bytes::from_static(b"ab"));
            cache.land(&key(1), Landing::Revised(revised));
            let finished = flight.finished().await.unwrap();
            assert_eq!(finished.file.to_vec(), b"ab");
            assert_eq!(finished.revised, Some(revised));
        }
        assert!(cache.peek(&key(1)).is_none());
    }

    #[tokio::test]
    async fn a_streamed_render_whose_rows_changed_still_goes_out_whole() {
        use futures::TryStreamExt;
        let cache = PageCache::new(1024);
        let flight = flight_of(&cache, 1);
        flight.push(Bytes::from_static(b"ab"));
        let mut stream = flight.clone().follow();
        let first = stream.try_next().await.unwrap().unwrap();
        assert_eq!(&first[..], b"ab", "chunks stream as they come");
        flight.push(Bytes::from_static(b"cd"));
        let revised = Validators {
            fingerprint: Fingerprint(9),
            changed_at: 1,
        };
        cache.land(&key(1), Landing::Revised(revised));
        let rest: Vec<Bytes> = stream.try_collect().await.unwrap();
        assert_eq!(rest, vec![Bytes::from_static(b"cd")], "sent whole, not cut");
    }

    #[test]
    fn a_version_asked_for_once_is_kept_only_when_asked_again() {
        let cache = PageCache::new(1024);
        for expect_cached_after in [false, true] {
            let Lookup::Flight {
                flight,
                started: true,
            } = cache.lookup(&key(1))
            else {
                panic!("not cached yet")
            };
            flight.push(Bytes::from_static(b"ab"));
            cache.land(&key(1), Landing::Keep);
            assert_eq!(cache.peek(&key(1)).is_some(), expect_cached_after);
        }
    }

    #[tokio::test]
    async fn a_failed_render_ends_followers_with_an_error() {
        let cache = PageCache::new(1024);
        let flight = flight_of(&cache, 1);
        flight.push(Bytes::from_static(b"ab"));
        let waiting = flight.clone();
        let follower = tokio::spawn(async move { waiting.finished().await.map(|_| ()) });
        cache.land(&key(1), failure());
        assert!(follower.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn a_chunk_pushed_after_a_failure_leaves_the_flight_failed() {
        use futures::TryStreamExt;
        let cache = PageCache::new(1024);
        let flight = flight_of(&cache, 1);
        flight.push(Bytes::from_static(b"ab"));
        cache.land(&key(1), failure());
        flight.push(Bytes::from_static(b"cd"));
        let streamed = flight.clone().follow().try_next().await;
        assert!(streamed.is_err(), "a follower is told of the failure");
        assert!(flight.finished().await.is_err());
    }

    #[test]
    fn the_budget_evicts_the_oldest() {
        let cache = PageCache::new(5);
        for no in 1..=3 {
            for _render in 0..2 {
                let flight = flight_of(&cache, no);
                flight.push(Bytes::from_static(b"abc"));
                cache.land(&key(no), Landing::Keep);
            }
        }
        assert_eq!(cache.used(), 3);
        assert!(matches!(cache.lookup(&key(3)), Lookup::Cached(_)));
        assert!(matches!(cache.lookup(&key(1)), Lookup::Flight { .. }));
    }
}
