//! The interposed syscall wrappers. Each one looks at its fd (a lock-free
//! map lookup) or routes its path ([`route`]); a kernel fd or a path outside
//! the prefix goes to the next definition unchanged, with no lock taken
//! (a relative path takes the lock briefly to read the cwd).
//!
//! Variadic C functions (`open`, `openat`, `fcntl`, `ioctl`) are defined
//! with their optional argument as a fixed one: on x86-64 and aarch64 Linux
//! a variadic integer or pointer argument travels in the same register as a
//! fixed one, and it is only read when the flags or command say it exists.
#![allow(clippy::missing_safety_doc)]

use crate::state::{
    FDMAP, Fd, Route, State, before_kernel_fd, borrow, hole_lower, prefix, with_state,
};
use crate::{busy, cbytes, forward, real, run, run_rc, set_errno};
use libc::{
    c_char, c_int, c_uint, c_ulong, c_void, gid_t, iovec, mode_t, off_t, size_t, ssize_t, uid_t,
};
use std::ffi::CString;
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW, Timespec};
use uvfs::{Errno, Process};

// ---------------------------------------------------------------------------
// Routing helpers.

/// Where `path` (relative to `dirfd`) goes. `None`: `dirfd` is a stale
/// placeholder (`EBADF`).
pub(crate) fn route(dirfd: c_int, path: &[u8]) -> Option<Route<'_>> {
    if prefix().is_none() || busy() {
        return Some(Route::Kernel);
    }
    if path.first() != Some(&b'/') && dirfd != AT_FDCWD {
        return match FDMAP.get(dirfd) {
            Fd::Kernel => Some(Route::Kernel),
            Fd::Stale => None,
            Fd::Uvfs(_) => Some(with_state(|s| s.route(dirfd, path))),
        };
    }
    if path.first() == Some(&b'/') {
        let pre = prefix().unwrap_or(b"/");
        // Fast exit: an absolute path whose first component differs from
        // the prefix's and that has no `..` cannot lie under it.
        let first_differs = path.len() > 1
            && pre.len() > 1
            && path[1] != b'/'
            && path[1] != b'.'
            && path[1] != pre[1];
        if first_differs {
            return Some(Route::Kernel);
        }
        // An absolute path needs no state (no cwd): no lock.
        return Some(match crate::state::route_abs(path) {
            Some(u) => Route::Uvfs(AT_FDCWD, u),
            None => Route::Kernel,
        });
    }
    Some(with_state(|s| s.route(dirfd, path)))
}

/// A path call: routes `path`, then runs `kernel(dirfd, path)` (with the
/// caller's arguments, or `AT_FDCWD` and an absolute path when the cwd is in
/// uvfs) or `uvfs(state, dirfd, path)` under the lock.
///
/// # Safety
/// `path` is NULL or a valid C string.
pub(crate) unsafe fn path_call<T>(
    dirfd: c_int,
    path: *const c_char,
    fail: T,
    kernel: impl FnOnce(c_int, *const c_char) -> T,
    uvfs: impl FnOnce(&mut State, i32, &[u8]) -> Result<T, Errno>,
) -> T {
    if path.is_null() {
        return kernel(dirfd, path);
    }
    // SAFETY: non-NULL and valid per the contract.
    let p = unsafe { cbytes(path) };
    match route(dirfd, p) {
        None => {
            set_errno(libc::EBADF);
            fail
        }
        Some(Route::Kernel) => kernel(dirfd, path),
        Some(Route::KernelAbs(abs)) => match CString::new(abs) {
            Ok(c) => kernel(AT_FDCWD, c.as_ptr()),
            Err(_) => kernel(dirfd, path),
        },
        Some(Route::Uvfs(d, up)) => run(fail, || with_state(|s| uvfs(s, d, &up))),
    }
}

/// Two-path calls (rename, link): both in uvfs, both in the kernel, or
/// `EXDEV`.
unsafe fn path2_call(
    d1: c_int,
    p1: *const c_char,
    d2: c_int,
    p2: *const c_char,
    kernel: impl FnOnce(c_int, *const c_char, c_int, *const c_char) -> c_int,
    uvfs: impl FnOnce(&mut Process, i32, &[u8], i32, &[u8]) -> Result<(), Errno>,
) -> c_int {
    if p1.is_null() || p2.is_null() {
        return kernel(d1, p1, d2, p2);
    }
    // SAFETY: valid C strings per the callers' contracts.
    let (b1, b2) = unsafe { (cbytes(p1), cbytes(p2)) };
    let (Some(r1), Some(r2)) = (route(d1, b1), route(d2, b2)) else {
        set_errno(libc::EBADF);
        return -1;
    };
    let kpath =
        |r: Route, d: c_int, p: *const c_char| -> Option<(c_int, Option<CString>, *const c_char)> {
            match r {
                Route::Kernel => Some((d, None, p)),
                Route::KernelAbs(a) => {
                    let c = CString::new(a).ok()?;
                    let ptr = c.as_ptr();
                    Some((AT_FDCWD, Some(c), ptr))
                }
                Route::Uvfs(..) => None,
            }
        };
    match (r1, r2) {
        (Route::Uvfs(ud1, up1), Route::Uvfs(ud2, up2)) => run(-1, || {
            with_state(|s| uvfs(s.p(), ud1, &up1, ud2, &up2)).map(|()| 0)
        }),
        (a, b) => match (kpath(a, d1, p1), kpath(b, d2, p2)) {
            (Some((kd1, _c1, kp1)), Some((kd2, _c2, kp2))) => kernel(kd1, kp1, kd2, kp2),
            _ => {
                set_errno(libc::EXDEV);
                -1
            }
        },
    }
}

/// An fd call: the kernel's fd goes to `kernel`, a uvfs fd to `uvfs(state,
/// uvfs fd)` under the lock, a stale placeholder is `EBADF`.
#[inline]
pub(crate) fn fd_call<T>(
    fd: c_int,
    fail: T,
    kernel: impl FnOnce() -> T,
    uvfs: impl FnOnce(&mut State, i32) -> Result<T, Errno>,
) -> T {
    match FDMAP.get(fd) {
        Fd::Kernel => kernel(),
        Fd::Uvfs(_) if busy() => kernel(),
        Fd::Stale => {
            set_errno(libc::EBADF);
            fail
        }
        Fd::Uvfs(_) => run(fail, || {
            with_state(|s| {
                let u = s.ufd(fd)?;
                uvfs(s, u)
            })
        }),
    }
}

