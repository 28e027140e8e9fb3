//! Tests of [`FdTable`] used directly: allocation (lowest free fd, the
//! `next_fd` hint, growth, `EMFILE`), reservations, install, lookup, close,
//! dup/dup2/dup3/`F_DUPFD`, close-on-exec, close_range, the exec sweep,
//! copies and users, each with Linux's `fs/file.c` semantics.
//!
//! Tests run under every [`FastPaths`] combination unless they are about
//! memory size; the switches must not change any result.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use support::vfs::each_combination;
use uvfs::file_table::FMODE_PATH;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, FdTable, File, FileOps, FileRef, Process, ReservedFd, Vfs};

/// Counts the owner's flush and release calls.
#[derive(Default)]
struct Probe {
    flushes: AtomicUsize,
    releases: AtomicUsize,
}

impl Probe {
    fn counts(&self) -> (usize, usize) {
        (self.flushes.load(SeqCst), self.releases.load(SeqCst))
    }
}

impl FileOps for Probe {
    fn flush(&self, _file: &File) -> Result<(), Errno> {
        self.flushes.fetch_add(1, SeqCst);
        Ok(())
    }
    fn release(&self, file: &File) {
        assert_eq!(file.count(), 0, "release runs at count zero");
        self.releases.fetch_add(1, SeqCst);
    }
}

/// A VFS, a table on it, and a way to make files for the table.
struct Fixture {
    vfs: Arc<Vfs>,
    table: FdTable,
}

impl Fixture {
    fn new(fast: FastPaths) -> Fixture {
        let vfs = Vfs::new(fast);
        let table = FdTable::new(vfs.fastpaths()).unwrap();
        Fixture { vfs, table }
    }

    /// A fresh opened file (with `flags`), whose only reference is the one
    /// returned, and its probe with counters at zero.
    fn file(&self, flags: i32) -> (FileRef, Arc<Probe>) {
        let probe = Arc::new(Probe::default());
        let ops: Arc<dyn FileOps> = probe.clone();
        let mut p = Process::new(&self.vfs).unwrap();
        let fd = p
            .open_with(flags, |o| {
                o.set_ops(ops);
                Ok(())
            })
            .unwrap();
        let f = p.fget_raw(fd).unwrap();
        drop(p);
        assert_eq!(f.count(), 1);
        probe.flushes.store(0, SeqCst);
        (f, probe)
    }

    /// Allocates the lowest free fd (limit 1024) and installs a new file.
    fn install(&self, cloexec: bool) -> (u32, Arc<Probe>) {
        let (f, probe) = self.file(O_RDWR);
        let fd = self
            .table
            .alloc_fd(0, 1024, cloexec)
            .unwrap()
            .install(f)
            .unwrap();
        (fd, probe)
    }

    fn check(&self) {
        if let Err(e) = self.table.check_invariants() {
            panic!("fd table invariant broken: {e}");
        }
    }
}

/// Asserts Linux's `next_fd` hint. With `fd_bits_lockfree` the hint covers
/// only fds from 64 on (fds 0..63 are searched from their word every time,
/// and their claims and frees leave it alone), so it is not Linux's value;
/// what holds then is that no fd in `64..next_fd` is free, which
/// `check_invariants` checks.
#[track_caller]
fn assert_hint(fast: FastPaths, t: &FdTable, linux: u32) {
    if fast.fd_bits_lockfree {
        if let Err(e) = t.check_invariants() {
            panic!("`{fast}`: {e}");
        }
    } else {
        assert_eq!(t.next_fd(), linux, "`{fast}`");
    }
}

fn same(t: &FdTable, a: i32, b: i32) -> bool {
    FileRef::ptr_eq(&t.get(a).unwrap(), &t.get(b).unwrap())
}

const BAD_FDS: [i32; 4] = [-1, i32::MIN, i32::MAX, 1 << 20];

#[test]
fn a_new_table_is_empty() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        assert_eq!(t.max_fds(), 64, "NR_OPEN_DEFAULT");
        assert_eq!(t.open_fds(), [] as [u32; 0]);
        assert_hint(fast, t, 0);
        assert_eq!(t.users(), 1);
        for fd in BAD_FDS.into_iter().chain([0, 63]) {
            assert!(t.get(fd).is_none());
            assert!(!t.get_cloexec(fd));
        }
        x.check();
    });
}

