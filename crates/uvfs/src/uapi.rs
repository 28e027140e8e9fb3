//! Linux's user-visible constants for the calls uvfs implements (x86-64
//! values), so callers can pass the same numbers they would pass to libc.

/// Open for reading only.
pub const O_RDONLY: i32 = 0o0;
/// Open for writing only.
pub const O_WRONLY: i32 = 0o1;
/// Open for reading and writing.
pub const O_RDWR: i32 = 0o2;
/// Mask of the access mode bits.
pub const O_ACCMODE: i32 = 0o3;
/// Create the file if it does not exist.
pub const O_CREAT: i32 = 0o100;
/// With `O_CREAT`: fail if the file exists.
pub const O_EXCL: i32 = 0o200;
/// Do not make the file the controlling terminal.
pub const O_NOCTTY: i32 = 0o400;
/// Truncate a regular file to length 0.
pub const O_TRUNC: i32 = 0o1000;
/// Every write appends.
pub const O_APPEND: i32 = 0o2000;
/// Non-blocking I/O.
pub const O_NONBLOCK: i32 = 0o4000;
/// Same as `O_NONBLOCK` on Linux.
pub const O_NDELAY: i32 = O_NONBLOCK;
/// Synchronized data writes.
pub const O_DSYNC: i32 = 0o10000;
/// Signal-driven I/O (`FASYNC`).
pub const O_ASYNC: i32 = 0o20000;
/// Direct I/O.
pub const O_DIRECT: i32 = 0o40000;
/// Large-file marker; Linux sets it on every open on 64-bit.
pub const O_LARGEFILE: i32 = 0o100000;
/// Fail unless the path is a directory.
pub const O_DIRECTORY: i32 = 0o200000;
/// Do not follow a final symlink.
pub const O_NOFOLLOW: i32 = 0o400000;
/// Do not update the access time.
pub const O_NOATIME: i32 = 0o1000000;
/// Close on exec.
pub const O_CLOEXEC: i32 = 0o2000000;
/// Synchronized file integrity writes.
pub const O_SYNC: i32 = 0o4010000;
/// A path-only descriptor.
pub const O_PATH: i32 = 0o10000000;
/// An unnamed temporary file in the given directory.
pub const O_TMPFILE: i32 = 0o20200000;

/// The flags `F_SETFL` may change (Linux's `SETFL_MASK`). `O_ASYNC` is not
/// among them: only a file's `fasync` operation sets it.
pub const SETFL_MASK: i32 = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME;

/// fcntl: duplicate to the lowest free fd at or above the argument.
pub const F_DUPFD: i32 = 0;
/// fcntl: read the fd flags.
pub const F_GETFD: i32 = 1;
/// fcntl: set the fd flags.
pub const F_SETFD: i32 = 2;
/// fcntl: read the file status flags.
pub const F_GETFL: i32 = 3;
/// fcntl: set the file status flags.
pub const F_SETFL: i32 = 4;
/// fcntl: like `F_DUPFD`, and set close-on-exec on the new fd.
pub const F_DUPFD_CLOEXEC: i32 = 1030;
/// fcntl: whether the fd in the argument refers to the same open file.
pub const F_DUPFD_QUERY: i32 = 1027;
/// The one fd flag: close on exec.
pub const FD_CLOEXEC: i32 = 1;

/// close_range: unshare the fd table before closing.
pub const CLOSE_RANGE_UNSHARE: u32 = 1 << 1;
/// close_range: mark the range close-on-exec instead of closing it.
pub const CLOSE_RANGE_CLOEXEC: u32 = 1 << 2;

/// Linux's default ceiling for RLIMIT_NOFILE (`fs.nr_open`).
pub const NR_OPEN: u64 = 1 << 20;
/// "No limit" for setrlimit.
pub const RLIM_INFINITY: u64 = u64::MAX;

