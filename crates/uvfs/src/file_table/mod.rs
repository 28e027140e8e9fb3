//! Open-file objects (`struct file`, Linux's fs/file_table.c): their
//! allocation, reference count, open flags and mode, the file position with
//! its lock, the owner's operations, and their release.
//!
//! Lifetime rules, as in Linux:
//! - a file is created with one reference, owned by whoever opens it, and is
//!   reachable from fd table slots, each of which holds a reference;
//! - lockless lookups take a reference with *inc-not-zero* and then re-check
//!   the slot they loaded it from, because the object may have been freed and
//!   (with the type-stable pool) reused for another open in between;
//! - the final put runs the release: the owner's `release` hook when the file
//!   was opened, then the object goes back to its allocator.

mod fifo;
pub mod pool;

use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fown::FOwnCell;
pub use crate::fown::FOwner;
use crate::locks::{FileLockContext, Owner};
use crate::primitive::cell::UnsafeCell;
use crate::primitive::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
use crate::primitive::sync::{Mutex, MutexGuard};
use crate::task_work::{self, Callback};
use crate::{reclaim, uapi};
use pool::FilePool;
use std::any::Any;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// The file may be read (`FMODE_READ`).
pub const FMODE_READ: u32 = 1 << 0;
/// The file may be written (`FMODE_WRITE`).
pub const FMODE_WRITE: u32 = 1 << 1;
/// Position updates are serialized when the file is shared
/// (`FMODE_ATOMIC_POS`; regular files and directories).
pub const FMODE_ATOMIC_POS: u32 = 1 << 15;
/// An `O_PATH` file: no I/O, only fd-level operations.
pub const FMODE_PATH: u32 = 1 << 14;
/// The open completed; the release hook runs at the final put.
pub const FMODE_OPENED: u32 = 1 << 19;
/// The open created the file (`FMODE_CREATED`; `F_CREATED_QUERY`).
pub const FMODE_CREATED: u32 = 1 << 20;
/// uvfs's own: the open is counted in its inode's open counts (a regular
/// file open for reading or writing; Linux's `FMODE_WRITER` and its
/// reader count), uncounted by the final release.
pub const FMODE_COUNTED: u32 = 1 << 16;
/// The file supports direct I/O (`FMODE_CAN_ODIRECT`: tmpfs sets it on
/// regular files): `O_DIRECT` is refused on other files.
pub const FMODE_CAN_ODIRECT: u32 = 1 << 22;

/// What the owner of an open file (its file system, or a test double) is
/// told about the file's life.
pub trait FileOps: Any + Send + Sync {
    /// Called by every close of an fd referring to the file (close(2),
    /// close_range, a replaced dup2 target, the exec sweep), before the put.
    /// An error is returned by close(2); the fd is closed all the same.
    fn flush(&self, _file: &File) -> Result<(), Errno> {
        Ok(())
    }

    /// Called once, by the final put of a file whose open succeeded.
    fn release(&self, _file: &File) {}
}

/// An open file.
///
/// Aligned to a cache line, as the kernel's `filp` cache is, so two files
/// used by two CPUs never share one.
#[repr(C, align(64))]
pub struct File {
    count: AtomicUsize,
    flags: AtomicU32,
    mode: UnsafeCell<u32>,
    pos: AtomicU64,
    pos_lock: Mutex<()>,
    ops: UnsafeCell<Option<Arc<dyn FileOps>>>,
    /// The dentry the file was opened through (`f_path`), for files opened
    /// by a path; `None` for files made by [`Process::open_with`].
    ///
    /// [`Process::open_with`]: crate::Process::open_with
    path: UnsafeCell<Option<DentryRef>>,
    /// The identity of the opener's credentials (`f_cred`), zero for none;
    /// set while unpublished. An id, not a counted reference to the
    /// credentials: the one use, linkat's `AT_EMPTY_PATH` check, compares
    /// identities, and a count would cost two atomic read-modify-writes per
    /// open.
    cred_id: UnsafeCell<u64>,
    /// The owner that receives the file's signals and the signal
    /// (`f_owner`: `F_SETOWN`, `F_SETSIG`), packed: see [`FOwner`].
    fown: FOwnCell,
    /// The deferred release's queue item (the kernel's `f_task_work`).
    work: Callback,
    /// The type-stable pool the object lives in, or `None` for a heap object
    /// freed after a grace period.
    pool: Option<&'static FilePool>,
    /// `FastPaths::open_count_lazy`: while the file counts as an open of
    /// its inode for leases outside the inode's atomics, the inode's
    /// address with bit 0 set for a writer; else 0. Written by the file's
    /// opener and its final release, read by [`FilePool::lazy_opens`].
    counted: AtomicUsize,
}

