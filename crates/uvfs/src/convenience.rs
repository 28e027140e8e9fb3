//! What a Rust user expects beside the system calls: whole-file reads and
//! writes, a typed directory iterator, and an open file that is a
//! [`std::io::Read`], [`Write`](std::io::Write) and
//! [`Seek`](std::io::Seek). Each is a few calls of [`Process`] and
//! behaves as those calls do (same errors, same permission checks);
//! [`Errno`] converts into [`std::io::Error`] with its raw number, so `?`
//! works in functions returning `io::Result`.
//!
//! # Whole files
//!
//! ```
//! use uvfs::{FastPaths, Process, Vfs};
//!
//! let vfs = Vfs::new(FastPaths::seeds());
//! let mut p = Process::new(&vfs)?;
//! p.write_file("/greeting", b"hello")?;
//! assert_eq!(p.read_file("/greeting")?, b"hello");
//! // As std::fs::write: an existing file is truncated first.
//! p.write_file("/greeting", b"hi")?;
//! assert_eq!(p.read_file("/greeting")?, b"hi");
//! # Ok::<(), uvfs::Errno>(())
//! ```
//!
//! # Directories
//!
//! ```
//! use uvfs::convenience::FileType;
//! use uvfs::{FastPaths, Process, Vfs};
//!
//! let vfs = Vfs::new(FastPaths::seeds());
//! let mut p = Process::new(&vfs)?;
//! p.mkdir("/d", 0o755)?;
//! p.write_file("/d/a", b"")?;
//! p.mkdir("/d/sub", 0o755)?;
//! p.mkfifo("/d/pipe", 0o644)?;
//! let mut seen: Vec<(String, FileType)> = p
//!     .read_dir("/d")?
//!     .map(|e| e.map(|e| (e.name_lossy().into_owned(), e.file_type)))
//!     .collect::<Result<_, _>>()?;
//! seen.sort();
//! assert_eq!(
//!     seen,
//!     [
//!         ("a".to_string(), FileType::File),
//!         ("pipe".to_string(), FileType::Fifo),
//!         ("sub".to_string(), FileType::Dir),
//!     ]
//! );
//! # Ok::<(), uvfs::Errno>(())
//! ```
//!
//! # Open files as `std::io` streams
//!
//! ```
//! use std::io::{Read, Seek, SeekFrom, Write};
//! use uvfs::uapi::{O_CREAT, O_RDWR};
//! use uvfs::{FastPaths, Process, Vfs};
//!
//! # fn main() -> std::io::Result<()> {
//! let vfs = Vfs::new(FastPaths::seeds());
//! let p = Process::new(&vfs)?;
//! let mut f = p.open_handle("/log", O_CREAT | O_RDWR, 0o644)?;
//! f.write_all(b"one\ntwo\n")?;
//! f.seek(SeekFrom::Start(4))?;
//! let mut s = String::new();
//! f.read_to_string(&mut s)?;
//! assert_eq!(s, "two\n");
//! // Errors are the calls' errno as std::io::Error.
//! let e = p.open_handle("/missing", 0, 0).unwrap_err();
//! assert_eq!(e, uvfs::Errno::ENOENT);
//! let io: std::io::Error = e.into();
//! assert_eq!(io.raw_os_error(), Some(2));
//! assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
//! # Ok(())
//! # }
//! ```

use crate::errno::Errno;
use crate::process::{Process, ReadDir};
use crate::stat::Stat;
use crate::uapi::*;
use std::borrow::Cow;
use std::io;

/// The type of a directory entry, from its `d_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO.
    Fifo,
    /// A character device node.
    CharDevice,
    /// A block device node.
    BlockDevice,
    /// A socket node.
    Socket,
    /// A type the file system did not say (`DT_UNKNOWN`).
    Unknown,
}

impl FileType {
    /// The type a `d_type` value names.
    pub fn from_d_type(t: u8) -> FileType {
        match t {
            DT_REG => FileType::File,
            DT_DIR => FileType::Dir,
            DT_LNK => FileType::Symlink,
            DT_FIFO => FileType::Fifo,
            DT_CHR => FileType::CharDevice,
            DT_BLK => FileType::BlockDevice,
            DT_SOCK => FileType::Socket,
            _ => FileType::Unknown,
        }
    }
}

/// One entry of [`Process::read_dir`]: never `.` or `..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The name (bytes: names need not be UTF-8).
    pub name: Vec<u8>,
    /// The inode number.
    pub ino: u64,
    /// The type.
    pub file_type: FileType,
}

impl DirEntry {
    /// The name as text, invalid UTF-8 replaced.
    pub fn name_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }
}

