//! Syscall-level tests of the fd calls of [`Process`]: every call, every
//! error, with the results and errno Linux gives. Expected values that are
//! not plain from the man pages were checked on a Linux 6.18 kernel (noted
//! where it matters).
//!
//! Most tests run under every [`FastPaths`] combination: the switches must
//! not change what a caller sees.

mod support;

use std::sync::Arc;
use std::thread::{self};
use support::fdcalls::*;
use support::vfs::each_combination;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, FileOps, task_work};

// ---------------------------------------------------------------------------
// open: allocation, growth, limits.

#[test]
fn open_takes_the_lowest_free_fd() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        for want in 0..6 {
            assert_eq!(open(&mut p, O_RDWR), want);
        }
        p.close(1).unwrap();
        p.close(3).unwrap();
        check(&p);
        assert_eq!(open(&mut p, O_RDWR), 1);
        assert_eq!(open(&mut p, O_RDWR), 3);
        assert_eq!(open(&mut p, O_RDWR), 6);
        p.close(0).unwrap();
        p.close(5).unwrap();
        assert_eq!(open(&mut p, O_RDONLY), 0);
        assert_eq!(open(&mut p, O_RDONLY), 5);
        assert_eq!(fds(&p), [0, 1, 2, 3, 4, 5, 6]);
        check(&p);
    });
}

#[test]
fn open_grows_the_table_by_powers_of_two() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        assert_eq!(p.fd_table().max_fds(), 64);
        for want in 0..600 {
            assert_eq!(open(&mut p, O_RDWR), want);
            // Linux's alloc_fdtable: the smallest power of two (at least
            // NR_OPEN_DEFAULT = 64) above the highest fd ("FDSize").
            let expect = (want as usize + 1).next_power_of_two().max(64);
            assert_eq!(p.fd_table().max_fds(), expect, "after fd {want}");
        }
        check(&p);
        // Holes across word and chunk boundaries are refilled lowest first.
        for fd in [63, 64, 127, 128, 300, 511, 512] {
            p.close(fd).unwrap();
        }
        check(&p);
        for want in [63, 64, 127, 128, 300, 511, 512, 600] {
            assert_eq!(open(&mut p, O_RDWR), want);
        }
        // The table never shrinks.
        p.close_range(0, u32::MAX, 0).unwrap();
        assert_eq!(fds(&p), [] as [u32; 0]);
        assert_eq!(p.fd_table().max_fds(), 1024);
        assert_eq!(open(&mut p, O_RDWR), 0);
        check(&p);
    });
}

#[test]
fn dup2_far_away_grows_like_linux_fdsize() {
    // Checked on Linux 6.18 (/proc/self/status FDSize): dup2 to 1000 gives
    // 1024 slots, to 1024 gives 2048.
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let fd = open(&mut p, O_RDWR);
        assert_eq!(p.dup2(fd, 63), Ok(63));
        assert_eq!(p.fd_table().max_fds(), 64);
        assert_eq!(p.dup2(fd, 64), Ok(64));
        assert_eq!(p.fd_table().max_fds(), 128);
        assert_eq!(p.dup2(fd, 1000), Ok(1000));
        assert_eq!(p.fd_table().max_fds(), 1024);
        assert_eq!(p.dup2(fd, 1023), Ok(1023));
        assert_eq!(p.fd_table().max_fds(), 1024);
        p.setrlimit_nofile(4096, 4096).unwrap();
        assert_eq!(p.dup2(fd, 1024), Ok(1024));
        assert_eq!(p.fd_table().max_fds(), 2048);
        assert_eq!(fds(&p), [0, 63, 64, 1000, 1023, 1024]);
        // Lowest-free allocation is unaffected by the far fds.
        assert_eq!(open(&mut p, O_RDWR), 1);
        check(&p);
    });
}

