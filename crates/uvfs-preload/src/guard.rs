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
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
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

/// The owner thread's thread pointer (`uvfs::task_work::thread_pointer`;
/// 0: none), and its block. The owner (see `state`) reaches its block
/// through these, with no thread-local lookup (in a shared object each is
/// a `__tls_get_addr` call); every other thread, and every thread while
/// `UVFS_OWNER_TP=0`, through the thread-local. Only the owner itself can
/// match its thread pointer, so relaxed order is enough: it stored both
/// itself, block first ([`set_owner`]); the value is cleared before the
/// owner exits (a later thread may reuse its thread block, and with it the
/// pointer) and in a `fork` child made by another thread.
static OWNER_TP: AtomicUsize = AtomicUsize::new(0);
static OWNER_LOCAL: AtomicPtr<Local> = AtomicPtr::new(std::ptr::null_mut());

/// This thread's block.
#[inline(always)]
pub(crate) fn local() -> &'static Local {
    let tp = OWNER_TP.load(Ordering::Relaxed);
    if tp != 0 && tp == uvfs::task_work::thread_pointer() {
        // SAFETY: the owner's own block (see `OWNER_TP`): stored by this
        // very thread, whose thread-local it is and which is running.
        return unsafe { &*OWNER_LOCAL.load(Ordering::Relaxed) };
    }
    local_tls()
}

/// This thread's block, through the thread-local.
#[inline]
fn local_tls() -> &'static Local {
    // SAFETY: a thread-local without a destructor lives as long as its
    // thread, and a `&Local` cannot leave it (`Local` is not `Sync`).
    LOCAL.with(|l| unsafe { &*std::ptr::from_ref(l) })
}

/// Whether the owner reaches its state by its thread pointer
/// (`UVFS_OWNER_TP`, read at load: `0` turns the fast path off, for A/B
/// runs; on by default).
static OWNER_TP_ON: AtomicBool = AtomicBool::new(true);

/// Reads `UVFS_OWNER_TP` (from the library constructor).
pub(crate) fn at_load() {
    if std::env::var_os("UVFS_OWNER_TP").is_some_and(|v| v == "0") {
        OWNER_TP_ON.store(false, Ordering::Relaxed);
    }
}

/// Makes the calling thread, the owner, reach its block and the library's
/// deferred-work queue by its thread pointer (if `UVFS_OWNER_TP` allows and
/// the target has one). Called once, inside the owner's call that built
/// the uvfs process, outside any library call.
pub(crate) fn set_owner() {
    if !OWNER_TP_ON.load(Ordering::Relaxed) {
        return;
    }
    let tp = uvfs::task_work::thread_pointer();
    if tp == 0 {
        return;
    }
    OWNER_LOCAL.store(
        std::ptr::from_ref(local_tls()).cast_mut(),
        Ordering::Relaxed,
    );
    OWNER_TP.store(tp, Ordering::Relaxed);
    // SAFETY: outside any library call (the caller's contract); the only
    // thread ever named is the owner, named once, and given up by
    // `forget_owner` before it exits and in a fork child of another thread.
    unsafe { uvfs::task_work::set_fast_thread(true) };
}

/// Gives the owner's thread-pointer paths up: at the owner's exit (from its
/// thread-local destructor, outside any call), and in a `fork` child whose
/// forking thread is not the owner (`only_if_not_me`: the owner does not
/// exist there, and a later thread could get its thread block).
pub(crate) fn forget_owner(only_if_not_me: bool) {
    let tp = OWNER_TP.load(Ordering::Relaxed);
    if tp == 0 || (only_if_not_me && tp == uvfs::task_work::thread_pointer()) {
        return;
    }
    OWNER_TP.store(0, Ordering::Relaxed);
    // SAFETY: the owner (the named thread) is outside every call: it is
    // exiting, between calls, or absent (a fork child, made while no
    // thread was inside uvfs: the fork gate).
    unsafe { uvfs::task_work::set_fast_thread(false) };
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
    // The value goes to `out` and the unwinder's slot holds only an `i64`
    // (`OK` or the error number): a `Result<T, Errno>` through that slot was
    // written as a narrow tag and read back as a wider word, a store the
    // load could not be forwarded from (a stall on every call).
    let mut out = std::mem::MaybeUninit::<T>::uninit();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match f() {
        Ok(v) => {
            out.write(v);
            OK
        }
        Err(e) => i64::from(e.raw()),
    }));
    l.busy.set(was);
    match r {
        // SAFETY: `OK` is returned only after `out` was written.
        Ok(OK) => unsafe { out.assume_init() },
        Ok(e) => {
            set_errno(e as i32);
            fail
        }
        Err(_) => {
            set_errno(libc::EIO);
            fail
        }
    }
}

/// [`run_in`]'s mark of a value written (no `i32` error number is this).
const OK: i64 = i64::MIN;
