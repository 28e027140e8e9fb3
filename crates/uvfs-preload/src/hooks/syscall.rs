//! `syscall(2)`, libc's raw system call entry, which programs use for calls
//! glibc wraps late or not at all (`openat2`, `SYS_gettid`, `SYS_futex`)
//! and, now and then, for ordinary file calls. Without this hook a raw
//! `syscall(SYS_openat, …)` of a uvfs path, or a `SYS_getdents64` on a
//! uvfs fd (the placeholder `/dev/null` to the kernel), went to the kernel
//! unseen.
//!
//! Every call whose number is not a file call listed in [`SYSCALLS`] goes
//! to the next definition at once, so `futex` and the like pay one table
//! lookup. A listed call goes to the kernel unless one of its operands is
//! the shim's: a path the shim routes (under the prefix, or relative to a
//! cwd in uvfs) or a uvfs fd. Then it is made through the libc function of
//! the same meaning, which the shim interposes (found by name, so this
//! module depends on no other hook module): the same answer as the C
//! call, in `syscall`'s convention, which is libc's (-1 and errno).
//!
//! The calls that make a process (`SYS_fork`, `SYS_vfork`, `SYS_clone` and
//! `SYS_clone3` without `CLONE_VM`) first give the tree its server, as
//! `fork` does. `SYS_vfork` is made a fork, as the `vfork` hook is: the
//! child would return through this function's frame. `SYS_openat2` of a
//! uvfs path goes to `openat` when it asks for no `RESOLVE_*` rule, and
//! fails with `ENOSYS` otherwise (said once on stderr): uvfs has no
//! `openat2`, and `ENOSYS` is what makes programs fall back to `openat`.
//!
//! The shim's own raw calls (the tree's setup, its server) run inside the
//! re-entry guard and go to the kernel unchanged.

use crate::conv::{cbytes, set_errno};
use crate::dispatch::{is_uvfs, route};
use crate::guard::busy;
use crate::interpose::real;
use crate::path::Route;
use crate::refuse::refuse;
use crate::state::{FDMAP, Fd as FdKind};
use libc::{c_char, c_int, c_long};
use std::sync::atomic::{AtomicUsize, Ordering};
use uvfs::Errno;
use uvfs::Errno as E;
use uvfs::uapi::AT_FDCWD;

/// What in a listed call's arguments may be the shim's.
#[derive(Clone, Copy)]
enum Operands {
    /// Argument `i` is an fd.
    Fd(usize),
    /// Arguments `i` and `j` are fds (`dup2`, `dup3`).
    Fds(usize, usize),
    /// Argument `i` is a path relative to the cwd.
    Path(usize),
    /// Arguments `i` and `j` are two such paths (`rename`, `link`).
    Paths(usize, usize),
    /// Argument `d` is a directory fd and `p` a path relative to it (a NULL
    /// path, as `utimensat` allows, names the fd itself).
    At(usize, usize),
    /// Two (dirfd, path) pairs (`renameat`, `linkat`).
    At2(usize, usize, usize, usize),
    /// Always made through the libc function, which sorts every fd it
    /// touches itself (`close_range`: a range may hold uvfs fds).
    Any,
    /// Argument `i` points to `struct pollfd[n]`, `n` argument `j`.
    Polls(usize, usize),
    /// Argument 0 is `nfds` and arguments 1 to 3 are `fd_set`s (`select`).
    Sets,
    /// Argument `i` points to an `AF_UNIX` (or other) address of the
    /// length in argument `j`: its path is checked as a path.
    Sockaddr(usize, usize),
    /// `io_submit`'s array of `struct iocb *` (argument 2, its length in
    /// argument 1): each one's fd and, with `IOCB_FLAG_RESFD`, its eventfd.
    Iocbs,
    /// `io_uring_register(fd, opcode, arg, n)`: the ring's fd, and the fds
    /// of `IORING_REGISTER_FILES` (an `int[n]`).
    UringRegister,
    /// `kcmp(pid1, pid2, KCMP_FILE, fd1, fd2)`: an fd of this process.
    Kcmp,
    /// `waitid(P_PIDFD, fd, …)`.
    WaitPidfd,
    /// `fsconfig(fd, cmd, key, value, aux)`: the context's fd, `aux` for
    /// `FSCONFIG_SET_FD`, and `value` relative to `aux` for
    /// `FSCONFIG_SET_PATH(_EMPTY)`.
    Fsconfig,
    /// `landlock_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, attr, 0)`:
    /// the ruleset's fd and the rule's `parent_fd`.
    Landlock,
    /// `mount(source, …, flags)`'s source, a path only with `MS_BIND` or
    /// `MS_MOVE` (else a device name or a file system's own word).
    MountSource,
    /// No operand: the call is the shim's whenever this process keeps
    /// uvfs in its own memory (not a client of its tree's mount).
    Private,
}

/// What the libc function returns: `int` (sign-extended from 32 bits, the
/// upper half of the register being undefined) or a full `long`
/// (`ssize_t`, `off_t`, a pointer).
#[derive(Clone, Copy, PartialEq)]
enum Ret {
    Int,
    Long,
    /// An error number, 0 for success (`posix_fadvise`): turned into -1
    /// and errno.
    Rc,
}

/// One listed call: its number, the interposed libc function that means the
/// same, what to check, what it returns, and how many of its arguments the
/// libc function takes beyond the system call's (`faccessat` and
/// `fchmodat` take a `flags` the system calls lack: 0 is passed).
struct Sys {
    nr: c_long,
    libc: &'static [u8],
    ops: Operands,
    ret: Ret,
    /// The argument set to 0 for the libc function, if any.
    zero: Option<usize>,
    /// Rewrites the system call's arguments into the libc function's where
    /// they differ beyond [`Sys::zero`] (`preadv2`'s flags, `pselect6`'s
    /// signal mask).
    fix: Option<fn(&mut [c_long; 6])>,
}