/// Whether the C path `p` (relative to the cwd) routes to uvfs; false for
/// NULL.
pub(crate) fn is_uvfs_path(p: *const c_char) -> bool {
    // SAFETY: the caller's C string, checked non-NULL first.
    !p.is_null() && matches!(route(AT_FDCWD, unsafe { cbytes(p) }), Some(Route::Uvfs(..)))
}

/// Whether `fd` is a uvfs fd (or a stale placeholder).
#[inline]
pub(crate) fn is_uvfs(fd: c_int) -> bool {
    FDMAP.get(fd) != Fd::Kernel
}

/// `at_call! { name(arg: T, …); }`: an interposed `name(dirfd, path, arg…)`
/// whose uvfs side is `Process::name(dirfd, path, arg…)` returning `()`.
macro_rules! at_call {
    ($name:ident($($a:ident: $t:ty),* $(,)?);) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, $($a: $t),*) -> c_int {
            // SAFETY: forwarded C arguments.
            unsafe {
                path_call(
                    dirfd,
                    path,
                    -1,
                    |d, p| real!($name: fn(c_int, *const c_char, $($t),*) -> c_int)(d, p, $($a),*),
                    |s, d, p| s.p().$name(d, p, $($a),*).map(|()| 0),
                )
            }
        }
    };
}

// ---------------------------------------------------------------------------
// Conversions.

/// Writes a uvfs `Stat` as the C `struct stat`.
///
/// # Safety
/// `buf` is NULL (→ `EFAULT`) or points to a writable `struct stat`.
pub(crate) unsafe fn put_stat(s: &uvfs::Stat, buf: *mut libc::stat) -> Result<c_int, Errno> {
    if buf.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: an all-zero `struct stat` is valid.
    let mut c: libc::stat = unsafe { std::mem::zeroed() };
    c.st_dev = s.st_dev as _;
    c.st_ino = s.st_ino as _;
    c.st_nlink = s.st_nlink as _;
    c.st_mode = s.st_mode as _;
    c.st_uid = s.st_uid;
    c.st_gid = s.st_gid;
    c.st_rdev = s.st_rdev as _;
    c.st_size = s.st_size as _;
    c.st_blksize = s.st_blksize as _;
    c.st_blocks = s.st_blocks as _;
    c.st_atime = s.st_atime as _;
    c.st_atime_nsec = s.st_atime_nsec as _;
    c.st_mtime = s.st_mtime as _;
    c.st_mtime_nsec = s.st_mtime_nsec as _;
    c.st_ctime = s.st_ctime as _;
    c.st_ctime_nsec = s.st_ctime_nsec as _;
    // SAFETY: `buf` is writable per the contract.
    unsafe { buf.write_unaligned(c) };
    Ok(0)
}

unsafe fn put_statx(s: &uvfs::Statx, buf: *mut libc::statx) -> Result<c_int, Errno> {
    if buf.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: an all-zero `struct statx` is valid.
    let mut c: libc::statx = unsafe { std::mem::zeroed() };
    let ts = |t: uvfs::stat::StatxTimestamp| {
        // SAFETY: all-zero is a valid timestamp.
        let mut x: libc::statx_timestamp = unsafe { std::mem::zeroed() };
        x.tv_sec = t.tv_sec;
        x.tv_nsec = t.tv_nsec;
        x
    };
    c.stx_mask = s.stx_mask;
    c.stx_blksize = s.stx_blksize;
    c.stx_attributes = s.stx_attributes;
    c.stx_nlink = s.stx_nlink;
    c.stx_uid = s.stx_uid;
    c.stx_gid = s.stx_gid;
    c.stx_mode = s.stx_mode;
    c.stx_ino = s.stx_ino;
    c.stx_size = s.stx_size;
    c.stx_blocks = s.stx_blocks;
    c.stx_attributes_mask = s.stx_attributes_mask;
    c.stx_atime = ts(s.stx_atime);
    c.stx_btime = ts(s.stx_btime);
    c.stx_ctime = ts(s.stx_ctime);
    c.stx_mtime = ts(s.stx_mtime);
    c.stx_rdev_major = s.stx_rdev_major;
    c.stx_rdev_minor = s.stx_rdev_minor;
    c.stx_dev_major = s.stx_dev_major;
    c.stx_dev_minor = s.stx_dev_minor;
    c.stx_mnt_id = s.stx_mnt_id;
    // SAFETY: `buf` is writable per the caller.
    unsafe { buf.write_unaligned(c) };
    Ok(0)
}

/// A mutable byte slice from C (empty for a zero length, whatever the
/// pointer).
///
/// # Safety
/// `p` points to `n` writable bytes when `n > 0`.
pub(crate) unsafe fn buf_mut<'a>(p: *mut c_void, n: usize) -> Result<&'a mut [u8], Errno> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), n) })
}

/// # Safety
/// `p` points to `n` readable bytes when `n > 0`.
pub(crate) unsafe fn buf_ref<'a>(p: *const c_void, n: usize) -> Result<&'a [u8], Errno> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast(), n) })
}

unsafe fn iovs<'a>(iov: *const iovec, cnt: c_int) -> Result<&'a [iovec], Errno> {
    if !(0..=1024).contains(&cnt) {
        return Err(Errno::EINVAL);
    }
    if cnt == 0 {
        return Ok(&[]);
    }
    if iov.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: the caller passes `cnt` iovecs.
    Ok(unsafe { std::slice::from_raw_parts(iov, cnt as usize) })
}

// ---------------------------------------------------------------------------
// open.

/// The uvfs side of an open: a placeholder first (the kernel's `EMFILE`
/// wins, as `get_unused_fd` runs before the walk), then the uvfs open.
pub(crate) fn uvfs_open(
    s: &mut State,
    d: i32,
    p: &[u8],
    flags: c_int,
    mode: mode_t,
) -> Result<c_int, Errno> {
    let k = s.placeholder()?;
    match s.p().openat(d, p, flags, mode) {
        Ok(u) => {
            s.map(k, u);
            Ok(k)
        }
        Err(e) => {
            s.release(k);
            Err(e)
        }
    }
}

fn needs_mode(flags: c_int) -> bool {
    flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE
}

