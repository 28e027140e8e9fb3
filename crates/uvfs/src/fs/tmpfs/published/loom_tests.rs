//! Loom models of the published attributes' sequence count: a reader
//! racing a writer never sees a mix of two publications (every word of
//! what it gets comes from one of them), two readings never go back, and a
//! publication is seen once the writer's call returned (here: once a flag
//! the writer set after publishing is seen); writers serialized by a lock
//! (the inode's) leave one of their sets, whole.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib published::
//! ```
use super::Snapshot;
use super::modelled::AttrCell;
use crate::fs::Timespec;
use crate::primitive::model::{Seen, builder, check};
use crate::primitive::sync::Mutex;
use crate::primitive::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use std::sync::Arc;

/// Publication `k`: every word a function of `k`, so a mix shows.
fn snap(k: u32) -> Snapshot {
    let t = Timespec {
        sec: i64::from(k) * 1000,
        nsec: k * 3,
    };
    Snapshot {
        mode: 0o100000 | k,
        uid: k,
        gid: k + 10,
        nlink: k + 20,
        size: (u64::from(k) << 40) | u64::from(k),
        pages: k + 30,
        acl: k as u8,
        times: [t, t, t, t],
    }
}

/// Which publication `s` is, failing the model on a mix of two.
fn which(s: &Snapshot) -> u32 {
    let k = s.uid;
    assert_eq!(*s, snap(k), "a torn read: {s:?}");
    k
}

#[test]
fn a_reader_never_sees_a_torn_set_and_sees_a_finished_one() {
    static SEEN: Seen<3> = Seen::new();
    check(&builder(2), || {
        let c = Arc::new(AttrCell::new(true, Some(&snap(0))));
        let done = Arc::new(AtomicBool::new(false));
        let w = {
            let (c, done) = (c.clone(), done.clone());
            thread::spawn(move || {
                c.publish(Some(&snap(1)));
                done.store(true, Ordering::Release);
            })
        };
        let told = done.load(Ordering::Acquire);
        match c.read() {
            // The writer's call returned before this read began: its set,
            // whole, and nothing else (no writer is left to keep it busy).
            _ if told => {
                assert_eq!(c.read(), Some(snap(1)));
                SEEN.hit(0);
            }
            Some(s) => SEEN.hit(1 + which(&s) as usize),
            // Every try met the writer mid-way.
            None => {}
        }
        // The reader's ctime mark sits beside the writer's words: it never
        // shows in what a reader gets.
        c.mark_queried();
        w.join().unwrap();
        assert_eq!(c.read(), Some(snap(1)));
    });
    SEEN.report(["told", "old set", "new set"], &[0, 1, 2]);
}

#[test]
fn locked_writers_leave_one_whole_set() {
    static SEEN: Seen<2> = Seen::new();
    check(&builder(1), || {
        let c = Arc::new(AttrCell::new(true, Some(&snap(0))));
        let lock = Arc::new(Mutex::new(()));
        let writers: Vec<_> = [1, 2]
            .into_iter()
            .map(|k| {
                let (c, lock) = (c.clone(), lock.clone());
                thread::spawn(move || {
                    let _g = lock.lock().unwrap();
                    c.publish(Some(&snap(k)));
                })
            })
            .collect();
        if let Some(s) = c.read() {
            which(&s);
        }
        for w in writers {
            w.join().unwrap();
        }
        let k = c.read().map(|s| which(&s));
        assert!(matches!(k, Some(1 | 2)), "{k:?}");
        SEEN.hit(k.unwrap() as usize - 1);
    });
    SEEN.report(["1 last", "2 last"], &[0, 1]);
}

// `FastPaths::light_overwrite`: the count as the writers' claim. A light
// writer (no lock) claims the cell with a compare-and-swap, checks the
// size, writes the page and lets go with a store; a writer under the
// inode's lock (a mutex here) claims it from its lock to its unlock. The
// page is a loom cell, so two writes of it that are not ordered, or a
// write not ordered with the truncation's free, fail the model.

/// A page of the modelled file: its bytes (one word) and whether a
/// truncation freed it.
struct Pg {
    freed: AtomicBool,
    bytes: loom::cell::UnsafeCell<usize>,
}

// SAFETY: the bytes are written only under a claim of the cell (or, in
// the must-fail twin, not): what the models check.
unsafe impl Sync for Pg {}

/// A regular file of one page (4096 bytes), its times all `T`, which
/// the coarse clock still reads (an overwrite stamps nothing).
const T: Timespec = Timespec { sec: 77, nsec: 5 };