/// `*at` calls: the directory fd meaning "the current directory".
pub const AT_FDCWD: i32 = -100;
/// `*at` calls: do not follow a final symlink.
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
/// `unlinkat`: remove a directory.
pub const AT_REMOVEDIR: i32 = 0x200;
/// `faccessat`: check with the effective ids.
pub const AT_EACCESS: i32 = 0x200;
/// `linkat`: follow a final symlink.
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
/// `fstatat`/`statx`: do not automount (no effect in uvfs).
pub const AT_NO_AUTOMOUNT: i32 = 0x800;
/// An empty path names the directory fd itself.
pub const AT_EMPTY_PATH: i32 = 0x1000;
/// `statx`: the sync-type bits (accepted, no effect on tmpfs).
pub const AT_STATX_SYNC_TYPE: i32 = 0x6000;

/// `lseek`: absolute.
pub const SEEK_SET: i32 = 0;
/// `lseek`: relative to the position.
pub const SEEK_CUR: i32 = 1;
/// `lseek`: relative to the end.
pub const SEEK_END: i32 = 2;
/// `lseek`: the next data at or after the offset.
pub const SEEK_DATA: i32 = 3;
/// `lseek`: the next hole at or after the offset.
pub const SEEK_HOLE: i32 = 4;

/// `access`: existence only.
pub const F_OK: i32 = 0;
/// `access`: execute (search) permission.
pub const X_OK: i32 = 1;
/// `access`: write permission.
pub const W_OK: i32 = 2;
/// `access`: read permission.
pub const R_OK: i32 = 4;

/// `utimensat`: set this time to now.
pub const UTIME_NOW: i64 = (1 << 30) - 1;
/// `utimensat`: leave this time alone.
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

/// The most buffers `readv`/`writev` take (`UIO_MAXIOV`).
pub const UIO_MAXIOV: usize = 1024;

/// `struct timespec` as the time-setting calls take it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timespec {
    /// Seconds.
    pub tv_sec: i64,
    /// Nanoseconds, or [`UTIME_NOW`] / [`UTIME_OMIT`].
    pub tv_nsec: i64,
}

/// `statx` mask: file type.
pub const STATX_TYPE: u32 = 0x1;
/// `statx` mask: permission bits.
pub const STATX_MODE: u32 = 0x2;
/// `statx` mask: link count.
pub const STATX_NLINK: u32 = 0x4;
/// `statx` mask: owner.
pub const STATX_UID: u32 = 0x8;
/// `statx` mask: group.
pub const STATX_GID: u32 = 0x10;
/// `statx` mask: access time.
pub const STATX_ATIME: u32 = 0x20;
/// `statx` mask: modification time.
pub const STATX_MTIME: u32 = 0x40;
/// `statx` mask: change time.
pub const STATX_CTIME: u32 = 0x80;
/// `statx` mask: inode number.
pub const STATX_INO: u32 = 0x100;
/// `statx` mask: size.
pub const STATX_SIZE: u32 = 0x200;
/// `statx` mask: blocks.
pub const STATX_BLOCKS: u32 = 0x400;
/// `statx` mask: everything `stat` returns.
pub const STATX_BASIC_STATS: u32 = 0x7ff;
/// `statx` mask: creation time.
pub const STATX_BTIME: u32 = 0x800;
/// `statx` mask: mount id.
pub const STATX_MNT_ID: u32 = 0x1000;
/// `statx` mask: the unique (never reused) mount id, in place of
/// [`STATX_MNT_ID`].
pub const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
/// `statx`: a reserved mask bit (`EINVAL`).
pub const STATX_RESERVED: u32 = 0x8000_0000;
/// `statx` attribute: the file is the root of a mount.
pub const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;

/// A write of at most this many bytes to a pipe or FIFO is never split
/// or interleaved with another (`PIPE_BUF`).
pub const PIPE_BUF: usize = 4096;

/// `d_type` values of `getdents64` records.
pub const DT_UNKNOWN: u8 = 0;
/// Directory.
pub const DT_DIR: u8 = 4;
/// `d_type` of a FIFO.
pub const DT_FIFO: u8 = 1;
/// `d_type` of a character device.
pub const DT_CHR: u8 = 2;
/// `d_type` of a block device.
pub const DT_BLK: u8 = 6;
/// `d_type` of a socket.
pub const DT_SOCK: u8 = 12;
/// Regular file.
pub const DT_REG: u8 = 8;
/// Symbolic link.
pub const DT_LNK: u8 = 10;

