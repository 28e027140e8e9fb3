//! Closing fds (`file_close_fd`, `pick_file`, `close_range`,
//! `do_close_on_exec` and `filp_close` of `fs/file.c` and `fs/open.c`).

use super::FdTable;
use super::bitmap::{Bitmaps, WORD};
use crate::errno::Errno;
use crate::file_table::FileRef;
use std::ptr::{self, NonNull};

impl FdTable {
    /// Removes the file at `fd` and frees the number (`file_close_fd` /
    /// `pick_file`), handing the table's reference to the caller, who
    /// flushes and puts it. `EBADF` for a negative, out-of-range, free or
    /// reserved-but-not-installed fd. With `fd_close_lockless`, an fd below
    /// 64 is closed without the table's lock (see `pick_low`).
    pub fn close(&self, fd: i32) -> Result<FileRef, Errno> {
        let fd = fd as u32 as usize;
        if self.closeless && fd < WORD {
            return self.pick_low(fd).ok_or(Errno::EBADF);
        }
        let mut g = self.lock();
        self.pick_locked(&mut g, fd).ok_or(Errno::EBADF)
    }

    /// [`close`](Self::close) by the table's only user, without the lock
    /// and without a read-modify-write of the slot.
    ///
    /// # Safety
    /// As for [`alloc_fd_single`](Self::alloc_fd_single): no other thread
    /// accesses the table, lookups included, while this runs.
    #[inline]
    pub(super) unsafe fn close_single(&self, fd: i32) -> Result<FileRef, Errno> {
        let fd = fd as u32 as usize;
        // SAFETY: forwarded from the caller's contract.
        let f = unsafe {
            self.inner.with_unlocked(|g| {
                if fd >= g.max_fds {
                    return None;
                }
                // No other thread loads the slot: a load and a store do
                // what the shared path's hold and release do.
                let slot = self.slot(fd);
                let f = NonNull::new(slot.load_excl())?;
                slot.store_excl(ptr::null_mut());
                self.free_fd(g, fd, true);
                Some(f)
            })
        }
        .ok_or(Errno::EBADF)?;
        // SAFETY: the slot's reference moves to the caller.
        Ok(unsafe { FileRef::from_raw(f) })
    }

    pub(super) fn pick_locked(&self, g: &mut Bitmaps, fd: usize) -> Option<FileRef> {
        if fd >= g.max_fds {
            return None;
        }
        if self.is_low(fd) {
            // Fds 0..63 are claimed without the lock: the close must leave
            // no instant at which the slot is empty and the number still
            // taken (see `pick_low`), lock or no lock.
            return self.pick_low(fd);
        }
        // One read-modify-write takes the slot's line exclusive at once,
        // where a load then a store could move it twice under the lock.
        // Swapping null over null (a free or reserved fd) changes nothing.
        // Slots from 64 on are written only under the lock: never held.
        let f = NonNull::new(self.slot(fd).take_locked())?;
        self.free_fd(g, fd, false);
        // SAFETY: the slot's reference moves to the caller.
        Some(unsafe { FileRef::from_raw(f) })
    }

    /// Closes low fd `fd` (`fd_bits_lockfree`), with or without the lock:
    /// holds the slot (a CAS of its file to the marker; `None` if it is
    /// empty), frees the number (a `fetch_and`: the close's instant), then
    /// empties the slot. Whoever meets the held slot (a lookup, dup2, the
    /// installer of a new claim of the number) waits until it is empty,
    /// by when the number is free: no one sees the fd empty but its number
    /// taken, or its number free but its file still there.
    pub(super) fn pick_low(&self, fd: usize) -> Option<FileRef> {
        let slot = self.slot(fd);
        #[cfg(all(test, loom))]
        if let Some(twin) = self.pick_low_twin(slot, fd) {
            return twin;
        }
        let held = slot.hold()?;
        self.free_low(fd, false);
        let f = held.end(ptr::null_mut());
        // SAFETY: the slot's reference moves to the caller.
        Some(unsafe { FileRef::from_raw(f) })
    }

    /// The loom models' wrong orders of [`pick_low`](Self::pick_low), which
    /// must fail them; `None` for the right one.
    #[cfg(all(test, loom))]
    fn pick_low_twin(&self, slot: &super::slot::Slot, fd: usize) -> Option<Option<FileRef>> {
        let f = match self.close_order() {
            super::CloseOrder::Right | super::CloseOrder::CopyEach => return None,
            // Main's locked close before this: slot emptied, then the bit.
            super::CloseOrder::SlotFirst => {
                let f = slot.hold().map(|h| h.end(ptr::null_mut()));
                if f.is_some() {
                    self.free_low(fd, false);
                }
                f
            }
            // The bit cleared before the slot is marked.
            super::CloseOrder::BitFirst => {
                if slot.load().is_null() {
                    return Some(None);
                }
                self.free_low(fd, false);
                slot.hold().map(|h| h.end(ptr::null_mut()))
            }
        };
        // SAFETY: the slot's reference moves to the caller.
        Some(f.map(|f| unsafe { FileRef::from_raw(f) }))
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
                    fd = self.next_open(&g, end, fd);
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

    /// The exec sweep (`do_close_on_exec`): closes every close-on-exec fd
    /// and clears the close-on-exec bits.
    pub fn close_on_exec(&self) {
        let mut w = 0;
        loop {
            let file = {
                let mut g = self.lock();
                let mut found = None;
                while w < g.close_on_exec().len() {
                    let set = self.cloexec_word(&g, w);
                    if set == 0 {
                        w += 1;
                        continue;
                    }
                    let bit = set.trailing_zeros() as usize;
                    self.clear_cloexec_bits(&mut g, w, 1 << bit);
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
}

/// `filp_close`: the owner's flush, the release of the record locks of the
/// table `owner` (by its id) on the file, then the (deferred) put.
pub(super) fn filp_close(f: FileRef, owner: u64) -> Result<(), Errno> {
    let r = match f.ops() {
        Some(ops) => ops.flush(&f),
        None => Ok(()),
    };
    f.remove_posix_locks(owner);
    drop(f);
    r
}
