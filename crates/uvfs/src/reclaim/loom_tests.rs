//! Loom models of the cheap pin's protocol ([`Domain`]): a reader pinned
//! while a writer unlinks an object, retires it and reclaims must never
//! find the object freed.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib reclaim
//! ```
//!
//! Loom cannot model `membarrier`. What the real code runs is a compiler
//! fence on the reader's side (it keeps the compiler from moving the
//! reader's loads above its pin store) and, on the reclaiming side, a
//! `membarrier` call that runs a full barrier on every CPU running a
//! thread of the process, at some point during the call. For a reader, its
//! pin store and its later loads are then split by a full barrier that is
//! either before all of them (the barrier fell before the pin) or after
//! the store: the same outcomes as a `SeqCst` fence of the reader's own,
//! placed in the single total order of fences before or after the
//! reclaimer's `SeqCst` fence. So [`Domain`] under loom runs a `SeqCst`
//! fence on both sides for `Fences::Asymmetric`, and the models check the
//! protocol around those fences: the epoch arithmetic, the `t + 2` rule,
//! and the release/acquire edges from an unpin to a free.
//!
//! A freed object has its payload cell written and a `freed` flag set; the
//! reader reads the cell (loom fails a read unordered with that write) and
//! asserts the flag is clear. The `broken_reader_fence` model drops the
//! reader's fence and must fail, showing the models can.

use super::domain::{Deferred, Domain, Fences, Record};
use crate::primitive::model::{Seen, builder, check};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use std::sync::Arc;

/// Preemptions loom explores (the models finish in well under a second).
const PREEMPTIONS: usize = 6;

struct Obj {
    freed: AtomicBool,
    payload: UnsafeCell<usize>,
}

// SAFETY: the payload cell is read by readers inside a pin and written
// once, by the free, after the grace period; that these never race is what
// the models check, and loom fails any two unordered accesses of the cell.
unsafe impl Sync for Obj {}

unsafe fn free_obj(p: *mut ()) {
    // SAFETY: `p` points to an `Obj` kept alive by the model's `Arc` (the
    // model frees by marking, not by deallocating).
    let o = unsafe { &*(p as *const Obj) };
    // SAFETY: loom checks this write against every unordered read.
    o.payload.with_mut(|v| unsafe { *v = 0 });
    o.freed.store(true, Ordering::Relaxed);
}

struct World {
    domain: Domain,
    objs: [Obj; 2],
    /// Which object is reachable: 0 (A) until the writer unlinks it.
    slot: AtomicUsize,
}

fn world(fences: Fences) -> Arc<World> {
    let obj = || Obj {
        freed: AtomicBool::new(false),
        payload: UnsafeCell::new(1),
    };
    Arc::new(World {
        domain: Domain::new(fences),
        objs: [obj(), obj()],
        slot: AtomicUsize::new(0),
    })
}

/// One read-side critical section; returns which object it read.
fn read(w: &World, r: &Record) -> usize {
    w.domain.enter(r);
    let i = w.slot.load(Ordering::Acquire);
    let o = &w.objs[i];
    // SAFETY: loom checks the read against the free's write.
    let v = o.payload.with(|v| unsafe { *v });
    assert_eq!(v, 1, "read a freed payload");
    assert!(
        !o.freed.load(Ordering::Relaxed),
        "reader saw a freed object"
    );
    w.domain.exit(r);
    i
}

/// Unlinks A, retires it, and reclaims as far as the reader allows;
/// returns whether A was freed.
fn unlink_and_reclaim(w: &World, rounds: usize) -> bool {
    w.slot.store(1, Ordering::Release);
    let a = &w.objs[0] as *const Obj as *mut ();
    // SAFETY: `free_obj` suits an `Obj`, and the model runs it once.
    w.domain.retire(vec![unsafe { Deferred::new(a, free_obj) }]);
    let mut freed = false;
    for _ in 0..rounds {
        w.domain.try_advance();
        for d in w.domain.collect() {
            // SAFETY: past the grace period: what the model checks.
            unsafe { d.run() };
            freed = true;
        }
    }
    freed
}

static SEEN_ONE: Seen<3> = Seen::new();

#[test]
fn reader_against_reclaim() {
    check(&builder(PREEMPTIONS), || {
        let w = world(Fences::Asymmetric);
        let rec = w.domain.register();
        let t = {
            let w = w.clone();
            thread::spawn(move || read(&w, &rec))
        };
        let freed = unlink_and_reclaim(&w, 3);
        let saw = t.join().unwrap();
        SEEN_ONE.hit(saw);
        if freed {
            SEEN_ONE.hit(2);
        }
    });
    SEEN_ONE.report(["read A", "read B", "A freed"], &[0, 1, 2]);
}

/// Two critical sections in a row (the second may pin at a newer epoch).
fn two_sections(fences: Fences, seen: &'static Seen<3>) {
    check(&builder(PREEMPTIONS), move || {
        let w = world(fences);
        let rec = w.domain.register();
        let t = {
            let w = w.clone();
            thread::spawn(move || [read(&w, &rec), read(&w, &rec)])
        };
        let freed = unlink_and_reclaim(&w, 2);
        let saw = t.join().unwrap();
        seen.hit(saw[1]);
        if freed {
            seen.hit(2);
        }
    });
    seen.report(["second read A", "second read B", "A freed"], &[0, 1, 2]);
}

/// With `SeqCst` fences on both sides (the fallback without `membarrier`).
#[test]
fn two_sections_symmetric() {
    static SEEN: Seen<3> = Seen::new();
    two_sections(Fences::Symmetric, &SEEN);
}

/// With the asymmetric fences (modelled as above).
#[test]
fn two_sections_asymmetric() {
    static SEEN: Seen<3> = Seen::new();
    two_sections(Fences::Asymmetric, &SEEN);
}

static SEEN_RECLAIMERS: Seen<3> = Seen::new();

/// A second thread advancing and collecting at the same time as the
/// writer (the batches' lock-free stack taken whole by one, pushed back
/// by the other), with the reader between them: A is freed at most once
/// and never under the reader.
#[test]
fn two_reclaimers() {
    check(&builder(3), || {
        let w = world(Fences::Asymmetric);
        let rec = w.domain.register();
        let reader = {
            let w = w.clone();
            thread::spawn(move || read(&w, &rec))
        };
        let other = {
            let w = w.clone();
            thread::spawn(move || {
                w.domain.try_advance();
                let mut n = 0;
                for d in w.domain.collect() {
                    // SAFETY: past the grace period: what the model checks.
                    unsafe { d.run() };
                    n += 1;
                }
                n
            })
        };
        let mine = usize::from(unlink_and_reclaim(&w, 2));
        let saw = reader.join().unwrap();
        let theirs = other.join().unwrap();
        assert!(mine + theirs <= 1, "freed twice");
        SEEN_RECLAIMERS.hit(saw);
        if theirs == 1 {
            SEEN_RECLAIMERS.hit(2);
        }
    });
    SEEN_RECLAIMERS.report(["read A", "read B", "freed by the other"], &[0, 1]);
}

/// Without the reader's fence the scan may miss its pin while it reads A:
/// the model must find that execution.
#[test]
#[should_panic]
fn broken_reader_fence() {
    check(&builder(3), || {
        let w = world(Fences::BrokenNoReaderFence);
        let rec = w.domain.register();
        let t = {
            let w = w.clone();
            thread::spawn(move || read(&w, &rec))
        };
        unlink_and_reclaim(&w, 3);
        t.join().unwrap();
    });
}
