//! A bounded map from (site, file) to one crawler's last fetch of it (when, and which version),
//! which forgets the least recently fetched entry when full.
//!
//! Why a list threaded through a slab rather than a sorted structure: every fetch moves its entry
//! to the front and every new key at the cap reuses the slot at the back, so a fetch costs one or
//! two hash look-ups and a few index writes — O(1), never a scan under the lock a request holds.
//! Slots are never freed (a full map reuses the oldest), so memory is fixed by the capacity.

use std::collections::HashMap;
use std::sync::Arc;

use super::version::Fetch;

/// No slot: the end of the recency list.
const NIL: u32 = u32::MAX;

/// One tracked file. `site` is shared with the index's key, so a site's name is stored once
/// however many of its files are tracked.
#[derive(Debug)]
struct Slot {
    site: Arc<str>,
    file: Arc<str>,
    last_fetch: Fetch,
    /// The slot fetched just after this one (towards `newest`), or [`NIL`].
    newer: u32,
    /// The slot fetched just before this one (towards `oldest`), or [`NIL`].
    older: u32,
}

/// (site, file) → last fetch, at most `capacity` entries, least recently fetched evicted first.
#[derive(Debug)]
pub(super) struct Recent {
    /// Site → file → slot. Nested so that look-ups take `&str`s without building a key.
    index: HashMap<Arc<str>, HashMap<Arc<str>, u32>>,
    slots: Vec<Slot>,
    newest: u32,
    oldest: u32,
    capacity: usize,
}

