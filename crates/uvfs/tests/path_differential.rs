//! Differential test of the path API against the host kernel.
//!
//! A seeded generator produces a sequence of path and file calls (every call
//! of the `Process` path API: open/openat/creat, read/write/pread/pwrite/
//! readv/writev, lseek, stat/lstat/fstat/fstatat/statx, truncate/ftruncate/
//! fallocate, mkdir/mkdirat, rmdir/unlink/unlinkat, rename/renameat/
//! renameat2, link/linkat, symlink/symlinkat, readlink/readlinkat,
//! getdents64, chdir/fchdir/getcwd, chmod/fchmod/fchmodat, chown/lchown/
//! fchown/fchownat, umask, access/faccessat, utimensat/futimens, fsync/
//! fdatasync) with valid and invalid arguments over a small pool of names,
//! so that collisions, symlink loops, long names and long paths, trailing
//! slashes, several fds on one file, unlinked-but-open files and the like
//! happen often. The sequence runs on the host kernel and on uvfs (both fast
//! path presets), each side behind the [`Backend`] trait; fds are passed as
//! indexes into the run's own list of opened fds, so the two sides' fd
//! numbers need not agree. After every call the results must agree; after
//! the sequence, a recursive dump of the whole tree (getdents64 order and
//! `d_off` cookies, lstat of every entry, symlink targets, the data/hole map
//! and data of every regular file) must agree too.
//!
//! # The host sandbox
//!
//! The host side runs in a thread of its own that first calls
//! `unshare(CLONE_NEWNS | CLONE_FS)`: cwd, root and umask (the `fs_struct`)
//! and the mount namespace become private to that thread, so chdir and
//! umask are part of every sequence without disturbing the test process's
//! other threads (no forked child is needed: after `unshare(CLONE_FS)` the
//! cwd is no longer process-wide). In the private namespace it mounts a fresh tmpfs
//! (`mode=755,size=256m,nr_inodes=0`; the uvfs side's root tmpfs gets the
//! same options: a size limit, or a `fallocate` of `i64::MAX` bytes would eat
//! the machine's memory) on `/dev/shm` and chroots into it, then creates
//! `/dev/shm/uvfs-diff-<pid>-<n>` (mkdir -p, umask 022) and chdirs there;
//! the uvfs side creates the same path the same way in a fresh `Vfs`. Both
//! sides therefore have the same absolute paths and the same tree from `/`
//! down, and no path, however many `..` or symlinks it goes through, can
//! reach the host's real files. Without `CAP_SYS_ADMIN`/`CAP_SYS_CHROOT`
//! (non-root) the host side falls back to a plain directory of the real
//! `/dev/shm` (thread-private cwd/umask only); the final dump then starts at
//! that directory. Escapes from it need a chain of generated `..` symlinks
//! and only ever touch what the unprivileged user may touch. That fallback
//! is best effort and not exercised here (we run as root): `..` of the
//! sandbox is the real, shared `/dev/shm`, so calls that reach it can differ
//! from uvfs for reasons that are not uvfs's.
//!
//! # What is compared
//!
//! - Every call: `Ok`/`Err` and the errno; returned counts and offsets; the
//!   bytes read (read, pread, readv, readlink, getcwd); getdents64: the byte
//!   count and every record (`d_ino` through the inode map, `d_off`,
//!   `d_type`, name).
//! - stat/lstat/fstat/fstatat/statx: `st_mode` (type and permission bits),
//!   `st_size`, `st_nlink`, `st_blocks`, `st_blksize`, `st_uid`, `st_gid`,
//!   `st_rdev`; for statx also `stx_mask`, `stx_attributes` and
//!   `stx_attributes_mask`.
//! - Inode identity: the first time a host `(st_dev, st_ino)` is seen it is
//!   paired with the uvfs `(st_dev, st_ino)` seen in the same place; later
//!   observations must respect that pairing in both directions (so two host
//!   names of one inode are one uvfs inode, and neither side reuses a number).
//! - Timestamps, only where deterministic: a time before 2017 can only have
//!   been set by utimensat/futimens, so atime and mtime are compared exactly
//!   when either side reports such a value; otherwise, for mtime and ctime
//!   of non-directories, whether the value changed since the previous
//!   observation of the same inode on the same side must agree, unless a
//!   rename succeeded in between. The host's tmpfs uses multigrain
//!   timestamps: an inode stamped with its own clock after a stat always
//!   gets a new, fine-grained time. But Linux stamps the other inodes of a
//!   rename (both directories, the moved and the replaced inode) with the
//!   time taken for the old directory, and a directory in link/unlink with
//!   the time taken for the linked inode (`simple_rename_timestamp`,
//!   `shmem_link`, `shmem_unlink`); when that inode was not queried, the time
//!   is the coarse clock, which may equal the previous stamp or not depending
//!   on timer ticks. Those relations are timing, not semantics.
//!
//! # Deliberate exclusions (documented differences, not bugs)
//!
//! - `st_dev`, `st_ino` values, `stx_dev_*`: different devices and inode
//!   allocators; only the pairing above is checked.
//! - fd numbers returned by open/openat/creat: the host test process has
//!   fds of its own; only success is compared (fds are indexes). An index
//!   whose fd was closed, or whose open failed, is passed as fd 900000 on
//!   both sides (EBADF), never as a stale number that may have been reused.
//! - Absolute wall-clock times and atime relations: an atime is stamped with
//!   the coarse clock (not multigrain), and relatime compares it with mtime/
//!   ctime, so whether a read visibly changes atime is timing dependent;
//!   btime is not compared.
//! - `RENAME_WHITEOUT` is never generated: the host creates a whiteout
//!   character device, uvfs's tmpfs rejects it (`EINVAL`, no device nodes;
//!   documented in `fs/tmpfs.rs`).
//! - getdents64 resumption after the entry a cookie names was removed and
//!   no older entry is left: Linux 6.18 restarts from the head, uvfs ends the
//!   listing (the divergence documented in `fs/tmpfs.rs`'s module doc). The
//!   comparison stays exact; instead the generator never removes a name
//!   (unlink, unlinkat, rmdir, rename) while a directory fd is in the middle
//!   of a listing (a getdents64 that did not end at the end cookie, or an
//!   lseek SEEK_SET past the dots): it first rewinds such fds with
//!   lseek(fd, 0, SEEK_SET). Seen before that rule as: list a directory
//!   up to its oldest entry, rename that entry away, create a new one,
//!   getdents64 again (host: the whole directory from the head; uvfs: 0).
//! - Embedded NUL bytes in paths: the host C API cannot express them.
//! - A host call that fails with ELOOP is retried (up to 8 times; a failed
//!   path walk changes nothing): Linux counts the links an abandoned
//!   RCU-walk attempt followed again in the ref-walk retry, so a path of
//!   more than 20 links (the 40-link chain) can spuriously fail under load
//!   (see `Backend::eloop_retries`).
//! - futimens is glibc's (a libc function, not a syscall): for a negative
//!   fd glibc answers EBADF without asking the kernel, so that is the
//!   reference; every other call is the syscall (fchmodat, faccessat,
//!   renameat2, getdents64, getcwd through `syscall(2)`, so glibc emulation
//!   never answers instead of the kernel).
//! - Root bypasses permission checks (`EACCES`), so permission errors are not
//!   exercised beyond root's own rules (X_OK, sticky bits etc.); a non-root
//!   pass is future work.
//!
//! # Known mismatches the default generator leaves out
//!
//! Every mismatch found is a uvfs bug until fixed; each has a minimal
//! reproduction in [`known_cases`] (run by the ignored test
//! `known_mismatches`) and a section in /work/notes/diff-findings.md. So
//! that the default run stays green without loosening any comparison, the
//! generator avoids these cases unless `UVFS_DIFF_KNOWN=1` (see "Finding N"
//! in `Gen`; `Gen::avoid` decides): a case is generated when
//! `UVFS_DIFF_KNOWN=1` or when its finding is in [`FIXED`] (fixed on main
//! since; their reproductions then run in `fixed_findings_stay_fixed`).
//! Each restriction, and whether it is still active at the time of writing:
//! - 3 (active): statx masks without the time bits (0 and `STATX_TYPE`);
//! - 5b (active): lseek positions above 1 MiB, and only SEEK_SET on
//!   directory fds;
//! - 7, 21: trailing slashes on the names of RENAME_NOREPLACE/EXCHANGE;
//! - 9: negative pread/pwrite offsets and ftruncate lengths;
//! - 11: futimens on O_PATH fds;
//! - 12: relative 256-byte names;
//! - 14: getdents64/SEEK_CUR on a directory fd whose listing reached the
//!   end (it is rewound with lseek SEEK_SET instead);
//! - 15: readv/writev of zero total length;
//! - 16: O_CREAT|O_EXCL on a path ending in `.` or `..`;
//! - 17 (active): getdents64 buffers smaller than an entry (sizes 300,
//!   1024, 4096);
//! - 18: O_DIRECT;
//! - 19: O_DIRECTORY/O_TMPFILE with a path of 4096 bytes or more;
//! - 20: more than one allocating fallocate per sequence;
//! - 22, 27: O_TMPFILE with O_NOFOLLOW, O_CREAT|O_NOFOLLOW without O_EXCL;
//! - 24 (active, for 24d): after a removed directory (rmdir, unlinkat, or a
//!   rename whose target an `fstatat` probe found to be a directory) the
//!   sequence chdirs back to the sandbox directory and closes every fd but
//!   #0; the sandbox directory itself is not named by path;
//! - 25: truncate(2) to a length that may be the current size;
//! - 26: names over 255 bytes in renames;
//! - 28 (active): pwrite at `i64::MAX - 4096` and file sizes of `i64::MAX`
//!   (data in the last page; lseek is limited by 5b);
//! - 31: futimens of a negative fd with both times UTIME_OMIT;
//! - 32: symlink chains 36/37 links long ending in `missing` (instead of
//!   40/41 ending in `a`).
//!
//! # Running
//!
//! By default 64 fixed seeds of 2000 generated calls each run (host, then
//! uvfs with the seeds and the stock fast-path presets; a few seconds in
//! release mode), and the (call, result) pairs the host reached must include
//! [`MUST_COVER`]. `UVFS_DIFF_SEED=<n>` replays one
//! seed (and prints its whole log with `UVFS_DIFF_VERBOSE=1`; with
//! `UVFS_DIFF_MINIMIZE=1` it also shrinks a failing sequence to a short
//! one that fails the same way); `UVFS_DIFF_LONG=<secs>` runs fresh seeds
//! for that long after the fixed ones (soak mode); `UVFS_DIFF_KNOWN=1`
//! generates the known mismatches too. A mismatch panics with the seed, the
//! op index, every op so far with both results, and the two results that
//! differ.
#![cfg(target_os = "linux")]

mod common;
use common::Rng;
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

type R<T> = Result<T, i32>;

const AT_FDCWD: i32 = -100;
const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
const AT_REMOVEDIR: i32 = 0x200;
const AT_SYMLINK_FOLLOW: i32 = 0x400;
const AT_EACCESS: i32 = 0x200;
const AT_EMPTY_PATH: i32 = 0x1000;
const AT_NO_AUTOMOUNT: i32 = 0x800;
const O_RDONLY: i32 = 0;
const O_WRONLY: i32 = 1;
const O_RDWR: i32 = 2;
const O_CREAT: i32 = 0o100;
const O_EXCL: i32 = 0o200;
const O_TRUNC: i32 = 0o1000;
const O_APPEND: i32 = 0o2000;
const O_NONBLOCK: i32 = 0o4000;
const O_DIRECT: i32 = 0o40000;
const O_DIRECTORY: i32 = 0o200000;
const O_NOFOLLOW: i32 = 0o400000;
const O_NOATIME: i32 = 0o1000000;
const O_CLOEXEC: i32 = 0o2000000;
const O_SYNC: i32 = 0o4010000;
const O_PATH: i32 = 0o10000000;
const O_TMPFILE: i32 = 0o20200000;
const SEEK_SET: i32 = 0;
const SEEK_CUR: i32 = 1;
const SEEK_END: i32 = 2;
const SEEK_DATA: i32 = 3;
const SEEK_HOLE: i32 = 4;
const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const ELOOP: i32 = 40;
const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;
const STATX_BASIC_STATS: u32 = 0x7ff;
const STATX_BTIME: u32 = 0x800;
const STATX_ATIME: u32 = 0x20;
const STATX_MTIME: u32 = 0x40;
const STATX_CTIME: u32 = 0x80;

/// What an fd index that is not open stands for on both sides.
const CLOSED_FD: i32 = 900_000;
/// Times before this (2017-07-14) only come from utimensat/futimens.
const OLD_TIME: i64 = 1_500_000_000;
/// The size limit of the host's tmpfs and of uvfs's root tmpfs.
const HOST_TMPFS_SIZE: u64 = 256 << 20;
/// The end-of-directory cookie of tmpfs (`DIR_OFFSET_EOD`).
const DIR_OFFSET_EOD: i64 = i32::MAX as i64;
/// The sandbox directory's parent, on both sides.
const SHM: &str = "/dev/shm";

/// The default seeds: these, and `1..=RANGE_SEEDS`.
const SEEDS: [u64; 6] = [0x5eed, 0xdead_beef, 0x0123_4567_89ab_cdef, 42, 7777, 31337];
const RANGE_SEEDS: u64 = 58;
const OPS_PER_SEED: usize = 2000;

fn default_seeds() -> Vec<u64> {
    SEEDS.iter().copied().chain(1..=RANGE_SEEDS).collect()
}

// ---------------------------------------------------------------------------
// Observations.
// ---------------------------------------------------------------------------

/// A timestamp, as `struct timespec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ts {
    sec: i64,
    nsec: i64,
}

/// A stat or statx result, normalised.
#[derive(Clone, Debug, PartialEq, Eq)]
struct St {
    dev: u64,
    ino: u64,
    mode: u32,
    nlink: u64,
    uid: u32,
    gid: u32,
    rdev: u64,
    size: i64,
    blocks: i64,
    blksize: i64,
    atime: Ts,
    mtime: Ts,
    ctime: Ts,
    /// statx only: `stx_mask`, `stx_attributes`, `stx_attributes_mask`.
    statx: Option<(u32, u64, u64)>,
}

/// One getdents64 record.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Dent {
    ino: u64,
    off: i64,
    ty: u8,
    name: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    Unit,
    Num(i64),
    /// A new fd (its number is not compared).
    Fd,
    Stat(Box<St>),
    Bytes(Vec<u8>),
    /// getdents64: the byte count and the records.
    Dents(usize, Vec<Dent>),
}

type Res = Result<Val, i32>;

fn errno_name(e: i32) -> String {
    format!("{:?}", uvfs::Errno::from_raw(e))
}

