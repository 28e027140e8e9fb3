//! The calls that make a child: `fork`, `vfork` and `system` (the others,
//! `posix_spawn`, `popen` and the `exec` family, are interposed for other
//! reasons and make the same call first). Before the first of them the
//! process gets a server for its tree (`namespace`), so the child and the
//! parent share one uvfs. And the calls that end a process without its
//! exit handlers, `_exit` and `_Exit`: the process that owns `UVFS_DUMP`
//! dumps first.

use crate::interpose::real;
use crate::namespace::before_child;
use libc::{c_char, c_int, pid_t};

/// `fork`.
///
/// # Safety
/// The C contract of `fork`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fork() -> pid_t {
    before_child("fork");
    // SAFETY: no arguments; the next definition.
    unsafe { real!(fork: fn() -> pid_t)() }
}

/// `vfork`, made a `fork`: a function cannot hand a `vfork` child back to
/// its caller (the child would return through, and overwrite, the
/// parent's stack frame), and a correct `vfork` child only execs or
/// `_exit`s, which a forked child does the same.
///
/// # Safety
/// The C contract of `vfork`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vfork() -> pid_t {
    before_child("vfork");
    // SAFETY: no arguments; the next definition of `fork`.
    unsafe { real!(fork: fn() -> pid_t)() }
}

/// `system`.
///
/// # Safety
/// The C contract of `system`: `cmd` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn system(cmd: *const c_char) -> c_int {
    if !cmd.is_null() {
        before_child("system");
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { real!(system: fn(*const c_char) -> c_int)(cmd) }
}

/// `_exit`: the `UVFS_DUMP` owner's dump (as its atexit handler would
/// have made it), then the next definition.
///
/// # Safety
/// The C contract of `_exit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    crate::seed::at_underscore_exit();
    // SAFETY: the caller's status; the next definition, which never returns.
    unsafe { real!(_exit: fn(c_int) -> !)(status) }
}

/// `_Exit`: as `_exit`.
///
/// # Safety
/// The C contract of `_Exit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    crate::seed::at_underscore_exit();
    // SAFETY: as in `_exit`.
    unsafe { real!(_Exit: fn(c_int) -> !)(status) }
}