/// The entries of a directory ([`Process::read_dir`]); closes its fd
/// when dropped.
pub struct Dir<'p> {
    fd: i32,
    inner: Option<ReadDir<'p>>,
}

impl Iterator for Dir<'_> {
    type Item = Result<DirEntry, Errno>;

    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner.as_mut()?;
        loop {
            match inner.next()? {
                Ok(e) if e.name == b"." || e.name == b".." => continue,
                Ok(e) => {
                    return Some(Ok(DirEntry {
                        file_type: FileType::from_d_type(e.d_type),
                        ino: e.d_ino,
                        name: e.name,
                    }));
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl Drop for Dir<'_> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _ = inner.into_process().close(self.fd);
        }
    }
}

impl Process {
    /// The whole contents of the file at `path` (`open`, `read` to the
    /// end, `close`).
    pub fn read_file<P: AsRef<[u8]>>(&mut self, path: P) -> Result<Vec<u8>, Errno> {
        let fd = self.open(path, O_RDONLY | O_CLOEXEC, 0)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let r = loop {
            match self.read(fd, &mut buf) {
                Ok(0) => break Ok(out),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => break Err(e),
            }
        };
        let c = self.close(fd);
        let out = r?;
        c?;
        Ok(out)
    }

    /// Makes the file at `path` hold `data` (created with mode 0666 less
    /// the umask, truncated if it exists), as `std::fs::write` does.
    pub fn write_file<P: AsRef<[u8]>>(&mut self, path: P, data: &[u8]) -> Result<(), Errno> {
        let fd = self.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)?;
        let mut done = 0;
        let r = loop {
            if done == data.len() {
                break Ok(());
            }
            match self.write(fd, &data[done..]) {
                Ok(0) => break Err(Errno::EIO),
                Ok(n) => done += n,
                Err(e) => break Err(e),
            }
        };
        let c = self.close(fd);
        r?;
        c
    }

    /// The entries of the directory at `path`, `.` and `..` left out,
    /// each with its type (`open` with `O_DIRECTORY`, then `getdents64`
    /// in batches; the fd is closed when the iterator is dropped).
    pub fn read_dir<P: AsRef<[u8]>>(&mut self, path: P) -> Result<Dir<'_>, Errno> {
        let fd = self.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)?;
        Ok(Dir {
            fd,
            inner: Some(self.readdir(fd)),
        })
    }

    /// Opens `path` as `openat` does and returns the open file as a
    /// [`FileHandle`]: a `Read + Write + Seek` stream on a thread handle
    /// of this process (the fd is in this process's table; the handle
    /// closes it when dropped).
    pub fn open_handle<P: AsRef<[u8]>>(
        &self,
        path: P,
        flags: i32,
        mode: u32,
    ) -> Result<FileHandle, Errno> {
        let mut p = self.new_thread();
        let fd = p.open(path, flags, mode)?;
        Ok(FileHandle { p, fd })
    }
}

/// An open file of a [`Process`] as a `std::io` stream: reads, writes and
/// seeks are the process's `read`, `write` and `lseek` on its fd.
pub struct FileHandle {
    p: Process,
    fd: i32,
}

impl FileHandle {
    /// Takes ownership of `fd`, an fd of `process`'s table.
    pub fn from_fd(process: &Process, fd: i32) -> FileHandle {
        FileHandle {
            p: process.new_thread(),
            fd,
        }
    }

    /// The fd.
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Gives the fd up without closing it.
    pub fn into_fd(mut self) -> i32 {
        std::mem::replace(&mut self.fd, -1)
    }

    /// `fstat` of the file.
    pub fn metadata(&mut self) -> Result<Stat, Errno> {
        self.p.fstat(self.fd)
    }

    /// `close`, reporting its error (dropping the handle closes too, and
    /// ignores it).
    pub fn close(mut self) -> Result<(), Errno> {
        let fd = std::mem::replace(&mut self.fd, -1);
        self.p.close(fd)
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        if self.fd >= 0 {
            let _ = self.p.close(self.fd);
        }
    }
}

impl io::Read for FileHandle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.p.read(self.fd, buf)?)
    }
}

impl io::Write for FileHandle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(self.p.write(self.fd, buf)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl io::Seek for FileHandle {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        let (off, whence) = match pos {
            io::SeekFrom::Start(o) => (i64::try_from(o).map_err(|_| Errno::EINVAL)?, SEEK_SET),
            io::SeekFrom::Current(o) => (o, SEEK_CUR),
            io::SeekFrom::End(o) => (o, SEEK_END),
        };
        Ok(self.p.lseek(self.fd, off, whence)? as u64)
    }
}

impl std::fmt::Debug for FileHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileHandle").field("fd", &self.fd).finish()
    }
}
