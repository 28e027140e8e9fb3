//! Unit tests of the range arithmetic and the lists' order.

use super::*;

fn req(owner: u64, start: i64, end: i64, ty: LockType) -> PosixRequest {
    PosixRequest {
        owner: Owner::Files(owner),
        pid: owner as i32,
        start,
        end,
        ty,
    }
}

fn ranges(c: &FileLockContext) -> Vec<(u64, i64, i64, bool)> {
    c.lock()
        .posix
        .iter()
        .map(|l| match l.owner {
            Owner::Files(o) => (o, l.start, l.end, l.write),
            Owner::File(f) => (f as u64, l.start, l.end, l.write),
        })
        .collect()
}

#[test]
fn split_merge_and_unlock() {
    let _one = edges_serial();
    let c = FileLockContext::new();
    c.posix_lock(&req(1, 0, 99, LockType::Read), false).unwrap();
    // A write lock in the middle splits the read lock in three.
    c.posix_lock(&req(1, 10, 19, LockType::Write), false)
        .unwrap();
    assert_eq!(
        ranges(&c),
        [(1, 0, 9, false), (1, 10, 19, true), (1, 20, 99, false)]
    );
    // Read again over it: merges back into one.
    c.posix_lock(&req(1, 10, 19, LockType::Read), false)
        .unwrap();
    assert_eq!(ranges(&c), [(1, 0, 99, false)]);
    // Adjacent same-type locks merge; to OFFSET_MAX.
    c.posix_lock(&req(1, 100, OFFSET_MAX, LockType::Read), false)
        .unwrap();
    assert_eq!(ranges(&c), [(1, 0, OFFSET_MAX, false)]);
    // Unlock a hole.
    c.posix_lock(&req(1, 50, 59, LockType::Unlock), false)
        .unwrap();
    assert_eq!(ranges(&c), [(1, 0, 49, false), (1, 60, OFFSET_MAX, false)]);
    c.remove_posix(Owner::Files(1));
    assert!(ranges(&c).is_empty());
    assert_eq!(c.posix_nr.load(Ordering::Relaxed), 0);
}

#[test]
fn conflicts_and_list_order() {
    let _one = edges_serial();
    let c = FileLockContext::new();
    c.posix_lock(&req(1, 0, 9, LockType::Read), false).unwrap();
    c.posix_lock(&req(2, 5, 14, LockType::Read), false).unwrap();
    assert_eq!(
        c.posix_lock(&req(3, 8, 8, LockType::Write), false),
        Err(Errno::EAGAIN)
    );
    // Owner 1's group comes first even for a lock added later.
    c.posix_lock(&req(1, 20, 29, LockType::Read), false)
        .unwrap();
    assert_eq!(
        ranges(&c),
        [(1, 0, 9, false), (1, 20, 29, false), (2, 5, 14, false)]
    );
    let f = c.test(&req(3, 0, 100, LockType::Write)).unwrap();
    assert_eq!((f.start, f.end, f.pid), (0, 9, 1));
    // An owner whose locks all went comes back at the end.
    c.remove_posix(Owner::Files(1));
    c.posix_lock(&req(1, 0, 0, LockType::Read), false).unwrap();
    assert_eq!(ranges(&c), [(2, 5, 14, false), (1, 0, 0, false)]);
}

#[test]
fn flock_convert_and_conflict() {
    let _one = edges_serial();
    let c = FileLockContext::new();
    c.flock(1, LockType::Read, false).unwrap();
    c.flock(2, LockType::Read, false).unwrap();
    assert_eq!(c.flock(1, LockType::Write, false), Err(Errno::EWOULDBLOCK));
    // The failed conversion dropped file 1's shared lock.
    assert_eq!(c.stats().flock, 1);
    c.flock(2, LockType::Write, false).unwrap();
    c.remove_file(2);
    assert_eq!(c.stats(), LockStats::default());
}

