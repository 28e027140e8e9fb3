//! Allocation of fd numbers and installation of files (`alloc_fd`,
//! `get_unused_fd_flags`, `fd_install`, `put_unused_fd` of `fs/file.c`).

use super::FdTable;
use super::bitmap::{Bitmaps, WORD};
use crate::errno::Errno;
use crate::file_table::FileRef;

/// A reserved fd (`get_unused_fd_flags` done, `fd_install` not yet): the
/// number is taken, lookups see no file. Install a file with
/// [`install`](Self::install); dropping the reservation frees the number
/// (`put_unused_fd`).
#[must_use = "a reserved fd is released when dropped"]
pub struct ReservedFd<'t> {
    pub(super) table: &'t FdTable,
    pub(super) fd: u32,
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
        Ok(self.install_own(file))
    }

    /// [`install`](Self::install) of a file known to belong to this table's
    /// file-memory mode (one already installed in the table: dup), without
    /// the check.
    #[inline(always)]
    pub(super) fn install_own(self, file: FileRef) -> u32 {
        debug_assert_eq!(file.is_typesafe(), self.table.typesafe);
        let fd = self.fd;
        let table = self.table;
        std::mem::forget(self);
        // The reservation keeps fd below max_fds (tables never shrink), and
        // chunks never move, so this store cannot race a resize.
        table.slot(fd as usize).install(file.into_raw());
        fd
    }
}

impl Drop for ReservedFd<'_> {
    fn drop(&mut self) {
        let (t, fd) = (self.table, self.fd as usize);
        if t.is_low(fd) {
            // One `fetch_and`, no lock (`fd_bits_lockfree`).
            t.free_low(fd, false);
            return;
        }
        let mut g = t.lock();
        g.put_unused(fd, t.alloc_fast);
    }
}

impl FdTable {
    /// Reserves the lowest free fd in `start..end` (`alloc_fd`); `end` is the
    /// caller's RLIMIT_NOFILE. `EMFILE` when there is none.
    pub fn alloc_fd(&self, start: u32, end: u64, cloexec: bool) -> Result<ReservedFd<'_>, Errno> {
        if self.lockfree && (start as usize) < WORD {
            // `fd_bits_lockfree`: one CAS claims the lowest free fd below
            // 64, without the lock; the lock only when those are all taken.
            match self.claim_low(start as usize, end, false) {
                Some(Ok(fd)) => {
                    self.init_cloexec_low(fd, cloexec, false);
                    return Ok(ReservedFd {
                        table: self,
                        fd: fd as u32,
                    });
                }
                Some(Err(())) => return Err(Errno::EMFILE),
                None => {}
            }
        }
        let fd = self.alloc_fd_in(&mut self.lock(), start, end, cloexec, false)?;
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
    pub(super) unsafe fn alloc_fd_single(
        &self,
        start: u32,
        end: u64,
        cloexec: bool,
    ) -> Result<u32, Errno> {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            self.inner
                .with_unlocked(|g| self.alloc_fd_in(g, start, end, cloexec, true))
        }
    }

    /// The body of `alloc_fd` on the writer state `g`, held exclusively;
    /// `excl`: by the single user, who excludes every other thread.
    ///
    /// With `fd_bits_lockfree`, fds below 64 are claimed in the low word
    /// (racing lockless allocators), and `next_fd` is a hint for fds from
    /// 64 on only: no fd in `64..next_fd` is free. It is written under the
    /// lock (or by the single user) only, so it stays exact for them.
    #[inline(always)]
    pub(super) fn alloc_fd_in(
        &self,
        g: &mut Bitmaps,
        start: u32,
        end: u64,
        cloexec: bool,
        excl: bool,
    ) -> Result<u32, Errno> {
        let mut start = start as usize;
        let mut floor = 0;
        if self.lockfree {
            if start < WORD {
                match self.claim_low(start, end, excl) {
                    Some(Ok(fd)) => {
                        self.init_cloexec_low(fd, cloexec, excl);
                        return Ok(fd as u32);
                    }
                    Some(Err(())) => return Err(Errno::EMFILE),
                    None => start = WORD,
                }
            }
            floor = WORD;
        }
        let mut fd = start.max(g.next_fd);
        if fd < g.max_fds {
            fd = g.find_next_fd(fd, self.alloc_fast);
        }
        if fd as u64 >= end {
            return Err(Errno::EMFILE);
        }
        self.expand_locked(g, fd)?;
        if start <= g.next_fd.max(floor) {
            g.next_fd = fd + 1;
        }
        g.set_open(fd);
        self.init_cloexec(g, fd, cloexec, excl);
        Ok(fd as u32)
    }

    /// The lowest free fd below `rlimit` (`get_unused_fd_flags`).
    pub fn get_unused_fd(&self, cloexec: bool, rlimit: u64) -> Result<ReservedFd<'_>, Errno> {
        self.alloc_fd(0, rlimit, cloexec)
    }
}