unsafe fn do_openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
    at: bool,
) -> c_int {
    let mode = if needs_mode(flags) { mode } else { 0 };
    // SAFETY: `path` comes from the C caller.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |d, p| {
                before_kernel_fd();
                if at {
                    real!(openat: fn(c_int, *const c_char, c_int, mode_t) -> c_int)(
                        d, p, flags, mode,
                    )
                } else {
                    real!(open: fn(*const c_char, c_int, mode_t) -> c_int)(p, flags, mode)
                }
            },
            |s, d, p| uvfs_open(s, d, p, flags, mode),
        )
    }
}

forward! {
    open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(AT_FDCWD, path, flags, mode, false);
    open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(AT_FDCWD, path, flags | libc::O_LARGEFILE, mode, false);
    __open_2(path: *const c_char, flags: c_int) -> c_int =
        do_openat(AT_FDCWD, path, flags, 0, false);
    __open64_2(path: *const c_char, flags: c_int) -> c_int =
        do_openat(AT_FDCWD, path, flags | libc::O_LARGEFILE, 0, false);
    openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(dirfd, path, flags, mode, true);
    openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(dirfd, path, flags | libc::O_LARGEFILE, mode, true);
    __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int =
        do_openat(dirfd, path, flags, 0, true);
    __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int =
        do_openat(dirfd, path, flags | libc::O_LARGEFILE, 0, true);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn creat(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        do_openat(
            AT_FDCWD,
            path,
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            mode,
            false,
        )
    }
}

forward! {
    creat64(path: *const c_char, mode: mode_t) -> c_int = creat(path, mode);
}

// ---------------------------------------------------------------------------
// close, dup, fcntl.

/// Closes uvfs fd `k` (the caller holds the state).
pub(crate) fn uvfs_close(s: &mut State, k: c_int) -> Result<c_int, Errno> {
    let u = s.ufd(k)?;
    let r = s.p().close(u);
    s.release(k);
    r.map(|()| 0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            let r = real!(close: fn(c_int) -> c_int)(fd);
            hole_lower(fd);
            r
        },
        |s, _| uvfs_close(s, fd),
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let hi = FDMAP.hi.load(std::sync::atomic::Ordering::Relaxed);
    if !busy() && hi > 0 && first <= last && (first as i64) < hi as i64 {
        let r = run(-1, || {
            with_state(|s| {
                let end = (last as i64).min(hi as i64 - 1) as i32;
                for k in first as i32..=end {
                    match FDMAP.get(k) {
                        Fd::Uvfs(u) => {
                            if flags & libc::CLOSE_RANGE_CLOEXEC as c_int != 0 {
                                let _ = s.p().fcntl(u, libc::F_SETFD, libc::FD_CLOEXEC as u64);
                            } else {
                                let _ = s.p().close(u);
                                s.unmap(k);
                            }
                        }
                        Fd::Stale if flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 => s.unmap(k),
                        _ => {}
                    }
                }
                Ok(0)
            })
        });
        if r < 0 {
            return r;
        }
    }
    let r = real!(close_range: fn(c_uint, c_uint, c_int) -> c_int)(first, last, flags);
    if r == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        hole_lower(i32::try_from(first).unwrap_or(i32::MAX));
    }
    r
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn closefrom(low: c_int) {
    // SAFETY: close_range over [low, ~0] is what glibc's closefrom does.
    if unsafe { close_range(low.max(0) as c_uint, c_uint::MAX, 0) } != 0 {
        real!(closefrom: fn(c_int) -> ())(low);
        hole_lower(low.max(0));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            before_kernel_fd();
            real!(dup: fn(c_int) -> c_int)(fd)
        },
        |s, u| {
            let k = s.placeholder()?;
            match s.p().dup(u) {
                Ok(u2) => {
                    s.map(k, u2);
                    Ok(k)
                }
                Err(e) => {
                    s.release(k);
                    Err(e)
                }
            }
        },
    )
}