#[test]
fn open_fails_with_emfile_at_the_soft_limit() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        assert_eq!(p.getrlimit_nofile().0, 1024, "Linux's default soft limit");
        p.setrlimit_nofile(10, 4096).unwrap();
        for want in 0..10 {
            assert_eq!(open(&mut p, O_RDWR), want);
        }
        // The fd is allocated before the path walk: a full table gives
        // EMFILE even for a path that does not exist (checked on 6.18).
        let mut walked = false;
        let r = p.open_with(O_RDONLY, |_| {
            walked = true;
            Err(Errno::ENOENT)
        });
        assert_eq!(r, Err(Errno::EMFILE));
        assert!(!walked, "open must fail before the path walk");
        assert_eq!(p.dup(0), Err(Errno::EMFILE));
        assert_eq!(p.fcntl(0, F_DUPFD, 5), Err(Errno::EMFILE));
        assert_eq!(p.fcntl(0, F_DUPFD_CLOEXEC, 9), Err(Errno::EMFILE));
        assert_eq!(p.fcntl(0, F_DUPFD, 10), Err(Errno::EINVAL));
        assert_eq!(p.dup2(0, 10), Err(Errno::EBADF));
        // Replacing an fd below the limit needs no free slot.
        assert_eq!(p.dup2(0, 9), Ok(9));
        assert_eq!(fds(&p), (0..10).collect::<Vec<u32>>());
        check(&p);

        p.close(4).unwrap();
        assert_eq!(open(&mut p, O_RDWR), 4);

        // Raising the limit lets the table grow up to it.
        p.setrlimit_nofile(200, 4096).unwrap();
        for want in 10..200 {
            assert_eq!(open(&mut p, O_RDWR), want);
        }
        assert_eq!(p.open_with(O_RDWR, |_| Ok(())), Err(Errno::EMFILE));
        assert_eq!(p.fd_table().max_fds(), 256);
        check(&p);

        // Lowering it below open fds closes nothing: they stay usable, but
        // no new fd can be allocated at or above the limit.
        p.setrlimit_nofile(50, 4096).unwrap();
        assert_eq!(getfd(&mut p, 150), Ok(0));
        assert_eq!(p.dup2(150, 3), Ok(3));
        assert_eq!(p.dup2(3, 150), Err(Errno::EBADF));
        assert_eq!(p.fcntl(150, F_DUPFD, 0), Err(Errno::EMFILE));
        p.close(150).unwrap();
        assert_eq!(p.open_with(O_RDWR, |_| Ok(())), Err(Errno::EMFILE));
        p.close(20).unwrap();
        assert_eq!(open(&mut p, O_RDWR), 20);

        // A limit of zero: nothing can be allocated, and F_DUPFD's argument
        // is always out of range (checked on 6.18).
        p.setrlimit_nofile(0, 4096).unwrap();
        assert_eq!(p.open_with(O_RDWR, |_| Ok(())), Err(Errno::EMFILE));
        assert_eq!(p.dup(0), Err(Errno::EMFILE));
        assert_eq!(p.fcntl(0, F_DUPFD, 0), Err(Errno::EINVAL));
        assert_eq!(p.dup2(0, 1), Err(Errno::EBADF));
        assert_eq!(p.dup2(0, 0), Ok(0));
        check(&p);
    });
}

#[test]
fn open_rejects_invalid_flag_combinations_first() {
    // build_open_flags' checks, measured on 6.18: EINVAL before any fd is
    // allocated (so even with a full table) and before the path walk.
    const T: i32 = O_TMPFILE & !O_DIRECTORY; // __O_TMPFILE
    let invalid = [
        O_DIRECTORY | O_CREAT,
        O_DIRECTORY | O_CREAT | O_RDWR,
        O_TMPFILE,
        O_TMPFILE | O_RDWR | O_CREAT,
        T | O_RDWR,
        T | O_WRONLY | O_CREAT,
    ];
    // O_PATH drops the other flags before the checks.
    let valid = [
        (O_TMPFILE | O_RDWR, 0o20300002),
        (O_TMPFILE | O_ACCMODE, 0o20300003),
        (O_TMPFILE | O_WRONLY | O_EXCL, 0o20300001),
        (O_PATH | O_TMPFILE | O_RDWR, O_PATH | O_DIRECTORY),
        (O_PATH | O_CREAT | O_DIRECTORY, O_PATH | O_DIRECTORY),
        (O_TRUNC | O_CREAT, O_LARGEFILE),
    ];
    each_combination(|fast| {
        let mut p = new_proc(fast);
        for flags in invalid {
            let mut walked = false;
            let r = p.open_with(flags, |_| {
                walked = true;
                Ok(())
            });
            assert_eq!(r, Err(Errno::EINVAL), "flags {flags:#o}");
            assert!(!walked);
        }
        assert_eq!(fds(&p), [] as [u32; 0]);
        for (flags, getfl) in valid {
            let fd = open(&mut p, flags);
            assert_eq!(p.fcntl(fd, F_GETFL, 0), Ok(getfl), "flags {flags:#o}");
            p.close(fd).unwrap();
        }
        p.setrlimit_nofile(0, 64).unwrap();
        for flags in invalid {
            assert_eq!(p.open_with(flags, |_| Ok(())), Err(Errno::EINVAL));
        }
        assert_eq!(p.open_with(O_RDWR, |_| Ok(())), Err(Errno::EMFILE));
    });
}