fn show_bytes(b: &[u8]) -> String {
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

fn show_res(r: &Res) -> String {
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
enum Fd {
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
struct FdList(Vec<Option<i32>>);

impl FdList {
    fn raw(&self, fd: Fd) -> i32 {
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

trait Backend {
    fn fds(&mut self) -> &mut FdList;
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

// ---------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------

/// Write data: `len` bytes of a pattern starting at `seed`.
#[derive(Clone, Copy, Debug)]
struct Data {
    len: usize,
    seed: u8,
}

impl Data {
    fn bytes(self) -> Vec<u8> {
        (0..self.len)
            .map(|i| self.seed.wrapping_add((i % 251) as u8))
            .collect()
    }
}

type P = Vec<u8>;

#[derive(Clone, Debug)]
enum Op {
    Open(P, i32, u32),
    Openat(Fd, P, i32, u32),
    Creat(P, u32),
    Close(Fd),
    Read(Fd, usize),
    Write(Fd, Data),
    Pread(Fd, usize, i64),
    Pwrite(Fd, Data, i64),
    Readv(Fd, Vec<usize>),
    Writev(Fd, Vec<Data>),
    Lseek(Fd, i64, i32),
    Stat(P),
    Lstat(P),
    Fstat(Fd),
    Fstatat(Fd, P, i32),
    Statx(Fd, P, i32, u32),
    Truncate(P, i64),
    Ftruncate(Fd, i64),
    Fallocate(Fd, i32, i64, i64),
    Mkdir(P, u32),
    Mkdirat(Fd, P, u32),
    Rmdir(P),
    Unlink(P),
    Unlinkat(Fd, P, i32),
    Rename(P, P),
    Renameat(Fd, P, Fd, P),
    Renameat2(Fd, P, Fd, P, u32),
    Link(P, P),
    Linkat(Fd, P, Fd, P, i32),
    Symlink(P, P),
    Symlinkat(P, Fd, P),
    Readlink(P, usize),
    Readlinkat(Fd, P, usize),
    Getdents(Fd, usize),
    Chdir(P),
    Fchdir(Fd),
    Getcwd,
    Chmod(P, u32),
    Fchmod(Fd, u32),
    Fchmodat(Fd, P, u32, i32),
    Chown(P, u32, u32),
    Lchown(P, u32, u32),
    Fchown(Fd, u32, u32),
    Fchownat(Fd, P, u32, u32, i32),
    Umask(u32),
    Access(P, i32),
    Faccessat(Fd, P, i32, i32),
    Utimensat(Fd, P, Option<[Ts; 2]>, i32),
    Futimens(Fd, Option<[Ts; 2]>),
    Fsync(Fd),
    Fdatasync(Fd),
}

/// A path for display: printable, long ones abbreviated.
fn sp(p: &[u8]) -> String {
    if p.len() <= 64 {
        format!("{:?}", String::from_utf8_lossy(p))
    } else {
        format!(
            "<{}B {:?}..{:?}>",
            p.len(),
            String::from_utf8_lossy(&p[..20]),
            String::from_utf8_lossy(&p[p.len() - 20..])
        )
    }
}

fn show_times(t: &Option<[Ts; 2]>) -> String {
    let one = |t: Ts| match t.nsec {
        UTIME_NOW => "NOW".to_string(),
        UTIME_OMIT => "OMIT".to_string(),
        n => format!("{}.{n}", t.sec),
    };
    match t {
        None => "NULL".into(),
        Some([a, m]) => format!("[{}, {}]", one(*a), one(*m)),
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Open(p, fl, m) => write!(f, "open({}, {fl:#o}, {m:#o})", sp(p)),
            Op::Openat(d, p, fl, m) => write!(f, "openat({d}, {}, {fl:#o}, {m:#o})", sp(p)),
            Op::Creat(p, m) => write!(f, "creat({}, {m:#o})", sp(p)),
            Op::Close(d) => write!(f, "close({d})"),
            Op::Read(d, n) => write!(f, "read({d}, {n})"),
            Op::Write(d, x) => write!(f, "write({d}, {}x{})", x.len, x.seed),
            Op::Pread(d, n, o) => write!(f, "pread({d}, {n}, {o})"),
            Op::Pwrite(d, x, o) => write!(f, "pwrite({d}, {}x{}, {o})", x.len, x.seed),
            Op::Readv(d, v) => write!(f, "readv({d}, {v:?})"),
            Op::Writev(d, v) => {
                let v: Vec<String> = v.iter().map(|x| format!("{}x{}", x.len, x.seed)).collect();
                write!(f, "writev({d}, [{}])", v.join(", "))
            }
            Op::Lseek(d, o, w) => write!(f, "lseek({d}, {o}, {w})"),
            Op::Stat(p) => write!(f, "stat({})", sp(p)),
            Op::Lstat(p) => write!(f, "lstat({})", sp(p)),
            Op::Fstat(d) => write!(f, "fstat({d})"),
            Op::Fstatat(d, p, fl) => write!(f, "fstatat({d}, {}, {fl:#x})", sp(p)),
            Op::Statx(d, p, fl, m) => write!(f, "statx({d}, {}, {fl:#x}, {m:#x})", sp(p)),
            Op::Truncate(p, l) => write!(f, "truncate({}, {l})", sp(p)),
            Op::Ftruncate(d, l) => write!(f, "ftruncate({d}, {l})"),
            Op::Fallocate(d, m, o, l) => write!(f, "fallocate({d}, {m:#x}, {o}, {l})"),
            Op::Mkdir(p, m) => write!(f, "mkdir({}, {m:#o})", sp(p)),
            Op::Mkdirat(d, p, m) => write!(f, "mkdirat({d}, {}, {m:#o})", sp(p)),
            Op::Rmdir(p) => write!(f, "rmdir({})", sp(p)),
            Op::Unlink(p) => write!(f, "unlink({})", sp(p)),
            Op::Unlinkat(d, p, fl) => write!(f, "unlinkat({d}, {}, {fl:#x})", sp(p)),
            Op::Rename(a, b) => write!(f, "rename({}, {})", sp(a), sp(b)),
            Op::Renameat(d, a, e, b) => write!(f, "renameat({d}, {}, {e}, {})", sp(a), sp(b)),
            Op::Renameat2(d, a, e, b, fl) => {
                write!(f, "renameat2({d}, {}, {e}, {}, {fl:#x})", sp(a), sp(b))
            }
            Op::Link(a, b) => write!(f, "link({}, {})", sp(a), sp(b)),
            Op::Linkat(d, a, e, b, fl) => {
                write!(f, "linkat({d}, {}, {e}, {}, {fl:#x})", sp(a), sp(b))
            }
            Op::Symlink(t, p) => write!(f, "symlink({}, {})", sp(t), sp(p)),
            Op::Symlinkat(t, d, p) => write!(f, "symlinkat({}, {d}, {})", sp(t), sp(p)),
            Op::Readlink(p, n) => write!(f, "readlink({}, {n})", sp(p)),
            Op::Readlinkat(d, p, n) => write!(f, "readlinkat({d}, {}, {n})", sp(p)),
            Op::Getdents(d, n) => write!(f, "getdents64({d}, {n})"),
            Op::Chdir(p) => write!(f, "chdir({})", sp(p)),
            Op::Fchdir(d) => write!(f, "fchdir({d})"),
            Op::Getcwd => write!(f, "getcwd()"),
            Op::Chmod(p, m) => write!(f, "chmod({}, {m:#o})", sp(p)),
            Op::Fchmod(d, m) => write!(f, "fchmod({d}, {m:#o})"),
            Op::Fchmodat(d, p, m, fl) => write!(f, "fchmodat({d}, {}, {m:#o}, {fl:#x})", sp(p)),
            Op::Chown(p, u, g) => write!(f, "chown({}, {}, {})", sp(p), *u as i32, *g as i32),
            Op::Lchown(p, u, g) => write!(f, "lchown({}, {}, {})", sp(p), *u as i32, *g as i32),
            Op::Fchown(d, u, g) => write!(f, "fchown({d}, {}, {})", *u as i32, *g as i32),
            Op::Fchownat(d, p, u, g, fl) => write!(
                f,
                "fchownat({d}, {}, {}, {}, {fl:#x})",
                sp(p),
                *u as i32,
                *g as i32
            ),
            Op::Umask(m) => write!(f, "umask({m:#o})"),
            Op::Access(p, m) => write!(f, "access({}, {m})", sp(p)),
            Op::Faccessat(d, p, m, fl) => write!(f, "faccessat({d}, {}, {m}, {fl:#x})", sp(p)),
            Op::Utimensat(d, p, t, fl) => {
                write!(f, "utimensat({d}, {}, {}, {fl:#x})", sp(p), show_times(t))
            }
            Op::Futimens(d, t) => write!(f, "futimens({d}, {})", show_times(t)),
            Op::Fsync(d) => write!(f, "fsync({d})"),
            Op::Fdatasync(d) => write!(f, "fdatasync({d})"),
        }
    }
}

/// Whether the op appends an entry to the fd list.
fn opens(op: &Op) -> bool {
    matches!(op, Op::Open(..) | Op::Openat(..) | Op::Creat(..))
}

fn unit(r: R<()>) -> Res {
    r.map(|()| Val::Unit)
}

fn parse_dents(buf: &[u8]) -> Vec<Dent> {
    let mut out = Vec::new();
    let mut p = 0;
    while p + 19 <= buf.len() {
        let ino = u64::from_ne_bytes(buf[p..p + 8].try_into().unwrap());
        let off = i64::from_ne_bytes(buf[p + 8..p + 16].try_into().unwrap());
        let reclen = u16::from_ne_bytes(buf[p + 16..p + 18].try_into().unwrap()) as usize;
        let ty = buf[p + 18];
        if reclen < 20 || p + reclen > buf.len() {
            out.push(Dent {
                ino,
                off,
                ty,
                name: format!("<bad reclen {reclen}>").into_bytes(),
            });
            break;
        }
        let raw = &buf[p + 19..p + reclen];
        let len = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
        out.push(Dent {
            ino,
            off,
            ty,
            name: raw[..len].to_vec(),
        });
        p += reclen;
    }
    out
}

/// Runs one op on a backend.
/// How often the host retries a call that failed with ELOOP (see
/// `Backend::eloop_retries`).
const HOST_ELOOP_RETRIES: usize = 8;

fn exec(b: &mut dyn Backend, op: &Op) -> Res {
    let open = |b: &mut dyn Backend| match op {
        Op::Open(p, fl, m) => Some(b.open(p, *fl, *m)),
        Op::Openat(d, p, fl, m) => Some(b.openat(*d, p, *fl, *m)),
        Op::Creat(p, m) => Some(b.creat(p, *m)),
        _ => None,
    };
    let mut r = open(b);
    for _ in 0..b.eloop_retries() {
        if r != Some(Err(ELOOP)) {
            break;
        }
        r = open(b);
    }
    if let Some(r) = r {
        b.fds().0.push(r.ok());
        return r.map(|_| Val::Fd);
    }
    let mut r = exec_other(b, op);
    for _ in 0..b.eloop_retries() {
        if r != Err(ELOOP) {
            break;
        }
        r = exec_other(b, op);
    }
    r
}

fn exec_other(b: &mut dyn Backend, op: &Op) -> Res {
    match op {
        Op::Open(..) | Op::Openat(..) | Op::Creat(..) => unreachable!(),
        Op::Close(d) => {
            let r = b.close(*d);
            if let Fd::Idx(i) = d
                && let Some(e) = b.fds().0.get_mut(*i)
            {
                *e = None;
            }
            unit(r)
        }
        Op::Read(d, n) => {
            let mut buf = vec![0u8; *n];
            b.read(*d, &mut buf).map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Write(d, x) => b.write(*d, &x.bytes()).map(|k| Val::Num(k as i64)),
        Op::Pread(d, n, o) => {
            let mut buf = vec![0u8; *n];
            b.pread(*d, &mut buf, *o)
                .map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Pwrite(d, x, o) => b.pwrite(*d, &x.bytes(), *o).map(|k| Val::Num(k as i64)),
        Op::Readv(d, lens) => {
            let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0u8; n]).collect();
            let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|v| v.as_mut_slice()).collect();
            let r = b.readv(*d, &mut refs);
            r.map(|k| Val::Bytes(bufs.concat()[..k].to_vec()))
        }
        Op::Writev(d, v) => {
            let bufs: Vec<Vec<u8>> = v.iter().map(|x| x.bytes()).collect();
            let refs: Vec<&[u8]> = bufs.iter().map(|v| v.as_slice()).collect();
            b.writev(*d, &refs).map(|k| Val::Num(k as i64))
        }
        Op::Lseek(d, o, w) => b.lseek(*d, *o, *w).map(Val::Num),
        Op::Stat(p) => b.stat(p).map(|s| Val::Stat(Box::new(s))),
        Op::Lstat(p) => b.lstat(p).map(|s| Val::Stat(Box::new(s))),
        Op::Fstat(d) => b.fstat(*d).map(|s| Val::Stat(Box::new(s))),
        Op::Fstatat(d, p, fl) => b.fstatat(*d, p, *fl).map(|s| Val::Stat(Box::new(s))),
        Op::Statx(d, p, fl, m) => b.statx(*d, p, *fl, *m).map(|s| Val::Stat(Box::new(s))),
        Op::Truncate(p, l) => unit(b.truncate(p, *l)),
        Op::Ftruncate(d, l) => unit(b.ftruncate(*d, *l)),
        Op::Fallocate(d, m, o, l) => unit(b.fallocate(*d, *m, *o, *l)),
        Op::Mkdir(p, m) => unit(b.mkdir(p, *m)),
        Op::Mkdirat(d, p, m) => unit(b.mkdirat(*d, p, *m)),
        Op::Rmdir(p) => unit(b.rmdir(p)),
        Op::Unlink(p) => unit(b.unlink(p)),
        Op::Unlinkat(d, p, fl) => unit(b.unlinkat(*d, p, *fl)),
        Op::Rename(a, c) => unit(b.rename(a, c)),
        Op::Renameat(d, a, e, c) => unit(b.renameat(*d, a, *e, c)),
        Op::Renameat2(d, a, e, c, fl) => unit(b.renameat2(*d, a, *e, c, *fl)),
        Op::Link(a, c) => unit(b.link(a, c)),
        Op::Linkat(d, a, e, c, fl) => unit(b.linkat(*d, a, *e, c, *fl)),
        Op::Symlink(t, p) => unit(b.symlink(t, p)),
        Op::Symlinkat(t, d, p) => unit(b.symlinkat(t, *d, p)),
        Op::Readlink(p, n) => {
            let mut buf = vec![0u8; *n];
            b.readlink(p, &mut buf)
                .map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Readlinkat(d, p, n) => {
            let mut buf = vec![0u8; *n];
            b.readlinkat(*d, p, &mut buf)
                .map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Getdents(d, n) => {
            let mut buf = vec![0u8; *n];
            b.getdents64(*d, &mut buf)
                .map(|k| Val::Dents(k, parse_dents(&buf[..k])))
        }
        Op::Chdir(p) => unit(b.chdir(p)),
        Op::Fchdir(d) => unit(b.fchdir(*d)),
        Op::Getcwd => b.getcwd().map(Val::Bytes),
        Op::Chmod(p, m) => unit(b.chmod(p, *m)),
        Op::Fchmod(d, m) => unit(b.fchmod(*d, *m)),
        Op::Fchmodat(d, p, m, fl) => unit(b.fchmodat(*d, p, *m, *fl)),
        Op::Chown(p, u, g) => unit(b.chown(p, *u, *g)),
        Op::Lchown(p, u, g) => unit(b.lchown(p, *u, *g)),
        Op::Fchown(d, u, g) => unit(b.fchown(*d, *u, *g)),
        Op::Fchownat(d, p, u, g, fl) => unit(b.fchownat(*d, p, *u, *g, *fl)),
        Op::Umask(m) => Ok(Val::Num(i64::from(b.umask(*m)))),
        Op::Access(p, m) => unit(b.access(p, *m)),
        Op::Faccessat(d, p, m, fl) => unit(b.faccessat(*d, p, *m, *fl)),
        Op::Utimensat(d, p, t, fl) => unit(b.utimensat(*d, p, *t, *fl)),
        Op::Futimens(d, t) => unit(b.futimens(*d, *t)),
        Op::Fsync(d) => unit(b.fsync(*d)),
        Op::Fdatasync(d) => unit(b.fdatasync(*d)),
    }
}

// ---------------------------------------------------------------------------
// A run: the ops, then the dump.
// ---------------------------------------------------------------------------

/// One observation: what was done (op index or a dump step) and its result.
#[derive(Clone, Debug)]
struct Obs {
    what: String,
    res: Res,
}

struct Log {
    obs: Vec<Obs>,
    /// Where the dump started.
    dump_root: Vec<u8>,
}

fn run(b: &mut dyn Backend, ops: &[Op], dump_root: &[u8]) -> Log {
    let mut obs = Vec::with_capacity(ops.len() + 256);
    for op in ops {
        let res = exec(b, op);
        obs.push(Obs {
            what: String::new(),
            res,
        });
    }
    dump(b, dump_root, &mut obs);
    Log {
        obs,
        dump_root: dump_root.to_vec(),
    }
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = dir.to_vec();
    if p.last() != Some(&b'/') {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// A recursive dump of the tree under `dir`, through the backend's own
/// calls: getdents64 (whole listing, in order, with cookies), lstat of every
/// entry, readlink of symlinks, the SEEK_DATA/SEEK_HOLE map and data of
/// regular files.
fn dump(b: &mut dyn Backend, dir: &[u8], obs: &mut Vec<Obs>) {
    let push = |obs: &mut Vec<Obs>, what: String, res| obs.push(Obs { what, res });
    let st = b.lstat(dir).map(|s| Val::Stat(Box::new(s)));
    push(obs, format!("dump lstat {}", sp(dir)), st);
    dump_dir(b, dir, obs);
}

/// The listing of `dir`, then each entry (lstat; recursion, readlink or
/// data).
fn dump_dir(b: &mut dyn Backend, dir: &[u8], obs: &mut Vec<Obs>) {
    let push = |obs: &mut Vec<Obs>, what: String, res| obs.push(Obs { what, res });
    let fd = b.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    b.fds().0.push(fd.ok());
    let idx = Fd::Idx(b.fds().0.len() - 1);
    if let Err(e) = fd {
        push(obs, format!("dump open {}", sp(dir)), Err(e));
        return;
    }
    let mut names = Vec::new();
    let mut buf = vec![0u8; 4096];
    for _ in 0..10_000 {
        let r = b.getdents64(idx, &mut buf);
        let res = r.map(|k| Val::Dents(k, parse_dents(&buf[..k])));
        let done = !matches!(res, Ok(Val::Dents(k, _)) if k > 0);
        if let Ok(Val::Dents(_, d)) = &res {
            names.extend(d.iter().map(|e| (e.name.clone(), e.ty)));
        }
        // No changes between these calls: the resumption divergence
        // cannot apply, so no fd is given.
        push(obs, format!("dump getdents64 {}", sp(dir)), res);
        if done {
            break;
        }
    }
    let _ = b.close(idx);
    b.fds().0.pop();
    for (name, _) in names {
        if name == b"." || name == b".." {
            continue;
        }
        let path = join(dir, &name);
        let st = b.lstat(&path);
        let mode = st.as_ref().map_or(0, |s| s.mode & S_IFMT);
        push(
            obs,
            format!("dump lstat {}", sp(&path)),
            st.map(|s| Val::Stat(Box::new(s))),
        );
        match mode {
            S_IFDIR if path.len() < 3000 => dump_dir(b, &path, obs),
            S_IFLNK => {
                let mut buf = vec![0u8; 4096];
                let r = b.readlink(&path, &mut buf);
                push(
                    obs,
                    format!("dump readlink {}", sp(&path)),
                    r.map(|k| Val::Bytes(buf[..k].to_vec())),
                );
            }
            S_IFREG => dump_file(b, &path, obs),
            _ => {}
        }
    }
}

/// The data segments of a regular file and their contents (at most 64
/// segments and 4 MiB).
fn dump_file(b: &mut dyn Backend, path: &[u8], obs: &mut Vec<Obs>) {
    let fd = b.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    b.fds().0.push(fd.ok());
    let idx = Fd::Idx(b.fds().0.len() - 1);
    if let Err(e) = fd {
        obs.push(Obs {
            what: format!("dump open {}", sp(path)),
            res: Err(e),
        });
        b.fds().0.pop();
        return;
    }
    let mut pos = 0i64;
    let mut budget = 4 << 20;
    for _ in 0..64 {
        let start = b.lseek(idx, pos, SEEK_DATA);
        let end = start.and_then(|s| b.lseek(idx, s, SEEK_HOLE));
        let res = match (start, end) {
            (Err(e), _) | (_, Err(e)) => Err(e),
            // A hole before the data (Linux's overflowed hole offset near
            // i64::MAX, finding 28): report the map, read nothing.
            (Ok(s), Ok(e)) if e <= s => {
                budget = 0;
                Ok(Val::Bytes(format!("[{s}, {e})").into_bytes()))
            }
            (Ok(s), Ok(e)) => {
                let n = ((e - s) as usize).min(budget);
                let mut buf = vec![0u8; n];
                match b.pread(idx, &mut buf, s) {
                    Ok(k) => {
                        budget -= k;
                        pos = e;
                        let mut v = format!("[{s}, {e}) ").into_bytes();
                        v.extend_from_slice(&buf[..k]);
                        Ok(Val::Bytes(v))
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let stop = res.is_err() || budget == 0;
        obs.push(Obs {
            what: format!("dump data {}", sp(path)),
            res,
        });
        if stop {
            break;
        }
    }
    let _ = b.close(idx);
    b.fds().0.pop();
}

// ---------------------------------------------------------------------------
// Comparison.
// ---------------------------------------------------------------------------

type Key = (u64, u64);

#[derive(Default)]
struct Cmp {
    h2u: HashMap<Key, Key>,
    u2h: HashMap<Key, Key>,
    /// Last (mtime, ctime) seen per inode, per side.
    last_h: HashMap<Key, (Ts, Ts, usize)>,
    last_u: HashMap<Key, (Ts, Ts, usize)>,
    /// Successful renames (on the host) so far.
    renames: usize,
}

impl Cmp {
    fn ino(&mut self, h: Key, u: Key) -> Result<(), String> {
        match (self.h2u.get(&h), self.u2h.get(&u)) {
            (None, None) => {
                self.h2u.insert(h, u);
                self.u2h.insert(u, h);
                Ok(())
            }
            (Some(&x), _) if x == u => Ok(()),
            (x, y) => Err(format!(
                "inode identity: host {h:?} was paired with uvfs {x:?}, uvfs {u:?} with host {y:?}"
            )),
        }
    }

    fn stat(&mut self, h: &St, u: &St) -> Result<(), String> {
        let mut diffs = Vec::new();
        macro_rules! field {
            ($f:ident) => {
                if h.$f != u.$f {
                    diffs.push(format!(
                        "{} host {:?} uvfs {:?}",
                        stringify!($f),
                        h.$f,
                        u.$f
                    ));
                }
            };
        }
        field!(mode);
        field!(nlink);
        field!(uid);
        field!(gid);
        field!(rdev);
        field!(size);
        field!(blocks);
        field!(blksize);
        field!(statx);
        // statx fills only what its result mask says; a time left out is
        // zero on Linux and must be on uvfs too, and is no observation.
        let mask = h.statx.map_or(u32::MAX, |(m, _, _)| m);
        let have = |bit: u32| mask & bit != 0;
        if !have(STATX_ATIME) || h.atime.sec < OLD_TIME || u.atime.sec < OLD_TIME {
            field!(atime);
        }
        if !have(STATX_MTIME) || h.mtime.sec < OLD_TIME || u.mtime.sec < OLD_TIME {
            field!(mtime);
        }
        if !have(STATX_CTIME) {
            field!(ctime);
        }
        let hk = (h.dev, h.ino);
        let uk = (u.dev, u.ino);
        if let Err(e) = self.ino(hk, uk) {
            diffs.push(e);
        }
        if !have(STATX_MTIME) || !have(STATX_CTIME) {
            return if diffs.is_empty() {
                Ok(())
            } else {
                Err(diffs.join("; "))
            };
        }
        let lh = self.last_h.insert(hk, (h.mtime, h.ctime, self.renames));
        let lu = self.last_u.insert(uk, (u.mtime, u.ctime, self.renames));
        // Only where Linux stamps the inode with its own multigrain clock:
        // not directories, and not across a rename (see the module doc).
        let reliable = h.mode & S_IFMT != S_IFDIR;
        if let (Some((hm, hc, hr)), Some((um, uc, _))) = (lh, lu)
            && reliable
            && hr == self.renames
        {
            if (hm != h.mtime) != (um != u.mtime) {
                diffs.push(format!(
                    "mtime changed since last stat: host {} uvfs {}",
                    hm != h.mtime,
                    um != u.mtime
                ));
            }
            if (hc != h.ctime) != (uc != u.ctime) {
                diffs.push(format!(
                    "ctime changed since last stat: host {} uvfs {}",
                    hc != h.ctime,
                    uc != u.ctime
                ));
            }
        }
        if diffs.is_empty() {
            Ok(())
        } else {
            Err(diffs.join("; "))
        }
    }

    fn res(&mut self, h: &Res, u: &Res) -> Result<(), String> {
        match (h, u) {
            (Ok(Val::Stat(a)), Ok(Val::Stat(b))) => self.stat(a, b),
            (Ok(Val::Dents(n, a)), Ok(Val::Dents(m, b))) => {
                if n != m || a.len() != b.len() {
                    Err("getdents64 records differ".into())
                } else {
                    let mut r = Ok(());
                    for (x, y) in a.iter().zip(b) {
                        if x.name != y.name || x.off != y.off || x.ty != y.ty {
                            r = Err("getdents64 records differ".into());
                            break;
                        }
                        if let Err(e) = self.ino((0, x.ino), (0, y.ino)) {
                            r = Err(format!("d_ino of {}: {e}", show_bytes(&x.name)));
                            break;
                        }
                    }
                    r
                }
            }
            (a, b) if a == b => Ok(()),
            _ => Err("results differ".into()),
        }
    }
}

/// The first mismatch, as a replayable report; `None` if the logs agree.
fn compare(seed: u64, side: &str, ops: &[Op], host: &Log, uvfs: &Log) -> Option<String> {
    compare_at(seed, side, ops, host, uvfs).map(|(_, r)| r)
}

/// As [`compare`], with the step of the first mismatch.
fn compare_at(
    seed: u64,
    side: &str,
    ops: &[Op],
    host: &Log,
    uvfs: &Log,
) -> Option<(usize, String)> {
    let mut cmp = Cmp::default();
    // getdents64 d_ino uses (0, ino) keys: seed them with the stat keys as
    // they come (a dirent's inode is usually stat'ed too). Both are checked
    // for consistency within their own key space.
    let n = host.obs.len().max(uvfs.obs.len());
    for i in 0..n {
        let (h, u) = (host.obs.get(i), uvfs.obs.get(i));
        let err = match (h, u) {
            (Some(h), Some(u)) if h.what != u.what => Some("different dump step".to_string()),
            (Some(h), Some(u)) => {
                if let Some(Op::Rename(..) | Op::Renameat(..) | Op::Renameat2(..)) = ops.get(i)
                    && h.res.is_ok()
                {
                    cmp.renames += 1;
                }
                cmp.res(&h.res, &u.res).err()
            }
            _ => Some("one log is longer".to_string()),
        };
        let Some(err) = err else { continue };
        // Seed 0 stands for a hand-written or minimized op list.
        let mut msg = if seed == 0 {
            format!("op list (uvfs {side}): first difference at step {i}: {err}\n")
        } else {
            format!(
                "seed {seed} (uvfs {side}): first difference at step {i}: {err}\n\
                 replay: {}UVFS_DIFF_SEED={seed} cargo test --release -p uvfs --test path_differential\n",
                if known_enabled() {
                    "UVFS_DIFF_KNOWN=1 "
                } else {
                    ""
                }
            )
        };
        let mut nfd = 0;
        for (j, op) in ops.iter().enumerate().take((i + 1).min(ops.len())) {
            let hr = host.obs.get(j).map_or("-".into(), |o| show_res(&o.res));
            let ur = uvfs.obs.get(j).map_or("-".into(), |o| show_res(&o.res));
            let mark = if j == i { "!!" } else { "  " };
            let new_fd = if opens(op) {
                nfd += 1;
                format!("#{} = ", nfd - 1)
            } else {
                String::new()
            };
            if hr == ur {
                let _ = writeln!(msg, "{mark} {j:4}: {new_fd}{op}  => {hr}");
            } else {
                let _ = writeln!(
                    msg,
                    "{mark} {j:4}: {new_fd}{op}\n         host {hr}\n         uvfs {ur}"
                );
            }
        }
        if i >= ops.len() {
            let _ = writeln!(msg, "final dump from {}:", sp(&host.dump_root));
            for j in ops.len()..=i {
                let mark = if j == i { "!!" } else { "  " };
                for (side, log) in [("host", host), ("uvfs", uvfs)] {
                    if let Some(o) = log.obs.get(j) {
                        let _ = writeln!(msg, "{mark} {side} {}: {}", o.what, show_res(&o.res));
                    }
                }
            }
        }
        return Some((i, msg));
    }
    None
}

// ---------------------------------------------------------------------------
// The generator.
// ---------------------------------------------------------------------------

const NAMES: &[&str] = &[
    "a", "a", "b", "b", "c", "d", "d", "d/e", "d/e", "d/e/f", "d/a", "l", "l", "m", "d/l", "t",
    "z0", "z1",
];

const TARGETS: &[&str] = &[
    "a", "b", "d", "d/e", "l", "m", ".", "..", "../a", "missing", "d/", "a/", "e", "f",
];

/// The generator. It is steered by the host's results (which fds are
/// open), so it runs interleaved with the host side ([`host_generate`]); the
/// uvfs side replays the recorded ops. The host is deterministic (see
/// `host_runs_are_deterministic`), so a seed always gives the same ops.
struct Gen {
    rng: Rng,
    top: Vec<u8>,
    /// Per entry of the fd list (index 0: the sandbox directory): open on
    /// the host, and probably a directory.
    live: Vec<bool>,
    dir: Vec<bool>,
    /// Per entry: opened with O_PATH; a getdents64 on it returned 0 (the
    /// host's position is then the end cookie).
    opath: Vec<bool>,
    at_end: Vec<bool>,
    /// An allocating fallocate succeeded on the host.
    fallocated: bool,
    /// Per entry: a directory fd in the middle of a listing (see the
    /// getdents64 exclusion in the module doc).
    mid: Vec<bool>,
    /// The last `fstatat(.., AT_SYMLINK_NOFOLLOW)` found a directory.
    probe_dir: bool,
    ops: Vec<Op>,
    /// Also generate the cases of known mismatches (see `KNOWN` and
    /// /work/notes/diff-findings.md); off by default.
    known: bool,
}

impl Gen {
    fn abs(&self, rel: &[u8]) -> Vec<u8> {
        join(&self.top, rel)
    }

    fn special_path(&mut self) -> Vec<u8> {
        let long255 = vec![b'x'; 255];
        let long256 = vec![b'y'; 256];
        match self.rng.below(22) {
            0 => Vec::new(),
            1 => b".".to_vec(),
            2 => b"..".to_vec(),
            3 => b"./a".to_vec(),
            4 => b"d/..".to_vec(),
            5 => b"d/../a".to_vec(),
            6 => b"a/b".to_vec(),
            7 => b"l/".to_vec(),
            8 => b"missing/a".to_vec(),
            9 => long255,
            // Finding 12: relative only with known mismatches on.
            10 if !self.avoid("12") => long256,
            10 => self.abs(&long256),
            11 => {
                let mut p = b"d/".to_vec();
                p.extend_from_slice(&long255);
                p
            }
            12 | 13 => {
                // Exactly 4095 bytes (valid) or 4096 (ENAMETOOLONG).
                let want = if self.rng.chance(50) { 4095 } else { 4096 };
                let mut p = Vec::new();
                while p.len() + 2 < want {
                    p.extend_from_slice(b"./");
                }
                while p.len() < want - 1 {
                    p.push(b'/');
                }
                p.push(b'a');
                p
            }
            14 => b"//a".to_vec(),
            15 => b"d//e".to_vec(),
            // Findings 12 and 24: the sandbox directory itself (which could
            // be removed) only with known mismatches on.
            16 if !self.avoid("24") => self.top.clone(),
            16 => b".".to_vec(),
            17 => b"d/e/../../b".to_vec(),
            18 => b"../".to_vec(),
            19 => b"a/..".to_vec(),
            20 => b"d/./e/".to_vec(),
            _ => {
                let mut p = self.top.clone();
                p.extend_from_slice(b"/d/../l");
                p
            }
        }
    }

    fn path(&mut self) -> Vec<u8> {
        if self.rng.chance(12) {
            return self.special_path();
        }
        let mut p = self.rng.pick(NAMES).as_bytes().to_vec();
        match self.rng.below(40) {
            0..=2 => p.push(b'/'),
            3 => p.extend_from_slice(b"/."),
            4 => p.extend_from_slice(b"/.."),
            _ => {}
        }
        if self.rng.chance(10) {
            p = self.abs(&p);
        }
        p
    }

    fn target(&mut self) -> Vec<u8> {
        match self.rng.below(20) {
            0 => self.abs(b"a"),
            1 => self.abs(b"d"),
            2 => b"".to_vec(),
            3 => vec![b't'; 4095],
            4 => vec![b't'; 4096],
            5 => self.abs(b"l"),
            _ => self.rng.pick(TARGETS).as_bytes().to_vec(),
        }
    }

    /// Mostly one of the last few open fds (of directories if `dir`).
    fn pick_open(&mut self, dir: bool) -> Option<Fd> {
        let open: Vec<usize> = (0..self.live.len())
            .filter(|&i| self.live[i] && (!dir || self.dir[i]))
            .collect();
        if open.is_empty() {
            return None;
        }
        let k = open.len();
        let back = self.rng.below(k.min(6));
        Some(Fd::Idx(open[k - 1 - back]))
    }

    fn fd(&mut self) -> Fd {
        match self.rng.below(100) {
            0..=3 => Fd::Bad(
                self.rng
                    .pick(&[-1, -100, -2, 1_000_000, i32::MAX, i32::MIN]),
            ),
            4..=7 => Fd::Idx(0),
            // Closed or failed ones (EBADF).
            8..=11 => Fd::Idx(self.rng.below(self.live.len().max(1))),
            _ => self.pick_open(false).unwrap_or(Fd::Idx(0)),
        }
    }

    /// A path for rename: finding 26 (ENAMETOOLONG of one name vs the
    /// trailing-slash ENOTDIR of the other) keeps over-long names out unless
    /// known mismatches are on.
    fn rename_path(&mut self) -> Vec<u8> {
        let p = self.path();
        let long = p.split(|&c| c == b'/').any(|c| c.len() > 255);
        if long && self.avoid("26") {
            b"b".to_vec()
        } else {
            p
        }
    }

    /// Findings 12 and 24: a rename may replace an empty directory that is
    /// the cwd or open; an `fstatat` of the target first (an op like any
    /// other, compared too) tells the generator whether to leave it after.
    fn probe_target(&mut self, dir: Fd, p: &[u8]) {
        if self.avoid("24") {
            self.ops
                .push(Op::Fstatat(dir, p.to_vec(), AT_SYMLINK_NOFOLLOW));
        }
    }

    /// Back to the sandbox directory and every fd but #0 closed.
    fn leave_removed_dirs(&mut self) {
        self.ops.push(Op::Chdir(self.top.clone()));
        for i in 1..self.live.len() {
            if self.live[i] {
                self.ops.push(Op::Close(Fd::Idx(i)));
            }
        }
    }

    /// Whether to steer clear of the case of a finding: unless known
    /// mismatches are on, every finding not yet in [`FIXED`].
    fn avoid(&self, finding: &str) -> bool {
        !self.known && !FIXED.contains(&format!("finding {finding}:").as_str())
    }

    /// Whether the host's listing on `fd` reached the end (and the case of
    /// finding 14 is to be avoided).
    fn ended(&self, fd: Fd) -> bool {
        matches!(fd, Fd::Idx(i) if self.at_end.get(i) == Some(&true)) && self.avoid("14")
    }

    fn is_dir(&self, fd: Fd) -> bool {
        matches!(fd, Fd::Idx(i) if self.dir.get(i) == Some(&true))
    }

    /// An fd, mostly of a directory.
    fn dir_fd_mostly(&mut self) -> Fd {
        match self.rng.below(10) {
            0..=7 => self.pick_open(true).unwrap_or(Fd::Idx(0)),
            _ => self.fd(),
        }
    }

    fn dirfd(&mut self) -> Fd {
        match self.rng.below(10) {
            0..=2 => Fd::Cwd,
            3..=4 => Fd::Idx(0),
            5..=7 => self.pick_open(true).unwrap_or(Fd::Cwd),
            _ => self.fd(),
        }
    }

    /// What the host's result tells about the fd list.
    fn feedback(&mut self, op: &Op, res: &Res) {
        if opens(op) {
            let dir = match op {
                Op::Open(p, fl, _) | Op::Openat(_, p, fl, _) => {
                    fl & O_DIRECTORY != 0
                        || [&b"d"[..], b"d/e", b".", b"..", b"d/", b"d/e/", &self.top]
                            .contains(&p.as_slice())
                }
                _ => false,
            };
            let opath = match op {
                Op::Open(_, fl, _) | Op::Openat(_, _, fl, _) => fl & O_PATH != 0,
                _ => false,
            };
            self.live.push(res.is_ok());
            self.dir.push(dir);
            self.opath.push(opath);
            self.at_end.push(false);
            self.mid.push(false);
        }
        match (op, res) {
            (Op::Getdents(Fd::Idx(i), _), Ok(Val::Dents(_, d))) if *i < self.mid.len() => {
                self.mid[*i] = d.last().is_some_and(|e| e.off != DIR_OFFSET_EOD);
                self.dir[*i] = true; // Surely a directory.
            }
            // A getdents64 whose buffer could not hold the next entry
            // (EINVAL) leaves the position on that entry (finding 17).
            (Op::Getdents(Fd::Idx(i), _), Err(e)) if *e == libc::EINVAL && *i < self.mid.len() => {
                self.mid[*i] = true;
            }
            // Any seek that lands past the dots (SEEK_CUR, SEEK_END too).
            (Op::Lseek(Fd::Idx(i), _, _), Ok(Val::Num(n))) if *i < self.mid.len() => {
                self.mid[*i] = *n > 2;
            }
            (Op::Lseek(Fd::Idx(i), off, SEEK_SET), Ok(_)) if *i < self.mid.len() => {
                self.mid[*i] = *off > 2;
            }
            _ => {}
        }
        match (op, res) {
            (Op::Rmdir(_), Ok(_)) | (Op::Unlinkat(..), Ok(_)) if self.avoid("24") => {
                // Findings 12 and 24: leave any removed directory.
                self.leave_removed_dirs();
            }
            (Op::Fstatat(_, _, AT_SYMLINK_NOFOLLOW), r) => {
                self.probe_dir = matches!(r, Ok(Val::Stat(s)) if s.mode & S_IFMT == S_IFDIR);
            }
            (Op::Rename(..) | Op::Renameat(..) | Op::Renameat2(..), Ok(_))
                if self.probe_dir && self.avoid("24") =>
            {
                self.leave_removed_dirs();
            }
            (Op::Fallocate(_, 0 | 1, ..), Ok(_)) => self.fallocated = true,
            (Op::Getdents(Fd::Idx(i), _), Ok(Val::Dents(0, _))) if *i < self.at_end.len() => {
                self.at_end[*i] = true;
            }
            (Op::Lseek(Fd::Idx(i), _, SEEK_SET), Ok(_)) if *i < self.at_end.len() => {
                self.at_end[*i] = false;
            }
            _ => {}
        }
        if let Op::Close(Fd::Idx(i)) = op
            && *i < self.live.len()
        {
            self.live[*i] = false;
        }
    }

    fn mode(&mut self) -> u32 {
        self.rng.pick(&[
            0o644, 0o644, 0o755, 0o600, 0o777, 0o4755, 0o2755, 0o1777, 0o7777, 0o170644, 0, 0o444,
        ])
    }

    fn open_flags(&mut self) -> i32 {
        let mut fl = self.rng.pick(&[O_RDONLY, O_WRONLY, O_RDWR, O_RDWR, 3]);
        if !self.avoid("18") && self.rng.chance(2) {
            fl |= O_DIRECT; // Finding 18.
        }
        for (bit, pct) in [
            (O_CREAT, 45),
            (O_EXCL, 12),
            (O_TRUNC, 12),
            (O_APPEND, 15),
            (O_DIRECTORY, 8),
            (O_NOFOLLOW, 8),
            (O_PATH, 6),
            (O_CLOEXEC, 20),
            (O_NONBLOCK, 4),
            (O_NOATIME, 3),
            (O_SYNC, 2),
        ] {
            if self.rng.chance(pct) {
                fl |= bit;
            }
        }
        if fl & (O_CREAT | O_NOFOLLOW | O_EXCL) == O_CREAT | O_NOFOLLOW && self.avoid("27") {
            fl &= !O_NOFOLLOW; // Finding 27.
        }
        if self.rng.chance(4) {
            fl = (fl & !(O_CREAT | O_DIRECTORY)) | O_TMPFILE;
            if self.avoid("22") {
                fl &= !O_NOFOLLOW; // Finding 22.
            }
        }
        fl
    }

    fn len(&mut self) -> usize {
        self.rng.pick(&[0, 1, 10, 100, 4096, 5000, 65536])
    }

    fn data(&mut self) -> Data {
        Data {
            len: self.rng.pick(&[0, 1, 7, 100, 4095, 4096, 4097, 9000]),
            seed: self.rng.below(256) as u8,
        }
    }

    fn offset(&mut self) -> i64 {
        self.rng.pick(&[
            0,
            0,
            1,
            100,
            4095,
            4096,
            4097,
            8191,
            12288,
            65536,
            1 << 20,
            -1,
            i64::MAX,
            i64::MAX - 4096,
            1 << 40,
        ])
    }

    fn size(&mut self) -> i64 {
        let n = self.rng.pick(&[
            0,
            1,
            100,
            4095,
            4096,
            10_000,
            1 << 20,
            1 << 40,
            -1,
            i64::MAX,
        ]);
        if n == i64::MAX && self.avoid("28") {
            // Finding 28: a size of i64::MAX lets writes reach the last page.
            return 1 << 40;
        }
        n
    }

    /// Finding 16: no O_CREAT | O_EXCL on a path ending in `.` or `..`;
    /// finding 19: no invalid flag combinations with a too long path.
    fn no_dot_excl(&self, p: &[u8], fl: i32) -> i32 {
        let fl = if p.len() >= 4096 && self.avoid("19") {
            fl & !(O_DIRECTORY | O_TMPFILE)
        } else {
            fl
        };
        let trimmed = p.strip_suffix(b"/").unwrap_or(p);
        let last = trimmed.rsplit(|&c| c == b'/').next().unwrap_or(b"");
        if self.avoid("16") && (last == b"." || last == b"..") {
            fl & !O_EXCL
        } else {
            fl
        }
    }

    /// Finding 9: negative offsets and lengths only with known mismatches on.
    fn known_nonneg(&self, n: i64) -> i64 {
        if n < 0 && self.avoid("9") { 0 } else { n }
    }

    fn times(&mut self) -> Option<[Ts; 2]> {
        self.times_any()
    }

    fn times_any(&mut self) -> Option<[Ts; 2]> {
        if self.rng.chance(20) {
            return None;
        }
        let mut one = || match self.rng.below(8) {
            0 => Ts {
                sec: 0,
                nsec: UTIME_NOW,
            },
            1 => Ts {
                sec: 5,
                nsec: UTIME_OMIT,
            },
            2 => Ts { sec: 7, nsec: -1 },
            3 => Ts {
                sec: 7,
                nsec: 1_000_000_000,
            },
            4 => Ts { sec: -5, nsec: 3 },
            _ => Ts {
                sec: 1_000_000_000 + self.rng.below(1000) as i64,
                nsec: self.rng.below(1_000_000_000) as i64,
            },
        };
        Some([one(), one()])
    }

    fn ids(&mut self) -> (u32, u32) {
        let ids = [0, 1000, 65534, u32::MAX];
        (self.rng.pick(&ids), self.rng.pick(&ids))
    }

    fn push(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// A chain `z0 -> z1 -> ... -> z<n-1> -> a` of `n` symlinks (41: ELOOP
    /// from z0, 40 follows from z1).
    fn chain(&mut self, n: usize) {
        // Finding 32: unless known mismatches are on, the chain ends in a
        // name no generated call makes a directory, so no walk can go on
        // past 40 links to a trailing symlink.
        let last: &[u8] = if self.avoid("32") { b"missing" } else { b"a" };
        for i in 0..n {
            let target = if i + 1 == n {
                last.to_vec()
            } else {
                format!("z{}", i + 1).into_bytes()
            };
            self.push(Op::Symlink(target, format!("z{i}").into_bytes()));
        }
    }

    fn op(&mut self) {
        let op = match self.rng.below(200) {
            0..=13 => {
                let (p, fl, m) = (self.path(), self.open_flags(), self.mode());
                Op::Open(p.clone(), self.no_dot_excl(&p, fl), m)
            }
            14..=27 => {
                let (d, p, fl, m) = (self.dirfd(), self.path(), self.open_flags(), self.mode());
                Op::Openat(d, p.clone(), self.no_dot_excl(&p, fl), m)
            }
            28..=30 => {
                let (p, m) = (self.path(), self.mode());
                Op::Creat(p, m)
            }
            31..=38 => Op::Close(self.fd()),
            39..=44 => {
                let (d, n) = (self.fd(), self.len());
                Op::Read(d, n)
            }
            45..=52 => {
                let (d, x) = (self.fd(), self.data());
                Op::Write(d, x)
            }
            53..=57 => {
                let (d, n, o) = (self.fd(), self.len(), self.offset());
                Op::Pread(d, n, self.known_nonneg(o))
            }
            58..=63 => {
                let (d, x, mut o) = (self.fd(), self.data(), self.offset());
                if o == i64::MAX - 4096 && self.avoid("28") {
                    o = 1 << 40; // Finding 28: no data in the last page.
                }
                Op::Pwrite(d, x, self.known_nonneg(o))
            }
            64..=65 => {
                let d = self.fd();
                let k = self.rng.below(4);
                let mut v: Vec<usize> = (0..k).map(|_| self.len()).collect();
                if v.iter().sum::<usize>() == 0 && self.avoid("15") {
                    v = vec![1]; // Finding 15.
                }
                Op::Readv(d, v)
            }
            66..=67 => {
                let d = self.fd();
                let k = self.rng.below(4);
                let mut v: Vec<Data> = (0..k).map(|_| self.data()).collect();
                if v.iter().map(|x| x.len).sum::<usize>() == 0 && self.avoid("15") {
                    v = vec![Data { len: 1, seed: 0 }]; // Finding 15.
                }
                Op::Writev(d, v)
            }
            68..=74 => {
                let d = self.fd();
                let mut o = self.offset();
                if o > 1 << 20 && (self.avoid("5b") || self.avoid("28")) {
                    // Findings 5b (directory positions past the end cookie)
                    // and 28 (no writes into the last page).
                    o = 1 << 20;
                }
                let mut w = self.rng.pick(&[
                    SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_DATA, SEEK_HOLE, SEEK_HOLE, 5, -1,
                ]);
                if self.ended(d) || (self.is_dir(d) && self.avoid("5b")) {
                    w = SEEK_SET; // Findings 5b and 14.
                }
                Op::Lseek(d, o, w)
            }
            75..=78 => Op::Stat(self.path()),
            79..=82 => Op::Lstat(self.path()),
            83..=86 => Op::Fstat(self.fd()),
            87..=89 => {
                let (d, p) = (self.dirfd(), self.path());
                let fl = self.rng.pick(&[
                    0,
                    0,
                    AT_SYMLINK_NOFOLLOW,
                    AT_EMPTY_PATH,
                    AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
                    AT_NO_AUTOMOUNT,
                    1,
                    0x8000,
                ]);
                let p = if fl & AT_EMPTY_PATH != 0 && self.rng.chance(60) {
                    Vec::new()
                } else {
                    p
                };
                Op::Fstatat(d, p, fl)
            }
            90..=92 => {
                let (d, p) = (self.dirfd(), self.path());
                let fl = self.rng.pick(&[
                    0,
                    0,
                    AT_SYMLINK_NOFOLLOW,
                    AT_EMPTY_PATH,
                    0x2000,
                    0x4000,
                    0x6000,
                    1,
                ]);
                let mut mask = self.rng.pick(&[
                    STATX_BASIC_STATS,
                    STATX_BASIC_STATS | STATX_BTIME,
                    0,
                    1,
                    0x8000_0000,
                    u32::MAX,
                ]);
                if mask <= 1 && self.avoid("3") {
                    // Finding 3: masks without the times only with known
                    // mismatches on.
                    mask = STATX_BASIC_STATS;
                }
                let p = if fl & AT_EMPTY_PATH != 0 && self.rng.chance(60) {
                    Vec::new()
                } else {
                    p
                };
                Op::Statx(d, p, fl, mask)
            }
            93..=95 => {
                let (p, mut l) = (self.path(), self.size());
                if self.avoid("25") && l >= 0 {
                    // Finding 25: a length that is almost surely not the
                    // current size.
                    l = 1 + self.rng.below(1 << 20) as i64;
                }
                Op::Truncate(p, l)
            }
            96..=99 => {
                let (d, l) = (self.fd(), self.size());
                Op::Ftruncate(d, self.known_nonneg(l))
            }
            100..=104 => {
                let d = self.fd();
                let mut mode = self.rng.pick(&[0, 0, 1, 3, 3, 2, 0x10, 0x8, 0x20, 0x100]);
                if mode <= 1 && self.fallocated && self.avoid("20") {
                    mode = 3; // Finding 20: one allocating fallocate per sequence.
                }
                let off = self
                    .rng
                    .pick(&[0, 1, 4095, 4096, 10_000, 1 << 20, -1, 1 << 40]);
                let len = self
                    .rng
                    .pick(&[1, 100, 4096, 8192, 20_000, 1 << 21, 0, -1, i64::MAX]);
                Op::Fallocate(d, mode, off, len)
            }
            105..=110 => {
                let (p, m) = (
                    self.path(),
                    self.rng
                        .pick(&[0o755, 0o755, 0o700, 0o1777, 0o2755, 0o7777, 0]),
                );
                Op::Mkdir(p, m)
            }
            111..=113 => {
                let (d, p) = (self.dirfd(), self.path());
                Op::Mkdirat(d, p, 0o755)
            }
            114..=117 => Op::Rmdir(self.path()),
            118..=122 => Op::Unlink(self.path()),
            123..=125 => {
                let (d, p) = (self.dirfd(), self.path());
                let fl = self.rng.pick(&[0, 0, AT_REMOVEDIR, AT_REMOVEDIR, 1, 0x800]);
                Op::Unlinkat(d, p, fl)
            }
            126..=130 => {
                let (a, b) = (self.rename_path(), self.rename_path());
                self.probe_target(Fd::Cwd, &b);
                Op::Rename(a, b)
            }
            131..=132 => {
                let (d, a, e, b) = (
                    self.dirfd(),
                    self.rename_path(),
                    self.dirfd(),
                    self.rename_path(),
                );
                self.probe_target(e, &b);
                Op::Renameat(d, a, e, b)
            }
            133..=137 => {
                let (d, mut a, e, mut b) = (
                    self.dirfd(),
                    self.rename_path(),
                    self.dirfd(),
                    self.rename_path(),
                );
                self.probe_target(e, &b);
                let fl = self.rng.pick(&[0, 1, 1, 2, 2, 3, 8]);
                if (fl == 1 || fl == 2) && (self.avoid("7") || self.avoid("21")) {
                    // Findings 7 and 21.
                    while a.len() > 1 && a.last() == Some(&b'/') {
                        a.pop();
                    }
                    while fl == 2 && b.len() > 1 && b.last() == Some(&b'/') {
                        b.pop();
                    }
                }
                Op::Renameat2(d, a, e, b, fl)
            }
            138..=141 => {
                let (a, b) = (self.path(), self.path());
                Op::Link(a, b)
            }
            142..=143 => {
                let (d, a, e, b) = (self.dirfd(), self.path(), self.dirfd(), self.path());
                let fl = self.rng.pick(&[0, 0, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH, 1]);
                let a = if fl == AT_EMPTY_PATH && self.rng.chance(70) {
                    Vec::new()
                } else {
                    a
                };
                Op::Linkat(d, a, e, b, fl)
            }
            144..=148 => {
                let (t, p) = (self.target(), self.path());
                Op::Symlink(t, p)
            }
            149..=150 => {
                let (t, d, p) = (self.target(), self.dirfd(), self.path());
                Op::Symlinkat(t, d, p)
            }
            151..=153 => {
                let (p, n) = (self.path(), self.rng.pick(&[0, 1, 3, 4096]));
                Op::Readlink(p, n)
            }
            154 => {
                let (d, p, n) = (self.dirfd(), self.path(), self.rng.pick(&[0, 2, 4096]));
                let p = if self.rng.chance(20) { Vec::new() } else { p };
                Op::Readlinkat(d, p, n)
            }
            155..=160 => {
                let d = self.dir_fd_mostly();
                let n = if !self.avoid("17") {
                    self.rng.pick(&[0, 10, 24, 32, 64, 100, 4096, 4096])
                } else {
                    // Finding 17: never too small for an entry (280 bytes at most).
                    self.rng.pick(&[300, 300, 1024, 4096])
                };
                if self.ended(d) {
                    // Finding 14: rewind a listing that reached the end.
                    Op::Lseek(d, 0, SEEK_SET)
                } else {
                    Op::Getdents(d, n)
                }
            }
            161..=162 => Op::Chdir(self.path()),
            163 => Op::Fchdir(self.dir_fd_mostly()),
            164 => Op::Getcwd,
            165..=167 => {
                let (p, m) = (self.path(), self.mode());
                Op::Chmod(p, m)
            }
            168 => {
                let (d, m) = (self.fd(), self.mode());
                Op::Fchmod(d, m)
            }
            169..=170 => {
                let (d, p, m) = (self.dirfd(), self.path(), self.mode());
                let fl = self
                    .rng
                    .pick(&[0, 0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Fchmodat(d, p, m, fl)
            }
            171 => {
                let (p, (u, g)) = (self.path(), self.ids());
                Op::Chown(p, u, g)
            }
            172 => {
                let (p, (u, g)) = (self.path(), self.ids());
                Op::Lchown(p, u, g)
            }
            173 => {
                let (d, (u, g)) = (self.fd(), self.ids());
                Op::Fchown(d, u, g)
            }
            174 => {
                let (d, p, (u, g)) = (self.dirfd(), self.path(), self.ids());
                let fl = self.rng.pick(&[0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Fchownat(d, p, u, g, fl)
            }
            175 => Op::Umask(self.rng.pick(&[0o022, 0o022, 0o077, 0, 0o777, 0o7777])),
            176..=178 => {
                let (p, m) = (self.path(), self.rng.pick(&[0, 1, 2, 4, 7, 8]));
                Op::Access(p, m)
            }
            179..=180 => {
                let (d, p, m) = (
                    self.dirfd(),
                    self.path(),
                    self.rng.pick(&[0, 1, 2, 4, 7, 8]),
                );
                let fl = self
                    .rng
                    .pick(&[0, AT_EACCESS, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Faccessat(d, p, m, fl)
            }
            181..=184 => {
                let (d, p, t) = (self.dirfd(), self.path(), self.times());
                let fl = self
                    .rng
                    .pick(&[0, 0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Utimensat(d, p, t, fl)
            }
            185..=186 => {
                let (mut d, t) = (self.fd(), self.times());
                if let Fd::Idx(i) = d
                    && self.opath.get(i) == Some(&true)
                    && self.avoid("11")
                {
                    d = Fd::Idx(0); // Finding 11.
                }
                if let (Fd::Bad(n), Some([a, m])) = (d, t)
                    && n < 0
                    && a.nsec == UTIME_OMIT
                    && m.nsec == UTIME_OMIT
                    && self.avoid("31")
                {
                    d = Fd::Bad(1_000_000); // Finding 31.
                }
                Op::Futimens(d, t)
            }
            187 => Op::Fsync(self.fd()),
            188 => Op::Fdatasync(self.fd()),
            189 if self.rng.chance(25) => {
                // Finding 32: with known mismatches off, chains stay short
                // enough that no walk (other links before them included)
                // exceeds 40 links through them.
                let n = match (!self.avoid("32"), self.rng.chance(50)) {
                    (true, true) => 41,
                    (true, false) => 40,
                    (false, true) => 37,
                    (false, false) => 36,
                };
                self.chain(n);
                return;
            }
            _ => {
                // A plain, likely-successful file or directory setup.
                let p = self.rng.pick(&["a", "b", "c", "d/a", "d/e/f", "t"]);
                if self.rng.chance(30) {
                    Op::Mkdir(p.as_bytes().to_vec(), 0o755)
                } else {
                    Op::Open(p.as_bytes().to_vec(), O_RDWR | O_CREAT, 0o644)
                }
            }
        };
        if matches!(
            op,
            Op::Unlink(..)
                | Op::Unlinkat(..)
                | Op::Rmdir(..)
                | Op::Rename(..)
                | Op::Renameat(..)
                | Op::Renameat2(..)
        ) {
            // The documented tmpfs divergence: rewind listings in progress.
            for i in 0..self.mid.len() {
                if self.mid[i] && self.live[i] {
                    self.push(Op::Lseek(Fd::Idx(i), 0, SEEK_SET));
                }
            }
        }
        self.push(op);
    }
}

/// Generates `n` ops from `seed`, running each on the host as it goes
/// (the generator steers by the results); returns the ops and the host log.
fn host_generate(
    b: &mut dyn Backend,
    seed: u64,
    top: &[u8],
    n: usize,
    root: &[u8],
) -> (Vec<Op>, Log) {
    let mut g = Gen {
        rng: Rng::new(seed),
        top: top.to_vec(),
        live: Vec::new(),
        dir: Vec::new(),
        opath: Vec::new(),
        at_end: Vec::new(),
        fallocated: false,
        mid: Vec::new(),
        probe_dir: false,
        ops: Vec::with_capacity(n + 64),
        known: known_enabled(),
    };
    let mut obs = Vec::with_capacity(n + 256);
    let mut step = |g: &mut Gen, obs: &mut Vec<Obs>| {
        while obs.len() < g.ops.len() {
            let op = g.ops[obs.len()].clone();
            let res = exec(b, &op);
            g.feedback(&op, &res);
            obs.push(Obs {
                what: String::new(),
                res,
            });
        }
    };
    g.push(Op::Open(top.to_vec(), O_RDONLY | O_DIRECTORY, 0));
    step(&mut g, &mut obs);
    // A likely start: some directories, files with data, a symlink.
    for (p, dir) in [("d", true), ("d/e", true), ("a", false), ("d/a", false)] {
        if g.rng.chance(80) {
            if dir {
                g.push(Op::Mkdir(p.as_bytes().to_vec(), 0o755));
            } else {
                g.push(Op::Open(p.as_bytes().to_vec(), O_RDWR | O_CREAT, 0o644));
                let x = g.data();
                g.push(Op::Write(Fd::Idx(g.live.len()), x));
            }
            step(&mut g, &mut obs);
        }
    }
    if g.rng.chance(50) {
        g.push(Op::Symlink(b"a".to_vec(), b"l".to_vec()));
    }
    while g.ops.len() < n {
        g.op();
        step(&mut g, &mut obs);
    }
    dump(b, root, &mut obs);
    let log = Log {
        obs,
        dump_root: root.to_vec(),
    };
    (g.ops, log)
}

// ---------------------------------------------------------------------------
// The host side.
// ---------------------------------------------------------------------------

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A libc return value: -1 is an error (errno); anything else, negative
/// ones included (lseek can return a negative offset), is a result.
fn ret(r: i64) -> R<i64> {
    if r == -1 { Err(errno()) } else { Ok(r) }
}

fn ret0(r: libc::c_int) -> R<()> {
    ret(r.into()).map(|_| ())
}

fn c(p: &[u8]) -> CString {
    CString::new(p).expect("generated paths have no NUL")
}

fn from_stat(s: &libc::stat) -> St {
    St {
        dev: s.st_dev,
        ino: s.st_ino,
        mode: s.st_mode,
        nlink: s.st_nlink,
        uid: s.st_uid,
        gid: s.st_gid,
        rdev: s.st_rdev,
        size: s.st_size,
        blocks: s.st_blocks,
        blksize: s.st_blksize,
        atime: Ts {
            sec: s.st_atime,
            nsec: s.st_atime_nsec,
        },
        mtime: Ts {
            sec: s.st_mtime,
            nsec: s.st_mtime_nsec,
        },
        ctime: Ts {
            sec: s.st_ctime,
            nsec: s.st_ctime_nsec,
        },
        statx: None,
    }
}

fn stx_ts(t: libc::statx_timestamp) -> Ts {
    Ts {
        sec: t.tv_sec,
        nsec: i64::from(t.tv_nsec),
    }
}

fn to_timespecs(t: &Option<[Ts; 2]>) -> Option<[libc::timespec; 2]> {
    t.map(|t| {
        t.map(|x| libc::timespec {
            tv_sec: x.sec,
            tv_nsec: x.nsec,
        })
    })
}

/// The host kernel, in this thread's private sandbox.
struct Host {
    fds: FdList,
}

impl Host {
    fn fd(&self, fd: Fd) -> i32 {
        self.fds.raw(fd)
    }

    fn stat_with(f: impl FnOnce(*mut libc::stat) -> libc::c_int) -> R<St> {
        // SAFETY: an all-zero `struct stat` is a valid value.
        let mut s: libc::stat = unsafe { std::mem::zeroed() };
        ret0(f(&mut s))?;
        Ok(from_stat(&s))
    }

    /// A raw syscall with up to five integer or pointer arguments.
    fn sys(nr: libc::c_long, args: [libc::c_long; 5]) -> R<i64> {
        // SAFETY: every caller passes integers, or pointers to live buffers
        // and NUL-terminated strings of the sizes the syscall expects.
        ret(unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4]) })
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for fd in self.fds.0.iter().flatten() {
            // SAFETY: the fd is one this backend opened and still owns.
            unsafe { libc::close(*fd) };
        }
    }
}

impl Backend for Host {
    fn fds(&mut self) -> &mut FdList {
        &mut self.fds
    }
    fn eloop_retries(&self) -> usize {
        HOST_ELOOP_RETRIES
    }
    fn open(&mut self, path: &[u8], flags: i32, mode: u32) -> R<i32> {
        let p = c(path);
        // SAFETY: `p` is a live NUL-terminated string.
        ret(unsafe { libc::open(p.as_ptr(), flags, mode) }.into()).map(|n| n as i32)
    }
    fn openat(&mut self, dir: Fd, path: &[u8], flags: i32, mode: u32) -> R<i32> {
        let p = c(path);
        // SAFETY: as in `open`.
        ret(unsafe { libc::openat(self.fd(dir), p.as_ptr(), flags, mode) }.into()).map(|n| n as i32)
    }
    fn creat(&mut self, path: &[u8], mode: u32) -> R<i32> {
        let p = c(path);
        // SAFETY: as in `open`.
        ret(unsafe { libc::creat(p.as_ptr(), mode) }.into()).map(|n| n as i32)
    }
    fn close(&mut self, fd: Fd) -> R<()> {
        // SAFETY: closes an fd this backend owns, or an invalid number.
        ret0(unsafe { libc::close(self.fd(fd)) })
    }
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        // SAFETY: `buf` is writable for its length.
        ret(unsafe { libc::read(self.fd(fd), buf.as_mut_ptr().cast(), buf.len()) } as i64)
            .map(|n| n as usize)
    }
    fn write(&mut self, fd: Fd, buf: &[u8]) -> R<usize> {
        // SAFETY: `buf` is readable for its length.
        ret(unsafe { libc::write(self.fd(fd), buf.as_ptr().cast(), buf.len()) } as i64)
            .map(|n| n as usize)
    }
    fn pread(&mut self, fd: Fd, buf: &mut [u8], off: i64) -> R<usize> {
        // SAFETY: as in `read`.
        ret(unsafe { libc::pread(self.fd(fd), buf.as_mut_ptr().cast(), buf.len(), off) } as i64)
            .map(|n| n as usize)
    }
    fn pwrite(&mut self, fd: Fd, buf: &[u8], off: i64) -> R<usize> {
        // SAFETY: as in `write`.
        ret(unsafe { libc::pwrite(self.fd(fd), buf.as_ptr().cast(), buf.len(), off) } as i64)
            .map(|n| n as usize)
    }
    fn readv(&mut self, fd: Fd, bufs: &mut [&mut [u8]]) -> R<usize> {
        let iov: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points into a live, writable buffer.
        ret(unsafe { libc::readv(self.fd(fd), iov.as_ptr(), iov.len() as i32) } as i64)
            .map(|n| n as usize)
    }
    fn writev(&mut self, fd: Fd, bufs: &[&[u8]]) -> R<usize> {
        let iov: Vec<libc::iovec> = bufs
            .iter()
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut _,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points into a live buffer; writev only reads.
        ret(unsafe { libc::writev(self.fd(fd), iov.as_ptr(), iov.len() as i32) } as i64)
            .map(|n| n as usize)
    }
    fn lseek(&mut self, fd: Fd, off: i64, whence: i32) -> R<i64> {
        // SAFETY: integer arguments only.
        ret(unsafe { libc::lseek(self.fd(fd), off, whence) })
    }
    fn stat(&mut self, path: &[u8]) -> R<St> {
        let p = c(path);
        // SAFETY: `p` is a live string, `s` a writable stat.
        Host::stat_with(|s| unsafe { libc::stat(p.as_ptr(), s) })
    }
    fn lstat(&mut self, path: &[u8]) -> R<St> {
        let p = c(path);
        // SAFETY: as in `stat`.
        Host::stat_with(|s| unsafe { libc::lstat(p.as_ptr(), s) })
    }
    fn fstat(&mut self, fd: Fd) -> R<St> {
        let fd = self.fd(fd);
        // SAFETY: `s` is a writable stat.
        Host::stat_with(|s| unsafe { libc::fstat(fd, s) })
    }
    fn fstatat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<St> {
        let p = c(path);
        let d = self.fd(dir);
        // SAFETY: as in `stat`.
        Host::stat_with(|s| unsafe { libc::fstatat(d, p.as_ptr(), s, flags) })
    }
    fn statx(&mut self, dir: Fd, path: &[u8], flags: i32, mask: u32) -> R<St> {
        let p = c(path);
        // SAFETY: an all-zero `struct statx` is a valid value.
        let mut s: libc::statx = unsafe { std::mem::zeroed() };
        // SAFETY: `p` is a live string, `s` a writable statx.
        ret0(unsafe { libc::statx(self.fd(dir), p.as_ptr(), flags, mask, &mut s) })?;
        Ok(St {
            dev: (u64::from(s.stx_dev_major) << 32) | u64::from(s.stx_dev_minor),
            ino: s.stx_ino,
            mode: u32::from(s.stx_mode),
            nlink: u64::from(s.stx_nlink),
            uid: s.stx_uid,
            gid: s.stx_gid,
            rdev: (u64::from(s.stx_rdev_major) << 32) | u64::from(s.stx_rdev_minor),
            size: s.stx_size as i64,
            blocks: s.stx_blocks as i64,
            blksize: i64::from(s.stx_blksize),
            atime: stx_ts(s.stx_atime),
            mtime: stx_ts(s.stx_mtime),
            ctime: stx_ts(s.stx_ctime),
            statx: Some((s.stx_mask, s.stx_attributes, s.stx_attributes_mask)),
        })
    }
    fn truncate(&mut self, path: &[u8], len: i64) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::truncate(p.as_ptr(), len) })
    }
    fn ftruncate(&mut self, fd: Fd, len: i64) -> R<()> {
        // SAFETY: integer arguments only.
        ret0(unsafe { libc::ftruncate(self.fd(fd), len) })
    }
    fn fallocate(&mut self, fd: Fd, mode: i32, off: i64, len: i64) -> R<()> {
        // SAFETY: integer arguments only.
        ret0(unsafe { libc::fallocate(self.fd(fd), mode, off, len) })
    }
    fn mkdir(&mut self, path: &[u8], mode: u32) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::mkdir(p.as_ptr(), mode) })
    }
    fn mkdirat(&mut self, dir: Fd, path: &[u8], mode: u32) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::mkdirat(self.fd(dir), p.as_ptr(), mode) })
    }
    fn rmdir(&mut self, path: &[u8]) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::rmdir(p.as_ptr()) })
    }
    fn unlink(&mut self, path: &[u8]) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::unlink(p.as_ptr()) })
    }
    fn unlinkat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::unlinkat(self.fd(dir), p.as_ptr(), flags) })
    }
    fn rename(&mut self, old: &[u8], new: &[u8]) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::rename(a.as_ptr(), b.as_ptr()) })
    }
    fn renameat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8]) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::renameat(self.fd(od), a.as_ptr(), self.fd(nd), b.as_ptr()) })
    }
    fn renameat2(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: u32) -> R<()> {
        let (a, b) = (c(old), c(new));
        Host::sys(
            libc::SYS_renameat2,
            [
                self.fd(od).into(),
                a.as_ptr() as _,
                self.fd(nd).into(),
                b.as_ptr() as _,
                flags.into(),
            ],
        )
        .map(|_| ())
    }
    fn link(&mut self, old: &[u8], new: &[u8]) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::link(a.as_ptr(), b.as_ptr()) })
    }
    fn linkat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: i32) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::linkat(self.fd(od), a.as_ptr(), self.fd(nd), b.as_ptr(), flags) })
    }
    fn symlink(&mut self, target: &[u8], path: &[u8]) -> R<()> {
        let (a, b) = (c(target), c(path));
        // SAFETY: live strings.
        ret0(unsafe { libc::symlink(a.as_ptr(), b.as_ptr()) })
    }
    fn symlinkat(&mut self, target: &[u8], dir: Fd, path: &[u8]) -> R<()> {
        let (a, b) = (c(target), c(path));
        // SAFETY: live strings.
        ret0(unsafe { libc::symlinkat(a.as_ptr(), self.fd(dir), b.as_ptr()) })
    }
    fn readlink(&mut self, path: &[u8], buf: &mut [u8]) -> R<usize> {
        let p = c(path);
        // SAFETY: live string, writable buffer of the given length.
        ret(unsafe { libc::readlink(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) } as i64)
            .map(|n| n as usize)
    }
    fn readlinkat(&mut self, dir: Fd, path: &[u8], buf: &mut [u8]) -> R<usize> {
        let p = c(path);
        // SAFETY: as in `readlink`.
        ret(unsafe {
            libc::readlinkat(self.fd(dir), p.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        } as i64)
        .map(|n| n as usize)
    }
    fn getdents64(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        Host::sys(
            libc::SYS_getdents64,
            [
                self.fd(fd).into(),
                buf.as_mut_ptr() as _,
                buf.len() as _,
                0,
                0,
            ],
        )
        .map(|n| n as usize)
    }
    fn chdir(&mut self, path: &[u8]) -> R<()> {
        let p = c(path);
        // SAFETY: live string; the cwd is this thread's own (CLONE_FS).
        ret0(unsafe { libc::chdir(p.as_ptr()) })
    }
    fn fchdir(&mut self, fd: Fd) -> R<()> {
        // SAFETY: integer argument; the cwd is this thread's own.
        ret0(unsafe { libc::fchdir(self.fd(fd)) })
    }
    fn getcwd(&mut self) -> R<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        let n = Host::sys(
            libc::SYS_getcwd,
            [buf.as_mut_ptr() as _, buf.len() as _, 0, 0, 0],
        )? as usize;
        buf.truncate(n.saturating_sub(1));
        Ok(buf)
    }
    fn chmod(&mut self, path: &[u8], mode: u32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::chmod(p.as_ptr(), mode) })
    }
    fn fchmod(&mut self, fd: Fd, mode: u32) -> R<()> {
        // SAFETY: integer arguments.
        ret0(unsafe { libc::fchmod(self.fd(fd), mode) })
    }
    fn fchmodat(&mut self, dir: Fd, path: &[u8], mode: u32, flags: i32) -> R<()> {
        let p = c(path);
        Host::sys(
            libc::SYS_fchmodat2,
            [
                self.fd(dir).into(),
                p.as_ptr() as _,
                mode.into(),
                flags.into(),
                0,
            ],
        )
        .map(|_| ())
    }
    fn chown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::chown(p.as_ptr(), uid, gid) })
    }
    fn lchown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::lchown(p.as_ptr(), uid, gid) })
    }
    fn fchown(&mut self, fd: Fd, uid: u32, gid: u32) -> R<()> {
        // SAFETY: integer arguments.
        ret0(unsafe { libc::fchown(self.fd(fd), uid, gid) })
    }
    fn fchownat(&mut self, dir: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::fchownat(self.fd(dir), p.as_ptr(), uid, gid, flags) })
    }
    fn umask(&mut self, mask: u32) -> u32 {
        // SAFETY: integer argument; the umask is this thread's own.
        unsafe { libc::umask(mask) }
    }
    fn access(&mut self, path: &[u8], mode: i32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::access(p.as_ptr(), mode) })
    }
    fn faccessat(&mut self, dir: Fd, path: &[u8], mode: i32, flags: i32) -> R<()> {
        let p = c(path);
        Host::sys(
            libc::SYS_faccessat2,
            [
                self.fd(dir).into(),
                p.as_ptr() as _,
                mode.into(),
                flags.into(),
                0,
            ],
        )
        .map(|_| ())
    }
    fn utimensat(&mut self, dir: Fd, path: &[u8], times: Option<[Ts; 2]>, flags: i32) -> R<()> {
        let p = c(path);
        let t = to_timespecs(&times);
        let tp = t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: live string; `tp` is null or two live timespecs.
        ret0(unsafe { libc::utimensat(self.fd(dir), p.as_ptr(), tp, flags) })
    }
    /// glibc's futimens: `utimensat(fd, NULL, times, 0)`, except that a
    /// negative fd is EBADF without asking the kernel (which would take
    /// `AT_FDCWD` with a NULL path as EFAULT). futimens is a libc function,
    /// so the libc answer is the reference.
    fn futimens(&mut self, fd: Fd, times: Option<[Ts; 2]>) -> R<()> {
        let t = to_timespecs(&times);
        let tp = t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: `tp` is null or two live timespecs.
        ret0(unsafe { libc::futimens(self.fd(fd), tp) })
    }
    fn fsync(&mut self, fd: Fd) -> R<()> {
        // SAFETY: integer argument.
        ret0(unsafe { libc::fsync(self.fd(fd)) })
    }
    fn fdatasync(&mut self, fd: Fd) -> R<()> {
        // SAFETY: integer argument.
        ret0(unsafe { libc::fdatasync(self.fd(fd)) })
    }
}