#[test]
fn alloc_takes_the_lowest_free_fd_at_or_above_start() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        for want in 0..6 {
            assert_eq!(x.install(false).0, want);
        }
        for fd in [1, 4] {
            drop(t.close(fd).unwrap());
        }
        assert_eq!(t.open_fds(), [0, 2, 3, 5]);
        x.check();
        // Reserved fds count as taken.
        let r1 = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r1.fd(), 1);
        let r4 = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r4.fd(), 4);
        let r6 = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r6.fd(), 6);
        x.check();
        // With a start: the lowest free fd at or above it.
        let r10 = t.alloc_fd(10, 1024, false).unwrap();
        assert_eq!(r10.fd(), 10);
        let r11 = t.alloc_fd(10, 1024, false).unwrap();
        assert_eq!(r11.fd(), 11);
        let r7 = t.alloc_fd(2, 1024, false).unwrap();
        assert_eq!(r7.fd(), 7);
        drop(r4);
        let r4 = t.alloc_fd(3, 1024, false).unwrap();
        assert_eq!(r4.fd(), 4);
        assert_eq!(t.open_fds(), [0, 1, 2, 3, 4, 5, 6, 7, 10, 11]);
        x.check();
        drop((r1, r4, r6, r7, r10, r11));
        assert_eq!(t.open_fds(), [0, 2, 3, 5]);
        x.check();
    });
}

#[test]
fn next_fd_hint_follows_linux() {
    // Linux's rules: alloc_fd starts its search at max(start, next_fd) and,
    // when start <= next_fd, sets next_fd to the fd it took plus one;
    // freeing an fd below next_fd lowers next_fd to it; dup2 does not
    // touch it.
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        for _ in 0..5 {
            x.install(false);
        }
        assert_hint(fast, t, 5);
        drop(t.close(1).unwrap());
        assert_hint(fast, t, 1);
        drop(t.close(3).unwrap());
        assert_hint(fast, t, 1); // freeing above the hint leaves it
        assert_eq!(x.install(false).0, 1);
        assert_hint(fast, t, 2);
        // The hint is a lower bound, not a free fd: 2 is open.
        assert_eq!(x.install(false).0, 3);
        assert_hint(fast, t, 4);
        assert_eq!(x.install(false).0, 5);
        assert_hint(fast, t, 6);
        // start > next_fd: the hint is kept.
        let r10 = t.alloc_fd(10, 1024, false).unwrap();
        assert_hint(fast, t, 6);
        // start == next_fd: updated.
        let r6 = t.alloc_fd(6, 1024, false).unwrap();
        assert_eq!(r6.fd(), 6);
        assert_hint(fast, t, 7);
        // start < next_fd: the search starts at next_fd.
        let r7 = t.alloc_fd(3, 1024, false).unwrap();
        assert_eq!(r7.fd(), 7);
        assert_hint(fast, t, 8);
        // dup2 onto next_fd leaves the hint; allocation skips the fd.
        assert_eq!(t.dup2(0, 8, 1024), Ok(8));
        assert_hint(fast, t, 8);
        let r9 = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r9.fd(), 9);
        assert_hint(fast, t, 10);
        let r11 = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r11.fd(), 11);
        assert_hint(fast, t, 12);
        // EMFILE leaves it.
        assert_eq!(t.alloc_fd(0, 12, false).err(), Some(Errno::EMFILE));
        assert_hint(fast, t, 12);
        // Dropping a reservation frees its fd like a close.
        drop(r7);
        assert_hint(fast, t, 7);
        drop(r10);
        assert_hint(fast, t, 7);
        x.check();
        drop((r6, r9, r11));
        assert_hint(fast, t, 6);
        x.check();
    });
}

