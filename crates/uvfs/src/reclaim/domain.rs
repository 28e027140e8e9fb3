//! The cheap pin's protocol: an epoch domain whose read side is a plain
//! store (no read-modify-write, no full fence when `membarrier` is
//! available) and whose rare reclaiming side pays for both sides' fences.
//!
//! This is the classic epoch scheme (crossbeam-epoch's, with the same
//! memory orderings but a release pin store) with one change: the full fence a reader needs between
//! announcing its epoch and loading shared pointers is, in the asymmetric
//! mode, only a compiler fence, and every place where the reclaiming side
//! relies on that fence (sealing a batch of retired objects, scanning the
//! records before advancing the epoch) first calls
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which runs a full memory
//! barrier on every CPU currently running a thread of the process (and a
//! thread not running has passed through a context switch, itself a full
//! barrier). For the reader's program-ordered accesses this is the same
//! guarantee as a `SeqCst` fence of its own that is ordered, in the single
//! total order of fences, either before or after the reclaimer's: the loom
//! models (`loom_tests.rs`) model it as exactly that, a `SeqCst` fence on
//! both sides.
//!
//! The protocol, per record (one per thread, registered once):
//! - **enter** (pin): load the global epoch (relaxed), store
//!   `epoch << 1 | 1` in the record (release, which costs what a relaxed
//!   store does on x86-64), light fence.
//! - **exit** (unpin): store 0 in the record (release), so the critical
//!   section's reads happen before a reclaimer that sees it unpinned.
//! - **retire** a batch of objects already unreachable for new readers:
//!   heavy fence, then tag the batch with the global epoch read after it.
//! - **advance**: read the epoch `g`, heavy fence, scan the records; if
//!   every pinned record shows `g`, acquire fence and move the epoch to
//!   `g + 1`.
//! - **collect**: a batch tagged `t` is freed once the epoch is `t + 2`.
//!
//! Why `t + 2` is safe: a reader that can still reach an object was pinned
//! before the batch's heavy fence, so it read an epoch of at most `t` (a
//! reader that read `t + 1` or later read a value written after the
//! retirer's tag load, which follows the retirer's heavy fence, so its own
//! later loads are ordered after the unlinking stores and cannot find the
//! object). The advance from `t + 1` to `t + 2` needs every pinned record
//! to show `t + 1`, and its heavy fence makes such a reader's pin store
//! visible to the scan, so while that reader stays pinned the epoch stops
//! at `t + 1`; once it has unpinned, its release store and the scan's
//! acquire fence order its reads before the free.
//!
//! Without `membarrier` (an old kernel, a seccomp filter) both fences are
//! `SeqCst` fences, decided once when the domain is made.

use crate::primitive::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence};
use crate::primitive::sync::{Mutex, lock};
use std::ptr;
use std::sync::Arc;

/// How the two sides fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fences {
    /// A `SeqCst` fence on both sides (no `membarrier`).
    Symmetric,
    /// A compiler fence on the read side; `membarrier` then a `SeqCst`
    /// fence on the reclaiming side. Under loom (which cannot model
    /// `membarrier`) a `SeqCst` fence on both sides, the guarantee
    /// `membarrier` gives.
    Asymmetric,
    /// The read side with no fence at all: wrong on purpose, for the loom
    /// model that shows the models can fail.
    #[cfg(all(test, loom))]
    BrokenNoReaderFence,
}

/// One reader's announcement: 0 while not pinned, `epoch << 1 | 1` while
/// pinned. Registered once per thread and reused after the thread exits.
/// Alone on its cache lines (two, for the adjacent-line prefetcher): every
/// pin writes it, and two threads' records must not share a line.
#[repr(align(128))]
pub(crate) struct Record {
    state: AtomicUsize,
    taken: AtomicBool,
}

/// An object to free: its pointer and its type's drop.
pub(crate) struct Deferred {
    ptr: *mut (),
    free: unsafe fn(*mut ()),
}

// SAFETY: a `Deferred` is the sole owner of an object handed over by
// `defer_drop_box` (whose callers retire `Send` objects: shared state of the
// VFS), and is run exactly once, by whichever thread collects it.
unsafe impl Send for Deferred {}

impl Deferred {
    /// # Safety
    /// `ptr` must be valid for `free`, and `free` run on it at most once
    /// (through [`run`](Self::run)).
    pub(crate) unsafe fn new(ptr: *mut (), free: unsafe fn(*mut ())) -> Deferred {
        Deferred { ptr, free }
    }

    /// Frees the object.
    ///
    /// # Safety
    /// No reader can reach the object any more.
    pub(crate) unsafe fn run(self) {
        // SAFETY: `new`'s contract (a valid pointer for `free`, run once: we
        // consume `self`), and the caller's (no reader left).
        unsafe { (self.free)(self.ptr) }
    }
}

/// A sealed batch, in the domain's stack of them.
struct Batch {
    tag: usize,
    items: Vec<Deferred>,
    next: *mut Batch,
}

/// An epoch domain: the global epoch, every reader's record, and the
/// retired batches waiting for their grace period.
///
/// The records' list has a lock, taken to register (a thread's first pin)
/// and to scan (an advance), both inside a uvfs call, so never across a
/// fork the preload shim's fork gate lets through; a thread's exit, which
/// the gate does not hold, gives its record back and seals its last batch
/// without any lock (an atomic store, and a push on the lock-free stack of
/// batches), so a fork can never copy a held lock of this module.
pub(crate) struct Domain {
    /// Read by every pin: on a line of its own, away from the list's lock
    /// and the stack of batches that reclaimers write.
    epoch: crossbeam_utils::CachePadded<AtomicUsize>,
    fences: Fences,
    records: Mutex<Vec<Arc<Record>>>,
    /// A Treiber stack of sealed batches; `collect` takes it whole (so no
    /// node is popped alone, and there is no ABA) and pushes back what is
    /// not yet due.
    garbage: AtomicPtr<Batch>,
}

