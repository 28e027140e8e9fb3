//! The terminal calls on an fd: `isatty`, `ttyname`, `ttyname_r`,
//! `tcgetpgrp`, `tcsetpgrp`, `tcgetattr`, `tcsetattr`. glibc serves them
//! with its own internal `ioctl`s and `/proc` reads, which the shim does not
//! see, so on a uvfs fd, or on a number the placeholder cache holds (free
//! as far as the program knows), they would ask the kernel about
//! `/dev/null`: `ENOTTY` where Linux says `EBADF` for a closed fd (found by
//! CPython's `test_os`, `TestInvalidFD`). Here a uvfs fd answers `ENOTTY`
//! (a tmpfs file or directory is not a terminal), a cached number `EBADF`,
//! and a kernel fd goes to the next definition.

use crate::conv::set_errno;
use crate::interpose::real;
use crate::state::{FDMAP, Fd};
use libc::{c_char, c_int, pid_t, size_t, termios};

/// What a terminal call on `fd` gets when it is not the kernel's: the
/// errno, or `None` for a kernel fd.
fn not_kernel(fd: c_int) -> Option<c_int> {
    match FDMAP.get(fd) {
        Fd::Kernel => None,
        Fd::Stale => Some(libc::EBADF),
        Fd::Uvfs(_) => Some(libc::ENOTTY),
    }
}

/// `isatty`: 0 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn isatty(fd: c_int) -> c_int {
    match not_kernel(fd) {
        // SAFETY: the caller's argument, unchanged.
        None => unsafe { real!(isatty: fn(c_int) -> c_int)(fd) },
        Some(e) => {
            set_errno(e);
            0
        }
    }
}

/// `ttyname`: NULL with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's (the result is libc's static buffer).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ttyname(fd: c_int) -> *mut c_char {
    match not_kernel(fd) {
        // SAFETY: the caller's argument, unchanged.
        None => unsafe { real!(ttyname: fn(c_int) -> *mut c_char)(fd) },
        Some(e) => {
            set_errno(e);
            std::ptr::null_mut()
        }
    }
}

/// `ttyname_r`: the error number itself (its convention), on a uvfs fd or
/// a cached number.
///
/// # Safety
/// `buf` holds `len` writable bytes, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ttyname_r(fd: c_int, buf: *mut c_char, len: size_t) -> c_int {
    match not_kernel(fd) {
        // SAFETY: the caller's arguments, under its contract.
        None => unsafe { real!(ttyname_r: fn(c_int, *mut c_char, size_t) -> c_int)(fd, buf, len) },
        Some(e) => e,
    }
}

/// `tcgetpgrp`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcgetpgrp(fd: c_int) -> pid_t {
    match not_kernel(fd) {
        // SAFETY: the caller's argument, unchanged.
        None => unsafe { real!(tcgetpgrp: fn(c_int) -> pid_t)(fd) },
        Some(e) => {
            set_errno(e);
            -1
        }
    }
}

/// `tcsetpgrp`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// None beyond libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcsetpgrp(fd: c_int, pgrp: pid_t) -> c_int {
    match not_kernel(fd) {
        // SAFETY: the caller's arguments, unchanged.
        None => unsafe { real!(tcsetpgrp: fn(c_int, pid_t) -> c_int)(fd, pgrp) },
        Some(e) => {
            set_errno(e);
            -1
        }
    }
}

/// `tcgetattr`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// `t` is writable, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcgetattr(fd: c_int, t: *mut termios) -> c_int {
    match not_kernel(fd) {
        // SAFETY: the caller's arguments, under its contract.
        None => unsafe { real!(tcgetattr: fn(c_int, *mut termios) -> c_int)(fd, t) },
        Some(e) => {
            set_errno(e);
            -1
        }
    }
}

/// `tcsetattr`: -1 with `errno` set on a uvfs fd or a cached number.
///
/// # Safety
/// `t` is readable, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tcsetattr(fd: c_int, act: c_int, t: *const termios) -> c_int {
    match not_kernel(fd) {
        // SAFETY: the caller's arguments, under its contract.
        None => unsafe { real!(tcsetattr: fn(c_int, c_int, *const termios) -> c_int)(fd, act, t) },
        Some(e) => {
            set_errno(e);
            -1
        }
    }
}