/// How the host side is isolated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sandbox {
    /// Private mount namespace, fresh tmpfs on /dev/shm, chroot into it.
    Chroot,
    /// Only cwd/umask are private: a directory of the real /dev/shm.
    Plain,
}

fn must(what: &str, r: libc::c_int) {
    assert!(
        r == 0,
        "host sandbox: {what}: {}",
        std::io::Error::last_os_error()
    );
}

/// Sets up this thread's sandbox; returns the kind. Must run in a thread
/// that does nothing else afterwards (its fs_struct and namespace change).
fn enter_sandbox() -> Sandbox {
    // SAFETY: unshare only changes this thread's own fs_struct and
    // namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_FS) } == 0 {
        // SAFETY: string literals are NUL-terminated; the mounts happen in
        // the private namespace just created (made private first, so
        // nothing propagates back to the host).
        unsafe {
            must(
                "make / private",
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ),
            );
            must(
                "mount tmpfs",
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev/shm".as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    c"mode=755,size=256m,nr_inodes=0".as_ptr().cast(),
                ),
            );
            must("chroot", libc::chroot(c"/dev/shm".as_ptr()));
            must("chdir /", libc::chdir(c"/".as_ptr()));
        }
        Sandbox::Chroot
    } else {
        // SAFETY: as above, CLONE_FS alone (allowed unprivileged).
        must("unshare(CLONE_FS)", unsafe {
            libc::unshare(libc::CLONE_FS)
        });
        Sandbox::Plain
    }
}

