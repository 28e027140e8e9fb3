//! Memory reclamation for objects read without a reference (dentries and
//! their names, the stock side's heap files): freed after a grace period,
//! the user-space stand-in for `call_rcu`. All of uvfs's epoch use is here.
//!
//! Two read sides, chosen per call by the `cheap_pin` fast-path switch:
//! crossbeam-epoch's pin (a `SeqCst` read-modify-write and a thread-local
//! lookup), and the cheap pin of [`domain`]: a per-thread record written
//! with a plain store and a compiler fence, the reclaiming side paying with
//! `membarrier` (see `docs/reclaim.md`). Every retired object waits for
//! both grace periods, the cheap domain's and then crossbeam's, so a reader
//! pinned either way keeps it: the choice of pin is free at every call and
//! a `Vfs` built with either setting can share a process (and objects) with
//! one built with the other.

// Under loom and shuttle retired objects leak and pins are crossbeam's:
// only the loom models use the domain there.
#[cfg_attr(any(loom, shuttle), allow(dead_code))]
mod domain;
#[cfg(not(any(loom, shuttle)))]
mod local;
#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(not(any(loom, shuttle)))]
mod membarrier;
#[cfg(all(test, not(any(loom, shuttle))))]
mod tests;

use std::ptr::NonNull;

/// Tests: seals this thread's retired objects and moves them on as far as
/// the readers allow.
#[cfg(all(test, not(any(loom, shuttle))))]
pub(crate) fn flush() {
    local::flush();
}

/// The cheap pin's domain, for the loom models of protocols built on it
/// elsewhere (tmpfs's page index).
#[cfg(all(test, loom))]
pub(crate) use domain::{Deferred, Domain, Fences, Record};

/// A read-side critical section: while it lives, nothing retired through
/// [`defer_drop_box`] after it began is freed.
pub(crate) struct Guard {
    _inner: Inner,
}

enum Inner {
    Epoch(#[allow(dead_code)] crossbeam_epoch::Guard),
    #[cfg(not(any(loom, shuttle)))]
    Cheap(#[allow(dead_code)] local::CheapGuard),
}

/// Enters a read-side critical section (the `rcu_read_lock` analogue) with
/// crossbeam's pin: the rare paths, and the stock side of `cheap_pin`.
#[inline]
pub(crate) fn pin() -> Guard {
    Guard {
        _inner: Inner::Epoch(crossbeam_epoch::pin()),
    }
}

/// Enters a read-side critical section with the cheap pin if `cheap`
/// (the `cheap_pin` switch), else as [`pin`]. Under loom and shuttle,
/// where retired objects leak (see [`defer_drop_box`]), always crossbeam's.
#[inline]
pub(crate) fn pin_with(cheap: bool) -> Guard {
    #[cfg(not(any(loom, shuttle)))]
    if cheap && let Some(g) = local::pin() {
        return Guard {
            _inner: Inner::Cheap(g),
        };
    }
    let _ = cheap;
    pin()
}

/// Whether the cheap pin runs without a fence (`membarrier` registered)
/// in this process; `None` under loom and shuttle.
pub fn cheap_pin_asymmetric() -> Option<bool> {
    #[cfg(not(any(loom, shuttle)))]
    return Some(local::fences() == domain::Fences::Asymmetric);
    #[cfg(any(loom, shuttle))]
    None
}

/// The cheap side of an asymmetric Dekker pair (store, fence, load on
/// both sides; at least one side sees the other's store): a compiler fence
/// where the process has `membarrier` (the other side's
/// [`heavy_fence`] then runs a full barrier on every CPU running a thread
/// of the process), a `SeqCst` fence otherwise. Under loom and shuttle a
/// `SeqCst` fence, the guarantee `membarrier` gives (as the cheap pin's
/// models take it, `reclaim/loom_tests.rs`). Used by
/// `FastPaths::open_count_lazy`'s opener.
#[inline]
pub(crate) fn light_fence() {
    #[cfg(not(any(loom, shuttle)))]
    if local::fences() == domain::Fences::Asymmetric {
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        return;
    }
    crate::primitive::sync::atomic::fence(crate::primitive::sync::atomic::Ordering::SeqCst);
}

/// The costly side of the pair [`light_fence`] describes: `membarrier`
/// (where the process has it), then a `SeqCst` fence.
pub(crate) fn heavy_fence() {
    #[cfg(not(any(loom, shuttle)))]
    if local::fences() == domain::Fences::Asymmetric {
        membarrier::expedited();
    }
    crate::primitive::sync::atomic::fence(crate::primitive::sync::atomic::Ordering::SeqCst);
}

#[cfg(not(any(loom, shuttle)))]
unsafe fn drop_box<T>(p: *mut ()) {
    // SAFETY: `p` came from `Box::<T>::into_raw` (see `defer_drop_box`) and
    // is freed once.
    drop(unsafe { Box::from_raw(p.cast::<T>()) });
}

/// Frees a `Box<T>` once every critical section that might still see it has
/// ended, under either pin: first the cheap domain's grace period, then
/// crossbeam's.
///
/// Under loom it leaks instead. crossbeam-epoch is not loom-aware: all of a
/// model's threads run on one OS thread, so its pins are not per model
/// thread, and a box retired by one model thread could be freed while
/// another still reads it (or in a later execution, dropping loom objects
/// after their execution ended). The loom models check the sequence-count
/// and reference-count protocols, which decide *when* an object may be
/// retired; crossbeam's own tests check its epochs, and the cheap domain's
/// protocol has loom models of its own (`reclaim/loom_tests.rs`). Leaking
/// keeps every retired object readable, so a model that reaches one reads
/// it, and checks what it reads, instead of crashing.
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
    #[cfg(loom)]
    loom_leaked::keep(ptr.cast(), std::alloc::Layout::new::<T>());
    #[cfg(shuttle)]
    let _ = ptr;
    #[cfg(not(any(loom, shuttle)))]
    {
        // SAFETY: the caller hands over sole ownership of a boxed `T`;
        // `drop_box::<T>` frees exactly that, once, when `run`.
        let d = unsafe { domain::Deferred::new(ptr.as_ptr().cast(), drop_box::<T>) };
        local::retire(d);
    }
}

/// An object released by a function of its own rather than `Box`'s (a
/// dentry's name: a header with its bytes after it): what [`defer_free`]
/// runs when the grace period is over.
pub(crate) trait Free {
    /// Releases the object.
    ///
    /// # Safety
    /// `p` is a live object of this kind that nobody reads any more, and it
    /// is released once.
    // Under loom and shuttle `defer_free` leaks instead of running it.
    #[cfg_attr(any(loom, shuttle), allow(dead_code))]
    unsafe fn free(p: NonNull<Self>);

