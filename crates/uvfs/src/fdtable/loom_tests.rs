//! Loom models of the fd-table / file-lifetime races: lockless lookup against
//! close and the immediate reuse of the type-stable file object, concurrent
//! allocation, lookup against table growth, the last put against a lookup's
//! inc-not-zero, fdget-light against the counted path, the deferred
//! release queue, and the single-user table's hand-over to shared and back.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib fdtable::
//! ```
//!
//! Files are told apart by their ops object (a [`Probe`] with an id). A
//! probe's `state` is a loom cell that every holder of a reference reads and
//! the release hook writes, so loom reports a use after release that is not
//! ordered by the reference count's happens-before edges even when the
//! interleaving alone would not show it.
use crate::primitive::model::{Seen, check};
use crate::{Errno, FastPaths, File, FileOps, FileRef, Process, Vfs};
use loom::cell::UnsafeCell;
use loom::model::Builder;
use loom::thread;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

/// Probe ids per model.
const IDS: usize = 4;
const LIVE: u32 = 1;
const RELEASED: u32 = 2;

/// What the models observe. Plain std atomics: loom runs one thread at a
/// time, so SeqCst std atomics record the interleaving itself.
#[derive(Default)]
struct Log {
    released: [AtomicUsize; IDS],
    /// Lookup references the model currently holds, per file.
    held: [AtomicUsize; IDS],
}

impl Log {
    fn released(&self, id: usize) -> usize {
        self.released[id].load(SeqCst)
    }

    fn assert_all_released(&self, n: usize) {
        for id in 0..n {
            assert_eq!(
                self.released(id),
                1,
                "file {id} released {} times",
                self.released(id)
            );
        }
    }
}

/// The test double behind every opened file.
struct Probe {
    id: usize,
    log: Arc<Log>,
    state: UnsafeCell<u32>,
}

// SAFETY: `state` is only read by holders of a reference to the probe's file
// and written once, by the release hook after the last reference is gone;
// the loom cell checks that those accesses are ordered, which is the very
// property under test.
unsafe impl Sync for Probe {}

impl FileOps for Probe {
    fn release(&self, _file: &File) {
        assert_eq!(
            self.log.held[self.id].load(SeqCst),
            0,
            "file {} released while a lookup holds it",
            self.id
        );
        self.state.with_mut(|s| {
            // SAFETY: loom checks this write against every holder's read.
            let s = unsafe { &mut *s };
            assert_eq!(*s, LIVE, "file {} released twice", self.id);
            *s = RELEASED;
        });
        let before = self.log.released[self.id].fetch_add(1, SeqCst);
        assert_eq!(before, 0, "file {} released twice", self.id);
    }
}

fn probe(f: &File) -> &Probe {
    let ops: &dyn FileOps = &**f.ops().expect("an opened file has ops");
    let any: &dyn Any = ops;
    any.downcast_ref::<Probe>()
        .expect("every file's ops is a Probe")
}

/// Marks a file found by a lookup as held, checks it is not released, and
/// returns its id.
fn hold(f: &File) -> usize {
    let p = probe(f);
    p.log.held[p.id].fetch_add(1, SeqCst);
    p.state.with(|s| {
        // SAFETY: a read; loom reports it if the release's write is not
        // ordered with it.
        let s = unsafe { *s };
        assert_eq!(s, LIVE, "file {} used after its release", p.id);
    });
    p.id
}

/// Ends [`hold`]; call before the reference is dropped.
fn unhold(f: &File) {
    let p = probe(f);
    p.log.held[p.id].fetch_sub(1, SeqCst);
}

/// Holds, checks and drops a lookup's reference; returns the file's id.
fn check_and_drop(f: FileRef) -> usize {
    let id = hold(&f);
    unhold(&f);
    drop(f);
    id
}

/// Opens a file whose ops is a probe with `id`.
fn open(p: &mut Process, log: &Arc<Log>, id: usize) -> i32 {
    let ops = Arc::new(Probe {
        id,
        log: log.clone(),
        state: UnsafeCell::new(LIVE),
    });
    p.open_with(crate::uapi::O_RDWR, |o| {
        o.set_ops(ops);
        Ok(())
    })
    .expect("open")
}