/// `mkdir -p top`, umask 022, chdir top; both sides do exactly this.
fn prepare(b: &mut dyn Backend, top: &[u8]) {
    b.umask(0o022);
    let mut p = Vec::new();
    for comp in top.split(|&c| c == b'/').filter(|c| !c.is_empty()) {
        p.push(b'/');
        p.extend_from_slice(comp);
        match b.mkdir(&p, 0o755) {
            Ok(()) | Err(17) => {}
            Err(e) => panic!("mkdir {}: {}", sp(&p), errno_name(e)),
        }
    }
    if let Err(e) = b.chdir(top) {
        panic!("chdir {}: {}", sp(top), errno_name(e));
    }
}

/// What a host run does: generate from a seed, or replay given ops.
enum HostJob {
    Generate(u64, usize),
    Replay(Vec<Op>),
}

/// Runs the host side in a thread of its own (see the module doc).
fn host_run_in_thread(job: HostJob, top: Vec<u8>) -> (Vec<Op>, Log, Sandbox) {
    std::thread::spawn(move || {
        let sandbox = enter_sandbox();
        let mut host = Host {
            fds: FdList::default(),
        };
        prepare(&mut host, &top);
        let root: &[u8] = match sandbox {
            Sandbox::Chroot => b"/",
            Sandbox::Plain => &top,
        };
        let (ops, log) = match job {
            HostJob::Generate(seed, n) => host_generate(&mut host, seed, &top, n, root),
            HostJob::Replay(ops) => {
                let log = run(&mut host, &ops, root);
                (ops, log)
            }
        };
        drop(host);
        if sandbox == Sandbox::Plain {
            let _ = std::fs::remove_dir_all(String::from_utf8_lossy(&top).as_ref());
        }
        (ops, log, sandbox)
    })
    .join()
    .expect("host thread panicked")
}

