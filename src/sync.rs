//! How a poisoned lock is handled, said once for the whole crate: it is used as it is.
//!
//! A `std::sync` lock is poisoned when a thread panicked while holding it. Every lock in
//! sitemapd guards data that each critical section leaves whole (a counter bumped, a map entry
//! put or taken, a cache slot filled in one call), or data that is only statistics or a cache
//! that can be refilled: what a panic leaves behind is still usable. Refusing it would turn one
//! panic into a failure of every later request that touches the lock, so nobody does: every lock
//! is taken through [`lock`], [`read`] or [`write`], never `.lock().unwrap()`.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `mutex` locked, poisoned or not.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `lock` read-locked, poisoned or not.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// `lock` write-locked, poisoned or not.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_used_as_it_is() {
        let mutex = std::sync::Arc::new(Mutex::new(1));
        let held = mutex.clone();
        let _ = std::thread::spawn(move || {
            let _guard = held.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert!(mutex.is_poisoned());
        *lock(&mutex) += 1;
        assert_eq!(*lock(&mutex), 2);
    }
}
