//! The shim's concurrency facade (as crates/uvfs's `primitive`): the one
//! place [`fork_gate`](crate::fork_gate), the switch's table of waits
//! ([`cancel`](crate::cancel)) and the placeholder numbering take their
//! atomics, locks, cells and waits from. std's in a normal
//! build (the facade costs nothing); loom's under `--cfg loom`, so the loom
//! models (`fork_gate/loom_tests.rs`) run the very code that ships, every
//! access a point where the model may switch threads, every cell access
//! checked for races.
//!
//! | facade                          | std (normal build)            | loom                       |
//! |---------------------------------|-------------------------------|----------------------------|
//! | [`atomic`]`::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence}` | `std::sync::atomic` | `loom::sync::atomic` |
//! | [`Mutex`], [`MutexGuard`]       | `std::sync`                   | `loom::sync`               |
//! | [`yield_now`], [`spin_loop`]    | `std::thread`, `std::hint`    | `loom::thread::yield_now`  |
//! | [`RawLock`]                     | a pthread mutex               | a spin lock of loom atomics |
//! | [`ForkLock`]                    | a pthread mutex and std's cell | loom's spin lock and checked cell |
//! | [`SpinLock`]                    | std's cell                    | loom's checked cell        |
//!
//! The light half of the fork gate's asymmetric fence (a compiler fence)
//! and its heavy half (`membarrier`) are the gate's own (see
//! `fork_gate`), modelled there.

/// `std::sync::atomic`'s mirror.
pub(crate) mod atomic {
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
    };

    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence,
    };
}

use atomic::{AtomicBool, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Locks `m`, even if a panic (caught as `EIO`) left it poisoned: the data
/// behind each of the shim's locks is valid between any two statements.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Gives the CPU up while waiting for another thread (under loom, tells
/// the model this thread cannot progress until another one runs).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// A spin-wait hint (under loom, a yield as [`yield_now`]).
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// A lock without a guard, locked in one function and unlocked in another
/// (the fork lock: taken by `fork`'s prepare handler, given back by its
/// release handlers, in the parent and in the child). A statically
/// initialized pthread mutex normally (a waiter sleeps in the kernel for
/// as long as a fork takes); under loom a spin lock of loom atomics with
/// the same ordering (acquire on lock, release on unlock).
pub(crate) struct RawLock {
    #[cfg(not(loom))]
    m: std::cell::UnsafeCell<libc::pthread_mutex_t>,
    #[cfg(loom)]
    locked: AtomicBool,
}

// SAFETY: a pthread mutex is made to be shared between threads (and loom's
// atomic is `Sync` anyway).
unsafe impl Sync for RawLock {}

impl RawLock {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> RawLock {
        RawLock {
            m: std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> RawLock {
        RawLock {
            locked: AtomicBool::new(false),
        }
    }

    pub(crate) fn lock(&self) {
        #[cfg(not(loom))]
        // SAFETY: a statically initialized normal mutex, never destroyed.
        unsafe {
            libc::pthread_mutex_lock(self.m.get())
        };
        #[cfg(loom)]
        // A compare-exchange, not a swap: loom's model of a swap loop that
        // keeps writing the held value never lets the unlock's store be
        // read (its store history is bounded), and reports a livelock.
        while self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            yield_now();
        }
    }

    /// Called by the thread that locked it (in a fork child, the only
    /// thread, which locked it before the fork).
    pub(crate) fn unlock(&self) {
        #[cfg(not(loom))]
        // SAFETY: as in `lock`; the caller holds the lock.
        unsafe {
            libc::pthread_mutex_unlock(self.m.get())
        };
        #[cfg(loom)]
        self.locked.store(false, Ordering::Release);
    }
}

/// Data behind a [`RawLock`] that `fork`'s prepare handler can hold until
/// its release handlers (the fork gate's list of slots). A thread takes it
/// for a few instructions through a [`ForkGuard`]; the prepare handler
/// takes it too and keeps it ([`ForkGuard::keep`]) across the fork, so the
/// child never gets a copy locked by a thread it does not have (a pthread
/// mutex copied locked stays locked in the child for ever). The release
/// handlers give it back ([`ForkLock::unlock_kept`]), in the parent and in
/// the child.
pub(crate) struct ForkLock<T> {
    raw: RawLock,
    #[cfg(not(loom))]
    data: std::cell::UnsafeCell<T>,
    #[cfg(loom)]
    data: loom::cell::UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, which holds the raw
// lock (or, for a kept lock, by its keeper); `T: Send` lets it move
// between threads.
unsafe impl<T: Send> Sync for ForkLock<T> {}

impl<T> ForkLock<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new(v: T) -> ForkLock<T> {
        ForkLock {
            raw: RawLock::new(),
            data: std::cell::UnsafeCell::new(v),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(v: T) -> ForkLock<T> {
        ForkLock {
            raw: RawLock::new(),
            data: loom::cell::UnsafeCell::new(v),
        }
    }

    /// Waits for the lock (asleep in the kernel, for as long as a fork
    /// takes) and gives the data.
    pub(crate) fn lock(&self) -> ForkGuard<'_, T> {
        self.raw.lock();
        ForkGuard {
            lock: self,
            #[cfg(loom)]
            access: Some(self.data.get_mut()),
        }
    }

    /// Gives back a lock that [`ForkGuard::keep`] kept: called by the
    /// thread that kept it (in a fork child, the only thread, which kept
    /// it before the fork).
    pub(crate) fn unlock_kept(&self) {
        self.raw.unlock();
    }

    /// Reads the data while this thread keeps the lock (a check made
    /// between a [`ForkGuard::keep`] and the [`ForkLock::unlock_kept`]: the
    /// fuzz target's one thread in an alone call or a fork, the loom
    /// models' stand-in for a fork child's copy). Taking the lock there
    /// would wait for ever on this thread's own hold.
    ///
    /// # Safety
    /// This thread kept the lock and has not given it back, so no guard is
    /// alive (under loom the model also checks the access).
    pub(crate) unsafe fn read_kept<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        #[cfg(not(loom))]
        // SAFETY: the caller keeps the lock: no guard, so no `&mut`, is
        // alive.
        return f(unsafe { &*self.data.get() });
        #[cfg(loom)]
        // SAFETY: as above; loom checks the access against every other one.
        return self.data.with(|p| f(unsafe { &*p }));
    }
}

/// The data of a [`ForkLock`], whose lock this holds until dropped (or
/// kept).
pub(crate) struct ForkGuard<'a, T> {
    lock: &'a ForkLock<T>,
    /// Loom's record of this access (ended before the lock is given back).
    #[cfg(loom)]
    access: Option<loom::cell::MutPtr<T>>,
}

impl<T> ForkGuard<'_, T> {
    /// Leaves the lock held after the guard is gone, until
    /// [`ForkLock::unlock_kept`] (`fork`'s prepare handler, for its release
    /// handlers).
    #[cfg_attr(not(loom), allow(unused_mut))]
    pub(crate) fn keep(mut self) {
        #[cfg(loom)]
        drop(self.access.take());
        std::mem::forget(self);
    }

    fn ptr(&self) -> *mut T {
        #[cfg(not(loom))]
        return self.lock.data.get();
        #[cfg(loom)]
        // SAFETY: loom's pointer is live until the guard drops; it only
        // hands out the raw pointer here (loom checked the access when the
        // guard was made).
        return unsafe {
            std::ptr::from_mut(
                self.access
                    .as_ref()
                    .expect("the access lives as long as the guard")
                    .deref(),
            )
        };
    }
}

