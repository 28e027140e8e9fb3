//! A spin-then-park lock for short critical sections every thread of a
//! process touches ([`SpinMutex`]), with its loom models and stress tests.
//!
//! Built only from the facade's atomics, cell, mutex and condvar, so under
//! loom the lock itself is modelled (its parking protocol, and through the
//! cell that no two guards overlap), and under shuttle its waits are
//! scheduling points.

use super::cell::UnsafeCell;
use super::hint;
use super::sync::atomic::{AtomicU32, Ordering};
use super::sync::{Condvar, Mutex, lock, wait};

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
/// Built from the facade's atomics, cell, mutex and condvar, so loom
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

    /// Runs `f` on the data without taking the lock: for an owner that
    /// knows no other thread can reach the mutex (the fd table of a process
    /// with one thread). Under loom the access is tracked like a guard's, so
    /// a model fails if it is not ordered with every locked access.
    ///
    /// # Safety
    /// While `f` runs no other thread accesses the data, locked or not, and
    /// every earlier access by another thread happens before this call (its
    /// unlock was followed by a release this thread acquired). The calling
    /// thread does not hold the lock.
    #[inline(always)]
    pub(crate) unsafe fn with_unlocked<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: per the contract this is the only access to the data.
        self.data.with_mut(|p| f(unsafe { &mut *p }))
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        for round in 0..SPIN_ROUNDS {
            for _ in 0..1u32 << (SPIN_FIRST_SHIFT + round) {
                hint::spin_loop();
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
            access: Some(mutex.data.tracked_mut()),
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
        return unsafe { &*self.mutex.data.get() };
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
        return unsafe { &mut *self.mutex.data.get() };
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

    use crate::primitive::model::builder;

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