// ---------------------------------------------------------------------------
// The uvfs side.
// ---------------------------------------------------------------------------

mod uvfs_side {
    use super::*;
    use uvfs::fs::tmpfs::TmpfsOptions;
    use uvfs::{FastPaths, Process, Vfs};

    pub struct Uvfs {
        pub p: Process,
        pub fds: FdList,
    }

    impl Uvfs {
        pub fn new(fast: FastPaths) -> Uvfs {
            // The same limits as the host's tmpfs (see the module doc).
            let vfs = Vfs::builder()
                .fastpaths(fast)
                .root_options(TmpfsOptions {
                    size_bytes: Some(HOST_TMPFS_SIZE),
                    nr_inodes: None,
                    mode: 0o755,
                    uid: 0,
                    gid: 0,
                })
                .build();
            Uvfs {
                p: Process::new(&vfs).expect("Process::new"),
                fds: FdList::default(),
            }
        }
        fn fd(&self, fd: Fd) -> i32 {
            self.fds.raw(fd)
        }
    }

    fn e<T>(r: Result<T, uvfs::Errno>) -> R<T> {
        r.map_err(uvfs::Errno::raw)
    }

    fn st(s: uvfs::Stat) -> St {
        St {
            dev: s.st_dev,
            ino: s.st_ino,
            mode: s.st_mode,
            nlink: s.st_nlink,
            uid: s.st_uid,
            gid: s.st_gid,
            rdev: s.st_rdev,
            size: s.st_size,
            blocks: s.st_blocks,
            blksize: s.st_blksize,
            atime: Ts {
                sec: s.st_atime,
                nsec: s.st_atime_nsec,
            },
            mtime: Ts {
                sec: s.st_mtime,
                nsec: s.st_mtime_nsec,
            },
            ctime: Ts {
                sec: s.st_ctime,
                nsec: s.st_ctime_nsec,
            },
            statx: None,
        }
    }

