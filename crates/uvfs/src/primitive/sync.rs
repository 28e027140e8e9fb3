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
/// crate's minimum version. Only for a `T` aligned to at most
/// [`CALLOC_ALIGN`]: std's allocator zeroes a block of a larger alignment
/// with a `memset` of all of it (every page faulted in); such a `T` takes
/// a [`ZeroedSlice`].
///
/// # Safety
/// All-zero bytes are a valid `T`.
#[cfg(not(any(loom, shuttle)))]
pub(crate) unsafe fn zeroed_slice<T>(n: usize) -> Box<[T]> {
    const { assert!(std::mem::align_of::<T>() <= CALLOC_ALIGN) };
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

/// The largest alignment for which std's allocator on Linux (glibc)
/// serves `alloc_zeroed` with `calloc`, whose large blocks are fresh,
/// untouched pages; above it, std allocates aligned and zeroes with a
/// `memset` (on x86-64 and aarch64 its `MIN_ALIGN` is 16).
#[cfg(not(any(loom, shuttle)))]
const CALLOC_ALIGN: usize = 16;

/// `n` zeroed values of a `T` of any alignment, in memory the allocator
/// hands out zeroed, as [`zeroed_slice`] gives for a `T` aligned to at most
/// 16 bytes: the block is asked for at 16-byte alignment (so `calloc`
/// serves it: a large one is fresh pages, resident only once written),
/// `align_of::<T>() - 16` bytes longer, and the slice starts at the first
/// address inside it aligned for `T`. For the path cache's 64-byte
/// aligned slots: a `Box<[T]>` of them was zeroed with a `memset` of its
/// 256 KiB, the first uvfs call's largest cost after the dentry cache's
/// locks (docs/preload-firstcall.md).
#[cfg(not(any(loom, shuttle)))]
pub(crate) struct ZeroedSlice<T> {
    /// The first value (aligned for `T`; dangling when nothing was
    /// allocated).
    ptr: std::ptr::NonNull<T>,
    len: usize,
    /// The allocation (`None` for zero bytes) and its layout.
    block: Option<(std::ptr::NonNull<u8>, std::alloc::Layout)>,
}

// SAFETY: a `ZeroedSlice` owns its values as a `Box<[T]>` does.
#[cfg(not(any(loom, shuttle)))]
unsafe impl<T: Send> Send for ZeroedSlice<T> {}
// SAFETY: shared access only hands out `&[T]`, as a `Box<[T]>` does.
#[cfg(not(any(loom, shuttle)))]
unsafe impl<T: Sync> Sync for ZeroedSlice<T> {}

#[cfg(not(any(loom, shuttle)))]
impl<T> ZeroedSlice<T> {
    /// `n` values of `T`, all bytes zero.
    ///
    /// # Safety
    /// All-zero bytes are a valid `T`.
    pub(crate) unsafe fn new(n: usize) -> ZeroedSlice<T> {
        let align = std::mem::align_of::<T>();
        let size = std::mem::size_of::<T>().checked_mul(n);
        let Some(size) = size.filter(|s| *s <= isize::MAX as usize - align) else {
            panic!("a zeroed slice of {n} elements overflows the address space");
        };
        if size == 0 {
            return ZeroedSlice {
                ptr: std::ptr::NonNull::dangling(),
                len: n,
                block: None,
            };
        }
        let base_align = align.min(CALLOC_ALIGN);
        // A block aligned to `base_align` has an address aligned to
        // `align` within its first `align - base_align` bytes.
        let Ok(layout) =
            std::alloc::Layout::from_size_align(size + (align - base_align), base_align)
        else {
            panic!("a zeroed slice of {n} elements overflows the address space");
        };
        // SAFETY: a non-zero size.
        let Some(base) = std::ptr::NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }) else {
            std::alloc::handle_alloc_error(layout);
        };
        let skip = base.as_ptr().align_offset(align);
        debug_assert!(skip <= align - base_align);
        // SAFETY: `skip + size` is within the block (see above).
        let ptr = unsafe { base.add(skip) }.cast::<T>();
        ZeroedSlice {
            ptr,
            len: n,
            block: Some((base, layout)),
        }
    }
}