fn builder(preemptions: usize) -> Builder {
    let mut b = crate::primitive::model::builder(preemptions);
    // Every atomic access is a loom branch, and each model builds (before
    // its threads start) and tears down (after they join) a whole VFS: its
    // dentry and inode caches and root dentry. That single-threaded setup
    // adds branches but no interleavings; loom's default of 1000 is too low.
    b.max_branches = 10_000;
    b
}

/// The type-stable preset, and the same with the stock lookup helper.
fn seeds() -> FastPaths {
    FastPaths::seeds()
}

fn seeds_stock_lookup() -> FastPaths {
    FastPaths {
        fget_masked: false,
        ..FastPaths::seeds()
    }
}

/// Seeds with stock close(2): the final put is deferred to the call's return.
fn seeds_deferred_close() -> FastPaths {
    FastPaths {
        close_sync: false,
        ..FastPaths::seeds()
    }
}

// ---------------------------------------------------------------------------
// 1. Lookup racing close and the reuse of the same object for another fd.
// ---------------------------------------------------------------------------

/// fd 0 = P (id 0), fd 1 = T (id 1). A looks up fd 1. B closes fd 0 and fd 1
/// (T's object is then on top of the pool's LIFO free list) and opens N
/// (id 2), which lands at fd 0 in T's object. A must get None or T, never N
/// (nor P); T is not released while A holds it. With `third`, a thread C
/// looks up fd 0 meanwhile: P, N or None, and P not released while C holds
/// it.
fn lookup_vs_close_reuse(fast: FastPaths, third: bool, reused: &'static AtomicUsize) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        assert_eq!(open(&mut pa, &log, 1), 1);
        let t_obj = pa.fd_table().get(1).unwrap().as_ptr() as usize;
        let mut pb = pa.new_thread();
        let blog = log.clone();
        let b = thread::spawn(move || {
            pb.close(0).unwrap();
            pb.close(1).unwrap();
            assert_eq!(open(&mut pb, &blog, 2), 0);
        });
        let c = third.then(|| {
            let pc = pa.new_thread();
            thread::spawn(move || {
                if let Some(f) = pc.fd_table().get(0) {
                    let id = check_and_drop(f);
                    assert!(id == 0 || id == 2, "lookup of fd 0 returned file {id}");
                }
            })
        });

        if let Some(f) = pa.fd_table().get(1) {
            assert_eq!(check_and_drop(f), 1, "lookup of fd 1 returned another file");
        }

        b.join().unwrap();
        if let Some(c) = c {
            c.join().unwrap();
        }
        let table = pa.fd_table();
        assert!(table.get(1).is_none());
        let n = table.get(0).expect("N is at fd 0");
        if n.as_ptr() as usize == t_obj {
            reused.fetch_add(1, SeqCst);
        }
        assert_eq!(check_and_drop(n), 2);
        table.check_invariants().unwrap();
        log.assert_all_released(2);
        assert_eq!(log.released(2), 0);
        drop(pa);
        log.assert_all_released(3);
    });
    assert!(
        reused.load(SeqCst) > 0,
        "no execution reused the closed file's object"
    );
}

#[test]
fn lookup_vs_close_and_reuse() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(seeds(), false, &REUSED);
}

#[test]
fn two_lookups_vs_close_and_reuse() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(seeds(), true, &REUSED);
}

#[test]
fn lookup_vs_close_and_reuse_stock_lookup() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(seeds_stock_lookup(), false, &REUSED);
}

