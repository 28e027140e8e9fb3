//! The fd table (`files_struct` + `fdtable`): which fd numbers are open,
//! reserved or close-on-exec, and which file each open fd refers to.
//!
//! Writers (allocation, install bookkeeping, close, dup2, growth) serialize
//! on one lock per table, as in Linux; lookups take no lock and write nothing
//! shared but the file's reference count. Unlike Linux, a table with a
//! single user (one thread) is written without the lock when
//! `FastPaths::fd_single_user` is on: reserve, close and dup through the
//! thread's handle, which proves that no other thread can reach the table
//! (see `Files`, in `fdtable/files.rs`, for the argument and the hand-overs). Like Linux's `files->file_lock`
//! the lock spins (then parks: `primitive::spin::SpinMutex`); its critical
//! sections are a few dozen instructions, and a sleeping mutex turned
//! contention between threads into futex system calls. The bitmaps of the
//! first 64 fds share the lock's cache line, so an allocation or a close
//! moves one line of writer state between CPUs.
//!
//! Allocation is Linux's: the lowest free fd at or above a start, found over
//! `open_fds` with the second-level `full_fds_bits` (one bit per full word)
//! and the `next_fd` hint; growth by powers of two up to RLIMIT_NOFILE
//! (`EMFILE` beyond it, and beyond [`NR_OPEN`](crate::uapi::NR_OPEN)).
//!
//! One deliberate difference in representation: the slot array is
//! *segmented*. Linux grows by allocating a bigger flat array, copying the
//! slots and publishing it, which forces `fd_install` to detect a concurrent
//! resize and old arrays to be reclaimed after a grace period. Here slots
//! live in chunks of 64, 64, 128, 256, … slots that never move: growth only
//! publishes a new chunk, so an install is one release store, a lookup is
//! never broken by growth, and nothing needs reclaiming. The chunk holding
//! an fd is found with one `ilog2`, branch-free, so the seed-003 masked
//! lookup keeps its shape: mask, one chunk load, one slot load, mask.

use crate::errno::Errno;
use crate::fastpaths::FastPaths;
use crate::file_table::{File, FileRef};
use crate::nospec;
use crate::primitive::hint::retry_wait;
use crate::primitive::spin::{SpinGuard, SpinMutex};
use crate::primitive::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use crate::{reclaim, uapi};
use crossbeam_utils::CachePadded;
use std::ptr::{self, NonNull};

/// Slots in the first chunk (Linux's `NR_OPEN_DEFAULT`, one bitmap word).
pub const NR_OPEN_DEFAULT: usize = 64;
const BASE_SHIFT: u32 = NR_OPEN_DEFAULT.trailing_zeros();
/// Chunk pointers in a table: enough for 64 << 31 fds, far past `NR_OPEN`.
const NR_CHUNKS: usize = 32;
const WORD: usize = u64::BITS as usize;

type Slot = AtomicPtr<File>;

/// The chunk holding `fd` and the offset in it: chunk 0 holds fds 0..64,
/// chunk k ≥ 1 holds 64<<(k-1) .. 64<<k. Branch-free.
#[inline(always)]
fn chunk_of(fd: usize) -> (usize, usize) {
    let l = (fd | (NR_OPEN_DEFAULT - 1)).ilog2();
    let k = (l + 1 - BASE_SHIFT) as usize;
    let base = (1usize << l) & !(NR_OPEN_DEFAULT - 1);
    (k, fd - base)
}

/// Slots in chunk `k`.
const fn chunk_len(k: usize) -> usize {
    if k == 0 {
        NR_OPEN_DEFAULT
    } else {
        NR_OPEN_DEFAULT << (k - 1)
    }
}

/// `Vec::try_reserve_exact` with its failure as `ENOMEM` (what Linux's
/// `expand_files` returns when it cannot allocate). Unit tests can make it
/// fail ([`alloc_fail`]).
fn try_reserve<T>(v: &mut Vec<T>, n: usize) -> Result<(), Errno> {
    #[cfg(all(test, not(loom)))]
    if alloc_fail::now() {
        return Err(Errno::ENOMEM);
    }
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)
}

/// A test-only allocation-failure hook: `fail_nth(n)` makes the `n`th
/// following table allocation of this thread fail (1-based).
#[cfg(all(test, not(loom)))]
mod alloc_fail {
    use std::cell::Cell;

