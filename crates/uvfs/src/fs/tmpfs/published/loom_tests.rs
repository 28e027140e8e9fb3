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
