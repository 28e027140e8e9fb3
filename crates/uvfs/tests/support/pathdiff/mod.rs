//! The differential harness of the path API against the host kernel (the
//! tests and the description are in `path_differential.rs`; the findings'
//! reproductions in `path_findings_differential.rs`): observations, fds as
//! indexes, the [`Backend`] trait, and the submodules with the operations
//! and a run, the comparison, the generator, the host side, the uvfs side
//! and the driver.

pub mod compare;
pub mod drive;
pub mod generator;
pub mod host;
pub mod ops;
pub mod uvfs_side;

pub use compare::*;
pub use drive::*;
pub use generator::*;
pub use host::*;
pub use ops::*;

use crate::support::rng::Rng;
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};

pub type R<T> = Result<T, i32>;

pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
pub const AT_REMOVEDIR: i32 = 0x200;
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
pub const AT_EACCESS: i32 = 0x200;
pub const AT_EMPTY_PATH: i32 = 0x1000;
pub const AT_NO_AUTOMOUNT: i32 = 0x800;
pub const O_RDONLY: i32 = 0;
pub const O_WRONLY: i32 = 1;
pub const O_RDWR: i32 = 2;
pub const O_CREAT: i32 = 0o100;
pub const O_EXCL: i32 = 0o200;
pub const O_TRUNC: i32 = 0o1000;
pub const O_APPEND: i32 = 0o2000;
pub const O_NONBLOCK: i32 = 0o4000;
pub const O_DIRECT: i32 = 0o40000;
pub const O_DIRECTORY: i32 = 0o200000;
pub const O_NOFOLLOW: i32 = 0o400000;
pub const O_NOATIME: i32 = 0o1000000;
pub const O_CLOEXEC: i32 = 0o2000000;
pub const O_SYNC: i32 = 0o4010000;
pub const O_PATH: i32 = 0o10000000;
pub const O_TMPFILE: i32 = 0o20200000;
pub const SEEK_SET: i32 = 0;
pub const SEEK_CUR: i32 = 1;
pub const SEEK_END: i32 = 2;
pub const SEEK_DATA: i32 = 3;
pub const SEEK_HOLE: i32 = 4;
pub const S_IFMT: u32 = 0o170000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;
pub const ELOOP: i32 = 40;
pub const UTIME_NOW: i64 = (1 << 30) - 1;
pub const UTIME_OMIT: i64 = (1 << 30) - 2;
pub const STATX_BASIC_STATS: u32 = 0x7ff;
pub const STATX_BTIME: u32 = 0x800;
pub const STATX_ATIME: u32 = 0x20;
pub const STATX_MTIME: u32 = 0x40;
pub const STATX_CTIME: u32 = 0x80;

/// What an fd index that is not open stands for on both sides.
pub const CLOSED_FD: i32 = 900_000;
/// Times before this (2017-07-14) only come from utimensat/futimens.
pub const OLD_TIME: i64 = 1_500_000_000;
/// The size limit of the host's tmpfs and of uvfs's root tmpfs.
pub const HOST_TMPFS_SIZE: u64 = crate::support::host::SANDBOX_TMPFS_SIZE;
/// The end-of-directory cookie of tmpfs (`DIR_OFFSET_EOD`).
pub const DIR_OFFSET_EOD: i64 = i32::MAX as i64;
/// The sandbox directory's parent, on both sides.
pub const SHM: &str = "/dev/shm";

/// The default seeds: these, and `1..=RANGE_SEEDS`.
pub const SEEDS: [u64; 6] = [0x5eed, 0xdead_beef, 0x0123_4567_89ab_cdef, 42, 7777, 31337];
pub const RANGE_SEEDS: u64 = 58;
pub const OPS_PER_SEED: usize = 2000;

pub fn default_seeds() -> Vec<u64> {
    SEEDS.iter().copied().chain(1..=RANGE_SEEDS).collect()
}

// ---------------------------------------------------------------------------
// Observations.
// ---------------------------------------------------------------------------

/// A timestamp, as `struct timespec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ts {
    pub sec: i64,
    pub nsec: i64,
}

/// A stat or statx result, normalised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct St {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blocks: i64,
    pub blksize: i64,
    pub atime: Ts,
    pub mtime: Ts,
    pub ctime: Ts,
    /// statx only: `stx_mask`, `stx_attributes`, `stx_attributes_mask`.
    pub statx: Option<(u32, u64, u64)>,
}

