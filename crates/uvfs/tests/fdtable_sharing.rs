//! Syscall-level tests of how fd tables are shared and split: fget and
//! with_file, the position lock, close_range (and its unshare), fork,
//! threads, unshare(CLONE_FILES) and exec, with the results and errno
//! Linux gives.

mod support;

use support::fdcalls::*;
use support::vfs::each_combination;
use uvfs::uapi::*;
use uvfs::{Errno, FileRef, Process, task_work};

// ---------------------------------------------------------------------------
// fget, fget_raw, with_file and the position lock.

#[test]
fn fget_and_with_file() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR | O_APPEND);
        let f = p.fget(a).unwrap();
        assert_eq!(f.count(), 2);
        let g = p.fget_raw(a).unwrap();
        assert!(FileRef::ptr_eq(&f, &g));
        assert_eq!(f.count(), 3);
        drop(g);
        assert_eq!(f.count(), 2);
        assert_eq!(
            p.with_file(a, |file| file.flags()),
            Ok(O_RDWR | O_APPEND | O_LARGEFILE)
        );
        for bad in BAD_FDS.into_iter().chain([1, 63, 64]) {
            assert_eq!(p.fget(bad).err(), Some(Errno::EBADF));
            assert_eq!(p.fget_raw(bad).err(), Some(Errno::EBADF));
            assert_eq!(p.with_file(bad, |_| ()), Err(Errno::EBADF));
        }
        // A shared table: with_file still finds the file.
        let mut t = p.new_thread();
        assert_eq!(t.with_file(a, |file| file.count()), Ok(3));
        assert_eq!(p.with_file(a, |file| file.count()), Ok(3));
        drop(t);
        assert_eq!(p.with_file(a, |file| file.count()), Ok(2));
    });
}

#[test]
fn the_position_lock_is_taken_only_when_the_file_is_shared() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR);
        let locked = |p: &mut Process, fd| p.with_file(fd, |f| f.lock_pos().is_locked()).unwrap();
        assert!(!locked(&mut p, a), "one fd, one thread");
        let b = p.dup(a).unwrap();
        assert!(locked(&mut p, a), "two fds");
        assert!(locked(&mut p, b));
        p.close(b).unwrap();
        assert!(!locked(&mut p, a));
        let f = p.fget(a).unwrap();
        assert!(locked(&mut p, a), "an extra reference");
        drop(f);
        assert!(!locked(&mut p, a));
        let t = p.new_thread();
        assert!(locked(&mut p, a), "a shared table takes a reference");
        drop(t);
        assert!(!locked(&mut p, a));
        let c = p.fork().unwrap();
        assert!(locked(&mut p, a), "shared with a child");
        drop(c);
        assert!(!locked(&mut p, a));

        // Files without FMODE_ATOMIC_POS never lock.
        let s = p
            .open_with(O_RDWR, |o| {
                o.clear_atomic_pos();
                Ok(())
            })
            .unwrap();
        let s2 = p.dup(s).unwrap();
        assert!(!locked(&mut p, s));
        assert!(!locked(&mut p, s2));

        // The position belongs to the file: dups share it, other opens do not.
        p.with_file(a, |f| f.lock_pos().set(42)).unwrap();
        let b = p.dup(a).unwrap();
        assert_eq!(p.with_file(b, |f| f.lock_pos().get()), Ok(42));
        let mut c = p.fork().unwrap();
        assert_eq!(c.with_file(a, |f| f.lock_pos().get()), Ok(42));
        let other = open(&mut p, O_RDWR);
        assert_eq!(p.with_file(other, |f| f.lock_pos().get()), Ok(0));
        // Every open starts at position 0, whatever object it reuses.
        for _ in 0..100 {
            let fd = open(&mut p, O_RDWR);
            assert_eq!(p.with_file(fd, |f| f.lock_pos().get()), Ok(0));
            p.with_file(fd, |f| f.lock_pos().set(7)).unwrap();
            p.close(fd).unwrap();
        }
    });
}

// ---------------------------------------------------------------------------
// close_range.

#[test]
fn close_range_errors() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR);
        let t = p.new_thread();
        for flags in [1, 1 << 3, u32::MAX, CLOSE_RANGE_UNSHARE | 1, 1 << 31] {
            assert_eq!(
                p.close_range(0, 10, flags),
                Err(Errno::EINVAL),
                "{flags:#x}"
            );
        }
        assert_eq!(p.close_range(5, 3, 0), Err(Errno::EINVAL));
        assert_eq!(p.close_range(1, 0, CLOSE_RANGE_CLOEXEC), Err(Errno::EINVAL));
        assert_eq!(
            p.close_range(u32::MAX, 0, CLOSE_RANGE_UNSHARE),
            Err(Errno::EINVAL)
        );
        // Nothing happened: not even the unshare.
        assert!(same_table(&p, &t));
        assert_eq!(p.fd_table().users(), 2);
        assert_eq!(getfd(&mut p, a), Ok(0));
        assert_eq!(fds(&p), [0]);
    });
}

