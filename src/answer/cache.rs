//! In-memory cache of rendered `.xml.gz` pages, with single flight.
//!
//! Many requests for the same cold page cause one render: the first starts it, everyone
//! (the first included) follows the same chunk list as it grows, so all of them stream from the
//! first byte without waiting for the end. A finished page stays cached, keyed by its
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

use crate::sitemap::Fingerprint;
use crate::store::StoreError;

/// A page version: group, page number and the fingerprint of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub group: Arc<str>,
    pub page_no: i64,
    pub fingerprint: Fingerprint,
}

/// Where a request gets its bytes from.
pub enum Lookup {
    /// The whole gzip file, from the cache.
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
    Running(usize),
    Done(usize),
    Failed(Failure),
}

/// Why a render ended without its last bytes.
#[derive(Debug, Clone)]
enum Failure {
    Store(Arc<StoreError>),
    Stale,
}

/// How a render ended, for [`PageCache::land`].
#[derive(Debug)]
pub enum Landing {
    /// The bytes are those of the key: keep them if they have been asked for twice.
    Keep,
    /// The bytes are not those of the key (the rows changed since the sweep): followers end
    /// with an error before the last bytes, so no body goes out under the ETag of other bytes.
    Stale,
    /// The render failed: followers end with this error.
    Failed(Arc<StoreError>),
}

/// A render's failure as a body stream reports it; the cause is kept.
#[derive(Debug, thiserror::Error)]
pub enum RenderFailed {
    #[error("the render failed")]
    Store(#[source] Arc<StoreError>),
    #[error(
        "the rows changed since the file's validators were taken: the response is aborted \
         rather than sent under the ETag of other bytes; the next sweep dates the file anew"
    )]
    Stale,
}

/// One render in progress: the chunks so far and how far it got.
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
            progress: watch::channel(Progress::Running(0)).0,
            followers: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub fn push(&self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        let mut chunks = self.chunks.lock().expect("flight lock");
        chunks.push(chunk);
        self.progress.send_replace(Progress::Running(chunks.len()));
    }

    fn finish(&self) -> CachedFile {
        let chunks = self.chunks.lock().expect("flight lock");
        self.progress.send_replace(Progress::Done(chunks.len()));
        CachedFile(chunks.iter().cloned().collect())
    }

    fn fail(&self, failure: Failure) {
        self.progress.send_replace(Progress::Failed(failure));
    }

    /// The file from its first byte, as fast as the render produces it. A failed render ends
    /// the stream with an error, so the response is aborted rather than cut short silently.
    pub fn follow(self: Arc<Self>) -> BoxStream<'static, io::Result<Bytes>> {
        let rx = self.progress.subscribe();
        stream::unfold((self, rx, 0usize), |(flight, mut rx, next)| async move {
            loop {
                if next == usize::MAX {
                    return None;
                }
                let progress = rx.borrow_and_update().clone();
                let (available, done) = match progress {
                    Progress::Running(n) => (n, false),
                    Progress::Done(n) => (n, true),
                    Progress::Failed(failure) => {
                        let err = io::Error::other(match failure {
                            Failure::Store(error) => RenderFailed::Store(error),
                            Failure::Stale => RenderFailed::Stale,
                        });
                        return Some((Err(err), (flight, rx, usize::MAX)));
                    }
                };
                if next < available {
                    let chunk = flight.chunks.lock().expect("flight lock")[next].clone();
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
        self.inner
            .lock()
            .expect("cache lock")
            .ready
            .get(key)
            .cloned()
    }

    /// The cached file, the render under way, or a new flight the caller must run.
    pub fn lookup(&self, key: &PageKey) -> Lookup {
        let mut inner = self.inner.lock().expect("cache lock");
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

    /// Ends a flight: its followers get the rest of the file (or the error), and the file is
    /// kept when the landing says so, it has been asked for twice and it fits the budget.
    pub fn land(&self, key: &PageKey, landing: Landing) {
        let mut inner = self.inner.lock().expect("cache lock");
        let Some(flight) = inner.flights.remove(key) else {
            return;
        };
        match landing {
            Landing::Failed(error) => return flight.fail(Failure::Store(error)),
            Landing::Stale => return flight.fail(Failure::Stale),
            Landing::Keep => {}
        }
        let whole = flight.finish();
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
        self.inner.lock().expect("cache lock").used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    async fn collect(stream: BoxStream<'static, io::Result<Bytes>>) -> io::Result<Vec<u8>> {
        stream.map_ok(|b| b.to_vec()).try_concat().await
    }

    fn key(no: i64) -> PageKey {
        PageKey {
            group: "s".into(),
            page_no: no,
            fingerprint: Fingerprint(no as u128),
        }
    }

    #[tokio::test]
    async fn followers_get_every_chunk_from_the_start() {
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
        let follower = tokio::spawn(collect(same.follow()));
        flight.push(Bytes::from_static(b"cd"));
        cache.land(&key(1), Landing::Keep);
        assert_eq!(follower.await.unwrap().unwrap(), b"abcd");
        assert!(
            matches!(cache.lookup(&key(1)), Lookup::Cached(b) if b.to_vec() == b"abcd"),
            "asked twice: kept"
        );
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
        let Lookup::Flight { flight, .. } = cache.lookup(&key(1)) else {
            panic!()
        };
        flight.push(Bytes::from_static(b"ab"));
        let follower = tokio::spawn(collect(flight.clone().follow()));
        cache.land(
            &key(1),
            Landing::Failed(Arc::new(StoreError::Database(sqlx::Error::PoolTimedOut))),
        );
        assert!(follower.await.unwrap().is_err());
    }

    #[test]
    fn the_budget_evicts_the_oldest() {
        let cache = PageCache::new(5);
        for no in 1..=3 {
            for _render in 0..2 {
                let Lookup::Flight { flight, .. } = cache.lookup(&key(no)) else {
                    panic!()
                };
                flight.push(Bytes::from_static(b"abc"));
                cache.land(&key(no), Landing::Keep);
            }
        }
        assert_eq!(cache.used(), 3);
        assert!(matches!(cache.lookup(&key(3)), Lookup::Cached(_)));
        assert!(matches!(cache.lookup(&key(1)), Lookup::Flight { .. }));
    }
}