/// The same race through dup2: fd 0 = T (id 0), fd 1 = P (id 1). B does
/// dup2(1, 0), which puts T (released as dup2 returns), then opens N (id 2),
/// which reuses T's object at fd 2. A's lookup of fd 0 must return T or P,
/// never None and never N.
fn lookup_vs_dup2_reuse(fast: FastPaths, reused: &'static AtomicUsize) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        assert_eq!(open(&mut pa, &log, 1), 1);
        let t_obj = pa.fd_table().get(0).unwrap().as_ptr() as usize;
        let mut pb = pa.new_thread();
        let blog = log.clone();
        let b = thread::spawn(move || {
            assert_eq!(pb.dup2(1, 0), Ok(0));
            assert_eq!(open(&mut pb, &blog, 2), 2);
        });

        let f = pa.fd_table().get(0).expect("fd 0 is never empty");
        let id = check_and_drop(f);
        assert!(id == 0 || id == 1, "lookup of fd 0 returned file {id}");

        b.join().unwrap();
        let table = pa.fd_table();
        let n = table.get(2).expect("N is at fd 2");
        if n.as_ptr() as usize == t_obj {
            reused.fetch_add(1, SeqCst);
        }
        assert_eq!(check_and_drop(n), 2);
        assert_eq!(check_and_drop(table.get(0).unwrap()), 1);
        table.check_invariants().unwrap();
        assert_eq!(log.released(0), 1);
        drop(pa);
        log.assert_all_released(3);
    });
    assert!(
        reused.load(SeqCst) > 0,
        "no execution reused the replaced file's object"
    );
}

#[test]
fn lookup_vs_dup2_and_reuse() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_dup2_reuse(seeds(), &REUSED);
}

#[test]
fn lookup_vs_dup2_and_reuse_stock_lookup() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_dup2_reuse(seeds_stock_lookup(), &REUSED);
}

// ---------------------------------------------------------------------------
// 2. Two threads allocating and closing on one table.
// ---------------------------------------------------------------------------

/// `threads` threads (the model's main thread among them) each open `per`
/// files, check they own those fds exclusively, and close them. fds are
/// never handed out twice at once; the table ends empty and consistent.
fn alloc_close(fast: FastPaths, threads: usize, per: usize) {
    assert!(threads * per <= IDS);
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let owner: Arc<[AtomicUsize; IDS]> = Arc::default();
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();

        let work = move |p: &mut Process, log: &Arc<Log>, owner: &[AtomicUsize; IDS], me: usize| {
            let fds: Vec<i32> = (0..per).map(|i| open(p, log, per * me + i)).collect();
            for &fd in &fds {
                let prev = owner[fd as usize].swap(me + 1, SeqCst);
                assert_eq!(prev, 0, "fd {fd} handed to threads {prev} and {}", me + 1);
            }
            for &fd in &fds {
                owner[fd as usize].store(0, SeqCst);
                p.close(fd).unwrap();
            }
        };

        let others: Vec<_> = (1..threads)
            .map(|me| {
                let mut p = pa.new_thread();
                let (log, owner) = (log.clone(), owner.clone());
                thread::spawn(move || work(&mut p, &log, &owner, me))
            })
            .collect();
        work(&mut pa, &log, &owner, 0);
        for t in others {
            t.join().unwrap();
        }

        let table = pa.fd_table();
        assert_eq!(table.open_fds(), Vec::<u32>::new());
        table.check_invariants().unwrap();
        assert_eq!(table.next_fd(), 0);
        log.assert_all_released(threads * per);
    });
}

#[test]
fn concurrent_alloc_and_close() {
    alloc_close(seeds(), 2, 2);
}

#[test]
fn concurrent_alloc_and_close_three_threads() {
    alloc_close(seeds(), 3, 1);
}

/// Two threads of a process each open a file and exit at once: whichever
/// detaches last closes every fd, each file released exactly once.
fn exit_vs_exit(fast: FastPaths) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        let mut pb = pa.new_thread();
        let blog = log.clone();
        let b = thread::spawn(move || {
            open(&mut pb, &blog, 1);
            drop(pb);
        });
        open(&mut pa, &log, 2);
        drop(pa);
        b.join().unwrap();
        log.assert_all_released(3);
    });
}

#[test]
fn exit_vs_exit_sync_close() {
    exit_vs_exit(seeds());
}

#[test]
fn exit_vs_exit_deferred_close() {
    exit_vs_exit(seeds_deferred_close());
}

// ---------------------------------------------------------------------------
// 3. Lookup racing table growth.
// ---------------------------------------------------------------------------

