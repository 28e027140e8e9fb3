//! Loom models of the lock table's wait/wake protocol: a blocked request
//! is always woken by the change that frees it (no lost wake-up: loom
//! reports a deadlock if every thread sleeps), a sleeper whose blocker did
//! not change sleeps on, and of two owners closing a cycle exactly one gets
//! `EDEADLK`. Each model ends with the table empty: no lock, waiter or
//! waits-for record left.

use super::*;
use crate::primitive::model::{Seen, builder};
use loom::sync::Arc;
use loom::thread;

/// The harness's `check`, one model at a time (see [`edges_serial`]).
fn check(b: &loom::model::Builder, model: impl Fn() + Send + Sync + 'static) {
    let _one = edges_serial();
    crate::primitive::model::check(b, model);
}

fn req(owner: u64, start: i64, end: i64, ty: LockType) -> PosixRequest {
    PosixRequest {
        owner: Owner::Files(owner),
        pid: owner as i32,
        start,
        end,
        ty,
    }
}

fn assert_empty(c: &FileLockContext) {
    assert_eq!(c.stats(), LockStats::default());
}

/// A blocked write request is granted once the holder unlocks, whatever
/// the interleaving of the request's check, its sleep and the unlock.
#[test]
fn blocked_request_woken_by_unlock() {
    check(&builder(4), || {
        let c = Arc::new(FileLockContext::new());
        c.posix_lock(&req(1, 0, 9, LockType::Write), false).unwrap();
        let c2 = c.clone();
        let t = thread::spawn(move || {
            c2.posix_lock(&req(2, 5, 5, LockType::Write), true).unwrap();
            c2.posix_lock(&req(2, 5, 5, LockType::Unlock), false)
                .unwrap();
        });
        c.posix_lock(&req(1, 0, 9, LockType::Unlock), false)
            .unwrap();
        t.join().unwrap();
        assert_empty(&c);
    });
}

/// A change that does not touch the blocker (another owner's unrelated
/// lock) leaves the sleeper asleep; the blocker's removal (a close,
/// `remove_posix`) then wakes it.
#[test]
fn unrelated_change_then_close() {
    check(&builder(4), || {
        let c = Arc::new(FileLockContext::new());
        c.posix_lock(&req(1, 0, 0, LockType::Write), false).unwrap();
        let c2 = c.clone();
        let t = thread::spawn(move || {
            c2.posix_lock(&req(2, 0, 0, LockType::Read), true).unwrap();
            c2.remove_posix(Owner::Files(2));
        });
        c.posix_lock(&req(3, 50, 60, LockType::Read), false)
            .unwrap();
        c.remove_posix(Owner::Files(3));
        c.remove_posix(Owner::Files(1));
        t.join().unwrap();
        assert_empty(&c);
    });
}

static DEADLOCK: Seen<2> = Seen::new();

/// Two owners each hold one byte and wait for the other's: exactly one
/// gets `EDEADLK`, gives its byte up, and the other is granted.
#[test]
fn cycle_gets_one_edeadlk() {
    check(&builder(4), || {
        let c = Arc::new(FileLockContext::new());
        c.posix_lock(&req(1, 0, 0, LockType::Write), false).unwrap();
        c.posix_lock(&req(2, 1, 1, LockType::Write), false).unwrap();
        let run = |c: Arc<FileLockContext>, me: u64, want: i64| {
            let r = c.posix_lock(&req(me, want, want, LockType::Write), true);
            // Done either way: release everything, as a close would.
            c.remove_posix(Owner::Files(me));
            r
        };
        let c2 = c.clone();
        let t = thread::spawn(move || run(c2, 2, 0));
        let a = run(c.clone(), 1, 1);
        let b = t.join().unwrap();
        let fails = [a, b].iter().filter(|r| **r == Err(Errno::EDEADLK)).count();
        assert_eq!(fails, 1, "a: {a:?}, b: {b:?}");
        DEADLOCK.hit(usize::from(a.is_err()));
        assert_empty(&c);
    });
    DEADLOCK.report(["second owner failed", "first owner failed"], &[0, 1]);
}

/// flock: a blocked exclusive request is woken when the holder's file
/// goes (its last close), never lost.
#[test]
fn flock_waiter_woken_by_last_close() {
    check(&builder(4), || {
        let c = Arc::new(FileLockContext::new());
        c.flock(1, LockType::Read, false).unwrap();
        let c2 = c.clone();
        let t = thread::spawn(move || {
            c2.flock(2, LockType::Write, true).unwrap();
            c2.remove_file(2);
        });
        c.remove_file(1);
        t.join().unwrap();
        assert_empty(&c);
    });
}

static INTERRUPT: Seen<2> = Seen::new();