#[test]
fn the_table_grows_by_powers_of_two() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let mut held: Vec<ReservedFd<'_>> = Vec::new();
        for want in 0..1100u32 {
            let r = t.alloc_fd(0, 4096, false).unwrap();
            assert_eq!(r.fd(), want);
            held.push(r);
            // Linux's alloc_fdtable: a power of two, at least 64.
            let expect = (want as usize + 1).next_power_of_two().max(64);
            assert_eq!(t.max_fds(), expect, "after fd {want}");
            if want % 64 == 63 || want % 64 == 0 {
                x.check();
            }
        }
        assert_eq!(t.max_fds(), 2048);
        // Free a few across word and chunk boundaries: refilled lowest first.
        for fd in [1000, 64, 63, 128, 127, 512] {
            held.retain(|r| r.fd() != fd);
        }
        x.check();
        for want in [63, 64, 127, 128, 512, 1000, 1100] {
            let r = t.alloc_fd(0, 4096, false).unwrap();
            assert_eq!(r.fd(), want);
            held.push(r);
        }
        drop(held);
        assert_eq!(t.open_fds(), [] as [u32; 0]);
        assert_eq!(t.max_fds(), 2048, "tables never shrink");
        assert_hint(fast, t, 0);
        x.check();

        // A start beyond the table grows it straight to the right size
        // (Linux: FDSize 1024 after dup2 to 1000, 2048 after 1024).
        let y = Fixture::new(fast);
        let r = y.table.alloc_fd(1000, 4096, false).unwrap();
        assert_eq!((r.fd(), y.table.max_fds()), (1000, 1024));
        let r2 = y.table.alloc_fd(1024, 4096, false).unwrap();
        assert_eq!((r2.fd(), y.table.max_fds()), (1024, 2048));
        let r3 = y.table.alloc_fd(0, 4096, false).unwrap();
        assert_eq!(r3.fd(), 0);
        drop((r, r2, r3));
        y.check();
    });
}

#[test]
fn alloc_fails_with_emfile_at_the_limit() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let a = t.alloc_fd(0, 3, false).unwrap();
        let b = t.alloc_fd(0, 3, true).unwrap();
        let c = t.alloc_fd(0, 3, false).unwrap();
        assert_eq!(t.alloc_fd(0, 3, false).err(), Some(Errno::EMFILE));
        assert_eq!(t.alloc_fd(2, 3, false).err(), Some(Errno::EMFILE));
        assert_eq!(t.alloc_fd(5, 5, false).err(), Some(Errno::EMFILE));
        assert_eq!(t.alloc_fd(0, 0, false).err(), Some(Errno::EMFILE));
        assert_eq!(t.alloc_fd(3, 4, false).map(|r| r.fd()), Ok(3));
        assert_eq!(t.open_fds(), [0, 1, 2]);
        assert_hint(fast, t, 3);
        assert!(t.get_cloexec(1));
        // The whole first word full, limit above it: grows.
        let mut more: Vec<_> = (3..64).map(|_| t.alloc_fd(0, 64, false).unwrap()).collect();
        assert_eq!(t.alloc_fd(0, 64, false).err(), Some(Errno::EMFILE));
        assert_eq!(t.max_fds(), 64, "a failed allocation does not grow");
        more.push(t.alloc_fd(0, 65, false).unwrap());
        assert_eq!(more.last().unwrap().fd(), 64);
        assert_eq!(t.max_fds(), 128);
        x.check();
        drop((a, b, c, more));
        x.check();
    });
}

#[test]
fn alloc_fails_with_emfile_at_nr_open() {
    // fs.nr_open (1 << 20) caps the table whatever the caller's limit.
    let x = Fixture::new(FastPaths::seeds());
    let t = &x.table;
    let top = (NR_OPEN - 1) as u32;
    let r = t.alloc_fd(top, u64::MAX, false).unwrap();
    assert_eq!(r.fd(), top);
    assert_eq!(t.max_fds(), NR_OPEN as usize);
    assert_eq!(t.alloc_fd(top, u64::MAX, false).err(), Some(Errno::EMFILE));
    assert_eq!(
        t.alloc_fd(top + 1, u64::MAX, false).err(),
        Some(Errno::EMFILE)
    );
    assert_eq!(
        t.alloc_fd(u32::MAX, u64::MAX, false).err(),
        Some(Errno::EMFILE)
    );
    // dup2 past it: expand_files' EMFILE is reported as EBADF.
    let (f, _probe) = x.file(O_RDWR);
    t.alloc_fd(0, 64, false).unwrap().install(f).unwrap();
    assert_eq!(t.dup2(0, NR_OPEN as i32, u64::MAX), Err(Errno::EBADF));
    assert_eq!(t.dup2(0, -1, u64::MAX), Err(Errno::EBADF));
    assert_eq!(t.dup3(0, i32::MAX, O_CLOEXEC, u64::MAX), Err(Errno::EBADF));
    assert_eq!(t.open_fds(), [0, top]);
    drop(r);
    x.check();
}