    // std's thread-local, not the facade's: a unit test's hook for its own
    // OS thread, not state any model is about (and loom builds leave it out).
    std::thread_local! {
        static COUNTDOWN: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn fail_nth(n: usize) {
        COUNTDOWN.with(|c| c.set(n));
    }

    pub(super) fn now() -> bool {
        COUNTDOWN.with(|c| match c.get() {
            0 => false,
            1 => {
                c.set(0);
                true
            }
            n => {
                c.set(n - 1);
                false
            }
        })
    }

    /// Whether the requested failure is still pending (not reached).
    pub(super) fn pending() -> bool {
        COUNTDOWN.with(|c| c.get() != 0)
    }
}

fn words(bits: usize) -> usize {
    bits.div_ceil(WORD)
}

/// First clear bit at or after `start` and below `size`, or `size`.
fn find_next_zero_bit(map: &[u64], size: usize, start: usize) -> usize {
    find_next(map, size, start, true)
}

/// First set bit at or after `start` and below `size`, or `size`.
fn find_next_bit(map: &[u64], size: usize, start: usize) -> usize {
    find_next(map, size, start, false)
}

fn find_next(map: &[u64], size: usize, start: usize, zero: bool) -> usize {
    if start >= size {
        return size;
    }
    let flip = if zero { !0u64 } else { 0 };
    let mut w = start / WORD;
    let mut word = (map[w] ^ flip) & (!0u64 << (start % WORD));
    loop {
        if word != 0 {
            return (w * WORD + word.trailing_zeros() as usize).min(size);
        }
        w += 1;
        if w * WORD >= size {
            return size;
        }
        word = map[w] ^ flip;
    }
}

fn test_bit(map: &[u64], bit: usize) -> bool {
    map[bit / WORD] & (1 << (bit % WORD)) != 0
}

fn set_bit(map: &mut [u64], bit: usize) {
    map[bit / WORD] |= 1 << (bit % WORD);
}

fn clear_bit(map: &mut [u64], bit: usize) {
    map[bit / WORD] &= !(1 << (bit % WORD));
}

/// The writer side, under the table lock.
///
/// Sized to share one cache line with the lock word (see
/// [`SpinMutex`]): while the table has its first [`NR_OPEN_DEFAULT`] fds
/// (the common case, like Linux's `open_fds_init` and friends embedded in
/// `files_struct`), the three bitmaps are one word each, inline, so a
/// critical section of an allocation or a close moves that one line between
/// CPUs and nothing else of the table's writer state. Growth moves all three
/// into one heap block, `open_fds | close_on_exec | full_fds_bits`.
#[derive(Debug)]
struct Bitmaps {
    max_fds: usize,
    next_fd: usize,
    /// `open_fds`, `close_on_exec`, `full_fds_bits` while `max_fds` is at
    /// most [`NR_OPEN_DEFAULT`].
    small: [u64; 3],
    /// The three bitmaps once grown: `words(max_fds)` words each for the
    /// first two, `words(words(max_fds))` for the last; empty before.
    big: Box<[u64]>,
}

/// The three bitmaps, borrowed.
struct Maps<'a> {
    open: &'a [u64],
    cloexec: &'a [u64],
    full: &'a [u64],
}

/// The three bitmaps, borrowed mutably.
struct MapsMut<'a> {
    open: &'a mut [u64],
    cloexec: &'a mut [u64],
    full: &'a mut [u64],
}

impl Bitmaps {
    fn empty() -> Bitmaps {
        Bitmaps {
            max_fds: 0,
            next_fd: 0,
            small: [0; 3],
            big: Box::new([]),
        }
    }

    #[inline(always)]
    fn maps(&self) -> Maps<'_> {
        if self.big.is_empty() {
            let [open, cloexec, full] = &self.small;
            return Maps {
                open: std::slice::from_ref(open),
                cloexec: std::slice::from_ref(cloexec),
                full: std::slice::from_ref(full),
            };
        }
        let w = words(self.max_fds);
        let (open, rest) = self.big.split_at(w);
        let (cloexec, full) = rest.split_at(w);
        Maps {
            open,
            cloexec,
            full,
        }
    }

    #[inline(always)]
    fn maps_mut(&mut self) -> MapsMut<'_> {
        if self.big.is_empty() {
            let [open, cloexec, full] = &mut self.small;
            return MapsMut {
                open: std::slice::from_mut(open),
                cloexec: std::slice::from_mut(cloexec),
                full: std::slice::from_mut(full),
            };
        }
        let w = words(self.max_fds);
        let (open, rest) = self.big.split_at_mut(w);
        let (cloexec, full) = rest.split_at_mut(w);
        MapsMut {
            open,
            cloexec,
            full,
        }
    }

    fn open_fds(&self) -> &[u64] {
        self.maps().open
    }

    fn close_on_exec(&self) -> &[u64] {
        self.maps().cloexec
    }

    fn close_on_exec_mut(&mut self) -> &mut [u64] {
        self.maps_mut().cloexec
    }

    fn is_open(&self, fd: usize) -> bool {
        fd < self.max_fds && test_bit(self.open_fds(), fd)
    }

    fn set_open(&mut self, fd: usize) {
        let m = self.maps_mut();
        set_bit(m.open, fd);
        let w = fd / WORD;
        if m.open[w] == !0 {
            set_bit(m.full, w);
        }
    }

    /// `__clear_open_fd`: the seed clears `full_fds_bits` only when set, the
    /// stock path always writes it.
    fn clear_open(&mut self, fd: usize, fast: bool) {
        let m = self.maps_mut();
        clear_bit(m.open, fd);
        let w = fd / WORD;
        if fast {
            if test_bit(m.full, w) {
                clear_bit(m.full, w);
            }
        } else {
            clear_bit(m.full, w);
        }
    }

    fn put_unused(&mut self, fd: usize, fast: bool) {
        self.clear_open(fd, fast);
        if fd < self.next_fd {
            self.next_fd = fd;
        }
    }

    fn set_cloexec(&mut self, fd: usize, on: bool) {
        let cloexec = self.close_on_exec_mut();
        if on {
            set_bit(cloexec, fd);
        } else if test_bit(cloexec, fd) {
            clear_bit(cloexec, fd);
        }
    }

    /// `find_next_fd`, for `start < max_fds`. With the seed, the open_fds
    /// word holding `start` is searched first and the second level is not
    /// touched when it has a free bit.
    fn find_next_fd(&self, start: usize, fast: bool) -> usize {
        let maxfd = self.max_fds;
        let m = self.maps();
        let bitbit = start / WORD;
        if fast {
            let free = !m.open[bitbit] & (!0u64 << (start % WORD));
            if free != 0 {
                return bitbit * WORD + free.trailing_zeros() as usize;
            }
        }
        let bitbit = find_next_zero_bit(m.full, words(maxfd), bitbit) * WORD;
        if bitbit >= maxfd {
            return maxfd;
        }
        find_next_zero_bit(m.open, maxfd, start.max(bitbit))
    }

    /// Grows the bitmaps to cover `new_max` fds and sets `max_fds`;
    /// all-or-nothing.
    fn grow(&mut self, new_max: usize) -> Result<(), Errno> {
        if new_max <= NR_OPEN_DEFAULT {
            self.max_fds = self.max_fds.max(new_max);
            return Ok(());
        }
        let (w, fw) = (words(new_max), words(words(new_max)));
        let mut big: Vec<u64> = Vec::new();
        try_reserve(&mut big, 2 * w + fw)?;
        let old = self.maps();
        for (map, len) in [(old.open, w), (old.cloexec, w), (old.full, fw)] {
            let keep = map.len().min(len);
            big.extend_from_slice(&map[..keep]);
            big.resize(big.len() + len - keep, 0);
        }
        self.big = big.into_boxed_slice();
        self.max_fds = new_max;
        Ok(())
    }
}