/// fd 0 = F. B does dup2(0, high), publishing new chunks; A looks up `high`
/// (None or F) and fd 0 (always F).
fn lookup_vs_growth(fast: FastPaths, high: i32) {
    let mut b = builder(3);
    // Every atomic access is a loom branch, and the final
    // `check_invariants` loads a chunk pointer and a slot for each of the
    // table's `max_fds` slots (256 for fd 200): past loom's default of 1000.
    b.max_branches = 10_000;
    check(&b, move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || {
            assert_eq!(pb.dup2(0, high), Ok(high));
        });

        let table = pa.fd_table();
        if let Some(f) = table.get(high) {
            assert_eq!(check_and_drop(f), 0);
        }
        let f = table.get(0).expect("fd 0 stays open during growth");
        assert_eq!(check_and_drop(f), 0);

        b.join().unwrap();
        assert!(table.max_fds() > high as usize);
        assert_eq!(check_and_drop(table.get(high).unwrap()), 0);
        assert_eq!(table.open_fds(), vec![0, high as u32]);
        table.check_invariants().unwrap();
        drop(pa);
        log.assert_all_released(1);
    });
}

#[test]
fn lookup_vs_growth_one_chunk() {
    lookup_vs_growth(seeds(), 64);
}

#[test]
fn lookup_vs_growth_one_chunk_stock_lookup() {
    lookup_vs_growth(seeds_stock_lookup(), 64);
}

#[test]
fn lookup_vs_growth_two_chunks() {
    lookup_vs_growth(seeds(), 200);
}

// ---------------------------------------------------------------------------
// 4. The last put racing a lookup's inc-not-zero; the deferred queue.
// ---------------------------------------------------------------------------

/// fd 0 = F. `readers` threads (A, and C) look it up and drop their
/// reference; B closes it (the last put, unless a reader's reference outlives
/// the slot's). F is released exactly once, after every reference is gone,
/// and by the time the call that dropped the last reference returns: checked
/// Dekker-style, whichever of the threads finishes last sees the release done.
fn last_put_vs_lookup(fast: FastPaths, readers: usize) {
    const CLOSED: usize = 1 << 8;
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        // Low bits: readers inside their lookup or holding a reference;
        // CLOSED: B's close has returned.
        let flags = Arc::new(AtomicUsize::new(readers));
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        let mut pb = pa.new_thread();
        let (blog, bflags) = (log.clone(), flags.clone());
        let b = thread::spawn(move || {
            pb.close(0).unwrap();
            if bflags.fetch_or(CLOSED, SeqCst) & !CLOSED == 0 {
                assert_eq!(blog.released(0), 1, "close returned before the release");
            }
        });
        let read = |p: &mut Process, log: &Log, flags: &AtomicUsize| {
            if let Ok(f) = p.fget(0) {
                assert_eq!(check_and_drop(f), 0);
            }
            if flags.fetch_sub(1, SeqCst) == CLOSED | 1 {
                assert_eq!(
                    log.released(0),
                    1,
                    "the last put returned before the release"
                );
            }
        };
        let c = (readers > 1).then(|| {
            let mut pc = pa.new_thread();
            let (log, flags) = (log.clone(), flags.clone());
            thread::spawn(move || read(&mut pc, &log, &flags))
        });
        read(&mut pa, &log, &flags);

        b.join().unwrap();
        if let Some(c) = c {
            c.join().unwrap();
        }
        assert!(!crate::task_work::pending());
        log.assert_all_released(1);
        assert_eq!(pa.fd_table().open_fds(), Vec::<u32>::new());
    });
}

#[test]
fn last_put_vs_lookup_sync_close() {
    last_put_vs_lookup(seeds(), 1);
}

#[test]
fn last_put_vs_lookup_deferred_close() {
    last_put_vs_lookup(seeds_deferred_close(), 1);
}

#[test]
fn last_put_vs_lookup_stock_lookup() {
    last_put_vs_lookup(seeds_stock_lookup(), 1);
}

#[test]
fn last_put_vs_two_lookups_deferred_close() {
    last_put_vs_lookup(seeds_deferred_close(), 2);
}