#[test]
fn setrlimit_nofile_errors() {
    let mut p = new_proc(FastPaths::seeds());
    let start = p.getrlimit_nofile();
    assert_eq!(start.0, 1024);
    assert!(start.1 >= start.0);

    // soft > hard: EINVAL, checked before the NR_OPEN ceiling.
    assert_eq!(p.setrlimit_nofile(20, 10), Err(Errno::EINVAL));
    assert_eq!(
        p.setrlimit_nofile(NR_OPEN + 2, NR_OPEN + 1),
        Err(Errno::EINVAL)
    );
    // hard above fs.nr_open: EPERM even with CAP_SYS_RESOURCE.
    assert_eq!(p.setrlimit_nofile(10, NR_OPEN + 1), Err(Errno::EPERM));
    assert_eq!(
        p.setrlimit_nofile(RLIM_INFINITY, RLIM_INFINITY),
        Err(Errno::EPERM)
    );
    assert_eq!(p.getrlimit_nofile(), start, "failed calls change nothing");

    assert_eq!(p.setrlimit_nofile(NR_OPEN, NR_OPEN), Ok(()));
    assert_eq!(p.getrlimit_nofile(), (NR_OPEN, NR_OPEN));
    assert_eq!(p.setrlimit_nofile(64, 4096), Ok(()));
    assert_eq!(p.getrlimit_nofile(), (64, 4096));

    // Without CAP_SYS_RESOURCE the hard limit can only go down (checked on
    // 6.18 in a container lacking the capability: EPERM).
    p.set_cap_sys_resource(false);
    assert_eq!(p.setrlimit_nofile(64, 4097), Err(Errno::EPERM));
    assert_eq!(p.getrlimit_nofile(), (64, 4096));
    assert_eq!(p.setrlimit_nofile(4096, 4096), Ok(()), "soft up to hard");
    assert_eq!(p.setrlimit_nofile(10, 100), Ok(()), "hard down");
    assert_eq!(p.setrlimit_nofile(10, 101), Err(Errno::EPERM));
    assert_eq!(p.setrlimit_nofile(101, 100), Err(Errno::EINVAL));
    assert_eq!(p.setrlimit_nofile(0, 0), Ok(()));
    assert_eq!(p.setrlimit_nofile(0, 1), Err(Errno::EPERM));
    assert_eq!(p.getrlimit_nofile(), (0, 0));
    p.set_cap_sys_resource(true);
    assert_eq!(p.setrlimit_nofile(100, 4096), Ok(()));

    // Threads share the limits; fork copies them (and the capability).
    let mut t = p.new_thread();
    t.setrlimit_nofile(5, 100).unwrap();
    assert_eq!(p.getrlimit_nofile(), (5, 100));
    let mut c = p.fork().unwrap();
    assert_eq!(c.getrlimit_nofile(), (5, 100));
    c.setrlimit_nofile(7, 50).unwrap();
    assert_eq!(p.getrlimit_nofile(), (5, 100));
    assert_eq!(t.getrlimit_nofile(), (5, 100));
    p.set_cap_sys_resource(false);
    let mut c2 = p.fork().unwrap();
    assert_eq!(c2.setrlimit_nofile(5, 101), Err(Errno::EPERM));
    assert_eq!(t.setrlimit_nofile(5, 101), Err(Errno::EPERM));
    // The child's capability is its own.
    c2.set_cap_sys_resource(true);
    assert_eq!(c2.setrlimit_nofile(5, 101), Ok(()));
    assert_eq!(p.setrlimit_nofile(5, 101), Err(Errno::EPERM));
}

// ---------------------------------------------------------------------------
// close.

#[test]
fn close_rejects_bad_fds() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let fd = open(&mut p, O_RDWR);
        for bad in BAD_FDS.into_iter().chain([1, 63, 64]) {
            assert_eq!(p.close(bad), Err(Errno::EBADF), "close({bad})");
        }
        assert_eq!(p.close(fd), Ok(()));
        assert_eq!(p.close(fd), Err(Errno::EBADF), "double close");
        assert_eq!(fds(&p), [] as [u32; 0]);
        check(&p);
    });
}

#[test]
fn calls_on_a_reserved_fd() {
    // An fd reserved by an open in progress (allocated, not yet installed),
    // seen from another thread of the process.
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR);
        let b = open(&mut p, O_RDWR);
        p.close(b).unwrap();
        let mut t = p.new_thread();
        let mut child = None;
        let fd = p
            .open_with(O_RDWR | O_CLOEXEC, |_| {
                assert_eq!(reserved(&t), [b as u32]);
                let r = b;
                assert_eq!(t.close(r), Err(Errno::EBADF));
                assert_eq!(t.dup(r), Err(Errno::EBADF));
                assert_eq!(t.fcntl(r, F_GETFD, 0), Err(Errno::EBADF));
                assert_eq!(t.fcntl(r, F_DUPFD, 0), Err(Errno::EBADF));
                assert_eq!(t.fget_raw(r).err(), Some(Errno::EBADF));
                assert_eq!(t.with_file(r, |_| ()), Err(Errno::EBADF));
                assert_eq!(t.dup2(r, r), Err(Errno::EBADF));
                assert_eq!(t.dup2(r, 5), Err(Errno::EBADF));
                assert_eq!(t.dup2(a, r), Err(Errno::EBUSY));
                assert_eq!(t.dup3(a, r, 0), Err(Errno::EBUSY));
                assert_eq!(t.dup3(a, r, O_CLOEXEC), Err(Errno::EBUSY));
                // close_range leaves it reserved (and closes the rest).
                let extra = t.dup(a).unwrap();
                assert_eq!(t.close_range(0, u32::MAX, 0), Ok(()));
                assert_eq!(fds(&t), [r as u32]);
                assert!(t.fd_table().is_reserved(r as u32));
                assert_eq!(pa.flushes(), 2, "fd {a} and {extra} were closed");
                // Reopen a so the rest of the test has it.
                assert_eq!(t.open_with(O_RDWR, |_| Ok(())), Ok(0));
                // A child forked now has the number free.
                let mut c = t.fork().unwrap();
                assert_eq!(fds(&c), [0]);
                assert_eq!(c.open_with(O_RDWR, |_| Ok(())), Ok(r));
                child = Some(c);
                check(&t);
                Ok(())
            })
            .unwrap();
        assert_eq!(fd, b, "the open installs at the reserved number");
        assert_eq!(getfd(&mut p, fd), Ok(FD_CLOEXEC));
        assert_eq!(getfd(&mut t, fd), Ok(FD_CLOEXEC));
        let mut c = child.unwrap();
        assert!(!same_file(&mut p, fd, &mut c, fd));
        assert_eq!(pa.releases(), 1);
        check(&p);
        check(&c);
    });
}