/// A process's fd table, shared by its threads.
pub struct FdTable {
    /// The table's identity as the owner of POSIX record locks (Linux's
    /// `fl_owner`, the `files_struct`): unique for the life of the library,
    /// so a new table never inherits an old one's locks.
    id: u64,
    max_fds: AtomicUsize,
    /// Threads (handles) using the table, Linux's `files->count`; when it is
    /// one, lookups may skip the reference count (`fdget` light).
    users: AtomicUsize,
    masked: bool,
    alloc_fast: bool,
    typesafe: bool,
    /// `fd_single_user`: a handle that is the only user writes without the
    /// lock (see [`Files`]).
    single: bool,
    chunks: [AtomicPtr<Slot>; NR_CHUNKS],
    inner: CachePadded<SpinMutex<Bitmaps>>,
}

/// A reserved fd (`get_unused_fd_flags` done, `fd_install` not yet): the
/// number is taken, lookups see no file. Install a file with
/// [`install`](Self::install); dropping the reservation frees the number
/// (`put_unused_fd`).
#[must_use = "a reserved fd is released when dropped"]
pub struct ReservedFd<'t> {
    table: &'t FdTable,
    fd: u32,
}

impl ReservedFd<'_> {
    /// The reserved number.
    pub fn fd(&self) -> u32 {
        self.fd
    }

    /// Publishes `file` at the reserved fd (`fd_install`) and returns the fd.
    /// `EINVAL` if the file was allocated under another file-memory mode
    /// than the table's (it belongs to another [`Vfs`](crate::Vfs)); the file
    /// is then put and the reservation released.
    pub fn install(self, file: FileRef) -> Result<u32, Errno> {
        if file.is_typesafe() != self.table.typesafe {
            return Err(Errno::EINVAL);
        }
        let fd = self.fd;
        let table = self.table;
        std::mem::forget(self);
        // The reservation keeps fd below max_fds (tables never shrink), and
        // chunks never move, so this store cannot race a resize.
        let slot = table.slot(fd as usize);
        debug_assert!(
            slot.load(Ordering::Relaxed).is_null(),
            "fd_install over an installed file"
        );
        slot.store(file.into_raw().as_ptr(), Ordering::Release);
        Ok(fd)
    }
}

impl Drop for ReservedFd<'_> {
    fn drop(&mut self) {
        let mut g = self.table.lock();
        g.put_unused(self.fd as usize, self.table.alloc_fast);
    }
}

/// A file found by [`FdTable::fdget`]: borrowed when the table is not shared
/// (no reference taken), counted otherwise.
pub enum FdRef<'a> {
    /// The table's own reference is borrowed.
    Borrowed(&'a File),
    /// A reference was taken.
    Counted(FileRef),
}

impl std::ops::Deref for FdRef<'_> {
    type Target = File;
    fn deref(&self) -> &File {
        match self {
            FdRef::Borrowed(f) => f,
            FdRef::Counted(f) => f,
        }
    }
}

mod files;
pub(crate) use files::Files;

impl FdTable {
    /// An empty table with room for [`NR_OPEN_DEFAULT`] fds and one user.
    pub fn new(fast: &FastPaths) -> Result<FdTable, Errno> {
        // Only uniqueness matters: a plain std counter, not a model point.
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let t = FdTable {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            max_fds: AtomicUsize::new(0),
            users: AtomicUsize::new(1),
            masked: fast.fget_masked,
            alloc_fast: fast.alloc_fd_fast,
            typesafe: fast.typesafe_files,
            single: fast.fd_single_user,
            chunks: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            inner: CachePadded::new(SpinMutex::new(Bitmaps::empty())),
        };
        {
            let mut g = t.lock();
            t.expand_locked(&mut g, 0)?;
        }
        Ok(t)
    }

