//! Extended attributes: on a uvfs path or fd, the library's calls
//! (`Process::getxattrat` and the rest: tmpfs holds `user.*`,
//! `trusted.*`, `security.*` and the POSIX ACLs `system.posix_acl_access`
//! and `system.posix_acl_default` as Linux's does, the ACLs deciding
//! access in uvfs's permission checks); elsewhere the next definition.

use crate::conv::cbytes;
use crate::dispatch::{fd_call, path_call};
use crate::interpose::real;
use libc::{c_char, c_int, c_void, size_t, ssize_t};
use uvfs::Errno;
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

type P = *const c_char;

/// The name argument: `EFAULT` for NULL, as the kernel's copy finds it.
///
/// # Safety
/// `n` is NULL or a valid C string.
unsafe fn name<'a>(n: P) -> Result<&'a [u8], Errno> {
    if n.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: non-NULL, so a valid C string per the contract.
    Ok(unsafe { cbytes(n) })
}

/// The caller's output buffer of `z` bytes (`EFAULT` if NULL with a
/// non-zero size).
///
/// # Safety
/// `v` is NULL or points to `z` writable bytes.
unsafe fn out<'a>(v: *mut c_void, z: size_t) -> Result<&'a mut [u8], Errno> {
    if z == 0 {
        return Ok(&mut []);
    }
    if v.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: non-NULL, `z` writable bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(v.cast(), z) })
}

/// The caller's value of `z` bytes (`EFAULT` if NULL with a non-zero
/// size).
///
/// # Safety
/// `v` is NULL or points to `z` readable bytes.
unsafe fn value<'a>(v: *const c_void, z: size_t) -> Result<&'a [u8], Errno> {
    if z == 0 {
        return Ok(&[]);
    }
    if v.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: non-NULL, `z` readable bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts(v.cast(), z) })
}

fn at(follow: bool) -> c_int {
    if follow { 0 } else { AT_SYMLINK_NOFOLLOW }
}

/// getxattr and lgetxattr.
///
/// # Safety
/// As [`getxattr`].
unsafe fn get_path(p: P, n: P, v: *mut c_void, z: size_t, follow: bool) -> ssize_t {
    let kernel = |_, hp: P| {
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        unsafe {
            if follow {
                real!(getxattr: fn(P, P, *mut c_void, size_t) -> ssize_t)(hp, n, v, z)
            } else {
                real!(lgetxattr: fn(P, P, *mut c_void, size_t) -> ssize_t)(hp, n, v, z)
            }
        }
    };
    // SAFETY: the caller's path, name and buffer, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, p, -1, kernel, |s, d, up| {
            let (n, b) = (name(n)?, out(v, z)?);
            Ok(s.p().getxattrat(d, up, at(follow), n, b)? as ssize_t)
        })
    }
}

/// `getxattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string; `v` points to `z`
/// writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getxattr(p: P, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { get_path(p, n, v, z, true) }
}

/// `lgetxattr`.
///
/// # Safety
/// As [`getxattr`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lgetxattr(p: P, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { get_path(p, n, v, z, false) }
}

/// `fgetxattr`.
///
/// # Safety
/// `n` is NULL or a valid C string; `v` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fgetxattr(fd: c_int, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        || unsafe { real!(fgetxattr: fn(c_int, P, *mut c_void, size_t) -> ssize_t)(fd, n, v, z) },
        |s, u| {
            // SAFETY: the caller's name and buffer, valid per the contract.
            let (n, b) = unsafe { (name(n)?, out(v, z)?) };
            Ok(s.p().fgetxattr(u, n, b)? as ssize_t)
        },
    )
}

/// listxattr and llistxattr.
///
/// # Safety
/// As [`listxattr`].
unsafe fn list_path(p: P, l: *mut c_char, z: size_t, follow: bool) -> ssize_t {
    let kernel = |_, hp: P| {
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        unsafe {
            if follow {
                real!(listxattr: fn(P, *mut c_char, size_t) -> ssize_t)(hp, l, z)
            } else {
                real!(llistxattr: fn(P, *mut c_char, size_t) -> ssize_t)(hp, l, z)
            }
        }
    };
    // SAFETY: the caller's path and buffer, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, p, -1, kernel, |s, d, up| {
            let b = out(l.cast(), z)?;
            Ok(s.p().listxattrat(d, up, at(follow), b)? as ssize_t)
        })
    }
}