// Advisory locks (fs/locks.c).

/// fcntl: test for a conflicting POSIX record lock.
pub const F_GETLK: i32 = 5;
/// fcntl: set or remove a POSIX record lock; `EAGAIN` on a conflict.
pub const F_SETLK: i32 = 6;
/// fcntl: as `F_SETLK`, waiting for a conflicting lock to go.
pub const F_SETLKW: i32 = 7;
/// fcntl: test for a lock conflicting with an open file description lock.
pub const F_OFD_GETLK: i32 = 36;
/// fcntl: set or remove an open file description lock.
pub const F_OFD_SETLK: i32 = 37;
/// fcntl: as `F_OFD_SETLK`, waiting for a conflicting lock to go.
pub const F_OFD_SETLKW: i32 = 38;
/// `l_type`: a shared (read) lock.
pub const F_RDLCK: i32 = 0;
/// `l_type`: an exclusive (write) lock.
pub const F_WRLCK: i32 = 1;
/// `l_type`: no lock (remove; or "nothing conflicts" from `F_GETLK`).
pub const F_UNLCK: i32 = 2;
/// flock: a shared lock.
pub const LOCK_SH: i32 = 1;
/// flock: an exclusive lock.
pub const LOCK_EX: i32 = 2;
/// flock: do not wait (`EWOULDBLOCK` on a conflict).
pub const LOCK_NB: i32 = 4;
/// flock: remove the lock.
pub const LOCK_UN: i32 = 8;
/// flock: the retired mandatory-lock flag; Linux ignores such requests
/// (returns 0 without looking at the fd).
pub const LOCK_MAND: i32 = 32;

/// fcntl: set the process (positive) or process group (negative) that
/// receives `SIGIO`/`SIGURG` for the file.
pub const F_SETOWN: i32 = 8;
/// fcntl: the owner set by `F_SETOWN` (a process group as a negative
/// number), 0 if none.
pub const F_GETOWN: i32 = 9;
/// fcntl: the signal sent instead of `SIGIO` (0: `SIGIO`).
pub const F_SETSIG: i32 = 10;
/// fcntl: the signal set by `F_SETSIG`.
pub const F_GETSIG: i32 = 11;
/// The signal a file's owner gets when its `F_SETSIG` signal is 0
/// (x86-64 numbering).
pub const SIGIO: i32 = 29;
/// fcntl: set the owner from a `struct f_owner_ex` ([`FOwnerEx`]).
pub const F_SETOWN_EX: i32 = 15;
/// fcntl: the owner as a `struct f_owner_ex` ([`FOwnerEx`]).
pub const F_GETOWN_EX: i32 = 16;
/// `f_owner_ex.type`: one thread.
pub const F_OWNER_TID: i32 = 0;
/// `f_owner_ex.type`: a process (thread group).
pub const F_OWNER_PID: i32 = 1;
/// `f_owner_ex.type`: a process group.
pub const F_OWNER_PGRP: i32 = 2;
/// fcntl: take or release a lease.
pub const F_SETLEASE: i32 = 1024;
/// fcntl: the lease held (`F_UNLCK` if none).
pub const F_GETLEASE: i32 = 1025;
/// fcntl: directory notification (dnotify): signal the owner on changes.
pub const F_NOTIFY: i32 = 1026;
/// `F_NOTIFY`: keep the notification after the first event.
pub const DN_MULTISHOT: u64 = 0x8000_0000;
/// fcntl: whether this open created the file (Linux 6.12).
pub const F_CREATED_QUERY: i32 = 1028;
/// fcntl: set a pipe's capacity.
pub const F_SETPIPE_SZ: i32 = 1031;
/// fcntl: a pipe's capacity.
pub const F_GETPIPE_SZ: i32 = 1032;
/// fcntl: add file seals (memfd).
pub const F_ADD_SEALS: i32 = 1033;
/// fcntl: the file's seals.
pub const F_GET_SEALS: i32 = 1034;
/// Seal: no more seals may be added.
pub const F_SEAL_SEAL: u32 = 0x1;
/// Every seal bit Linux knows (`F_ALL_SEALS`: seal, shrink, grow, write,
/// future write, exec).
pub const F_ALL_SEALS: u32 = 0x3f;
/// The highest signal number (`_NSIG`): `F_SETSIG` takes 0 to this.
pub const NSIG: i32 = 64;
/// `PATH_MAX`: the longest path, its terminating NUL included.
pub const PATH_MAX: usize = 4096;

