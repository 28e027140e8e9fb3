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

use crate::errno::Errno;
use crate::file_table::{File, FileRef};
use crate::primitive::{AtomicUsize, Mutex, Ordering, lock};
use std::ptr::NonNull;

/// Objects per slab.
pub const SLAB_OBJECTS: usize = if cfg!(loom) { 2 } else { 64 };
#[cfg(not(any(loom, shuttle)))]
const MAGAZINE: usize = 64;
#[cfg(not(any(loom, shuttle)))]
const BATCH: usize = 32;

struct FreePtr(NonNull<File>);
// SAFETY: a free object belongs to whoever holds its pointer; the pointer is
// handed between threads only through the depot's lock.
unsafe impl Send for FreePtr {}

/// A type-stable pool of file objects.
pub struct FilePool {
    depot: Mutex<Vec<FreePtr>>,
    objects: AtomicUsize,
}

#[cfg(not(any(loom, shuttle)))]
static GLOBAL: FilePool = FilePool {
    depot: Mutex::new(Vec::new()),
    objects: AtomicUsize::new(0),
};

#[cfg(not(any(loom, shuttle)))]
std::thread_local! {
    static MAGAZINE_TLS: std::cell::RefCell<Magazine> = const { std::cell::RefCell::new(Magazine(Vec::new())) };
}

#[cfg(not(any(loom, shuttle)))]
struct Magazine(Vec<FreePtr>);

#[cfg(not(any(loom, shuttle)))]
impl Drop for Magazine {
    fn drop(&mut self) {
        lock(&GLOBAL.depot).append(&mut self.0);
    }
}

#[cfg(not(any(loom, shuttle)))]
std::thread_local! {
    /// The depot's guard held across a `fork` by the forking thread.
    static FORK_GUARD: std::cell::RefCell<Option<crate::primitive::MutexGuard<'static, Vec<FreePtr>>>> =
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
/// releases it.
#[cfg(not(any(loom, shuttle)))]
pub fn before_fork() {
    let g = lock(&GLOBAL.depot);
    let _ = FORK_GUARD.try_with(|f| *f.borrow_mut() = Some(g));
}

/// See [`before_fork`].
#[cfg(not(any(loom, shuttle)))]
pub fn after_fork() {
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
    /// static; shuttle's threads share one OS thread, so a thread-local
    /// magazine would be shared by all of them).
    #[cfg(any(loom, shuttle))]
    pub fn global() -> &'static FilePool {
        Box::leak(Box::new(FilePool {
            depot: Mutex::new(Vec::new()),
            objects: AtomicUsize::new(0),
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

    #[cfg_attr(any(loom, shuttle), allow(dead_code))]
    fn is_global(&self) -> bool {
        #[cfg(not(any(loom, shuttle)))]
        return std::ptr::eq(self, &GLOBAL);
        #[cfg(any(loom, shuttle))]
        return false;
    }

    /// Takes a free object and initializes it with one reference.
    pub(crate) fn alloc(&'static self, flags: i32, mode: u32) -> Result<FileRef, Errno> {
        let f = self.take()?;
        // SAFETY: a free object has count zero and is ours.
        Ok(unsafe { File::init(f, flags, mode) })
    }

    fn take(&'static self) -> Result<NonNull<File>, Errno> {
        #[cfg(not(any(loom, shuttle)))]
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
        // Type-stable: the slab is never freed.
        let slab: &'static mut [File] = Box::leak(slab.into_boxed_slice());
        self.objects.fetch_add(SLAB_OBJECTS, Ordering::Relaxed);
        let mut ptrs = slab.iter_mut().map(|f| FreePtr(NonNull::from(f)));
        let first = ptrs.next().map(|p| p.0).ok_or(Errno::ENOMEM)?;
        #[cfg(not(any(loom, shuttle)))]
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
        #[cfg(not(any(loom, shuttle)))]
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
        #[cfg(not(any(loom, shuttle)))]
        if self.is_global() {
            let _ = MAGAZINE_TLS.try_with(|m| lock(&self.depot).append(&mut m.borrow_mut().0));
        }
    }
}
