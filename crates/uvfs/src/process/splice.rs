//! File-to-file copies in the kernel's way (Linux's `fs/read_write.c` and
//! the `do_splice_direct` they rest on in `fs/splice.c`):
//! `copy_file_range` and `sendfile`, copying through the page cache of
//! the file system rather than through the caller's memory.
//!
//! # copy_file_range, in Linux's order
//!
//! 1. Both fds (`EBADF`; `O_PATH` included), the positions (the given
//!    offsets, or the files' positions), then the flags (`EINVAL`
//!    unless 0).
//! 2. `generic_file_rw_checks`: a directory on either side is `EISDIR`,
//!    anything else not regular `EINVAL`; the input not open for reading,
//!    or the output not for writing or open with `O_APPEND`, `EBADF`.
//! 3. File systems without their own copy operation (tmpfs) copy only
//!    within one superblock: `EXDEV` otherwise.
//! 4. Offsets that wrap when the length is added (as unsigned numbers)
//!    are `EOVERFLOW`; the length is cut at the input's end; an output
//!    offset at or past the largest file size is `EFBIG`, and the length
//!    is cut below it; overlapping ranges of one file are `EINVAL`.
//! 5. Negative offsets are `EINVAL` (`rw_verify_area`), then a length of
//!    0 returns 0.
//!
//! The positions given move by what was copied, else the files'
//! positions do.
//!
//! # sendfile
//!
//! The input fd (`EBADF`), its read mode (`EBADF`), the offset
//! (`EINVAL` if negative), the output fd and its write mode (`EBADF`); an
//! input reaching past the largest size either file system takes is cut
//! there (`EOVERFLOW` if it starts there); then an output opened with
//! `O_APPEND` is `EINVAL`, as is an input or output that is not a regular
//! file (a directory has no splice operations). It writes at the output's
//! position and moves it; it reads at the offset given (which then
//! moves) or at the input's position (which then moves).

use super::Process;
use super::io::At;
use crate::errno::Errno;
use crate::file_table::{FMODE_PATH, FMODE_READ, FMODE_WRITE, File, FileRef};
use crate::fs::{S_IFDIR, S_IFMT, S_IFREG};
use crate::task_work;
use crate::uapi::*;

/// The chunk copied per step.
const CHUNK: usize = 64 * 1024;

fn ftype(f: &File) -> u32 {
    f.dentry()
        .and_then(|d| d.snap())
        .map_or(0, |s| s.mode & S_IFMT)
}

fn pos_of(f: &File) -> i64 {
    f.lock_pos().get() as i64
}

impl Process {
    fn file_arg(&mut self, fd: i32) -> Result<FileRef, Errno> {
        self.files.get_mask(fd, FMODE_PATH).ok_or(Errno::EBADF)
    }

