//! The one place the concurrent core takes its atomics, locks, cells and
//! thread-locals from: `std` in normal builds, `loom` under `--cfg loom`, so
//! the loom models exercise the very code that ships (the crossbeam/tokio
//! pattern).

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning: nothing in uvfs panics while holding a
/// lock, and a caller's panic elsewhere must not wedge the table.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The back-edge of a lockless retry loop that waits for another thread's
/// stores to become visible (a lookup that found its slot's file at count
/// zero). Nothing in normal builds, as in the kernel; under loom a yield:
/// loom gives no progress guarantee to a thread that never yields, so it
/// would explore the reader re-loading the stale slot forever and exceed its
/// branch limit.
#[inline(always)]
pub(crate) fn retry_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Locks a plain `std` mutex (state no loom model covers: the cwd, the
/// mount table, rename locks), ignoring poisoning like [`lock`].
pub(crate) fn std_lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Waits on `cv`, ignoring poisoning like [`lock`].
pub(crate) fn wait<'a, T>(cv: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    match cv.wait(g) {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// An `UnsafeCell` with loom's closure API in both builds, so loom can check
/// that no two accesses to a cell race.
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(
    #[cfg(not(loom))] std::cell::UnsafeCell<T>,
    #[cfg(loom)] loom::cell::UnsafeCell<T>,
);

impl<T> UnsafeCell<T> {
    pub(crate) fn new(v: T) -> Self {
        #[cfg(not(loom))]
        return UnsafeCell(std::cell::UnsafeCell::new(v));
        #[cfg(loom)]
        return UnsafeCell(loom::cell::UnsafeCell::new(v));
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        #[cfg(not(loom))]
        return f(self.0.get());
        #[cfg(loom)]
        return self.0.with(f);
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(not(loom))]
        return f(self.0.get());
        #[cfg(loom)]
        return self.0.with_mut(f);
    }
}