#[test]
fn close_releases_by_the_time_it_returns() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (fd, probe) = open_probe(&mut p, O_RDWR);
        assert_eq!((probe.flushes(), probe.releases()), (0, 0));
        p.close(fd).unwrap();
        assert_eq!((probe.flushes(), probe.releases()), (1, 1));
        assert!(!task_work::pending());
        let seen = probe.seen();
        assert_eq!(
            seen[0].thread,
            thread::current().id(),
            "released by the closer"
        );
        assert_eq!(seen[0].count, 0, "released at count zero");
        assert_eq!(Arc::strong_count(&probe), 1, "ops dropped with the file");

        // Two fds: each close flushes, only the last releases.
        let (fd, probe) = open_probe(&mut p, O_RDWR);
        let fd2 = p.dup(fd).unwrap();
        p.close(fd).unwrap();
        assert_eq!((probe.flushes(), probe.releases()), (1, 0));
        p.close(fd2).unwrap();
        assert_eq!((probe.flushes(), probe.releases()), (2, 1));
    });
}

#[test]
fn a_held_fileref_keeps_the_file_alive_after_close() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (fd, probe) = open_probe(&mut p, O_RDWR);
        let f = p.fget(fd).unwrap();
        assert_eq!(f.count(), 2);
        p.close(fd).unwrap();
        assert_eq!((probe.flushes(), probe.releases()), (1, 0));
        assert_eq!(f.count(), 1);
        assert_eq!(f.flags(), O_RDWR | O_LARGEFILE, "still a live file");
        assert_eq!(p.fget_raw(fd).err(), Some(Errno::EBADF));
        // Dropped outside any call: released at once.
        drop(f);
        assert_eq!(probe.releases(), 1);
        assert!(!task_work::pending());
        assert_eq!(probe.seen()[0].thread, thread::current().id());

        // The same when the process is gone.
        let (fd, probe) = open_probe(&mut p, O_RDWR);
        let f = p.fget_raw(fd).unwrap();
        drop(p);
        assert_eq!((probe.flushes(), probe.releases()), (1, 0));
        drop(f);
        assert_eq!(probe.releases(), 1);
    });
}

#[test]
fn puts_made_by_a_release_are_deferred_but_done_before_close_returns() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (outer, po) = open_probe(&mut p, O_RDWR);
        let (inner, pi) = open_probe(&mut p, O_RDWR);
        // The outer file's release drops the last reference to the inner
        // one (as a file holding another file would).
        *po.holds.lock().unwrap() = Some(p.fget_raw(inner).unwrap());
        p.close(inner).unwrap();
        assert_eq!((pi.flushes(), pi.releases()), (1, 0));
        p.close(outer).unwrap();
        assert_eq!(po.releases(), 1);
        assert_eq!(pi.releases(), 1, "the nested put ran before close returned");
        assert_eq!(
            po.seen()[0].pending_after_put,
            Some(true),
            "a put inside a release is queued, not run recursively"
        );
        assert!(!task_work::pending());
    });
}

#[test]
fn flush_errors_are_returned_by_close_only() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (fd, probe) = open_probe(&mut p, O_RDWR);
        probe.fail_flush(Errno::EIO);
        assert_eq!(p.close(fd), Err(Errno::EIO));
        // The fd is closed all the same and the file released.
        assert_eq!(getfd(&mut p, fd), Err(Errno::EBADF));
        assert_eq!(p.close(fd), Err(Errno::EBADF));
        assert_eq!((probe.flushes(), probe.releases()), (1, 1));
        assert_eq!(open(&mut p, O_RDWR), fd);
        p.close(fd).unwrap();

        // Restart codes cannot be restarted once the fd is gone: Linux's
        // close(2) reports them as EINTR. ERESTART (85) is an ordinary
        // user-visible errno and passes through.
        for (code, want) in [
            (512, Errno::EINTR), // ERESTARTSYS
            (513, Errno::EINTR), // ERESTARTNOINTR
            (514, Errno::EINTR), // ERESTARTNOHAND
            (516, Errno::EINTR), // ERESTART_RESTARTBLOCK
            (515, Errno::from_raw(515)),
            (85, Errno::ERESTART),
            (Errno::ENOSPC.raw(), Errno::ENOSPC),
        ] {
            let (fd, probe) = open_probe(&mut p, O_RDWR);
            probe.fail_flush(Errno::from_raw(code));
            assert_eq!(p.close(fd), Err(want), "flush error {code}");
            assert_eq!(probe.releases(), 1);
        }

        // Other closes ignore flush errors.
        let (a, pa) = open_probe(&mut p, O_RDWR);
        let (b, pb) = open_probe(&mut p, O_RDWR);
        pb.fail_flush(Errno::EIO);
        assert_eq!(p.dup2(a, b), Ok(b));
        assert_eq!((pb.flushes(), pb.releases()), (1, 1));
        let (c, pc) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        pc.fail_flush(Errno::EIO);
        assert_eq!(p.exec(), Ok(()));
        assert_eq!((pc.flushes(), pc.releases()), (1, 1));
        assert_eq!(getfd(&mut p, c), Err(Errno::EBADF));
        pa.fail_flush(Errno::EIO);
        assert_eq!(p.close_range(0, u32::MAX, 0), Ok(()));
        assert_eq!((pa.flushes(), pa.releases()), (2, 1));
        assert_eq!(fds(&p), [] as [u32; 0]);
    });
}

// ---------------------------------------------------------------------------
// Failed opens.

