//! The re-entry guard and the frame every uvfs call runs in: a thread-local
//! flag sends any call made while the shim is already working on this
//! thread (std's own libc calls, seeding, glibc calling back) straight to
//! the next definition; [`run`] sets it, catches a panic (`EIO`) and turns
//! an error into `-1` and errno.

use crate::conv::set_errno;
use std::cell::Cell;
use uvfs::Errno;

std::thread_local! {
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is already inside the shim (a nested call must go to
/// libc unchanged).
#[inline]
pub(crate) fn busy() -> bool {
    BUSY.with(|b| b.get())
}

/// Marks this thread as inside the shim until dropped (nests: restores the
/// previous value).
pub(crate) struct Busy(bool);

impl Busy {
    pub(crate) fn enter() -> Busy {
        Busy(BUSY.with(|b| b.replace(true)))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.with(|b| b.set(self.0));
    }
}

/// Runs the shim's side of a call: the guard set, a panic caught (`EIO`),
/// an error turned into `-1` and errno.
pub(crate) fn run<T>(fail: T, f: impl FnOnce() -> Result<T, Errno>) -> T {
    // One thread-local lookup (a `__tls_get_addr` call in a shared object)
    // for both setting and restoring the guard.
    let r = BUSY.with(|b| {
        let was = b.replace(true);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        b.set(was);
        r
    });
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_errno(e.raw());
            fail
        }
        Err(_) => {
            set_errno(libc::EIO);
            fail
        }
    }
}

/// As [`run`], for the calls that return an error number instead of setting
/// errno (`posix_fallocate`, `posix_fadvise`).
pub(crate) fn run_rc(f: impl FnOnce() -> Result<(), Errno>) -> i32 {
    let _b = Busy::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => e.raw(),
        Err(_) => libc::EIO,
    }
}