const fn sys(nr: c_long, libc: &'static [u8], ops: Operands, ret: Ret) -> Sys {
    Sys {
        nr,
        libc,
        ops,
        ret,
        zero: None,
        fix: None,
    }
}

/// `preadv2`/`pwritev2`: the system call's `(fd, iov, n, pos_l, pos_h,
/// flags)` is libc's `(fd, iov, n, offset, flags)` (on 64-bit Linux
/// `pos_l` holds the whole offset).
fn flags_from_5(a: &mut [c_long; 6]) {
    a[4] = a[5];
    a[5] = 0;
}

/// `pselect6`: the sixth argument points to `{ const sigset_t *, size_t }`
/// where libc's `pselect` takes the `sigset_t *` itself.
fn pselect_mask(a: &mut [c_long; 6]) {
    let p = a[5] as *const c_long;
    if !p.is_null() {
        // SAFETY: the program's pointer to that pair, per the system
        // call's contract.
        a[5] = unsafe { p.read_unaligned() };
    }
}

use Operands::{
    Any, At, At2, Fd, Fds, Fsconfig, Iocbs, Kcmp, Landlock, MountSource, Path, Paths, Polls,
    Private, Sets, Sockaddr, UringRegister, WaitPidfd,
};
use Ret::{Int, Long, Rc};