/// dup2/dup3 with `new` already known to differ from `old`.
fn do_dup3(old: c_int, new: c_int, cloexec: bool, kernel: impl FnOnce() -> c_int) -> c_int {
    match (FDMAP.get(old), FDMAP.get(new)) {
        (Fd::Stale, _) => {
            set_errno(libc::EBADF);
            -1
        }
        (Fd::Kernel, Fd::Kernel) => kernel(),
        _ if busy() => kernel(),
        (Fd::Kernel, _) => run(-1, || {
            // A kernel fd onto a uvfs (or cached) number: the kernel's dup
            // replaces the placeholder atomically; then uvfs lets go.
            with_state(|s| {
                let r = kernel();
                if r < 0 {
                    return Err(Errno::last_os_error());
                }
                if let Fd::Uvfs(u) = FDMAP.get(new) {
                    let _ = s.p().close(u);
                }
                s.unmap(new);
                Ok(r)
            })
        }),
        (Fd::Uvfs(_), _) => run(-1, || {
            with_state(|s| {
                let u = s.ufd(old)?;
                if new < 0 {
                    return Err(Errno::EBADF);
                }
                let flags = if cloexec { libc::O_CLOEXEC } else { 0 };
                if let Fd::Uvfs(un) = FDMAP.get(new) {
                    s.p().dup3(u, un, flags)?;
                    return Ok(new);
                }
                let u2 = s.p().dup(u)?;
                if let Err(e) = s.placeholder_at(new) {
                    let _ = s.p().close(u2);
                    return Err(e);
                }
                if cloexec {
                    let _ = s.p().fcntl(u2, libc::F_SETFD, libc::FD_CLOEXEC as u64);
                }
                s.map(new, u2);
                Ok(new)
            })
        }),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    if old == new {
        return fd_call(
            old,
            -1,
            || real!(dup2: fn(c_int, c_int) -> c_int)(old, new),
            |_, _| Ok(new),
        );
    }
    do_dup3(old, new, false, || {
        real!(dup2: fn(c_int, c_int) -> c_int)(old, new)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if old == new || flags & !libc::O_CLOEXEC != 0 {
        if is_uvfs(old) {
            set_errno(libc::EINVAL);
            return -1;
        }
        return real!(dup3: fn(c_int, c_int, c_int) -> c_int)(old, new, flags);
    }
    do_dup3(old, new, flags & libc::O_CLOEXEC != 0, || {
        real!(dup3: fn(c_int, c_int, c_int) -> c_int)(old, new, flags)
    })
}

/// The POSIX record-lock commands on a uvfs fd. Record locks belong to a
/// process and only conflict between processes; uvfs under the preload is
/// private to this process (a fork gets its own copy), so no other process
/// can ever hold a lock on a uvfs file: F_SETLK/F_SETLKW always succeed once
/// the arguments check out, and F_GETLK always answers F_UNLCK — exactly
/// what Linux answers a process that is alone with its files. Open file
/// description locks (F_OFD_*) can conflict inside one process and are
/// refused with EINVAL.
fn uvfs_lock(p: &mut Process, u: i32, cmd: c_int, arg: *mut libc::flock) -> Result<c_int, Errno> {
    if arg.is_null() {
        return Err(Errno::EFAULT);
    }
    let fl_flags = p.fcntl(u, libc::F_GETFL, 0)?;
    if fl_flags & libc::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    // SAFETY: a non-NULL `struct flock *` from the caller.
    let mut fl = unsafe { arg.read_unaligned() };
    let start = match fl.l_whence as c_int {
        libc::SEEK_SET => 0,
        libc::SEEK_CUR => p.lseek(u, 0, libc::SEEK_CUR)?,
        libc::SEEK_END => p.fstat(u)?.st_size,
        _ => return Err(Errno::EINVAL),
    }
    .checked_add(fl.l_start)
    .ok_or(Errno::EOVERFLOW)?;
    if start < 0 || (fl.l_len < 0 && start + fl.l_len < 0) {
        return Err(Errno::EINVAL);
    }
    let acc = fl_flags & libc::O_ACCMODE;
    match (cmd, fl.l_type as c_int) {
        (libc::F_GETLK, libc::F_RDLCK | libc::F_WRLCK) => {
            fl.l_type = libc::F_UNLCK as _;
            // SAFETY: as above.
            unsafe { arg.write_unaligned(fl) };
            Ok(0)
        }
        (libc::F_GETLK, _) => Err(Errno::EINVAL),
        (_, libc::F_RDLCK) if acc == libc::O_WRONLY => Err(Errno::EBADF),
        (_, libc::F_WRLCK) if acc == libc::O_RDONLY => Err(Errno::EBADF),
        (_, libc::F_RDLCK | libc::F_WRLCK | libc::F_UNLCK) => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

unsafe fn do_fcntl(fd: c_int, cmd: c_int, arg: c_ulong, real64: bool) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            if matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) {
                before_kernel_fd();
            }
            if real64 {
                real!(fcntl64: fn(c_int, c_int, c_ulong) -> c_int)(fd, cmd, arg)
            } else {
                real!(fcntl: fn(c_int, c_int, c_ulong) -> c_int)(fd, cmd, arg)
            }
        },
        |s, u| match cmd {
            libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
                let min = arg as c_int;
                if min < 0 {
                    return Err(Errno::EINVAL);
                }
                // The kernel picks the number: with the cache flushed, the
                // one Linux would.
                s.flush();
                let k =
                    rustix::io::fcntl_dupfd_cloexec(borrow(fd), min).map_err(crate::errno_of)?;
                let k = rustix::fd::IntoRawFd::into_raw_fd(k);
                match s.p().fcntl(u, cmd, 0) {
                    Ok(u2) => {
                        s.map(k, u2);
                        Ok(k)
                    }
                    Err(e) => {
                        s.release(k);
                        Err(e)
                    }
                }
            }
            libc::F_GETLK | libc::F_SETLK | libc::F_SETLKW => {
                uvfs_lock(s.p(), u, cmd, arg as *mut libc::flock)
            }
            libc::F_OFD_GETLK | libc::F_OFD_SETLK | libc::F_OFD_SETLKW => Err(Errno::EINVAL),
            libc::F_GETOWN | libc::F_SETOWN => Ok(0),
            uvfs::uapi::F_DUPFD_QUERY => match FDMAP.get(arg as c_int) {
                Fd::Uvfs(u2) => s.p().fcntl(u, cmd, u2 as u64),
                Fd::Stale => Err(Errno::EBADF),
                Fd::Kernel => {
                    if rustix::io::fcntl_getfd(borrow(arg as c_int)).is_err() {
                        Err(Errno::EBADF)
                    } else {
                        Ok(0)
                    }
                }
            },
            _ => s.p().fcntl(u, cmd, arg),
        },
    )
}

forward! {
    fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int = do_fcntl(fd, cmd, arg, false);
    fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int = do_fcntl(fd, cmd, arg, true);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn lockf(fd: c_int, cmd: c_int, len: off_t) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(lockf: fn(c_int, c_int, off_t) -> c_int)(fd, cmd, len),
        |s, u| {
            // As uvfs_lock: no other process can hold a lock on a uvfs file.
            match cmd {
                libc::F_ULOCK | libc::F_LOCK | libc::F_TLOCK | libc::F_TEST => {
                    let acc = s.p().fcntl(u, libc::F_GETFL, 0)? & libc::O_ACCMODE;
                    if cmd != libc::F_TEST && cmd != libc::F_ULOCK && acc == libc::O_RDONLY {
                        return Err(Errno::EBADF);
                    }
                    Ok(0)
                }
                _ => Err(Errno::EINVAL),
            }
        },
    )
}

forward! {
    lockf64(fd: c_int, cmd: c_int, len: off_t) -> c_int = lockf(fd, cmd, len);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn flock(fd: c_int, op: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(flock: fn(c_int, c_int) -> c_int)(fd, op),
        |s, u| {
            s.p().fcntl(u, libc::F_GETFD, 0)?;
            match op & !libc::LOCK_NB {
                libc::LOCK_SH | libc::LOCK_EX | libc::LOCK_UN => Ok(0),
                _ => Err(Errno::EINVAL),
            }
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, req: c_ulong, arg: *mut c_void) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(ioctl: fn(c_int, c_ulong, *mut c_void) -> c_int)(fd, req, arg),
        |s, u| match req {
            libc::FIOCLEX => s.p().fcntl(u, libc::F_SETFD, libc::FD_CLOEXEC as u64),
            libc::FIONCLEX => s.p().fcntl(u, libc::F_SETFD, 0),
            libc::FIONREAD => {
                let st = s.p().fstat(u)?;
                let pos = s.p().lseek(u, 0, libc::SEEK_CUR)?;
                if arg.is_null() {
                    return Err(Errno::EFAULT);
                }
                let n = (st.st_size - pos).clamp(0, c_int::MAX as i64) as c_int;
                // SAFETY: FIONREAD's argument is an `int *`.
                unsafe { arg.cast::<c_int>().write_unaligned(n) };
                Ok(0)
            }
            // FICLONE, FICLONERANGE, FIDEDUPERANGE: tmpfs cannot share
            // extents.
            0x4004_9409 | 0x4020_940d | 0xc018_9436 => Err(Errno::EOPNOTSUPP),
            _ => Err(Errno::ENOTTY),
        },
    )
}