#[test]
fn a_reserved_fd_is_taken_but_has_no_file() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, pa) = x.install(false);
        let r = t.alloc_fd(0, 1024, true).unwrap();
        let fd = r.fd();
        assert_eq!(fd, 1);
        assert!(t.is_reserved(fd));
        assert!(!t.is_reserved(a));
        assert!(!t.is_reserved(5), "a free fd is not reserved");
        assert_eq!(t.open_fds(), [0, 1]);
        let ifd = fd as i32;
        assert!(t.get(ifd).is_none());
        assert!(t.get_cloexec(ifd));
        assert_eq!(t.close(ifd).err(), Some(Errno::EBADF));
        assert_eq!(t.dup(ifd, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup2(ifd, ifd, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup2(ifd, 5, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup2(a as i32, ifd, 1024), Err(Errno::EBUSY));
        assert_eq!(t.dup3(a as i32, ifd, O_CLOEXEC, 1024), Err(Errno::EBUSY));
        t.close_range(0, u32::MAX);
        assert_eq!(t.open_fds(), [fd], "close_range leaves reserved fds");
        assert_eq!(pa.counts(), (1, 1));
        // Install publishes the file at the reserved number.
        let (f, pf) = x.file(O_WRONLY);
        let ptr = f.as_ptr();
        assert_eq!(r.install(f), Ok(fd));
        assert!(!t.is_reserved(fd));
        assert_eq!(t.get(ifd).unwrap().as_ptr(), ptr);
        assert!(t.get_cloexec(ifd));
        assert_hint(fast, t, 0);
        x.check();
        drop(t.close(ifd).unwrap());
        assert_eq!(
            pf.counts(),
            (0, 1),
            "FdTable::close leaves flush to the caller"
        );

        // Dropping a reservation frees the number.
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.fd(), 0);
        drop(r);
        assert_eq!(t.open_fds(), [] as [u32; 0]);
        assert_eq!(t.alloc_fd(0, 1024, false).unwrap().fd(), 0);
        x.check();
    });
}

#[test]
fn install_refuses_a_file_of_another_memory_mode() {
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let x = Fixture::new(fast);
        let other = Fixture::new(fast.with("typesafe_files", !fast.typesafe_files));
        let (f, probe) = other.file(O_RDWR);
        let keep = f.clone();
        assert_eq!(keep.count(), 2);
        let r = x.table.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.install(f), Err(Errno::EINVAL));
        assert_eq!(x.table.open_fds(), [] as [u32; 0], "the fd is released");
        assert_eq!(keep.count(), 1, "the file is put");
        drop(keep);
        assert_eq!(probe.counts(), (0, 1));
        x.check();
    }
}

#[test]
fn get_and_get_mask() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, _) = x.install(false);
        let (f, _) = x.file(O_PATH);
        let path = t.alloc_fd(0, 1024, false).unwrap().install(f).unwrap() as i32;
        let got = t.get(a as i32).unwrap();
        assert_eq!(got.count(), 2, "a counted reference");
        assert!(t.get_mask(a as i32, FMODE_PATH).is_some());
        assert!(t.get(path).is_some());
        assert!(
            t.get_mask(path, FMODE_PATH).is_none(),
            "fget refuses O_PATH"
        );
        for bad in BAD_FDS.into_iter().chain([2, 63, 64]) {
            assert!(t.get(bad).is_none(), "fd {bad}");
            assert!(t.get_mask(bad, 0).is_none());
        }
        drop(got);
        // SAFETY: this thread is the table's only user and closes nothing
        // while the borrows live.
        unsafe {
            let b = t.lookup_borrowed(a as i32).unwrap();
            assert_eq!(b.count(), 1, "no reference taken");
            assert!(t.lookup_borrowed(2).is_none());
            assert!(t.lookup_borrowed(-1).is_none());
            assert!(t.fdget(path, FMODE_PATH).is_none());
            assert!(t.fdget(path, 0).is_some());
            assert_eq!(t.fdget(a as i32, FMODE_PATH).unwrap().count(), 1);
        }
        // Shared: fdget takes a reference.
        t.attach();
        // SAFETY: as above; the second user is this test too.
        unsafe {
            assert_eq!(t.fdget(a as i32, 0).unwrap().count(), 2);
        }
        // SAFETY: gives back the user this test added above.
        unsafe { t.detach() };
    });
}

