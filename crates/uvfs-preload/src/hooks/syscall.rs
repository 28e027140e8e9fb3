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
use libc::{c_char, c_int, c_long};
use std::sync::atomic::{AtomicUsize, Ordering};
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
}

/// What the libc function returns: `int` (sign-extended from 32 bits, the
/// upper half of the register being undefined) or a full `long`
/// (`ssize_t`, `off_t`, a pointer).
#[derive(Clone, Copy, PartialEq)]
enum Ret {
    Int,
    Long,
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
}

const fn sys(nr: c_long, libc: &'static [u8], ops: Operands, ret: Ret) -> Sys {
    Sys {
        nr,
        libc,
        ops,
        ret,
        zero: None,
    }
}

use Operands::{Any, At, At2, Fd, Fds, Path, Paths};
use Ret::{Int, Long};

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
    m
};

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
    match ops {
        Fd(i) => is_uvfs(a[i] as c_int),
        Fds(i, j) => is_uvfs(a[i] as c_int) || is_uvfs(a[j] as c_int),
        Path(i) => path_is_ours(cwd, a[i]),
        Paths(i, j) => path_is_ours(cwd, a[i]) || path_is_ours(cwd, a[j]),
        At(d, p) => path_is_ours(a[d], a[p]),
        At2(d, p, e, q) => path_is_ours(a[d], a[p]) || path_is_ours(a[e], a[q]),
        Any => true,
    }
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
    // SAFETY: `f` is the non-NULL address of the C function named in the
    // table, which takes at most six integer or pointer arguments; see
    // `Six`.
    let f = unsafe { std::mem::transmute::<usize, Six>(f) };
    // SAFETY: the program's arguments, per the contract.
    let r = unsafe { f(a[0], a[1], a[2], a[3], a[4], a[5]) };
    if s.ret == Int {
        r as c_int as c_long
    } else {
        r
    }
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
        FORK | VFORK | libc::SYS_clone | libc::SYS_clone3 | libc::SYS_openat2 | libc::SYS_getcwd
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
        _ => {}
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
    use super::{SYSCALLS, listed};

    #[test]
    fn the_bitmap_holds_exactly_the_listed_numbers() {
        for n in -5..600 {
            assert_eq!(
                listed(n),
                SYSCALLS.iter().any(|s| s.nr == n),
                "system call {n}"
            );
        }
        assert!(!listed(libc::SYS_futex) && !listed(libc::SYS_gettid));
    }
}
