//! The fd-call tests' test double ([`Probe`]: a file whose flush and
//! release are counted) and their small helpers.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, File, FileOps, FileRef, Process, Vfs, task_work};

/// What a release hook saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub thread: ThreadId,
    pub count: usize,
    /// `task_work::pending()` right after the hook dropped the file it held
    /// (`None` when it held none).
    pub pending_after_put: Option<bool>,
}

/// A file system's operations as a test double: counts flushes and
/// releases, optionally fails flush, and may hold another file that its
/// release drops.
#[derive(Default)]
pub struct Probe {
    pub flushes: AtomicUsize,
    pub releases: AtomicUsize,
    pub flush_err: Mutex<Option<Errno>>,
    pub seen: Mutex<Vec<Seen>>,
    pub holds: Mutex<Option<FileRef>>,
}

impl Probe {
    pub fn flushes(&self) -> usize {
        self.flushes.load(SeqCst)
    }
    pub fn releases(&self) -> usize {
        self.releases.load(SeqCst)
    }
    pub fn fail_flush(&self, e: Errno) {
        *self.flush_err.lock().unwrap() = Some(e);
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl FileOps for Probe {
    fn flush(&self, _file: &File) -> Result<(), Errno> {
        self.flushes.fetch_add(1, SeqCst);
        match *self.flush_err.lock().unwrap() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn release(&self, file: &File) {
        let count = file.count();
        let held = self.holds.lock().unwrap().take();
        let pending_after_put = held.map(|f| {
            drop(f);
            task_work::pending()
        });
        self.seen.lock().unwrap().push(Seen {
            thread: thread::current().id(),
            count,
            pending_after_put,
        });
        self.releases.fetch_add(1, SeqCst);
    }
}

pub fn new_proc(fast: FastPaths) -> Process {
    Process::new(&Vfs::new(fast)).unwrap()
}

pub fn open(p: &mut Process, flags: i32) -> i32 {
    p.open_with(flags, |_| Ok(())).unwrap()
}

pub fn open_probe(p: &mut Process, flags: i32) -> (i32, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let ops: Arc<dyn FileOps> = probe.clone();
    let fd = p
        .open_with(flags, |o| {
            o.set_ops(ops);
            Ok(())
        })
        .unwrap();
    (fd, probe)
}

pub fn getfd(p: &mut Process, fd: i32) -> Result<i32, Errno> {
    p.fcntl(fd, F_GETFD, 0)
}

pub fn getfl(p: &mut Process, fd: i32) -> Result<i32, Errno> {
    p.fcntl(fd, F_GETFL, 0)
}

pub fn fds(p: &Process) -> Vec<u32> {
    p.fd_table().open_fds()
}

pub fn same_file(a: &mut Process, fa: i32, b: &mut Process, fb: i32) -> bool {
    FileRef::ptr_eq(&a.fget_raw(fa).unwrap(), &b.fget_raw(fb).unwrap())
}

/// Whether two fds of one process refer to the same file.
pub fn same(p: &mut Process, a: i32, b: i32) -> bool {
    let fa = p.fget_raw(a).unwrap();
    FileRef::ptr_eq(&fa, &p.fget_raw(b).unwrap())
}

pub fn check(p: &Process) {
    if let Err(e) = p.fd_table().check_invariants() {
        panic!("fd table invariant broken: {e}");
    }
}

pub fn same_table(a: &Process, b: &Process) -> bool {
    std::ptr::eq(a.fd_table(), b.fd_table())
}

/// The fds reserved (allocated, no file yet) in `p`'s table.
pub fn reserved(p: &Process) -> Vec<u32> {
    fds(p)
        .into_iter()
        .filter(|&fd| p.fd_table().is_reserved(fd))
        .collect()
}

pub const BAD_FDS: [i32; 5] = [-1, i32::MIN, i32::MAX, 1 << 20, 4096];