#[test]
fn close_hands_back_the_file_and_frees_the_fd() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, pa) = x.install(true);
        for bad in BAD_FDS.into_iter().chain([1, 63, 64, 1000]) {
            assert_eq!(t.close(bad).err(), Some(Errno::EBADF), "close({bad})");
        }
        let ptr = t.get(a as i32).unwrap().as_ptr();
        let f = t.close(a as i32).unwrap();
        assert_eq!(f.as_ptr(), ptr);
        assert_eq!(f.count(), 1, "the table's reference moved to the caller");
        assert_eq!(t.close(a as i32).err(), Some(Errno::EBADF));
        assert!(t.get(a as i32).is_none());
        assert_eq!(t.open_fds(), [] as [u32; 0]);
        assert_eq!(pa.counts(), (0, 0));
        drop(f);
        assert_eq!(pa.counts(), (0, 1));
        // The number comes back without its close-on-exec flag.
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.fd(), a);
        assert!(!t.get_cloexec(a as i32));
        drop(r);
        x.check();
    });
}

#[test]
fn dup_of_the_table() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, pa) = x.install(true);
        for bad in BAD_FDS.into_iter().chain([1, 64]) {
            assert_eq!(t.dup(bad, 1024), Err(Errno::EBADF));
        }
        assert_eq!(t.dup(a as i32, 1024), Ok(1));
        assert!(same(t, 0, 1));
        assert!(!t.get_cloexec(1));
        // A close-on-exec bit left on a free fd by CLOSE_RANGE_CLOEXEC is
        // not inherited by the dup that takes it.
        t.set_cloexec_range(0, 10);
        assert_eq!(t.dup(a as i32, 1024), Ok(2));
        assert!(!t.get_cloexec(2));
        let count = t.get(0).unwrap().count();
        assert_eq!(t.dup(a as i32, 3), Err(Errno::EMFILE));
        assert_eq!(
            t.get(0).unwrap().count(),
            count,
            "the failed dup's reference is put"
        );
        assert_eq!(t.open_fds(), [0, 1, 2]);
        t.close_range(0, 10);
        assert_eq!(pa.counts(), (3, 1));
        x.check();
    });
}

#[test]
fn dup2_and_dup3_of_the_table() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, pa) = x.install(false);
        let (b, pb) = x.install(true);
        let (a, b) = (a as i32, b as i32);
        assert_eq!(t.dup2(a, a, 1024), Ok(a as u32));
        assert_eq!(t.dup2(9, 9, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup2(-1, -1, 1024), Err(Errno::EBADF));
        for bad in BAD_FDS.into_iter().chain([2, 64]) {
            assert_eq!(t.dup2(bad, b, 1024), Err(Errno::EBADF));
        }
        assert_eq!(t.dup2(a, 1024, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup2(a, -1, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup2(a, 10, 10), Err(Errno::EBADF));
        assert_eq!(pb.counts(), (0, 0));
        assert!(t.get_cloexec(b));
        // Replace: the old file is flushed and released (no other
        // reference), the target loses close-on-exec.
        assert_eq!(t.dup2(a, b, 1024), Ok(b as u32));
        assert_eq!(pb.counts(), (1, 1));
        assert!(!t.get_cloexec(b));
        assert!(same(t, a, b));
        // Onto a free fd past the table.
        assert_eq!(t.dup2(a, 300, 1024), Ok(300));
        assert_eq!(t.max_fds(), 512);
        assert_eq!(t.open_fds(), [0, 1, 300]);
        // dup3.
        assert_eq!(t.dup3(a, a, 0, 1024), Err(Errno::EINVAL));
        assert_eq!(t.dup3(9, 9, O_CLOEXEC, 1024), Err(Errno::EINVAL));
        assert_eq!(t.dup3(a, b, O_NONBLOCK, 1024), Err(Errno::EINVAL));
        assert_eq!(
            t.dup3(9, 10, O_CLOEXEC | O_APPEND, 1024),
            Err(Errno::EINVAL)
        );
        assert_eq!(t.dup3(9, b, O_CLOEXEC, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup3(a, 1024, O_CLOEXEC, 1024), Err(Errno::EBADF));
        assert_eq!(t.dup3(a, 5, O_CLOEXEC, 1024), Ok(5));
        assert!(t.get_cloexec(5));
        assert_eq!(t.dup3(a, 5, 0, 1024), Ok(5));
        assert!(!t.get_cloexec(5));
        assert_eq!(pa.counts(), (1, 0), "replacing fd 5 flushed a's file once");
        t.close_range(0, u32::MAX);
        assert_eq!(pa.counts(), (5, 1));
        x.check();
    });
}

#[test]
fn dup_from_is_f_dupfd() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, pa) = x.install(false);
        let f = t.get(a as i32).unwrap();
        assert_eq!(t.dup_from(&f, 1024, false, 1024), Err(Errno::EINVAL));
        assert_eq!(t.dup_from(&f, u64::MAX, false, 1024), Err(Errno::EINVAL));
        assert_eq!(t.dup_from(&f, 5, false, 1024), Ok(5));
        assert_hint(fast, t, 1); // start above the hint leaves it
        assert_eq!(t.dup_from(&f, 5, true, 1024), Ok(6));
        assert!(!t.get_cloexec(5));
        assert!(t.get_cloexec(6));
        assert_eq!(t.dup_from(&f, 0, false, 1024), Ok(1));
        assert_hint(fast, t, 2);
        assert_eq!(t.dup_from(&f, 1023, false, 1024), Ok(1023));
        let count = f.count();
        assert_eq!(t.dup_from(&f, 1023, false, 1024), Err(Errno::EMFILE));
        assert_eq!(t.dup_from(&f, 5, false, 7), Err(Errno::EMFILE));
        assert_eq!(f.count(), count);
        for fd in [1, 5, 6, 1023] {
            assert!(same(t, a as i32, fd));
        }
        drop(f);
        t.close_range(0, u32::MAX);
        assert_eq!(pa.counts(), (5, 1));
        x.check();
    });
}

