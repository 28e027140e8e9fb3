//! The type-stable file pool (seed 001's `SLAB_TYPESAFE_BY_RCU`): memory
//! that once held a [`File`] holds a `File` for as long as the pool exists,
//! so a freed object can be reused at once while lockless lookups that still
//! hold its address stay memory-safe; they re-validate instead (inc-not-zero,
//! then re-check the slot).
//!
//! Objects come in slabs of [`SLAB_OBJECTS`] that are never returned to the
//! system allocator. Each thread keeps a magazine of free objects (the
//! per-CPU freelist of the kernel's slab allocators), so allocation and free
//! touch no shared cache line in the common case; magazines exchange batches
//! with a locked depot.

use super::{File, FileRef};
use crate::errno::Errno;
use crate::primitive::sync::atomic::{AtomicUsize, Ordering};
use crate::primitive::sync::{Mutex, lock};
use std::ptr::NonNull;

// Loom models only: `File::count_lazy` without its fence, to show the
// model of it fails then. A std thread-local: loom runs a model's threads
// on the test's own thread.
#[cfg(all(test, loom))]
std::thread_local! {
    pub(super) static BREAK_LAZY_FENCE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Objects per slab.
pub const SLAB_OBJECTS: usize = if cfg!(loom) { 2 } else { 64 };
/// Free objects a magazine holds before a free hands [`BATCH`] of them back
/// to the depot.
#[cfg(not(any(loom, shuttle)))]
const MAGAZINE: usize = 64;
/// Objects a magazine exchanges with the depot at a time.
#[cfg(not(any(loom, shuttle)))]
const BATCH: usize = 32;
/// Under loom, magazines small enough for a model's few allocations to
/// overflow one and refill one (the same 2:1 ratio).
#[cfg(loom)]
const MAGAZINE: usize = 2;
#[cfg(loom)]
const BATCH: usize = 1;

struct FreePtr(NonNull<File>);
// SAFETY: a free object belongs to whoever holds its pointer; the pointer is
// handed between threads only through the depot's lock.
unsafe impl Send for FreePtr {}

/// A type-stable pool of file objects.
pub struct FilePool {
    depot: Mutex<Vec<FreePtr>>,
    objects: AtomicUsize,
    /// Every slab carved, for [`lazy_opens`](Self::lazy_opens)' scan.
    slabs: Mutex<Vec<&'static [File]>>,
    /// Under loom, whether this is the magazine pool ([`GLOBAL`]): loom's
    /// `GLOBAL` is a lazy static, and comparing against its address would
    /// make every pool's every allocation an access to it (an extra
    /// synchronization the other models do not want).
    #[cfg(loom)]
    magazines: bool,
}

/// The process-wide pool: the one whose allocations and frees go through
/// the calling thread's magazine ([`MAGAZINE_TLS`]).
#[cfg(not(any(loom, shuttle)))]
static GLOBAL: FilePool = FilePool {
    depot: Mutex::new(Vec::new()),
    objects: AtomicUsize::new(0),
    slabs: Mutex::new(Vec::new()),
};

// Under loom the magazine pool is a lazy static, which loom makes afresh for
// each execution of a model (a std static holding loom objects would outlive
// the execution that made them). Loom drops it when the model's closure
// returns and before the main thread's thread-locals, so only spawned
// threads may use it: a magazine of the main thread would return its
// objects to a dropped depot.
#[cfg(loom)]
loom::lazy_static! {
    static ref GLOBAL: FilePool = FilePool {
        depot: Mutex::new(Vec::new()),
        objects: AtomicUsize::new(0),
        slabs: Mutex::new(Vec::new()),
        magazines: true,
    };
}

/// The pool that uses magazines.
#[cfg(any(loom, not(shuttle)))]
fn magazine_pool() -> &'static FilePool {
    &GLOBAL
}

// The calling thread's magazine of free objects of [`GLOBAL`]. Not under
// shuttle, where [`FilePool::global`] makes a pool per scenario.
#[cfg(any(loom, not(shuttle)))]
crate::primitive::thread_local! {
    static MAGAZINE_TLS: std::cell::RefCell<Magazine> = const { std::cell::RefCell::new(Magazine(Vec::new())) };
}

