//! Attributes: modes (`chmod` family), owners (`chown` family), times
//! (`utimensat`, `futimens`, `utimes`, `lutimes`, `futimes`, `utime`) and
//! the umask.

use crate::conv::{set_errno, times_of, tv_to_ts};
use crate::dispatch::{at_call, fd_call, is_uvfs, is_uvfs_path, path_call, with_kernel_path};
use crate::guard::{busy, run};
use crate::interpose::{forward, real};
use crate::path::prefix;
use crate::state::with_state;
use libc::{c_char, c_int, gid_t, mode_t, uid_t};
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

at_call! { fchmodat(mode: mode_t, flags: c_int); }

forward! {
    chmod(path: *const c_char, mode: mode_t) -> c_int = fchmodat(AT_FDCWD, path, mode, 0);
    lchmod(path: *const c_char, mode: mode_t) -> c_int =
        fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW);
}

/// `fchmod`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchmod(fd: c_int, mode: mode_t) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(fchmod: fn(c_int, mode_t) -> c_int)(fd, mode) },
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

/// `fchown`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchown(fd: c_int, uid: uid_t, gid: gid_t) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(fchown: fn(c_int, uid_t, gid_t) -> c_int)(fd, uid, gid) },
        |s, u| s.p().fchown(u, uid, gid).map(|()| 0),
    )
}

/// `utimensat` (a NULL path, Linux's extension, is `futimens(dirfd)`).
///
/// # Safety
/// `path` is NULL or a valid C string; `t` is NULL or points to two
/// `struct timespec`s.
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
            // SAFETY: the caller's times, valid per the contract.
            return unsafe { futimens(dirfd, t) };
        }
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe {
            real!(utimensat: fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)(
                dirfd, path, t, flags,
            )
        };
    }
    let kernel = |d: c_int, p: *const c_char| {
        // SAFETY: the caller's times and path (or it made absolute,
        // alive for the call).
        unsafe {
            real!(utimensat: fn(c_int, *const c_char, *const libc::timespec, c_int) -> c_int)(
                d, p, t, flags,
            )
        }
    };
    // SAFETY: the caller's path and times, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |s, d, p| {
            s.p().utimensat(d, p, times_of(t), flags).map(|()| 0)
        })
    }
}

/// `futimens`.
///
/// # Safety
/// `t` is NULL or points to two `struct timespec`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn futimens(fd: c_int, t: *const libc::timespec) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's times, valid per the contract.
        || unsafe { real!(futimens: fn(c_int, *const libc::timespec) -> c_int)(fd, t) },
        // SAFETY: the caller's times.
        |s, u| s.p().futimens(u, unsafe { times_of(t) }).map(|()| 0),
    )
}

