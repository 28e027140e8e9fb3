//! Names: `access` and friends, `mkdir`, `unlink`/`rmdir`, `rename`,
//! `link`, `symlink`, `readlink`, and `mkfifo`/`mknod`. A two-path call
//! with one path in uvfs and one in the kernel is `EXDEV`.

use crate::conv::{buf_mut, cbytes};
use crate::dispatch::{at_call, path_call, path2_call};
use crate::interpose::{forward, real};
use libc::{c_char, c_int, c_uint, mode_t, size_t, ssize_t};
use uvfs::Errno;
use uvfs::uapi::AT_FDCWD;

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

/// `renameat2` (and, with no flags, `renameat` on the kernel side).
///
/// # Safety
/// `p1` and `p2` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn renameat2(
    d1: c_int,
    p1: *const c_char,
    d2: c_int,
    p2: *const c_char,
    flags: c_uint,
) -> c_int {
    let kernel = |a: c_int, b: *const c_char, c: c_int, d: *const c_char| {
        // SAFETY: the caller's paths (or them made absolute, alive for
        // the call).
        unsafe {
            if flags == 0 {
                real!(renameat: fn(c_int, *const c_char, c_int, *const c_char) -> c_int)(a, b, c, d)
            } else {
                real!(renameat2: fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int)(
                    a, b, c, d, flags,
                )
            }
        }
    };
    // SAFETY: the caller's paths, valid per the contract.
    unsafe {
        path2_call(d1, p1, d2, p2, kernel, |p, a, b, c, d| {
            p.renameat2(a, b, c, d, flags)
        })
    }
}

forward! {
    renameat(d1: c_int, p1: *const c_char, d2: c_int, p2: *const c_char) -> c_int =
        renameat2(d1, p1, d2, p2, 0);
    rename(p1: *const c_char, p2: *const c_char) -> c_int =
        renameat2(AT_FDCWD, p1, AT_FDCWD, p2, 0);
}

/// `linkat`.
///
/// # Safety
/// `p1` and `p2` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn linkat(
    d1: c_int,
    p1: *const c_char,
    d2: c_int,
    p2: *const c_char,
    flags: c_int,
) -> c_int {
    let kernel = |a: c_int, b: *const c_char, c: c_int, d: *const c_char| {
        // SAFETY: the caller's paths (or them made absolute, alive for
        // the call).
        unsafe {
            real!(linkat: fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int)(
                a, b, c, d, flags,
            )
        }
    };
    // SAFETY: the caller's paths, valid per the contract.
    unsafe {
        path2_call(d1, p1, d2, p2, kernel, |p, a, b, c, d| {
            p.linkat(a, b, c, d, flags)
        })
    }
}

forward! {
    link(p1: *const c_char, p2: *const c_char) -> c_int = linkat(AT_FDCWD, p1, AT_FDCWD, p2, 0);
}

/// `symlinkat`: the link is made where `path` routes; the target is
/// stored as given.
///
/// # Safety
/// `target` and `path` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn symlinkat(
    target: *const c_char,
    dirfd: c_int,
    path: *const c_char,
) -> c_int {
    if target.is_null() {
        // SAFETY: the caller's arguments, unchanged (the kernel reports the
        // NULL target).
        return unsafe {
            real!(symlinkat: fn(*const c_char, c_int, *const c_char) -> c_int)(target, dirfd, path)
        };
    }
    let kernel = |d: c_int, p: *const c_char| {
        // SAFETY: the caller's target and path (or it made absolute,
        // alive for the call).
        unsafe { real!(symlinkat: fn(*const c_char, c_int, *const c_char) -> c_int)(target, d, p) }
    };
    // SAFETY: the caller's strings, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |s, d, p| {
            s.p().symlinkat(cbytes(target), d, p).map(|()| 0)
        })
    }
}

forward! {
    symlink(target: *const c_char, path: *const c_char) -> c_int =
        symlinkat(target, AT_FDCWD, path);
}

/// `readlinkat`.
///
/// # Safety
/// `path` is NULL or a valid C string; `buf` points to `n` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readlinkat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    n: size_t,
) -> ssize_t {
    let kernel = |d: c_int, p: *const c_char| {
        // SAFETY: the caller's buffer and path (or it made absolute,
        // alive for the call).
        unsafe {
            real!(readlinkat: fn(c_int, *const c_char, *mut c_char, size_t) -> ssize_t)(
                d, p, buf, n,
            )
        }
    };
    // SAFETY: the caller's path and buffer, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |s, d, p| {
            if n == 0 || n > isize::MAX as usize {
                return Err(Errno::EINVAL);
            }
            let b = buf_mut(buf.cast(), n)?;
            Ok(s.p().readlinkat(d, p, b)? as ssize_t)
        })
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

// Special files: FIFOs, sockets and device nodes are uvfs's (a FIFO under
// the prefix is a uvfs pipe, shared by the threads of this process).
at_call! { mknodat(mode: mode_t, dev: libc::dev_t); }
at_call! { mkfifoat(mode: mode_t); }

forward! {
    mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int =
        mknodat(AT_FDCWD, path, mode, dev);
    mkfifo(path: *const c_char, mode: mode_t) -> c_int = mkfifoat(AT_FDCWD, path, mode);
}

// The pre-2.33 `__xmknod` ABI (version 0 on x86-64), still called by older
// binaries.
forward! {
    __xmknod(_ver: c_int, path: *const c_char, mode: mode_t, dev: *const libc::dev_t) -> c_int =
        mknod(path, mode, if dev.is_null() { 0 } else { *dev });
    __xmknodat(
        _ver: c_int,
        d: c_int,
        path: *const c_char,
        mode: mode_t,
        dev: *const libc::dev_t,
    ) -> c_int =
        mknodat(d, path, mode, if dev.is_null() { 0 } else { *dev });
}
