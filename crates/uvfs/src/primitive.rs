//! The one place the concurrent core takes its atomics, locks, cells and
//! thread-locals from: `std` in normal builds, `loom` under `--cfg loom`, so
//! the loom models exercise the very code that ships (the crossbeam/tokio
//! pattern), and `shuttle` under `--cfg shuttle`, so shuttle's randomized
//! schedules of whole-VFS scenarios (`tests/shuttle_vfs.rs`) switch threads
//! at every atomic and lock operation of the same code.
//!
//! Under shuttle every blocking primitive must be shuttle's: its threads are
//! coroutines on one OS thread, so a thread that blocked on a `std` lock held
//! by another shuttle thread would block them all. That is why the "plain"
//! locks below (state no loom model covers) are shuttle's under shuttle too.
//! Shuttle has no checked cell, so [`UnsafeCell`] is std's there.

#[cfg(not(any(loom, shuttle)))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(any(loom, shuttle)))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(all(shuttle, not(loom)))]
pub(crate) use shuttle::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(all(shuttle, not(loom)))]
pub(crate) use shuttle::sync::{Condvar, Mutex, MutexGuard};

#[cfg(all(shuttle, not(loom)))]
pub(crate) use shuttle::sync::{
    Mutex as PlainMutex, MutexGuard as PlainMutexGuard, RwLock as PlainRwLock,
    RwLockReadGuard as PlainRwLockReadGuard, RwLockWriteGuard as PlainRwLockWriteGuard,
};
/// Plain locks: for state no loom model covers (the cwd, the mount table,
/// rename locks, tmpfs's inodes). `std`'s normally and under loom;
/// shuttle's under shuttle, whose schedules cover the whole VFS.
#[cfg(any(loom, not(shuttle)))]
pub(crate) use std::sync::{
    Mutex as PlainMutex, MutexGuard as PlainMutexGuard, RwLock as PlainRwLock,
    RwLockReadGuard as PlainRwLockReadGuard, RwLockWriteGuard as PlainRwLockWriteGuard,
};

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
    #[cfg(all(shuttle, not(loom)))]
    shuttle::thread::yield_now();
}

/// Locks a [`PlainMutex`] (state no loom model covers: the cwd, the mount
/// table, rename locks), ignoring poisoning like [`lock`].
pub(crate) fn std_lock<T>(m: &PlainMutex<T>) -> PlainMutexGuard<'_, T> {
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

/// Rounds of spinning before a contended [`SpinMutex::lock`] parks. Each
/// round waits twice as long as the one before (4, 8, 16, … pauses, then
/// checks the lock), about 4000 pauses in all: tens of microseconds, many
/// times a short critical section but well under a time slice. Under loom
/// one round of one pause (a yield): the model explores parking, not
/// spinning.
#[cfg(not(any(loom, shuttle)))]
const SPIN_ROUNDS: u32 = 10;
#[cfg(any(loom, shuttle))]
const SPIN_ROUNDS: u32 = 1;

/// The first round's pauses, as a power of two. Polling sooner hands the
/// lock over sooner but pulls its line away from the holder in the middle
/// of its critical section, which then stalls to get it back; polling later
/// lets a thread that unlocks and relocks at once (dup then close) keep the
/// line. Measured with two threads sharing an fd table (`uvfs-bench run …
/// --mode threads --tasks 2`, two runs each, ops/s) for a first round of 1,
/// 2, 4 and 8 pauses: open1 9.4–9.5M, 7.9–9.7M, 9.2–9.6M, 8.6–8.8M; dup1
/// 8.5–8.8M, 9.9–10.3M, 12.8–13.4M, 17.0–17.3M. Four keeps open1's scaling
/// and gains half on dup1. (Longer still, dup1 nears one thread's rate by
/// running one thread at a time, and open1 loses more.)
#[cfg(not(any(loom, shuttle)))]
const SPIN_FIRST_SHIFT: u32 = 2;
#[cfg(any(loom, shuttle))]
const SPIN_FIRST_SHIFT: u32 = 0;

/// Lock states.
const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
/// Locked, and a thread may be parked (or about to park): unlock wakes one.
const CONTENDED: u32 = 2;