/// The file calls the hook looks at (the names end in NUL for `dlsym`).
#[rustfmt::skip]
const SYSCALLS: &[Sys] = &[
    sys(libc::SYS_openat, b"openat\0", At(0, 1), Int),
    sys(libc::SYS_newfstatat, b"fstatat\0", At(0, 1), Int),
    sys(libc::SYS_statx, b"statx\0", At(0, 1), Int),
    Sys { zero: Some(3), ..sys(libc::SYS_faccessat, b"faccessat\0", At(0, 1), Int) },
    sys(libc::SYS_faccessat2, b"faccessat\0", At(0, 1), Int),
    sys(libc::SYS_mkdirat, b"mkdirat\0", At(0, 1), Int),
    sys(libc::SYS_mknodat, b"mknodat\0", At(0, 1), Int),
    sys(libc::SYS_unlinkat, b"unlinkat\0", At(0, 1), Int),
    sys(libc::SYS_renameat, b"renameat\0", At2(0, 1, 2, 3), Int),
    sys(libc::SYS_renameat2, b"renameat2\0", At2(0, 1, 2, 3), Int),
    sys(libc::SYS_linkat, b"linkat\0", At2(0, 1, 2, 3), Int),
    sys(libc::SYS_symlinkat, b"symlinkat\0", At(1, 2), Int),
    sys(libc::SYS_readlinkat, b"readlinkat\0", At(0, 1), Long),
    Sys { zero: Some(3), ..sys(libc::SYS_fchmodat, b"fchmodat\0", At(0, 1), Int) },
    sys(libc::SYS_fchmodat2, b"fchmodat\0", At(0, 1), Int),
    sys(libc::SYS_fchownat, b"fchownat\0", At(0, 1), Int),
    sys(libc::SYS_utimensat, b"utimensat\0", At(0, 1), Int),
    sys(libc::SYS_truncate, b"truncate\0", Path(0), Int),
    sys(libc::SYS_chdir, b"chdir\0", Path(0), Int),
    sys(libc::SYS_statfs, b"statfs\0", Path(0), Int),
    sys(libc::SYS_fstat, b"fstat\0", Fd(0), Int),
    sys(libc::SYS_read, b"read\0", Fd(0), Long),
    sys(libc::SYS_write, b"write\0", Fd(0), Long),
    sys(libc::SYS_pread64, b"pread64\0", Fd(0), Long),
    sys(libc::SYS_pwrite64, b"pwrite64\0", Fd(0), Long),
    sys(libc::SYS_readv, b"readv\0", Fd(0), Long),
    sys(libc::SYS_writev, b"writev\0", Fd(0), Long),
    sys(libc::SYS_lseek, b"lseek\0", Fd(0), Long),
    sys(libc::SYS_close, b"close\0", Fd(0), Int),
    sys(libc::SYS_dup, b"dup\0", Fd(0), Int),
    sys(libc::SYS_dup3, b"dup3\0", Fds(0, 1), Int),
    sys(libc::SYS_fcntl, b"fcntl\0", Fd(0), Int),
    sys(libc::SYS_ioctl, b"ioctl\0", Fd(0), Int),
    sys(libc::SYS_fsync, b"fsync\0", Fd(0), Int),
    sys(libc::SYS_fdatasync, b"fdatasync\0", Fd(0), Int),
    sys(libc::SYS_ftruncate, b"ftruncate\0", Fd(0), Int),
    sys(libc::SYS_fchmod, b"fchmod\0", Fd(0), Int),
    sys(libc::SYS_fchown, b"fchown\0", Fd(0), Int),
    sys(libc::SYS_fchdir, b"fchdir\0", Fd(0), Int),
    sys(libc::SYS_getdents64, b"getdents64\0", Fd(0), Long),
    sys(libc::SYS_fstatfs, b"fstatfs\0", Fd(0), Int),
    sys(libc::SYS_fallocate, b"fallocate\0", Fd(0), Int),
    sys(libc::SYS_flock, b"flock\0", Fd(0), Int),
    sys(libc::SYS_mmap, b"mmap\0", Fd(4), Long),
    // Served since the tree's switch work (a uvfs fd or path here reached
    // the kernel, which saw the placeholder or a host path), one family a
    // row. On 64-bit Linux `preadv`'s offset travels whole in `pos_l`, as
    // libc's takes it.
    sys(libc::SYS_preadv, b"preadv\0", Fd(0), Long), sys(libc::SYS_pwritev, b"pwritev\0", Fd(0), Long),
    sys(libc::SYS_sendfile, b"sendfile\0", Fds(0, 1), Long), sys(libc::SYS_copy_file_range, b"copy_file_range\0", Fds(0, 2), Long), sys(libc::SYS_splice, b"splice\0", Fds(0, 2), Long),
    sys(libc::SYS_readahead, b"readahead\0", Fd(0), Long), sys(libc::SYS_sync_file_range, b"sync_file_range\0", Fd(0), Int), sys(libc::SYS_syncfs, b"syncfs\0", Fd(0), Int),
    sys(libc::SYS_getxattr, b"getxattr\0", Path(0), Long), sys(libc::SYS_lgetxattr, b"lgetxattr\0", Path(0), Long), sys(libc::SYS_fgetxattr, b"fgetxattr\0", Fd(0), Long),
    sys(libc::SYS_setxattr, b"setxattr\0", Path(0), Int), sys(libc::SYS_lsetxattr, b"lsetxattr\0", Path(0), Int), sys(libc::SYS_fsetxattr, b"fsetxattr\0", Fd(0), Int),
    sys(libc::SYS_listxattr, b"listxattr\0", Path(0), Long), sys(libc::SYS_llistxattr, b"llistxattr\0", Path(0), Long), sys(libc::SYS_flistxattr, b"flistxattr\0", Fd(0), Long),
    sys(libc::SYS_removexattr, b"removexattr\0", Path(0), Int), sys(libc::SYS_lremovexattr, b"lremovexattr\0", Path(0), Int), sys(libc::SYS_fremovexattr, b"fremovexattr\0", Fd(0), Int),
    sys(libc::SYS_execve, b"execve\0", Path(0), Int), sys(libc::SYS_execveat, b"execveat\0", At(0, 1), Int),
    sys(libc::SYS_chroot, b"chroot\0", Path(0), Int), sys(libc::SYS_umount2, b"umount2\0", Path(0), Int),
    sys(libc::SYS_inotify_add_watch, b"inotify_add_watch\0", Path(1), Int), sys(libc::SYS_fanotify_mark, b"fanotify_mark\0", At(3, 4), Int),
    sys(libc::SYS_name_to_handle_at, b"name_to_handle_at\0", At(0, 1), Int), sys(libc::SYS_open_by_handle_at, b"open_by_handle_at\0", Fd(0), Int),
    sys(libc::SYS_mount, b"mount\0", Path(1), Int), sys(libc::SYS_close_range, b"close_range\0", Any, Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_open, b"open\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_creat, b"creat\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_stat, b"stat\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_lstat, b"lstat\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_access, b"access\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_mkdir, b"mkdir\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_mknod, b"mknod\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_rmdir, b"rmdir\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_unlink, b"unlink\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_rename, b"rename\0", Paths(0, 1), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_link, b"link\0", Paths(0, 1), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_symlink, b"symlink\0", Path(1), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_readlink, b"readlink\0", Path(0), Long),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_chmod, b"chmod\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_chown, b"chown\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_lchown, b"lchown\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")]
    sys(libc::SYS_dup2, b"dup2\0", Fds(0, 1), Int),
    // x86-64's legacy calls served since the switch work, one a line.
    #[cfg(target_arch = "x86_64")] sys(libc::SYS_futimesat, b"futimesat\0", At(0, 1), Int),
    #[cfg(target_arch = "x86_64")] sys(libc::SYS_utime, b"utime\0", Path(0), Int),
    #[cfg(target_arch = "x86_64")] sys(libc::SYS_utimes, b"utimes\0", Path(0), Int),
    // No libc function: refused with a uvfs fd (`through_libc`).
    #[cfg(target_arch = "x86_64")] sys(libc::SYS_getdents, b"\0", Fd(0), Long),
    // Served since the table became complete (each reached the kernel,
    // which saw the placeholder, silently).
    Sys { fix: Some(flags_from_5), ..sys(libc::SYS_preadv2, b"preadv2\0", Fd(0), Long) },
    Sys { fix: Some(flags_from_5), ..sys(libc::SYS_pwritev2, b"pwritev2\0", Fd(0), Long) },
    sys(libc::SYS_fadvise64, b"posix_fadvise\0", Fd(0), Rc),
    sys(libc::SYS_ppoll, b"ppoll\0", Polls(0, 1), Int),
    Sys { fix: Some(pselect_mask), ..sys(libc::SYS_pselect6, b"pselect\0", Sets, Int) },
    sys(libc::SYS_bind, b"bind\0", Sockaddr(1, 2), Int), sys(libc::SYS_connect, b"connect\0", Sockaddr(1, 2), Int),
    sys(libc::SYS_sendmsg, b"sendmsg\0", Any, Long), sys(libc::SYS_sendmmsg, b"sendmmsg\0", Any, Int),
    #[cfg(target_arch = "x86_64")] sys(libc::SYS_poll, b"poll\0", Polls(0, 1), Int),
    #[cfg(target_arch = "x86_64")] sys(libc::SYS_select, b"select\0", Sets, Int),
];

/// A system call refused when one of its operands is the shim's (a uvfs fd
/// or a stale placeholder, a path under the prefix), with the error Linux
/// gives for a file of the kind it cannot use there (a uvfs fd is a tmpfs
/// file to the program), or `EOPNOTSUPP`/`ENOSYS` where uvfs has no such
/// object; said once per call on stderr. Checked before [`SYSCALLS`], so a
/// served call's other fds (the inotify fd of `inotify_add_watch`, the
/// socket of `connect`) are refused here rather than reach the kernel.
struct Refused {
    nr: c_long,
    name: &'static str,
    ops: Operands,
    errno: Errno,
}

const fn no(nr: c_long, name: &'static str, ops: Operands, errno: Errno) -> Refused {
    Refused {
        nr,
        name,
        ops,
        errno,
    }
}

/// Numbers the `libc` crate does not name yet (the same on every
/// architecture: calls added since Linux 5.1 share one table).
const SYS_CACHESTAT: c_long = 451;
const SYS_SETXATTRAT: c_long = 463;
const SYS_GETXATTRAT: c_long = 464;
const SYS_LISTXATTRAT: c_long = 465;
const SYS_REMOVEXATTRAT: c_long = 466;
const SYS_OPEN_TREE_ATTR: c_long = 467;
const SYS_FILE_GETATTR: c_long = 468;
const SYS_FILE_SETATTR: c_long = 469;

/// Every other system call with an fd or a path among its arguments (the
/// x86-64 table, Linux 6.18), by what a uvfs operand means there.
#[rustfmt::skip]
const REFUSED: &[Refused] = &[
    // Sockets: a uvfs fd is no socket (`bind`, `connect` and `sendmsg`
    // are served for their addresses and passed fds above).
    no(libc::SYS_bind, "bind", Fd(0), E::ENOTSOCK), no(libc::SYS_connect, "connect", Fd(0), E::ENOTSOCK),
    no(libc::SYS_accept, "accept", Fd(0), E::ENOTSOCK), no(libc::SYS_accept4, "accept4", Fd(0), E::ENOTSOCK),
    no(libc::SYS_listen, "listen", Fd(0), E::ENOTSOCK), no(libc::SYS_shutdown, "shutdown", Fd(0), E::ENOTSOCK),
    no(libc::SYS_sendto, "sendto", Fd(0), E::ENOTSOCK), no(libc::SYS_sendto, "sendto", Sockaddr(4, 5), E::EOPNOTSUPP),
    no(libc::SYS_recvfrom, "recvfrom", Fd(0), E::ENOTSOCK), no(libc::SYS_sendmsg, "sendmsg", Fd(0), E::ENOTSOCK),
    no(libc::SYS_recvmsg, "recvmsg", Fd(0), E::ENOTSOCK), no(libc::SYS_sendmmsg, "sendmmsg", Fd(0), E::ENOTSOCK),
    no(libc::SYS_recvmmsg, "recvmmsg", Fd(0), E::ENOTSOCK),
    no(libc::SYS_getsockname, "getsockname", Fd(0), E::ENOTSOCK), no(libc::SYS_getpeername, "getpeername", Fd(0), E::ENOTSOCK),
    no(libc::SYS_setsockopt, "setsockopt", Fd(0), E::ENOTSOCK), no(libc::SYS_getsockopt, "getsockopt", Fd(0), E::ENOTSOCK),
    // epoll: tmpfs files and directories cannot be watched (`EPERM`, as
    // Linux says for them; a uvfs FIFO, which Linux would add, included),
    // and a uvfs fd is no epoll instance.
    no(libc::SYS_epoll_ctl, "epoll_ctl", Fd(0), E::EINVAL), no(libc::SYS_epoll_ctl, "epoll_ctl", Fd(2), E::EPERM),
    no(libc::SYS_epoll_pwait, "epoll_pwait", Fd(0), E::EINVAL), no(libc::SYS_epoll_pwait2, "epoll_pwait2", Fd(0), E::EINVAL),
    #[cfg(target_arch = "x86_64")] no(libc::SYS_epoll_wait, "epoll_wait", Fd(0), E::EINVAL),
    // Pipes only.
    no(libc::SYS_tee, "tee", Fds(0, 1), E::EINVAL), no(libc::SYS_vmsplice, "vmsplice", Fd(0), E::EBADF),
    // Other kinds of kernel objects a uvfs fd is not.
    no(libc::SYS_inotify_add_watch, "inotify_add_watch", Fd(0), E::EINVAL),
    no(libc::SYS_inotify_rm_watch, "inotify_rm_watch", Fd(0), E::EINVAL),
    no(libc::SYS_fanotify_mark, "fanotify_mark", Fd(0), E::EINVAL),
    no(libc::SYS_signalfd4, "signalfd4", Fd(0), E::EINVAL),
    #[cfg(target_arch = "x86_64")] no(libc::SYS_signalfd, "signalfd", Fd(0), E::EINVAL),
    no(libc::SYS_timerfd_settime, "timerfd_settime", Fd(0), E::EINVAL),
    no(libc::SYS_timerfd_gettime, "timerfd_gettime", Fd(0), E::EINVAL),
    no(libc::SYS_mq_timedsend, "mq_timedsend", Fd(0), E::EBADF), no(libc::SYS_mq_timedreceive, "mq_timedreceive", Fd(0), E::EBADF),
    no(libc::SYS_mq_notify, "mq_notify", Fd(0), E::EBADF), no(libc::SYS_mq_getsetattr, "mq_getsetattr", Fd(0), E::EBADF),
    no(libc::SYS_perf_event_open, "perf_event_open", Fd(3), E::EBADF),
    no(libc::SYS_setns, "setns", Fd(0), E::EINVAL),
    no(libc::SYS_pidfd_send_signal, "pidfd_send_signal", Fd(0), E::EBADF),
    no(libc::SYS_pidfd_getfd, "pidfd_getfd", Fd(0), E::EBADF),
    no(libc::SYS_process_madvise, "process_madvise", Fd(0), E::EBADF),
    no(libc::SYS_process_mrelease, "process_mrelease", Fd(0), E::EBADF),
    no(libc::SYS_waitid, "waitid", WaitPidfd, E::EBADF),
    no(libc::SYS_kcmp, "kcmp", Kcmp, E::EOPNOTSUPP),
    no(libc::SYS_landlock_add_rule, "landlock_add_rule", Landlock, E::EBADFD),
    no(libc::SYS_landlock_restrict_self, "landlock_restrict_self", Fd(0), E::EBADFD),
    // Asynchronous I/O: the kernel would run it on the placeholder. The
    // fds and paths inside io_uring's submission ring are read by the
    // kernel from memory the shim cannot watch (with `SQPOLL`, without
    // any system call): no ring is set up while uvfs lives in this
    // process. `ENOSYS`, a kernel without io_uring's answer, makes
    // programs fall back to the plain calls, which the shim serves.
    no(libc::SYS_io_uring_setup, "io_uring_setup", Private, E::ENOSYS),
    no(libc::SYS_io_submit, "io_submit", Iocbs, E::EOPNOTSUPP),
    no(libc::SYS_io_uring_enter, "io_uring_enter", Fd(0), E::EOPNOTSUPP),
    no(libc::SYS_io_uring_register, "io_uring_register", UringRegister, E::EOPNOTSUPP),
    // Files the kernel itself would have to read, or hints on its pages.
    no(libc::SYS_finit_module, "finit_module", Fd(0), E::EOPNOTSUPP),
    no(libc::SYS_kexec_file_load, "kexec_file_load", Fds(0, 1), E::EOPNOTSUPP),
    no(SYS_CACHESTAT, "cachestat", Fd(0), E::EOPNOTSUPP),
    no(libc::SYS_quotactl_fd, "quotactl_fd", Fd(0), E::EOPNOTSUPP),
    // Mounts: uvfs is not part of the kernel's mount tree.
    no(libc::SYS_mount, "mount", MountSource, E::EOPNOTSUPP),
    no(libc::SYS_open_tree, "open_tree", At(0, 1), E::EOPNOTSUPP),
    no(SYS_OPEN_TREE_ATTR, "open_tree_attr", At(0, 1), E::EOPNOTSUPP),
    no(libc::SYS_move_mount, "move_mount", At2(0, 1, 2, 3), E::EOPNOTSUPP),
    no(libc::SYS_fspick, "fspick", At(0, 1), E::EOPNOTSUPP),
    no(libc::SYS_fsconfig, "fsconfig", Fsconfig, E::EOPNOTSUPP),
    no(libc::SYS_fsmount, "fsmount", Fd(0), E::EOPNOTSUPP),
    no(libc::SYS_mount_setattr, "mount_setattr", At(0, 1), E::EOPNOTSUPP),
    no(libc::SYS_pivot_root, "pivot_root", Paths(0, 1), E::EINVAL),
    no(libc::SYS_acct, "acct", Path(0), E::EOPNOTSUPP),
    no(libc::SYS_swapon, "swapon", Path(0), E::EINVAL), no(libc::SYS_swapoff, "swapoff", Path(0), E::EINVAL),
    no(libc::SYS_quotactl, "quotactl", Path(1), E::EOPNOTSUPP),
    #[cfg(target_arch = "x86_64")] no(libc::SYS_uselib, "uselib", Path(0), E::ENOSYS),
    // Newer calls with no libc function yet, which programs try before
    // their older equivalents: `ENOSYS` makes them fall back (to the path
    // and `f*` xattr calls, to the `FS_IOC_FSGETXATTR` ioctl), which the
    // shim serves.
    no(SYS_SETXATTRAT, "setxattrat", At(0, 1), E::ENOSYS), no(SYS_GETXATTRAT, "getxattrat", At(0, 1), E::ENOSYS),
    no(SYS_LISTXATTRAT, "listxattrat", At(0, 1), E::ENOSYS), no(SYS_REMOVEXATTRAT, "removexattrat", At(0, 1), E::ENOSYS),
    no(SYS_FILE_GETATTR, "file_getattr", At(0, 1), E::ENOSYS), no(SYS_FILE_SETATTR, "file_setattr", At(0, 1), E::ENOSYS),
];

/// The numbers of [`SYSCALLS`] as a bitmap, so that every other call
/// (`futex`, `gettid`) is passed on after one bit test.
const LISTED: [u64; 8] = {
    let mut m = [0u64; 8];
    let mut i = 0;
    while i < SYSCALLS.len() {
        let nr = SYSCALLS[i].nr as usize;
        assert!(nr < 512, "a listed system call number beyond the bitmap");
        m[nr / 64] |= 1 << (nr % 64);
        i += 1;
    }
    let mut i = 0;
    while i < REFUSED.len() {
        let nr = REFUSED[i].nr as usize;
        assert!(nr < 512, "a refused system call number beyond the bitmap");
        m[nr / 64] |= 1 << (nr % 64);
        i += 1;
    }
    m
};

/// Each [`REFUSED`] row's "already said" mark.
static REFUSED_SAID: [crate::refuse::Said; REFUSED.len()] =
    [const { crate::refuse::Said::new() }; REFUSED.len()];

/// Whether `n` is one of [`SYSCALLS`]' numbers.
#[inline]
fn listed(n: c_long) -> bool {
    (0..512).contains(&n) && LISTED[n as usize / 64] & (1 << (n as usize % 64)) != 0
}

/// The libc functions found for [`SYSCALLS`], by index (0: not looked up).
static FOUND: [AtomicUsize; SYSCALLS.len()] = [const { AtomicUsize::new(0) }; SYSCALLS.len()];

/// A libc-shaped function called with the system call's six arguments
/// (extra integer arguments are harmless in the x86-64 and aarch64
/// calling conventions: they travel in registers the callee ignores).
type Six = unsafe extern "C" fn(c_long, c_long, c_long, c_long, c_long, c_long) -> c_long;

/// Whether the path argument `p` (relative to `dirfd`) is the shim's: a
/// uvfs path, a host path the shim rewrites (a relative one while the cwd
/// is in uvfs, a `..` that climbs out of the prefix), or a stale
/// placeholder as the dirfd.
fn path_is_ours(dirfd: c_long, p: c_long) -> bool {
    let dirfd = dirfd as c_int;
    if p == 0 {
        return is_uvfs(dirfd);
    }
    // SAFETY: the program passed a path here, per the system call's
    // contract: a NUL-terminated string.
    let path = unsafe { cbytes(p as *const c_char) };
    !matches!(route(dirfd, path), Some(Route::Kernel))
}

/// Whether a listed call's operands involve the shim.
fn ours(ops: Operands, a: &[c_long; 6]) -> bool {
    let cwd = AT_FDCWD as c_long;
    let fd = |i: usize| is_uvfs(a[i] as c_int);
    match ops {
        Fd(i) => fd(i),
        Fds(i, j) => fd(i) || fd(j),
        Path(i) => path_is_ours(cwd, a[i]),
        Paths(i, j) => path_is_ours(cwd, a[i]) || path_is_ours(cwd, a[j]),
        At(d, p) => path_is_ours(a[d], a[p]),
        At2(d, p, e, q) => path_is_ours(a[d], a[p]) || path_is_ours(a[e], a[q]),
        Any => true,
        // SAFETY: the program's pointers, of the shapes the system call
        // takes; each is read within the length it gives (so for the next
        // four).
        Polls(p, n) => unsafe { polls_ours(a[p], a[n]) },
        // SAFETY: as above.
        Sets => unsafe { sets_ours(a) },
        // SAFETY: as above.
        Sockaddr(p, n) => unsafe { sockaddr_ours(a[p], a[n]) },
        // SAFETY: as above.
        Iocbs => unsafe { iocbs_ours(a[1], a[2]) },
        // SAFETY: as above.
        UringRegister => fd(0) || unsafe { uring_files_ours(a) },
        Kcmp => {
            // KCMP_FILE (0): two fd numbers, each of process pid1 or pid2.
            let me = c_long::from(rustix::process::getpid().as_raw_nonzero().get());
            a[2] == 0 && ((a[0] == me && fd(3)) || (a[1] == me && fd(4)))
        }
        // P_PIDFD (3).
        WaitPidfd => a[0] == 3 && fd(1),
        Fsconfig => {
            // FSCONFIG_SET_PATH (3), FSCONFIG_SET_PATH_EMPTY (4): `value`
            // relative to dirfd `aux`; FSCONFIG_SET_FD (5): `aux`.
            fd(0)
                || (matches!(a[1], 3 | 4) && a[3] != 0 && path_is_ours(a[4], a[3]))
                || (a[1] == 5 && fd(4))
        }
        MountSource => {
            a[3] & (libc::MS_BIND | libc::MS_MOVE) as c_long != 0 && path_is_ours(cwd, a[0])
        }
        Private => crate::path::prefix().is_some(),
        // LANDLOCK_RULE_PATH_BENEATH (1): `{ u64 allowed_access; s32
        // parent_fd }`, packed.
        Landlock => {
            fd(0) || {
                let attr = a[2] as *const u8;
                // SAFETY: as above.
                a[1] == 1
                    && !attr.is_null()
                    && is_uvfs(unsafe { attr.add(8).cast::<i32>().read_unaligned() })
            }
        }
    }
}

/// Whether `struct pollfd[n]` at `p` holds a uvfs fd.
///
/// # Safety
/// `p` is NULL or points to `n` `pollfd`s.
unsafe fn polls_ours(p: c_long, n: c_long) -> bool {
    let p = p as *const libc::pollfd;
    if p.is_null() || n <= 0 {
        return false;
    }
    // SAFETY: `n` readable entries, per the contract (a bad pointer is the
    // program's fault, as in libc's own `poll`).
    (0..n as usize).any(|i| is_uvfs(unsafe { p.add(i).read_unaligned() }.fd))
}

/// Whether `select`'s sets (arguments 1 to 3, `nfds` argument 0) hold a
/// uvfs fd.
///
/// # Safety
/// Each set is NULL or points to an `fd_set` covering `nfds`.
unsafe fn sets_ours(a: &[c_long; 6]) -> bool {
    let n = a[0].clamp(0, libc::FD_SETSIZE as c_long) as c_int;
    [a[1], a[2], a[3]].iter().any(|&set| {
        let set = set as *const libc::fd_set;
        // SAFETY: per the contract.
        !set.is_null() && (0..n).any(|fd| unsafe { libc::FD_ISSET(fd, set) } && is_uvfs(fd))
    })
}

/// Whether the address at `p` (`len` bytes) is an `AF_UNIX` path the shim
/// routes (under the prefix, or one it rewrites).
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes.
unsafe fn sockaddr_ours(p: c_long, len: c_long) -> bool {
    let off = std::mem::offset_of!(libc::sockaddr_un, sun_path);
    let Ok(len) = usize::try_from(len) else {
        return false;
    };
    let p = p as *const u8;
    if p.is_null() || len <= off || len > std::mem::size_of::<libc::sockaddr_un>() {
        return false;
    }
    // SAFETY: `len` readable bytes, per the contract.
    let raw = unsafe { std::slice::from_raw_parts(p, len) };
    if c_int::from(u16::from_ne_bytes([raw[0], raw[1]])) != libc::AF_UNIX {
        return false;
    }
    let path = &raw[off..];
    let path = &path[..path.iter().position(|&c| c == 0).unwrap_or(path.len())];
    !path.is_empty() && !matches!(route(AT_FDCWD, path), Some(Route::Kernel))
}

/// Whether `io_submit`'s `n` control blocks at `pp` name a uvfs fd.
///
/// # Safety
/// `pp` is NULL or points to `n` pointers to `struct iocb`.
unsafe fn iocbs_ours(n: c_long, pp: c_long) -> bool {
    let pp = pp as *const *const u8;
    if pp.is_null() || n <= 0 {
        return false;
    }
    (0..n as usize).any(|i| {
        // SAFETY: per the contract; `struct iocb` has `aio_fildes` (u32)
        // at 20, `aio_flags` at 56 and `aio_resfd` at 60.
        unsafe {
            let cb = pp.add(i).read_unaligned();
            !cb.is_null()
                && (is_uvfs(cb.add(20).cast::<i32>().read_unaligned())
                    || (cb.add(56).cast::<u32>().read_unaligned() & 1 != 0
                        && is_uvfs(cb.add(60).cast::<i32>().read_unaligned())))
        }
    })
}

/// Whether `io_uring_register(fd, IORING_REGISTER_FILES (2) or
/// IORING_REGISTER_FILES_UPDATE (6), arg, n)` registers a uvfs fd.
///
/// # Safety
/// `arg` is what that opcode takes.
unsafe fn uring_files_ours(a: &[c_long; 6]) -> bool {
    let (files, n) = match a[1] {
        2 => (a[2] as *const i32, a[3]),
        // `struct io_uring_files_update { u32 offset; u32 resv; u64 fds; }`.
        // SAFETY: per the contract.
        6 if a[2] != 0 => (
            unsafe { (a[2] as *const u64).add(1).read_unaligned() } as *const i32,
            a[3],
        ),
        _ => return false,
    };
    if files.is_null() || n <= 0 {
        return false;
    }
    // SAFETY: `n` fds, per the contract.
    (0..n as usize).any(|i| is_uvfs(unsafe { files.add(i).read_unaligned() }))
}

/// Calls listed call `i` through its libc function.
///
/// # Safety
/// `a` are the program's arguments to that system call.
unsafe fn through_libc(i: usize, mut a: [c_long; 6]) -> c_long {
    let s = &SYSCALLS[i];
    if s.libc == b"\0" {
        // No libc function means the same (the old `getdents`, whose
        // records the shim does not make): refused, never the placeholder.
        set_errno(
            refuse!(
                "syscall",
                "with a uvfs fd for a call without a libc equivalent",
                EOPNOTSUPP
            )
            .raw(),
        );
        return -1;
    }
    let mut f = FOUND[i].load(Ordering::Relaxed);
    if f == 0 {
        // SAFETY: a NUL-terminated name; the global scope finds the shim's
        // own definition first (it is preloaded).
        f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, s.libc.as_ptr().cast()) } as usize;
        if f == 0 {
            set_errno(libc::ENOSYS);
            return -1;
        }
        FOUND[i].store(f, Ordering::Relaxed);
    }
    if let Some(z) = s.zero {
        a[z] = 0;
    }
    if let Some(fix) = s.fix {
        fix(&mut a);
    }
    // SAFETY: `f` is the non-NULL address of the C function named in the
    // table, which takes at most six integer or pointer arguments; see
    // `Six`.
    let f = unsafe { std::mem::transmute::<usize, Six>(f) };
    // SAFETY: the program's arguments, per the contract.
    let r = unsafe { f(a[0], a[1], a[2], a[3], a[4], a[5]) };
    match s.ret {
        Int => r as c_int as c_long,
        Long => r,
        Rc => match r as c_int {
            0 => 0,
            e => {
                set_errno(e);
                -1
            }
        },
    }
}