/// One getdents64 record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dent {
    pub ino: u64,
    pub off: i64,
    pub ty: u8,
    pub name: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Unit,
    Num(i64),
    /// A new fd (its number is not compared).
    Fd,
    Stat(Box<St>),
    Bytes(Vec<u8>),
    /// getdents64: the byte count and the records.
    Dents(usize, Vec<Dent>),
}

pub type Res = Result<Val, i32>;

pub fn errno_name(e: i32) -> String {
    format!("{:?}", uvfs::Errno::from_raw(e))
}

pub fn show_bytes(b: &[u8]) -> String {
    if b.len() <= 48 {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        let h = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
            (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
        });
        format!(
            "<{} bytes {:?}..{:?} fnv {h:016x}>",
            b.len(),
            String::from_utf8_lossy(&b[..24]),
            String::from_utf8_lossy(&b[b.len() - 12..])
        )
    }
}

impl fmt::Display for St {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{ino {}:{} mode {:o} nlink {} uid {} gid {} size {} blocks {} blksize {} rdev {} a {}.{:09} m {}.{:09} c {}.{:09}",
            self.dev,
            self.ino,
            self.mode,
            self.nlink,
            self.uid,
            self.gid,
            self.size,
            self.blocks,
            self.blksize,
            self.rdev,
            self.atime.sec,
            self.atime.nsec,
            self.mtime.sec,
            self.mtime.nsec,
            self.ctime.sec,
            self.ctime.nsec
        )?;
        if let Some((m, a, am)) = self.statx {
            write!(f, " stx_mask {m:#x} attr {a:#x}/{am:#x}")?;
        }
        write!(f, "}}")
    }
}

pub fn show_res(r: &Res) -> String {
    match r {
        Err(e) => format!("Err({})", errno_name(*e)),
        Ok(Val::Unit) => "Ok".into(),
        Ok(Val::Num(n)) => format!("Ok({n})"),
        Ok(Val::Fd) => "Ok(fd)".into(),
        Ok(Val::Stat(s)) => format!("Ok({s})"),
        Ok(Val::Bytes(b)) => format!("Ok({})", show_bytes(b)),
        Ok(Val::Dents(n, d)) => {
            let mut s = format!("Ok({n} bytes:");
            for e in d {
                let _ = write!(
                    s,
                    " [{} ino {} off {} type {}]",
                    String::from_utf8_lossy(&e.name),
                    e.ino,
                    e.off,
                    e.ty
                );
            }
            s.push(')');
            s
        }
    }
}

// ---------------------------------------------------------------------------
// Fds as indexes.
// ---------------------------------------------------------------------------

/// An fd argument: an index into the run's list of opened fds, the cwd, or
/// a raw invalid number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fd {
    Idx(usize),
    Cwd,
    Bad(i32),
}

impl fmt::Display for Fd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fd::Idx(i) => write!(f, "#{i}"),
            Fd::Cwd => write!(f, "AT_FDCWD"),
            Fd::Bad(n) => write!(f, "{n}"),
        }
    }
}

/// One side's opened fds: every open call appends an entry (`None` if it
/// failed), close clears it.
#[derive(Default)]
pub struct FdList(Vec<Option<i32>>);

impl FdList {
    pub fn raw(&self, fd: Fd) -> i32 {
        match fd {
            Fd::Idx(i) => self.0.get(i).copied().flatten().unwrap_or(CLOSED_FD),
            Fd::Cwd => AT_FDCWD,
            Fd::Bad(n) => n,
        }
    }
}

// ---------------------------------------------------------------------------
// The backend interface: one method per call of the path API.
// ---------------------------------------------------------------------------

/// Who runs a sequence: root, or an unprivileged user (`USER`) who owns
/// the top directory (root made it and chowned it) and may reach the
/// root-owned directories above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    Root,
    User,
}

/// The user of [`Who::User`]: uid, gid and supplementary groups (65534 is
/// among the generator's chown targets, so a chown to a group the user is
/// in succeeds, others fail with EPERM).
pub const USER_UID: u32 = 1000;
pub const USER_GID: u32 = 1000;
pub const USER_GROUPS: [u32; 2] = [1000, 65534];