#[cfg(any(loom, not(shuttle)))]
struct Magazine(Vec<FreePtr>);

/// A thread's exit returns its magazine to the depot.
#[cfg(any(loom, not(shuttle)))]
impl Drop for Magazine {
    fn drop(&mut self) {
        lock(&magazine_pool().depot).append(&mut self.0);
    }
}

#[cfg(not(any(loom, shuttle)))]
crate::primitive::thread_local! {
    /// The depot's guard held across a `fork` by the forking thread.
    static FORK_GUARD: std::cell::RefCell<Option<crate::primitive::sync::MutexGuard<'static, Vec<FreePtr>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Fork support for an embedder that may `fork` while other threads run
/// (the LD_PRELOAD shim registers these with `pthread_atfork`). An embedder
/// that keeps its own calls into uvfs out of the fork (a lock of its own)
/// still has one lock no call of its holds: a thread exiting returns its
/// magazine of free file objects to the global depot from a thread-local
/// destructor. `before_fork` takes the depot's lock on the forking thread,
/// so the child never inherits it held by a thread it does not have;
/// `after_fork` (in the parent and in the child, on the same thread)
/// releases it. The tmpfs page pool's lock (taken when a page is freed,
/// which a thread's exit can do too) is held across the fork the same way,
/// after the depot's.
#[cfg(not(any(loom, shuttle)))]
pub fn before_fork() {
    let g = lock(&GLOBAL.depot);
    let _ = FORK_GUARD.try_with(|f| *f.borrow_mut() = Some(g));
    crate::fs::tmpfs::pool::before_fork();
}

/// See [`before_fork`].
#[cfg(not(any(loom, shuttle)))]
pub fn after_fork() {
    crate::fs::tmpfs::pool::after_fork();
    let _ = FORK_GUARD.try_with(|f| f.borrow_mut().take());
}

impl FilePool {
    /// The process-wide pool (like the kernel's one `filp` cache).
    #[cfg(not(any(loom, shuttle)))]
    pub fn global() -> &'static FilePool {
        &GLOBAL
    }

    /// Under loom (and shuttle) every model gets a pool of its own (leaked:
    /// loom objects must not outlive their execution's bookkeeping in a
    /// static; shuttle's threads share one OS thread, so a std thread-local
    /// magazine would be shared by all of them). These pools have no
    /// magazines: every free goes to the one depot, whose LIFO order the fd
    /// table's models use to make a freed object's reuse by another thread
    /// happen. The magazine path has models of its own (`loom_tests` below).
    #[cfg(any(loom, shuttle))]
    pub fn global() -> &'static FilePool {
        Box::leak(Box::new(FilePool {
            depot: Mutex::new(Vec::new()),
            objects: AtomicUsize::new(0),
            slabs: Mutex::new(Vec::new()),
            #[cfg(loom)]
            magazines: false,
        }))
    }

    /// How many objects the pool has ever carved (its memory footprint is
    /// this times `size_of::<File>()`).
    pub fn objects(&self) -> usize {
        self.objects.load(Ordering::Relaxed)
    }

    /// How many objects are free in the depot (not counting magazines).
    pub fn depot_len(&self) -> usize {
        lock(&self.depot).len()
    }

    /// Whether this is the magazine pool.
    #[cfg(any(loom, not(shuttle)))]
    fn is_global(&self) -> bool {
        #[cfg(not(loom))]
        return std::ptr::eq(self, magazine_pool());
        #[cfg(loom)]
        return self.magazines;
    }

    /// Takes a free object and initializes it with one reference.
    pub(crate) fn alloc(&'static self, flags: i32, mode: u32) -> Result<FileRef, Errno> {
        let f = self.take()?;
        // SAFETY: a free object has count zero and is ours.
        Ok(unsafe { File::init(f, flags, mode) })
    }

    fn take(&'static self) -> Result<NonNull<File>, Errno> {
        #[cfg(any(loom, not(shuttle)))]
        if self.is_global() {
            let hit = MAGAZINE_TLS.try_with(|m| {
                let mut m = m.borrow_mut();
                if m.0.is_empty() {
                    let mut depot = lock(&self.depot);
                    let n = depot.len().min(BATCH);
                    let at = depot.len() - n;
                    m.0.extend(depot.drain(at..));
                }
                m.0.pop()
            });
            match hit {
                Ok(Some(p)) => return Ok(p.0),
                Ok(None) => return self.grow_and_take(true),
                Err(_) => {} // thread exiting: fall through to the depot
            }
        }
        if let Some(p) = lock(&self.depot).pop() {
            return Ok(p.0);
        }
        self.grow_and_take(false)
    }

    /// Carves a new slab; keeps one object and frees the rest.
    #[cold]
    fn grow_and_take(&'static self, to_magazine: bool) -> Result<NonNull<File>, Errno> {
        let mut slab: Vec<File> = Vec::new();
        slab.try_reserve_exact(SLAB_OBJECTS)
            .map_err(|_| Errno::ENOMEM)?;
        slab.extend((0..SLAB_OBJECTS).map(|_| File::empty(Some(self))));
        // Listed before any of its objects is handed out: a lease setter
        // whose scan misses the slab took the list's lock first, after its
        // heavy fence, so an opener using one of these objects opens after
        // that fence and sees the setter's lease.
        let mut slabs = lock(&self.slabs);
        slabs.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        // Type-stable: the slab is never freed. Shared: every field a user
        // of an object writes is an atomic or a cell.
        let slab: &'static [File] = Box::leak(slab.into_boxed_slice());
        self.objects.fetch_add(SLAB_OBJECTS, Ordering::Relaxed);
        slabs.push(slab);
        drop(slabs);
        let mut ptrs = slab.iter().map(|f| FreePtr(NonNull::from(f)));
        let first = ptrs.next().map(|p| p.0).ok_or(Errno::ENOMEM)?;
        #[cfg(any(loom, not(shuttle)))]
        if to_magazine
            && MAGAZINE_TLS
                .try_with(|m| m.borrow_mut().0.extend(ptrs.by_ref()))
                .is_ok()
        {
            return Ok(first);
        }
        let _ = to_magazine;
        lock(&self.depot).extend(ptrs);
        Ok(first)
    }

    /// Returns an object to the pool.
    ///
    /// # Safety
    /// `f` belongs to this pool, its count is zero, and the caller owns it.
    pub(crate) unsafe fn free(&'static self, f: NonNull<File>) {
        #[cfg(any(loom, not(shuttle)))]
        if self.is_global() {
            let done = MAGAZINE_TLS.try_with(|m| {
                let mut m = m.borrow_mut();
                m.0.push(FreePtr(f));
                if m.0.len() > MAGAZINE {
                    let at = m.0.len() - BATCH;
                    let mut depot = lock(&self.depot);
                    depot.extend(m.0.drain(at..));
                }
            });
            if done.is_ok() {
                return;
            }
        }
        lock(&self.depot).push(FreePtr(f));
    }
}