#[test]
fn a_failed_open_frees_the_fd_and_never_releases() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        for _ in 0..3 {
            open(&mut p, O_RDWR);
        }
        p.close(1).unwrap();
        let next_fd = p.fd_table().next_fd();
        for err in [Errno::ENOENT, Errno::EACCES, Errno::ENOMEM] {
            let probe = Arc::new(Probe::default());
            let ops: Arc<dyn FileOps> = probe.clone();
            let r = p.open_with(O_RDWR | O_CREAT | O_CLOEXEC, |o| {
                assert_eq!(o.file().flags(), O_RDWR | O_LARGEFILE);
                assert_eq!(o.file().count(), 1);
                o.set_ops(ops);
                Err(err)
            });
            assert_eq!(r, Err(err));
            assert_eq!((probe.flushes(), probe.releases()), (0, 0));
            assert_eq!(Arc::strong_count(&probe), 1, "the file was freed");
            assert!(!task_work::pending());
            assert_eq!(fds(&p), [0, 2]);
            assert_eq!(p.fd_table().next_fd(), next_fd);
            check(&p);
        }
        // The next open gets the same number, without the failed open's
        // close-on-exec.
        assert_eq!(open(&mut p, O_RDWR), 1);
        assert_eq!(getfd(&mut p, 1), Ok(0));
        check(&p);
    });
}

#[test]
fn the_reserved_fd_is_visible_while_the_open_runs() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let t = p.new_thread();
        let r = p.open_with(O_RDONLY, |_| {
            assert_eq!(reserved(&t), [0]);
            Err(Errno::ENOENT)
        });
        assert_eq!(r, Err(Errno::ENOENT));
        assert_eq!(reserved(&t), [] as [u32; 0]);
        assert_eq!(fds(&t), [] as [u32; 0]);
    });
}

// ---------------------------------------------------------------------------
// dup, dup2, dup3.

#[test]
fn dup_semantics_and_errors() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, probe) = open_probe(&mut p, O_RDWR | O_CLOEXEC);
        for bad in BAD_FDS.into_iter().chain([1, 64]) {
            assert_eq!(p.dup(bad), Err(Errno::EBADF), "dup({bad})");
        }
        let b = p.dup(a).unwrap();
        assert_eq!(b, 1);
        assert!(same(&mut p, a, b));
        assert_eq!(getfd(&mut p, a), Ok(FD_CLOEXEC));
        assert_eq!(getfd(&mut p, b), Ok(0), "dup never sets FD_CLOEXEC");
        p.close(a).unwrap();
        assert_eq!(p.dup(b), Ok(0), "lowest free fd");
        // EMFILE when no fd is free below the limit; the extra reference
        // taken for the new fd is dropped.
        p.setrlimit_nofile(3, 3).unwrap();
        assert_eq!(p.dup(b), Ok(2));
        let f = p.fget_raw(b).unwrap();
        let count = f.count();
        assert_eq!(p.dup(b), Err(Errno::EMFILE));
        assert_eq!(f.count(), count);
        drop(f);
        p.close_range(0, 2, 0).unwrap();
        assert_eq!((probe.flushes(), probe.releases()), (4, 1));
        check(&p);
    });
}

#[test]
fn dup2_semantics_and_errors() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, pa) = open_probe(&mut p, O_RDWR);
        let (b, pb) = open_probe(&mut p, O_RDWR);
        // Same fd: returns it when open, EBADF otherwise.
        assert_eq!(p.dup2(a, a), Ok(a));
        assert_eq!(p.dup2(5, 5), Err(Errno::EBADF));
        assert_eq!(p.dup2(-1, -1), Err(Errno::EBADF));
        assert_eq!(p.dup2(i32::MAX, i32::MAX), Err(Errno::EBADF));
        // Bad old fd: EBADF, the target untouched.
        for bad in BAD_FDS.into_iter().chain([2, 64]) {
            assert_eq!(p.dup2(bad, b), Err(Errno::EBADF), "dup2({bad}, b)");
        }
        assert!(!same(&mut p, a, b));
        assert_eq!(pb.flushes(), 0);
        // New fd negative or at/above RLIMIT_NOFILE: EBADF.
        for bad in [-1, i32::MIN, 1024, 4096, i32::MAX] {
            assert_eq!(p.dup2(a, bad), Err(Errno::EBADF), "dup2(a, {bad})");
        }
        assert_eq!(p.dup2(a, 1023), Ok(1023));
        p.close(1023).unwrap();
        assert_eq!(pa.flushes(), 1);

        // Replacing an open fd closes its file: flush, and release once no
        // reference is left; the target loses FD_CLOEXEC.
        p.fcntl(b, F_SETFD, FD_CLOEXEC as u64).unwrap();
        assert_eq!(p.dup2(a, b), Ok(b));
        assert_eq!((pb.flushes(), pb.releases()), (1, 1));
        assert_eq!(pa.flushes(), 1);
        assert_eq!(getfd(&mut p, b), Ok(0));
        assert!(same(&mut p, a, b));
        assert_eq!(fds(&p), [0, 1]);

        // A replaced file still referenced elsewhere is flushed, not released.
        let (c, pc) = open_probe(&mut p, O_RDWR);
        let c2 = p.dup(c).unwrap();
        assert_eq!(p.dup2(a, c), Ok(c));
        assert_eq!((pc.flushes(), pc.releases()), (1, 0));
        p.close(c2).unwrap();
        assert_eq!((pc.flushes(), pc.releases()), (2, 1));

        // dup2 onto an fd holding the same file: flushes it, keeps it.
        let before = pa.flushes();
        assert_eq!(p.dup2(a, b), Ok(b));
        assert_eq!(pa.flushes(), before + 1);
        assert_eq!(pa.releases(), 0);
        assert_eq!(getfd(&mut p, b), Ok(0));

        // Onto a free fd.
        p.close(b).unwrap();
        assert_eq!(p.dup2(a, 7), Ok(7));
        assert_eq!(fds(&p), [0, 2, 7]);
        assert_eq!(open(&mut p, O_RDWR), 1, "dup2 does not consume low fds");
        check(&p);
    });
}