impl<T> std::ops::Deref for ForkGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock: no other reference exists.
        unsafe { &*self.ptr() }
    }
}

impl<T> std::ops::DerefMut for ForkGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *self.ptr() }
    }
}

impl<T> Drop for ForkGuard<'_, T> {
    fn drop(&mut self) {
        #[cfg(loom)]
        drop(self.access.take());
        self.lock.raw.unlock();
    }
}

/// A lock for the placeholder numbering's slow path (a fresh `/dev/null`
/// open, a flush, an `uncache`; the cache itself is claimed and refilled
/// without it): one atomic compare-exchange to take it and a plain store to
/// give it back. Held for a few
/// instructions, or across one `/dev/null` open or a flush's closes; a
/// waiter spins briefly, then yields. Taken only inside the fork gate,
/// so never held across a fork. Its owner may skip it while alone
/// ([`lock_unless`](Self::lock_unless)): the fork gate's `SHARED` mark
/// says when. The flag comes first (`repr(C)`), so the data's first bytes
/// share its cache line.
#[repr(C)]
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    #[cfg(not(loom))]
    data: std::cell::UnsafeCell<T>,
    #[cfg(loom)]
    data: loom::cell::UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, and one guard exists
// at a time (the flag's exchange, or the caller's `solo` promise); `T:
// Send` lets it move between threads.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new(v: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            data: std::cell::UnsafeCell::new(v),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(v: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            data: loom::cell::UnsafeCell::new(v),
        }
    }

    /// The data without taking the lock when `solo` (the caller promises
    /// that no other thread can reach the data: the owner's call while no
    /// other thread has ever entered the fork gate, see `State::solo`),
    /// else locked.
    #[inline]
    pub(crate) fn lock_unless(&self, solo: bool) -> SpinGuard<'_, T> {
        if solo {
            return SpinGuard::new(self, false);
        }
        self.lock()
    }

    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        // A compare-exchange (as costly as a swap: one locked instruction)
        // rather than a swap: see `RawLock::lock`.
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            let mut spins = 0u32;
            while self.locked.load(Ordering::Relaxed) {
                if spins < 64 {
                    spin_loop();
                    spins += 1;
                } else {
                    yield_now();
                }
            }
        }
        SpinGuard::new(self, true)
    }
}

/// The data, and whether the lock is held (to be given back).
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    held: bool,
    /// Loom's record of this access (ended before the lock is given back).
    #[cfg(loom)]
    access: Option<loom::cell::MutPtr<T>>,
}

impl<'a, T> SpinGuard<'a, T> {
    #[inline]
    fn new(lock: &'a SpinLock<T>, held: bool) -> SpinGuard<'a, T> {
        SpinGuard {
            lock,
            held,
            #[cfg(loom)]
            access: Some(lock.data.get_mut()),
        }
    }

    #[inline]
    fn ptr(&self) -> *mut T {
        #[cfg(not(loom))]
        return self.lock.data.get();
        #[cfg(loom)]
        // SAFETY: loom's pointer is live until the guard drops; it only
        // hands out the raw pointer here (loom checked the access when the
        // guard was made).
        return unsafe {
            std::ptr::from_mut(
                self.access
                    .as_ref()
                    .expect("the access lives as long as the guard")
                    .deref(),
            )
        };
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, or the caller is `solo`: no
        // other reference exists.
        unsafe { &*self.ptr() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *self.ptr() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        #[cfg(loom)]
        drop(self.access.take());
        if self.held {
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}