/// A spin-then-park mutex for short critical sections touched by every
/// thread of a process (the fd table's bitmaps, Linux's `files->file_lock`
/// spinlock).
///
/// `std::sync::Mutex` parks a contended locker in the kernel after a brief
/// spin and, once any thread has parked, makes every later unlock a
/// `futex_wake` system call: with two threads in a tight open/close loop
/// most operations paid a system call or two. Here a contended locker spins
/// with exponential backoff (the holder runs a few dozen instructions) and
/// parks only if the holder makes no progress for tens of microseconds (it
/// was preempted); an unlock wakes a thread only when one is parked.
///
/// The lock word sits right before the data, so a critical section on data
/// that fits the rest of the cache line moves one line between CPUs, not two.
///
/// Built from this module's atomics, cells, mutex and condvar, so loom
/// models the lock itself: the parking protocol and, through the cell, that
/// no two guards ever overlap.
///
/// Protocol: `state` is [`UNLOCKED`], [`LOCKED`] or [`CONTENDED`]. Lockers
/// take the lock by moving it from `UNLOCKED` (CAS to `LOCKED` while
/// spinning, swap to `CONTENDED` when parking). A parker holds `park` from
/// before its swap until the condvar wait releases it, and an unlocker that
/// swapped `CONTENDED` out takes `park` before notifying, so the wake cannot
/// fall between a parker's failed swap and its wait. `park` counts the
/// parked threads; a parker that takes the lock while none other is parked
/// downgrades `CONTENDED` to `LOCKED`, so that the unlocks after a burst of
/// contention go back to a single atomic swap.
#[repr(C)]
pub(crate) struct SpinMutex<T> {
    state: AtomicU32,
    data: UnsafeCell<T>,
    park: Mutex<u32>,
    wake: Condvar,
}

// SAFETY: the lock hands out access to `data` to one thread at a time, as
// `std::sync::Mutex` does; `T: Send` is all that needs.
unsafe impl<T: Send> Sync for SpinMutex<T> {}
// SAFETY: as above, moving the mutex moves the `T`.
unsafe impl<T: Send> Send for SpinMutex<T> {}

impl<T> SpinMutex<T> {
    pub(crate) fn new(v: T) -> Self {
        SpinMutex {
            state: AtomicU32::new(UNLOCKED),
            data: UnsafeCell::new(v),
            park: Mutex::new(0),
            wake: Condvar::new(),
        }
    }

    /// Locks, spinning then parking while another thread holds the lock.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard::new(self)
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        for round in 0..SPIN_ROUNDS {
            for _ in 0..1u32 << (SPIN_FIRST_SHIFT + round) {
                spin_pause();
            }
            // Read before trying, so spinning shares the line instead of
            // stealing it from the holder on every round.
            if self.state.load(Ordering::Relaxed) == UNLOCKED
                && self
                    .state
                    .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
        let mut parked = lock(&self.park);
        *parked += 1;
        loop {
            if self.state.swap(CONTENDED, Ordering::Acquire) == UNLOCKED {
                *parked -= 1;
                if *parked == 0 {
                    // No one else is parked, and no one can start parking
                    // while we hold `park`: the next unlock need not wake.
                    // Only we write `state` while we hold the lock (others
                    // CAS from UNLOCKED, or swap while holding `park`).
                    self.state.store(LOCKED, Ordering::Relaxed);
                }
                return;
            }
            parked = wait(&self.wake, parked);
        }
    }

    #[inline]
    fn unlock(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            self.unlock_wake();
        }
    }

    #[cold]
    #[inline(never)]
    fn unlock_wake(&self) {
        let parked = lock(&self.park);
        if *parked > 0 {
            self.wake.notify_one();
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SpinMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinMutex").finish_non_exhaustive()
    }
}

/// One pause of a spin loop; under loom or shuttle a yield (neither gives
/// progress to a thread that never yields).
#[inline(always)]
fn spin_pause() {
    #[cfg(not(any(loom, shuttle)))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(shuttle, not(loom)))]
    shuttle::thread::yield_now();
}