/// An interrupt races with the grant (the holder's unlock): the blocked
/// request either succeeds and holds its lock, or fails with `EINTR` and
/// holds nothing; no waiter or waits-for record is left either way, and a
/// grant is never lost (loom reports a deadlock if the request sleeps on
/// with the lock free).
#[test]
fn interrupt_races_with_grant() {
    use crate::signal::{Interrupted, Signals};
    check(&builder(3), || {
        let c = Arc::new(FileLockContext::new());
        c.posix_lock(&req(1, 0, 0, LockType::Write), false).unwrap();
        let sig = Signals::new();
        let (c2, s2) = (c.clone(), sig.clone());
        let t = thread::spawn(move || {
            c2.posix_lock_wait(&req(2, 0, 0, LockType::Write), true, Some(&*s2))
        });
        let s3 = sig.clone();
        let i = thread::spawn(move || s3.interrupt(Interrupted::Eintr));
        c.posix_lock(&req(1, 0, 0, LockType::Unlock), false)
            .unwrap();
        let r = t.join().unwrap();
        i.join().unwrap();
        let held = c.test(&req(3, 0, 0, LockType::Write)).is_some();
        match r {
            Ok(()) => assert!(held, "granted but not held"),
            Err(e) => {
                assert_eq!(e, Errno::EINTR);
                assert!(!held, "failed but held");
            }
        }
        INTERRUPT.hit(usize::from(r.is_err()));
        let s = c.stats();
        assert_eq!((s.waiters, s.edges), (0, 0));
        c.remove_posix(Owner::Files(2));
        assert_empty(&c);
    });
    INTERRUPT.report(["granted", "interrupted"], &[0, 1]);
}

fn holder(key: usize, counted: Option<bool>) -> Holder {
    Holder {
        key,
        file: None,
        fd: 3,
        counted,
    }
}

static LEASE_RACE: Seen<3> = Seen::new();

/// The lockless half of leases: a read-lease setter (insert, fence, look
/// at the counts) races with an opener for writing (count, fence, look for
/// leases, break without waiting). Never both unaware: an open that
/// succeeded (its count kept) never coexists with a lease that is not
/// being broken. Ends with the lease and the count given back.
#[test]
fn lease_setter_races_with_opener() {
    use crate::uapi::{F_RDLCK, F_UNLCK};
    use std::time::Duration;
    check(&builder(3), || {
        let c = Arc::new(FileLockContext::new());
        let counts = Arc::new(OpenCounts::default());
        // The setter's own file, open for reading.
        counts.get(false);
        let (c2, n2) = (c.clone(), counts.clone());
        let opener = thread::spawn(move || {
            n2.get(true);
            let r = break_lease_if_any(Some(&*c2), true, true, Duration::ZERO, None, &|_| {});
            if r.is_err() {
                n2.put(true);
            }
            r.is_ok()
        });
        let set = c
            .setlease(&counts, &|| (0, 0), holder(1, Some(false)), F_RDLCK)
            .is_ok();
        let opened = opener.join().unwrap();
        let ty = c.getlease(1);
        assert!(
            !(opened && set && ty == F_RDLCK),
            "an open for writing succeeded beside an unbroken read lease"
        );
        LEASE_RACE.hit(match (set, opened) {
            (true, false) => 0,
            (false, true) => 1,
            _ => 2,
        });
        if set {
            c.setlease(&counts, &|| (0, 0), holder(1, Some(false)), F_UNLCK)
                .unwrap();
        }
        if opened {
            counts.put(true);
        }
        counts.put(false);
        assert_eq!(counts.load(), (0, 0));
        assert_empty(&c);
    });
    LEASE_RACE.report(["lease first", "open first", "both"], &[0, 1]);
}

/// A blocked breaker (an open for writing) is woken by the holder's
/// unlock or by the holder file's last close, whatever the interleaving:
/// no lost wake-up (loom reports a deadlock if the breaker sleeps on).
#[test]
fn lease_breaker_woken_by_unlock_or_close() {
    use crate::uapi::{F_UNLCK, F_WRLCK};
    use std::time::Duration;
    for close in [false, true] {
        check(&builder(3), move || {
            let c = Arc::new(FileLockContext::new());
            let counts = Arc::new(OpenCounts::default());
            counts.get(true);
            c.setlease(&counts, &|| (0, 0), holder(1, Some(true)), F_WRLCK)
                .unwrap();
            let c2 = c.clone();
            let t =
                thread::spawn(move || c2.break_lease(true, false, Duration::ZERO, None, &|_| {}));
            if close {
                c.remove_file(1);
            } else {
                c.setlease(&counts, &|| (0, 0), holder(1, Some(true)), F_UNLCK)
                    .unwrap();
            }
            assert_eq!(t.join().unwrap(), Ok(()));
            counts.put(true);
            assert_empty(&c);
        });
    }
}