#[test]
fn close_range_closes_the_open_fds_in_range() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let probes: Vec<_> = (0..8).map(|_| open_probe(&mut p, O_RDWR).1).collect();
        p.close(2).unwrap();
        let extra = p.dup(7).unwrap();
        assert_eq!(extra, 2);
        assert_eq!(p.dup2(6, 200), Ok(200));
        assert_eq!(p.close_range(2, 6, 0), Ok(()));
        assert_eq!(fds(&p), [0, 1, 7, 200]);
        for (i, pr) in probes.iter().enumerate() {
            let (flushes, releases) = match i {
                0 | 1 => (0, 0),
                2 => (1, 1),
                3..=5 => (1, 1),
                6 => (1, 0), // still at fd 200
                7 => (1, 0), // its dup at fd 2 closed, fd 7 kept
                _ => unreachable!(),
            };
            assert_eq!(
                (pr.flushes(), pr.releases()),
                (flushes, releases),
                "file {i}"
            );
        }
        // A range beyond the table, and a one-fd range.
        assert_eq!(p.close_range(1000, u32::MAX, 0), Ok(()));
        assert_eq!(p.close_range(200, 200, 0), Ok(()));
        assert_eq!(probes[6].releases(), 1);
        assert_eq!(fds(&p), [0, 1, 7]);
        assert_eq!(open(&mut p, O_RDWR), 2, "closed fds are free again");
        assert_eq!(p.close_range(0, u32::MAX, 0), Ok(()));
        assert_eq!(fds(&p), [] as [u32; 0]);
        assert!(probes.iter().all(|pr| pr.releases() == 1));
        assert!(!task_work::pending());
        check(&p);
    });
}

#[test]
fn close_range_cloexec_marks_without_closing() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let probes: Vec<_> = (0..6).map(|_| open_probe(&mut p, O_RDWR).1).collect();
        p.close(3).unwrap();
        assert_eq!(p.close_range(2, 20, CLOSE_RANGE_CLOEXEC), Ok(()));
        assert_eq!(fds(&p), [0, 1, 2, 4, 5]);
        for fd in [0, 1] {
            assert_eq!(getfd(&mut p, fd), Ok(0));
        }
        for fd in [2, 4, 5] {
            assert_eq!(getfd(&mut p, fd), Ok(FD_CLOEXEC));
        }
        for (i, pr) in probes.iter().enumerate() {
            assert_eq!(pr.flushes(), usize::from(i == 3), "only fd 3 was closed");
        }
        // Free fds in the range get no FD_CLOEXEC from it when allocated
        // later (checked on 6.18 with dup and dup2).
        assert_eq!(open(&mut p, O_RDWR), 3);
        assert_eq!(getfd(&mut p, 3), Ok(0));
        assert_eq!(p.dup(0), Ok(6));
        assert_eq!(getfd(&mut p, 6), Ok(0));
        assert_eq!(p.dup2(0, 7), Ok(7));
        assert_eq!(getfd(&mut p, 7), Ok(0));
        assert_eq!(p.fcntl(0, F_DUPFD, 8), Ok(8));
        assert_eq!(getfd(&mut p, 8), Ok(0));
        // exec then closes exactly the marked fds.
        p.exec().unwrap();
        assert_eq!(fds(&p), [0, 1, 3, 6, 7, 8]);
        for (i, pr) in probes.iter().enumerate() {
            let closed = (2..=5).contains(&i);
            assert_eq!(pr.releases(), usize::from(closed), "file {i}");
        }
        check(&p);
    });
}

