//! `std::hint`'s mirror: the pauses of busy-wait loops. Neither loom nor
//! shuttle gives progress to a thread that never yields, so under them a
//! pause is a yield: the model then explores another thread running instead
//! of the waiting thread spinning forever. And a cache prefetch, which
//! has no std counterpart.

/// One pause of a spin loop: `std::hint::spin_loop` normally, a yield under
/// loom or shuttle.
#[inline(always)]
pub(crate) fn spin_loop() {
    #[cfg(not(any(loom, shuttle)))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(shuttle, not(loom)))]
    shuttle::thread::yield_now();
}

/// The back-edge of a lockless retry loop that waits for another thread's
/// stores to become visible (a lookup that found its slot's file at count
/// zero). Nothing in normal builds, as in the kernel; under loom a yield:
/// loom gives no progress guarantee to a thread that never yields, so it
/// would explore the reader re-loading the stale slot forever and exceed its
/// branch limit. Under shuttle a yield too, for the same reason.
#[inline(always)]
pub(crate) fn retry_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(shuttle, not(loom)))]
    shuttle::thread::yield_now();
}

/// Asks the CPU to bring the cache line holding `*p` in, without waiting
/// for it: for a caller that knows which line it will need before it can
/// use it, so that the fetch overlaps the work between. A hint only: it
/// changes no value and no ordering (nothing under loom or shuttle, or on
/// other architectures).
#[inline(always)]
pub(crate) fn prefetch<T>(p: &T) {
    #[cfg(all(target_arch = "x86_64", not(any(loom, shuttle))))]
    // SAFETY: SSE, which the instruction needs, is part of every x86-64
    // CPU; a prefetch reads nothing into the program and cannot fault,
    // whatever the address (here a live reference's).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(p).cast::<i8>(),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(loom, shuttle)))))]
    let _ = p;
}
