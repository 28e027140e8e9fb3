//! `std::sync`'s mirror: the locks and condition variable the concurrent
//! core is built from, and (in [`atomic`]) its atomics.
//!
//! Two kinds of lock, named for what the models see:
//! - [`Mutex`] (with [`MutexGuard`] and [`Condvar`]): *modelled*. std's
//!   normally, loom's under loom, shuttle's under shuttle. Everything the
//!   loom models exercise (the inode cache, the dentry cache, the file pool,
//!   [`SpinMutex`](super::spin::SpinMutex)'s parking) locks these.
//! - [`UnmodelledMutex`] and [`UnmodelledRwLock`]: for state no loom model
//!   covers (the cwd, the mount table, rename locks, tmpfs's inodes). std's
//!   normally *and under loom*, so a loom model that happens to pass through
//!   them (a whole `Vfs` is built in each) does not multiply its state space
//!   with locks whose interleavings it is not about. Under shuttle they are
//!   shuttle's: shuttle's threads are coroutines on one OS thread, so one
//!   that blocked on a std lock held by another shuttle thread would block
//!   them all, and shuttle's schedules cover the whole VFS anyway.
//!
//! - [`SlimRwLock`]: an unmodelled reader-writer lock without a poison
//!   flag (`parking_lot`'s, one word), for tmpfs's inodes, where the 8
//!   bytes std's poison flag costs with its padding is a malloc size class
//!   a file. Unmodelled like [`UnmodelledRwLock`] (`parking_lot`'s under
//!   loom too); under shuttle a thin wrapper over shuttle's lock, so
//!   shuttle still schedules it.
//!
//! Poisoning is ignored everywhere ([`lock`], [`wait`], [`lock_unmodelled`]):
//! nothing in uvfs panics while holding a lock, and a caller's panic
//! elsewhere must not wedge a table.

#[cfg(not(any(loom, shuttle)))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(all(shuttle, not(loom)))]
pub(crate) use shuttle::sync::{Condvar, Mutex, MutexGuard};

/// `std::sync::atomic`'s mirror: std's atomics normally, loom's under loom
/// (every access a point where the model may switch threads, every
/// ordering checked), shuttle's under shuttle.
pub(crate) mod atomic {
    #[cfg(not(any(loom, shuttle)))]
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };

    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };

    #[cfg(all(shuttle, not(loom)))]
    pub(crate) use shuttle::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };
}

/// `n` atomic pointers, all null, for a hash table's buckets. With std's
/// atomics the memory comes zeroed from the allocator (`calloc`, fresh
/// pages for a large table), so a bucket's page becomes resident only when
/// a bucket on it is first written: a table sized for a million entries
/// costs a program that uses ten a few pages, not megabytes. Loom's and
/// shuttle's atomics are built one by one.
pub(crate) fn null_ptrs<T>(n: usize) -> Box<[atomic::AtomicPtr<T>]> {
    #[cfg(not(any(loom, shuttle)))]
    {
        // SAFETY: an all-zero `AtomicPtr` is a valid null pointer (std's
        // atomics have the layout of the raw pointer they hold).
        unsafe { zeroed_slice(n) }
    }
    #[cfg(any(loom, shuttle))]
    {
        (0..n)
            .map(|_| atomic::AtomicPtr::new(std::ptr::null_mut()))
            .collect()
    }
}

/// `n` values of `T`, all bytes zero, in memory the allocator hands out
/// zeroed (`calloc`: fresh pages for a large slice, resident only once
/// written). `Box::new_zeroed_slice` does this from Rust 1.92, above the
/// crate's minimum version.
///
/// # Safety
/// All-zero bytes are a valid `T`.
#[cfg(not(any(loom, shuttle)))]
pub(crate) unsafe fn zeroed_slice<T>(n: usize) -> Box<[T]> {
    let Ok(layout) = std::alloc::Layout::array::<T>(n) else {
        panic!("a zeroed slice of {n} elements overflows the address space");
    };
    if layout.size() == 0 {
        // No allocation for zero bytes: a dangling, aligned pointer is a
        // valid empty (or zero-sized) slice.
        let p = std::ptr::slice_from_raw_parts_mut(std::ptr::NonNull::<T>::dangling().as_ptr(), n);
        // SAFETY: zero bytes to own; the values are zero-sized and, per
        // the contract, valid all-zero.
        return unsafe { Box::from_raw(p) };
    }
    // SAFETY: a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` is a fresh allocation of `layout` (the global allocator,
    // which `Box` frees with the same layout), holding `n` zeroed `T`s,
    // each a valid value per the contract.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) }
}

