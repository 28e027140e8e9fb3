//! The first words of `open_fds` and `close_on_exec` (fds 0..63) kept
//! outside the table's lock (`FastPaths::fd_bits_lockfree`), so a thread of
//! a shared table reserves one of them with one compare-and-swap and frees a
//! reservation with one `fetch_and`, without the lock.
//!
//! With the switch on, word 0 of the locked [`Bitmaps`]' `open_fds` and
//! `close_on_exec`, and bit 0 of its `full_fds_bits`, stay zero forever:
//! fds 0..63 live in [`LowWords`], fds from 64 on in the locked bitmaps.
//! Word 0 never moves: growth copies the locked bitmaps into a bigger block
//! and leaves these two words where they are, so a claim never races a move
//! (the hand-over the issue asks about does not exist for them). Every
//! helper below takes the locked state `g` (held, or owned by the single
//! user) and goes to the low words for an fd below 64 when the switch is on,
//! to `g` otherwise; with the switch off they are the old code.
//!
//! Who writes what, with the switch on:
//! - `open` word 0: lockless allocations (a CAS), reservations dropped
//!   without install (a `fetch_and`), and under the lock the locked
//!   allocation (the same CAS), dup2 onto a free fd (a `fetch_or`); with
//!   or without the lock, close and the close sweeps (a `fetch_and` while
//!   the slot is held, see `fdtable/slot.rs`).
//!   The single user, who excludes everyone, uses plain loads and stores
//!   of the atomic (no read-modify-write).
//! - `cloexec` word 0: the allocator of fd `n` writes bit `n` after its
//!   claim, outside the lock; under the lock, F_SETFD, `CLOSE_RANGE_CLOEXEC`
//!   and the exec sweep. Only `CLOSE_RANGE_CLOEXEC` can meet an allocation
//!   of the same fd (F_SETFD needs an installed file, the sweep runs on an
//!   unshared table): either answer is one of the calls' two orders, since
//!   the reserved fd has no file yet (docs/fd-threads.md). All writes are read-modify-writes (other bits of the word
//!   belong to other fds), except the single user's.
//!
//! Closing a low fd frees its number with a `fetch_and` while the fd's
//! slot is held (see `fdtable/slot.rs`), with the lock (`fd_close_lockless`
//! off) or without it (on): whoever finds the slot held waits until it is
//! empty, by when the number is free. See docs/fd-threads.md for the
//! argument that allocation stays lowest-fd.

use super::FdTable;
use super::bitmap::{Bitmaps, WORD, find_next_bit, test_bit};
use crate::primitive::sync::atomic::{AtomicU64, Ordering};

/// Word 0 of `open_fds` and `close_on_exec`, on their own cache line.
#[derive(Debug, Default)]
pub(super) struct LowWords {
    pub(super) open: AtomicU64,
    pub(super) cloexec: AtomicU64,
}

/// Bit `fd`'s mask in its word.
#[inline(always)]
fn bit(fd: usize) -> u64 {
    1 << (fd % WORD)
}

impl FdTable {
    /// Whether fd `fd` lives in the low words.
    #[inline(always)]
    pub(super) fn is_low(&self, fd: usize) -> bool {
        self.lockfree && fd < WORD
    }

    /// Claims the lowest free fd in `start..64` by a CAS on the open word
    /// (the caller checks `start < 64`); `None` when those fds are all
    /// taken. Linearizes at the successful CAS: the word then equals the
    /// value the search read, so the claimed bit was the lowest zero at or
    /// above `start` at that instant. `Err` when it is at or above `end`.
    #[inline(always)]
    pub(super) fn claim_low(
        &self,
        start: usize,
        end: u64,
        excl: bool,
    ) -> Option<Result<usize, ()>> {
        let open = &self.low.open;
        let mut w = open.load(Ordering::Relaxed);
        loop {
            let free = !w & (!0u64 << start);
            if free == 0 {
                return None;
            }
            let fd = free.trailing_zeros() as usize;
            if fd as u64 >= end {
                return Some(Err(()));
            }
            if excl {
                // The single user: no one else writes the word.
                open.store(w | bit(fd), Ordering::Relaxed);
                return Some(Ok(fd));
            }
            // Acquire: the claim follows the free of the fd's last owner
            // (its slot was held, the file out of reach, before its release
            // `fetch_and`); the install then waits for the hold to end
            // (`Slot::install`), so its store comes after the old file's
            // removal.
            match open.compare_exchange_weak(w, w | bit(fd), Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(Ok(fd)),
                Err(now) => w = now,
            }
        }
    }

    /// Sets fd `fd`'s close-on-exec bit to `on` after claiming the fd.
    /// `excl`: no other thread touches the table (the single user).
    #[inline(always)]
    pub(super) fn init_cloexec(&self, g: &mut Bitmaps, fd: usize, on: bool, excl: bool) {
        if self.is_low(fd) {
            self.init_cloexec_low(fd, on, excl);
        } else {
            g.set_cloexec(fd, on);
        }
    }

