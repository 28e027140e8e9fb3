//! I/O on open files: read, write, pread, pwrite, readv, writev, lseek,
//! getdents64, ftruncate, fallocate, fsync, fdatasync — the
//! `file_operations` of tmpfs files and directories, on the file's dentry.

use super::{Process, Task};
use crate::cred;
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::file_table::{FMODE_READ, FMODE_WRITE, File};
use crate::fs::{
    FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG, Seek, SetAttr,
    SetTime,
};
use crate::pipe::FifoFile;
use crate::stat::{d_type, dirent64_reclen, put_dirent64};
use crate::task_work;
use crate::uapi::*;

/// Where a read or write goes: the file position (locked when shared) or
/// an explicit offset.
#[derive(Clone, Copy)]
pub(super) enum At {
    Pos,
    Off(u64),
}

fn dentry(file: &File) -> Result<&DentryRef, Errno> {
    file.dentry().ok_or(Errno::EINVAL)
}

fn ftype(d: &DentryRef) -> u32 {
    d.snap().map_or(0, |s| s.mode & S_IFMT)
}

/// Linux's `rw_verify_area` for a read or write of `count` bytes at `pos`:
/// `EINVAL` if the count is negative as an `ssize_t` or if `pos + count`
/// overflows `loff_t` (host: pread of 1 byte at 2^63-1, pwrite of 2 bytes
/// at 2^63-2, and write at file position 2^63-1 are all `EINVAL`, not
/// `EFBIG`, on tmpfs; 0 bytes at 2^63-1 succeed).
fn rw_verify_area(pos: u64, count: usize) -> Result<(), Errno> {
    if count > isize::MAX as usize || pos.saturating_add(count as u64) > i64::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Linux's `kiocb_set_rw_flags` for tmpfs files (and, for a directory,
/// `do_loop_readv_writev`, which takes `RWF_HIPRI` alone): `EOPNOTSUPP`
/// for a flag Linux does not know, and for `RWF_NOWAIT` (tmpfs files are
/// not `FMODE_NOWAIT`), `RWF_ATOMIC` and `RWF_DONTCACHE` (tmpfs supports
/// neither); `EINVAL` for `RWF_APPEND` with `RWF_NOAPPEND`. The others
/// (`RWF_HIPRI`, `RWF_DSYNC`, `RWF_SYNC`, `RWF_NOSIGNAL`) change nothing
/// on tmpfs. Returns whether a write appends when a flag decides it.
fn rwf_append(rwf: u32, is_dir: bool, write: bool) -> Result<Option<bool>, Errno> {
    if rwf == 0 {
        return Ok(None);
    }
    if is_dir {
        return if rwf & !RWF_HIPRI != 0 {
            Err(Errno::EOPNOTSUPP)
        } else {
            Ok(None)
        };
    }
    if rwf & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if rwf & (RWF_APPEND | RWF_NOAPPEND) == RWF_APPEND | RWF_NOAPPEND {
        return Err(Errno::EINVAL);
    }
    if rwf & (RWF_NOWAIT | RWF_ATOMIC | RWF_DONTCACHE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(
        match (write, rwf & RWF_APPEND != 0, rwf & RWF_NOAPPEND != 0) {
            (true, true, _) => Some(true),
            (true, _, true) => Some(false),
            _ => None,
        },
    )
}

/// The mode checks of Linux's `vfs_fallocate`, made after the offset and
/// length (`EINVAL`) and before the fd's write mode (`EBADF`): a bit
/// outside the known operations and `KEEP_SIZE` (`NO_HIDE_STALE`
/// included) is `EOPNOTSUPP`; so is a combination of two operations, a
/// hole punch without `KEEP_SIZE`, and a collapse, insert or write-zeroes
/// with it. Allocation, zeroing and unsharing take `KEEP_SIZE` or not.
/// What passes here may still be refused by the file system (tmpfs does
/// only allocation and hole punching: `EOPNOTSUPP`, after the fd, type and
/// size checks).
pub fn falloc_mode_ok(mode: u32) -> Result<(), Errno> {
    use crate::fs::{
        FALLOC_FL_COLLAPSE_RANGE as COLLAPSE, FALLOC_FL_INSERT_RANGE as INSERT,
        FALLOC_FL_UNSHARE_RANGE as UNSHARE, FALLOC_FL_WRITE_ZEROES as WZ,
        FALLOC_FL_ZERO_RANGE as ZERO,
    };
    let ops = FALLOC_FL_PUNCH_HOLE | COLLAPSE | ZERO | INSERT | UNSHARE | WZ;
    if mode & !(ops | FALLOC_FL_KEEP_SIZE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let keep = mode & FALLOC_FL_KEEP_SIZE != 0;
    match mode & ops {
        0 => Ok(()),
        x if x == ZERO || x == UNSHARE => Ok(()),
        FALLOC_FL_PUNCH_HOLE if keep => Ok(()),
        x if (x == COLLAPSE || x == INSERT || x == WZ) && !keep => Ok(()),
        _ => Err(Errno::EOPNOTSUPP),
    }
}

impl Process {
    /// Runs `f` on the open (non-`O_PATH`) file `fd`: `EBADF` if there is
    /// none.
    pub(super) fn on_file<R>(
        &mut self,
        fd: i32,
        f: impl FnOnce(&Task, &File) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let _call = task_work::enter();
        // The file borrows `self.files` until `f` returns; `f` gets the
        // task, which has no way to the fd table.
        let file = self
            .files
            .fdget(fd, crate::file_table::FMODE_PATH)
            .ok_or(Errno::EBADF)?;
        f(&self.task, &file)
    }

    /// Whether a read or write on `fd` may sleep until another thread
    /// acts: true for a FIFO (false for a bad fd). For a caller that must
    /// not hold its own locks across such a call (the LD_PRELOAD shim runs
    /// it on a thread handle of its own, outside its fork gate).
    pub fn may_block(&mut self, fd: i32) -> bool {
        self.files
            .fdget(fd, crate::file_table::FMODE_PATH)
            .is_some_and(|f| FifoFile::of(&f).is_some())
    }

    /// `read(fd, buf)`: reads up to `buf.len()` bytes at the file
    /// position and moves the position past them; 0 at end of file. A
    /// FIFO read waits for data while a writer is open (not with
    /// `O_NONBLOCK`) and returns 0 once no writer is left.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, is `O_PATH`, or is not open for
    ///   reading;
    /// - `EISDIR`: `fd` is a directory (use
    ///   [`getdents64`](Self::getdents64));
    /// - `EINVAL`: the position plus the length would pass `i64::MAX`; a
    ///   file opened by [`open_with`](Self::open_with) with no dentry;
    /// - `EAGAIN`: an empty FIFO, non-blocking, with a writer;
    /// - `EINTR`: an empty FIFO's wait was interrupted
    ///   ([`set_sleep`](Self::set_sleep)).
    pub fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.on_file(fd, |p, f| p.do_read(f, &mut [buf], At::Pos, 0))
    }

    /// `pread(fd, buf, off)`: [`read`](Self::read) at offset `off`,
    /// leaving the file position alone.
    ///
    /// # Errors
    ///
    /// Those of `read`, and: `EINVAL` for a negative `off` (before `fd` is
    /// looked at); `ESPIPE` on a FIFO.
    ///
    /// Reading and writing (`read`, `write`, their positional and vector
    /// forms, `lseek`, `ftruncate`, `fallocate`, `getdents64`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let fd = p.open("/f", O_RDWR | O_CREAT, 0o644)?;
    /// assert_eq!(p.write(fd, b"hello")?, 5);
    /// assert_eq!(p.pwrite(fd, b"J", 0)?, 1);
    /// let mut buf = [0u8; 5];
    /// assert_eq!(p.pread(fd, &mut buf, 0)?, 5);
    /// assert_eq!(&buf, b"Jello");
    /// assert_eq!(p.lseek(fd, 0, SEEK_CUR)?, 5); // pread/pwrite leave it
    /// assert_eq!(p.pread(fd, &mut buf, -1), Err(Errno::EINVAL));
    /// # Ok(())
    /// # }
    /// ```
    pub fn pread(&mut self, fd: i32, buf: &mut [u8], off: i64) -> Result<usize, Errno> {
        // A negative offset is refused before the fd is looked at.
        let off = u64::try_from(off).map_err(|_| Errno::EINVAL)?;
        self.on_file(fd, |p, f| p.do_read(f, &mut [buf], At::Off(off), 0))
    }

    /// `readv(fd, bufs)`: [`read`](Self::read) into each buffer in turn,
    /// as one call (it stops at the first short buffer). A vector of only
    /// empty buffers returns 0 before the file type is looked at.
    ///
    /// # Errors
    ///
    /// Those of `read`, in this order: the fd and its read mode (`EBADF`),
    /// then `EINVAL` for more than 1,024 buffers (`UIO_MAXIOV`; Linux's
    /// `vfs_readv` reads the vector after the fd checks), then the rest.
    pub fn readv(&mut self, fd: i32, bufs: &mut [&mut [u8]]) -> Result<usize, Errno> {
        self.on_file(fd, |p, f| {
            if f.mode() & FMODE_READ == 0 {
                return Err(Errno::EBADF);
            }
            if bufs.len() > UIO_MAXIOV {
                return Err(Errno::EINVAL);
            }
            // Nothing to read returns 0 before the file type is looked at.
            if bufs.iter().all(|b| b.is_empty()) {
                return Ok(0);
            }
            p.do_read(f, bufs, At::Pos, 0)
        })
    }

    /// `write(fd, buf)`: writes `buf` at the file position (at the end
    /// with `O_APPEND`), moves the position past it and returns the count
    /// written, which is short only when the file system fills up part
    /// way. Drops the set-user-ID bit, and set-group-ID with group execute,
    /// when the writer lacks `CAP_FSETID`, as Linux does; stamps mtime and
    /// ctime. A FIFO write of up to 4,096 bytes (`PIPE_BUF`) is atomic; a
    /// longer one waits for room unless `O_NONBLOCK`.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, is `O_PATH`, or is not open for
    ///   writing;
    /// - `EINVAL`: the position plus the length would pass `i64::MAX`; a
    ///   file opened by [`open_with`](Self::open_with) with no dentry;
    /// - `EFBIG`: the position is at or past the file system's largest
    ///   file size (for a non-empty `buf`);
    /// - `ENOSPC`: no byte could be written for lack of space (the tmpfs
    ///   size limit);
    /// - `EPIPE`: a FIFO with no reader (uvfs sends no `SIGPIPE`:
    ///   `docs/semantics.md`, "Signals");
    /// - `EAGAIN`: a full FIFO, non-blocking;
    /// - `EINTR`: a FIFO write interrupted before writing anything.
    pub fn write(&mut self, fd: i32, buf: &[u8]) -> Result<usize, Errno> {
        self.on_file(fd, |p, f| p.do_write(f, &[buf], At::Pos, 0))
    }

    /// `pwrite(fd, buf, off)`: [`write`](Self::write) at offset `off`,
    /// leaving the file position alone. On an `O_APPEND` file it still
    /// appends, ignoring `off`, as Linux does (POSIX says otherwise).
    ///
    /// # Errors
    ///
    /// Those of `write`, and: `EINVAL` for a negative `off` (before `fd` is
    /// looked at); `ESPIPE` on a FIFO.
    pub fn pwrite(&mut self, fd: i32, buf: &[u8], off: i64) -> Result<usize, Errno> {
        // A negative offset is refused before the fd is looked at.
        let off = u64::try_from(off).map_err(|_| Errno::EINVAL)?;
        self.on_file(fd, |p, f| p.do_write(f, &[buf], At::Off(off), 0))
    }

    /// `writev(fd, bufs)`: [`write`](Self::write) of the buffers, in
    /// order, as one call. A vector of only empty buffers returns 0.
    ///
    /// # Errors
    ///
    /// Those of `write`, in this order: the fd and its write mode
    /// (`EBADF`), then `EINVAL` for more than 1,024 buffers, then the rest.
    pub fn writev(&mut self, fd: i32, bufs: &[&[u8]]) -> Result<usize, Errno> {
        self.on_file(fd, |p, f| {
            if f.mode() & FMODE_WRITE == 0 {
                return Err(Errno::EBADF);
            }
            if bufs.len() > UIO_MAXIOV {
                return Err(Errno::EINVAL);
            }
            if bufs.iter().all(|b| b.is_empty()) {
                return Ok(0);
            }
            p.do_write(f, bufs, At::Pos, 0)
        })
    }
}

impl Process {
    /// `preadv2(fd, bufs, off, flags)`: [`readv`](Self::readv) at `off`,
    /// or at (and moving) the file position when `off` is -1. `flags`:
    /// `RWF_HIPRI`, `RWF_DSYNC`, `RWF_SYNC`, `RWF_NOSIGNAL` and
    /// `RWF_APPEND`/`RWF_NOAPPEND` are accepted (they change nothing on a
    /// read); on a FIFO `RWF_NOWAIT` makes the read non-blocking. The flags
    /// are checked only once there is something to transfer: an empty
    /// vector returns 0 whatever they are. `docs/semantics.md`
    /// ("preadv2/pwritev2") has the order of checks.
    ///
    /// # Errors
    ///
    /// Those of `readv`, and:
    ///
    /// - `EINVAL`: a negative `off` other than -1 (before `fd`);
    ///   `RWF_APPEND` with `RWF_NOAPPEND`;
    /// - `ESPIPE`: an offset on a FIFO;
    /// - `EOPNOTSUPP`: an unknown flag, or `RWF_NOWAIT` (on a regular
    ///   file), `RWF_ATOMIC`, `RWF_DONTCACHE`, which tmpfs cannot do; on a
    ///   directory, any flag but `RWF_HIPRI` (before its `EISDIR`).
    pub fn preadv2(
        &mut self,
        fd: i32,
        bufs: &mut [&mut [u8]],
        off: i64,
        flags: u32,
    ) -> Result<usize, Errno> {
        let at = match off {
            -1 => At::Pos,
            o => At::Off(u64::try_from(o).map_err(|_| Errno::EINVAL)?),
        };
        self.on_file(fd, |p, f| {
            if matches!(at, At::Off(_)) && FifoFile::of(f).is_some() {
                return Err(Errno::ESPIPE);
            }
            if f.mode() & FMODE_READ == 0 {
                return Err(Errno::EBADF);
            }
            if bufs.len() > UIO_MAXIOV {
                return Err(Errno::EINVAL);
            }
            if bufs.iter().all(|b| b.is_empty()) {
                return Ok(0);
            }
            p.do_read(f, bufs, at, flags)
        })
    }

    /// `pwritev2(fd, bufs, off, flags)`: [`writev`](Self::writev) at
    /// `off`, or at (and moving) the file position when `off` is -1; the
    /// flags as for [`preadv2`](Self::preadv2), and `RWF_APPEND` appends
    /// (moving the position only when `off` is -1), `RWF_NOAPPEND` writes
    /// at the offset on an `O_APPEND` file.
    ///
    /// # Errors
    ///
    /// Those of `writev`, and those `preadv2` adds for the offset and the
    /// flags.
    pub fn pwritev2(
        &mut self,
        fd: i32,
        bufs: &[&[u8]],
        off: i64,
        flags: u32,
    ) -> Result<usize, Errno> {
        let at = match off {
            -1 => At::Pos,
            o => At::Off(u64::try_from(o).map_err(|_| Errno::EINVAL)?),
        };
        self.on_file(fd, |p, f| {
            if matches!(at, At::Off(_)) && FifoFile::of(f).is_some() {
                return Err(Errno::ESPIPE);
            }
            if f.mode() & FMODE_WRITE == 0 {
                return Err(Errno::EBADF);
            }
            if bufs.len() > UIO_MAXIOV {
                return Err(Errno::EINVAL);
            }
            if bufs.iter().all(|b| b.is_empty()) {
                return Ok(0);
            }
            p.do_write(f, bufs, at, flags)
        })
    }
}

impl Task {
    /// A read of `bufs` at `at` with the `RWF_*` flags `rwf` (checked after
    /// the position, as `kiocb_set_rw_flags` is).
    pub(super) fn do_read(
        &self,
        f: &File,
        bufs: &mut [&mut [u8]],
        at: At,
        rwf: u32,
    ) -> Result<usize, Errno> {
        let fifo = FifoFile::of(f);
        if fifo.is_some() && matches!(at, At::Off(_)) {
            // A stream has no `FMODE_PREAD`, checked before the mode.
            return Err(Errno::ESPIPE);
        }
        if f.mode() & FMODE_READ == 0 {
            return Err(Errno::EBADF);
        }
        let d = dentry(f)?;
        if let Some(fifo) = fifo {
            rw_verify_area(0, bufs.iter().map(|b| b.len()).sum())?;
            rwf_append(rwf & !RWF_NOWAIT, false, false)?;
            let nonblock = f.flags() & O_NONBLOCK != 0 || rwf & RWF_NOWAIT != 0;
            let n = fifo.read(bufs, nonblock, self.sleep_hook())?;
            if n > 0 {
                self.touch_atime(d, f.flags());
            }
            return Ok(n);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        // A read at an offset leaves the position alone and does not lock
        // it (Linux's `ksys_pread64` takes `fdget`, not `fdget_pos`).
        let mut pos = matches!(at, At::Pos).then(|| f.lock_pos());
        let mut off = match at {
            At::Off(o) => o,
            At::Pos => pos.as_ref().map_or(0, |p| p.get()),
        };
        rw_verify_area(off, total)?;
        let is_dir = ftype(d) == S_IFDIR;
        rwf_append(rwf, is_dir, false)?;
        if is_dir {
            return Err(Errno::EISDIR);
        }
        let mut done = 0;
        for b in bufs.iter_mut() {
            if b.is_empty() {
                continue;
            }
            // tmpfs's read called on its type, without the dynamic call.
            let sb = d.sb();
            let n = match sb.tmpfs() {
                Some(t) => crate::fs::FileSystem::read_node(t, d.node(), off, b)?,
                None => sb.fs.read_node(d.node(), off, b)?,
            };
            done += n;
            off += n as u64;
            if n < b.len() {
                break;
            }
        }
        if let Some(p) = pos.as_mut() {
            p.set(off);
        }
        drop(pos);
        // tmpfs's read stamps atime even for a 0-byte read
        // (`shmem_file_read_iter` calls `file_accessed` unconditionally).
        self.touch_atime(d, f.flags());
        Ok(done)
    }

    /// A write of `bufs` at `at` with the `RWF_*` flags `rwf`.
    pub(super) fn do_write(
        &self,
        f: &File,
        bufs: &[&[u8]],
        at: At,
        rwf: u32,
    ) -> Result<usize, Errno> {
        let fifo = FifoFile::of(f);
        if fifo.is_some() && matches!(at, At::Off(_)) {
            return Err(Errno::ESPIPE);
        }
        if f.mode() & FMODE_WRITE == 0 {
            return Err(Errno::EBADF);
        }
        let d = dentry(f)?;
        if let Some(fifo) = fifo {
            rw_verify_area(0, bufs.iter().map(|b| b.len()).sum())?;
            rwf_append(rwf & !RWF_NOWAIT, false, true)?;
            let nonblock = f.flags() & O_NONBLOCK != 0 || rwf & RWF_NOWAIT != 0;
            let n = fifo.write(bufs, nonblock, f.flags() & O_DIRECT != 0, self.sleep_hook())?;
            if n > 0 {
                // `file_update_time`.
                let set = SetAttr {
                    mtime: Some(SetTime::Now),
                    ..SetAttr::default()
                };
                let _ = self.setattr(d, &set);
            }
            return Ok(n);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        // A write at an offset does not lock the position (`ksys_pwrite64`
        // takes `fdget`, not `fdget_pos`).
        let mut pos = matches!(at, At::Pos).then(|| f.lock_pos());
        let given = match at {
            At::Off(o) => o,
            At::Pos => pos.as_ref().map_or(0, |p| p.get()),
        };
        // The position checked is the file's (or the given offset) even
        // with O_APPEND: Linux verifies it before appending.
        rw_verify_area(given, total)?;
        let append =
            rwf_append(rwf, ftype(d) == S_IFDIR, true)?.unwrap_or(f.flags() & O_APPEND != 0);
        let sb = d.sb();
        let fs = &sb.fs;
        let node = d.node();
        // `FastPaths::write_one_lock`: one buffer, decided and written
        // under the file system's lock of the inode alone (the file system
        // declines a write that may drop set-ID bits, and the rest the
        // locked way below handles in its order).
        if let [b] = bufs
            && total > 0
            && self.vfs.fastpaths().write_one_lock
            && let Some(r) = match sb.tmpfs() {
                // tmpfs's called on its type, without the dynamic call.
                Some(t) => {
                    crate::fs::FileSystem::write_one_lock(t, node, (!append).then_some(given), b)
                }
                None => fs.write_one_lock(node, (!append).then_some(given), b),
            }
        {
            let (start, n, moved) = r?;
            if let Some(p) = pos.as_mut() {
                p.set(start + n as u64);
            }
            // A write that left mtime and ctime as they were (a light
            // overwrite in the tick of the last stamp) changes nothing
            // `relatime` looks at: no note, and no load of the cached
            // inode right after the copy (it waits for the copy's stores).
            if moved {
                crate::vfs_ops::inode::mark_changed(d);
            }
            return Ok(n);
        }
        // Appends and privilege removal read the size and mode and then
        // write: serialized per inode, as `inode_lock` does in
        // `generic_file_write_iter`.
        let _g = d.lock_inode();
        let mut off = if append {
            fs.getattr_node(node)?.size
        } else {
            given
        };
        if total == 0 {
            return Ok(0);
        }
        if off >= d.sb().limits.max_file_size {
            return Err(Errno::EFBIG);
        }
        self.remove_privs(d)?;
        let mut done = 0;
        for b in bufs {
            if b.is_empty() {
                continue;
            }
            match fs.write_node(node, off, b) {
                Ok(n) => {
                    done += n;
                    off += n as u64;
                    if n < b.len() {
                        break;
                    }
                }
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        if let Some(p) = pos.as_mut() {
            p.set(off);
        }
        if done > 0 {
            crate::vfs_ops::inode::mark_changed(d);
        }
        Ok(done)
    }
}

impl Process {
    /// `lseek(fd, off, whence)`: sets the file position and returns it.
    /// On regular files `whence` is `SEEK_SET`, `SEEK_CUR`, `SEEK_END`,
    /// `SEEK_DATA` (the next byte in an allocated page at or after `off`)
    /// or `SEEK_HOLE` (the next hole; end of file counts as one). On
    /// directories `SEEK_SET` and `SEEK_CUR` move the readdir cookie (see
    /// [`getdents64`](Self::getdents64)). An `O_PATH` fd is refused.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `EINVAL`: an unknown `whence` (on a directory, anything but
    ///   `SEEK_SET` and `SEEK_CUR`); a resulting position below 0 or past
    ///   `i64::MAX`;
    /// - `ENXIO`: `SEEK_DATA`/`SEEK_HOLE` with `off` negative or at or past
    ///   the end of file, or `SEEK_DATA` with no data after `off`;
    /// - `ESPIPE`: a FIFO.
    ///
    /// Like Linux's tmpfs, `SEEK_HOLE` in a file of nearly 2^63 bytes can
    /// return `i64::MIN` (`docs/semantics.md`, "SEEK_DATA/SEEK_HOLE").
    pub fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, Errno> {
        self.on_file(fd, |_, f| {
            if FifoFile::of(f).is_some() {
                // No `FMODE_LSEEK`; a whence past `SEEK_HOLE` is refused
                // before the file is asked.
                return Err(if (0..=SEEK_HOLE).contains(&whence) {
                    Errno::ESPIPE
                } else {
                    Errno::EINVAL
                });
            }
            let d = dentry(f)?;
            let mut pos = f.lock_pos();
            let cur = pos.get() as i64;
            let new = if ftype(d) == S_IFDIR {
                match whence {
                    SEEK_SET => off,
                    SEEK_CUR => cur.checked_add(off).ok_or(Errno::EINVAL)?,
                    _ => return Err(Errno::EINVAL),
                }
            } else {
                match whence {
                    SEEK_SET => off,
                    SEEK_CUR => {
                        if off == 0 {
                            return Ok(cur);
                        }
                        cur.checked_add(off).ok_or(Errno::EINVAL)?
                    }
                    SEEK_END => {
                        let size = d.sb().fs.getattr_node(d.node())?.size as i64;
                        size.checked_add(off).ok_or(Errno::EINVAL)?
                    }
                    SEEK_DATA | SEEK_HOLE => {
                        let o = u64::try_from(off).map_err(|_| Errno::ENXIO)?;
                        let w = if whence == SEEK_DATA {
                            Seek::Data
                        } else {
                            Seek::Hole
                        };
                        let at = d.sb().fs.seek_data_hole_node(d.node(), o, w)? as i64;
                        if at < 0 {
                            // tmpfs's overflow at the last page below
                            // 2^63 (see `Tmpfs::seek_pages`): Linux hands
                            // the negative offset back as the result and
                            // leaves the position alone.
                            return Ok(at);
                        }
                        at
                    }
                    _ => return Err(Errno::EINVAL),
                }
            };
            if new < 0 {
                return Err(Errno::EINVAL);
            }
            pos.set(new as u64);
            Ok(new)
        })
    }

    /// `getdents64(fd, buf)`: fills `buf` with as many `linux_dirent64`
    /// records as fit, starting at the file position, and returns the
    /// bytes used; 0 at the end. Each record's `d_off` is a cookie: the
    /// position after that entry, which [`lseek`](Self::lseek) with
    /// `SEEK_SET` accepts to resume there. `.` and `..` come first. Once
    /// the end is reached the position stays there, so entries made later
    /// are not listed by the same open file. [`readdir`](Self::readdir) and
    /// [`read_dir`](Self::read_dir) parse the records for you.
    ///
    /// Difference from Linux: resuming at a cookie whose entry was removed
    /// meanwhile repeats no entry (Linux 6.18 starts over from the first;
    /// `docs/status.md`, "Known differences").
    ///
    /// ```
    /// use uvfs::stat::parse_dirents64;
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkdir("/d", 0o755)?;
    /// for name in ["a", "b", "c"] {
    ///     p.write_file(format!("/d/{name}"), b"")?;
    /// }
    /// let dir = p.open("/d", O_RDONLY | O_DIRECTORY, 0)?;
    /// let mut buf = [0u8; 4096];
    /// let n = p.getdents64(dir, &mut buf)?;
    /// let all = parse_dirents64(&buf[..n]);
    /// let names: Vec<&[u8]> = all.iter().map(|e| &e.name[..]).collect();
    /// assert_eq!(names[..2], [&b"."[..], &b".."[..]]);
    /// assert_eq!(p.getdents64(dir, &mut buf)?, 0); // at the end
    ///
    /// // Go back to the cookie after the third entry, and read on from there.
    /// p.lseek(dir, all[2].d_off, SEEK_SET)?;
    /// let n = p.getdents64(dir, &mut buf)?;
    /// assert_eq!(parse_dirents64(&buf[..n]).len(), 2);
    /// // A buffer too small for one record.
    /// p.lseek(dir, 0, SEEK_SET)?;
    /// assert_eq!(p.getdents64(dir, &mut buf[..8]), Err(Errno::EINVAL));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `ENOTDIR`: `fd` is not a directory;
    /// - `EINVAL`: `buf` cannot hold even the next record (the position
    ///   still moves to that record's cookie, as on Linux); a file with no
    ///   dentry ([`open_with`](Self::open_with)).
    pub fn getdents64(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.on_file(fd, |p, f| {
            let d = dentry(f)?;
            if ftype(d) != S_IFDIR {
                return Err(Errno::ENOTDIR);
            }
            let mut pos = f.lock_pos();
            let mut at = 0;
            let mut next = pos.get();
            let mut too_small = false;
            let mut stopped = false;
            d.sb().fs.readdir_node(d.node(), pos.get(), &mut |e| {
                if !put_dirent64(buf, at, e.ino, e.next as i64, d_type(e.file_type), &e.name) {
                    too_small = at == 0;
                    stopped = true;
                    // Linux sets the position to the entry's cookie before
                    // trying to emit it (`offset_iterate_dir`), so even a
                    // failed first entry moves it.
                    next = e.pos;
                    return false;
                }
                at += dirent64_reclen(e.name.len());
                next = e.next;
                true
            })?;
            if too_small {
                pos.set(next);
                drop(pos);
                // `iterate_dir` marks the access before getdents64 turns
                // the short buffer into EINVAL.
                p.touch_atime(d, f.flags());
                return Err(Errno::EINVAL);
            }
            // Having reached the end, the position rests at the
            // end-of-directory cookie (`offset_readdir`): entries created
            // later are not listed by the same open file.
            pos.set(if stopped {
                next
            } else {
                d.sb().limits.dir_offset_eod
            });
            drop(pos);
            p.touch_atime(d, f.flags());
            Ok(at)
        })
    }

    /// `ftruncate(fd, len)`: sets the size of the regular file open at
    /// `fd` to `len`, cutting it or extending it with zeros, and stamps
    /// mtime and ctime (even when the size does not change). Drops set-ID
    /// bits as a write does.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: a negative `len` (before `fd` is looked at); a file not
    ///   regular or not open for writing (Linux answers `EINVAL` here, not
    ///   `EBADF`);
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `EFBIG`: `len` is past the file system's largest file size.
    pub fn ftruncate(&mut self, fd: i32, len: i64) -> Result<(), Errno> {
        // A negative length is refused before the fd is looked at.
        let len = u64::try_from(len).map_err(|_| Errno::EINVAL)?;
        self.on_file(fd, |p, f| {
            let d = dentry(f)?;
            if ftype(d) != S_IFREG || f.mode() & FMODE_WRITE == 0 {
                return Err(Errno::EINVAL);
            }
            // ftruncate stamps mtime and ctime even at the same size.
            p.do_truncate(d, len, true)
        })
    }
}

impl Task {
    /// Drops the set-ID bits a write by this task's credentials drops
    /// (`file_remove_privs`), with the inode lock held by the caller.
    fn remove_privs(&self, d: &DentryRef) -> Result<(), Errno> {
        let perm = d.inode_perm().ok_or(Errno::EBADF)?.attr();
        if let Some(m) = cred::remove_privs_on_write(&self.cred, &perm) {
            self.setattr(
                d,
                &SetAttr {
                    mode: Some(m & 0o7777),
                    ..SetAttr::default()
                },
            )?;
        }
        Ok(())
    }

    /// Sets the size of a regular file, dropping set-ID bits as a write
    /// does. `stamp`: set mtime and ctime even if the size does not change
    /// (ftruncate and `O_TRUNC` pass `ATTR_MTIME | ATTR_CTIME`; truncate(2)
    /// does not, and tmpfs then stamps them only when the size changes).
    pub(super) fn do_truncate(&self, d: &DentryRef, len: u64, stamp: bool) -> Result<(), Errno> {
        let _g = d.lock_inode();
        let attr = d.inode_perm().ok_or(Errno::ENOENT)?.attr();
        let mut set = SetAttr {
            size: Some(len),
            mtime: stamp.then_some(SetTime::Now),
            ..SetAttr::default()
        };
        if let Some(m) = cred::remove_privs_on_write(&self.cred, &attr) {
            set.mode = Some(m);
        }
        self.setattr(d, &set).map(|_| ())
    }
}

impl Process {
    /// `fallocate(fd, mode, off, len)`: with mode 0, allocates the pages
    /// of `off..off + len` and extends the file to cover them; with
    /// `FALLOC_FL_KEEP_SIZE`, allocates without changing the size; with
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`, frees the range (it
    /// reads back as zeros). Other modes are what tmpfs does not do.
    /// Drops set-ID bits as a write does. The mode is judged before the
    /// fd's write mode, as on Linux (`docs/semantics.md`, "fallocate").
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open or is `O_PATH`; then, after the
    ///   arguments, not open for writing;
    /// - `EINVAL`: `off` negative or `len` not positive;
    /// - `EOPNOTSUPP`: an unknown mode bit, two operations at once, a hole
    ///   punch without `KEEP_SIZE`, collapse, insert or write-zeroes with
    ///   it; then (after the fd's checks) zero-range, collapse, insert,
    ///   unshare and write-zeroes, which tmpfs does not do;
    /// - `ESPIPE`: a FIFO; `EISDIR`: a directory; `ENODEV`: another
    ///   non-regular file;
    /// - `EFBIG`: `off + len` is past the largest file size;
    /// - `ENOSPC`: the tmpfs size limit is reached (nothing is left
    ///   allocated).
    pub fn fallocate(&mut self, fd: i32, mode: i32, off: i64, len: i64) -> Result<(), Errno> {
        self.on_file(fd, |p, f| {
            if off < 0 || len <= 0 {
                return Err(Errno::EINVAL);
            }
            falloc_mode_ok(mode as u32)?;
            let mode = mode as u32;
            if f.mode() & FMODE_WRITE == 0 {
                return Err(Errno::EBADF);
            }
            let d = dentry(f)?;
            match ftype(d) {
                S_IFIFO => return Err(Errno::ESPIPE),
                S_IFDIR => return Err(Errno::EISDIR),
                S_IFREG => {}
                _ => return Err(Errno::ENODEV),
            }
            if off
                .checked_add(len)
                .is_none_or(|e| e as u64 > d.sb().limits.max_file_size)
            {
                return Err(Errno::EFBIG);
            }
            let _g = d.lock_inode();
            d.sb()
                .fs
                .fallocate_node(d.node(), mode, off as u64, len as u64)?;
            // shmem_fallocate's `file_modified`: set-ID bits go as on a
            // write by a caller without CAP_FSETID. Host (6.18, as a user):
            // allocate, KEEP_SIZE and punch hole all drop them; a call
            // refused for space (ENOSPC), size (EFBIG) or mode (EOPNOTSUPP)
            // leaves them, so it follows the file system's success.
            p.remove_privs(d)?;
            crate::vfs_ops::inode::mark_changed(d);
            Ok(())
        })
    }

    /// `fsync(fd)`: nothing to write back on tmpfs (all of it lives in
    /// memory), so it only checks the fd. Any file open for reading or
    /// writing may be synced, a directory included.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `EINVAL`: a FIFO (pipes have no fsync operation).
    pub fn fsync(&mut self, fd: i32) -> Result<(), Errno> {
        self.on_file(fd, |_, f| {
            if FifoFile::of(f).is_some() {
                return Err(Errno::EINVAL);
            }
            Ok(())
        })
    }

    /// `fdatasync(fd)`: as [`fsync`](Self::fsync) (there is no metadata to
    /// skip writing back).
    ///
    /// # Errors
    ///
    /// Those of `fsync`.
    pub fn fdatasync(&mut self, fd: i32) -> Result<(), Errno> {
        self.fsync(fd)
    }
}

/// The entries of a directory fd, read with `getdents64` in batches (what
/// `readdir(3)` does over the syscall): see [`Process::readdir`]. As an
/// [`Iterator`] each entry owns its name ([`Dirent64`](crate::stat::Dirent64));
/// [`next_ref`](ReadDir::next_ref) hands out the next one with its name
/// borrowed from the batch's buffer instead, without allocating.
pub struct ReadDir<'p> {
    p: &'p mut Process,
    fd: i32,
    buf: Vec<u8>,
    /// The bytes of `buf` the last `getdents64` filled.
    len: usize,
    /// Where the next record starts in `buf[..len]`.
    at: usize,
    done: bool,
    /// Opened by [`Process::read_dir`]: `.` and `..` are skipped and the
    /// fd is closed on drop.
    pub(super) owned: bool,
}

impl std::fmt::Debug for ReadDir<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadDir")
            .field("fd", &self.fd)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Drop for ReadDir<'_> {
    fn drop(&mut self) {
        if self.owned {
            let _ = self.p.close(self.fd);
        }
    }
}

impl ReadDir<'_> {
    /// The next entry, its name borrowed from this reader's buffer (valid
    /// until the next call, as glibc's `readdir` result is): the form
    /// without an allocation per entry. Errors (`EBADF`, `ENOTDIR`, ...)
    /// come once, then `None`.
    pub fn next_ref(&mut self) -> Option<Result<crate::stat::Dirent64Ref<'_>, Errno>> {
        let start = loop {
            let mut it = crate::stat::Dirents64::new(&self.buf[self.at..self.len]);
            if let Some(e) = it.next() {
                let start = self.at;
                self.at += it.offset();
                if self.owned && (e.name == b"." || e.name == b"..") {
                    continue;
                }
                break start;
            }
            if self.done {
                return None;
            }
            match self.p.getdents64(self.fd, &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(n) => {
                    self.len = n;
                    self.at = 0;
                }
                Err(e) => {
                    self.done = true;
                    self.len = 0;
                    self.at = 0;
                    return Some(Err(e));
                }
            }
        };
        // The record found above, decoded again for the caller's borrow
        // (the loop cannot hand out a borrow it may still need to refill).
        crate::stat::Dirents64::new(&self.buf[start..self.at])
            .next()
            .map(Ok)
    }
}

impl Iterator for ReadDir<'_> {
    type Item = Result<crate::stat::Dirent64, Errno>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.map(|e| e.to_dirent64()))
    }
}

impl Process {
    /// The entries of the directory open at `fd`, from its current position
    /// on, as an iterator (each `getdents64` call fills a 32 KiB buffer, as
    /// glibc's `readdir` does). Errors (`EBADF`, `ENOTDIR`) come as the
    /// first item.
    pub fn readdir(&mut self, fd: i32) -> ReadDir<'_> {
        ReadDir {
            p: self,
            fd,
            buf: vec![0; 32 * 1024],
            len: 0,
            at: 0,
            done: false,
            owned: false,
        }
    }
}