impl FilePool {
    /// `FastPaths::open_count_lazy`'s counts for a lease setter: how many
    /// files of the pool count as opens of the inode at `inode` (its
    /// address), `(writers, readers)`. Runs [`reclaim::heavy_fence`]
    /// first: an opener whose mark this scan misses sees the setter's
    /// lease, which the caller stored before (the pair of fences in
    /// [`File::count_lazy`]). Costs a load per object the pool ever carved.
    ///
    /// [`reclaim::heavy_fence`]: crate::reclaim::heavy_fence
    pub(crate) fn lazy_opens(&self, inode: usize) -> (u32, u32) {
        crate::reclaim::heavy_fence();
        let slabs = lock(&self.slabs);
        let (mut w, mut r) = (0u32, 0u32);
        for f in slabs.iter().flat_map(|s| s.iter()) {
            let c = f.counted.load(Ordering::Relaxed);
            if c & !1 == inode {
                if c & 1 != 0 {
                    w += 1;
                } else {
                    r += 1;
                }
            }
        }
        (w, r)
    }
}

impl std::fmt::Debug for FilePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilePool")
            .field("objects", &self.objects())
            .finish_non_exhaustive()
    }
}

impl FilePool {
    /// Moves the calling thread's magazine into the depot, so that
    /// `objects() == depot_len()` holds once every thread that used the pool
    /// has exited or flushed (the leak check of the stress tests).
    pub fn flush_thread_cache(&self) {
        #[cfg(any(loom, not(shuttle)))]
        if self.is_global() {
            let _ = MAGAZINE_TLS.try_with(|m| lock(&self.depot).append(&mut m.borrow_mut().0));
        }
    }
}