    /// [`init_cloexec`](Self::init_cloexec) of a low fd.
    #[inline(always)]
    pub(super) fn init_cloexec_low(&self, fd: usize, on: bool, excl: bool) {
        let c = &self.low.cloexec;
        let b = bit(fd);
        if excl {
            let w = c.load(Ordering::Relaxed);
            let n = if on { w | b } else { w & !b };
            if n != w {
                c.store(n, Ordering::Relaxed);
            }
        } else if on {
            c.fetch_or(b, Ordering::Relaxed);
        } else if c.load(Ordering::Relaxed) & b != 0 {
            // Only set bits are cleared: the usual open without O_CLOEXEC
            // then reads the line it just wrote and writes nothing.
            c.fetch_and(!b, Ordering::Relaxed);
        }
    }

    /// Marks `fd` open (dup2 onto a free fd, fork's copy): `false` if it
    /// was open already (a low fd claimed by a lockless allocator between
    /// the caller's check and now: the caller treats it as reserved).
    #[inline(always)]
    pub(super) fn mark_open(&self, g: &mut Bitmaps, fd: usize) -> bool {
        if self.is_low(fd) {
            return self.low.open.fetch_or(bit(fd), Ordering::Acquire) & bit(fd) == 0;
        }
        let was = g.is_open(fd);
        g.set_open(fd);
        !was
    }

    /// Frees the number `fd` (`__put_unused_fd`), its slot already empty.
    /// `excl` as for [`init_cloexec`](Self::init_cloexec).
    #[inline(always)]
    pub(super) fn free_fd(&self, g: &mut Bitmaps, fd: usize, excl: bool) {
        if self.is_low(fd) {
            self.free_low(fd, excl);
        } else {
            g.put_unused(fd, self.alloc_fast);
        }
    }

    /// Frees low fd `fd`. Release: the held or emptied slot (and anything
    /// the owner did with the fd) happens before the next claim of the
    /// number.
    #[inline(always)]
    pub(super) fn free_low(&self, fd: usize, excl: bool) {
        let open = &self.low.open;
        if excl {
            open.store(open.load(Ordering::Relaxed) & !bit(fd), Ordering::Release);
        } else {
            open.fetch_and(!bit(fd), Ordering::Release);
        }
    }

    /// Whether `fd` is open (installed or reserved).
    #[inline(always)]
    pub(super) fn open_bit(&self, g: &Bitmaps, fd: usize) -> bool {
        if self.is_low(fd) {
            return self.low.open.load(Ordering::Acquire) & bit(fd) != 0;
        }
        g.is_open(fd)
    }

    /// Whether `fd` is close-on-exec (`fd < max_fds`).
    pub(super) fn cloexec_bit(&self, g: &Bitmaps, fd: usize) -> bool {
        if self.is_low(fd) {
            return self.low.cloexec.load(Ordering::Relaxed) & bit(fd) != 0;
        }
        test_bit(g.close_on_exec(), fd)
    }

    /// Word `w` of `close_on_exec`.
    pub(super) fn cloexec_word(&self, g: &Bitmaps, w: usize) -> u64 {
        if self.lockfree && w == 0 {
            return self.low.cloexec.load(Ordering::Relaxed);
        }
        g.close_on_exec()[w]
    }

    /// Clears the bits `mask` of word `w` of `close_on_exec`.
    pub(super) fn clear_cloexec_bits(&self, g: &mut Bitmaps, w: usize, mask: u64) {
        if self.lockfree && w == 0 {
            self.low.cloexec.fetch_and(!mask, Ordering::Relaxed);
        } else {
            g.close_on_exec_mut()[w] &= !mask;
        }
    }

    /// Sets the bits `mask` of word `w` of `close_on_exec`.
    pub(super) fn set_cloexec_bits(&self, g: &mut Bitmaps, w: usize, mask: u64) {
        if self.lockfree && w == 0 {
            self.low.cloexec.fetch_or(mask, Ordering::Relaxed);
        } else {
            g.close_on_exec_mut()[w] |= mask;
        }
    }

    /// The first open fd at or after `from` and below `end`, or `end`
    /// (`end <= max_fds`).
    pub(super) fn next_open(&self, g: &Bitmaps, end: usize, from: usize) -> usize {
        if self.lockfree && from < WORD {
            let w = self.low.open.load(Ordering::Acquire) & (!0u64 << from);
            if w != 0 {
                return (w.trailing_zeros() as usize).min(end);
            }
        }
        // With the switch on, the locked word 0 is all zero.
        find_next_bit(g.open_fds(), end, from)
    }
}
