//! The stat family: `stat`, `lstat`, `fstat`, `fstatat` (and their `64`
//! names), the pre-2.33 `__xstat` ABI, and `statx`.

use crate::conv::{put_stat, put_statx};
use crate::dispatch::{fd_call, path_call};
use crate::interpose::{forward, real};
use libc::{c_char, c_int, c_uint};
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

/// `fstatat`, which every path stat comes down to.
///
/// # Safety
/// `path` is NULL or a valid C string; `buf` is NULL or points to a
/// writable `struct stat`.
unsafe fn do_fstatat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    let kernel = |d: c_int, p: *const c_char| {
        // SAFETY: the caller's arguments (the path perhaps made
        // absolute, alive for the call), valid per the contract.
        unsafe {
            real!(fstatat64: fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int)(
                d, p, buf, flags,
            )
        }
    };
    // SAFETY: the caller's path and buffer, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |s, d, p| {
            let st = s.p().fstatat(d, p, flags)?;
            put_stat(&st, buf)
        })
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

/// `fstat`.
///
/// # Safety
/// `buf` is NULL or points to a writable `struct stat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's buffer, valid per the contract.
        || unsafe { real!(fstat64: fn(c_int, *mut libc::stat) -> c_int)(fd, buf) },
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

/// `statx`.
///
/// # Safety
/// `path` is NULL or a valid C string; `buf` is NULL or points to a
/// writable `struct statx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    let kernel = |d: c_int, p: *const c_char| {
        // SAFETY: the caller's arguments (the path perhaps made
        // absolute, alive for the call), valid per the contract.
        unsafe {
            real!(statx: fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)(
                d, p, flags, mask, buf,
            )
        }
    };
    // SAFETY: the caller's path and buffer, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |s, d, p| {
            let st = s.p().statx(d, p, flags, mask)?;
            put_statx(&st, buf)
        })
    }
}