    fn ts(t: Option<[Ts; 2]>) -> Option<[uvfs::uapi::Timespec; 2]> {
        t.map(|t| {
            t.map(|x| uvfs::uapi::Timespec {
                tv_sec: x.sec,
                tv_nsec: x.nsec,
            })
        })
    }

    impl Backend for Uvfs {
        fn fds(&mut self) -> &mut FdList {
            &mut self.fds
        }
        fn open(&mut self, path: &[u8], flags: i32, mode: u32) -> R<i32> {
            e(self.p.open(path, flags, mode))
        }
        fn openat(&mut self, dir: Fd, path: &[u8], flags: i32, mode: u32) -> R<i32> {
            let d = self.fd(dir);
            e(self.p.openat(d, path, flags, mode))
        }
        fn creat(&mut self, path: &[u8], mode: u32) -> R<i32> {
            e(self.p.creat(path, mode))
        }
        fn close(&mut self, fd: Fd) -> R<()> {
            let d = self.fd(fd);
            e(self.p.close(d))
        }
        fn read(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.read(d, buf))
        }
        fn write(&mut self, fd: Fd, buf: &[u8]) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.write(d, buf))
        }
        fn pread(&mut self, fd: Fd, buf: &mut [u8], off: i64) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.pread(d, buf, off))
        }
        fn pwrite(&mut self, fd: Fd, buf: &[u8], off: i64) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.pwrite(d, buf, off))
        }
        fn readv(&mut self, fd: Fd, bufs: &mut [&mut [u8]]) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.readv(d, bufs))
        }
        fn writev(&mut self, fd: Fd, bufs: &[&[u8]]) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.writev(d, bufs))
        }
        fn lseek(&mut self, fd: Fd, off: i64, whence: i32) -> R<i64> {
            let d = self.fd(fd);
            e(self.p.lseek(d, off, whence))
        }
        fn stat(&mut self, path: &[u8]) -> R<St> {
            e(self.p.stat(path)).map(st)
        }
        fn lstat(&mut self, path: &[u8]) -> R<St> {
            e(self.p.lstat(path)).map(st)
        }
        fn fstat(&mut self, fd: Fd) -> R<St> {
            let d = self.fd(fd);
            e(self.p.fstat(d)).map(st)
        }
        fn fstatat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<St> {
            let d = self.fd(dir);
            e(self.p.fstatat(d, path, flags)).map(st)
        }
        fn statx(&mut self, dir: Fd, path: &[u8], flags: i32, mask: u32) -> R<St> {
            let d = self.fd(dir);
            let s = e(self.p.statx(d, path, flags, mask))?;
            let t = |t: uvfs::stat::StatxTimestamp| Ts {
                sec: t.tv_sec,
                nsec: i64::from(t.tv_nsec),
            };
            Ok(St {
                dev: (u64::from(s.stx_dev_major) << 32) | u64::from(s.stx_dev_minor),
                ino: s.stx_ino,
                mode: u32::from(s.stx_mode),
                nlink: u64::from(s.stx_nlink),
                uid: s.stx_uid,
                gid: s.stx_gid,
                rdev: (u64::from(s.stx_rdev_major) << 32) | u64::from(s.stx_rdev_minor),
                size: s.stx_size as i64,
                blocks: s.stx_blocks as i64,
                blksize: i64::from(s.stx_blksize),
                atime: t(s.stx_atime),
                mtime: t(s.stx_mtime),
                ctime: t(s.stx_ctime),
                statx: Some((s.stx_mask, s.stx_attributes, s.stx_attributes_mask)),
            })
        }
        fn truncate(&mut self, path: &[u8], len: i64) -> R<()> {
            e(self.p.truncate(path, len))
        }
        fn ftruncate(&mut self, fd: Fd, len: i64) -> R<()> {
            let d = self.fd(fd);
            e(self.p.ftruncate(d, len))
        }
        fn fallocate(&mut self, fd: Fd, mode: i32, off: i64, len: i64) -> R<()> {
            let d = self.fd(fd);
            e(self.p.fallocate(d, mode, off, len))
        }
        fn mkdir(&mut self, path: &[u8], mode: u32) -> R<()> {
            e(self.p.mkdir(path, mode))
        }
        fn mkdirat(&mut self, dir: Fd, path: &[u8], mode: u32) -> R<()> {
            let d = self.fd(dir);
            e(self.p.mkdirat(d, path, mode))
        }
        fn rmdir(&mut self, path: &[u8]) -> R<()> {
            e(self.p.rmdir(path))
        }
        fn unlink(&mut self, path: &[u8]) -> R<()> {
            e(self.p.unlink(path))
        }
        fn unlinkat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<()> {
            let d = self.fd(dir);
            e(self.p.unlinkat(d, path, flags))
        }
        fn rename(&mut self, old: &[u8], new: &[u8]) -> R<()> {
            e(self.p.rename(old, new))
        }
        fn renameat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8]) -> R<()> {
            let (a, b) = (self.fd(od), self.fd(nd));
            e(self.p.renameat(a, old, b, new))
        }
        fn renameat2(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: u32) -> R<()> {
            let (a, b) = (self.fd(od), self.fd(nd));
            e(self.p.renameat2(a, old, b, new, flags))
        }
        fn link(&mut self, old: &[u8], new: &[u8]) -> R<()> {
            e(self.p.link(old, new))
        }
        fn linkat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: i32) -> R<()> {
            let (a, b) = (self.fd(od), self.fd(nd));
            e(self.p.linkat(a, old, b, new, flags))
        }
        fn symlink(&mut self, target: &[u8], path: &[u8]) -> R<()> {
            e(self.p.symlink(target, path))
        }
        fn symlinkat(&mut self, target: &[u8], dir: Fd, path: &[u8]) -> R<()> {
            let d = self.fd(dir);
            e(self.p.symlinkat(target, d, path))
        }
        fn readlink(&mut self, path: &[u8], buf: &mut [u8]) -> R<usize> {
            e(self.p.readlink(path, buf))
        }
        fn readlinkat(&mut self, dir: Fd, path: &[u8], buf: &mut [u8]) -> R<usize> {
            let d = self.fd(dir);
            e(self.p.readlinkat(d, path, buf))
        }
        fn getdents64(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
            let d = self.fd(fd);
            e(self.p.getdents64(d, buf))
        }
        fn chdir(&mut self, path: &[u8]) -> R<()> {
            e(self.p.chdir(path))
        }
        fn fchdir(&mut self, fd: Fd) -> R<()> {
            let d = self.fd(fd);
            e(self.p.fchdir(d))
        }
        fn getcwd(&mut self) -> R<Vec<u8>> {
            e(self.p.getcwd())
        }
        fn chmod(&mut self, path: &[u8], mode: u32) -> R<()> {
            e(self.p.chmod(path, mode))
        }
        fn fchmod(&mut self, fd: Fd, mode: u32) -> R<()> {
            let d = self.fd(fd);
            e(self.p.fchmod(d, mode))
        }
        fn fchmodat(&mut self, dir: Fd, path: &[u8], mode: u32, flags: i32) -> R<()> {
            let d = self.fd(dir);
            e(self.p.fchmodat(d, path, mode, flags))
        }
        fn chown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
            e(self.p.chown(path, uid, gid))
        }
        fn lchown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
            e(self.p.lchown(path, uid, gid))
        }
        fn fchown(&mut self, fd: Fd, uid: u32, gid: u32) -> R<()> {
            let d = self.fd(fd);
            e(self.p.fchown(d, uid, gid))
        }
        fn fchownat(&mut self, dir: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> R<()> {
            let d = self.fd(dir);
            e(self.p.fchownat(d, path, uid, gid, flags))
        }
        fn umask(&mut self, mask: u32) -> u32 {
            self.p.umask(mask)
        }
        fn access(&mut self, path: &[u8], mode: i32) -> R<()> {
            e(self.p.access(path, mode))
        }
        fn faccessat(&mut self, dir: Fd, path: &[u8], mode: i32, flags: i32) -> R<()> {
            let d = self.fd(dir);
            e(self.p.faccessat(d, path, mode, flags))
        }
        fn utimensat(&mut self, dir: Fd, path: &[u8], times: Option<[Ts; 2]>, flags: i32) -> R<()> {
            let d = self.fd(dir);
            e(self.p.utimensat(d, path, ts(times), flags))
        }
        fn futimens(&mut self, fd: Fd, times: Option<[Ts; 2]>) -> R<()> {
            let d = self.fd(fd);
            e(self.p.futimens(d, ts(times)))
        }
        fn fsync(&mut self, fd: Fd) -> R<()> {
            let d = self.fd(fd);
            e(self.p.fsync(d))
        }
        fn fdatasync(&mut self, fd: Fd) -> R<()> {
            let d = self.fd(fd);
            e(self.p.fdatasync(d))
        }
    }

    pub fn run_uvfs(fast: FastPaths, ops: &[Op], top: &[u8], root: &[u8]) -> Log {
        let mut u = Uvfs::new(fast);
        prepare(&mut u, top);
        run(&mut u, ops, root)
    }
}

