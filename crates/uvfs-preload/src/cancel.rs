//! The tree's switch against the calls asleep on the private uvfs: the
//! table of cancellable waits, the flag that says the switch has begun,
//! and the count of FIFO reads and writes under way. `signal` keeps one
//! [`Waits`] for the process (with eventfds as its events); the loom models
//! beside this file (`cancel/loom_tests.rs`) run this same code with
//! loom's atomics and a loom event.
//!
//! **The rule between a wait and the switch** (a store-buffer pattern): a
//! wait registers its event in a slot, then reads the flag before it
//! sleeps; the switch sets the flag, then empties every slot, signalling
//! what it took. A `SeqCst` fence sits between the two steps on each side,
//! so in the fences' one order either the wait's flag read comes after the
//! switch's store (it sees the flag and does not sleep) or the switch's
//! scan of that slot comes after the registration (it takes the event and
//! signals it). So a wait armed before the switch never sleeps through it.
//! (The `SeqCst` accesses alone would do in the C++ model; the fences make
//! the rule one that loom checks, since loom reads a `SeqCst` access as
//! acquire/release, and both sides are cold paths: a wait about to sleep,
//! the switch.)
//!
//! **Who owns a registered event's reference:** whoever takes it out of its
//! slot: the switch by its swap (then it signals and drops it), or the wait
//! by a compare-and-swap of its own pointer back to null when its call ends
//! (a failed compare-and-swap means the switch took it). Each reference is
//! dropped once.
//!
//! **Chunks:** the slots come in chunks of `CHUNK`, published by the first
//! wait that needs one (a compare-and-swap from null; the loser frees its
//! own) and never freed while the table lives, so a slot's address stays
//! valid for whoever read the chunk's pointer. The switch looks at every
//! chunk: one may be published while its load of an earlier one still
//! reads null.
//!
//! **FIFO calls:** a FIFO read or write that may sleep is counted in
//! ([`Waits::fifo_begin`]) while the caller holds the fork gate, and out
//! when it has left the private uvfs; the switch, holding the gate (so no
//! new count begins), cancels the waits and then waits for the count to
//! reach 0 before it moves the FIFOs' data to the mount.

use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence};

/// One chunk of slots.
type Chunk<E, const CHUNK: usize> = [AtomicPtr<E>; CHUNK];

/// The switch's view of the waits: see the module doc. `E` is the event
/// type; a registered event is a raw pointer whose reference the table
/// holds (made by the caller, typically `Arc::into_raw`, and handed back
/// through [`Waits::cancel_all`]'s callback or by a successful
/// [`Waits::unregister`]).
pub(crate) struct Waits<E, const CHUNK: usize, const NCHUNKS: usize> {
    switching: AtomicBool,
    fifo_io: AtomicUsize,
    chunks: [AtomicPtr<Chunk<E, CHUNK>>; NCHUNKS],
}