/// fd 0 = T (id 0), fd 1 = P (id 1). A looks up fd 0. B does dup2(1, 0),
/// which releases T, then fails an open (ops id 3, set before the failure)
/// whose never-opened file takes T's object and is freed at once (seed 001)
/// or through the deferred queue, then opens N (id 2) at fd 2, in that same
/// object again. A gets T or P; a stale reference A took on the failed
/// open's object must not let its put free N; the failed open's release
/// hook never runs.
fn lookup_vs_failed_open(fast: FastPaths) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        assert_eq!(open(&mut pa, &log, 1), 1);
        let mut pb = pa.new_thread();
        let blog = log.clone();
        let b = thread::spawn(move || {
            assert_eq!(pb.dup2(1, 0), Ok(0));
            let ops = Arc::new(Probe {
                id: 3,
                log: blog.clone(),
                state: UnsafeCell::new(LIVE),
            });
            let r = pb.open_with(crate::uapi::O_RDWR, |o| {
                o.set_ops(ops);
                Err(Errno::ENOENT)
            });
            assert_eq!(r, Err(Errno::ENOENT));
            assert_eq!(open(&mut pb, &blog, 2), 2);
        });

        let f = pa.fd_table().get(0).expect("fd 0 is never empty");
        let id = check_and_drop(f);
        assert!(id == 0 || id == 1, "lookup of fd 0 returned file {id}");

        b.join().unwrap();
        let table = pa.fd_table();
        assert_eq!(table.open_fds(), vec![0, 1, 2]);
        assert_eq!(check_and_drop(table.get(2).unwrap()), 2);
        assert_eq!(log.released(0), 1);
        assert_eq!(log.released(1), 0);
        assert_eq!(log.released(2), 0);
        drop(pa);
        log.assert_all_released(3);
        assert_eq!(log.released(3), 0, "a never-opened file's release ran");
    });
}

#[test]
fn lookup_vs_failed_open_immediate() {
    lookup_vs_failed_open(seeds());
}

#[test]
fn lookup_vs_failed_open_deferred() {
    lookup_vs_failed_open(FastPaths {
        badopen_immediate: false,
        ..FastPaths::seeds()
    });
}

// ---------------------------------------------------------------------------
// 5. fdget light (borrowed) vs the counted path.
// ---------------------------------------------------------------------------

/// fd 0 = F, the table shared by A and B. B closes fd 0 and exits (the table
/// drops to one user); A runs `with_file(0)`, which borrows the table's
/// reference when it sees one user and counts otherwise. Either way A sees F
/// or EBADF, and F is not released while A uses it.
fn fdget_light_vs_close(fast: FastPaths) {
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        let mut pb = pa.new_thread();
        let b = thread::spawn(move || {
            pb.close(0).unwrap();
            drop(pb);
        });

        match pa.with_file(0, |f| {
            let id = hold(f);
            unhold(f);
            id
        }) {
            Ok(id) => assert_eq!(id, 0),
            Err(e) => assert_eq!(e, Errno::EBADF),
        }

        b.join().unwrap();
        assert_eq!(pa.fd_table().users(), 1);
        log.assert_all_released(1);
    });
}

#[test]
fn fdget_light_vs_close_and_exit() {
    fdget_light_vs_close(seeds());
}

#[test]
fn fdget_light_vs_close_and_exit_deferred_close() {
    fdget_light_vs_close(seeds_deferred_close());
}

// ---------------------------------------------------------------------------
// 6. The single-user table (`fd_single_user`): hand-over to shared and back.
// ---------------------------------------------------------------------------

/// A, the table's only user, opens F (id 0) at fd 0 without the lock, then
/// makes thread B (one user to two). Concurrently: B looks fd 0 up
/// (counted: F, H or nothing), opens G (id 1) and closes it, and exits (two users to one);
/// A closes fd 0 and opens and closes H (id 2), each call locked or not by
/// the count it reads. After the join A opens K (id 3) unlocked: the lowest
/// free fd, 0. The unlocked writes are tracked cell accesses, so loom fails
/// the model if any is not ordered with B's locked ones (or with its
/// relaxed slot accesses); every file is released exactly once, never while
/// a lookup holds it, and the bitmaps stay consistent.
fn single_user_hand_over(fast: FastPaths) {
    assert!(fast.fd_single_user);
    check(&builder(3), move || {
        let log = Arc::new(Log::default());
        let vfs = Vfs::new(fast);
        let mut pa = Process::new(&vfs).unwrap();
        assert_eq!(open(&mut pa, &log, 0), 0);
        let mut pb = pa.new_thread();
        let blog = log.clone();
        let b = thread::spawn(move || {
            // F, or H once A has closed F and opened H at fd 0 again.
            if let Some(f) = pb.fd_table().get(0) {
                let id = check_and_drop(f);
                assert!(id == 0 || id == 2, "fd 0 held file {id}");
            }
            let fd = open(&mut pb, &blog, 1);
            pb.close(fd).unwrap();
            drop(pb);
        });

        pa.close(0).unwrap();
        let fd = open(&mut pa, &log, 2);
        pa.close(fd).unwrap();

        b.join().unwrap();
        assert_eq!(pa.fd_table().users(), 1);
        assert_eq!(open(&mut pa, &log, 3), 0);
        pa.close(0).unwrap();
        pa.fd_table().check_invariants().unwrap();
        assert!(pa.fd_table().open_fds().is_empty());
        log.assert_all_released(4);
    });
}