// SAFETY: the fields are atomics, a mutex, and cells written only while the
// writer owns the object exclusively (count zero, or the opener's single
// reference before the file is published); shared access only reads them.
unsafe impl Sync for File {}
// SAFETY: as above; `ops` is `Send + Sync`, and a raw link is just an address.
unsafe impl Send for File {}

impl File {
    /// A file with count zero, owned by `pool` (or by the heap).
    pub(crate) fn empty(pool: Option<&'static FilePool>) -> File {
        File {
            count: AtomicUsize::new(0),
            flags: AtomicU32::new(0),
            mode: UnsafeCell::new(0),
            pos: AtomicU64::new(0),
            pos_lock: Mutex::new(()),
            ops: UnsafeCell::new(None),
            path: UnsafeCell::new(None),
            cred_id: UnsafeCell::new(0),
            fown: FOwnCell::new(),
            work: Callback::new(release_work),
            pool,
            counted: AtomicUsize::new(0),
        }
    }

    /// Initializes a file whose count is zero and which no one else owns,
    /// then publishes it with one reference.
    ///
    /// # Safety
    /// The caller owns `f` exclusively apart from stale lockless readers,
    /// which only touch the count (and fail inc-not-zero while it is zero).
    pub(crate) unsafe fn init(f: NonNull<File>, flags: i32, mode: u32) -> FileRef {
        // SAFETY: the caller guarantees `f` is a live file object.
        let file = unsafe { f.as_ref() };
        debug_assert_eq!(file.count.load(Ordering::Relaxed), 0);
        file.flags.store(flags as u32, Ordering::Relaxed);
        // SAFETY: exclusive ownership per the contract above.
        file.mode.with_mut(|m| unsafe { *m = mode });
        file.pos.store(0, Ordering::Relaxed);
        file.fown.clear();
        // The release store pairs with inc-not-zero's acquire: a stale reader
        // that wins the increment sees the fields written above.
        file.count.store(1, Ordering::Release);
        FileRef(f)
    }

    /// The open flags (`f_flags`, what `F_GETFL` returns).
    pub fn flags(&self) -> i32 {
        self.flags.load(Ordering::Relaxed) as i32
    }