    fn lock(&self) -> SpinGuard<'_, Bitmaps> {
        self.inner.lock()
    }

    /// The slot for `fd`.
    #[inline(always)]
    fn slot(&self, fd: usize) -> &Slot {
        let (k, off) = chunk_of(fd);
        let chunk = self.chunks[k & (NR_CHUNKS - 1)].load(Ordering::Acquire);
        // Under loom a publication-order bug must fail the model, not crash it.
        #[cfg(loom)]
        assert!(
            !chunk.is_null() && off < chunk_len(k),
            "chunk {k} not published"
        );
        debug_assert!(!chunk.is_null() && off < chunk_len(k));
        // SAFETY: every caller passes an fd below a `max_fds` it loaded with
        // acquire (or read under the lock); chunks are published before
        // `max_fds` covers them and live as long as the table, and `off` is
        // within chunk `k` by construction of `chunk_of`.
        unsafe { &*chunk.add(off) }
    }

    /// The table's id as a lock owner (see the field).
    pub fn lock_owner(&self) -> u64 {
        self.id
    }

    /// Whether `fd` holds `file` right now, read under the table's lock
    /// (the re-check after setting a record lock, which must be ordered
    /// with a concurrent close: see `FileLockContext::remove_posix`).
    pub(crate) fn holds(&self, fd: i32, file: &File) -> bool {
        let g = self.lock();
        let fd = fd as u32 as usize;
        fd < g.max_fds && ptr::eq(self.slot(fd).load(Ordering::Acquire), file)
    }

    /// Slots currently allocated (`fdt->max_fds`).
    pub fn max_fds(&self) -> usize {
        self.max_fds.load(Ordering::Acquire)
    }

    /// Grows the table so that `nr` is a valid index (`expand_files`).
    /// All-or-nothing, as Linux's `expand_fdtable` (which allocates the new
    /// table first and keeps the old one on failure): every chunk and the
    /// bitmaps are allocated, fallibly, before anything changes, so an
    /// allocation failure returns `ENOMEM` with the table as it was, even
    /// when the growth spans several chunks.
    fn expand_locked(&self, g: &mut Bitmaps, nr: usize) -> Result<(), Errno> {
        if nr < g.max_fds && g.max_fds != 0 {
            return Ok(());
        }
        if nr as u64 >= uapi::NR_OPEN {
            return Err(Errno::EMFILE);
        }
        let first = if g.max_fds == 0 {
            0
        } else {
            chunk_of(g.max_fds).0
        };
        let last = chunk_of(nr).0;
        let mut fresh: Vec<Vec<Slot>> = Vec::new();
        try_reserve(&mut fresh, last + 1 - first)?;
        for k in first..=last {
            let len = chunk_len(k);
            let mut chunk: Vec<Slot> = Vec::new();
            try_reserve(&mut chunk, len)?;
            chunk.extend((0..len).map(|_| AtomicPtr::new(ptr::null_mut())));
            fresh.push(chunk);
        }
        let new_max = NR_OPEN_DEFAULT << last;
        g.grow(new_max)?;
        for (k, chunk) in (first..).zip(fresh) {
            // The capacity is exact: no reallocation here.
            let raw = Box::into_raw(chunk.into_boxed_slice()).cast::<Slot>();
            self.chunks[k].store(raw, Ordering::Release);
        }
        self.max_fds.store(new_max, Ordering::Release);
        Ok(())
    }

    /// Reserves the lowest free fd in `start..end` (`alloc_fd`); `end` is the
    /// caller's RLIMIT_NOFILE. `EMFILE` when there is none.
    pub fn alloc_fd(&self, start: u32, end: u64, cloexec: bool) -> Result<ReservedFd<'_>, Errno> {
        let fd = self.alloc_fd_in(&mut self.lock(), start, end, cloexec)?;
        Ok(ReservedFd { table: self, fd })
    }

    /// [`alloc_fd`](Self::alloc_fd) by the table's only user, without the
    /// lock; returns the reserved number.
    ///
    /// # Safety
    /// No other thread accesses the table while this runs, and every
    /// earlier write of another thread happens before this call (see
    /// [`SpinMutex::with_unlocked`]): the caller is the table's only user,
    /// as [`Files`] establishes.
    #[inline]
    unsafe fn alloc_fd_single(&self, start: u32, end: u64, cloexec: bool) -> Result<u32, Errno> {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            self.inner
                .with_unlocked(|g| self.alloc_fd_in(g, start, end, cloexec))
        }
    }

    /// The body of `alloc_fd` on the writer state `g`, held exclusively.
    #[inline(always)]
    fn alloc_fd_in(
        &self,
        g: &mut Bitmaps,
        start: u32,
        end: u64,
        cloexec: bool,
    ) -> Result<u32, Errno> {
        let start = start as usize;
        let mut fd = start.max(g.next_fd);
        if fd < g.max_fds {
            fd = g.find_next_fd(fd, self.alloc_fast);
        }
        if fd as u64 >= end {
            return Err(Errno::EMFILE);
        }
        self.expand_locked(g, fd)?;
        if start <= g.next_fd {
            g.next_fd = fd + 1;
        }
        g.set_open(fd);
        g.set_cloexec(fd, cloexec);
        Ok(fd as u32)
    }

    /// The lowest free fd below `rlimit` (`get_unused_fd_flags`).
    pub fn get_unused_fd(&self, cloexec: bool, rlimit: u64) -> Result<ReservedFd<'_>, Errno> {
        self.alloc_fd(0, rlimit, cloexec)
    }

    /// The masked, branch-free raw lookup of seed 003: returns the slot's
    /// file (null for an invalid fd) and the slot it came from.
    #[inline(always)]
    fn lookup_masked(&self, fd: u32) -> (*mut File, &Slot) {
        let max = self.max_fds.load(Ordering::Acquire);
        let mask = nospec::index_mask(fd as usize, max);
        let slot = self.slot(fd as usize & mask);
        let f = slot.load(Ordering::Acquire);
        (f.map_addr(|a| a & mask), slot)
    }

    /// The branching raw lookup of the stock kernel: bounds check, then a
    /// speculation-clamped index.
    #[inline(always)]
    fn lookup_branchy(&self, fd: u32) -> Option<&Slot> {
        let max = self.max_fds.load(Ordering::Acquire);
        if fd as usize >= max {
            return None;
        }
        Some(self.slot(nospec::clamp_index(fd as usize, max)))
    }

    /// A counted lookup (`fget_raw`): lockless, never blocked by writers.
    /// Takes `fd` as the syscall's signed int; negative values are invalid.
    #[inline]
    pub fn get(&self, fd: i32) -> Option<FileRef> {
        self.get_mask(fd, 0)
    }

    /// A counted lookup refusing files whose mode has any bit of `mask`
    /// (`__fget(fd, mask)`; `fget` refuses `FMODE_PATH`).
    #[inline]
    pub fn get_mask(&self, fd: i32, mask: u32) -> Option<FileRef> {
        // Heap files are freed after a grace period: stay pinned while the
        // pointer loaded from the slot is dereferenced.
        let _pin = (!self.typesafe).then(reclaim::pin);
        let f = if self.masked {
            self.fget_masked(fd as u32)
        } else {
            self.fget_stock(fd as u32)
        }?;
        if f.mode() & mask != 0 {
            return None;
        }
        Some(f)
    }

    /// Seed 003's `__fget_files_rcu`: masked load, inc-not-zero, re-check.
    #[inline(always)]
    fn fget_masked(&self, fd: u32) -> Option<FileRef> {
        loop {
            let (f, slot) = self.lookup_masked(fd);
            let f = NonNull::new(f)?;
            // SAFETY: `f` was loaded from a slot, so it is a file object:
            // pooled objects stay files for the pool's ('static) life, heap
            // objects outlive our pin. Only the count is touched until the
            // re-check below validates it.
            if !unsafe { f.as_ref() }.inc_not_zero() {
                retry_wait();
                continue;
            }
            // SAFETY: the increment gave us a reference.
            let file = unsafe { FileRef::from_raw(f) };
            if slot.load(Ordering::Acquire) != f.as_ptr() {
                drop(file);
                continue;
            }
            return Some(file);
        }
    }

    /// The stock path: branching lookup, then the generic
    /// `__get_file_rcu(slot)` helper (load, null check, inc-not-zero, reload
    /// and compare, retry).
    #[inline(never)]
    fn fget_stock(&self, fd: u32) -> Option<FileRef> {
        loop {
            let slot = self.lookup_branchy(fd)?;
            match get_file_rcu(slot) {
                Ok(f) => return f,
                Err(()) => retry_wait(),
            }
        }
    }

    /// The file at `fd` without taking a reference (`files_lookup_fd_raw`).
    ///
    /// # Safety
    /// The caller guarantees no one closes or replaces `fd` while the borrow
    /// lives: it is the table's only user and does not close it itself.
    #[inline]
    pub unsafe fn lookup_borrowed(&self, fd: i32) -> Option<&File> {
        let f = if self.masked {
            self.lookup_masked(fd as u32).0
        } else {
            self.lookup_branchy(fd as u32)?.load(Ordering::Acquire)
        };
        // SAFETY: the slot holds a reference that, per the contract, stays
        // in place while the borrow lives.
        NonNull::new(f).map(|f| unsafe { &*f.as_ptr() })
    }

    /// `fdget`: a borrowed lookup when this table has a single user, a
    /// counted one otherwise; refuses files whose mode has a bit of `mask`.
    ///
    /// # Safety
    /// The caller is one of the table's users and does not close or replace
    /// `fd` while the result lives. `Files::fdget` (crate-internal) is the
    /// safe form, for a handle that is one registered user.
    #[inline]
    pub unsafe fn fdget(&self, fd: i32, mask: u32) -> Option<FdRef<'_>> {
        if self.users.load(Ordering::Acquire) == 1 {
            // SAFETY: a single user, which per the contract is the caller and
            // keeps `fd` in place.
            let f = unsafe { self.lookup_borrowed(fd) }?;
            (f.mode() & mask == 0).then_some(FdRef::Borrowed(f))
        } else {
            self.get_mask(fd, mask).map(FdRef::Counted)
        }
    }

    /// Whether `fd` has a file installed (racy; for `dup2(fd, fd)`).
    fn has_file(&self, fd: i32) -> bool {
        // Only the slot is read, never the file: no pin needed.
        match self.lookup_branchy(fd as u32) {
            Some(slot) => !slot.load(Ordering::Acquire).is_null(),
            None => false,
        }
    }

    /// Removes the file at `fd` and frees the number (`file_close_fd` /
    /// `pick_file`), handing the table's reference to the caller, who
    /// flushes and puts it. `EBADF` for a negative, out-of-range, free or
    /// reserved-but-not-installed fd.
    pub fn close(&self, fd: i32) -> Result<FileRef, Errno> {
        let mut g = self.lock();
        self.pick_locked(&mut g, fd as u32 as usize)
            .ok_or(Errno::EBADF)
    }

    /// [`close`](Self::close) by the table's only user, without the lock
    /// and without a read-modify-write of the slot.
    ///
    /// # Safety
    /// As for [`alloc_fd_single`](Self::alloc_fd_single): no other thread
    /// accesses the table, lookups included, while this runs.
    #[inline]
    unsafe fn close_single(&self, fd: i32) -> Result<FileRef, Errno> {
        let fd = fd as u32 as usize;
        // SAFETY: forwarded from the caller's contract.
        let f = unsafe {
            self.inner.with_unlocked(|g| {
                if fd >= g.max_fds {
                    return None;
                }
                // No other thread loads the slot: a load and a store do
                // what the shared path's swap does.
                let slot = self.slot(fd);
                let f = NonNull::new(slot.load(Ordering::Relaxed))?;
                slot.store(ptr::null_mut(), Ordering::Relaxed);
                g.put_unused(fd, self.alloc_fast);
                Some(f)
            })
        }
        .ok_or(Errno::EBADF)?;
        // SAFETY: the slot's reference moves to the caller.
        Ok(unsafe { FileRef::from_raw(f) })
    }

    fn pick_locked(&self, g: &mut Bitmaps, fd: usize) -> Option<FileRef> {
        if fd >= g.max_fds {
            return None;
        }
        // One read-modify-write takes the slot's line exclusive at once,
        // where a load then a store could move it twice under the lock.
        // Swapping null over null (a free or reserved fd) changes nothing.
        let f = NonNull::new(self.slot(fd).swap(ptr::null_mut(), Ordering::AcqRel))?;
        g.put_unused(fd, self.alloc_fast);
        // SAFETY: the slot's reference moves to the caller.
        Some(unsafe { FileRef::from_raw(f) })
    }

    /// `dup(fd)`: the lowest free fd, referring to the same file.
    pub fn dup(&self, fd: i32, rlimit: u64) -> Result<u32, Errno> {
        let file = self.get(fd).ok_or(Errno::EBADF)?;
        self.get_unused_fd(false, rlimit)?.install(file)
    }

    /// `F_DUPFD` / `F_DUPFD_CLOEXEC` of `file` (already looked up): the
    /// lowest free fd at or above `from`; `EINVAL` when `from` is at or above
    /// the limit.
    pub fn dup_from(
        &self,
        file: &File,
        from: u64,
        cloexec: bool,
        rlimit: u64,
    ) -> Result<u32, Errno> {
        if from >= rlimit {
            return Err(Errno::EINVAL);
        }
        let r = self.alloc_fd(from as u32, rlimit, cloexec)?;
        file.get();
        // SAFETY: `get` just took the reference the new slot will own.
        r.install(unsafe { FileRef::from_raw(NonNull::from(file)) })
    }

    /// `dup2(old, new)`.
    pub fn dup2(&self, old: i32, new: i32, rlimit: u64) -> Result<u32, Errno> {
        if old == new {
            return if self.has_file(old) {
                Ok(new as u32)
            } else {
                Err(Errno::EBADF)
            };
        }
        self.replace(old, new, false, rlimit)
    }

    /// `dup3(old, new, flags)`: `EINVAL` for flags other than `O_CLOEXEC` or
    /// for `old == new`.
    pub fn dup3(&self, old: i32, new: i32, flags: i32, rlimit: u64) -> Result<u32, Errno> {
        if flags & !uapi::O_CLOEXEC != 0 || old == new {
            return Err(Errno::EINVAL);
        }
        self.replace(old, new, flags & uapi::O_CLOEXEC != 0, rlimit)
    }

    /// `ksys_dup3` + `do_dup2`: makes `new` refer to `old`'s file, closing
    /// what `new` referred to. `EBUSY` when `new` is reserved by an open in
    /// progress, as in Linux.
    fn replace(&self, old: i32, new: i32, cloexec: bool, rlimit: u64) -> Result<u32, Errno> {
        let newfd = new as u32 as usize;
        if newfd as u64 >= rlimit {
            return Err(Errno::EBADF);
        }
        let tofree = {
            let mut g = self.lock();
            let grown = self.expand_locked(&mut g, newfd);
            let oldfd = old as u32 as usize;
            let file = if oldfd < g.max_fds {
                NonNull::new(self.slot(oldfd).load(Ordering::Acquire))
            } else {
                None
            };
            let Some(file) = file else {
                return Err(Errno::EBADF);
            };
            match grown {
                Err(Errno::EMFILE) => return Err(Errno::EBADF),
                Err(e) => return Err(e),
                Ok(()) => {}
            }
            let slot = self.slot(newfd);
            let tofree = slot.load(Ordering::Acquire);
            if tofree.is_null() && g.is_open(newfd) {
                return Err(Errno::EBUSY);
            }
            // SAFETY: the old slot holds a reference and we hold the lock, so
            // the file is live; we take one more for the new slot.
            unsafe { file.as_ref() }.get();
            slot.store(file.as_ptr(), Ordering::Release);
            g.set_open(newfd);
            g.set_cloexec(newfd, cloexec);
            // SAFETY: the replaced slot's reference moves to us.
            NonNull::new(tofree).map(|f| unsafe { FileRef::from_raw(f) })
        };
        if let Some(f) = tofree {
            let _ = filp_close(f, self.id);
        }
        Ok(newfd as u32)
    }

    /// Whether `fd` is close-on-exec.
    pub fn get_cloexec(&self, fd: i32) -> bool {
        let g = self.lock();
        let fd = fd as u32 as usize;
        fd < g.max_fds && test_bit(g.close_on_exec(), fd)
    }

    /// Sets or clears close-on-exec on `fd` (`F_SETFD`).
    pub fn set_cloexec(&self, fd: i32, on: bool) {
        let mut g = self.lock();
        let fd = fd as u32 as usize;
        if fd < g.max_fds {
            g.set_cloexec(fd, on);
        }
    }

    /// Closes every open fd in `first..=last` (close_range without flags),
    /// flushing and putting each file. Reserved fds are left alone.
    pub fn close_range(&self, first: u32, last: u32) {
        let mut fd = first as usize;
        loop {
            let file = {
                let mut g = self.lock();
                let end = (last as usize).min(g.max_fds.saturating_sub(1)) + 1;
                let mut found = None;
                while fd < end {
                    fd = find_next_bit(g.open_fds(), end, fd);
                    if fd >= end {
                        break;
                    }
                    let picked = self.pick_locked(&mut g, fd);
                    fd += 1;
                    if picked.is_some() {
                        found = picked;
                        break;
                    }
                }
                found
            };
            match file {
                Some(f) => {
                    let _ = filp_close(f, self.id);
                }
                None => return,
            }
        }
    }

    /// Marks `first..=last` close-on-exec (`CLOSE_RANGE_CLOEXEC`); like
    /// Linux, the bits are set for free fds too (allocation resets them).
    pub fn set_cloexec_range(&self, first: u32, last: u32) {
        let mut g = self.lock();
        let last = (last as usize).min(g.max_fds.saturating_sub(1));
        let cloexec = g.close_on_exec_mut();
        for fd in first as usize..=last {
            set_bit(cloexec, fd);
        }
    }

    /// The exec sweep (`do_close_on_exec`): closes every close-on-exec fd
    /// and clears the close-on-exec bits.
    pub fn close_on_exec(&self) {
        let mut w = 0;
        loop {
            let file = {
                let mut g = self.lock();
                let mut found = None;
                while w < g.close_on_exec().len() {
                    let set = g.close_on_exec()[w];
                    if set == 0 {
                        w += 1;
                        continue;
                    }
                    let bit = set.trailing_zeros() as usize;
                    g.close_on_exec_mut()[w] &= !(1 << bit);
                    if let Some(f) = self.pick_locked(&mut g, w * WORD + bit) {
                        found = Some(f);
                        break;
                    }
                }
                found
            };
            match file {
                Some(f) => {
                    let _ = filp_close(f, self.id);
                }
                None => return,
            }
        }
    }

    /// A copy of the table for fork or unshare (`dup_fd`): same fds, same
    /// files (one more reference each), same close-on-exec bits; fds that are
    /// reserved but not installed are free in the copy, and fds at or above
    /// `below` are not copied (close_range's punch hole).
    pub fn copy(&self, below: Option<u32>) -> Result<FdTable, Errno> {
        let fast = FastPaths {
            fget_masked: self.masked,
            alloc_fd_fast: self.alloc_fast,
            typesafe_files: self.typesafe,
            fd_single_user: self.single,
            ..FastPaths::stock()
        };
        let new = FdTable::new(&fast)?;
        let g = self.lock();
        let limit = below.map_or(g.max_fds, |b| (b as usize).min(g.max_fds));
        let old = g.maps();
        let last_open = (0..words(limit)).rev().find(|&w| old.open[w] != 0);
        let mut n = new.lock();
        if let Some(w) = last_open {
            let top = (w * WORD + (WORD - 1)).min(limit.saturating_sub(1));
            new.expand_locked(&mut n, top)?;
            let mut fd = find_next_bit(old.open, limit, 0);
            while fd < limit {
                if let Some(f) = NonNull::new(self.slot(fd).load(Ordering::Acquire)) {
                    // SAFETY: the slot holds a reference and we hold the old
                    // table's lock, so the file is live.
                    unsafe { f.as_ref() }.get();
                    new.slot(fd).store(f.as_ptr(), Ordering::Release);
                    n.set_open(fd);
                    if test_bit(old.cloexec, fd) {
                        set_bit(n.close_on_exec_mut(), fd);
                    }
                }
                fd = find_next_bit(old.open, limit, fd + 1);
            }
        }
        drop(n);
        Ok(new)
    }

    /// Adds a user (a thread sharing the table, `CLONE_FILES`). Safe: an
    /// extra user only sends [`fdget`](Self::fdget) down the counted path.
    /// Threads of a [`Process`](crate::Process) are added by its handle on
    /// the table, which also gives its user back.
    pub fn attach(&self) {
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops a user; the last one closes every fd (`put_files_struct`).
    ///
    /// # Safety
    /// The caller gives back a user it holds (the one [`new`](Self::new) or
    /// [`copy`](Self::copy) made, or one it added with
    /// [`attach`](Self::attach)) and no longer uses the table as that user.
    /// Otherwise the count could fall to one while two users remain, and a
    /// borrowed [`fdget`](Self::fdget) of one could see the other close its
    /// file.
    pub unsafe fn detach(&self) {
        if self.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close_range(0, u32::MAX);
        }
    }

    /// Threads using the table.
    pub fn users(&self) -> usize {
        self.users.load(Ordering::Acquire)
    }

    /// The open fds (installed or reserved), ascending.
    pub fn open_fds(&self) -> Vec<u32> {
        let g = self.lock();
        let mut v = Vec::new();
        let open = g.open_fds();
        let mut fd = find_next_bit(open, g.max_fds, 0);
        while fd < g.max_fds {
            v.push(fd as u32);
            fd = find_next_bit(open, g.max_fds, fd + 1);
        }
        v
    }

    /// Whether `fd` is reserved but has no file installed.
    pub fn is_reserved(&self, fd: u32) -> bool {
        let g = self.lock();
        let fd = fd as usize;
        g.is_open(fd) && self.slot(fd).load(Ordering::Acquire).is_null()
    }

    /// The allocation hint (`next_fd`).
    pub fn next_fd(&self) -> u32 {
        self.lock().next_fd as u32
    }

    /// Checks the bitmaps' internal consistency (full bits match full words,
    /// `next_fd` is at or below the lowest free fd, every installed slot is
    /// marked open). For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let g = self.lock();
        let m = g.maps();
        for (w, &word) in m.open.iter().enumerate() {
            if (word == !0) != test_bit(m.full, w) {
                return Err(format!(
                    "full_fds_bits[{w}] disagrees with open_fds word {word:#x}"
                ));
            }
        }
        let lowest_free = find_next_zero_bit(m.open, g.max_fds, 0);
        if g.next_fd > lowest_free {
            return Err(format!(
                "next_fd {} above lowest free fd {lowest_free}",
                g.next_fd
            ));
        }
        for fd in 0..g.max_fds {
            let installed = !self.slot(fd).load(Ordering::Acquire).is_null();
            if installed && !test_bit(m.open, fd) {
                return Err(format!("fd {fd} has a file but is not marked open"));
            }
        }
        Ok(())
    }
}