/// The timeval calls: on uvfs (`path`, or with a NULL path the fd `d`),
/// the times converted and `utimensat`/`futimens`; else `real_fn`, the
/// next definition with the caller's other arguments, given the path (the
/// caller's, or the host path it stands for).
///
/// # Safety
/// `path` is NULL or a valid C string; `tv` is NULL or points to two
/// `struct timeval`s.
unsafe fn do_utimes(
    d: c_int,
    path: *const c_char,
    tv: *const libc::timeval,
    flags: c_int,
    real_fn: impl FnOnce(*const c_char) -> c_int,
) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    let uv = path.is_null() && is_uvfs(d) || unsafe { is_uvfs_path(path) };
    if !uv {
        // SAFETY: as above.
        return unsafe { with_kernel_path(path, real_fn) };
    }
    // SAFETY: the caller's timevals, valid per the contract.
    match unsafe { tv_to_ts(tv) } {
        Err(()) => {
            set_errno(libc::EINVAL);
            -1
        }
        Ok(ts) => {
            let tp = ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
            // SAFETY: the caller's path; `tp` is NULL or two timespecs
            // alive for the call.
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

/// `utimes`.
///
/// # Safety
/// `path` is NULL or a valid C string; `tv` is NULL or points to two
/// `struct timeval`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn utimes(path: *const c_char, tv: *const libc::timeval) -> c_int {
    let real_fn = |p: *const c_char| {
        // SAFETY: the caller's times, and its path or the host path it
        // stands for (a C string alive for the call).
        unsafe { real!(utimes: fn(*const c_char, *const libc::timeval) -> c_int)(p, tv) }
    };
    // SAFETY: the caller's arguments, valid per the contract.
    unsafe { do_utimes(AT_FDCWD, path, tv, 0, real_fn) }
}

/// `lutimes`.
///
/// # Safety
/// `path` is NULL or a valid C string; `tv` is NULL or points to two
/// `struct timeval`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lutimes(path: *const c_char, tv: *const libc::timeval) -> c_int {
    let real_fn = |p: *const c_char| {
        // SAFETY: the caller's times, and its path or the host path it
        // stands for (a C string alive for the call).
        unsafe { real!(lutimes: fn(*const c_char, *const libc::timeval) -> c_int)(p, tv) }
    };
    // SAFETY: the caller's arguments, valid per the contract.
    unsafe { do_utimes(AT_FDCWD, path, tv, AT_SYMLINK_NOFOLLOW, real_fn) }
}

/// `futimes`.
///
/// # Safety
/// `tv` is NULL or points to two `struct timeval`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn futimes(fd: c_int, tv: *const libc::timeval) -> c_int {
    let real_fn = |_: *const c_char| {
        // SAFETY: the caller's arguments, unchanged.
        unsafe { real!(futimes: fn(c_int, *const libc::timeval) -> c_int)(fd, tv) }
    };
    // SAFETY: the caller's arguments, valid per the contract.
    unsafe { do_utimes(fd, std::ptr::null(), tv, 0, real_fn) }
}

/// `futimesat`: glibc's makes the syscall itself; the times converted and
/// the shim's `utimensat` (a NULL path: the fd itself, as Linux does).
///
/// # Safety
/// `path` is NULL or a valid C string; `tv` is NULL or points to two
/// `struct timeval`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn futimesat(
    d: c_int,
    path: *const c_char,
    tv: *const libc::timeval,
) -> c_int {
    if path.is_null() {
        // SAFETY: the caller's times, valid per the contract.
        return unsafe { futimes(d, tv) };
    }
    // SAFETY: the caller's timevals, valid per the contract.
    match unsafe { tv_to_ts(tv) } {
        Err(()) => {
            set_errno(libc::EINVAL);
            -1
        }
        Ok(ts) => {
            let tp = ts.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
            // SAFETY: the caller's dirfd and path; `tp` is NULL or two
            // timespecs alive for the call.
            unsafe { utimensat(d, path, tp, 0) }
        }
    }
}

/// `utime`.
///
/// # Safety
/// `path` is NULL or a valid C string; `t` is NULL or points to a
/// `struct utimbuf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn utime(path: *const c_char, t: *const libc::utimbuf) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if !unsafe { is_uvfs_path(path) } {
        // SAFETY: the caller's times, and its path or the host path it
        // stands for (a C string alive for the call).
        return unsafe {
            with_kernel_path(path, |p| {
                real!(utime: fn(*const c_char, *const libc::utimbuf) -> c_int)(p, t)
            })
        };
    }
    let ts = if t.is_null() {
        None
    } else {
        // SAFETY: non-NULL, so the caller's utimbuf per the contract.
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
    // SAFETY: the caller's path; `tp` is NULL or two timespecs alive for
    // the call.
    unsafe { utimensat(AT_FDCWD, path, tp, 0) }
}

/// `umask`: the kernel's, and uvfs's when it was built (a uvfs built later
/// reads the kernel's).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn umask(mask: mode_t) -> mode_t {
    // SAFETY: no pointers; any mask is a valid argument.
    let old = unsafe { real!(umask: fn(mode_t) -> mode_t)(mask) };
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
