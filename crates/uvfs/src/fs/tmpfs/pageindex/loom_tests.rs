//! Loom models of the page index (`FastPaths::lockless_read`): a reader
//! pinned in the cheap pin's domain finds a page and reads it while the
//! writer (the inode's lock holder) takes the page out and frees it after
//! the grace period, or grows the tree to add a page.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib pageindex
//! ```
//!
//! The index is the modelled one (loom's atomics, four slots a node, so
//! the trees stay small); the domain is `reclaim`'s, whose `membarrier`
//! the models take as a `SeqCst` fence on both sides (see
//! `reclaim/loom_tests.rs`). A freed page has its payload cell written
//! and a `freed` flag set; the reader reads the cell (loom fails a read
//! unordered with that write) and asserts the flag is clear. The
//! `free_not_deferred` twin frees the page as soon as it left the index,
//! without waiting for the grace period, and must fail.

use super::Found;
use super::modelled::PageIndex;
use crate::primitive::model::{Seen, builder, check};
use crate::reclaim::{Deferred, Domain, Fences, Record};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use std::sync::Arc;

const PREEMPTIONS: usize = 4;

/// A page: 64-byte aligned, as the index needs.
#[repr(align(64))]
struct Pg {
    freed: AtomicBool,
    payload: UnsafeCell<usize>,
}

// SAFETY: the payload is written before the page is published, read by
// pinned readers, and written again by the free; that these never race is
// what the models check (loom fails unordered accesses of the cell).
unsafe impl Sync for Pg {}

fn page(v: usize) -> Pg {
    Pg {
        freed: AtomicBool::new(false),
        payload: UnsafeCell::new(v),
    }
}

fn ptr(p: &Pg) -> *mut u8 {
    p as *const Pg as *mut u8
}

unsafe fn free_pg(p: *mut ()) {
    // SAFETY: `p` is a `Pg` the model's `Arc` keeps allocated (the model
    // frees by marking, not by deallocating).
    let o = unsafe { &*(p as *const Pg) };
    // SAFETY: loom checks this write against every unordered read.
    o.payload.with_mut(|v| unsafe { *v = 0 });
    o.freed.store(true, Ordering::Relaxed);
}

struct World {
    domain: Domain,
    index: PageIndex,
    pages: [Pg; 3],
}

// SAFETY: the index's pointers are to `pages`, which live as long as the
// world; the models share it between their two threads only.
unsafe impl Send for World {}
// SAFETY: as for `Send`.
unsafe impl Sync for World {}

/// One lockless read of page `idx`: what it found (0: a hole; else the
/// payload read).
fn read(w: &World, rec: &Record, idx: u64) -> usize {
    w.domain.enter(rec);
    let got = match w.index.get(idx) {
        Found::Hole => 0,
        Found::Gone => usize::MAX,
        Found::Page(p) => {
            // SAFETY: a `Pg` of the world, pinned: what the model checks.
            let o = unsafe { &*(p as *const Pg) };
            // SAFETY: loom checks the read against the free's write.
            let v = o.payload.with(|v| unsafe { *v });
            assert!(!o.freed.load(Ordering::Relaxed), "read a freed page");
            assert_ne!(v, 0, "read a freed payload");
            v
        }
    };
    w.domain.exit(rec);
    got
}

static SEEN_TRUNC: Seen<3> = Seen::new();

/// Page 1 taken out (a truncation to one page) and retired; the reader
/// finds it or a hole, and never reads it freed.
fn truncate_vs_read(deferred: bool) {
    check(&builder(PREEMPTIONS), move || {
        let w = Arc::new(World {
            domain: Domain::new(Fences::Asymmetric),
            index: PageIndex::new(),
            pages: [page(1), page(2), page(3)],
        });
        w.index.set(0, ptr(&w.pages[0]));
        w.index.set(1, ptr(&w.pages[1]));
        let rec = w.domain.register();
        let t = {
            let w = w.clone();
            thread::spawn(move || read(&w, &rec, 1))
        };
        w.index.set(1, std::ptr::null_mut());
        let p1 = ptr(&w.pages[1]).cast::<()>();
        let mut freed = false;
        if deferred {
            // SAFETY: `free_pg` suits a `Pg`, run once.
            w.domain.retire(vec![unsafe { Deferred::new(p1, free_pg) }]);
            for _ in 0..3 {
                w.domain.try_advance();
                for d in w.domain.collect() {
                    // SAFETY: past the grace period: what the model checks.
                    unsafe { d.run() };
                    freed = true;
                }
            }
        } else {
            // SAFETY: wrong on purpose: no grace period.
            unsafe { free_pg(p1) };
            freed = true;
        }
        let got = t.join().unwrap();
        SEEN_TRUNC.hit(if got == 2 { 1 } else { 0 });
        if freed {
            SEEN_TRUNC.hit(2);
        }
        for n in w.index.detach(false) {
            // SAFETY: detached, and the reader is done.
            drop(unsafe { Box::from_raw(n) });
        }
    });
}

#[test]
fn read_vs_truncate_and_free() {
    truncate_vs_read(true);
    SEEN_TRUNC.report(["hole", "read page 1", "page 1 freed"], &[0, 1, 2]);
}

#[test]
#[should_panic]
fn free_not_deferred() {
    truncate_vs_read(false);
}

static SEEN_GROW: Seen<2> = Seen::new();

/// A page added past the tree's height (the root grows under the reader):
/// the reader finds a hole or the page with the bytes written before it
/// was added; the page it already knew stays found.
#[test]
fn read_vs_grow() {
    check(&builder(PREEMPTIONS), || {
        let w = Arc::new(World {
            domain: Domain::new(Fences::Asymmetric),
            index: PageIndex::new(),
            pages: [page(1), page(9), page(3)],
        });
        w.index.set(1, ptr(&w.pages[0]));
        let rec = w.domain.register();
        let t = {
            let w = w.clone();
            thread::spawn(move || (read(&w, &rec, 17), read(&w, &rec, 1)))
        };
        // Index 17 needs height 3 with four slots a node.
        // SAFETY: the page is not yet published: no reader can reach it.
        w.pages[2].payload.with_mut(|v| unsafe { *v = 7 });
        w.index.set(17, ptr(&w.pages[2]));
        let (new, old) = t.join().unwrap();
        assert!(new == 0 || new == 7, "{new}");
        assert_eq!(old, 1);
        SEEN_GROW.hit(usize::from(new == 7));
        for n in w.index.detach(false) {
            // SAFETY: detached, and the reader is done.
            drop(unsafe { Box::from_raw(n) });
        }
    });
    SEEN_GROW.report(["hole", "new page"], &[0, 1]);
}