pub trait Backend {
    fn fds(&mut self) -> &mut FdList;
    /// From here on, act as [`USER_UID`]/[`USER_GID`] with
    /// [`USER_GROUPS`], with no capabilities (for good: the side's thread
    /// or process is not used as root again).
    fn become_user(&mut self);
    /// How often to retry a call that failed with ELOOP. A path walk that
    /// fails with ELOOP has changed nothing, and Linux's ELOOP is timing
    /// dependent: `total_link_count` lives in the `nameidata`, which the
    /// ref-walk retry after a failed RCU walk (`-ECHILD`) reuses, so links
    /// followed by the abandoned RCU attempt count again and a path with
    /// more than 20 links can fail under load (seen: a 40-link chain that
    /// is normally fine). The host retries; uvfs has no such artefact.
    fn eloop_retries(&self) -> usize {
        0
    }
    fn open(&mut self, path: &[u8], flags: i32, mode: u32) -> R<i32>;
    fn openat(&mut self, dir: Fd, path: &[u8], flags: i32, mode: u32) -> R<i32>;
    fn creat(&mut self, path: &[u8], mode: u32) -> R<i32>;
    fn close(&mut self, fd: Fd) -> R<()>;
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize>;
    fn write(&mut self, fd: Fd, buf: &[u8]) -> R<usize>;
    fn pread(&mut self, fd: Fd, buf: &mut [u8], off: i64) -> R<usize>;
    fn pwrite(&mut self, fd: Fd, buf: &[u8], off: i64) -> R<usize>;
    fn readv(&mut self, fd: Fd, bufs: &mut [&mut [u8]]) -> R<usize>;
    fn writev(&mut self, fd: Fd, bufs: &[&[u8]]) -> R<usize>;
    fn lseek(&mut self, fd: Fd, off: i64, whence: i32) -> R<i64>;
    fn stat(&mut self, path: &[u8]) -> R<St>;
    fn lstat(&mut self, path: &[u8]) -> R<St>;
    fn fstat(&mut self, fd: Fd) -> R<St>;
    fn fstatat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<St>;
    fn statx(&mut self, dir: Fd, path: &[u8], flags: i32, mask: u32) -> R<St>;
    fn truncate(&mut self, path: &[u8], len: i64) -> R<()>;
    fn ftruncate(&mut self, fd: Fd, len: i64) -> R<()>;
    fn fallocate(&mut self, fd: Fd, mode: i32, off: i64, len: i64) -> R<()>;
    fn mkdir(&mut self, path: &[u8], mode: u32) -> R<()>;
    fn mkdirat(&mut self, dir: Fd, path: &[u8], mode: u32) -> R<()>;
    fn rmdir(&mut self, path: &[u8]) -> R<()>;
    fn unlink(&mut self, path: &[u8]) -> R<()>;
    fn unlinkat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<()>;
    fn rename(&mut self, old: &[u8], new: &[u8]) -> R<()>;
    fn renameat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8]) -> R<()>;
    fn renameat2(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: u32) -> R<()>;
    fn link(&mut self, old: &[u8], new: &[u8]) -> R<()>;
    fn linkat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: i32) -> R<()>;
    fn symlink(&mut self, target: &[u8], path: &[u8]) -> R<()>;
    fn symlinkat(&mut self, target: &[u8], dir: Fd, path: &[u8]) -> R<()>;
    fn readlink(&mut self, path: &[u8], buf: &mut [u8]) -> R<usize>;
    fn readlinkat(&mut self, dir: Fd, path: &[u8], buf: &mut [u8]) -> R<usize>;
    fn getdents64(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize>;
    fn chdir(&mut self, path: &[u8]) -> R<()>;
    fn fchdir(&mut self, fd: Fd) -> R<()>;
    fn getcwd(&mut self) -> R<Vec<u8>>;
    fn chmod(&mut self, path: &[u8], mode: u32) -> R<()>;
    fn fchmod(&mut self, fd: Fd, mode: u32) -> R<()>;
    fn fchmodat(&mut self, dir: Fd, path: &[u8], mode: u32, flags: i32) -> R<()>;
    fn chown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()>;
    fn lchown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()>;
    fn fchown(&mut self, fd: Fd, uid: u32, gid: u32) -> R<()>;
    fn fchownat(&mut self, dir: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> R<()>;
    fn umask(&mut self, mask: u32) -> u32;
    fn access(&mut self, path: &[u8], mode: i32) -> R<()>;
    fn faccessat(&mut self, dir: Fd, path: &[u8], mode: i32, flags: i32) -> R<()>;
    fn utimensat(&mut self, dir: Fd, path: &[u8], times: Option<[Ts; 2]>, flags: i32) -> R<()>;
    fn futimens(&mut self, fd: Fd, times: Option<[Ts; 2]>) -> R<()>;
    fn fsync(&mut self, fd: Fd) -> R<()>;
    fn fdatasync(&mut self, fd: Fd) -> R<()>;
}
