//! The calls that make a child: `fork`, `vfork`, `clone` and `system` (the others,
//! `posix_spawn`, `popen` and the `exec` family, are interposed for other
//! reasons and make the same call first). Before the first of them the
//! process gets a server for its tree (`namespace`), so the child and the
//! parent share one uvfs. `pthread_create`, which may move the process
//! to a mount namespace of its own for that first child. And the calls that end a process without its
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

/// `pthread_create`: a process that may become its tree's first moves to
/// a mount namespace of its own while it still has one thread
/// ([`crate::namespace::before_thread`]), so that its first child can start
/// the tree whatever threads it has by then.
///
/// # Safety
/// The C contract of `pthread_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
) -> c_int {
    crate::namespace::before_thread();
    // SAFETY: the caller's arguments, unchanged, to the next definition.
    unsafe {
        real!(pthread_create: fn(
            *mut libc::pthread_t,
            *const libc::pthread_attr_t,
            extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
            *mut libc::c_void,
        ) -> c_int)(thread, attr, start, arg)
    }
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

/// `clone` (glibc's wrapper: `clone(fn, stack, flags, arg, …)`): one
/// without `CLONE_VM` makes a process, so the tree gets its server first.
/// The three optional arguments (`parent_tid`, `tls`, `child_tid`) are
/// taken as fixed ones and passed on unchanged: in the x86-64 and aarch64
/// conventions they travel where fixed ones do, and the callee reads them
/// only when `flags` says they exist.
///
/// # Safety
/// The C contract of `clone`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clone(
    f: Option<unsafe extern "C" fn(*mut libc::c_void) -> c_int>,
    stack: *mut libc::c_void,
    flags: c_int,
    arg: *mut libc::c_void,
    parent_tid: *mut pid_t,
    tls: *mut libc::c_void,
    child_tid: *mut pid_t,
) -> c_int {
    if flags & libc::CLONE_VM == 0 {
        before_child("clone");
    }
    // SAFETY: the caller's arguments, unchanged, to the next definition.
    unsafe {
        real!(clone: fn(
            Option<unsafe extern "C" fn(*mut libc::c_void) -> c_int>,
            *mut libc::c_void,
            c_int,
            *mut libc::c_void,
            *mut pid_t,
            *mut libc::c_void,
            *mut pid_t,
        ) -> c_int)(f, stack, flags, arg, parent_tid, tls, child_tid)
    }
}