/// Where the unmodelled locks come from: std's, except under shuttle.
#[cfg(any(loom, not(shuttle)))]
use std::sync as unmodelled;

#[cfg(all(shuttle, not(loom)))]
use shuttle::sync as unmodelled;

/// A mutex loom never sees, for state no loom model covers (see the module
/// docs): std's normally and under loom, shuttle's under shuttle.
pub(crate) type UnmodelledMutex<T> = unmodelled::Mutex<T>;
/// The guard of an [`UnmodelledMutex`].
pub(crate) type UnmodelledMutexGuard<'a, T> = unmodelled::MutexGuard<'a, T>;
/// A reader-writer lock loom never sees (see [`UnmodelledMutex`]).
pub(crate) type UnmodelledRwLock<T> = unmodelled::RwLock<T>;

/// Locks `m`, ignoring poisoning: nothing in uvfs panics while holding a
/// lock, and a caller's panic elsewhere must not wedge the table.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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

/// Waits on `cv` for at most `dur`, ignoring poisoning like [`lock`];
/// the guard and whether the time ran out. (loom never times out: its
/// models wait without a limit.)
pub(crate) fn wait_timeout<'a, T>(
    cv: &Condvar,
    g: MutexGuard<'a, T>,
    dur: std::time::Duration,
) -> (MutexGuard<'a, T>, bool) {
    match cv.wait_timeout(g, dur) {
        Ok((g, t)) => (g, t.timed_out()),
        Err(poisoned) => {
            let (g, t) = poisoned.into_inner();
            (g, t.timed_out())
        }
    }
}

/// Locks an [`UnmodelledMutex`], ignoring poisoning like [`lock`].
pub(crate) fn lock_unmodelled<T>(m: &UnmodelledMutex<T>) -> UnmodelledMutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A reader-writer lock loom never sees, without a poison flag: one word
/// where std's takes two with the flag and its padding (see the module
/// docs). `parking_lot`'s normally and under loom (as [`UnmodelledRwLock`]
/// is std's there); shuttle's, through [`SlimRwLock`]'s wrapper, under
/// shuttle.
#[cfg(any(loom, not(shuttle)))]
pub(crate) type SlimRwLock<T> = parking_lot::RwLock<T>;
/// The read guard of a [`SlimRwLock`].
#[cfg(any(loom, not(shuttle)))]
pub(crate) type SlimRwLockReadGuard<'a, T> = parking_lot::RwLockReadGuard<'a, T>;
/// The write guard of a [`SlimRwLock`].
#[cfg(any(loom, not(shuttle)))]
pub(crate) type SlimRwLockWriteGuard<'a, T> = parking_lot::RwLockWriteGuard<'a, T>;

#[cfg(all(shuttle, not(loom)))]
pub(crate) use slim_shuttle::{SlimRwLock, SlimRwLockReadGuard, SlimRwLockWriteGuard};

/// [`SlimRwLock`] under shuttle: shuttle's lock with `parking_lot`'s
/// interface (no poisoning: a poisoned lock is taken as it is).
#[cfg(all(shuttle, not(loom)))]
mod slim_shuttle {
    pub(crate) use shuttle::sync::{
        RwLockReadGuard as SlimRwLockReadGuard, RwLockWriteGuard as SlimRwLockWriteGuard,
    };

    pub(crate) struct SlimRwLock<T>(shuttle::sync::RwLock<T>);

    impl<T> SlimRwLock<T> {
        pub(crate) fn new(v: T) -> Self {
            SlimRwLock(shuttle::sync::RwLock::new(v))
        }

        pub(crate) fn read(&self) -> SlimRwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|e| e.into_inner())
        }

        pub(crate) fn write(&self) -> SlimRwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|e| e.into_inner())
        }

        pub(crate) fn try_read(&self) -> Option<SlimRwLockReadGuard<'_, T>> {
            match self.0.try_read() {
                Ok(g) => Some(g),
                Err(shuttle::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(shuttle::sync::TryLockError::WouldBlock) => None,
            }
        }

        pub(crate) fn try_write(&self) -> Option<SlimRwLockWriteGuard<'_, T>> {
            match self.0.try_write() {
                Ok(g) => Some(g),
                Err(shuttle::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(shuttle::sync::TryLockError::WouldBlock) => None,
            }
        }

        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(|e| e.into_inner())
        }
    }
}