#[test]
fn dup3_semantics_and_errors() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let (a, _pa) = open_probe(&mut p, O_RDWR);
        let (b, pb) = open_probe(&mut p, O_RDWR);
        // Flags other than O_CLOEXEC, and old == new, are EINVAL, before
        // any fd check (checked on 6.18).
        assert_eq!(p.dup3(a, a, 0), Err(Errno::EINVAL));
        assert_eq!(p.dup3(a, a, O_CLOEXEC), Err(Errno::EINVAL));
        assert_eq!(p.dup3(50, 50, 0), Err(Errno::EINVAL));
        assert_eq!(p.dup3(-1, -1, 0), Err(Errno::EINVAL));
        for flags in [
            O_NONBLOCK,
            O_CLOEXEC | O_NONBLOCK,
            O_APPEND,
            1,
            -1,
            FD_CLOEXEC,
        ] {
            assert_eq!(p.dup3(a, b, flags), Err(Errno::EINVAL), "flags {flags:#o}");
            assert_eq!(p.dup3(50, 60, flags), Err(Errno::EINVAL));
        }
        assert_eq!(pb.flushes(), 0);
        // Bad fds.
        assert_eq!(p.dup3(9, b, 0), Err(Errno::EBADF));
        assert_eq!(p.dup3(-1, b, O_CLOEXEC), Err(Errno::EBADF));
        assert_eq!(p.dup3(a, 1024, 0), Err(Errno::EBADF));
        assert_eq!(p.dup3(a, -1, 0), Err(Errno::EBADF));
        // O_CLOEXEC sets FD_CLOEXEC on the new fd, 0 clears it.
        assert_eq!(p.dup3(a, b, O_CLOEXEC), Ok(b));
        assert_eq!((pb.flushes(), pb.releases()), (1, 1));
        assert_eq!(getfd(&mut p, b), Ok(FD_CLOEXEC));
        assert_eq!(getfd(&mut p, a), Ok(0));
        assert_eq!(p.dup3(a, b, 0), Ok(b));
        assert_eq!(getfd(&mut p, b), Ok(0));
        assert_eq!(p.dup3(a, 9, O_CLOEXEC), Ok(9));
        assert_eq!(getfd(&mut p, 9), Ok(FD_CLOEXEC));
        check(&p);
    });
}

// ---------------------------------------------------------------------------
// fcntl.

#[test]
fn fcntl_dupfd() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR | O_CLOEXEC);
        open(&mut p, O_RDWR);
        open(&mut p, O_RDWR);
        p.close(1).unwrap();
        // Lowest free fd at or above the argument.
        assert_eq!(p.fcntl(a, F_DUPFD, 0), Ok(1));
        assert_eq!(p.fcntl(a, F_DUPFD, 1), Ok(3));
        assert_eq!(p.fcntl(a, F_DUPFD, 10), Ok(10));
        assert_eq!(p.fcntl(a, F_DUPFD, 10), Ok(11));
        assert_eq!(p.fcntl(a, F_DUPFD_CLOEXEC, 5), Ok(5));
        assert_eq!(getfd(&mut p, 5), Ok(FD_CLOEXEC));
        for fd in [1, 3, 10, 11] {
            assert_eq!(getfd(&mut p, fd), Ok(0), "F_DUPFD clears FD_CLOEXEC");
            assert!(same(&mut p, a, fd));
        }
        assert_eq!(open(&mut p, O_RDWR), 4, "opens still take the lowest");
        // At the limit: EINVAL for the argument, EMFILE when no fd is free
        // in [arg, limit).
        assert_eq!(p.fcntl(a, F_DUPFD, 1023), Ok(1023));
        assert_eq!(p.fd_table().max_fds(), 1024);
        assert_eq!(p.fcntl(a, F_DUPFD, 1023), Err(Errno::EMFILE));
        assert_eq!(p.fcntl(a, F_DUPFD_CLOEXEC, 1023), Err(Errno::EMFILE));
        assert_eq!(p.fcntl(a, F_DUPFD, 1024), Err(Errno::EINVAL));
        assert_eq!(p.fcntl(a, F_DUPFD_CLOEXEC, 1024), Err(Errno::EINVAL));
        assert_eq!(p.fcntl(a, F_DUPFD, 1 << 31), Err(Errno::EINVAL));
        assert_eq!(p.fcntl(a, F_DUPFD, u64::MAX), Err(Errno::EINVAL));
        // Linux reads the argument as an int (checked on 6.18: arg 2^32 + 3
        // duplicates to the lowest fd at or above 3).
        assert_eq!(p.fcntl(a, F_DUPFD, (1 << 32) + 3), Ok(6));
        assert_eq!(p.fcntl(a, F_DUPFD_CLOEXEC, 1 << 32), Ok(7));
        assert_eq!(getfd(&mut p, 7), Ok(FD_CLOEXEC));
        assert_eq!(p.fcntl(a, F_DUPFD, (1 << 32) + 1024), Err(Errno::EINVAL));
        // A bad fd is EBADF whatever the argument.
        for bad in BAD_FDS.into_iter().chain([8, 64]) {
            assert_eq!(p.fcntl(bad, F_DUPFD, 0), Err(Errno::EBADF));
            assert_eq!(p.fcntl(bad, F_DUPFD_CLOEXEC, 2000), Err(Errno::EBADF));
        }
        check(&p);
    });
}

