//! `mmap(2)` of a uvfs file (the file side of `do_mmap` in Linux's
//! `mm/mmap.c`): the library hands the caller a kernel file holding the
//! file's data, opened with the open file's access mode, and the caller
//! maps it with the kernel's `mmap`, which then makes every check of the
//! mapping (length, offset, flags, `EACCES` for a shared writable mapping
//! of a file not open for writing or for any mapping of a file not open
//! for reading) in Linux's own order, and keeps mappings coherent with
//! reads and writes through uvfs.

use std::os::fd::{AsFd, BorrowedFd};

use super::Process;
use crate::errno::Errno;
use crate::file_table::{FMODE_READ, FMODE_WRITE};
use crate::uapi::{O_RDONLY, O_RDWR, O_WRONLY};

impl Process {
    /// `mmap(2)` of the file open at `fd`: `map` gets a kernel fd on the
    /// file's data, opened with `fd`'s access mode (`O_RDONLY`, `O_WRONLY`
    /// or `O_RDWR`), and makes the mapping with the kernel's `mmap` and
    /// the caller's own arguments; the kernel fd is closed when `map`
    /// returns (a mapping keeps its own reference). On success the file's
    /// access time is marked, as Linux's `shmem_mmap` does.
    ///
    /// Errors before `map` runs: `EBADF` for a closed or `O_PATH` fd;
    /// `ENODEV` for a file that cannot be mapped (a directory, or a file
    /// system without [`mmap_file`](crate::fs::FileSystem::mmap_file)),
    /// which Linux reports only after its checks of the length and flags:
    /// a caller that wants Linux's order makes the same call on a kernel
    /// directory. A file's first mapping moves its data to a kernel memfd
    /// (see the tmpfs module), so errors of that move (`ENOMEM`, `EMFILE`)
    /// may come too.
    pub fn mmap_file<T>(
        &mut self,
        fd: i32,
        map: impl FnOnce(BorrowedFd<'_>) -> Result<T, Errno>,
    ) -> Result<T, Errno> {
        self.on_file(fd, |p, f| {
            let d = f.dentry().ok_or(Errno::ENODEV)?;
            let accmode = match (f.mode() & FMODE_READ != 0, f.mode() & FMODE_WRITE != 0) {
                (true, true) => O_RDWR,
                (false, true) => O_WRONLY,
                _ => O_RDONLY,
            };
            let kfd = d.sb().fs.mmap_file(d.ino(), accmode)?;
            let r = map(kfd.as_fd())?;
            p.touch_atime(d, f.flags());
            Ok(r)
        })
    }
}