// ---------------------------------------------------------------------------
// I/O.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(read: fn(c_int, *mut c_void, size_t) -> ssize_t)(fd, buf, n),
        // SAFETY: the caller's buffer of `n` bytes.
        |s, u| Ok(s.p().read(u, unsafe { buf_mut(buf, n) }?)? as ssize_t),
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        return real!(__read_chk: fn(c_int, *mut c_void, size_t, size_t) -> ssize_t)(
            fd, buf, n, buflen,
        );
    }
    // SAFETY: forwarded.
    unsafe { read(fd, buf, n) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(write: fn(c_int, *const c_void, size_t) -> ssize_t)(fd, buf, n),
        // SAFETY: the caller's buffer of `n` bytes.
        |s, u| Ok(s.p().write(u, unsafe { buf_ref(buf, n) }?)? as ssize_t),
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(pread64: fn(c_int, *mut c_void, size_t, off_t) -> ssize_t)(fd, buf, n, off),
        // SAFETY: the caller's buffer.
        |s, u| Ok(s.p().pread(u, unsafe { buf_mut(buf, n) }?, off)? as ssize_t),
    )
}

forward! {
    pread(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t = pread64(fd, buf, n, off);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn __pread64_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: off_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        return real!(__pread64_chk: fn(c_int, *mut c_void, size_t, off_t, size_t) -> ssize_t)(
            fd, buf, n, off, buflen,
        );
    }
    // SAFETY: forwarded.
    unsafe { pread64(fd, buf, n, off) }
}

forward! {
    __pread_chk(fd: c_int, buf: *mut c_void, n: size_t, off: off_t, buflen: size_t) -> ssize_t =
        __pread64_chk(fd, buf, n, off, buflen);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(pwrite64: fn(c_int, *const c_void, size_t, off_t) -> ssize_t)(fd, buf, n, off),
        // SAFETY: the caller's buffer.
        |s, u| Ok(s.p().pwrite(u, unsafe { buf_ref(buf, n) }?, off)? as ssize_t),
    )
}

forward! {
    pwrite(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t =
        pwrite64(fd, buf, n, off);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(readv: fn(c_int, *const iovec, c_int) -> ssize_t)(fd, iov, cnt),
        |s, u| {
            // SAFETY: the caller's iovecs, each a writable buffer.
            let v = unsafe { iovs(iov, cnt) }?;
            let mut bufs = Vec::with_capacity(v.len());
            for x in v {
                // SAFETY: as above.
                bufs.push(unsafe { buf_mut(x.iov_base, x.iov_len) }?);
            }
            Ok(s.p().readv(u, &mut bufs)? as ssize_t)
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(writev: fn(c_int, *const iovec, c_int) -> ssize_t)(fd, iov, cnt),
        |s, u| {
            // SAFETY: the caller's iovecs.
            let v = unsafe { iovs(iov, cnt) }?;
            let mut bufs = Vec::with_capacity(v.len());
            for x in v {
                // SAFETY: as above.
                bufs.push(unsafe { buf_ref(x.iov_base, x.iov_len) }?);
            }
            Ok(s.p().writev(u, &bufs)? as ssize_t)
        },
    )
}

/// preadv/pwritev on uvfs: one positional call per buffer, stopping at a
/// short one (not atomic against a concurrent writer, unlike the kernel's).
fn uvfs_preadv(
    p: &mut Process,
    u: i32,
    v: &[iovec],
    mut off: off_t,
    write: bool,
) -> Result<ssize_t, Errno> {
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    let mut total = 0usize;
    for x in v {
        let n = if write {
            // SAFETY: the caller's buffer.
            p.pwrite(u, unsafe { buf_ref(x.iov_base, x.iov_len) }?, off)
        } else {
            // SAFETY: the caller's buffer.
            p.pread(u, unsafe { buf_mut(x.iov_base, x.iov_len) }?, off)
        };
        let n = match n {
            Ok(n) => n,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        };
        total += n;
        off += n as off_t;
        if n < x.iov_len {
            break;
        }
    }
    Ok(total as ssize_t)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv64(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(preadv64: fn(c_int, *const iovec, c_int, off_t) -> ssize_t)(fd, iov, cnt, off),
        // SAFETY: the caller's iovecs.
        |s, u| uvfs_preadv(s.p(), u, unsafe { iovs(iov, cnt) }?, off, false),
    )
}

forward! {
    preadv(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t =
        preadv64(fd, iov, cnt, off);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: off_t,
) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(pwritev64: fn(c_int, *const iovec, c_int, off_t) -> ssize_t)(fd, iov, cnt, off),
        // SAFETY: the caller's iovecs.
        |s, u| uvfs_preadv(s.p(), u, unsafe { iovs(iov, cnt) }?, off, true),
    )
}

forward! {
    pwritev(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t =
        pwritev64(fd, iov, cnt, off);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn lseek64(fd: c_int, off: off_t, whence: c_int) -> off_t {
    fd_call(
        fd,
        -1,
        || real!(lseek64: fn(c_int, off_t, c_int) -> off_t)(fd, off, whence),
        |s, u| s.p().lseek(u, off, whence),
    )
}

forward! {
    lseek(fd: c_int, off: off_t, whence: c_int) -> off_t = lseek64(fd, off, whence);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn getdents64(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        || real!(getdents64: fn(c_int, *mut c_void, size_t) -> ssize_t)(fd, buf, n),
        // SAFETY: the caller's buffer.
        |s, u| Ok(s.p().getdents64(u, unsafe { buf_mut(buf, n) }?)? as ssize_t),
    )
}

// ---------------------------------------------------------------------------
// The stat family.

unsafe fn do_fstatat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |d, p| {
                real!(fstatat64: fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int)(
                    d, p, buf, flags,
                )
            },
            |s, d, p| {
                let st = s.p().fstatat(d, p, flags)?;
                put_stat(&st, buf)
            },
        )
    }
}