    /// Replaces the flags `F_SETFL` may change with those in `arg`.
    pub fn set_status_flags(&self, arg: i32) {
        let mask = uapi::SETFL_MASK as u32;
        let mut cur = self.flags.load(Ordering::Relaxed);
        loop {
            let new = (arg as u32 & mask) | (cur & !mask);
            match self
                .flags
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => cur = seen,
            }
        }
    }

    /// The `FMODE_*` bits.
    pub fn mode(&self) -> u32 {
        // SAFETY: `mode` is written only while the file is exclusively owned;
        // a `&File` is handed out only to holders of a reference.
        self.mode.with(|m| unsafe { *m })
    }

    /// The owner's operations, once an open has set them.
    pub fn ops(&self) -> Option<&Arc<dyn FileOps>> {
        // SAFETY: as for `mode`: written only under exclusive ownership, and
        // the returned borrow cannot outlive the caller's reference.
        self.ops.with(|o| unsafe { (*o).as_ref() })
    }

    /// The dentry the file was opened through, if any.
    pub(crate) fn dentry(&self) -> Option<&DentryRef> {
        // SAFETY: as for `ops`: written only while unpublished or being
        // freed.
        self.path.with(|p| unsafe { (*p).as_ref() })
    }

    /// The lock context of the file's inode, if one was ever made (`None`
    /// also for a file opened with no dentry).
    #[inline]
    pub(crate) fn lock_context(&self) -> Option<&FileLockContext> {
        self.dentry()?.inode()?.lock_context()
    }

    /// The file's identity as the owner of its OFD and flock locks.
    pub(crate) fn lock_key(&self) -> usize {
        self as *const File as usize
    }

    /// `FastPaths::open_count_lazy`'s count of an open: marks this file
    /// (being opened, in a type-stable pool) as an open of the inode at
    /// `inode` (its address), a writer if `write`, with a plain store,
    /// then [`reclaim::light_fence`]: the opener's look for leases that
    /// follows and a lease setter's [`FilePool::lazy_opens`] (after its
    /// heavy fence) cannot both miss each other. False (nothing done) for
    /// a heap file, which the caller counts in the inode.
    #[inline]
    pub(crate) fn count_lazy(&self, inode: usize, write: bool) -> bool {
        if self.pool.is_none() {
            return false;
        }
        debug_assert!(inode & 1 == 0 && inode != 0);
        self.counted
            .store(inode | usize::from(write), Ordering::Relaxed);
        #[cfg(all(test, loom))]
        if pool::BREAK_LAZY_FENCE.with(std::cell::Cell::get) {
            return true;
        }
        reclaim::light_fence();
        true
    }

    /// Undoes [`count_lazy`](Self::count_lazy) (a failed open, the final
    /// release); whether the file was counted that way.
    #[inline]
    pub(crate) fn uncount_lazy(&self) -> bool {
        if self.counted.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.counted.store(0, Ordering::Release);
        true
    }

    /// Removes the byte-range locks of the fd table `owner` on this file's
    /// inode: what every close of an fd does (`filp_flush`'s
    /// `locks_remove_posix`). Nothing for an `O_PATH` file.
    #[inline]
    pub(crate) fn remove_posix_locks(&self, owner: u64) {
        if self.mode() & FMODE_PATH == 0
            && let Some(ctx) = self.lock_context()
        {
            ctx.remove_posix(Owner::Files(owner));
        }
    }

    /// The file position read without the position lock, as Linux reads
    /// `f_pos` for a lock's `SEEK_CUR`.
    pub(crate) fn pos_unlocked(&self) -> u64 {
        self.pos.load(Ordering::Relaxed)
    }

    /// The identity of the credentials the file was opened with
    /// (`f_cred`), if set: equal to the opener's thread's identity while it
    /// keeps those credentials (see `Process::set_cred`).
    pub fn cred_id(&self) -> Option<u64> {
        // SAFETY: as for `ops`: written only while unpublished or being
        // freed.
        let id = self.cred_id.with(|c| unsafe { *c });
        (id != 0).then_some(id)
    }

    /// The signal owner (`f_owner`).
    pub fn owner(&self) -> FOwner {
        self.fown.get()
    }

    /// Changes the signal owner with `f` (`F_SETOWN`, `F_SETSIG`).
    pub fn update_owner(&self, f: impl Fn(FOwner) -> FOwner) {
        self.fown.update(f)
    }

    /// The cell holding the signal owner, for a lease that must read or
    /// clear it while the file is alive (see `locks::lease::OwnerPtr`).
    pub(crate) fn owner_cell(&self) -> &FOwnCell {
        &self.fown
    }

    /// The current reference count (racy by nature; for tests and stats).
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether the object comes from the type-stable pool.
    pub fn is_typesafe(&self) -> bool {
        self.pool.is_some()
    }

    /// Locks the file position for a read-modify-write, taking the lock only
    /// when the file is shared (more than one reference) and wants atomic
    /// position updates, as `fdget_pos` does.
    pub fn lock_pos(&self) -> PosGuard<'_> {
        let lock = if self.mode() & FMODE_ATOMIC_POS != 0 && self.count() > 1 {
            Some(crate::primitive::sync::lock(&self.pos_lock))
        } else {
            None
        };
        PosGuard {
            file: self,
            _lock: lock,
        }
    }

    /// Takes one more reference from a held one (`get_file`).
    #[inline]
    pub(crate) fn get(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes a reference unless the count is zero (`get_file_rcu`'s core).
    /// Acquire on success: a reused object's initialization is visible.
    #[inline]
    pub(crate) fn inc_not_zero(&self) -> bool {
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if c == 0 {
                return false;
            }
            match self
                .count
                .compare_exchange_weak(c, c + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => c = seen,
            }
        }
    }

    /// Drops one reference; true when it was the last.
    #[inline]
    fn dec_and_test(&self) -> bool {
        if self.count.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            true
        } else {
            false
        }
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("count", &self.count())
            .field("flags", &format_args!("{:#o}", self.flags()))
            .field("mode", &format_args!("{:#x}", self.mode()))
            .field("pos", &self.pos.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The file position, locked when the file is shared (see
/// [`File::lock_pos`]).
pub struct PosGuard<'a> {
    file: &'a File,
    _lock: Option<MutexGuard<'a, ()>>,
}

impl PosGuard<'_> {
    /// The position.
    pub fn get(&self) -> u64 {
        self.file.pos.load(Ordering::Relaxed)
    }

    /// Sets the position.
    pub fn set(&mut self, pos: u64) {
        self.file.pos.store(pos, Ordering::Relaxed);
    }

    /// Whether the lock was taken (the file was shared).
    pub fn is_locked(&self) -> bool {
        self._lock.is_some()
    }
}

/// A counted reference to an open file. Dropping it is `fput`: inside an API
/// call a final release is queued on the thread's deferred-work queue.
pub struct FileRef(NonNull<File>);

// SAFETY: `File` is `Send + Sync`, and the reference count makes the handle
// an owner of one reference, like `Arc`.
unsafe impl Send for FileRef {}
// SAFETY: as above.
unsafe impl Sync for FileRef {}

impl FileRef {
    /// Wraps a pointer that owns one reference.
    ///
    /// # Safety
    /// `f` is a live file and the caller transfers one reference.
    #[inline]
    pub(crate) unsafe fn from_raw(f: NonNull<File>) -> FileRef {
        FileRef(f)
    }

    /// Gives up the handle without dropping its reference.
    #[inline]
    pub(crate) fn into_raw(self) -> NonNull<File> {
        ManuallyDrop::new(self).0
    }

    /// The object's address, for identity comparisons.
    pub fn as_ptr(&self) -> *const File {
        self.0.as_ptr()
    }

    /// Whether two handles refer to the same object.
    pub fn ptr_eq(a: &FileRef, b: &FileRef) -> bool {
        a.0 == b.0
    }

    /// Drops the reference, running a final release right here instead of
    /// deferring it (`__fput_sync`, what close(2) does with seed 000).
    pub fn put_sync(self) {
        let f = self.into_raw();
        // SAFETY: we owned one reference.
        if unsafe { f.as_ref() }.dec_and_test() {
            // SAFETY: that was the last reference.
            unsafe { release(f) };
        }
    }

    /// Cleans up after an open that failed (`fput_badopen`). With
    /// `immediate` (seed 001) a never-opened file is freed at once, skipping
    /// the release machinery; otherwise it takes the ordinary deferred put.
    fn put_badopen(self, immediate: bool) {
        if !immediate || self.mode() & FMODE_OPENED != 0 {
            drop(self);
            return;
        }
        let f = self.into_raw();
        // The decrement is atomic: a stale lockless lookup may hold a
        // temporary reference to this object and put it later.
        // SAFETY: we owned one reference.
        if unsafe { f.as_ref() }.dec_and_test() {
            // SAFETY: last reference; the file was never opened, so there is
            // no release hook to run, only the owner handle to drop.
            unsafe { free(f) };
        }
    }

    /// Sets the owner's operations during an open.
    ///
    /// # Safety
    /// The file is not yet published (the opener's only handle).
    unsafe fn set_ops(&self, ops: Option<Arc<dyn FileOps>>) {
        // SAFETY: unpublished, so no reader of `ops` exists; stale lookups
        // touch only the count.
        let old = self.ops.with_mut(|o| unsafe { ptr::replace(o, ops) });
        drop(old);
    }

    /// Sets the dentry during an open.
    ///
    /// # Safety
    /// As for [`set_ops`](Self::set_ops).
    unsafe fn set_path(&self, d: DentryRef) {
        // SAFETY: unpublished, see `set_ops`.
        let old = self.path.with_mut(|p| unsafe { ptr::replace(p, Some(d)) });
        drop(old);
    }

    /// Changes the mode bits during an open.
    ///
    /// # Safety
    /// As for [`set_ops`](Self::set_ops).
    unsafe fn set_mode(&self, mode: u32) {
        // SAFETY: unpublished, see `set_ops`.
        self.mode.with_mut(|m| unsafe { *m = mode });
    }
}

impl Deref for FileRef {
    type Target = File;
    #[inline]
    fn deref(&self) -> &File {
        // SAFETY: we hold a reference, so the object is live.
        unsafe { self.0.as_ref() }
    }
}

impl Clone for FileRef {
    fn clone(&self) -> FileRef {
        self.get();
        FileRef(self.0)
    }
}

impl Drop for FileRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we hold a reference.
        if unsafe { self.0.as_ref() }.dec_and_test() {
            // SAFETY: the count reached zero: we own the file, it is on no
            // queue, and it lives until its release runs.
            unsafe { task_work::add(NonNull::from(&self.0.as_ref().work)) };
        }
    }
}

