//! Closing fds (`file_close_fd`, `pick_file`, `close_range`,
//! `do_close_on_exec` and `filp_close` of `fs/file.c` and `fs/open.c`).

use super::FdTable;
use super::bitmap::{Bitmaps, WORD};
use crate::errno::Errno;
use crate::file_table::FileRef;
use crate::primitive::sync::atomic::Ordering;
use std::ptr::{self, NonNull};

impl FdTable {
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
    pub(super) unsafe fn close_single(&self, fd: i32) -> Result<FileRef, Errno> {
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
        // One read-modify-write takes the slot's line exclusive at once,
        // where a load then a store could move it twice under the lock.
        // Swapping null over null (a free or reserved fd) changes nothing.
        let f = NonNull::new(self.slot(fd).swap(ptr::null_mut(), Ordering::AcqRel))?;
        // The slot is empty before the number is free (a lockless claim of
        // it installs into an empty slot).
        self.free_fd(g, fd, false);
        // SAFETY: the slot's reference moves to the caller.
        Some(unsafe { FileRef::from_raw(f) })
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