impl Drop for Domain {
    fn drop(&mut self) {
        let mut p = self.garbage.swap(ptr::null_mut(), Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: every node came from `Box::into_raw` in `push` and is
            // owned by the stack; we took the whole stack. Its objects leak.
            let b = unsafe { Box::from_raw(p) };
            p = b.next;
        }
    }
}

impl Domain {
    pub(crate) fn new(fences: Fences) -> Domain {
        Domain {
            epoch: crossbeam_utils::CachePadded::new(AtomicUsize::new(0)),
            fences,
            records: Mutex::new(Vec::new()),
            garbage: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn fences(&self) -> Fences {
        self.fences
    }

    /// A record for a new reader (a free one reused, or a new one).
    pub(crate) fn register(&self) -> Arc<Record> {
        let mut all = lock(&self.records);
        for r in all.iter() {
            if r.taken
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return r.clone();
            }
        }
        let r = Arc::new(Record {
            state: AtomicUsize::new(0),
            taken: AtomicBool::new(true),
        });
        all.push(r.clone());
        r
    }

    /// Gives a record back (its reader is gone, and not pinned): without
    /// the list's lock (see the type).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn unregister(&self, r: &Record) {
        r.state.store(0, Ordering::Release);
        r.taken.store(false, Ordering::Release);
    }

    /// Pins `r` (not already pinned).
    #[inline]
    pub(crate) fn enter(&self, r: &Record) {
        let e = self.epoch.load(Ordering::Relaxed);
        // Release (a plain store on x86-64, as relaxed is): a scan that
        // finds this pin also finds the reader's earlier critical sections
        // over, their reads ordered before any free that follows (an
        // unpin's release store alone does not give that once a later pin
        // has overwritten it: a release sequence holds only
        // read-modify-writes). The loom model `two_sections_symmetric`
        // fails without it.
        r.state.store(e << 1 | 1, Ordering::Release);
        self.light_fence();
    }

    /// Unpins `r`.
    #[inline]
    pub(crate) fn exit(&self, r: &Record) {
        r.state.store(0, Ordering::Release);
    }

    #[inline]
    fn light_fence(&self) {
        match self.fences {
            Fences::Symmetric => fence(Ordering::SeqCst),
            #[cfg(not(loom))]
            Fences::Asymmetric => std::sync::atomic::compiler_fence(Ordering::SeqCst),
            #[cfg(loom)]
            Fences::Asymmetric => fence(Ordering::SeqCst),
            #[cfg(all(test, loom))]
            Fences::BrokenNoReaderFence => {}
        }
    }

    fn heavy_fence(&self) {
        #[cfg(not(any(loom, shuttle)))]
        if self.fences == Fences::Asymmetric {
            super::membarrier::expedited();
        }
        fence(Ordering::SeqCst);
    }

    /// Hands over a batch of objects that new readers can no longer reach.
    pub(crate) fn retire(&self, batch: Vec<Deferred>) {
        if batch.is_empty() {
            return;
        }
        self.heavy_fence();
        let tag = self.epoch.load(Ordering::Relaxed);
        self.push(Box::new(Batch {
            tag,
            items: batch,
            next: ptr::null_mut(),
        }));
    }

    fn push(&self, b: Box<Batch>) {
        let p = Box::into_raw(b);
        let mut head = self.garbage.load(Ordering::Relaxed);
        loop {
            // SAFETY: `p` is ours until the exchange below publishes it.
            unsafe { (*p).next = head };
            match self
                .garbage
                .compare_exchange_weak(head, p, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Moves the epoch on if every pinned reader has seen the current one;
    /// returns the epoch after the attempt.
    pub(crate) fn try_advance(&self) -> usize {
        let g = self.epoch.load(Ordering::Relaxed);
        self.heavy_fence();
        {
            let all = lock(&self.records);
            for r in all.iter() {
                let s = r.state.load(Ordering::Relaxed);
                if s & 1 == 1 && s >> 1 != g {
                    return g;
                }
            }
        }
        fence(Ordering::Acquire);
        match self
            .epoch
            .compare_exchange(g, g + 1, Ordering::Release, Ordering::Relaxed)
        {
            Ok(_) => g + 1,
            Err(now) => now,
        }
    }

    /// The batches whose grace period is over, taken out of the domain.
    pub(crate) fn collect(&self) -> Vec<Deferred> {
        let now = self.epoch.load(Ordering::Acquire);
        let mut out = Vec::new();
        let mut p = self.garbage.swap(ptr::null_mut(), Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: the node came from `Box::into_raw` in `push`, and the
            // swap made the whole stack ours.
            let mut b = unsafe { Box::from_raw(p) };
            p = b.next;
            if b.tag + 2 <= now {
                // The first batch's vector is taken whole, not copied.
                if out.is_empty() {
                    std::mem::swap(&mut out, &mut b.items);
                } else {
                    out.append(&mut b.items);
                }
            } else {
                self.push(b);
            }
        }
        out
    }

    /// Batches still waiting (tests).
    #[cfg(test)]
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn pending(&self) -> usize {
        // Racy (the stack may change under the walk): tests call it when
        // nothing else retires.
        let mut n = 0;
        let mut p = self.garbage.load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: nodes are freed only by `collect` and `drop`, which
            // the tests do not run meanwhile.
            let b = unsafe { &*p };
            n += b.items.len();
            p = b.next;
        }
        n
    }
}