#[test]
fn close_on_exec_flags() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, _) = x.install(false);
        let a = a as i32;
        assert!(!t.get_cloexec(a));
        t.set_cloexec(a, true);
        assert!(t.get_cloexec(a));
        t.set_cloexec(a, true);
        assert!(t.get_cloexec(a));
        t.set_cloexec(a, false);
        assert!(!t.get_cloexec(a));
        // Out of range: ignored, no growth.
        for bad in BAD_FDS.into_iter().chain([64, 100]) {
            t.set_cloexec(bad, true);
            assert!(!t.get_cloexec(bad));
        }
        assert_eq!(t.max_fds(), 64);
        x.check();
    });
}

#[test]
fn close_range_of_the_table() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let probes: Vec<_> = (0..6).map(|_| x.install(false).1).collect();
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.fd(), 6);
        assert_eq!(t.dup2(0, 100, 1024), Ok(100));
        t.close_range(2, 6);
        assert_eq!(t.open_fds(), [0, 1, 6, 100]);
        for (i, p) in probes.iter().enumerate() {
            let want = if (2..=5).contains(&i) { (1, 1) } else { (0, 0) };
            assert_eq!(p.counts(), want, "file {i}");
        }
        t.close_range(101, u32::MAX);
        t.close_range(5000, 6000);
        assert_eq!(t.open_fds(), [0, 1, 6, 100]);
        t.close_range(0, 100);
        assert_eq!(t.open_fds(), [6]);
        assert_eq!(probes[0].counts(), (2, 1));
        drop(r);
        x.check();
    });
}

#[test]
fn set_cloexec_range_marks_the_range() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        for _ in 0..5 {
            x.install(false);
        }
        drop(t.close(2).unwrap());
        t.set_cloexec_range(1, 3);
        let marked: Vec<bool> = [0, 1, 3, 4].map(|fd| t.get_cloexec(fd)).into();
        assert_eq!(marked, [false, true, true, false]);
        // A marked free fd gets its flag from the allocation.
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.fd(), 2);
        assert!(!t.get_cloexec(2));
        // A range past the table is clamped, not grown.
        t.set_cloexec_range(3, u32::MAX);
        assert_eq!(t.max_fds(), 64);
        assert!(t.get_cloexec(4));
        t.set_cloexec_range(1000, 2000);
        assert_eq!(t.open_fds(), [0, 1, 2, 3, 4]);
        drop(r);
        x.check();
    });
}

