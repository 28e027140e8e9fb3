//! Section 9: `fd_close_lockless`, a close of fds 0..63 without the
//! table's lock, against each other user of the slot and the number: the
//! lowest-fd allocator (with a lookup before it), a lookup, dup2 onto the
//! fd and from it, fork's copy, and a second close. The must-fail twins
//! put the close's steps in a wrong order (the slot emptied before the
//! number is freed, or the number freed before the slot is held) or let
//! fork's copy release each slot as soon as it copied it.

use super::*;
use crate::fdtable::CloseOrder;

/// Seeds with the lockless close on, and the same with it off (closes of
/// a shared table take the lock; fds 0..63 still claimed without it).
fn closeless() -> FastPaths {
    FastPaths {
        fd_close_lockless: true,
        ..FastPaths::seeds()
    }
}

fn close_locked() -> FastPaths {
    FastPaths {
        fd_close_lockless: false,
        ..FastPaths::seeds()
    }
}

/// fd 0 = F. B closes it. A looks fd 0 up, then reserves the lowest free
/// fd, then looks up the fd it got. Linux's order gives: a lookup that
/// found fd 0 empty is after the close, so the reservation after it gets
/// 0; a reservation that got 0 is after the close, so fd 0 then has no
/// file (reserved, not installed).
fn close_vs_lookup_then_alloc(fast: FastPaths, order: CloseOrder, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        pa.fd_table().set_close_order(order);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || {
            assert_eq!(pb.close(0), Ok(()));
        });

        let table = pa.fd_table();
        let found = table.get(0).map(check_and_drop);
        let r = table.alloc_fd(0, 1024, false).unwrap();
        let fd = r.fd();
        if found.is_none() {
            assert_eq!(fd, 0, "fd 0 seen closed, then fd {fd} allocated");
        }
        if fd == 0 {
            if let Some(f) = table.get(0) {
                let id = check_and_drop(f);
                panic!("fd 0 allocated, then found holding file {id}");
            }
        } else {
            assert_eq!(fd, 1);
        }
        seen.hit(usize::from(fd == 0));
        drop(r);

        b.join().unwrap();
        assert_eq!(table.open_fds(), Vec::<u32>::new());
        table.check_invariants().unwrap();
        log.assert_all_released(1);
    });
    seen.report(["allocated 1", "allocated 0"], &[0, 1]);
}

#[test]
fn lockless_close_vs_lookup_then_alloc() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_lookup_then_alloc(closeless(), CloseOrder::Right, &SEEN);
}

#[test]
fn locked_close_vs_lookup_then_alloc() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_lookup_then_alloc(close_locked(), CloseOrder::Right, &SEEN);
}

/// The slot emptied before the number is freed (the locked close of
/// `fd_bits_lockfree` before this switch): a lookup finds fd 0 empty and
/// the allocation after it skips the still-taken number.
#[test]
#[should_panic(expected = "seen closed")]
fn twin_close_slot_emptied_first() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_lookup_then_alloc(closeless(), CloseOrder::SlotFirst, &SEEN);
}

/// The number freed before the slot is held: an allocator gets fd 0 while
/// the old file is still in its slot.
#[test]
#[should_panic(expected = "found holding")]
fn twin_close_bit_freed_first() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_lookup_then_alloc(closeless(), CloseOrder::BitFirst, &SEEN);
}

/// Lookup against the lockless close and the reuse of the file object
/// (section 1's model, switch on and off).
#[test]
fn lockless_close_lookup_vs_close_and_reuse() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(closeless(), false, &REUSED);
}

#[test]
fn locked_close_lookup_vs_close_and_reuse() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(close_locked(), false, &REUSED);
}

/// fd 0 = F, fd 1 = G. B closes fd 1; A does dup2(0, 1). Both succeed in
/// either order: dup2 first, the close closes F at fd 1 (G put by dup2);
/// the close first, dup2 installs F at a free fd 1. G is released once,
/// F stays open at fd 0.
fn close_vs_dup2_onto(fast: FastPaths, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        assert_eq!(open(&mut pa, &log, 1), 1);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || {
            assert_eq!(pb.close(1), Ok(()));
        });
        assert_eq!(pa.dup2(0, 1), Ok(1));
        b.join().unwrap();

        let table = pa.fd_table();
        let at1 = table.get(1).map(check_and_drop);
        assert!(at1.is_none() || at1 == Some(0), "fd 1 holds {at1:?}");
        seen.hit(usize::from(at1.is_some()));
        assert_eq!(log.released(1), 1);
        assert_eq!(log.released(0), 0);
        let want: Vec<u32> = if at1.is_some() { vec![0, 1] } else { vec![0] };
        assert_eq!(table.open_fds(), want);
        table.check_invariants().unwrap();
        drop(pa);
        log.assert_all_released(2);
    });
    seen.report(["dup2 first", "close first"], &[0, 1]);
}