impl fmt::Debug for FileRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// The final release (`__fput`): the owner's hook if the file was opened,
/// then the object goes back to its allocator.
///
/// # Safety
/// The count is zero and the caller owns the object.
pub(crate) unsafe fn release(f: NonNull<File>) {
    // SAFETY: per the contract the object is live and ours.
    let file = unsafe { f.as_ref() };
    if file.mode() & FMODE_OPENED != 0 {
        // `locks_remove_file`: the file's OFD and flock locks go with it.
        if file.mode() & FMODE_PATH == 0
            && let Some(ctx) = file.lock_context()
        {
            ctx.remove_file(file.lock_key());
        }
        if file.mode() & FMODE_COUNTED != 0
            && !file.uncount_lazy()
            && let Some(inode) = file.dentry().and_then(|d| d.inode())
        {
            inode.opens.put(file.mode() & FMODE_WRITE != 0);
        }
        if let Some(ops) = file.ops() {
            ops.release(file);
        }
    }
    // SAFETY: as above.
    unsafe { free(f) };
}

/// Drops the owner handle and returns the object to its allocator.
///
/// # Safety
/// As for [`release`].
unsafe fn free(f: NonNull<File>) {
    // SAFETY: per the contract no one else reads `ops` now.
    let ops = unsafe { f.as_ref() }
        .ops
        .with_mut(|o| unsafe { (*o).take() });
    drop(ops);
    // SAFETY: as above.
    let path = unsafe { f.as_ref() }
        .path
        .with_mut(|p| unsafe { (*p).take() });
    drop(path);
    // SAFETY: as above.
    unsafe { f.as_ref() }
        .cred_id
        .with_mut(|c| unsafe { *c = 0 });
    // A failed open undoes its lazy count itself; this keeps a free object
    // from ever counting as an open.
    // SAFETY: as above.
    unsafe { f.as_ref() }.uncount_lazy();
    // SAFETY: as above.
    match unsafe { f.as_ref() }.pool {
        // SAFETY: pooled objects go back to the pool they came from.
        Some(pool) => unsafe { pool.free(f) },
        // SAFETY: heap objects came from `Box::into_raw`; lookups of such
        // files run pinned, so the grace period covers them.
        None => unsafe { reclaim::defer_drop_box(f) },
    }
}

