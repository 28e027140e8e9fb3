//! What a Rust user expects on top of the Linux calls: read or write a
//! whole file, list a directory by path with typed entries, and an open
//! file that is `std::io::{Read, Write, Seek}`. Every function here is a
//! few of the calls of [`Process`], made exactly as a program would make
//! them (glibc's and std's patterns), so the results and errors are the
//! calls' own; errors convert to `std::io::Error` with `?` (raw OS error
//! codes, so `io::ErrorKind::NotFound` and friends work).
//!
//! [`OpenFile`] has an example of each.

use super::ReadDir;
use crate::Process;
use crate::errno::Errno;
use crate::stat::{Dirent64, Stat};
use crate::uapi::*;
use std::borrow::Cow;
use std::ffi::OsStr;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;

/// What a directory entry is (`d_type`), as `std::fs::FileType` tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileType {
    /// A regular file (`DT_REG`).
    File,
    /// A directory (`DT_DIR`).
    Dir,
    /// A symbolic link (`DT_LNK`).
    Symlink,
    /// A named pipe (`DT_FIFO`).
    Fifo,
    /// A character device (`DT_CHR`).
    CharDevice,
    /// A block device (`DT_BLK`).
    BlockDevice,
    /// A socket (`DT_SOCK`).
    Socket,
    /// The file system did not say (`DT_UNKNOWN`, or a value Linux does
    /// not define): `lstat` the entry to learn it.
    Unknown,
}

impl FileType {
    /// The type a `d_type` value stands for.
    pub fn from_d_type(t: u8) -> FileType {
        match t {
            1 => FileType::Fifo,
            2 => FileType::CharDevice,
            4 => FileType::Dir,
            6 => FileType::BlockDevice,
            8 => FileType::File,
            10 => FileType::Symlink,
            12 => FileType::Socket,
            _ => FileType::Unknown,
        }
    }

    /// The type an `st_mode` (its `S_IFMT` bits) stands for.
    pub fn from_mode(mode: u32) -> FileType {
        // S_IFMT's value is the d_type shifted left by 12 (`IFTODT`).
        FileType::from_d_type(((mode >> 12) & 0o17) as u8)
    }
}

impl Dirent64 {
    /// The entry's type.
    pub fn file_type(&self) -> FileType {
        FileType::from_d_type(self.d_type)
    }

    /// The entry's name as an `OsStr` (names are bytes, as on Linux).
    pub fn name_os(&self) -> &OsStr {
        OsStr::from_bytes(&self.name)
    }

    /// The entry's name as text, with invalid UTF-8 replaced.
    pub fn name_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }
}

/// An open file borrowed from its [`Process`]: `Read`, `Write` and `Seek`
/// through read(2), write(2) and lseek(2) on its fd, closed when dropped
/// (a close error is lost there, as with `std::fs::File`; call
/// [`close`](OpenFile::close) to see it). It borrows the process
/// mutably: to hold two at once, open the second from
/// [`Process::new_thread`], which shares the fd table.
///
/// ```
/// use std::io::{Read, Seek, SeekFrom, Write};
/// use uvfs::uapi::*;
/// use uvfs::{FastPaths, FileType, Process, Vfs};
///
/// # fn main() -> std::io::Result<()> {
/// let vfs = Vfs::new(FastPaths::seeds());
/// let mut p = Process::new(&vfs)?;
/// p.mkdir("/etc", 0o755)?;
/// p.write_file("/etc/motd", b"hello\n")?;
/// assert_eq!(p.read_file("/etc/motd")?, b"hello\n");
///
/// // An open file is Read + Write + Seek, and closes when dropped.
/// {
///     let mut f = p.open_file("/etc/motd", O_RDWR | O_APPEND, 0)?;
///     f.write_all(b"world\n")?;
///     f.seek(SeekFrom::Start(0))?;
///     let mut s = String::new();
///     f.read_to_string(&mut s)?;
///     assert_eq!(s, "hello\nworld\n");
///     assert_eq!(f.metadata()?.st_size, 12);
/// }
///
/// // A directory by path: typed entries, without "." and "..".
/// let mut names: Vec<(String, FileType)> = p
///     .read_dir("/")?
///     .map(|e| e.map(|e| (e.name_lossy().into_owned(), e.file_type())))
///     .collect::<Result<_, _>>()?;
/// names.sort();
/// assert_eq!(names, [("etc".to_string(), FileType::Dir)]);
///
/// // Errors keep their errno through std::io::Error.
/// let e = std::io::Error::from(p.read_file("/nope").unwrap_err());
/// assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
/// # Ok(())
/// # }
/// ```
pub struct OpenFile<'p> {
    p: &'p mut Process,
    fd: i32,
}

