//! `std::hint`'s mirror: the pauses of busy-wait loops. Neither loom nor
//! shuttle gives progress to a thread that never yields, so under them a
//! pause is a yield: the model then explores another thread running instead
//! of the waiting thread spinning forever.

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
