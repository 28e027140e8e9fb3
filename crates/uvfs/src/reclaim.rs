//! Memory reclamation for the stock (pre-seed) file lifetime: heap file
//! objects freed after an epoch grace period, the user-space stand-in for
//! `call_rcu`. All of uvfs's use of crossbeam-epoch is here, so the scheme
//! can be swapped in one place.

use std::ptr::NonNull;

/// A read-side critical section: while it lives, nothing retired through
/// [`defer_drop_box`] after it began is freed.
pub(crate) type Guard = crossbeam_epoch::Guard;

/// Enters a read-side critical section (the `rcu_read_lock` analogue).
#[inline]
pub(crate) fn pin() -> Guard {
    crossbeam_epoch::pin()
}

/// Frees a `Box<T>` once every critical section that might still see it has
/// ended.
///
/// Under loom it leaks instead. crossbeam-epoch is not loom-aware: all of a
/// model's threads run on one OS thread, so its pins are not per model
/// thread, and a box retired by one model thread could be freed while
/// another still reads it (or in a later execution, dropping loom objects
/// after their execution ended). The loom models check the sequence-count
/// and reference-count protocols, which decide *when* an object may be
/// retired; crossbeam's own tests check its epochs. Leaking keeps every
/// retired object readable, so a model that reaches one reads it, and checks
/// what it reads, instead of crashing.
///
/// Under shuttle it leaks too: its threads also share one OS thread (and so
/// one crossbeam pin, which is conservative but not per thread), and a
/// destructor crossbeam ran after the execution ended would touch shuttle
/// atomics outside it.
///
/// # Safety
/// `ptr` came from `Box::into_raw`, is unreachable for new readers, and is
/// not used by the caller again.
pub(crate) unsafe fn defer_drop_box<T>(ptr: NonNull<T>) {
    #[cfg(any(loom, shuttle))]
    let _ = ptr;
    #[cfg(not(any(loom, shuttle)))]
    {
        let guard = pin();
        // SAFETY: the caller hands over sole ownership of a boxed `T` that no
        // new reader can reach; readers that may still hold it are pinned,
        // and the epoch scheme runs the closure only after all of them have
        // unpinned.
        unsafe {
            guard.defer_unchecked(move || drop(Box::from_raw(ptr.as_ptr())));
        }
    }
}

/// Runs `free(ptr)` once every critical section that might still see `ptr`
/// has ended: [`defer_drop_box`] for an object not allocated as a `Box`
/// (a dentry's name, a header with its bytes after it). Under loom and
/// shuttle it leaks, as `defer_drop_box` does.
///
/// # Safety
/// `ptr` is unreachable for new readers and not used by the caller again;
/// `free(ptr)` is sound once nobody reads it.
pub(crate) unsafe fn defer_free<T>(ptr: NonNull<T>, free: unsafe fn(NonNull<T>)) {
    #[cfg(any(loom, shuttle))]
    let _ = (ptr, free);
    #[cfg(not(any(loom, shuttle)))]
    {
        let guard = pin();
        // SAFETY: the caller hands over sole ownership of an object no new
        // reader can reach; the epoch scheme runs the closure only after
        // every reader that may still hold it has unpinned, when `free` is
        // sound (the caller's contract).
        unsafe {
            guard.defer_unchecked(move || free(ptr));
        }
    }
}

/// Allocates a `Box<T>`, reporting allocation failure as `None` instead of
/// aborting.
pub(crate) fn try_box<T>(value: T) -> Option<Box<T>> {
    let layout = std::alloc::Layout::new::<T>();
    if layout.size() == 0 {
        return Some(Box::new(value));
    }
    // SAFETY: the layout has a non-zero size, as `alloc` requires.
    let raw = unsafe { std::alloc::alloc(layout) }.cast::<T>();
    let raw = NonNull::new(raw)?;
    // SAFETY: `raw` is a fresh allocation with `T`'s layout; writing a value
    // into it and handing it to `Box` (which frees with the same layout) is
    // exactly what `Box::new` does.
    unsafe {
        raw.as_ptr().write(value);
        Some(Box::from_raw(raw.as_ptr()))
    }
}
