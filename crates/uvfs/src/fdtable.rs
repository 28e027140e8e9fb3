//! The fd table (`files_struct` + `fdtable`): which fd numbers are open,
//! reserved or close-on-exec, and which file each open fd refers to.
//!
//! Writers (allocation, install bookkeeping, close, dup2, growth) serialize
//! on one lock per table, as in Linux; lookups take no lock and write nothing
//! shared but the file's reference count. Unlike Linux, a table with a
//! single user (one thread) is written without the lock when
//! `FastPaths::fd_single_user` is on: reserve, close and dup through the
//! thread's handle, which proves that no other thread can reach the table
//! (see `Files`, in `fdtable/files.rs`, for the argument and the hand-overs),
//! and a shared table claims and closes fds 0..63 without it
//! (`fd_bits_lockfree`, `fd_close_lockless`: `fdtable/low.rs` and
//! `fdtable/slot.rs`). Like Linux's `files->file_lock`
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
//! lookup keeps its shape: mask, one chunk load, one slot load, mask. An fd
//! below 64 (the first chunk) skips the `ilog2` behind one branch on the
//! already-masked index (about forty instructions fewer per dup + close).
//!
//! The parts, along `fs/file.c`'s lines: `bitmap` (the three bitmaps and
//! the lowest-free search), `chunks` (the slot array and its growth),
//! `alloc` (reserving a number, installing a file), `fget` (the lockless
//! lookups), `close` and `dup`; `slot` (one fd's slot and the hold a
//! lockless close takes on it), `low` (the words of fds 0..63); `files`
//! is a thread's handle on the table.
//! This file keeps the table itself: creation, copy for fork, users, the
//! close-on-exec bits, the checks.

use crate::errno::Errno;
use crate::fastpaths::FastPaths;
use crate::file_table::File;
use crate::primitive::spin::{SpinGuard, SpinMutex};
use crate::primitive::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use crossbeam_utils::CachePadded;
use std::ptr::{self, NonNull};

mod alloc;
mod bitmap;
mod chunks;
mod close;
mod dup;
mod fget;
mod files;
mod low;
mod slot;

pub use alloc::ReservedFd;
use bitmap::{Bitmaps, WORD, find_next_zero_bit, test_bit, words};
use chunks::{NR_CHUNKS, chunk_len, try_reserve};
pub use fget::FdRef;
pub(crate) use files::Files;
use slot::Slot;

