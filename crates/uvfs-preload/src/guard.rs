//! The re-entry guard and the frame every uvfs call runs in: a thread-local
//! flag sends any call made while the shim is already working on this
//! thread (std's own libc calls, seeding, glibc calling back) straight to
//! the next definition; [`run`] sets it, catches a panic (`EIO`) and turns
//! an error into `-1` and errno.
//!
//! The flag shares one thread-local block ([`Local`]) with the pointer to
//! the thread's state, so an fd call on a uvfs fd finds both with one
//! thread-local lookup (in a shared object, a `__tls_get_addr` call each).

use crate::conv::set_errno;
use std::cell::Cell;
use uvfs::Errno;

/// This thread's guard flag and state. No destructor (the state, which has
/// one, is owned elsewhere: `state::with_state_in`), so the block stays
/// usable while the thread's other thread-locals are destroyed.
pub(crate) struct Local {
    busy: Cell<bool>,
    /// This thread's state, a `state::State` that `state.rs` owns and
    /// reads through this pointer (null before the thread's first call, and
    /// once destroyed). Untyped here so that the guard, which every module
    /// uses, does not depend on the state module, which uses the guard.
    pub(crate) state: Cell<*mut ()>,
}

std::thread_local! {
    static LOCAL: Local = const {
        Local {
            busy: Cell::new(false),
            state: Cell::new(std::ptr::null_mut()),
        }
    };
}

/// This thread's block.
#[inline]
pub(crate) fn local() -> &'static Local {
    // SAFETY: a thread-local without a destructor lives as long as its
    // thread, and a `&Local` cannot leave it (`Local` is not `Sync`).
    LOCAL.with(|l| unsafe { &*std::ptr::from_ref(l) })
}

impl Local {
    /// Whether this thread is already inside the shim.
    #[inline]
    pub(crate) fn busy(&self) -> bool {
        self.busy.get()
    }
}

/// Whether this thread is already inside the shim (a nested call must go to
/// libc unchanged).
#[inline]
pub(crate) fn busy() -> bool {
    local().busy.get()
}

/// Marks this thread as inside the shim until dropped (nests: restores the
/// previous value).
pub(crate) struct Busy(bool);

impl Busy {
    pub(crate) fn enter() -> Busy {
        Busy(local().busy.replace(true))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        local().busy.set(self.0);
    }
}

/// Runs the shim's side of a call: the guard set, a panic caught (`EIO`),
/// an error turned into `-1` and errno.
#[inline]
pub(crate) fn run<T>(fail: T, f: impl FnOnce() -> Result<T, Errno>) -> T {
    run_in(local(), fail, f)
}

/// [`run`] with this thread's block `l` already looked up.
#[inline]
pub(crate) fn run_in<T>(l: &Local, fail: T, f: impl FnOnce() -> Result<T, Errno>) -> T {
    let was = l.busy.replace(true);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    l.busy.set(was);
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