forward! {
    stat(path: *const c_char, buf: *mut libc::stat) -> c_int = do_fstatat(AT_FDCWD, path, buf, 0);
    stat64(path: *const c_char, buf: *mut libc::stat) -> c_int = do_fstatat(AT_FDCWD, path, buf, 0);
    lstat(path: *const c_char, buf: *mut libc::stat) -> c_int =
        do_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
    lstat64(path: *const c_char, buf: *mut libc::stat) -> c_int =
        do_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
    fstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int =
        do_fstatat(dirfd, path, buf, flags);
    fstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int =
        do_fstatat(dirfd, path, buf, flags);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(fstat64: fn(c_int, *mut libc::stat) -> c_int)(fd, buf),
        |s, u| {
            let st = s.p().fstat(u)?;
            // SAFETY: the caller's buffer.
            unsafe { put_stat(&st, buf) }
        },
    )
}

forward! {
    fstat64(fd: c_int, buf: *mut libc::stat) -> c_int = fstat(fd, buf);
}

// The pre-2.33 `__xstat` ABI (version 1 on x86-64 is `struct stat`), still
// called by older binaries.
forward! {
    __xstat(_ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int =
        do_fstatat(AT_FDCWD, path, buf, 0);
    __xstat64(_ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int =
        do_fstatat(AT_FDCWD, path, buf, 0);
    __lxstat(_ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int =
        do_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
    __lxstat64(_ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int =
        do_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
    __fxstat(_ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int = fstat(fd, buf);
    __fxstat64(_ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int = fstat(fd, buf);
    __fxstatat(_v: c_int, d: c_int, p: *const c_char, b: *mut libc::stat, fl: c_int) -> c_int =
        do_fstatat(d, p, b, fl);
    __fxstatat64(_v: c_int, d: c_int, p: *const c_char, b: *mut libc::stat, fl: c_int) -> c_int =
        do_fstatat(d, p, b, fl);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |d, p| {
                real!(statx: fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)(
                    d, p, flags, mask, buf,
                )
            },
            |s, d, p| {
                let st = s.p().statx(d, p, flags, mask)?;
                put_statx(&st, buf)
            },
        )
    }
}

// ---------------------------------------------------------------------------
// Names.

forward! {
    access(path: *const c_char, mode: c_int) -> c_int = faccessat(AT_FDCWD, path, mode, 0);
}

at_call! { faccessat(mode: c_int, flags: c_int); }

forward! {
    euidaccess(path: *const c_char, mode: c_int) -> c_int =
        faccessat(AT_FDCWD, path, mode, libc::AT_EACCESS);
    eaccess(path: *const c_char, mode: c_int) -> c_int =
        faccessat(AT_FDCWD, path, mode, libc::AT_EACCESS);
}

at_call! { mkdirat(mode: mode_t); }

forward! {
    mkdir(path: *const c_char, mode: mode_t) -> c_int = mkdirat(AT_FDCWD, path, mode);
}

at_call! { unlinkat(flags: c_int); }

forward! {
    unlink(path: *const c_char) -> c_int = unlinkat(AT_FDCWD, path, 0);
    rmdir(path: *const c_char) -> c_int = unlinkat(AT_FDCWD, path, libc::AT_REMOVEDIR);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn renameat2(
    d1: c_int,
    p1: *const c_char,
    d2: c_int,
    p2: *const c_char,
    flags: c_uint,
) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        path2_call(
            d1,
            p1,
            d2,
            p2,
            |a, b, c, d| {
                if flags == 0 {
                    real!(renameat: fn(c_int, *const c_char, c_int, *const c_char) -> c_int)(
                        a, b, c, d,
                    )
                } else {
                    real!(renameat2: fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int)(
                        a, b, c, d, flags,
                    )
                }
            },
            |p, a, b, c, d| p.renameat2(a, b, c, d, flags),
        )
    }
}

forward! {
    renameat(d1: c_int, p1: *const c_char, d2: c_int, p2: *const c_char) -> c_int =
        renameat2(d1, p1, d2, p2, 0);
    rename(p1: *const c_char, p2: *const c_char) -> c_int =
        renameat2(AT_FDCWD, p1, AT_FDCWD, p2, 0);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn linkat(
    d1: c_int,
    p1: *const c_char,
    d2: c_int,
    p2: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        path2_call(
            d1,
            p1,
            d2,
            p2,
            |a, b, c, d| {
                real!(linkat: fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int)(
                    a, b, c, d, flags,
                )
            },
            |p, a, b, c, d| p.linkat(a, b, c, d, flags),
        )
    }
}

forward! {
    link(p1: *const c_char, p2: *const c_char) -> c_int = linkat(AT_FDCWD, p1, AT_FDCWD, p2, 0);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn symlinkat(
    target: *const c_char,
    dirfd: c_int,
    path: *const c_char,
) -> c_int {
    if target.is_null() {
        return real!(symlinkat: fn(*const c_char, c_int, *const c_char) -> c_int)(
            target, dirfd, path,
        );
    }
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |d, p| real!(symlinkat: fn(*const c_char, c_int, *const c_char) -> c_int)(target, d, p),
            |s, d, p| s.p().symlinkat(cbytes(target), d, p).map(|()| 0),
        )
    }
}

forward! {
    symlink(target: *const c_char, path: *const c_char) -> c_int =
        symlinkat(target, AT_FDCWD, path);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn readlinkat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    n: size_t,
) -> ssize_t {
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |d, p| {
                real!(readlinkat: fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t)(
                    d, p, buf, n,
                )
            },
            |s, d, p| {
                if n == 0 || n > isize::MAX as usize {
                    return Err(Errno::EINVAL);
                }
                let b = buf_mut(buf.cast(), n)?;
                Ok(s.p().readlinkat(d, p, b)? as ssize_t)
            },
        )
    }
}

forward! {
    readlink(path: *const c_char, buf: *mut c_char, n: size_t) -> ssize_t =
        readlinkat(AT_FDCWD, path, buf, n);
    __readlink_chk(path: *const c_char, buf: *mut c_char, n: size_t, _buflen: size_t) -> ssize_t =
        readlinkat(AT_FDCWD, path, buf, n);
    __readlinkat_chk(
        d: c_int,
        path: *const c_char,
        buf: *mut c_char,
        n: size_t,
        _buflen: size_t,
    ) -> ssize_t =
        readlinkat(d, path, buf, n);
}

// ---------------------------------------------------------------------------
// Sizes and sync.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn truncate(path: *const c_char, len: off_t) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            -1,
            |_, p| real!(truncate: fn(*const c_char, off_t) -> c_int)(p, len),
            |s, d, p| {
                if d != AT_FDCWD {
                    // Only AT_FDCWD routes reach here for a non-at call.
                    return Err(Errno::EBADF);
                }
                s.p().truncate(p, len).map(|()| 0)
            },
        )
    }
}