// ---------------------------------------------------------------------------
// Driving.
// ---------------------------------------------------------------------------

static RUN: AtomicU64 = AtomicU64::new(0);

fn top_for_run() -> Vec<u8> {
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    format!("{SHM}/uvfs-diff-{}-{n}", std::process::id()).into_bytes()
}

/// Runs one seed on the host and on uvfs (both presets); the report of the
/// first mismatch, if any.
fn check_seed(seed: u64, nops: usize, verbose: bool) -> Option<String> {
    check_seed_counting(seed, nops, verbose, &mut Coverage::new())
}

/// How often each (call, host result) pair occurred: `"open Err(ELOOP)"`.
type Coverage = HashMap<String, usize>;

fn count(cov: &mut Coverage, ops: &[Op], host: &Log) {
    for (op, o) in ops.iter().zip(&host.obs) {
        let name = op.to_string();
        let name = name.split('(').next().unwrap_or("");
        let res = match &o.res {
            Ok(_) => "Ok".to_string(),
            Err(e) => format!("Err({})", errno_name(*e)),
        };
        *cov.entry(format!("{name} {res}")).or_default() += 1;
    }
}

/// The (call, result) pairs the default seeds must reach, so that the
/// generator's restrictions cannot quietly remove a whole class of cases.
const MUST_COVER: &[&str] = &[
    "open Ok",
    "open Err(ELOOP)",
    "open Err(ENAMETOOLONG)",
    "open Err(EEXIST)",
    "open Err(EISDIR)",
    "open Err(ENOTDIR)",
    "open Err(EINVAL)",
    "openat Err(EBADF)",
    "creat Ok",
    "read Ok",
    "read Err(EISDIR)",
    "write Ok",
    "write Err(EBADF)",
    "pread Ok",
    "pwrite Ok",
    "readv Ok",
    "writev Ok",
    "lseek Ok",
    "lseek Err(ENXIO)",
    "lseek Err(EINVAL)",
    "stat Ok",
    "lstat Ok",
    "fstat Ok",
    "fstatat Ok",
    "truncate Ok",
    "ftruncate Ok",
    "fallocate Ok",
    "fallocate Err(EOPNOTSUPP)",
    "mkdir Ok",
    "mkdir Err(EEXIST)",
    "rmdir Ok",
    "rmdir Err(ENOTEMPTY)",
    "unlink Ok",
    "unlinkat Ok",
    "rename Ok",
    "rename Err(EBUSY)",
    "rename Err(ENOTEMPTY)",
    "renameat2 Ok",
    "renameat2 Err(EEXIST)",
    "link Ok",
    "link Err(EPERM)",
    "linkat Ok",
    "symlink Ok",
    "symlinkat Ok",
    "readlink Ok",
    "readlinkat Ok",
    "getdents64 Ok",
    "chdir Ok",
    "fchdir Ok",
    "getcwd Ok",
    "chmod Ok",
    "fchmodat Err(EOPNOTSUPP)",
    "chown Ok",
    "lchown Ok",
    "fchown Ok",
    "umask Ok",
    "access Ok",
    "faccessat Ok",
    "utimensat Ok",
    "futimens Ok",
    "fsync Ok",
    "fdatasync Ok",
];

fn check_seed_counting(
    seed: u64,
    nops: usize,
    verbose: bool,
    cov: &mut Coverage,
) -> Option<String> {
    let top = top_for_run();
    let (ops, host, sandbox) = host_run_in_thread(HostJob::Generate(seed, nops), top.clone());
    count(cov, &ops, &host);
    if verbose {
        eprintln!("seed {seed}: host sandbox {sandbox:?}");
        for (i, o) in host.obs.iter().enumerate() {
            match ops.get(i) {
                Some(op) => eprintln!("{i:5}: {op} => {}", show_res(&o.res)),
                None => eprintln!("       {}: {}", o.what, show_res(&o.res)),
            }
        }
    }
    for fast in [uvfs::FastPaths::seeds(), uvfs::FastPaths::stock()] {
        let u = uvfs_side::run_uvfs(fast, &ops, &top, &host.dump_root);
        if let Some(report) = compare(seed, &fast.to_string(), &ops, &host, &u) {
            return Some(report);
        }
    }
    None
}

/// The first mismatch of `ops` (host replay in sandbox `top` against uvfs
/// with the seeds preset): its step, both results, and the report.
fn first_mismatch(ops: &[Op], top: &[u8]) -> Option<(usize, String, String)> {
    let (ops, host, _) = host_run_in_thread(HostJob::Replay(ops.to_vec()), top.to_vec());
    let u = uvfs_side::run_uvfs(uvfs::FastPaths::seeds(), &ops, top, &host.dump_root);
    let (i, report) = compare_at(0, "seeds", &ops, &host, &u)?;
    let res = |l: &Log| l.obs.get(i).map_or(String::new(), |o| show_res(&o.res));
    // A dump step is named by what it looked at, an op step by its op.
    let what = host.obs.get(i).map_or("", |o| o.what.as_str());
    Some((i, format!("{what} {} / {}", res(&host), res(&u)), report))
}