#[test]
fn single_user_hand_over_sync_close() {
    single_user_hand_over(seeds());
}

#[test]
fn single_user_hand_over_deferred_close() {
    single_user_hand_over(seeds_deferred_close());
}

// ---------------------------------------------------------------------------
// 8. `fd_bits_lockfree`: fds 0..63 claimed by a CAS, freed by a fetch_and.
// ---------------------------------------------------------------------------

fn lockfree_bits() -> FastPaths {
    FastPaths {
        fd_bits_lockfree: true,
        ..FastPaths::seeds()
    }
}

fn locked_bits() -> FastPaths {
    FastPaths {
        fd_bits_lockfree: false,
        ..FastPaths::seeds()
    }
}

/// A table with fds `0..n` reserved, shared (two users: the lockless paths
/// run). The reservations are forgotten; [`unreserve`] frees one.
fn reserved_table(fast: FastPaths, n: u32) -> Arc<crate::fdtable::FdTable> {
    let t = Arc::new(crate::fdtable::FdTable::new(&fast).unwrap());
    t.attach();
    for fd in 0..n {
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.fd(), fd);
        std::mem::forget(r);
    }
    t
}

/// Frees a reservation made by [`reserved_table`] (its `ReservedFd` was
/// forgotten): rebuilds the reservation and drops it.
fn unreserve(t: &crate::fdtable::FdTable, fd: u32) {
    drop(crate::fdtable::ReservedFd { table: t, fd });
}

/// fds 0..3 reserved, then 1 freed: two threads race to allocate. Each gets
/// a distinct fd and the two are {1, 3}: the first claim (in linearization
/// order) gets 1, the lowest free, the second the next lowest, 3. Both
/// orders occur. The table ends consistent.
fn two_allocators_race(fast: FastPaths, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let t = reserved_table(fast, 3);
        unreserve(&t, 1);
        let t2 = t.clone();
        let b = thread::spawn(move || {
            let r = t2.alloc_fd(0, 1024, false).unwrap();
            let fd = r.fd();
            std::mem::forget(r);
            fd
        });
        let r = t.alloc_fd(0, 1024, false).unwrap();
        let a = r.fd();
        std::mem::forget(r);
        let b = b.join().unwrap();
        let mut got = [a, b];
        seen.hit(usize::from(a != 1));
        got.sort_unstable();
        assert_eq!(got, [1, 3], "a {a}, b {b}");
        assert_eq!(t.open_fds(), vec![0, 1, 2, 3]);
        t.check_invariants().unwrap();
        for fd in 0..4 {
            unreserve(&t, fd);
        }
        assert_eq!(t.open_fds(), Vec::<u32>::new());
        t.check_invariants().unwrap();
    });
    seen.report(["main got 1", "thread got 1"], &[0, 1]);
}

#[test]
fn lockfree_two_allocators_race_for_the_lowest_fd() {
    static SEEN: Seen<2> = Seen::new();
    two_allocators_race(lockfree_bits(), &SEEN);
}

#[test]
fn locked_two_allocators_race_for_the_lowest_fd() {
    static SEEN: Seen<2> = Seen::new();
    two_allocators_race(locked_bits(), &SEEN);
}