#[test]
fn lockless_close_vs_dup2_onto_it() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_dup2_onto(closeless(), &SEEN);
}

#[test]
fn locked_close_vs_dup2_onto_it() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_dup2_onto(close_locked(), &SEEN);
}

/// fd 0 = F, fd 1 = G. B closes fd 0; A does dup2(0, 1). dup2 first: fd 1
/// = F, G released; the close first: EBADF, fd 1 still G.
fn close_vs_dup2_from(fast: FastPaths, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        assert_eq!(open(&mut pa, &log, 1), 1);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || {
            assert_eq!(pb.close(0), Ok(()));
        });
        let r = pa.dup2(0, 1);
        b.join().unwrap();

        let table = pa.fd_table();
        let at1 = check_and_drop(table.get(1).expect("fd 1 never empty"));
        match r {
            Ok(1) => {
                assert_eq!(at1, 0);
                assert_eq!(log.released(1), 1);
                assert_eq!(log.released(0), 0);
            }
            Err(Errno::EBADF) => {
                assert_eq!(at1, 1);
                assert_eq!(log.released(0), 1);
            }
            r => panic!("dup2 answered {r:?}"),
        }
        seen.hit(usize::from(r.is_err()));
        assert_eq!(table.open_fds(), vec![1]);
        table.check_invariants().unwrap();
        drop(pa);
        log.assert_all_released(2);
    });
    seen.report(["dup2 first", "close first"], &[0, 1]);
}

#[test]
fn lockless_close_vs_dup2_from_it() {
    static SEEN: Seen<2> = Seen::new();
    close_vs_dup2_from(closeless(), &SEEN);
}

/// fd 0 = F, fd 1 = G. B closes fd 0, then fd 1; A copies the table
/// (fork). The copy is one instant in B's sequence: it has both, only
/// fd 1, or neither; never fd 0 without fd 1.
fn close_vs_fork(fast: FastPaths, order: CloseOrder, seen: &'static Seen<3>) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        assert_eq!(open(&mut pa, &log, 1), 1);
        pa.fd_table().set_close_order(order);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || {
            assert_eq!(pb.close(0), Ok(()));
            assert_eq!(pb.close(1), Ok(()));
        });
        let child = pa.fd_table().copy(None).unwrap();
        b.join().unwrap();

        let fds = child.open_fds();
        let k = match fds.as_slice() {
            [0, 1] => 0,
            [1] => 1,
            [] => 2,
            other => panic!("the copy has fds {other:?}"),
        };
        seen.hit(k);
        for &fd in &fds {
            let f = child.get(fd as i32).expect("a copied fd has its file");
            assert_eq!(check_and_drop(f), fd as usize);
        }
        child.check_invariants().unwrap();
        assert_eq!(pa.fd_table().open_fds(), Vec::<u32>::new());
        drop(child);
        log.assert_all_released(2);
    });
    seen.report(["both", "fd 1 only", "neither"], &[0, 2]);
}

#[test]
fn lockless_close_vs_fork() {
    static SEEN: Seen<3> = Seen::new();
    close_vs_fork(closeless(), CloseOrder::Right, &SEEN);
}

#[test]
fn locked_close_vs_fork() {
    static SEEN: Seen<3> = Seen::new();
    close_vs_fork(close_locked(), CloseOrder::Right, &SEEN);
}

/// Fork's copy releasing each slot once copied: the copy keeps fd 0 and
/// then misses fd 1, closed after fd 0.
#[test]
#[should_panic(expected = "the copy has fds [0]")]
fn twin_fork_copy_releases_each_slot() {
    static SEEN: Seen<3> = Seen::new();
    close_vs_fork(closeless(), CloseOrder::CopyEach, &SEEN);
}

/// fd 0 = F, closed by A and B at once: one gets Ok, the other EBADF; F
/// released once.
fn two_closes(fast: FastPaths, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || pb.close(0));
        let a = pa.close(0);
        let b = b.join().unwrap();
        match (a, b) {
            (Ok(()), Err(Errno::EBADF)) => seen.hit(0),
            (Err(Errno::EBADF), Ok(())) => seen.hit(1),
            other => panic!("two closes of one fd answered {other:?}"),
        }
        assert_eq!(pa.fd_table().open_fds(), Vec::<u32>::new());
        pa.fd_table().check_invariants().unwrap();
        log.assert_all_released(1);
    });
    seen.report(["A closed it", "B closed it"], &[0, 1]);
}

#[test]
fn lockless_two_closes_of_one_fd() {
    static SEEN: Seen<2> = Seen::new();
    two_closes(closeless(), &SEEN);
}