/// `struct f_owner_ex` of `F_GETOWN_EX`/`F_SETOWN_EX`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FOwnerEx {
    /// [`F_OWNER_TID`], [`F_OWNER_PID`] or [`F_OWNER_PGRP`].
    pub kind: i32,
    /// The thread, process or process-group id (0: none).
    pub pid: i32,
}

/// `setxattr`: fail with `EEXIST` if the attribute exists.
pub const XATTR_CREATE: i32 = 1;
/// `setxattr`: fail with `ENODATA` if the attribute does not exist.
pub const XATTR_REPLACE: i32 = 2;
/// The longest extended-attribute name (`XATTR_NAME_MAX`).
pub const XATTR_NAME_MAX: usize = 255;
/// The largest extended-attribute value (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;
/// The largest `listxattr` buffer the kernel fills (`XATTR_LIST_MAX`).
pub const XATTR_LIST_MAX: usize = 65536;

/// `preadv2`/`pwritev2`: high-priority polling (no effect on tmpfs).
pub const RWF_HIPRI: u32 = 0x1;
/// `pwritev2`: per-write `O_DSYNC`.
pub const RWF_DSYNC: u32 = 0x2;
/// `pwritev2`: per-write `O_SYNC`.
pub const RWF_SYNC: u32 = 0x4;
/// Do not wait for data or locks (`EOPNOTSUPP` on tmpfs).
pub const RWF_NOWAIT: u32 = 0x8;
/// `pwritev2`: per-write `O_APPEND`.
pub const RWF_APPEND: u32 = 0x10;
/// `pwritev2`: ignore `O_APPEND` for this write.
pub const RWF_NOAPPEND: u32 = 0x20;
/// `pwritev2`: untorn write (`EOPNOTSUPP` on tmpfs).
pub const RWF_ATOMIC: u32 = 0x40;
/// Drop the page cache after the I/O (`EOPNOTSUPP` on tmpfs).
pub const RWF_DONTCACHE: u32 = 0x80;
/// No `SIGPIPE` on a broken pipe or socket.
pub const RWF_NOSIGNAL: u32 = 0x100;
/// Every `RWF_*` flag Linux 6.18 knows.
pub const RWF_SUPPORTED: u32 = 0x1ff;
/// The most one read or write transfers (`MAX_RW_COUNT`).
pub const MAX_RW_COUNT: usize = 0x7fff_f000;

/// poll(2): there is data to read.
pub const POLLIN: i16 = 0x001;
/// poll(2): an exceptional condition (urgent data).
pub const POLLPRI: i16 = 0x002;
/// poll(2): writing will not block.
pub const POLLOUT: i16 = 0x004;
/// poll(2): an error (a pipe's write end with no reader left).
pub const POLLERR: i16 = 0x008;
/// poll(2): hang up (a pipe's read end with no writer left).
pub const POLLHUP: i16 = 0x010;
/// poll(2): the fd is not open (or is an `O_PATH` fd).
pub const POLLNVAL: i16 = 0x020;
/// poll(2): normal data to read.
pub const POLLRDNORM: i16 = 0x040;
/// poll(2): priority band data to read.
pub const POLLRDBAND: i16 = 0x080;
/// poll(2): normal data may be written.
pub const POLLWRNORM: i16 = 0x100;
/// poll(2): priority band data may be written.
pub const POLLWRBAND: i16 = 0x200;
/// ioctl(2): the bytes ready to read (an `int *` argument).
pub const FIONREAD: u64 = 0x541b;