/// The deferred release of a file whose count reached zero: the
/// function of its [`Callback`].
///
/// # Safety
/// `cb` is the `work` field of a file the caller owns (count zero, last
/// reference handed over).
unsafe fn release_work(cb: NonNull<Callback>) {
    // SAFETY: `cb` is a `File`'s `work` field (the contract), so stepping
    // back by the field's offset gives the file (`container_of`).
    let f = unsafe { cb.byte_sub(std::mem::offset_of!(File, work)) }.cast::<File>();
    // SAFETY: the caller owned the last reference, as `release` requires.
    unsafe { release(f) };
}

/// A file object being opened: allocated, in no fd table yet. Its holder
/// is the only one that reads or writes its fields (a lockless lookup that
/// reaches the recycled object through a stale slot touches only the count,
/// and fails inc-not-zero or the slot re-check), so setting them is safe
/// through this type; [`publish`](Self::publish) hands the file on as an
/// ordinary [`FileRef`], after which they are fixed.
pub(crate) struct UnpublishedFile(FileRef);

impl UnpublishedFile {
    /// Sets the owner's operations (flush and release hooks).
    pub(crate) fn set_ops(&mut self, ops: Arc<dyn FileOps>) {
        // SAFETY: unpublished: `self` is the only handle (see the type).
        unsafe { self.0.set_ops(Some(ops)) };
    }