/// `__get_file_rcu`: the generic slot-to-file helper. `Err` asks the caller
/// to retry from the start (the file's count was zero).
#[inline(never)]
fn get_file_rcu(slot: &Slot) -> Result<Option<FileRef>, ()> {
    loop {
        let Some(f) = NonNull::new(slot.load(Ordering::Acquire)) else {
            return Ok(None);
        };
        // SAFETY: as in `fget_masked`: a slot only ever holds file objects,
        // which stay valid for the pinned or type-stable reader.
        if !unsafe { f.as_ref() }.inc_not_zero() {
            return Err(());
        }
        // SAFETY: the increment gave us a reference.
        let file = unsafe { FileRef::from_raw(f) };
        let reloaded = slot.load(Ordering::Acquire);
        if reloaded == f.as_ptr() {
            return Ok(Some(file));
        }
        drop(file);
        if reloaded.is_null() {
            return Ok(None);
        }
    }
}

/// `filp_close`: the owner's flush, the release of the record locks of the
/// table `owner` (by its id) on the file, then the (deferred) put.
pub(crate) fn filp_close(f: FileRef, owner: u64) -> Result<(), Errno> {
    let r = match f.ops() {
        Some(ops) => ops.flush(&f),
        None => Ok(()),
    };
    f.remove_posix_locks(owner);
    drop(f);
    r
}