/// fds 0 and 1 reserved. A frees 0 then allocates (close-on-exec off); B
/// allocates with close-on-exec on. Whatever the order, the two get {0, 2},
/// each fd's close-on-exec bit is its allocator's, and no fd is lost.
fn alloc_vs_free(fast: FastPaths, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let t = reserved_table(fast, 2);
        t.set_cloexec(2, true); // a stale bit on a free fd: reset by A
        let t2 = t.clone();
        let b = thread::spawn(move || {
            let r = t2.alloc_fd(0, 1024, true).unwrap();
            let fd = r.fd();
            std::mem::forget(r);
            fd
        });
        unreserve(&t, 0);
        let r = t.alloc_fd(0, 1024, false).unwrap();
        let a = r.fd();
        std::mem::forget(r);
        let b = b.join().unwrap();
        seen.hit(usize::from(b == 0));
        let mut got = [a, b];
        got.sort_unstable();
        assert_eq!(got, [0, 2], "a {a}, b {b}");
        assert!(!t.get_cloexec(a as i32), "fd {a} of A is close-on-exec");
        assert!(t.get_cloexec(b as i32), "fd {b} of B is not close-on-exec");
        assert_eq!(t.open_fds(), vec![0, 1, 2]);
        t.check_invariants().unwrap();
    });
    seen.report(["B got 2", "B got 0"], &[0, 1]);
}

#[test]
fn lockfree_alloc_vs_free() {
    static SEEN: Seen<2> = Seen::new();
    alloc_vs_free(lockfree_bits(), &SEEN);
}

/// fds 0..63 reserved (the first word full). A frees 5 and allocates; B
/// allocates, growing the table past 64 when it finds the word full. The
/// two get {5, 64} whichever way they interleave: no fd lost or handed out
/// twice across the growth, which leaves fds 0..63's word where it is.
fn alloc_vs_growth(fast: FastPaths, seen: &'static Seen<2>) {
    check(&builder(2), move || {
        let t = reserved_table(fast, 64);
        assert_eq!(t.max_fds(), 64);
        let t2 = t.clone();
        let b = thread::spawn(move || {
            let r = t2.alloc_fd(0, 1024, false).unwrap();
            let fd = r.fd();
            std::mem::forget(r);
            fd
        });
        unreserve(&t, 5);
        let r = t.alloc_fd(0, 1024, false).unwrap();
        let a = r.fd();
        std::mem::forget(r);
        let b = b.join().unwrap();
        seen.hit(usize::from(b == 5));
        let mut got = [a, b];
        got.sort_unstable();
        assert_eq!(got, [5, 64], "a {a}, b {b}");
        assert!(t.max_fds() > 64);
        assert_eq!(t.open_fds(), (0..=64).collect::<Vec<u32>>());
        t.check_invariants().unwrap();
        unreserve(&t, 64);
        unreserve(&t, 0);
        let r = t.alloc_fd(0, 1024, false).unwrap();
        assert_eq!(r.fd(), 0, "the lowest free fd after the growth");
        drop(r);
    });
    seen.report(["B got 64", "B got 5"], &[0, 1]);
}

#[test]
fn lockfree_alloc_vs_growth() {
    static SEEN: Seen<2> = Seen::new();
    alloc_vs_growth(lockfree_bits(), &SEEN);
}

#[test]
fn locked_alloc_vs_growth() {
    static SEEN: Seen<2> = Seen::new();
    alloc_vs_growth(locked_bits(), &SEEN);
}

/// Lookup against close and a lockless claim of the freed fd: the
/// `lookup_vs_close_reuse` model (its open of N claims fd 0 by the CAS)
/// with the switch on and off named explicitly; the seeds models above run
/// with it on too.
#[test]
fn lockfree_lookup_vs_close_and_claim() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(lockfree_bits(), false, &REUSED);
}

#[test]
fn locked_lookup_vs_close_and_claim() {
    static REUSED: AtomicUsize = AtomicUsize::new(0);
    lookup_vs_close_reuse(locked_bits(), false, &REUSED);
}

#[test]
fn locked_concurrent_alloc_and_close() {
    alloc_close(locked_bits(), 2, 2);
}

// ---------------------------------------------------------------------------
// 9. `fd_close_lockless`: a close of fds 0..63 without the lock.
// ---------------------------------------------------------------------------

mod close;