/// Refuses `REFUSED[i]` (arguments `a`): its errno, and one line on
/// stderr per process; but `EBADF`, silently, for an fd operand that is a
/// cached placeholder (closed, as far as the program knows: Linux's answer
/// for a closed fd).
fn refuse_row(i: usize, a: &[c_long; 6]) -> c_long {
    let r = &REFUSED[i];
    let stale = |i: usize| FDMAP.get(a[i] as c_int) == FdKind::Stale;
    if match r.ops {
        Fd(i) => stale(i),
        Fds(i, j) => stale(i) || stale(j),
        _ => false,
    } {
        set_errno(libc::EBADF);
        return -1;
    }
    let what = match r.ops {
        Path(_) | Paths(..) | At(..) | At2(..) | MountSource => "on a uvfs path",
        Sockaddr(..) => "with a socket path under the prefix",
        Private => {
            "while the process keeps uvfs in its own memory (the kernel would read uvfs fds and paths from the ring, unseen)"
        }
        _ => "with a uvfs fd",
    };
    let e = crate::refuse::say(
        &REFUSED_SAID[i],
        &format!("syscall(SYS_{})", r.name),
        what,
        r.errno,
    );
    set_errno(e.raw());
    -1
}

/// `SYS_fork`'s and `SYS_vfork`'s numbers (x86-64 only; aarch64 has
/// neither, only `clone`: -1 never matches).
#[cfg(target_arch = "x86_64")]
const FORK: c_long = libc::SYS_fork;
#[cfg(target_arch = "x86_64")]
const VFORK: c_long = libc::SYS_vfork;
#[cfg(not(target_arch = "x86_64"))]
const FORK: c_long = -1;
#[cfg(not(target_arch = "x86_64"))]
const VFORK: c_long = -2;

