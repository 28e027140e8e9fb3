//! Extended attributes. uvfs has none (a tmpfs with no xattrs set): a
//! uvfs path or fd lists none, `get`/`remove` are `ENODATA`, `set` is
//! `EOPNOTSUPP`, after the path or fd is checked, so nothing reaches the
//! placeholder's `/dev/null`.

use crate::dispatch::{fd_call, path_call};
use crate::interpose::real;
use libc::{c_char, c_int, c_void, size_t, ssize_t};
use uvfs::Errno;
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

/// A path xattr call: on uvfs, the path checked (following symlinks or
/// not) and `r` returned; else `kernel`, the next definition with the
/// caller's other arguments, given the path (the caller's, or the host
/// path it stands for).
///
/// # Safety
/// `path` is NULL or a valid C string.
unsafe fn x_path(
    path: *const c_char,
    follow: bool,
    kernel: impl FnOnce(*const c_char) -> ssize_t,
    r: Result<ssize_t, Errno>,
) -> ssize_t {
    let flags = if follow { 0 } else { AT_SYMLINK_NOFOLLOW };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            -1,
            |_, p| kernel(p),
            |s, d, p| {
                s.p().fstatat(d, p, flags)?;
                r
            },
        )
    }
}

/// An fd xattr call: on uvfs, the fd checked and `r` returned; else
/// `kernel`.
fn x_fd(fd: c_int, kernel: impl FnOnce() -> ssize_t, r: Result<ssize_t, Errno>) -> ssize_t {
    fd_call(fd, -1, kernel, |s, u| {
        s.p().fstat(u)?;
        r
    })
}

type P = *const c_char;

/// `getxattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string; `v` points to `z`
/// writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getxattr(p: P, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe { real!(getxattr: fn(P, P, *mut c_void, size_t) -> ssize_t)(p, n, v, z) }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, true, kernel, Err(Errno::ENODATA)) }
}

/// `lgetxattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string; `v` points to `z`
/// writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lgetxattr(p: P, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe { real!(lgetxattr: fn(P, P, *mut c_void, size_t) -> ssize_t)(p, n, v, z) }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, false, kernel, Err(Errno::ENODATA)) }
}

/// `fgetxattr`.
///
/// # Safety
/// `n` is NULL or a valid C string; `v` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fgetxattr(fd: c_int, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    x_fd(
        fd,
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        || unsafe { real!(fgetxattr: fn(c_int, P, *mut c_void, size_t) -> ssize_t)(fd, n, v, z) },
        Err(Errno::ENODATA),
    )
}

/// `listxattr`.
///
/// # Safety
/// `p` is NULL or a valid C string; `l` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn listxattr(p: P, l: *mut c_char, z: size_t) -> ssize_t {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe { real!(listxattr: fn(P, *mut c_char, size_t) -> ssize_t)(p, l, z) }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, true, kernel, Ok(0)) }
}

/// `llistxattr`.
///
/// # Safety
/// `p` is NULL or a valid C string; `l` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn llistxattr(p: P, l: *mut c_char, z: size_t) -> ssize_t {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe { real!(llistxattr: fn(P, *mut c_char, size_t) -> ssize_t)(p, l, z) }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, false, kernel, Ok(0)) }
}

/// `flistxattr`.
///
/// # Safety
/// `l` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flistxattr(fd: c_int, l: *mut c_char, z: size_t) -> ssize_t {
    x_fd(
        fd,
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        || unsafe { real!(flistxattr: fn(c_int, *mut c_char, size_t) -> ssize_t)(fd, l, z) },
        Ok(0),
    )
}

/// `setxattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string; `v` points to `z`
/// readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn setxattr(p: P, n: P, v: *const c_void, z: size_t, f: c_int) -> c_int {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe {
            real!(setxattr: fn(P, P, *const c_void, size_t, c_int) -> c_int)(p, n, v, z, f)
                as ssize_t
        }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, true, kernel, Err(Errno::EOPNOTSUPP)) as c_int }
}

/// `lsetxattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string; `v` points to `z`
/// readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lsetxattr(p: P, n: P, v: *const c_void, z: size_t, f: c_int) -> c_int {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe {
            real!(lsetxattr: fn(P, P, *const c_void, size_t, c_int) -> c_int)(p, n, v, z, f)
                as ssize_t
        }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, false, kernel, Err(Errno::EOPNOTSUPP)) as c_int }
}

/// `fsetxattr`.
///
/// # Safety
/// `n` is NULL or a valid C string; `v` points to `z` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsetxattr(
    fd: c_int,
    n: P,
    v: *const c_void,
    z: size_t,
    f: c_int,
) -> c_int {
    x_fd(
        fd,
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        || unsafe {
            real!(fsetxattr: fn(c_int, P, *const c_void, size_t, c_int) -> c_int)(fd, n, v, z, f)
                as ssize_t
        },
        Err(Errno::EOPNOTSUPP),
    ) as c_int
}

/// `removexattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn removexattr(p: P, n: P) -> c_int {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe { real!(removexattr: fn(P, P) -> c_int)(p, n) as ssize_t }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, true, kernel, Err(Errno::ENODATA)) as c_int }
}

/// `lremovexattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lremovexattr(p: P, n: P) -> c_int {
    let kernel = |p: P| {
        // SAFETY: the caller's arguments, valid per the contract, its path
        // perhaps replaced by the host path it stands for (alive for the
        // call).
        unsafe { real!(lremovexattr: fn(P, P) -> c_int)(p, n) as ssize_t }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe { x_path(p, false, kernel, Err(Errno::ENODATA)) as c_int }
}

/// `fremovexattr`.
///
/// # Safety
/// `n` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fremovexattr(fd: c_int, n: P) -> c_int {
    x_fd(
        fd,
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        || unsafe { real!(fremovexattr: fn(c_int, P) -> c_int)(fd, n) as ssize_t },
        Err(Errno::ENODATA),
    ) as c_int
}