/// Shrinks a failing op list (cut after its first mismatching op) to a
/// short one whose last op still mismatches: removes chunks of ops, halving
/// the chunk size down to single ops. Opens are replaced by an open that
/// fails (`open("", 0)`) so later fd indexes keep their meaning.
fn minimize(ops: &[Op], top: &[u8]) -> Vec<Op> {
    let Some((i, want, _)) = first_mismatch(ops, top) else {
        return ops.to_vec();
    };
    // Results with times differ on every run: match on the op and errno
    // shape only for those.
    let shape = |r: &str| {
        if r.contains("Ok({ino") {
            r.split(" Ok(").next().unwrap_or("").to_string() + "stat"
        } else {
            r.to_string()
        }
    };
    let want = shape(&want);
    // A dump mismatch keeps every op; otherwise the ops up to the mismatch.
    let dump = i >= ops.len();
    let mut cur: Vec<Option<Op>> = ops[..=i.min(ops.len() - 1)]
        .iter()
        .cloned()
        .map(Some)
        .collect();
    let flat = |v: &[Option<Op>]| -> Vec<Op> { v.iter().flatten().cloned().collect() };
    let still = |v: &[Option<Op>]| {
        let f = flat(v);
        matches!(first_mismatch(&f, top),
            Some((j, r, _)) if (if dump { j >= f.len() } else { j + 1 == f.len() }) && shape(&r) == want)
    };
    let mut chunk = cur.len().div_ceil(2);
    // The last op (the mismatching one) stays, unless the mismatch is in
    // the dump.
    let keep_last = usize::from(!dump);
    while chunk >= 1 {
        let mut start = 0;
        while start + keep_last < cur.len() {
            let end = (start + chunk).min(cur.len() - keep_last);
            let mut trial = cur.clone();
            let mut changed = false;
            for slot in &mut trial[start..end] {
                let placeholder = |op: &Op| matches!(op, Op::Open(p, 0, 0) if p.is_empty());
                match slot.as_ref() {
                    Some(op) if placeholder(op) => {}
                    Some(op) if opens(op) => {
                        *slot = Some(Op::Open(Vec::new(), 0, 0));
                        changed = true;
                    }
                    Some(_) => {
                        *slot = None;
                        changed = true;
                    }
                    None => {}
                }
            }
            if changed && still(&trial) {
                cur = trial;
            }
            start = end;
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    compact(&flat(&cur))
}

/// Drops the failing placeholder opens of [`minimize`] and renumbers the fd
/// indexes after them (a reference to a placeholder becomes a closed index).
fn compact(ops: &[Op]) -> Vec<Op> {
    let placeholder = |op: &Op| matches!(op, Op::Open(p, 0, 0) if p.is_empty());
    let mut map = Vec::new(); // old index -> new index
    let mut next = 0;
    for op in ops.iter().filter(|op| opens(op)) {
        map.push(if placeholder(op) { None } else { Some(next) });
        if !placeholder(op) {
            next += 1;
        }
    }
    let fix = |fd: Fd| match fd {
        Fd::Idx(i) => match map.get(i).copied().flatten() {
            Some(j) => Fd::Idx(j),
            None => Fd::Bad(CLOSED_FD),
        },
        other => other,
    };
    ops.iter()
        .filter(|op| !placeholder(op))
        .map(|op| {
            let mut op = op.clone();
            match &mut op {
                Op::Openat(d, ..)
                | Op::Close(d)
                | Op::Read(d, _)
                | Op::Write(d, _)
                | Op::Pread(d, ..)
                | Op::Pwrite(d, ..)
                | Op::Readv(d, _)
                | Op::Writev(d, _)
                | Op::Lseek(d, ..)
                | Op::Fstat(d)
                | Op::Fstatat(d, ..)
                | Op::Statx(d, ..)
                | Op::Ftruncate(d, _)
                | Op::Fallocate(d, ..)
                | Op::Mkdirat(d, ..)
                | Op::Unlinkat(d, ..)
                | Op::Symlinkat(_, d, _)
                | Op::Readlinkat(d, ..)
                | Op::Getdents(d, _)
                | Op::Fchdir(d)
                | Op::Fchmod(d, _)
                | Op::Fchmodat(d, ..)
                | Op::Fchown(d, ..)
                | Op::Fchownat(d, ..)
                | Op::Faccessat(d, ..)
                | Op::Utimensat(d, ..)
                | Op::Futimens(d, _)
                | Op::Fsync(d)
                | Op::Fdatasync(d) => *d = fix(*d),
                Op::Renameat(d, _, e, _)
                | Op::Renameat2(d, _, e, _, _)
                | Op::Linkat(d, _, e, _, _) => {
                    *d = fix(*d);
                    *e = fix(*e);
                }
                _ => {}
            }
            op
        })
        .collect()
}

/// `UVFS_DIFF_KNOWN=1`: generate the cases of known mismatches too.
fn known_enabled() -> bool {
    std::env::var_os("UVFS_DIFF_KNOWN").is_some()
}

/// Replays `ops` on the host and on uvfs (both presets); the report of the
/// first mismatch, if any.
fn check_ops(name: &str, ops: Vec<Op>) -> Option<String> {
    let top = top_for_run();
    let (ops, host, _) = host_run_in_thread(HostJob::Replay(ops), top.clone());
    for fast in [uvfs::FastPaths::seeds(), uvfs::FastPaths::stock()] {
        let u = uvfs_side::run_uvfs(fast, &ops, &top, &host.dump_root);
        if let Some(report) = compare(0, &fast.to_string(), &ops, &host, &u) {
            return Some(format!("{name}:\n{report}"));
        }
    }
    None
}

fn p(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Minimal reproductions of the known mismatches, one per finding of
/// /work/notes/diff-findings.md (the generator leaves these cases out unless
/// `UVFS_DIFF_KNOWN` is set). Each starts in a fresh sandbox directory (the
/// cwd); `#0` is the first fd opened.
fn known_cases() -> Vec<(&'static str, Vec<Op>)> {
    let rw = O_RDWR | O_CREAT;
    let x = |len| Data { len, seed: 1 };
    let omit = Ts {
        sec: 0,
        nsec: UTIME_OMIT,
    };
    vec![
        (
            "finding 1: pread/pwrite with pos + count overflowing i64 (EINVAL)",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Pwrite(Fd::Idx(0), x(1), i64::MAX),
                Op::Pread(Fd::Idx(0), 4096, i64::MAX),
            ],
        ),
        (
            "finding 2: open of a directory with access mode 3 (EISDIR)",
            vec![Op::Mkdir(p("c"), 0o755), Op::Open(p("c"), 3, 0)],
        ),
        (
            "finding 3: statx result mask and attributes_mask",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Statx(Fd::Cwd, p("d"), 0, STATX_BASIC_STATS),
                Op::Statx(Fd::Cwd, p("d"), 0, 1),
            ],
        ),
        (
            "finding 4: utimensat checks the times after the path lookup",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Utimensat(
                    Fd::Idx(0),
                    p("l"),
                    Some([
                        Ts {
                            sec: 7,
                            nsec: 1_000_000_000,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_NOW,
                        },
                    ]),
                    0,
                ),
            ],
        ),
        (
            "finding 5: getdents64 at a position past the last cookie lists from the head",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Lseek(Fd::Idx(2), 100, SEEK_SET),
                Op::Getdents(Fd::Idx(2), 4096),
                Op::Lseek(Fd::Idx(2), 1 << 40, SEEK_SET),
                Op::Getdents(Fd::Idx(2), 4096),
            ],
        ),
        (
            "finding 5b: past EOD, resume at the entry with the largest cookie, not the head",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("c"), rw, 0o644),
                // "a" (cookie 3) replaced by c: at the head with cookie 3.
                Op::Rename(p("c"), p("a")),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Getdents(Fd::Idx(3), 4096),
                Op::Lseek(Fd::Idx(3), 100, SEEK_SET),
                Op::Getdents(Fd::Idx(3), 4096),
                Op::Lseek(Fd::Idx(3), 1 << 40, SEEK_SET),
                Op::Getdents(Fd::Idx(3), 4096),
            ],
        ),
        (
            "finding 6: O_TMPFILE | O_PATH opens the directory as O_PATH",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Open(p("d"), O_TMPFILE | O_PATH | O_RDWR, 0o644),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 7: RENAME_EXCHANGE/NOREPLACE check the target before the source's trailing slash",
            vec![
                Op::Open(p("l"), rw, 0o644),
                Op::Open(p("a"), rw, 0o644),
                Op::Renameat2(Fd::Cwd, p("l/"), Fd::Cwd, p("nx"), 2),
                Op::Renameat2(Fd::Cwd, p("l/"), Fd::Cwd, p("a"), 1),
            ],
        ),
        (
            "finding 8: read updates an old atime (relatime)",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Write(Fd::Idx(0), x(10)),
                Op::Futimens(
                    Fd::Idx(0),
                    Some([
                        Ts {
                            sec: 1_000_000_000,
                            nsec: 0,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_OMIT,
                        },
                    ]),
                ),
                Op::Pread(Fd::Idx(0), 10, 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 9: negative pread/pwrite offset and ftruncate length are checked before the fd",
            vec![
                Op::Pwrite(Fd::Bad(1_000_000), x(1), -1),
                Op::Pread(Fd::Bad(-1), 1, -1),
                Op::Ftruncate(Fd::Bad(1_000_000), -1),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Pwrite(Fd::Idx(0), x(1), -1),
            ],
        ),
        (
            "finding 10: utimensat/futimens with both times UTIME_OMIT succeed before any check",
            vec![
                Op::Utimensat(Fd::Cwd, p("missing"), Some([omit, omit]), 0),
                Op::Utimensat(Fd::Cwd, p("missing"), Some([omit, omit]), 1),
                Op::Futimens(Fd::Bad(1_000_000), Some([omit, omit])),
            ],
        ),
        (
            "finding 11: futimens on an O_PATH fd is EBADF",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("a"), O_PATH, 0),
                Op::Futimens(Fd::Idx(1), None),
            ],
        ),
        (
            "finding 12: lookup in a removed directory is ENOENT before ENAMETOOLONG",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Chdir(p("d")),
                Op::Rmdir(p("../d")),
                Op::Access(vec![b'y'; 256], 0),
            ],
        ),
        (
            "finding 13: readlinkat with an empty path on a non-symlink is ENOENT",
            vec![
                Op::Mkdir(p("t"), 0o755),
                Op::Open(p("t"), O_RDONLY, 0),
                Op::Readlinkat(Fd::Idx(0), Vec::new(), 4096),
                Op::Readlinkat(Fd::Cwd, Vec::new(), 4096),
            ],
        ),
        (
            "finding 14: a getdents64 that reaches the end leaves the position at the end cookie",
            vec![
                Op::Mkdir(p("e"), 0o755),
                Op::Open(p("e"), O_RDONLY | O_DIRECTORY, 0),
                Op::Lseek(Fd::Idx(0), 100, SEEK_SET),
                Op::Getdents(Fd::Idx(0), 4096),
                Op::Lseek(Fd::Idx(0), 0, SEEK_CUR),
                Op::Open(p("e/f"), rw, 0o644),
                Op::Getdents(Fd::Idx(0), 4096),
            ],
        ),
        (
            "finding 15: readv/writev of zero total length return 0 before the file-type checks",
            vec![
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Readv(Fd::Idx(0), vec![]),
                Op::Readv(Fd::Idx(0), vec![0, 0]),
            ],
        ),
        (
            "finding 16: open of an existing \".\" with O_CREAT | O_EXCL is EEXIST",
            vec![Op::Open(p("."), O_CREAT | O_EXCL | O_RDWR, 0o644)],
        ),
        (
            "finding 17: a getdents64 too small for the next entry (EINVAL) still moves the position",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Lseek(Fd::Idx(2), 12288, SEEK_SET),
                Op::Getdents(Fd::Idx(2), 10),
                Op::Lseek(Fd::Idx(2), 0, SEEK_CUR),
                Op::Open(p("c"), rw, 0o644),
                Op::Getdents(Fd::Idx(2), 4096),
            ],
        ),
        (
            "finding 18: O_DIRECT open of a directory is EINVAL",
            vec![Op::Mkdir(p("b"), 0o755), Op::Open(p("b"), O_DIRECT, 0)],
        ),
        (
            "finding 19: open's flag checks (EINVAL) come before the path (ENAMETOOLONG)",
            vec![Op::Open(
                vec![b'a'; 4096],
                O_CREAT | O_DIRECTORY | O_WRONLY,
                0o644,
            )],
        ),
        (
            "finding 20: fallocate over already fallocated pages makes them data for SEEK_DATA",
            vec![
                Op::Open(p("f"), rw, 0o644),
                Op::Fallocate(Fd::Idx(0), 0, 1 << 20, 1 << 20),
                Op::Lseek(Fd::Idx(0), 0, SEEK_DATA),
                Op::Fallocate(Fd::Idx(0), 0, 1 << 20, 8192),
                Op::Lseek(Fd::Idx(0), 0, SEEK_DATA),
                Op::Lseek(Fd::Idx(0), 1 << 20, SEEK_HOLE),
            ],
        ),
        (
            "finding 21: RENAME_EXCHANGE: a trailing slash requires that name to be a directory",
            vec![
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("m"), rw, 0o644),
                Op::Mkdir(p("d"), 0o755),
                Op::Renameat2(Fd::Cwd, p("b"), Fd::Cwd, p("d/"), 2),
                Op::Renameat2(Fd::Cwd, p("b"), Fd::Cwd, p("m/"), 2),
            ],
        ),
        (
            "finding 22: O_TMPFILE | O_NOFOLLOW on a symlink is ENOTDIR",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Symlink(p("d"), p("t")),
                Op::Open(p("t"), O_TMPFILE | O_NOFOLLOW | O_RDWR, 0o644),
                Op::Open(p("missing-link"), O_TMPFILE | O_NOFOLLOW | O_RDWR, 0o644),
            ],
        ),
        (
            "finding 23: chown with uid and gid both -1 still changes ctime",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Fstat(Fd::Idx(0)),
                Op::Fchownat(Fd::Cwd, p("a"), u32::MAX, u32::MAX, 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 24a: rename into a removed directory is ENOENT before the trailing-slash ENOTDIR",
            vec![
                Op::Open(p("t"), rw, 0o644),
                Op::Mkdir(p("b"), 0o755),
                Op::Open(p("b"), O_RDONLY | O_DIRECTORY, 0),
                Op::Rmdir(p("b")),
                Op::Renameat2(Fd::Cwd, p("t"), Fd::Idx(1), p("z1/"), 0),
            ],
        ),
        (
            "finding 24b: rename of an ancestor into a removed cwd is ENOENT, not EINVAL",
            vec![
                Op::Mkdir(p("l"), 0o755),
                Op::Chdir(p("l")),
                Op::Rmdir(p("../l")),
                Op::Rename(p("/dev/shm"), p("m")),
            ],
        ),
        (
            "finding 24c: link of a directory into a removed cwd is ENOENT, not EPERM",
            vec![
                Op::Mkdir(p("l"), 0o755),
                Op::Chdir(p("l")),
                Op::Rmdir(p("../l")),
                Op::Link(p(".."), p("d")),
            ],
        ),
        (
            "finding 24d: linkat(AT_EMPTY_PATH) of a removed cwd to a name cached as negative: ENOENT, not EPERM",
            vec![
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Mkdirat(Fd::Idx(0), p("a/"), 0o755),
                Op::Chdir(p("a")),
                // A negative dentry for the new name, in the directory to be
                // removed.
                Op::Unlink(p("a")),
                Op::Unlinkat(Fd::Idx(0), p("a"), AT_REMOVEDIR),
                Op::Linkat(Fd::Cwd, Vec::new(), Fd::Cwd, p("a"), AT_EMPTY_PATH),
            ],
        ),
        (
            "finding 25: truncate(2) to the current size changes neither mtime nor ctime",
            vec![
                Op::Open(p("f"), rw, 0o644),
                Op::Fstat(Fd::Idx(0)),
                Op::Truncate(p("f"), 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 26: rename looks both names up before the trailing-slash checks",
            vec![
                Op::Open(p("c"), rw, 0o644),
                Op::Rename(p("c/"), vec![b'y'; 256]),
            ],
        ),
        (
            "finding 27: O_CREAT|O_NOFOLLOW on another user's symlink in a sticky world-writable directory is EACCES",
            vec![
                Op::Symlink(p("a"), p("l")),
                Op::Chmod(p("."), 0o1777),
                Op::Lchown(p("l"), 1000, 0),
                Op::Open(p("l"), O_CREAT | O_NOFOLLOW | O_WRONLY, 0o644),
            ],
        ),
        (
            "finding 28: SEEK_HOLE after data in the last page before i64::MAX",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Pwrite(Fd::Idx(0), x(4096), i64::MAX - 4096),
                Op::Lseek(Fd::Idx(0), 0, SEEK_DATA),
                Op::Lseek(Fd::Idx(0), i64::MAX - 8191, SEEK_HOLE),
            ],
        ),
        (
            "finding 29: a zero-length read updates atime",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Futimens(
                    Fd::Idx(0),
                    Some([
                        Ts {
                            sec: 1_000_000_000,
                            nsec: 0,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_OMIT,
                        },
                    ]),
                ),
                Op::Read(Fd::Idx(0), 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 30: following a symlink updates the symlink's atime",
            vec![
                Op::Symlink(p("missing"), p("z0")),
                Op::Utimensat(
                    Fd::Cwd,
                    p("z0"),
                    Some([
                        Ts {
                            sec: 1_000_000_000,
                            nsec: 0,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_OMIT,
                        },
                    ]),
                    AT_SYMLINK_NOFOLLOW,
                ),
                Op::Stat(p("z0")),
                Op::Lstat(p("z0")),
            ],
        ),
        (
            "finding 32: 40 links before the last component, then a trailing symlink: ELOOP",
            {
                let mut v = vec![
                    Op::Mkdir(p("l"), 0o755),
                    Op::Mkdir(p("a"), 0o755),
                    Op::Mkdir(p("a/e"), 0o755),
                    Op::Symlink(p("../../l"), p("a/e/f")),
                ];
                // z1 -> z2 -> ... -> z40 -> a: 40 links to reach a.
                for i in 1..=40 {
                    let t = if i == 40 {
                        p("a")
                    } else {
                        format!("z{}", i + 1).into_bytes()
                    };
                    v.push(Op::Symlink(t, format!("z{i}").into_bytes()));
                }
                v.push(Op::Stat(p("z1/e")));
                v.push(Op::Open(p("z1/e/f"), O_RDONLY, 0));
                v.push(Op::Open(p("z1/e/f"), O_RDWR | O_CREAT, 0o644));
                v
            },
        ),
        (
            "finding 31: futimens with a negative fd is EBADF (glibc), also with both times UTIME_OMIT",
            vec![Op::Futimens(Fd::Bad(-2), Some([omit, omit]))],
        ),
    ]
}

/// The findings of [`known_cases`] fixed on main since (they stay as
/// regression tests, and the generator produces their cases again).
const FIXED: &[&str] = &[
    "finding 1:",
    "finding 2:",
    "finding 4:",
    "finding 5:",
    "finding 6:",
    "finding 7:",
    "finding 8:",
    "finding 9:",
    "finding 10:",
    "finding 11:",
    "finding 12:",
    "finding 13:",
    "finding 14:",
    "finding 15:",
    "finding 16:",
    "finding 18:",
    "finding 19:",
    "finding 20:",
    "finding 21:",
    "finding 22:",
    "finding 23:",
    "finding 24a:",
    "finding 24b:",
    "finding 24c:",
    "finding 25:",
    "finding 26:",
    "finding 27:",
    "finding 29:",
    "finding 30:",
    "finding 31:",
    "finding 32:",
    // Fixed by the lead after the harness's last merge.
    "finding 3:",
    "finding 5b:",
    "finding 17:",
    "finding 24:",
    "finding 24d:",
];

fn is_fixed(name: &str) -> bool {
    FIXED.iter().any(|f| name.starts_with(f))
}

fn run_cases(fixed: bool) {
    let mut failed = Vec::new();
    for (name, ops) in known_cases() {
        if is_fixed(name) != fixed {
            continue;
        }
        if let Some(report) = check_ops(name, ops) {
            eprintln!("{report}");
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "still mismatching: {failed:#?}");
}

/// The known mismatches, still present: run with `--ignored` to see which
/// remain (each is listed in /work/notes/diff-findings.md).
#[test]
#[ignore = "known mismatch: see notes"]
fn known_mismatches() {
    run_cases(false);
}

/// The reproductions of fixed findings must keep agreeing.
#[test]
fn fixed_findings_stay_fixed() {
    run_cases(true);
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: not a number: {v}"))
    })
}

#[test]
fn path_ops_match_the_host_kernel() {
    let verbose = std::env::var_os("UVFS_DIFF_VERBOSE").is_some();
    if let Some(seed) = env_u64("UVFS_DIFF_SEED") {
        if let Some(report) = check_seed(seed, OPS_PER_SEED, verbose) {
            if std::env::var_os("UVFS_DIFF_MINIMIZE").is_some() {
                let top = top_for_run();
                let (ops, _, _) =
                    host_run_in_thread(HostJob::Generate(seed, OPS_PER_SEED), top.clone());
                let small = minimize(&ops, &top);
                if let Some((_, _, r)) = first_mismatch(&small, &top) {
                    eprintln!("minimized ({} ops):\n{r}", small.len());
                }
            }
            panic!("{report}");
        }
        return;
    }
    let start = Instant::now();
    let seeds = default_seeds();
    let mut cov = Coverage::new();
    for &seed in &seeds {
        if let Some(report) = check_seed_counting(seed, OPS_PER_SEED, verbose, &mut cov) {
            panic!("{report}");
        }
    }
    eprintln!(
        "path_differential: {} seeds x {OPS_PER_SEED} ops agree, host and uvfs (seeds and stock presets), {} distinct (call, result) pairs ({:.1?})",
        seeds.len(),
        cov.len(),
        start.elapsed()
    );
    let missing: Vec<&str> = MUST_COVER
        .iter()
        .copied()
        .filter(|k| !cov.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "weak sequences: never reached {missing:?}"
    );
    if let Some(secs) = env_u64("UVFS_DIFF_LONG") {
        let end = Instant::now() + Duration::from_secs(secs);
        let base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            << 20;
        let mut n = 0u64;
        while Instant::now() < end {
            let seed = base + n;
            n += 1;
            if let Some(report) = check_seed(seed, OPS_PER_SEED, false) {
                panic!("soak, after {n} seeds: {report}");
            }
        }
        eprintln!("path_differential soak: {n} more seeds agree");
    }
}

/// The harness itself: two host runs of one sequence (each in a fresh
/// sandbox) must compare equal, or a compared relation is not deterministic.
#[test]
fn host_runs_are_deterministic() {
    for seed in [1u64, 0x5eed, 99] {
        let top = top_for_run();
        let (ops, a, sa) = host_run_in_thread(HostJob::Generate(seed, OPS_PER_SEED), top.clone());
        let (_, b, sb) = host_run_in_thread(HostJob::Replay(ops.clone()), top.clone());
        assert_eq!(sa, sb);
        if sa == Sandbox::Plain {
            // Two plain runs share the host's inode allocator: the pairing
            // still holds, but different real directories are not the same
            // absolute path; nothing more to check there.
        }
        if let Some(report) = compare(seed, "host-vs-host", &ops, &a, &b) {
            panic!("{report}");
        }
    }
}