    /// Copies `count` bytes from `fin` at `pos_in` to `fout` at `pos_out`
    /// through the file system (`do_splice_direct`): the bytes copied; an
    /// error only if nothing was.
    fn splice_direct(
        &self,
        fin: &File,
        pos_in: u64,
        fout: &File,
        pos_out: u64,
        count: usize,
    ) -> Result<usize, Errno> {
        let count = count.min(MAX_RW_COUNT);
        let mut buf = vec![0u8; count.min(CHUNK)];
        let mut done = 0usize;
        while done < count {
            let want = (count - done).min(buf.len());
            let n = match self.task.do_read(
                fin,
                &mut [&mut buf[..want]],
                At::Off(pos_in + done as u64),
                0,
            ) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            let w = match self
                .task
                .do_write(fout, &[&buf[..n]], At::Off(pos_out + done as u64), 0)
            {
                Ok(w) => w,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            done += w;
            if w < n {
                break;
            }
        }
        Ok(done)
    }

    /// `copy_file_range(fd_in, off_in, fd_out, off_out, len, flags)`:
    /// copies up to `len` bytes from the regular file at `fd_in` to the
    /// one at `fd_out` and returns the count (0 at the input's end). An
    /// offset given as `Some` is read and moved by the count, leaving that
    /// file's position alone; `None` uses and moves the file's position.
    /// `flags` must be 0. The checks come in Linux's order (listed in the
    /// source, `process/splice.rs`).
    ///
    /// As on Linux for tmpfs, which has no copy operation of its own, both
    /// files must be on one mount (`EXDEV` otherwise), and a FIFO on either
    /// side is `EINVAL` (`docs/semantics.md`, "copy_file_range,
    /// sendfile").
    ///
    /// Copies inside the VFS (`copy_file_range`, `sendfile`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let a = p.open("/a", O_RDWR | O_CREAT, 0o644)?;
    /// p.write(a, b"0123456789")?;
    /// let b = p.open("/b", O_WRONLY | O_CREAT, 0o644)?;
    /// let mut from = 2i64;
    /// assert_eq!(p.copy_file_range(a, Some(&mut from), b, None, 5, 0)?, 5);
    /// assert_eq!(from, 7);
    /// let mut buf = [0u8; 8];
    /// let r = p.open("/b", O_RDONLY, 0)?;
    /// assert_eq!(p.read(r, &mut buf)?, 5);
    /// assert_eq!(&buf[..5], b"23456");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EBADF`: either fd not open or `O_PATH`; the input not open for
    ///   reading, the output not open for writing or open with `O_APPEND`;
    /// - `EINVAL`: `flags` not 0; a file that is neither regular nor a
    ///   directory; overlapping ranges in one file; a negative offset;
    /// - `EISDIR`: a directory on either side;
    /// - `EXDEV`: the files are on different mounts;
    /// - `EOVERFLOW`: an offset plus `len` wraps;
    /// - `EFBIG`: the output offset is at or past the largest file size;
    /// - `ENOSPC`: nothing could be written for lack of space.
    pub fn copy_file_range(
        &mut self,
        fd_in: i32,
        off_in: Option<&mut i64>,
        fd_out: i32,
        off_out: Option<&mut i64>,
        len: usize,
        flags: u32,
    ) -> Result<usize, Errno> {
        let _call = task_work::enter();
        let fin = self.file_arg(fd_in)?;
        let fout = self.file_arg(fd_out)?;
        let pos_in = off_in.as_deref().copied().unwrap_or_else(|| pos_of(&fin));
        let pos_out = off_out.as_deref().copied().unwrap_or_else(|| pos_of(&fout));
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let (ti, to) = (ftype(&fin), ftype(&fout));
        if ti == S_IFDIR || to == S_IFDIR {
            return Err(Errno::EISDIR);
        }
        if ti != S_IFREG || to != S_IFREG {
            return Err(Errno::EINVAL);
        }
        if fin.mode() & FMODE_READ == 0
            || fout.mode() & FMODE_WRITE == 0
            || fout.flags() & O_APPEND != 0
        {
            return Err(Errno::EBADF);
        }
        // Both are regular files opened by a path: they have dentries.
        let (din, dout) = (
            fin.dentry().ok_or(Errno::EINVAL)?,
            fout.dentry().ok_or(Errno::EINVAL)?,
        );
        if din.sb().id != dout.sb().id {
            return Err(Errno::EXDEV);
        }
        let count = len as u64;
        if (pos_in as u64).wrapping_add(count) < pos_in as u64
            || (pos_out as u64).wrapping_add(count) < pos_out as u64
        {
            return Err(Errno::EOVERFLOW);
        }
        let size_in = din.sb().fs.getattr_node(din.node())?.size;
        let mut count = if pos_in >= size_in as i64 {
            0
        } else {
            count.min(size_in.wrapping_sub(pos_in as u64))
        };
        let max = dout.sb().limits.max_file_size as i64;
        if pos_out >= max {
            return Err(Errno::EFBIG);
        }
        count = count.min(max.wrapping_sub(pos_out) as u64);
        if din.ino() == dout.ino()
            && (pos_out as u64).wrapping_add(count) > pos_in as u64
            && (pos_out as u64) < (pos_in as u64).wrapping_add(count)
        {
            return Err(Errno::EINVAL);
        }
        let verify = |pos: i64| {
            if pos < 0 || pos.checked_add(count as i64).is_none() {
                Err(Errno::EINVAL)
            } else {
                Ok(())
            }
        };
        verify(pos_in)?;
        verify(pos_out)?;
        if count == 0 {
            return Ok(0);
        }
        let n = self.splice_direct(&fin, pos_in as u64, &fout, pos_out as u64, count as usize)?;
        if n > 0 {
            match off_in {
                Some(o) => *o = pos_in + n as i64,
                None => fin.lock_pos().set(pos_in as u64 + n as u64),
            }
            match off_out {
                Some(o) => *o = pos_out + n as i64,
                None => fout.lock_pos().set(pos_out as u64 + n as u64),
            }
        }
        Ok(n)
    }

    /// `sendfile(out_fd, in_fd, offset, count)` between regular files:
    /// copies up to `count` bytes from `in_fd` (at `*offset`, which then
    /// moves, or with `None` at its file position, which then moves) to
    /// `out_fd` at its file position, and returns the count, checking in
    /// Linux's order. Difference from Linux: FIFOs and
    /// sockets are not supported on either side (`EINVAL`;
    /// `docs/semantics.md`, "Known differences kept").
    ///
    /// # Errors
    ///
    /// - `EBADF`: either fd not open or `O_PATH`; the input not open for
    ///   reading, the output not open for writing;
    /// - `EINVAL`: a negative offset; the output opened with `O_APPEND`;
    ///   either file not regular (a directory or a FIFO included);
    /// - `EOVERFLOW`: the input offset is at the largest size a file can
    ///   have;
    /// - `EFBIG`, `ENOSPC`: as for [`write`](Self::write), when nothing
    ///   could be written.
    pub fn sendfile(
        &mut self,
        out_fd: i32,
        in_fd: i32,
        offset: Option<&mut i64>,
        count: usize,
    ) -> Result<usize, Errno> {
        let _call = task_work::enter();
        let fin = self.file_arg(in_fd)?;
        if fin.mode() & FMODE_READ == 0 {
            return Err(Errno::EBADF);
        }
        let pos = offset.as_deref().copied().unwrap_or_else(|| pos_of(&fin));
        if pos < 0 || count > isize::MAX as usize || pos.checked_add(count as i64).is_none() {
            return Err(Errno::EINVAL);
        }
        let mut count = count.min(MAX_RW_COUNT);
        let fout = self.file_arg(out_fd)?;
        if fout.mode() & FMODE_WRITE == 0 {
            return Err(Errno::EBADF);
        }
        let out_pos = pos_of(&fout);
        let limit = |f: &File| {
            f.dentry()
                .map_or(i64::MAX, |d| d.sb().limits.max_file_size as i64)
        };
        let max = limit(&fin).min(limit(&fout));
        if pos + count as i64 > max {
            if pos >= max {
                return Err(Errno::EOVERFLOW);
            }
            count = (max - pos) as usize;
        }
        if out_pos.checked_add(count as i64).is_none() {
            return Err(Errno::EINVAL);
        }
        if fout.flags() & O_APPEND != 0 || ftype(&fin) != S_IFREG || ftype(&fout) != S_IFREG {
            return Err(Errno::EINVAL);
        }
        let n = if count == 0 {
            0
        } else {
            self.splice_direct(&fin, pos as u64, &fout, out_pos as u64, count)?
        };
        let new_pos = pos + n as i64;
        if n > 0 {
            if offset.is_none() {
                fin.lock_pos().set(new_pos as u64);
            }
            fout.lock_pos().set(out_pos as u64 + n as u64);
        }
        if let Some(o) = offset {
            *o = new_pos;
        }
        Ok(n)
    }
}