fn file() -> (Arc<AttrCell>, Arc<Pg>) {
    let s = Snapshot {
        mode: 0o100644,
        uid: 1,
        gid: 1,
        nlink: 1,
        size: 4096,
        pages: 1,
        acl: 0,
        times: [T, T, T, T],
    };
    let c = AttrCell::new(true, Some(&s));
    c.make_light();
    let p = Pg {
        freed: AtomicBool::new(false),
        bytes: loom::cell::UnsafeCell::new(1),
    };
    (Arc::new(c), Arc::new(p))
}

/// A light overwrite of the whole page with `k`; whether it wrote.
/// `claimed` false: the twin, which checks the size without the claim.
fn light(c: &AttrCell, p: &Pg, k: usize, claimed: bool) -> bool {
    let now = super::pack(T).unwrap();
    let s = if claimed {
        match c.try_claim() {
            Some(s) => Some(s),
            None => return false,
        }
    } else {
        None
    };
    let ok = if claimed {
        c.quiet_overwrite(4096, now)
    } else {
        c.read_size().is_some_and(|(_, size)| size >= 4096)
    };
    if ok {
        // SAFETY: loom checks this write against every other access.
        p.bytes.with_mut(|b| unsafe { *b = k });
        assert!(!p.freed.load(Ordering::Relaxed), "wrote a freed page");
    }
    if let Some(s) = s {
        c.release(s);
    }
    ok
}

/// A truncation to 0 under the inode's lock: the size published as 0 and
/// the page freed, under the claim.
fn truncate(c: &AttrCell, p: &Pg, lock: &Mutex<()>) {
    let _g = lock.lock().unwrap();
    c.claim();
    c.begin();
    c.set_size_pages(0, 0);
    // SAFETY: loom checks this write against every other access.
    p.bytes.with_mut(|b| unsafe { *b = 0 });
    p.freed.store(true, Ordering::Relaxed);
    c.end();
}

fn light_vs_truncate(claimed: bool) {
    static SEEN: Seen<3> = Seen::new();
    check(&builder(2), move || {
        let (c, p) = file();
        let lock = Arc::new(Mutex::new(()));
        let w = {
            let (c, p) = (c.clone(), p.clone());
            thread::spawn(move || light(&c, &p, 9, claimed))
        };
        let t = {
            let (c, p, lock) = (c.clone(), p.clone(), lock.clone());
            thread::spawn(move || truncate(&c, &p, &lock))
        };
        // A lockless reader: the size before or after, never anything
        // else (the light writer's claim changes no word).
        if let Some((mode, size)) = c.read_size() {
            assert_eq!(mode, 0o100644);
            assert!(size == 4096 || size == 0, "{size}");
            SEEN.hit(usize::from(size == 0));
        }
        let wrote = w.join().unwrap();
        t.join().unwrap();
        SEEN.hit(2 * usize::from(wrote));
        assert_eq!(c.read_size(), Some((0o100644, 0)));
    });
    if claimed {
        SEEN.report(["size 4096", "size 0", "wrote"], &[0, 1, 2]);
    }
}

#[test]
fn light_overwrite_vs_truncate() {
    light_vs_truncate(true);
}

/// The twin: a light writer that checks the size without the claim
/// writes the page after the truncation freed it. Must fail.
#[test]
#[should_panic]
fn light_overwrite_without_claim() {
    light_vs_truncate(false);
}

/// Two light writers and a locked writer that changes nothing (an
/// overwrite in the same tick: it claims and lets go without a section):
/// their writes of the page never overlap, the last one's bytes stay, and
/// the count ends even with the words unchanged.
#[test]
fn light_overwrites_exclude_each_other_and_the_lock() {
    static SEEN: Seen<2> = Seen::new();
    check(&builder(2), || {
        let (c, p) = file();
        let ws: Vec<_> = [7, 8]
            .into_iter()
            .map(|k| {
                let (c, p) = (c.clone(), p.clone());
                thread::spawn(move || light(&c, &p, k, true))
            })
            .collect();
        let lock = Mutex::new(());
        {
            let _g = lock.lock().unwrap();
            c.claim();
            // SAFETY: loom checks this write against every other access.
            p.bytes.with_mut(|b| unsafe { *b = 3 });
            c.unclaim();
        }
        let wrote: Vec<bool> = ws.into_iter().map(|w| w.join().unwrap()).collect();
        // SAFETY: every writer has been joined.
        let last = p.bytes.with(|b| unsafe { *b });
        assert!([3, 7, 8].contains(&last), "{last}");
        match wrote.iter().filter(|&&w| w).count() {
            2 => SEEN.hit(0),
            0 => SEEN.hit(1),
            _ => {}
        }
        let (mode, size) = c.read_size().expect("the count ends even");
        assert_eq!((mode, size), (0o100644, 4096));
        // Another claim succeeds: nobody holds it.
        let s = c.try_claim().expect("free");
        c.release(s);
    });
    SEEN.report(["both light writers wrote", "neither wrote"], &[0]);
}