impl<E, const CHUNK: usize, const NCHUNKS: usize> Waits<E, CHUNK, NCHUNKS> {
    /// An empty table (a `static`'s initializer in a normal build).
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Waits {
            switching: AtomicBool::new(false),
            fifo_io: AtomicUsize::new(0),
            chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; NCHUNKS],
        }
    }

    /// An empty table (loom's atomics cannot be made in a `const`).
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Waits {
            switching: AtomicBool::new(false),
            fifo_io: AtomicUsize::new(0),
            chunks: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        }
    }

    /// Chunk `c`, made first if `make` (whoever publishes it first wins).
    fn chunk(&self, c: usize, make: bool) -> Option<&Chunk<E, CHUNK>> {
        // Sequentially consistent, as the slots and the flag: a switch that
        // finds no chunk here comes after, in that one order, the flag
        // check of any wait that registers in a chunk published later.
        let p = self.chunks[c].load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a published chunk was initialized before its release
            // and is freed only with the table (`Drop`, which has `&mut`).
            return Some(unsafe { &*p });
        }
        if !make {
            return None;
        }
        let b: Box<Chunk<E, CHUNK>> =
            Box::new(std::array::from_fn(
                |_| AtomicPtr::new(std::ptr::null_mut()),
            ));
        let b = Box::into_raw(b);
        match self.chunks[c].compare_exchange(
            std::ptr::null_mut(),
            b,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            // SAFETY: just published; freed only with the table.
            Ok(_) => Some(unsafe { &*b }),
            Err(other) => {
                // SAFETY: `b` was never published; this is its only owner.
                drop(unsafe { Box::from_raw(b) });
                // SAFETY: as in the first case.
                Some(unsafe { &*other })
            }
        }
    }

    /// Slot `i`, whose chunk exists (a wait registered there).
    fn slot(&self, i: usize) -> &AtomicPtr<E> {
        &self
            .chunk(i / CHUNK, false)
            .expect("a registered wait's chunk")[i % CHUNK]
    }

    /// Puts `ev` (a reference the table now holds) in a free slot and
    /// returns its index; `None` if every slot is taken (the reference is
    /// then still the caller's, and the wait is not cancellable).
    pub(crate) fn register(&self, ev: *mut E) -> Option<usize> {
        for c in 0..NCHUNKS {
            let ch = self.chunk(c, true)?;
            for (j, s) in ch.iter().enumerate() {
                // Sequentially consistent, paired with the flag: see the
                // module doc.
                if s.compare_exchange(std::ptr::null_mut(), ev, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    return Some(c * CHUNK + j);
                }
            }
        }
        None
    }

    /// Takes `ev` back out of slot `i` when its call ends: true if it was
    /// still there (its reference is the caller's again), false if the
    /// switch took it (and owns it).
    pub(crate) fn unregister(&self, i: usize, ev: *mut E) -> bool {
        self.slot(i)
            .compare_exchange(
                ev,
                std::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Whether the switch has begun, read by a wait before it sleeps: the
    /// fence orders its registration (if any) before the read (see the
    /// module doc).
    pub(crate) fn switching(&self) -> bool {
        fence(Ordering::SeqCst);
        self.switching.load(Ordering::SeqCst)
    }

    /// Whether a wait registered at `i` with `ev` is cancelled: the switch
    /// emptied its slot, or (`pre`: its call decided before the switch)
    /// the switch has begun.
    pub(crate) fn cancelled_at(&self, i: usize, ev: *mut E, pre: bool) -> bool {
        (pre && self.switching()) || self.slot(i).load(Ordering::SeqCst) != ev
    }

    /// The switch's start: sets the flag, then empties every slot and
    /// hands each event it took to `take` (which signals it and drops the
    /// table's reference).
    pub(crate) fn cancel_all(&self, mut take: impl FnMut(*mut E)) {
        self.switching.store(true, Ordering::SeqCst);
        // The flag before the scan: see the module doc.
        fence(Ordering::SeqCst);
        // Every chunk is looked at (a later one may be published while an
        // earlier load still reads null).
        for s in (0..NCHUNKS).filter_map(|c| self.chunk(c, false)).flatten() {
            let p = s.swap(std::ptr::null_mut(), Ordering::SeqCst);
            if !p.is_null() {
                take(p);
            }
        }
    }

    /// One more FIFO call on the private uvfs (the caller holds the gate).
    pub(crate) fn fifo_begin(&self) {
        self.fifo_io.fetch_add(1, Ordering::SeqCst);
    }

    /// That call has left the private uvfs.
    pub(crate) fn fifo_end(&self) {
        self.fifo_io.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether a FIFO call is still on the private uvfs.
    pub(crate) fn fifo_busy(&self) -> bool {
        self.fifo_io.load(Ordering::SeqCst) != 0
    }
}

impl<E, const CHUNK: usize, const NCHUNKS: usize> Drop for Waits<E, CHUNK, NCHUNKS> {
    /// Frees the chunks (the process's table is a `static` and never
    /// dropped; a model's is). References still registered are the
    /// caller's to have taken out first.
    fn drop(&mut self) {
        for c in &mut self.chunks {
            let p = c.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: published by `chunk` from `Box::into_raw`, freed
                // once, here, with no other user left (`&mut self`).
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(all(test, loom))]
#[path = "cancel/loom_tests.rs"]
mod loom_tests;