/// `syscall`.
///
/// # Safety
/// The C contract of `syscall`: the arguments number `n` takes, of the
/// types it takes (the ones it does not take are never read by the kernel
/// or by this function).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn syscall(
    n: c_long,
    a0: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
) -> c_long {
    let next = || {
        // SAFETY: the program's arguments, unchanged, to the next
        // definition.
        unsafe {
            real!(syscall: fn(c_long, c_long, c_long, c_long, c_long, c_long, c_long) -> c_long)(
                n, a0, a1, a2, a3, a4, a5,
            )
        }
    };
    let special = matches!(
        n,
        FORK | VFORK
            | libc::SYS_clone
            | libc::SYS_clone3
            | libc::SYS_openat2
            | libc::SYS_getcwd
            | libc::SYS_bpf
            | libc::SYS_prctl
    );
    if !(special || listed(n)) || busy() {
        return next();
    }
    let a = [a0, a1, a2, a3, a4, a5];
    match n {
        FORK => {
            crate::namespace::before_child("syscall(SYS_fork)");
            return next();
        }
        VFORK => {
            crate::namespace::before_child("syscall(SYS_vfork)");
            // SAFETY: no arguments.
            return unsafe { real!(syscall: fn(c_long) -> c_long)(FORK) };
        }
        libc::SYS_clone => {
            if a0 & libc::CLONE_VM as c_long == 0 {
                crate::namespace::before_child("syscall(SYS_clone)");
            }
            return next();
        }
        libc::SYS_clone3 => {
            // `struct clone_args` starts with its 64-bit flags.
            let args = a0 as *const u64;
            // SAFETY: a non-NULL pointer to the program's `clone_args`
            // (at least 64 bytes, per the system call's contract).
            if !args.is_null() && unsafe { args.read_unaligned() } & libc::CLONE_VM as u64 == 0 {
                crate::namespace::before_child("syscall(SYS_clone3)");
            }
            return next();
        }
        libc::SYS_openat2 => return openat2(a, next),
        libc::SYS_getcwd => return getcwd(a, next),
        libc::SYS_bpf => return crate::hooks::kernel_objs::bpf(a, next),
        libc::SYS_prctl => {
            return crate::hooks::kernel_objs::prctl_args(a, |b| {
                // SAFETY: the program's arguments, the fd among them
                // perhaps made -1, to the next definition.
                unsafe {
                    real!(syscall: fn(c_long, c_long, c_long, c_long, c_long, c_long, c_long) -> c_long)(
                        n, b[0], b[1], b[2], b[3], b[4], b[5],
                    )
                }
            });
        }
        _ => {}
    }
    if let Some(i) = (0..REFUSED.len()).find(|&i| REFUSED[i].nr == n && ours(REFUSED[i].ops, &a)) {
        return refuse_row(i, &a);
    }
    match SYSCALLS.iter().position(|s| s.nr == n) {
        // SAFETY: the program's arguments to system call `n`.
        Some(i) if ours(SYSCALLS[i].ops, &a) => unsafe { through_libc(i, a) },
        _ => next(),
    }
}