    /// Sets the dentry the file is opened through.
    pub(crate) fn set_path(&mut self, d: DentryRef) {
        // SAFETY: as in `set_ops`.
        unsafe { self.0.set_path(d) };
    }

    /// Replaces the `FMODE_*` bits.
    pub(crate) fn set_mode(&mut self, mode: u32) {
        // SAFETY: as in `set_ops`.
        unsafe { self.0.set_mode(mode) };
    }

    /// Records the identity of the opener's credentials (`f_cred`).
    pub(crate) fn set_cred_id(&mut self, id: u64) {
        // SAFETY: unpublished: `self` is the only handle (see the type).
        self.0.cred_id.with_mut(|c| unsafe { *c = id });
    }

    /// The file, now to be installed in a table: its fields are fixed.
    pub(crate) fn publish(self) -> FileRef {
        self.0
    }

    /// Cleans up after the open failed (`fput_badopen`).
    pub(crate) fn put_badopen(self, immediate: bool) {
        self.0.put_badopen(immediate);
    }
}

impl Deref for UnpublishedFile {
    type Target = File;
    #[inline]
    fn deref(&self) -> &File {
        &self.0
    }
}

/// `alloc_empty_file`: a fresh file object with one reference, from the
/// type-stable `pool` (`typesafe_files`) or, given none, the heap.
pub(crate) fn alloc_empty_file(
    pool: Option<&'static FilePool>,
    flags: i32,
    mode: u32,
) -> Result<UnpublishedFile, Errno> {
    let f = match pool {
        Some(pool) => pool.alloc(flags, mode)?,
        None => alloc_heap(flags, mode)?,
    };
    Ok(UnpublishedFile(f))
}

/// Allocates a heap (grace-period) file object with one reference.
pub(crate) fn alloc_heap(flags: i32, mode: u32) -> Result<FileRef, Errno> {
    let b = reclaim::try_box(File::empty(None)).ok_or(Errno::ENOMEM)?;
    let f = NonNull::from(Box::leak(b));
    // SAFETY: fresh object, ours alone.
    Ok(unsafe { File::init(f, flags, mode) })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn file_object_fits_two_cache_lines() {
        // The memory target is at most 128 bytes per file object.
        assert!(std::mem::size_of::<File>() <= 128);
        assert_eq!(std::mem::align_of::<File>(), 64);
    }
}