#[test]
fn fcntl_getfd_setfd() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR | O_CLOEXEC);
        let b = p.dup(a).unwrap();
        assert_eq!(getfd(&mut p, a), Ok(FD_CLOEXEC));
        assert_eq!(p.fcntl(a, F_SETFD, 0), Ok(0));
        assert_eq!(getfd(&mut p, a), Ok(0));
        // Only bit 0 of the (int) argument counts.
        for (arg, want) in [
            (1, 1),
            (3, 1),
            (2, 0),
            (u64::MAX, 1),
            (1 << 32, 0),
            ((1 << 32) | 1, 1),
        ] {
            assert_eq!(p.fcntl(a, F_SETFD, arg), Ok(0));
            assert_eq!(getfd(&mut p, a), Ok(want), "F_SETFD {arg:#x}");
        }
        // Close-on-exec belongs to the fd, not the file.
        assert_eq!(getfd(&mut p, b), Ok(0));
        for bad in BAD_FDS.into_iter().chain([5]) {
            assert_eq!(p.fcntl(bad, F_GETFD, 0), Err(Errno::EBADF));
            assert_eq!(p.fcntl(bad, F_SETFD, 1), Err(Errno::EBADF));
        }
    });
}

/// open(2) flags and the F_GETFL result Linux 6.18 gives for them
/// (measured on tmpfs).
const GETFL_CASES: [(i32, i32); 12] = [
    (O_RDONLY, O_LARGEFILE),
    (O_WRONLY, O_WRONLY | O_LARGEFILE),
    (O_RDWR, O_RDWR | O_LARGEFILE),
    (
        O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_NOCTTY | O_CLOEXEC | O_EXCL,
        0o102001,
    ),
    (O_RDWR | O_ASYNC, 0o120002),
    (O_RDWR | O_SYNC, 0o4110002),
    (
        O_RDWR | O_NONBLOCK | O_DIRECT | O_NOATIME | O_DSYNC,
        0o1154002,
    ),
    (O_ACCMODE, 0o100003),
    (O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0o700000),
    (O_TMPFILE | O_RDWR, 0o20300002),
    // Bits outside VALID_OPEN_FLAGS are dropped by open(2).
    (O_RDWR | 0xff80003c_u32 as i32, 0o100002),
    (O_RDONLY | i32::MIN, O_LARGEFILE),
];

/// O_PATH opens: only O_PATH, O_DIRECTORY and O_NOFOLLOW survive.
const GETFL_PATH_CASES: [(i32, i32); 4] = [
    (O_PATH, O_PATH),
    (
        O_PATH | O_NOFOLLOW | O_RDWR | O_APPEND | O_CLOEXEC,
        0o10400000,
    ),
    (O_PATH | O_DIRECTORY | O_NOFOLLOW, 0o10600000),
    (O_PATH | 0xff80003c_u32 as i32, O_PATH),
];

#[test]
fn fcntl_getfl_reports_linux_f_flags() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        for (flags, want) in GETFL_CASES.into_iter().chain(GETFL_PATH_CASES) {
            let mut seen = None;
            let fd = p
                .open_with(flags, |o| {
                    seen = Some(o.file().flags());
                    Ok(())
                })
                .unwrap();
            assert_eq!(getfl(&mut p, fd), Ok(want), "open flags {flags:#o}");
            assert_eq!(seen, Some(want), "f_flags are set before the fs open");
            let cloexec = if flags & O_CLOEXEC != 0 {
                FD_CLOEXEC
            } else {
                0
            };
            assert_eq!(getfd(&mut p, fd), Ok(cloexec), "open flags {flags:#o}");
            p.close(fd).unwrap();
        }
        for bad in BAD_FDS {
            assert_eq!(getfl(&mut p, bad), Err(Errno::EBADF));
        }
    });
}