impl OpenFile<'_> {
    /// The uvfs fd number.
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// fstat(2): [`Process::fstat`] of this file.
    ///
    /// # Errors
    ///
    /// Those of [`Process::fstat`] (none for a file opened by path).
    pub fn metadata(&mut self) -> Result<Stat, Errno> {
        self.p.fstat(self.fd)
    }

    /// ftruncate(2): [`Process::ftruncate`] to `len` bytes.
    ///
    /// # Errors
    ///
    /// `EFBIG` for a `len` past `i64::MAX`, then those of
    /// [`Process::ftruncate`] (`EINVAL` when not open for writing).
    pub fn set_len(&mut self, len: u64) -> Result<(), Errno> {
        let len = i64::try_from(len).map_err(|_| Errno::EFBIG)?;
        self.p.ftruncate(self.fd, len)
    }

    /// fsync(2): [`Process::fsync`] (nothing to write back on tmpfs).
    ///
    /// # Errors
    ///
    /// Those of [`Process::fsync`] (`EINVAL` on a FIFO).
    pub fn sync_all(&mut self) -> Result<(), Errno> {
        self.p.fsync(self.fd)
    }

    /// pread(2): reads at `off` without moving the file position.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an `off` past `i64::MAX`, then those of
    /// [`Process::pread`].
    pub fn read_at(&mut self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        let off = i64::try_from(off).map_err(|_| Errno::EINVAL)?;
        self.p.pread(self.fd, buf, off)
    }

    /// pwrite(2): writes at `off` without moving the file position (an
    /// `O_APPEND` file still appends, as on Linux).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an `off` past `i64::MAX`, then those of
    /// [`Process::pwrite`].
    pub fn write_at(&mut self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        let off = i64::try_from(off).map_err(|_| Errno::EINVAL)?;
        self.p.pwrite(self.fd, buf, off)
    }

    /// Closes the file and returns close(2)'s result.
    ///
    /// # Errors
    ///
    /// Those of [`Process::close`]: a flush error of a file made by
    /// [`Process::open_with`]; the fd is closed either way.
    pub fn close(self) -> Result<(), Errno> {
        // Not dropped: the close below is the only one.
        let mut this = std::mem::ManuallyDrop::new(self);
        let fd = this.fd;
        this.p.close(fd)
    }

    /// Gives up ownership: the fd stays open in the process's table.
    pub fn into_raw_fd(self) -> i32 {
        std::mem::ManuallyDrop::new(self).fd
    }
}

impl std::fmt::Debug for OpenFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenFile")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl Drop for OpenFile<'_> {
    fn drop(&mut self) {
        let _ = self.p.close(self.fd);
    }
}

impl Read for OpenFile<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.p.read(self.fd, buf)?)
    }
}

impl Write for OpenFile<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(self.p.write(self.fd, buf)?)
    }

    /// Nothing to flush: writes reach the file system at once.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for OpenFile<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let (off, whence) = match pos {
            SeekFrom::Start(o) => (i64::try_from(o).map_err(|_| Errno::EINVAL)?, SEEK_SET),
            SeekFrom::Current(o) => (o, SEEK_CUR),
            SeekFrom::End(o) => (o, SEEK_END),
        };
        Ok(self.p.lseek(self.fd, off, whence)? as u64)
    }
}

impl Process {
    /// open(2) of `path` as an [`OpenFile`] (`O_CLOEXEC` added, as std
    /// does), closed when dropped.
    ///
    /// # Errors
    ///
    /// Those of [`open`](Self::open).
    pub fn open_file<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        flags: i32,
        mode: u32,
    ) -> Result<OpenFile<'_>, Errno> {
        let fd = self.open(path, flags | O_CLOEXEC, mode)?;
        Ok(OpenFile { p: self, fd })
    }

    /// The whole contents of the file at `path` (open, fstat for the size
    /// hint, read until end of file, close), as `std::fs::read`.
    ///
    /// # Errors
    ///
    /// Those of [`open`](Self::open) read-only, then of
    /// [`read`](Self::read) (`EISDIR` for a directory); the file is
    /// closed either way.
    pub fn read_file<P: AsRef<[u8]>>(&mut self, path: P) -> Result<Vec<u8>, Errno> {
        let fd = self.open(path, O_RDONLY | O_CLOEXEC, 0)?;
        let r = self.read_all(fd);
        let c = self.close(fd);
        let v = r?;
        c?;
        Ok(v)
    }

    fn read_all(&mut self, fd: i32) -> Result<Vec<u8>, Errno> {
        let hint = self.fstat(fd)?.st_size.clamp(0, 1 << 30) as usize;
        let mut v = vec![0u8; hint.max(64) + 1];
        let mut len = 0;
        loop {
            if len == v.len() {
                v.resize(v.len() * 2, 0);
            }
            match self.read(fd, &mut v[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
        v.truncate(len);
        Ok(v)
    }

    /// Creates or truncates the file at `path` (mode 0666 less the umask)
    /// and writes all of `data`, as `std::fs::write`. A write that stops
    /// short (the file system full) ends with its error (`ENOSPC`); what
    /// was written stays, as with std.
    ///
    /// # Errors
    ///
    /// Those of [`open`](Self::open) with
    /// `O_WRONLY | O_CREAT | O_TRUNC` (`EISDIR` for a directory), then of
    /// [`write`](Self::write) (`ENOSPC`, `EFBIG`); the file is closed
    /// either way.
    pub fn write_file<P: AsRef<[u8]>>(&mut self, path: P, data: &[u8]) -> Result<(), Errno> {
        let fd = self.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)?;
        let mut done = 0;
        let mut r = Ok(());
        while done < data.len() {
            match self.write(fd, &data[done..]) {
                Ok(0) => {
                    r = Err(Errno::ENOSPC);
                    break;
                }
                Ok(n) => done += n,
                Err(Errno::EINTR) => {}
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        let c = self.close(fd);
        r?;
        c
    }

    /// The entries of the directory at `path`, without `.` and `..`, as
    /// `std::fs::read_dir`: opened with `O_DIRECTORY`, read with
    /// getdents64 in batches, closed when the iterator is dropped.
    ///
    /// # Errors
    ///
    /// Those of [`open`](Self::open) with `O_DIRECTORY` (`ENOTDIR` for a
    /// file that is not a directory, `EACCES` without read permission); an
    /// error of a later [`getdents64`](Self::getdents64) comes as the
    /// iterator's item.
    pub fn read_dir<P: AsRef<[u8]>>(&mut self, path: P) -> Result<ReadDir<'_>, Errno> {
        let fd = self.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)?;
        let mut it = self.readdir(fd);
        it.owned = true;
        Ok(it)
    }
}