    /// Under loom: the object's allocation, if it is one block of its own
    /// that [`loom_leaked`] may give back, without running anything of the
    /// object's, once the test's executions are over (`None`: it stays
    /// leaked, as a reference of a shared object does).
    #[cfg(loom)]
    fn loom_block(_p: NonNull<Self>) -> Option<std::alloc::Layout> {
        None
    }
}

#[cfg(not(any(loom, shuttle)))]
unsafe fn free_erased<T: Free>(p: *mut ()) {
    // SAFETY: `p` came from `defer_free::<T>` (a `NonNull<T>`, so not null)
    // and is released once, when the domain runs it.
    unsafe { T::free(NonNull::new_unchecked(p.cast::<T>())) }
}

/// [`defer_drop_box`] for an object released by [`Free::free`]: it runs
/// once every critical section that might still see `ptr` has ended, under
/// either pin. Under loom and shuttle it leaks, as `defer_drop_box` does.
///
/// # Safety
/// `ptr` is a live `T`, unreachable for new readers, and not used by the
/// caller again.
pub(crate) unsafe fn defer_free<T: Free>(ptr: NonNull<T>) {
    #[cfg(loom)]
    if let Some(layout) = T::loom_block(ptr) {
        loom_leaked::keep(ptr.cast(), layout);
    }
    #[cfg(shuttle)]
    let _ = ptr;
    #[cfg(not(any(loom, shuttle)))]
    {
        // SAFETY: the caller hands over sole ownership of a live `T`;
        // `free_erased::<T>` releases exactly that, once, when run.
        let d = unsafe { domain::Deferred::new(ptr.as_ptr().cast(), free_erased::<T>) };
        local::retire(d);
    }
}

/// Under loom, what retirement leaks (see [`defer_drop_box`]) is given
/// back once no execution can read it: as the model harness's `check`
/// starts the next execution and when it returns (the executions before
/// are over, their model threads gone), and at the latest when the test's
/// thread ends. Only the memory: no destructor
/// runs (it would touch loom objects outside an execution), so what an
/// object owns of its own stays leaked. Without this, a test binary held
/// every model's retired objects to its end: 22 GB of the machine's 24 in
/// CI's loom step (2026-11-29).
#[cfg(loom)]
pub(crate) mod loom_leaked {
    use std::alloc::Layout;
    use std::cell::RefCell;
    use std::ptr::NonNull;

    /// The blocks retired on this OS thread (a loom model's threads all
    /// run on the thread of the test that runs the model).
    struct Kept(Vec<(NonNull<u8>, Layout)>);

    impl Drop for Kept {
        fn drop(&mut self) {
            give_back(&mut self.0);
        }
    }

    std::thread_local! {
        static KEPT: RefCell<Kept> = const { RefCell::new(Kept(Vec::new())) };
    }

    fn give_back(v: &mut Vec<(NonNull<u8>, Layout)>) {
        for (p, layout) in v.drain(..) {
            if layout.size() != 0 {
                // SAFETY: `p` was allocated with `layout` (the retired
                // object's own block, see `keep`'s callers), was retired
                // once, and no execution that could read it is left.
                unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
            }
        }
    }

    /// Keeps a retired block to give back later.
    pub(crate) fn keep(p: NonNull<u8>, layout: Layout) {
        let _ = KEPT.try_with(|k| k.borrow_mut().0.push((p, layout)));
    }

    /// Gives back every block kept on this thread. Called only where no
    /// execution of a model is running.
    #[cfg(test)]
    pub(crate) fn give_back_all() {
        let _ = KEPT.try_with(|k| give_back(&mut k.borrow_mut().0));
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