#[test]
fn fcntl_setfl_changes_only_setfl_mask() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR);
        let b = p.dup(a).unwrap();
        let other = open(&mut p, O_RDWR);
        // Everything but the four changeable bits is ignored: access mode,
        // O_ASYNC (set only through a fasync operation), O_SYNC, O_CLOEXEC...
        assert_eq!(p.fcntl(a, F_SETFL, 0xffff_ffff), Ok(0));
        let all = O_RDWR | O_LARGEFILE | O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME;
        assert_eq!(getfl(&mut p, a), Ok(all));
        assert_eq!(getfl(&mut p, b), Ok(all), "status flags belong to the file");
        assert_eq!(getfl(&mut p, other), Ok(O_RDWR | O_LARGEFILE));
        assert_eq!(p.fcntl(b, F_SETFL, 0), Ok(0));
        assert_eq!(getfl(&mut p, a), Ok(O_RDWR | O_LARGEFILE));
        assert_eq!(p.fcntl(a, F_SETFL, O_ASYNC as u64), Ok(0));
        assert_eq!(getfl(&mut p, a), Ok(O_RDWR | O_LARGEFILE));
        assert_eq!(p.fcntl(a, F_SETFL, O_NDELAY as u64), Ok(0));
        assert_eq!(getfl(&mut p, a), Ok(O_RDWR | O_LARGEFILE | O_NONBLOCK));
        // The argument is an int (checked on 6.18).
        assert_eq!(p.fcntl(a, F_SETFL, (1 << 32) | O_APPEND as u64), Ok(0));
        assert_eq!(getfl(&mut p, a), Ok(O_RDWR | O_LARGEFILE | O_APPEND));
        // A file opened with O_ASYNC keeps it: F_SETFL cannot clear it
        // (checked on 6.18, tmpfs).
        let c = open(&mut p, O_WRONLY | O_ASYNC);
        assert_eq!(p.fcntl(c, F_SETFL, 0), Ok(0));
        assert_eq!(getfl(&mut p, c), Ok(O_WRONLY | O_ASYNC | O_LARGEFILE));
        for bad in BAD_FDS {
            assert_eq!(p.fcntl(bad, F_SETFL, 0), Err(Errno::EBADF));
        }
    });
}

#[test]
fn fcntl_unknown_commands() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDWR);
        let path = open(&mut p, O_PATH);
        for cmd in [9999, -1, i32::MAX, 6000] {
            assert_eq!(p.fcntl(a, cmd, 0), Err(Errno::EINVAL), "cmd {cmd}");
            // The fd is looked up first.
            assert_eq!(p.fcntl(7, cmd, 0), Err(Errno::EBADF));
            assert_eq!(p.fcntl(-1, cmd, 0), Err(Errno::EBADF));
            // O_PATH fds refuse commands outside the few allowed on them
            // with EBADF (checked on 6.18).
            assert_eq!(p.fcntl(path, cmd, 0), Err(Errno::EBADF));
        }
    });
}

#[test]
fn fcntl_dupfd_query() {
    // Values checked on Linux 6.18: 1 for the same open file (dup or the fd
    // itself), 0 for another open of the same thing, EBADF for a bad
    // argument fd; allowed on O_PATH fds.
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_RDONLY);
        let b = p.dup(a).unwrap();
        let c = open(&mut p, O_RDONLY);
        let path = open(&mut p, O_PATH);
        let path2 = p.dup(path).unwrap();
        assert_eq!(p.fcntl(a, F_DUPFD_QUERY, b as u64), Ok(1));
        assert_eq!(p.fcntl(a, F_DUPFD_QUERY, a as u64), Ok(1));
        assert_eq!(p.fcntl(a, F_DUPFD_QUERY, c as u64), Ok(0));
        assert_eq!(p.fcntl(path, F_DUPFD_QUERY, path2 as u64), Ok(1));
        assert_eq!(p.fcntl(a, F_DUPFD_QUERY, path as u64), Ok(0));
        assert_eq!(p.fcntl(a, F_DUPFD_QUERY, 999), Err(Errno::EBADF));
        assert_eq!(p.fcntl(a, F_DUPFD_QUERY, -1i64 as u64), Err(Errno::EBADF));
        assert_eq!(p.fcntl(999, F_DUPFD_QUERY, a as u64), Err(Errno::EBADF));
        check(&p);
    });
}

#[test]
fn o_path_fds() {
    each_combination(|fast| {
        let mut p = new_proc(fast);
        let a = open(&mut p, O_PATH | O_CLOEXEC);
        assert_eq!(p.fget(a).err(), Some(Errno::EBADF));
        assert!(p.fget_raw(a).is_ok());
        assert_eq!(p.with_file(a, |_| ()), Err(Errno::EBADF));
        // fcntl: F_SETFL is refused; the other five work.
        assert_eq!(p.fcntl(a, F_SETFL, O_APPEND as u64), Err(Errno::EBADF));
        assert_eq!(getfl(&mut p, a), Ok(O_PATH));
        assert_eq!(getfd(&mut p, a), Ok(FD_CLOEXEC));
        assert_eq!(p.fcntl(a, F_SETFD, 0), Ok(0));
        assert_eq!(getfd(&mut p, a), Ok(0));
        assert_eq!(p.fcntl(a, F_DUPFD, 10), Ok(10));
        assert_eq!(p.fcntl(a, F_DUPFD_CLOEXEC, 10), Ok(11));
        assert_eq!(getfd(&mut p, 11), Ok(FD_CLOEXEC));
        // dup, dup2, dup3 and close work on O_PATH fds.
        assert_eq!(p.dup(a), Ok(1));
        assert_eq!(p.dup2(a, a), Ok(a));
        assert_eq!(p.dup2(a, 5), Ok(5));
        assert_eq!(p.dup3(a, 6, O_CLOEXEC), Ok(6));
        assert_eq!(getfl(&mut p, 6), Ok(O_PATH));
        assert_eq!(p.fget(6).err(), Some(Errno::EBADF));
        for fd in [a, 1, 5, 6, 10, 11] {
            assert_eq!(p.close(fd), Ok(()));
        }
        assert_eq!(fds(&p), [] as [u32; 0]);
        check(&p);
    });
}