/// Slots in the first chunk (Linux's `NR_OPEN_DEFAULT`, one bitmap word).
pub const NR_OPEN_DEFAULT: usize = 64;

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
    /// `cheap_pin`: the stock side's lookups (heap files) pin cheaply.
    cheap_pin: bool,
    /// `fd_single_user`: a handle that is the only user writes without the
    /// lock (see [`Files`]).
    single: bool,
    /// `fd_slot_spread`: the rotation of a slot's offset in its chunk
    /// ([`SPREAD_SHIFT`](chunks::SPREAD_SHIFT) on, 0 off; see `slot`).
    spread: u32,
    /// `fd_bits_lockfree`: fds 0..63's open and close-on-exec bits live in
    /// `low`, claimed without the lock (see `fdtable/low.rs`).
    lockfree: bool,
    /// `fd_close_lockless` (with `fd_bits_lockfree`): a close of an fd
    /// below 64 takes no lock (see `FdTable::pick_low`).
    closeless: bool,
    /// The loom models' wrong close orders (must-fail twins).
    /// (A plain std atomic: a test knob, set before the model's threads
    /// run, not state the models are about.)
    #[cfg(all(test, loom))]
    close_order: std::sync::atomic::AtomicU8,
    chunks: [AtomicPtr<Slot>; NR_CHUNKS],
    inner: CachePadded<SpinMutex<Bitmaps>>,
    low: CachePadded<low::LowWords>,
}

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
            cheap_pin: fast.cheap_pin,
            single: fast.fd_single_user,
            spread: if fast.fd_slot_spread {
                chunks::SPREAD_SHIFT
            } else {
                0
            },
            lockfree: fast.fd_bits_lockfree,
            closeless: fast.fd_close_lockless && fast.fd_bits_lockfree,
            #[cfg(all(test, loom))]
            close_order: std::sync::atomic::AtomicU8::new(CloseOrder::Right as u8),
            chunks: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            inner: CachePadded::new(SpinMutex::new(Bitmaps::empty())),
            low: CachePadded::new(low::LowWords::default()),
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

    /// The table's id as a lock owner (see the field).
    pub fn lock_owner(&self) -> u64 {
        self.id
    }

    /// Whether `fd` holds `file` right now, read under the table's lock
    /// (the re-check after setting a record lock, which must be ordered
    /// with a concurrent close: see `FileLockContext::remove_posix`). A
    /// lockless close (`fd_close_lockless`) is not excluded by the lock;
    /// the slot's load waits out its hold, and the close removes the
    /// file's record locks only after its hold, so either this sees the
    /// file gone or the close's removal sees the new lock.
    pub(crate) fn holds(&self, fd: i32, file: &File) -> bool {
        let g = self.lock();
        let fd = fd as u32 as usize;
        fd < g.max_fds && ptr::eq(self.slot(fd).load(), file)
    }

    /// Whether `fd` is close-on-exec.
    pub fn get_cloexec(&self, fd: i32) -> bool {
        let g = self.lock();
        let fd = fd as u32 as usize;
        fd < g.max_fds && self.cloexec_bit(&g, fd)
    }

    /// Sets or clears close-on-exec on `fd` (`F_SETFD`).
    pub fn set_cloexec(&self, fd: i32, on: bool) {
        let mut g = self.lock();
        let fd = fd as u32 as usize;
        if fd < g.max_fds {
            let mask = 1 << (fd % WORD);
            if on {
                self.set_cloexec_bits(&mut g, fd / WORD, mask);
            } else if self.cloexec_bit(&g, fd) {
                self.clear_cloexec_bits(&mut g, fd / WORD, mask);
            }
        }
    }

    /// Marks `first..=last` close-on-exec (`CLOSE_RANGE_CLOEXEC`); like
    /// Linux, the bits are set for free fds too (allocation resets them).
    pub fn set_cloexec_range(&self, first: u32, last: u32) {
        let mut g = self.lock();
        let last = (last as usize).min(g.max_fds.saturating_sub(1));
        for fd in first as usize..=last {
            self.set_cloexec_bits(&mut g, fd / WORD, 1 << (fd % WORD));
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
            cheap_pin: self.cheap_pin,
            fd_single_user: self.single,
            fd_slot_spread: self.spread != 0,
            fd_bits_lockfree: self.lockfree,
            fd_close_lockless: self.closeless,
            ..FastPaths::stock()
        };
        let new = FdTable::new(&fast)?;
        let g = self.lock();
        let limit = below.map_or(g.max_fds, |b| (b as usize).min(g.max_fds));
        let open_word = |w: usize| {
            if self.lockfree && w == 0 {
                self.low.open.load(Ordering::Acquire)
            } else {
                g.open_fds()[w]
            }
        };
        let last_open = (0..words(limit)).rev().find(|&w| open_word(w) != 0);
        let mut n = new.lock();
        // Slots of fds 0..63 held until the copy is done, so that it is one
        // instant for lockless closes (`fd_close_lockless`) as the lock
        // makes it for the others: a close waits for the copy, or ended
        // before the copy met its fd. Held in turn and released together,
        // never one at a time (a close of fd 3 then of fd 10 must not leave
        // the copy with 3 and without 10).
        let mut held = Vec::new();
        if let Some(w) = last_open {
            let top = (w * WORD + (WORD - 1)).min(limit.saturating_sub(1));
            new.expand_locked(&mut n, top)?;
            if self.lockfree {
                try_reserve(&mut held, WORD)?;
            }
            let mut fd = self.next_open(&g, limit, 0);
            while fd < limit {
                let f = if self.is_low(fd) {
                    self.slot(fd).hold().map(|h| {
                        let f = h.file();
                        held.push(h);
                        f
                    })
                } else {
                    // Slots from 64 on are written only under the lock.
                    NonNull::new(self.slot(fd).load())
                };
                if let Some(f) = f {
                    // SAFETY: the slot holds a reference, and no one can
                    // remove it: we hold the old table's lock, and the slot
                    // itself when a lockless close could run.
                    unsafe { f.as_ref() }.get();
                    new.slot(fd).store_excl(f.as_ptr());
                    new.mark_open(&mut n, fd);
                    if self.cloexec_bit(&g, fd) {
                        new.set_cloexec_bits(&mut n, fd / WORD, 1 << (fd % WORD));
                    }
                }
                // The must-fail twin: each slot released once copied.
                #[cfg(all(test, loom))]
                if self.close_order() == CloseOrder::CopyEach {
                    held.clear();
                }
                fd = self.next_open(&g, limit, fd + 1);
            }
        }
        drop(held);
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
        let mut fd = self.next_open(&g, g.max_fds, 0);
        while fd < g.max_fds {
            v.push(fd as u32);
            fd = self.next_open(&g, g.max_fds, fd + 1);
        }
        v
    }

    /// Whether `fd` is reserved but has no file installed.
    pub fn is_reserved(&self, fd: u32) -> bool {
        let g = self.lock();
        let fd = fd as usize;
        fd < g.max_fds && self.open_bit(&g, fd) && self.slot(fd).load().is_null()
    }

    /// The allocation hint (`next_fd`).
    pub fn next_fd(&self) -> u32 {
        self.lock().next_fd as u32
    }

    /// Checks the bitmaps' internal consistency (full bits match full words,
    /// `next_fd` is at or below the lowest free fd, every installed slot is
    /// marked open; with `fd_bits_lockfree`, the locked bitmaps' word 0 and
    /// full bit 0 stay zero and `next_fd` bounds only the fds from 64 on).
    /// For tests; exact only while no lockless allocation runs.
    pub fn check_invariants(&self) -> Result<(), String> {
        let g = self.lock();
        let m = g.maps();
        let first = if self.lockfree {
            if m.open[0] != 0 || m.cloexec[0] != 0 || test_bit(m.full, 0) {
                return Err("locked word 0 written with fd_bits_lockfree".into());
            }
            1
        } else {
            0
        };
        for (w, &word) in m.open.iter().enumerate().skip(first) {
            if (word == !0) != test_bit(m.full, w) {
                return Err(format!(
                    "full_fds_bits[{w}] disagrees with open_fds word {word:#x}"
                ));
            }
        }
        let lowest_free = find_next_zero_bit(m.open, g.max_fds, first * WORD);
        if g.next_fd > lowest_free {
            return Err(format!(
                "next_fd {} above lowest free fd {lowest_free}",
                g.next_fd
            ));
        }
        for fd in 0..g.max_fds {
            let installed = !self.slot(fd).load().is_null();
            if installed && !self.open_bit(&g, fd) && !self.settles(&g, fd) {
                return Err(format!("fd {fd} has a file but is not marked open"));
            }
        }
        Ok(())
    }

    /// Whether a file seen in `fd`'s slot without its open bit was a
    /// passing state: with `fd_close_lockless`, closes of fds 0..63 do not
    /// take the lock this check holds, so the slot can be read just before
    /// a close holds it and the bit just after that close frees the
    /// number. Re-reads until the slot is empty or the bit set again (all
    /// a close, or the next allocation, leaves), a bounded number of
    /// times; a file that stays without its bit is a real violation.
    fn settles(&self, g: &Bitmaps, fd: usize) -> bool {
        if !self.closeless || fd >= WORD {
            return false;
        }
        let mut spins = 0;
        for _ in 0..100_000 {
            if self.slot(fd).load().is_null() || self.open_bit(g, fd) {
                return true;
            }
            slot::wait(&mut spins);
        }
        false
    }
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
}

/// The order of a close's steps, for the loom models' must-fail twins.
#[cfg(all(test, loom))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CloseOrder {
    /// Hold the slot, free the number, empty the slot.
    Right,
    /// Empty the slot, then free the number (the close before the hold).
    SlotFirst,
    /// Free the number, then hold and empty the slot.
    BitFirst,
    /// Right closes; fork's copy releases each slot as soon as it copied
    /// it instead of all at the end.
    CopyEach,
}

#[cfg(all(test, loom))]
impl FdTable {
    /// The table's close order (the models' twins).
    pub(crate) fn close_order(&self) -> CloseOrder {
        use std::sync::atomic::Ordering::SeqCst;
        match self.close_order.load(SeqCst) {
            0 => CloseOrder::Right,
            1 => CloseOrder::SlotFirst,
            2 => CloseOrder::BitFirst,
            _ => CloseOrder::CopyEach,
        }
    }

    /// Sets the close order, before the model's threads start.
    pub(crate) fn set_close_order(&self, o: CloseOrder) {
        self.close_order
            .store(o as u8, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Loom models of the fd table's lockless lookup, allocation and release.
#[cfg(all(test, loom))]
mod loom_tests;
