//! The terminal calls on an fd: `isatty`, `ttyname`, `ttyname_r`,
//! `tcgetpgrp`, `tcsetpgrp`, `tcgetattr`, `tcsetattr`. glibc serves them
//! with its own internal `ioctl`s and `/proc` reads, which the shim does not
//! see, so on a uvfs fd, or on a number the placeholder cache holds (free
//! as far as the program knows), they would ask the kernel about
//! `/dev/null`: `ENOTTY` where Linux says `EBADF` for a closed fd (found by
//! CPython's `test_os`, `TestInvalidFD`). Here a uvfs fd answers `ENOTTY`
//! (a tmpfs file or directory is not a terminal), a cached number `EBADF`,
//! and a kernel fd goes to the next definition.

use crate::dispatch::fd_call;
use crate::interpose::real;
use crate::state::{FDMAP, Fd};
use libc::{c_char, c_int, pid_t, size_t, termios};
use uvfs::Errno;

/// `isatty`: 0 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn isatty(fd: c_int) -> c_int {
    fd_call(
        fd,
        0,
        // SAFETY: the caller's argument, unchanged.
        || unsafe { real!(isatty: fn(c_int) -> c_int)(fd) },
        |_, _| Err(Errno::ENOTTY),
    )
}

/// `ttyname`: NULL with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's (the result is libc's static buffer).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ttyname(fd: c_int) -> *mut c_char {
    fd_call(
        fd,
        std::ptr::null_mut(),
        // SAFETY: the caller's argument, unchanged.
        || unsafe { real!(ttyname: fn(c_int) -> *mut c_char)(fd) },
        |_, _| Err(Errno::ENOTTY),
    )
}

/// `ttyname_r`: the error number itself (its convention), on a uvfs fd or
/// a cached number.
///
/// # Safety
/// `buf` holds `len` writable bytes, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ttyname_r(fd: c_int, buf: *mut c_char, len: size_t) -> c_int {
    // Its error is the result, not errno: `fd_call`'s convention does not
    // fit, so the fd map is asked directly, with `fd_call`'s answers.
    match FDMAP.get(fd) {
        Fd::Stale => libc::EBADF,
        Fd::Uvfs(_) => libc::ENOTTY,
        // SAFETY: the caller's arguments, under its contract.
        Fd::Kernel => unsafe {
            real!(ttyname_r: fn(c_int, *mut c_char, size_t) -> c_int)(fd, buf, len)
        },
    }
}

/// `tcgetpgrp`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcgetpgrp(fd: c_int) -> pid_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's argument, unchanged.
        || unsafe { real!(tcgetpgrp: fn(c_int) -> pid_t)(fd) },
        |_, _| Err(Errno::ENOTTY),
    )
}

/// `tcsetpgrp`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcsetpgrp(fd: c_int, pgrp: pid_t) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments, unchanged.
        || unsafe { real!(tcsetpgrp: fn(c_int, pid_t) -> c_int)(fd, pgrp) },
        |_, _| Err(Errno::ENOTTY),
    )
}

/// `tcgetattr`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// `t` is writable, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcgetattr(fd: c_int, t: *mut termios) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments, under its contract.
        || unsafe { real!(tcgetattr: fn(c_int, *mut termios) -> c_int)(fd, t) },
        |_, _| Err(Errno::ENOTTY),
    )
}

/// `tcsetattr`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// `t` is readable, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcsetattr(fd: c_int, act: c_int, t: *const termios) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments, under its contract.
        || unsafe { real!(tcsetattr: fn(c_int, c_int, *const termios) -> c_int)(fd, act, t) },
        |_, _| Err(Errno::ENOTTY),
    )
}
