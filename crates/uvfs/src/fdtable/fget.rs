//! Lockless lookups (`fget`, `fdget` and `files_lookup_fd_raw` of
//! `fs/file.c`): the seed-003 masked lookup, the stock branching one, and
//! the borrowed lookup of a table with a single user.

use super::FdTable;
use super::slot::Slot;
use crate::file_table::{File, FileRef};
use crate::nospec;
use crate::primitive::hint::retry_wait;
use crate::primitive::sync::atomic::Ordering;
use crate::reclaim;
use std::ptr::NonNull;

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

impl FdTable {
    /// The masked, branch-free raw lookup of seed 003: returns the slot's
    /// file (null for an invalid fd) and the slot it came from.
    #[inline(always)]
    pub(super) fn lookup_masked(&self, fd: u32) -> (*mut File, &Slot) {
        let max = self.max_fds.load(Ordering::Acquire);
        let mask = nospec::index_mask(fd as usize, max);
        let slot = self.slot(fd as usize & mask);
        let f = slot.load();
        (f.map_addr(|a| a & mask), slot)
    }

    /// The branching raw lookup of the stock kernel: bounds check, then a
    /// speculation-clamped index.
    #[inline(always)]
    pub(super) fn lookup_branchy(&self, fd: u32) -> Option<&Slot> {
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
        let _pin = (!self.typesafe).then(|| reclaim::pin_with(self.cheap_pin));
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
    pub(super) fn fget_masked(&self, fd: u32) -> Option<FileRef> {
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
            if slot.load() != f.as_ptr() {
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
    pub(super) fn fget_stock(&self, fd: u32) -> Option<FileRef> {
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
    #[inline(always)]
    pub unsafe fn lookup_borrowed(&self, fd: i32) -> Option<&File> {
        let f = if self.masked {
            self.lookup_masked(fd as u32).0
        } else {
            self.lookup_branchy(fd as u32)?.load()
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
    pub(super) fn has_file(&self, fd: i32) -> bool {
        // Only the slot is read, never the file: no pin needed.
        match self.lookup_branchy(fd as u32) {
            Some(slot) => !slot.load().is_null(),
            None => false,
        }
    }
}

/// `__get_file_rcu`: the generic slot-to-file helper. `Err` asks the caller
/// to retry from the start (the file's count was zero).
#[inline(never)]
fn get_file_rcu(slot: &Slot) -> Result<Option<FileRef>, ()> {
    loop {
        let Some(f) = NonNull::new(slot.load()) else {
            return Ok(None);
        };
        // SAFETY: as in `fget_masked`: a slot only ever holds file objects,
        // which stay valid for the pinned or type-stable reader.
        if !unsafe { f.as_ref() }.inc_not_zero() {
            return Err(());
        }
        // SAFETY: the increment gave us a reference.
        let file = unsafe { FileRef::from_raw(f) };
        let reloaded = slot.load();
        if reloaded == f.as_ptr() {
            return Ok(Some(file));
        }
        drop(file);
        if reloaded.is_null() {
            return Ok(None);
        }
    }
}