forward! {
    truncate64(path: *const c_char, len: off_t) -> c_int = truncate(path, len);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn ftruncate(fd: c_int, len: off_t) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(ftruncate: fn(c_int, off_t) -> c_int)(fd, len),
        |s, u| s.p().ftruncate(u, len).map(|()| 0),
    )
}

forward! {
    ftruncate64(fd: c_int, len: off_t) -> c_int = ftruncate(fd, len);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(fallocate: fn(c_int, c_int, off_t, off_t) -> c_int)(fd, mode, off, len),
        |s, u| s.p().fallocate(u, mode, off, len).map(|()| 0),
    )
}

forward! {
    fallocate64(fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int =
        fallocate(fd, mode, off, len);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_fallocate(fd: c_int, off: off_t, len: off_t) -> c_int {
    if !is_uvfs(fd) || busy() {
        return real!(posix_fallocate: fn(c_int, off_t, off_t) -> c_int)(fd, off, len);
    }
    run_rc(|| {
        with_state(|s| {
            let u = s.ufd(fd)?;
            s.p().fallocate(u, 0, off, len)
        })
    })
}

forward! {
    posix_fallocate64(fd: c_int, off: off_t, len: off_t) -> c_int = posix_fallocate(fd, off, len);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_fadvise(fd: c_int, off: off_t, len: off_t, advice: c_int) -> c_int {
    if !is_uvfs(fd) || busy() {
        return real!(posix_fadvise: fn(c_int, off_t, off_t, c_int) -> c_int)(fd, off, len, advice);
    }
    // tmpfs ignores advice (Linux: generic_fadvise on shmem is a no-op
    // after the argument checks).
    run_rc(|| {
        with_state(|s| {
            let u = s.ufd(fd)?;
            s.p().fstat(u)?;
            if !(0..=5).contains(&advice) || len < 0 {
                return Err(Errno::EINVAL);
            }
            Ok(())
        })
    })
}

forward! {
    posix_fadvise64(fd: c_int, off: off_t, len: off_t, advice: c_int) -> c_int =
        posix_fadvise(fd, off, len, advice);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(fsync: fn(c_int) -> c_int)(fd),
        |s, u| s.p().fsync(u).map(|()| 0),
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(fdatasync: fn(c_int) -> c_int)(fd),
        |s, u| s.p().fdatasync(u).map(|()| 0),
    )
}

// ---------------------------------------------------------------------------
// cwd.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            -1,
            |_, p| {
                let r = real!(chdir: fn(*const c_char) -> c_int)(p);
                if r == 0 && prefix().is_some() && !busy() {
                    with_state(|s| {
                        s.cwd_in_uvfs = false;
                        s.refresh_kcwd();
                    });
                }
                r
            },
            |s, d, p| {
                debug_assert_eq!(d, AT_FDCWD);
                s.p().chdir(p)?;
                s.cwd_in_uvfs = true;
                Ok(0)
            },
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchdir(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            let r = real!(fchdir: fn(c_int) -> c_int)(fd);
            if r == 0 && prefix().is_some() && !busy() {
                with_state(|s| {
                    s.cwd_in_uvfs = false;
                    s.refresh_kcwd();
                });
            }
            r
        },
        |s, u| {
            s.p().fchdir(u)?;
            s.cwd_in_uvfs = true;
            Ok(0)
        },
    )
}

/// The program's cwd when it is in uvfs: the prefix plus uvfs's cwd.
pub(crate) fn uvfs_cwd(s: &mut State) -> Result<Option<Vec<u8>>, Errno> {
    if !s.cwd_in_uvfs {
        return Ok(None);
    }
    let c = s.p().getcwd()?;
    let mut out = prefix().unwrap_or(b"").to_vec();
    if c != b"/" {
        out.extend_from_slice(&c);
    }
    Ok(Some(out))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: size_t) -> *mut c_char {
    let kernel = || real!(getcwd: fn(*mut c_char, size_t) -> *mut c_char)(buf, size);
    if prefix().is_none() || busy() {
        return kernel();
    }
    let cwd = match run(None, || with_state(|s| uvfs_cwd(s).map(Some))) {
        None => return std::ptr::null_mut(),
        Some(None) => return kernel(),
        Some(Some(c)) => c,
    };
    if !buf.is_null() && size == 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let need = cwd.len() + 1;
    let (out, cap) = if buf.is_null() {
        let cap = if size == 0 { need } else { size };
        // SAFETY: plain allocation, freed by the caller with free().
        (unsafe { libc::malloc(cap) }.cast::<c_char>(), cap)
    } else {
        (buf, size)
    };
    if out.is_null() {
        set_errno(libc::ENOMEM);
        return out;
    }
    if cap < need {
        if buf.is_null() {
            // SAFETY: allocated just above.
            unsafe { libc::free(out.cast()) };
        }
        set_errno(libc::ERANGE);
        return std::ptr::null_mut();
    }
    // SAFETY: `out` has `cap >= need` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(cwd.as_ptr(), out.cast::<u8>(), cwd.len());
        *out.add(cwd.len()) = 0;
    }
    out
}

forward! {
    __getcwd_chk(buf: *mut c_char, size: size_t, _buflen: size_t) -> *mut c_char =
        getcwd(buf, size);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn get_current_dir_name() -> *mut c_char {
    if prefix().is_some() && !busy() && with_state(|s| s.cwd_in_uvfs) {
        // SAFETY: getcwd allocates.
        return unsafe { getcwd(std::ptr::null_mut(), 0) };
    }
    real!(get_current_dir_name: fn() -> *mut c_char)()
}

// ---------------------------------------------------------------------------
// Attributes.

at_call! { fchmodat(mode: mode_t, flags: c_int); }

forward! {
    chmod(path: *const c_char, mode: mode_t) -> c_int = fchmodat(AT_FDCWD, path, mode, 0);
    lchmod(path: *const c_char, mode: mode_t) -> c_int =
        fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchmod(fd: c_int, mode: mode_t) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(fchmod: fn(c_int, mode_t) -> c_int)(fd, mode),
        |s, u| s.p().fchmod(u, mode).map(|()| 0),
    )
}

at_call! { fchownat(uid: uid_t, gid: gid_t, flags: c_int); }