impl Drop for FdTable {
    fn drop(&mut self) {
        // Tables dropped without their last user detaching (used directly,
        // not through a process) still put their files.
        self.close_range(0, u32::MAX);
        for (k, c) in self.chunks.iter().enumerate() {
            let p = c.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: chunk `k` came from a boxed slice of `chunk_len(k)`
                // slots, and no lookup can run on a table being dropped.
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(p, chunk_len(k))) });
            }
        }
    }
}

impl std::fmt::Debug for FdTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FdTable")
            .field("max_fds", &self.max_fds())
            .field("users", &self.users())
            .field("open", &self.open_fds())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn writer_state_shares_the_lock_line() {
        // The lock word (4 bytes, padded to 8) and the bitmaps fill one line.
        assert!(std::mem::size_of::<Bitmaps>() <= 56);
        assert_eq!(std::mem::align_of::<FdTable>() % 64, 0);
    }

    #[test]
    fn chunk_math() {
        assert_eq!(chunk_of(0), (0, 0));
        assert_eq!(chunk_of(63), (0, 63));
        assert_eq!(chunk_of(64), (1, 0));
        assert_eq!(chunk_of(127), (1, 63));
        assert_eq!(chunk_of(128), (2, 0));
        assert_eq!(chunk_of(255), (2, 127));
        assert_eq!(chunk_of(1 << 20), (15, 0));
        for fd in 0..5000usize {
            let (k, off) = chunk_of(fd);
            assert!(off < chunk_len(k), "fd {fd}");
            let start: usize = (0..k).map(chunk_len).sum();
            assert_eq!(start + off, fd);
        }
    }

    /// The table's observable state: size, open fds, close-on-exec bits.
    fn snapshot(t: &FdTable) -> (usize, Vec<u32>, Vec<bool>) {
        let open = t.open_fds();
        let cloexec = open.iter().map(|&fd| t.get_cloexec(fd as i32)).collect();
        (t.max_fds(), open, cloexec)
    }

    #[test]
    fn growth_failing_to_allocate_is_enomem_and_changes_nothing() {
        // Heap-allocated files (not the type-stable pool): `alloc_heap`.
        let fast = FastPaths {
            typesafe_files: false,
            ..FastPaths::seeds()
        };
        let t = FdTable::new(&fast).unwrap();
        // Fill the first chunk (64 fds), one of them close-on-exec.
        let mut fds = Vec::new();
        for i in 0..NR_OPEN_DEFAULT {
            let r = t.alloc_fd(0, 1 << 20, i == 7).unwrap();
            fds.push(
                r.install(crate::file_table::alloc_heap(crate::uapi::O_RDONLY, 0).unwrap())
                    .unwrap(),
            );
        }
        let before = snapshot(&t);
        assert_eq!(before.0, NR_OPEN_DEFAULT);
        // alloc_fd must grow to chunk 1: its chunk array, the chunk, then
        // the bitmaps are allocated. Fail each in turn.
        for n in 1..=3 {
            alloc_fail::fail_nth(n);
            assert_eq!(
                t.alloc_fd(0, 1 << 20, false).map(|r| r.fd()).err(),
                Some(Errno::ENOMEM),
                "allocation {n}"
            );
            assert!(!alloc_fail::pending(), "allocation {n} was reached");
            assert_eq!(snapshot(&t), before, "allocation {n}: state changed");
        }
        // dup2 to a far fd: a growth over many chunks; fail the last
        // allocation (the bitmaps) and one in the middle.
        let far = 5000;
        let chunks = chunk_of(far).0; // chunks 1..=chunks are added
        for n in [2, chunks / 2 + 1, chunks + 1, chunks + 2] {
            alloc_fail::fail_nth(n);
            assert_eq!(
                t.dup2(0, far as i32, 1 << 20),
                Err(Errno::ENOMEM),
                "dup2, allocation {n}"
            );
            assert!(!alloc_fail::pending(), "dup2: allocation {n} was reached");
            assert_eq!(snapshot(&t), before, "dup2, allocation {n}: state changed");
        }
        // Without the failure both succeed, and the table is usable.
        assert_eq!(t.dup2(0, far as i32, 1 << 20), Ok(far as u32));
        assert!(t.max_fds() > far);
        let r = t.alloc_fd(0, 1 << 20, false).unwrap();
        assert_eq!(r.fd() as usize, NR_OPEN_DEFAULT);
        drop(r);
        t.close_range(0, u32::MAX);
        assert!(t.open_fds().is_empty());
    }

    #[test]
    fn find_next_helpers() {
        let map = [!0u64, 0b1011, 0];
        assert_eq!(find_next_zero_bit(&map, 192, 0), 66);
        assert_eq!(find_next_zero_bit(&map, 66, 0), 66);
        assert_eq!(find_next_zero_bit(&map, 192, 67), 68);
        assert_eq!(find_next_bit(&map, 192, 64), 64);
        assert_eq!(find_next_bit(&map, 192, 66), 67);
        assert_eq!(find_next_bit(&map, 192, 68), 192);
        assert_eq!(find_next_bit(&map, 192, 500), 192);
    }
}

/// Loom models of the fd table's lockless lookup, allocation and release.
#[cfg(all(test, loom))]
mod loom_tests;