#[test]
fn close_range_unshare_gives_a_private_table() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let probes: Vec<_> = (0..6).map(|_| open_probe(&mut p, O_RDWR).1).collect();
        let mut t = p.new_thread();
        assert_eq!(p.fd_table().users(), 2);
        assert_eq!(t.close_range(2, 3, CLOSE_RANGE_UNSHARE), Ok(()));
        assert!(!same_table(&p, &t));
        assert_eq!(p.fd_table().users(), 1);
        assert_eq!(t.fd_table().users(), 1);
        assert_eq!(fds(&t), [0, 1, 4, 5]);
        assert_eq!(
            fds(&p),
            [0, 1, 2, 3, 4, 5],
            "the other thread keeps its fds"
        );
        // The files closed in the private table are flushed there, and stay
        // open in the other table.
        assert_eq!((probes[2].flushes(), probes[2].releases()), (1, 0));
        assert!(same_file(&mut p, 0, &mut t, 0));
        // The tables are independent from now on.
        assert_eq!(open(&mut t, O_RDWR), 2);
        assert!(!same_file(&mut p, 2, &mut t, 2));
        p.close(3).unwrap();
        assert_eq!(probes[3].releases(), 1);
        assert_eq!(fds(&t), [0, 1, 2, 4, 5]);
        drop(p);
        assert_eq!(probes[2].releases(), 1);
        assert_eq!(probes[0].releases(), 0, "t still has fd 0");
        drop(t);
        assert!(probes.iter().all(|pr| pr.releases() == 1));

        // UNSHARE | CLOEXEC: marks the range in the private copy only.
        let mut p = new_proc(fast);
        for _ in 0..4 {
            open(&mut p, O_RDWR);
        }
        let mut t = p.new_thread();
        let flags = CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC;
        assert_eq!(t.close_range(1, 2, flags), Ok(()));
        assert!(!same_table(&p, &t));
        assert_eq!(fds(&t), [0, 1, 2, 3]);
        for fd in 0..4 {
            let want = if fd == 1 || fd == 2 { FD_CLOEXEC } else { 0 };
            assert_eq!(getfd(&mut t, fd), Ok(want));
            assert_eq!(getfd(&mut p, fd), Ok(0));
        }

        // UNSHARE on a table that is not shared: just the close.
        let before = p.fd_table() as *const _;
        assert_eq!(p.close_range(3, 3, CLOSE_RANGE_UNSHARE), Ok(()));
        assert!(std::ptr::eq(before, p.fd_table()));
        assert_eq!(fds(&p), [0, 1, 2]);
        check(&p);
        check(&t);
    });
}

// ---------------------------------------------------------------------------
// fork, threads, unshare, exec, exit.

#[test]
fn fork_copies_the_table_and_shares_the_files() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR);
        let (b, pb) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        let path = open(&mut p, O_PATH);
        assert_eq!(p.dup2(a, 100), Ok(100));
        let count = p.fget_raw(a).unwrap().count();
        let mut c = p.fork().unwrap();
        assert!(!same_table(&p, &c));
        assert_eq!(c.fd_table().users(), 1);
        assert_eq!(p.fd_table().users(), 1);
        assert_eq!(fds(&c), fds(&p));
        assert_eq!(fds(&c), [0, 1, 2, 100]);
        for fd in [a, b, path, 100] {
            assert!(same_file(&mut p, fd, &mut c, fd), "fd {fd}");
        }
        assert_eq!(
            p.fget_raw(a).unwrap().count(),
            count + 2,
            "one per child slot"
        );
        assert_eq!(getfd(&mut c, b), Ok(FD_CLOEXEC));
        assert_eq!(getfd(&mut c, a), Ok(0));
        // Shared status flags, private fd flags.
        c.fcntl(a, F_SETFL, O_NONBLOCK as u64).unwrap();
        assert_eq!(getfl(&mut p, a), Ok(O_RDWR | O_LARGEFILE | O_NONBLOCK));
        c.fcntl(b, F_SETFD, 0).unwrap();
        assert_eq!(getfd(&mut p, b), Ok(FD_CLOEXEC));
        // Release only after both processes closed.
        p.close(b).unwrap();
        assert_eq!((pb.flushes(), pb.releases()), (1, 0));
        c.close(b).unwrap();
        assert_eq!((pb.flushes(), pb.releases()), (2, 1));
        // Independent allocation.
        assert_eq!(open(&mut c, O_RDWR), 1);
        assert_eq!(fds(&p), [0, 2, 100]);
        drop(c);
        assert_eq!((pa.flushes(), pa.releases()), (2, 0));
        drop(p);
        assert_eq!((pa.flushes(), pa.releases()), (4, 1));
    });
}