impl Recent {
    /// An empty map that will hold at most `capacity` entries (at most `u32::MAX - 1`, since
    /// slots are addressed by `u32` to keep them small). Nothing is allocated until used.
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            index: HashMap::new(),
            slots: Vec::new(),
            newest: NIL,
            oldest: NIL,
            capacity: capacity.min(NIL as usize),
        }
    }

    /// How many entries are tracked (slots are never freed, so also how many are allocated).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Notes a fetch of `file` of `site` (at a time, of a version), evicting the least recently
    /// fetched entry if the map is full and the key is new. A fetch reported out of order (older
    /// than the one stored) keeps the later one.
    pub(super) fn touch(&mut self, site: &str, file: &str, fetch: impl Into<Fetch>) {
        let at = fetch.into();
        if self.capacity == 0 {
            return;
        }
        if let Some(&slot) = self.index.get(site).and_then(|files| files.get(file)) {
            let entry = &mut self.slots[slot as usize];
            if at.at >= entry.last_fetch.at {
                entry.last_fetch = at;
            }
            self.unlink(slot);
            self.push_newest(slot);
            return;
        }
        let reused = (self.slots.len() >= self.capacity).then_some(self.oldest);
        if let Some(slot) = reused {
            self.forget(slot);
            self.unlink(slot);
        }
        // Looked up after eviction: that may have removed the site's last file, and its key.
        let site = match self.index.get_key_value(site) {
            Some((key, _)) => Arc::clone(key),
            None => Arc::from(site),
        };
        let file: Arc<str> = Arc::from(file);
        let slot = match reused {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                entry.site = Arc::clone(&site);
                entry.file = Arc::clone(&file);
                entry.last_fetch = at;
                slot
            }
            None => {
                self.reserve_one();
                self.slots.push(Slot {
                    site: Arc::clone(&site),
                    file: Arc::clone(&file),
                    last_fetch: at,
                    newer: NIL,
                    older: NIL,
                });
                // Below `capacity`, itself below NIL, so it fits.
                (self.slots.len() - 1) as u32
            }
        };
        self.index.entry(site).or_default().insert(file, slot);
        self.push_newest(slot);
    }

    /// Every entry as (site, file, last fetch), in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, Fetch)> {
        self.slots
            .iter()
            .map(|slot| (&slot.site, &slot.file, slot.last_fetch))
    }

    /// Grows the slab the way a `Vec` would (doubling) but never past `capacity`, so a full map
    /// holds no spare slots.
    fn reserve_one(&mut self) {
        let len = self.slots.len();
        if len == self.slots.capacity() {
            let more = len.max(8).min(self.capacity - len);
            self.slots.reserve_exact(more);
        }
    }

    /// Removes `slot`'s key from the index (the slot itself stays, to be reused).
    fn forget(&mut self, slot: u32) {
        let entry = &self.slots[slot as usize];
        if let Some(files) = self.index.get_mut(&*entry.site) {
            files.remove(&*entry.file);
            if files.is_empty() {
                self.index.remove(&*entry.site);
            }
        }
    }

    /// Takes `slot` out of the recency list.
    fn unlink(&mut self, slot: u32) {
        let (newer, older) = {
            let entry = &self.slots[slot as usize];
            (entry.newer, entry.older)
        };
        if newer == NIL {
            self.newest = older;
        } else {
            self.slots[newer as usize].older = older;
        }
        if older == NIL {
            self.oldest = newer;
        } else {
            self.slots[older as usize].newer = newer;
        }
    }

    /// Puts `slot` (not in the list) at the front of the recency list.
    fn push_newest(&mut self, slot: u32) {
        let previous = self.newest;
        {
            let entry = &mut self.slots[slot as usize];
            entry.newer = NIL;
            entry.older = previous;
        }
        if previous == NIL {
            self.oldest = slot;
        } else {
            self.slots[previous as usize].newer = slot;
        }
        self.newest = slot;
    }

    /// How many keys the index holds, and slots the slab has room for (tests check both stay
    /// at the capacity).
    #[cfg(test)]
    pub(super) fn allocated(&self) -> (usize, usize) {
        (
            self.index.values().map(HashMap::len).sum(),
            self.slots.capacity(),
        )
    }

    /// The entries from newest to oldest, following the list (tests check its links).
    #[cfg(test)]
    fn newest_first(&self) -> Vec<(String, String, i64)> {
        let mut out = Vec::new();
        let mut slot = self.newest;
        while slot != NIL {
            let entry = &self.slots[slot as usize];
            out.push((
                entry.site.to_string(),
                entry.file.to_string(),
                entry.last_fetch.at,
            ));
            slot = entry.older;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(recent: &Recent) -> Vec<String> {
        recent
            .newest_first()
            .into_iter()
            .map(|(site, file, _)| format!("{site}{file}"))
            .collect()
    }

    #[test]
    fn a_full_map_forgets_the_least_recently_fetched_file() {
        let mut recent = Recent::new(3);
        recent.touch("a/", "1", 1);
        recent.touch("a/", "2", 2);
        recent.touch("b/", "3", 3);
        recent.touch("a/", "1", 4); // 1 is fetched again: 2 is now the oldest
        recent.touch("b/", "4", 5);
        assert_eq!(files(&recent), ["b/4", "a/1", "b/3"]);
        assert_eq!((recent.len(), recent.allocated().0), (3, 3));
        recent.touch("c/", "5", 6);
        recent.touch("c/", "6", 7);
        assert_eq!(files(&recent), ["c/6", "c/5", "b/4"]);
        // Site "a/" lost its last file, so its key is gone too.
        assert_eq!(recent.index.len(), 2);
        assert_eq!(recent.allocated().0, 3);
    }

    #[test]
    fn a_fetch_reported_late_keeps_the_later_time() {
        let mut recent = Recent::new(2);
        recent.touch("a/", "1", 10);
        recent.touch("a/", "1", 5);
        assert_eq!(recent.newest_first(), [("a/".into(), "1".into(), 10)]);
    }

    #[test]
    fn the_version_kept_is_the_one_of_the_latest_fetch() {
        let fetch = |at, version| Fetch {
            at,
            version: Some(version),
        };
        let mut recent = Recent::new(2);
        recent.touch("a/", "1", fetch(10, 1));
        recent.touch("a/", "1", fetch(10, 2)); // the same second, another version
        recent.touch("a/", "1", fetch(9, 3)); // reported late
        let kept: Vec<Fetch> = recent.iter().map(|(_, _, fetch)| fetch).collect();
        assert_eq!(kept, [fetch(10, 2)]);
    }

    #[test]
    fn capacity_one_and_zero_hold_what_they_say() {
        let mut one = Recent::new(1);
        one.touch("a/", "1", 1);
        one.touch("a/", "2", 2);
        assert_eq!(files(&one), ["a/2"]);
        let mut none = Recent::new(0);
        none.touch("a/", "1", 1);
        assert_eq!(none.len(), 0);
    }

    #[test]
    fn the_slab_never_grows_past_the_capacity() {
        let mut recent = Recent::new(100);
        for i in 0..1_000i64 {
            recent.touch("s/", &i.to_string(), i);
        }
        assert_eq!(recent.len(), 100);
        assert!(recent.slots.capacity() <= 100);
    }
}