#[test]
fn the_exec_sweep_closes_close_on_exec_fds_and_keeps_reservations() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (_, p0) = x.install(false);
        let (_, p1) = x.install(true);
        let r = t.alloc_fd(0, 1024, true).unwrap();
        assert_eq!(r.fd(), 2);
        let (_, p3) = x.install(true);
        assert_eq!(t.dup3(0, 200, O_CLOEXEC, 1024), Ok(200));
        t.close_on_exec();
        assert_eq!(t.open_fds(), [0, 2]);
        assert!(t.is_reserved(2), "a reservation survives the sweep");
        assert_eq!(p0.counts(), (1, 0));
        assert_eq!(p1.counts(), (1, 1));
        assert_eq!(p3.counts(), (1, 1));
        // Linux clears every close-on-exec bit it sweeps.
        assert!(!t.get_cloexec(2));
        let (f, pf) = x.file(O_RDWR);
        assert_eq!(r.install(f), Ok(2));
        assert!(!t.get_cloexec(2));
        t.close_on_exec();
        assert_eq!(t.open_fds(), [0, 2]);
        assert_eq!(pf.counts(), (0, 0));
        x.check();
    });
}

#[test]
fn copy_shares_files_and_drops_reservations() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (a, pa) = x.install(false);
        let (b, _) = x.install(true);
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(t.dup2(a as i32, 150, 1024), Ok(150));
        let count = t.get(a as i32).unwrap().count();
        let c = t.copy(None).unwrap();
        assert_eq!(c.users(), 1);
        assert_eq!(
            c.open_fds(),
            [a, b, 150],
            "the reserved fd is free in the copy"
        );
        assert!(c.max_fds() > 150);
        assert_eq!(t.get(a as i32).unwrap().count(), count + 2);
        for fd in [a, b, 150] {
            let fd = fd as i32;
            assert!(FileRef::ptr_eq(&t.get(fd).unwrap(), &c.get(fd).unwrap()));
            assert_eq!(c.get_cloexec(fd), t.get_cloexec(fd));
        }
        assert!(c.get_cloexec(b as i32));
        assert_eq!(c.alloc_fd(0, 1024, false).unwrap().fd(), 2);
        c.check_invariants().unwrap();
        // Independent tables.
        drop(c.close(a as i32).unwrap());
        assert!(t.get(a as i32).is_some());
        assert_eq!(pa.counts(), (0, 0));
        drop(c);
        assert_eq!(pa.counts(), (1, 0), "the copy's fd 150 was closed");
        // Only fds below the cut.
        let c = t.copy(Some(150)).unwrap();
        assert_eq!(c.open_fds(), [a, b]);
        let c0 = t.copy(Some(0)).unwrap();
        assert_eq!(c0.open_fds(), [] as [u32; 0]);
        drop((r, c, c0));
        x.check();
    });
}

#[test]
fn users_attach_detach_and_the_last_detach_closes() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let t = &x.table;
        let (_, pa) = x.install(false);
        let (_, pb) = x.install(true);
        t.attach();
        t.attach();
        assert_eq!(t.users(), 3);
        // SAFETY: the users given back are the two added above and then the
        // table's first one, all held by this test, which uses the table
        // only to look at it afterwards.
        unsafe {
            t.detach();
            t.detach();
        }
        assert_eq!(t.users(), 1);
        assert_eq!(t.open_fds(), [0, 1]);
        assert_eq!(pa.counts(), (0, 0));
        // SAFETY: as above.
        unsafe { t.detach() };
        assert_eq!(t.open_fds(), [] as [u32; 0]);
        assert_eq!(pa.counts(), (1, 1));
        assert_eq!(pb.counts(), (1, 1));
    });
}

#[test]
fn dropping_a_table_puts_its_files() {
    each_combination(|fast| {
        let x = Fixture::new(fast);
        let (_, pa) = x.install(false);
        let (f, pb) = x.file(O_RDWR);
        let keep = f.clone();
        x.table
            .alloc_fd(0, 1024, false)
            .unwrap()
            .install(f)
            .unwrap();
        drop(x);
        assert_eq!(pa.counts().1, 1);
        assert_eq!(pb.counts().1, 0);
        assert_eq!(keep.count(), 1);
        drop(keep);
        assert_eq!(pb.counts().1, 1);
    });
}