/// `listxattr`.
///
/// # Safety
/// `p` is NULL or a valid C string; `l` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn listxattr(p: P, l: *mut c_char, z: size_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { list_path(p, l, z, true) }
}

/// `llistxattr`.
///
/// # Safety
/// As [`listxattr`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn llistxattr(p: P, l: *mut c_char, z: size_t) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { list_path(p, l, z, false) }
}

/// `flistxattr`.
///
/// # Safety
/// `l` points to `z` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flistxattr(fd: c_int, l: *mut c_char, z: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        || unsafe { real!(flistxattr: fn(c_int, *mut c_char, size_t) -> ssize_t)(fd, l, z) },
        |s, u| {
            // SAFETY: the caller's buffer, valid per the contract.
            let b = unsafe { out(l.cast(), z)? };
            Ok(s.p().flistxattr(u, b)? as ssize_t)
        },
    )
}

/// setxattr and lsetxattr.
///
/// # Safety
/// As [`setxattr`].
unsafe fn set_path(p: P, n: P, v: *const c_void, z: size_t, f: c_int, follow: bool) -> c_int {
    let kernel = |_, hp: P| {
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        unsafe {
            if follow {
                real!(setxattr: fn(P, P, *const c_void, size_t, c_int) -> c_int)(hp, n, v, z, f)
            } else {
                real!(lsetxattr: fn(P, P, *const c_void, size_t, c_int) -> c_int)(hp, n, v, z, f)
            }
        }
    };
    // SAFETY: the caller's path, name and value, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, p, -1, kernel, |s, d, up| {
            let (n, val) = (name(n)?, value(v, z)?);
            s.p().setxattrat(d, up, at(follow), n, val, f)?;
            Ok(0)
        })
    }
}

/// `setxattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string; `v` points to `z`
/// readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn setxattr(p: P, n: P, v: *const c_void, z: size_t, f: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { set_path(p, n, v, z, f, true) }
}

/// `lsetxattr`.
///
/// # Safety
/// As [`setxattr`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lsetxattr(p: P, n: P, v: *const c_void, z: size_t, f: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { set_path(p, n, v, z, f, false) }
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
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        || unsafe {
            real!(fsetxattr: fn(c_int, P, *const c_void, size_t, c_int) -> c_int)(fd, n, v, z, f)
        },
        |s, u| {
            // SAFETY: the caller's name and value, valid per the contract.
            let (n, val) = unsafe { (name(n)?, value(v, z)?) };
            s.p().fsetxattr(u, n, val, f)?;
            Ok(0)
        },
    )
}

/// removexattr and lremovexattr.
///
/// # Safety
/// As [`removexattr`].
unsafe fn remove_path(p: P, n: P, follow: bool) -> c_int {
    let kernel = |_, hp: P| {
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        unsafe {
            if follow {
                real!(removexattr: fn(P, P) -> c_int)(hp, n)
            } else {
                real!(lremovexattr: fn(P, P) -> c_int)(hp, n)
            }
        }
    };
    // SAFETY: the caller's path and name, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, p, -1, kernel, |s, d, up| {
            s.p().removexattrat(d, up, at(follow), name(n)?)?;
            Ok(0)
        })
    }
}

/// `removexattr`.
///
/// # Safety
/// `p` and `n` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn removexattr(p: P, n: P) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { remove_path(p, n, true) }
}

/// `lremovexattr`.
///
/// # Safety
/// As [`removexattr`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lremovexattr(p: P, n: P) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { remove_path(p, n, false) }
}

/// `fremovexattr`.
///
/// # Safety
/// `n` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fremovexattr(fd: c_int, n: P) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments (the path as routed: the caller's, or
        // the host path it stands for), valid per the contract.
        || unsafe { real!(fremovexattr: fn(c_int, P) -> c_int)(fd, n) },
        |s, u| {
            // SAFETY: the caller's name, valid per the contract.
            s.p().fremovexattr(u, unsafe { name(n)? })?;
            Ok(0)
        },
    )
}