#[test]
fn threads_share_the_table_and_the_last_exit_closes_it() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR);
        let mut t = p.new_thread();
        assert!(same_table(&p, &t));
        assert_eq!(p.fd_table().users(), 2);
        let mut u = t.new_thread();
        assert_eq!(p.fd_table().users(), 3);
        let (b, pb) = open_probe(&mut t, O_RDWR);
        assert_eq!(b, 1);
        assert!(same_file(&mut p, b, &mut u, b));
        u.close(b).unwrap();
        assert_eq!(p.close(b), Err(Errno::EBADF));
        assert_eq!((pb.flushes(), pb.releases()), (1, 1));
        t.fcntl(a, F_SETFD, 1).unwrap();
        assert_eq!(getfd(&mut p, a), Ok(FD_CLOEXEC));
        drop(u);
        assert_eq!(p.fd_table().users(), 2);
        drop(p);
        assert_eq!(t.fd_table().users(), 1);
        assert_eq!(pa.flushes(), 0, "a thread exit closes nothing");
        assert_eq!(fds(&t), [0]);
        let (c, pc) = open_probe(&mut t, O_RDWR);
        let _d = t.dup(c).unwrap();
        drop(t);
        assert_eq!((pa.flushes(), pa.releases()), (1, 1));
        assert_eq!((pc.flushes(), pc.releases()), (2, 1));
        assert!(!task_work::pending());
    });
}

#[test]
fn unshare_files() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        // Not shared: nothing changes.
        let before = p.fd_table() as *const _;
        p.unshare_files().unwrap();
        assert!(std::ptr::eq(before, p.fd_table()));
        assert_eq!(fds(&p), [0]);

        let mut t = p.new_thread();
        t.unshare_files().unwrap();
        assert!(!same_table(&p, &t));
        assert_eq!((p.fd_table().users(), t.fd_table().users()), (1, 1));
        assert_eq!(fds(&t), [0]);
        assert!(same_file(&mut p, a, &mut t, a));
        assert_eq!(getfd(&mut t, a), Ok(FD_CLOEXEC));
        assert_eq!(pa.flushes(), 0, "unshare closes nothing");
        t.close(a).unwrap();
        assert_eq!(getfd(&mut p, a), Ok(FD_CLOEXEC));
        assert_eq!(open(&mut p, O_RDWR), 1);
        assert_eq!(fds(&t), [] as [u32; 0]);
        assert_eq!(pa.releases(), 0);
        drop(p);
        assert_eq!(pa.releases(), 1);
    });
}

#[test]
fn exec_closes_only_close_on_exec_fds() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR);
        let (b, pb) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        let (c, pc) = open_probe(&mut p, O_RDWR);
        p.fcntl(c, F_SETFD, FD_CLOEXEC as u64).unwrap();
        assert_eq!(p.dup3(a, 3, O_CLOEXEC), Ok(3));
        assert_eq!(p.fcntl(a, F_DUPFD_CLOEXEC, 70), Ok(70));
        let (d, pd) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        p.fcntl(d, F_SETFD, 0).unwrap();
        assert_eq!(p.exec(), Ok(()));
        assert_eq!(fds(&p), [a as u32, d as u32]);
        assert_eq!((pa.flushes(), pa.releases()), (2, 0), "fds 3 and 70 closed");
        assert_eq!((pb.flushes(), pb.releases()), (1, 1));
        assert_eq!((pc.flushes(), pc.releases()), (1, 1));
        assert_eq!((pd.flushes(), pd.releases()), (0, 0));
        assert_eq!(getfd(&mut p, a), Ok(0));
        assert_eq!(getfd(&mut p, d), Ok(0));
        assert_eq!(p.exec(), Ok(()), "a second exec closes nothing");
        assert_eq!(fds(&p), [a as u32, d as u32]);
        assert_eq!(open(&mut p, O_RDWR), b);
        check(&p);
    });
}

#[test]
fn exec_unshares_a_shared_table_first() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        let b = open(&mut p, O_RDWR);
        let mut t = p.new_thread();
        let mut u = p.new_thread();
        // Another thread's open in progress while t execs: the reserved fd
        // is free in the exec'ed table.
        let fd = p
            .open_with(O_RDWR, |_| {
                assert_eq!(reserved(&t), [2]);
                t.exec().unwrap();
                assert!(!same_table(&t, &u));
                assert_eq!(fds(&t), [b as u32]);
                assert_eq!(reserved(&t), [] as [u32; 0]);
                Ok(())
            })
            .unwrap();
        assert_eq!(fd, 2);
        assert_eq!(t.fd_table().users(), 1);
        assert_eq!(p.fd_table().users(), 2);
        assert_eq!(fds(&p), [0, 1, 2]);
        assert_eq!(getfd(&mut u, a), Ok(FD_CLOEXEC));
        assert_eq!((pa.flushes(), pa.releases()), (1, 0));
        assert_eq!(open(&mut t, O_RDWR), 0);
        drop(p);
        drop(u);
        assert_eq!((pa.flushes(), pa.releases()), (2, 1));
        check(&t);
    });
}