#[test]
fn deadlock_chain_limit() {
    let t: Vec<Edge> = (1..=20)
        .map(|i| Edge {
            waiter: Owner::Files(i),
            blocker: Owner::Files(i + 1),
            ctx: 0,
            token: i,
        })
        .collect();
    // Owner 21 waiting for 1 closes a cycle of 21 only if the walk is long
    // enough; short cycles are found.
    assert!(closes_cycle(&t[..3], Owner::Files(4), Owner::Files(1)));
    assert!(!closes_cycle(&t, Owner::Files(21), Owner::Files(1)));
    assert!(!closes_cycle(&t[..3], Owner::Files(9), Owner::Files(1)));
}

/// Interrupted while blocked (`F_SETLKW`, flock): `EINTR`, nothing of the
/// request left (waiter, waits-for record); with `Restart` the request
/// blocks on and is granted once the holder lets go. Decided by order:
/// the interrupt is pending before or during the sleep, either way the
/// sleep ends with it.
#[test]
fn locks_interrupted_wait_leaves_nothing() {
    let _one = edges_serial();
    use crate::signal::{Interrupted, Signals};
    let c = std::sync::Arc::new(FileLockContext::new());
    c.posix_lock(&req(1, 0, 9, LockType::Write), false).unwrap();
    let sig = Signals::new();
    sig.interrupt(Interrupted::Eintr);
    assert_eq!(
        c.posix_lock_wait(&req(2, 5, 5, LockType::Write), true, Some(&*sig)),
        Err(Errno::EINTR)
    );
    assert_eq!(
        c.stats(),
        LockStats {
            posix: 1,
            ..LockStats::default()
        }
    );
    // flock: owner 7 holds, 8 is interrupted.
    c.flock(7, LockType::Write, false).unwrap();
    sig.interrupt(Interrupted::Eintr);
    assert_eq!(
        c.flock_wait(8, LockType::Read, true, Some(&*sig)),
        Err(Errno::EINTR)
    );
    assert_eq!(c.stats().flock, 1);
    assert_eq!(c.stats().waiters, 0);
    // Restart: the interrupt is taken, the request sleeps on and is
    // granted when the holder unlocks.
    let (c2, s2) = (c.clone(), sig.clone());
    sig.interrupt(Interrupted::Restart);
    let t = std::thread::spawn(move || {
        c2.posix_lock_wait(&req(2, 5, 5, LockType::Write), true, Some(&*s2))
    });
    while sig.pending() || c.stats().waiters == 0 {
        std::thread::yield_now();
    }
    c.posix_lock(&req(1, 0, 9, LockType::Unlock), false)
        .unwrap();
    assert_eq!(t.join().unwrap(), Ok(()));
    assert_eq!(ranges(&c), [(2, 5, 5, true)]);
    assert_eq!(c.stats().edges, 0);
}

/// An interrupt whose last try finds the lock free takes it: the holder
/// left before the interrupted sleeper looked again.
#[test]
fn locks_interrupted_last_try_takes_a_free_lock() {
    let _one = edges_serial();
    use crate::select::Waiter;
    use crate::signal::{Interrupted, Sleep};
    /// A hook whose sleep frees the blocker, then reports an interrupt.
    struct FreeThenInterrupt(std::sync::Arc<FileLockContext>);
    impl Sleep for FreeThenInterrupt {
        fn sleep(&self, _w: &std::sync::Arc<Waiter>) -> Result<(), Interrupted> {
            self.0.remove_posix(Owner::Files(1));
            Err(Interrupted::Eintr)
        }
    }
    let c = std::sync::Arc::new(FileLockContext::new());
    c.posix_lock(&req(1, 0, 9, LockType::Write), false).unwrap();
    let hook = FreeThenInterrupt(c.clone());
    assert_eq!(
        c.posix_lock_wait(&req(2, 0, 0, LockType::Write), true, Some(&hook)),
        Ok(())
    );
    assert_eq!(ranges(&c), [(2, 0, 0, true)]);
    assert_eq!(c.stats().waiters, 0);
    assert_eq!(c.stats().edges, 0);
}