#[cfg(not(any(loom, shuttle)))]
impl<T> std::ops::Deref for ZeroedSlice<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `len` values, zeroed (valid per `new`'s contract) or
        // changed only through `&T`'s interior mutability since, aligned,
        // inside the block this owns (or zero-sized and dangling).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(any(loom, shuttle)))]
impl<T> Drop for ZeroedSlice<T> {
    fn drop(&mut self) {
        // SAFETY: the values are valid and owned here, dropped once.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ));
        }
        if let Some((base, layout)) = self.block {
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { std::alloc::dealloc(base.as_ptr(), layout) };
        }
    }
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

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::ZeroedSlice;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// A 64-byte aligned value, as the path cache's slots are, that counts
    /// its drops.
    #[repr(align(64))]
    struct Wide {
        word: AtomicU64,
    }

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    impl Drop for Wide {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_zeroed_slice_is_aligned_zero_and_dropped_once() {
        for n in [0usize, 1, 3, 64, 1000] {
            let before = DROPS.load(Ordering::Relaxed);
            // SAFETY: an all-zero `Wide` is a zero atomic.
            let s = unsafe { ZeroedSlice::<Wide>::new(n) };
            assert_eq!(s.len(), n);
            assert_eq!(s.as_ptr() as usize % 64, 0, "{n} values");
            for (i, w) in s.iter().enumerate() {
                assert_eq!(w.word.load(Ordering::Relaxed), 0);
                w.word.store(i as u64 + 1, Ordering::Relaxed);
            }
            let sum: u64 = s.iter().map(|w| w.word.load(Ordering::Relaxed)).sum();
            assert_eq!(sum, (n * (n + 1) / 2) as u64);
            drop(s);
            assert_eq!(DROPS.load(Ordering::Relaxed) - before, n);
        }
        // Byte-aligned and zero-sized values.
        // SAFETY: all-zero bytes are a valid `u8` and `()`.
        let b = unsafe { ZeroedSlice::<u8>::new(10_000) };
        assert!(b.iter().all(|&x| x == 0));
        // SAFETY: as above.
        let z = unsafe { ZeroedSlice::<()>::new(5) };
        assert_eq!(z.len(), 5);
    }

    /// The point of [`ZeroedSlice`]: a large slice of over-aligned values
    /// is fresh memory, not resident until written (std's `alloc_zeroed`
    /// at 64-byte alignment wrote all of it: every page resident). 64 MiB
    /// is above glibc's largest `mmap` threshold, so the block is always
    /// its own mapping; at most its first page (a huge page where THP is
    /// on for every mapping) is touched, by the allocator's header.
    #[test]
    fn a_large_zeroed_slice_of_aligned_values_is_not_resident() {
        const BYTES: usize = 64 << 20;
        // SAFETY: as above.
        let s = unsafe { ZeroedSlice::<Wide>::new(BYTES / 64) };
        // SAFETY: a plain query.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
        let start = s.as_ptr() as usize & !(page - 1);
        let end = s.as_ptr() as usize + BYTES;
        let pages = (end - start).div_ceil(page);
        let mut vec = vec![0u8; pages];
        // SAFETY: the range lies within the slice's mapping (rounded to
        // its pages); `vec` holds a byte per page.
        let r = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
        let resident = vec.iter().filter(|&&b| b & 1 != 0).count() * page;
        assert!(
            resident <= 4 << 20,
            "{} KiB of a fresh 64 MiB zeroed slice resident",
            resident >> 10
        );
        // Written, a value's page becomes resident.
        s[s.len() / 2].word.store(1, Ordering::Relaxed);
        assert_eq!(s[s.len() / 2].word.load(Ordering::Relaxed), 1);
    }
}
