//! `dup`, `F_DUPFD`, `dup2` and `dup3` (`do_dup2`, `ksys_dup3` of
//! `fs/file.c`).

use super::FdTable;
use super::close::filp_close;
use crate::errno::Errno;
use crate::file_table::{File, FileRef};
use crate::primitive::sync::atomic::Ordering;
use crate::uapi;
use std::ptr::NonNull;

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
            // A free fd is claimed before the file is published (a
            // lockless allocator cannot take it after); one that turns out
            // open with an empty slot is reserved by an open in progress.
            if tofree.is_null() && !self.mark_open(&mut g, newfd) {
                return Err(Errno::EBUSY);
            }
            // SAFETY: the old slot holds a reference and we hold the lock, so
            // the file is live; we take one more for the new slot.
            unsafe { file.as_ref() }.get();
            slot.store(file.as_ptr(), Ordering::Release);
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