/// `SYS_openat2(dirfd, path, how, size)`: see the module's description.
fn openat2(a: [c_long; 6], next: impl FnOnce() -> c_long) -> c_long {
    if !path_is_ours(a[0], a[1]) {
        return next();
    }
    let how = a[2] as *const u64;
    let size = a[3] as usize;
    if how.is_null() || size < 24 {
        set_errno(if how.is_null() {
            libc::EFAULT
        } else {
            libc::EINVAL
        });
        return -1;
    }
    // SAFETY: `how` points at the program's `struct open_how` of `size`
    // (at least 24) bytes: flags, mode, resolve, each 64 bits.
    let (flags, mode, resolve) = unsafe {
        (
            how.read_unaligned(),
            how.add(1).read_unaligned(),
            how.add(2).read_unaligned(),
        )
    };
    // openat2's own checks, which openat does not make: flags beyond
    // open's, and a mode without a flag that creates.
    let creates = flags & (libc::O_CREAT | libc::O_TMPFILE) as u64 != 0;
    if flags > u64::from(u32::MAX) || (mode != 0 && !creates) || mode & !0o7777 != 0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    if resolve != 0 {
        set_errno(refuse!("openat2", "with RESOLVE_* rules of a uvfs path", ENOSYS).raw());
        return -1;
    }
    let Some(i) = SYSCALLS.iter().position(|s| s.nr == libc::SYS_openat) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: openat's arguments: the program's dirfd and path, its flags
    // and mode.
    unsafe { through_libc(i, [a[0], a[1], flags as c_long, mode as c_long, 0, 0]) }
}