/// The holder's access to a [`SpinMutex`]'s data; unlocks when dropped.
pub(crate) struct SpinGuard<'a, T> {
    mutex: &'a SpinMutex<T>,
    /// Under loom, the tracked access to the cell for the guard's whole
    /// life: loom fails the model if two guards' accesses are not ordered.
    /// Ended before the unlock.
    #[cfg(loom)]
    access: Option<loom::cell::MutPtr<T>>,
    /// Not `Send`: unlocked by the thread that locked, like std's guard.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl<'a, T> SpinGuard<'a, T> {
    #[inline(always)]
    fn new(mutex: &'a SpinMutex<T>) -> Self {
        SpinGuard {
            mutex,
            #[cfg(loom)]
            access: Some(mutex.data.0.get_mut()),
            _not_send: std::marker::PhantomData,
        }
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        #[cfg(not(loom))]
        // SAFETY: the guard holds the lock, so no other thread accesses the
        // data until it drops; the borrow is tied to the guard's.
        return unsafe { &*self.mutex.data.0.get() };
        #[cfg(loom)]
        // SAFETY: as above; loom tracks the access for the guard's life.
        return unsafe { self.access.as_ref().expect("guard in use").deref() };
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(not(loom))]
        // SAFETY: the guard holds the lock exclusively and is borrowed
        // mutably, so this is the only reference to the data.
        return unsafe { &mut *self.mutex.data.0.get() };
        #[cfg(loom)]
        // SAFETY: as above; loom tracks the access for the guard's life.
        return unsafe { self.access.as_mut().expect("guard in use").deref() };
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // The tracked access ends before another thread can lock.
        #[cfg(loom)]
        drop(self.access.take());
        self.mutex.unlock();
    }
}

/// Loom models of [`SpinMutex`]: mutual exclusion (the guard's tracked cell
/// access fails the model if two critical sections overlap) and no lost
/// wake-up (a parked thread nobody wakes is a deadlock loom reports), with
/// two and three threads, each locking once or twice so that a parked
/// thread's downgrade to `LOCKED` is followed by more contention.
///
/// Run with `RUSTFLAGS="--cfg loom" cargo test --release -p uvfs --lib
/// primitive::` (scripts/test does).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    fn builder(preemptions: usize) -> loom::model::Builder {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(preemptions);
        b
    }

    /// `threads` threads (the main one included) each add one `times`
    /// times; the total must come out exact.
    fn model(threads: usize, times: usize, preemptions: usize) {
        builder(preemptions).check(move || {
            let m = Arc::new(SpinMutex::new(0usize));
            let handles: Vec<_> = (1..threads)
                .map(|_| {
                    let m = m.clone();
                    thread::spawn(move || {
                        for _ in 0..times {
                            *m.lock() += 1;
                        }
                    })
                })
                .collect();
            for _ in 0..times {
                *m.lock() += 1;
            }
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(*m.lock(), threads * times);
            assert_eq!(m.state.load(Ordering::Relaxed), UNLOCKED);
        });
    }

    #[test]
    fn spin_mutex_two_threads() {
        model(2, 2, 3);
    }

    #[test]
    fn spin_mutex_three_threads() {
        model(3, 1, 2);
    }
}

/// Stress tests of [`SpinMutex`] on real threads: more threads than CPUs
/// (so holders are preempted and waiters park), a read-modify-write of
/// plain data that any overlap of two critical sections would tear.
#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn spin_mutex_excludes_and_wakes() {
        const THREADS: usize = 8;
        const ITERS: usize = 20_000;
        let m = Arc::new(SpinMutex::new((0u64, 0u64)));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for i in 0..ITERS {
                        let mut g = m.lock();
                        // Two words that must move together.
                        let (a, b) = *g;
                        assert_eq!(a, b, "critical sections overlapped");
                        if (i + t) % 512 == 0 {
                            // Hold the lock long enough that the others give
                            // up spinning and park.
                            std::thread::sleep(std::time::Duration::from_micros(200));
                        }
                        *g = (a + 1, b + 1);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            *m.lock(),
            ((THREADS * ITERS) as u64, (THREADS * ITERS) as u64)
        );
        assert_eq!(m.state.load(Ordering::Relaxed), UNLOCKED);
        assert_eq!(*lock(&m.park), 0);
    }
}