forward! {
    chown(path: *const c_char, uid: uid_t, gid: gid_t) -> c_int =
        fchownat(AT_FDCWD, path, uid, gid, 0);
    lchown(path: *const c_char, uid: uid_t, gid: gid_t) -> c_int =
        fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchown(fd: c_int, uid: uid_t, gid: gid_t) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(fchown: fn(c_int, uid_t, gid_t) -> c_int)(fd, uid, gid),
        |s, u| s.p().fchown(u, uid, gid).map(|()| 0),
    )
}

unsafe fn times_of(t: *const libc::timespec) -> Option<[Timespec; 2]> {
    if t.is_null() {
        return None;
    }
    // SAFETY: the caller passes two timespecs.
    let (a, m) = unsafe { (t.read_unaligned(), t.add(1).read_unaligned()) };
    Some([
        Timespec {
            tv_sec: a.tv_sec,
            tv_nsec: a.tv_nsec,
        },
        Timespec {
            tv_sec: m.tv_sec,
            tv_nsec: m.tv_nsec,
        },
    ])
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn utimensat(
    dirfd: c_int,
    path: *const c_char,
    t: *const libc::timespec,
    flags: c_int,
) -> c_int {
    if path.is_null() {
        // Linux's utimensat(fd, NULL, …) is futimens(fd).
        if dirfd != AT_FDCWD && is_uvfs(dirfd) {
            // SAFETY: forwarded.
            return unsafe { futimens(dirfd, t) };
        }
        return real!(utimensat: fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)(
            dirfd, path, t, flags,
        );
    }
    // SAFETY: forwarded C arguments.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |d, p| {
                real!(utimensat: fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)(
                    d, p, t, flags,
                )
            },
            |s, d, p| s.p().utimensat(d, p, times_of(t), flags).map(|()| 0),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn futimens(fd: c_int, t: *const libc::timespec) -> c_int {
    fd_call(
        fd,
        -1,
        || real!(futimens: fn(c_int, *const libc::timespec) -> c_int)(fd, t),
        // SAFETY: the caller's times.
        |s, u| s.p().futimens(u, unsafe { times_of(t) }).map(|()| 0),
    )
}

/// timevals → timespecs (NULL stays NULL: now). `EINVAL` for microseconds
/// out of range, as glibc's conversion does.
unsafe fn tv_to_ts(tv: *const libc::timeval) -> Result<Option<[libc::timespec; 2]>, ()> {
    if tv.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller passes two timevals.
    let (a, m) = unsafe { (tv.read_unaligned(), tv.add(1).read_unaligned()) };
    let c = |t: libc::timeval| -> Result<libc::timespec, ()> {
        if !(0..1_000_000).contains(&t.tv_usec) {
            return Err(());
        }
        Ok(libc::timespec {
            tv_sec: t.tv_sec,
            tv_nsec: t.tv_usec * 1000,
        })
    };
    Ok(Some([c(a)?, c(m)?]))
}

unsafe fn do_utimes(
    d: c_int,
    path: *const c_char,
    tv: *const libc::timeval,
    flags: c_int,
    real_fn: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: the path is the caller's.
    let p = unsafe { cbytes(path) };
    let uv = path.is_null() && is_uvfs(d)
        || !path.is_null() && matches!(route(AT_FDCWD, p), Some(Route::Uvfs(..)));
    if !uv {
        return real_fn();
    }
    // SAFETY: the caller's timevals.
    match unsafe { tv_to_ts(tv) } {
        Err(()) => {
            set_errno(libc::EINVAL);
            -1
        }
        Ok(ts) => {
            let tp = ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
            // SAFETY: forwarded with converted times.
            unsafe {
                if path.is_null() {
                    futimens(d, tp)
                } else {
                    utimensat(AT_FDCWD, path, tp, flags)
                }
            }
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn utimes(path: *const c_char, tv: *const libc::timeval) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        do_utimes(AT_FDCWD, path, tv, 0, || {
            real!(utimes: fn(*const c_char, *const libc::timeval) -> c_int)(path, tv)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutimes(path: *const c_char, tv: *const libc::timeval) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        do_utimes(AT_FDCWD, path, tv, AT_SYMLINK_NOFOLLOW, || {
            real!(lutimes: fn(*const c_char, *const libc::timeval) -> c_int)(path, tv)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn futimes(fd: c_int, tv: *const libc::timeval) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        do_utimes(fd, std::ptr::null(), tv, 0, || {
            real!(futimes: fn(c_int, *const libc::timeval) -> c_int)(fd, tv)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn utime(path: *const c_char, t: *const libc::utimbuf) -> c_int {
    if !is_uvfs_path(path) {
        return real!(utime: fn(*const c_char, *const libc::utimbuf) -> c_int)(path, t);
    }
    let ts = if t.is_null() {
        None
    } else {
        // SAFETY: the caller's utimbuf.
        let b = unsafe { t.read_unaligned() };
        Some([
            libc::timespec {
                tv_sec: b.actime,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: b.modtime,
                tv_nsec: 0,
            },
        ])
    };
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
    // SAFETY: forwarded.
    unsafe { utimensat(AT_FDCWD, path, tp, 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn umask(mask: mode_t) -> mode_t {
    let old = real!(umask: fn(mode_t) -> mode_t)(mask);
    if prefix().is_some() && !busy() {
        let _b = run(0, || {
            with_state(|s| {
                if let Some(p) = s.p_if_built() {
                    p.umask(mask);
                }
                Ok(0)
            })
        });
    }
    old
}

/// mknod/mkfifo under the prefix: uvfs's tmpfs has no special files.
unsafe fn no_special(path: *const c_char, dirfd: c_int, real_fn: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: the caller's path.
    unsafe {
        path_call(
            dirfd,
            path,
            -1,
            |_, _| real_fn(),
            |_, _, _| Err(Errno::EPERM),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkfifo(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        no_special(path, AT_FDCWD, || {
            real!(mkfifo: fn(*const c_char, mode_t) -> c_int)(path, mode)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkfifoat(d: c_int, path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        no_special(path, d, || {
            real!(mkfifoat: fn(c_int, *const c_char, mode_t) -> c_int)(d, path, mode)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mknodat(
    d: c_int,
    path: *const c_char,
    mode: mode_t,
    dev: libc::dev_t,
) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        no_special(path, d, || {
            real!(mknodat: fn(c_int, *const c_char, mode_t, libc::dev_t) -> c_int)(
                d, path, mode, dev,
            )
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        no_special(path, AT_FDCWD, || {
            real!(mknod: fn(*const c_char, mode_t, libc::dev_t) -> c_int)(path, mode, dev)
        })
    }
}