/// `SYS_getcwd(buf, size)`: while the cwd is in uvfs (the kernel's cwd is
/// then elsewhere), libc's `getcwd`, which the shim answers; the system
/// call's result is the length with the NUL, not the buffer.
fn getcwd(a: [c_long; 6], next: impl FnOnce() -> c_long) -> c_long {
    if matches!(route(AT_FDCWD, b"."), Some(Route::Kernel)) {
        return next();
    }
    let (buf, size) = (a[0] as *mut c_char, a[1] as usize);
    if buf.is_null() {
        // The system call has no "allocate for me" form.
        set_errno(libc::EFAULT);
        return -1;
    }
    // SAFETY: the program's buffer of `size` bytes, per the contract; the
    // shim's `getcwd` (found by name as the table's functions are).
    let r = unsafe {
        let f = libc::dlsym(libc::RTLD_DEFAULT, c"getcwd".as_ptr());
        if f.is_null() {
            set_errno(libc::ENOSYS);
            return -1;
        }
        let f = std::mem::transmute::<
            *mut libc::c_void,
            unsafe extern "C" fn(*mut c_char, usize) -> *mut c_char,
        >(f);
        f(buf, size)
    };
    if r.is_null() {
        return -1;
    }
    // SAFETY: getcwd filled `buf` with a NUL-terminated path.
    unsafe { libc::strlen(buf) as c_long + 1 }
}

#[cfg(test)]
mod tests {
    use super::{REFUSED, SYSCALLS, listed};

    #[test]
    fn the_bitmap_holds_exactly_the_listed_numbers() {
        for n in -5..600 {
            assert_eq!(
                listed(n),
                SYSCALLS.iter().any(|s| s.nr == n) || REFUSED.iter().any(|r| r.nr == n),
                "system call {n}"
            );
        }
        assert!(!listed(libc::SYS_futex) && !listed(libc::SYS_gettid));
    }
}
