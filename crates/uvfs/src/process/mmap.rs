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
    /// Difference from Linux: `ENODEV` comes before the checks of the
    /// length and flags, which the kernel makes only inside `map`; a
    /// caller that wants Linux's order makes the same call on a kernel
    /// directory.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use uvfs::uapi::{O_CREAT, O_RDWR};
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    ///
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let fd = p.open("/data", O_CREAT | O_RDWR, 0o644)?;
    /// p.write(fd, b"mapped")?;
    /// let addr = p.mmap_file(fd, |kfd| {
    ///     // SAFETY: a new shared mapping of one page at an address the
    ///     // kernel picks; nothing else refers to that range.
    ///     let a = unsafe {
    ///         libc::mmap(
    ///             std::ptr::null_mut(),
    ///             4096,
    ///             libc::PROT_READ | libc::PROT_WRITE,
    ///             libc::MAP_SHARED,
    ///             kfd.as_raw_fd(),
    ///             0,
    ///         )
    ///     };
    ///     if a == libc::MAP_FAILED {
    ///         Err(Errno::last_os_error())
    ///     } else {
    ///         Ok(a.cast::<u8>())
    ///     }
    /// })?;
    /// // SAFETY: the mapping is a page long and nothing else borrows it.
    /// let bytes = unsafe { std::slice::from_raw_parts_mut(addr, 6) };
    /// assert_eq!(bytes, b"mapped");
    /// bytes[0] = b'M';
    /// let mut buf = [0u8; 6];
    /// p.pread(fd, &mut buf, 0)?; // reads see the mapping's stores
    /// assert_eq!(&buf, b"Mapped");
    /// // SAFETY: the page mapped above; `bytes` is not used again.
    /// assert_eq!(unsafe { libc::munmap(addr.cast(), 4096) }, 0);
    /// # Ok::<(), Errno>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Before `map` runs:
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `ENODEV`: a file that cannot be mapped (a directory, a file with
    ///   no dentry, or a file system without
    ///   [`mmap_file`](crate::fs::FileSystem::mmap_file));
    /// - `ENOMEM`, `EMFILE`: a file's first mapping moves its data to a
    ///   kernel memfd (see the tmpfs module), which can fail so.
    ///
    /// Then whatever `map` returns.
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
            let kfd = d.sb().fs.mmap_file_node(d.node(), accmode)?;
            let r = map(kfd.as_fd())?;
            p.touch_atime(d, f.flags());
            Ok(r)
        })
    }
}