/// Loom models of the magazine path of the process-wide pool: allocation
/// and free through the calling thread's magazine (refilled from the depot
/// when empty, a slab carved into it when the depot is empty too, a batch
/// handed back when it overflows), a thread's exit returning its magazine to
/// the depot from its thread-local destructor, and a free by a thread other
/// than the allocating one.
///
/// What they check: no object is handed to two owners at once (loom's cell
/// tracking of the file's fields fails the model if two threads' accesses
/// to one object are unordered, and each thread checks its objects are
/// distinct), and no object is lost or freed twice (once every thread has
/// exited, the depot holds every object ever carved, each once).
///
/// The work runs on spawned threads only: loom drops the pool (a lazy
/// static, fresh for each execution) before the main thread's
/// thread-locals, so a magazine of the main thread would outlive it. For the
/// same reason the main thread returns only once the spawned threads have
/// returned their magazines ([`assert_home`] waits for them).
///
/// Run with `RUSTFLAGS="--cfg loom" cargo test --release -p uvfs --lib
/// pool::`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::thread;

    fn builder() -> loom::model::Builder {
        crate::primitive::model::builder(2)
    }

    fn alloc(pool: &'static FilePool) -> FileRef {
        pool.alloc(0, 0).expect("the model's pool never runs out")
    }

    /// Every object the pool ever carved is in the depot, once, but for
    /// `out` objects still in use, after the threads the model joined have
    /// run their thread-local destructors.
    ///
    /// Loom's `join` returns when the joined thread's closure does, before
    /// loom drops its thread-locals (std's `join` waits for those too), so a
    /// joined thread may still be returning its magazine. Each yield lets
    /// another thread take a step, and returns at once when no other thread
    /// is left; the bound ends the wait only for a model that lost objects
    /// (a correct one needs a few steps per exiting thread).
    fn assert_home(pool: &FilePool, out: usize) {
        for _ in 0..50 {
            if lock(&pool.depot).len() + out == pool.objects() {
                break;
            }
            thread::yield_now();
        }
        let depot = lock(&pool.depot);
        let mut seen: Vec<usize> = depot.iter().map(|p| p.0.as_ptr() as usize).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), depot.len(), "an object was freed twice");
        assert_eq!(depot.len() + out, pool.objects(), "an object was lost");
    }

    /// Two threads each allocate three objects and free them: the first
    /// allocation finds the magazine empty and refills it from the depot or
    /// carves a slab into it, the third free overflows the magazine and
    /// hands a batch to the depot, and the exit returns the rest, all
    /// concurrently with the other thread doing the same.
    #[test]
    fn magazine_alloc_free_exit() {
        builder().check(|| {
            let pool = magazine_pool();
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    thread::spawn(move || {
                        let files = [alloc(pool), alloc(pool), alloc(pool)];
                        assert_ne!(files[0].as_ptr(), files[1].as_ptr());
                        assert_ne!(files[0].as_ptr(), files[2].as_ptr());
                        assert_ne!(files[1].as_ptr(), files[2].as_ptr());
                        drop(files);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            assert_home(pool, 0);
        });
    }

    /// A file allocated by one thread is freed by another (into the freeing
    /// thread's magazine), while a third allocates and frees: both of them
    /// start with an empty magazine and race to refill it from a depot that
    /// holds one object (returned by the first thread's exit), so one gets
    /// it and the other carves a slab (unless the first has already freed
    /// both of its files and exited, returning them).
    #[test]
    fn magazine_free_from_another_thread() {
        builder().check(|| {
            let pool = magazine_pool();
            // Carves a slab of two: one kept, one freed to the magazine,
            // which the thread's exit returns to the depot.
            let kept = thread::spawn(move || {
                let kept = alloc(pool);
                drop(alloc(pool));
                kept
            })
            .join()
            .unwrap();
            assert_home(pool, 1);
            let freer = thread::spawn(move || {
                let mine = alloc(pool);
                assert_ne!(mine.as_ptr(), kept.as_ptr());
                drop(kept);
                drop(mine);
            });
            let user = thread::spawn(move || drop(alloc(pool)));
            freer.join().unwrap();
            user.join().unwrap();
            assert_home(pool, 0);
            // The depot's object went to one of the two refills.
            assert!(
                pool.objects() <= 2 * SLAB_OBJECTS,
                "both refills carved a slab"
            );
        });
    }

    static LAZY_RACE: crate::primitive::model::Seen<3> = crate::primitive::model::Seen::new();

    /// `FastPaths::open_count_lazy`'s Dekker pair on the real objects: a
    /// read-lease setter (its own file counted lazily as a reader) races
    /// an opener for writing that counts itself in its file object (a
    /// plain store and the light fence, a `SeqCst` fence under loom as
    /// `membarrier` guarantees), then looks for leases and breaks without
    /// waiting; the setter counts by the pool's scan after the heavy fence.
    /// Never both unaware: an open that succeeded (its mark kept) never
    /// coexists with a read lease that is not being broken. Ends with no
    /// lease and no file counted.
    #[test]
    fn lazy_open_count_against_lease_setter() {
        lazy_open_count_model(true);
        LAZY_RACE.report(["lease first", "open first", "both"], &[0, 1]);
    }

    /// The same model with the opener's fence left out: loom finds the
    /// schedule where the open and the lease both succeed unaware of each
    /// other (the model can fail).
    #[test]
    #[should_panic(expected = "beside an unbroken read lease")]
    fn lazy_open_count_fails_without_the_opener_fence() {
        BREAK_LAZY_FENCE.with(|b| b.set(true));
        lazy_open_count_model(false);
    }

    /// The model; `record`: count its outcomes in [`LAZY_RACE`].
    fn lazy_open_count_model(record: bool) {
        use crate::locks::{FileLockContext, Holder, OpenCounts, break_lease_if_any};
        use crate::uapi::{F_RDLCK, F_UNLCK};
        use loom::sync::Arc;
        use std::time::Duration;
        // Any even address stands for the inode.
        const INODE: usize = 0x1000;
        builder().check(move || {
            let holder = Holder {
                key: 1,
                file: None,
                fd: 3,
                counted: Some(false),
            };
            let pool = FilePool::global();
            let c = Arc::new(FileLockContext::new());
            let counts = OpenCounts::default();
            let own = alloc(pool);
            assert!(own.count_lazy(INODE, false));
            let theirs = alloc(pool);
            let c2 = c.clone();
            let opener = thread::spawn(move || {
                assert!(theirs.count_lazy(INODE, true));
                let r = break_lease_if_any(Some(&*c2), true, true, Duration::ZERO, None, &|_| {});
                if r.is_err() {
                    theirs.uncount_lazy();
                }
                (r.is_ok(), theirs)
            });
            let lazy = || pool.lazy_opens(INODE);
            let set = c.setlease(&counts, &lazy, holder, F_RDLCK).is_ok();
            let (opened, theirs) = opener.join().unwrap();
            let ty = c.getlease(1);
            assert!(
                !(opened && set && ty == F_RDLCK),
                "an open for writing succeeded beside an unbroken read lease"
            );
            if record {
                LAZY_RACE.hit(match (set, opened) {
                    (true, false) => 0,
                    (false, true) => 1,
                    _ => 2,
                });
            }
            if set {
                c.setlease(&counts, &lazy, holder, F_UNLCK).unwrap();
            }
            assert_eq!(theirs.uncount_lazy(), opened);
            assert!(own.uncount_lazy());
            assert_eq!(pool.lazy_opens(INODE), (0, 0));
            assert_eq!(c.stats(), crate::locks::LockStats::default());
        });
    }
}
