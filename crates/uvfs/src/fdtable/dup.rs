//! `dup`, `F_DUPFD`, `dup2` and `dup3` (`do_dup2`, `ksys_dup3` of
//! `fs/file.c`).

use super::FdTable;
use super::close::filp_close;
use crate::errno::Errno;
use crate::file_table::{File, FileRef};
use crate::uapi;
use std::ptr::{self, NonNull};

impl FdTable {
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
    pub(super) fn replace(
        &self,
        old: i32,
        new: i32,
        cloexec: bool,
        rlimit: u64,
    ) -> Result<u32, Errno> {
        let newfd = new as u32 as usize;
        if newfd as u64 >= rlimit {
            return Err(Errno::EBADF);
        }
        let tofree = {
            let mut g = self.lock();
            let grown = self.expand_locked(&mut g, newfd);
            let oldfd = old as u32 as usize;
            // Old's file. A low fd's slot is held until the file is
            // published at `new` (dropping `_hold` puts it back): a
            // lockless close of `old` (`fd_close_lockless`) then comes
            // wholly before this dup2 (we find the slot empty: EBADF) or
            // wholly after (it waits), as under Linux's lock.
            let (file, _hold) = if oldfd >= g.max_fds {
                (None, None)
            } else if self.is_low(oldfd) {
                let h = self.slot(oldfd).hold();
                (h.as_ref().map(|h| h.file()), h)
            } else {
                // Slots from 64 on are written only under the lock.
                (NonNull::new(self.slot(oldfd).load()), None)
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
            let tofree = if self.is_low(newfd) {
                match slot.hold() {
                    // An installed file: replaced while its slot is held,
                    // so a racing lockless close of `new` closes either
                    // it (before) or our file (after), never neither.
                    Some(h) => {
                        // SAFETY: `old`'s slot holds a reference, kept there
                        // by the lock and (low fds) its hold; we take one
                        // more for the new slot.
                        unsafe { file.as_ref() }.get();
                        h.end(file.as_ptr()).as_ptr()
                    }
                    // Empty: free, or reserved by an open in progress
                    // (`EBUSY`, as in Linux). A free fd is claimed before
                    // the file is published, so no allocator can take it.
                    None => {
                        if !self.mark_open(&mut g, newfd) {
                            return Err(Errno::EBUSY);
                        }
                        // SAFETY: as above.
                        unsafe { file.as_ref() }.get();
                        slot.install(file);
                        ptr::null_mut()
                    }
                }
            } else {
                // From 64 on, every writer of the slot holds the lock.
                let tofree = slot.load();
                if tofree.is_null() && !self.mark_open(&mut g, newfd) {
                    return Err(Errno::EBUSY);
                }
                // SAFETY: as above.
                unsafe { file.as_ref() }.get();
                slot.store_locked(file.as_ptr());
                tofree
            };
            self.init_cloexec(&mut g, newfd, cloexec, false);
            // SAFETY: the replaced slot's reference moves to us.
            NonNull::new(tofree).map(|f| unsafe { FileRef::from_raw(f) })
        };
        if let Some(f) = tofree {
            let _ = filp_close(f, self.id);
        }
        Ok(newfd as u32)
    }
}
