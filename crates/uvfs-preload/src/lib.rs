//! `libuvfs_preload.so`: an `LD_PRELOAD` library that serves one path prefix
//! (`UVFS_PREFIX`, default `/uvfs`) from an in-process uvfs (a tmpfs root,
//! the prefix standing for its `/`), and passes every other call to the next
//! definition (`dlsym(RTLD_NEXT, …)`, resolved once) unchanged.
//!
//! - [`state`] — the prefix, the lock, the fd map and placeholders, routing;
//! - [`hooks`] — the interposed syscall wrappers (open … fcntl, the stat
//!   family, names, attributes, fd calls);
//! - [`dirs`] — `DIR` streams over `getdents64` for uvfs directories;
//! - [`stdio`] — `fopen` and friends (`fopencookie` streams);
//! - [`extra`] — `mkstemp`/`mkdtemp`, `realpath`, xattrs, `statfs`,
//!   `sendfile`/`copy_file_range`;
//! - [`kfds`] — kernel fds made or closed by calls otherwise passed through
//!   (`pipe`, `socket`, `fclose`, …), seen only to keep fd numbers exact;
//! - [`seed`] — `UVFS_SEED` (a host directory copied in when uvfs is built)
//!   and `UVFS_DUMP` (the uvfs tree copied out when the process exits).
//!
//! Safety rules: the shim's own kernel calls go through rustix (raw
//! syscalls, never libc's interposable wrappers); a thread-local guard sends
//! any call made while the shim is already working on this thread straight
//! to libc; every uvfs call runs under `catch_unwind` (a panic becomes
//! `EIO`); errno is set through `__errno_location`.
#![deny(unsafe_op_in_unsafe_fn)]

mod dirs;
mod extra;
mod hooks;
mod kfds;
mod seed;
mod state;
mod stdio;

use std::cell::Cell;
use std::ffi::{CStr, c_char};
use uvfs::Errno;

/// The library constructor, run by the dynamic loader before `main` and
/// before the program can start a thread: everything the shim initializes
/// once is initialized here. A one-time initialization a thread was in the
/// middle of when another thread called `fork` would stay "running" forever
/// in the child (found by the fork test: a child hung in the prefix's
/// `OnceLock`, which a thread of the parent was filling).
extern "C" fn init() {
    state::at_load();
    seed::register_dump();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

std::thread_local! {
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is already inside the shim (a nested call must go to
/// libc unchanged).
#[inline]
pub(crate) fn busy() -> bool {
    BUSY.with(|b| b.get())
}

/// Sets the C `errno`.
#[inline]
pub(crate) fn set_errno(e: i32) {
    // SAFETY: `__errno_location` returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

/// A rustix error as a uvfs `Errno`.
pub(crate) fn errno_of(e: rustix::io::Errno) -> Errno {
    Errno::from_raw(e.raw_os_error())
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

/// The bytes of a C string (empty for NULL; callers check NULL first where
/// the kernel would say `EFAULT`).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string alive for `'a`.
pub(crate) unsafe fn cbytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return b"";
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// Writes a message to stderr with a raw syscall and aborts: a libc symbol
/// the program uses is missing from the next object, which cannot happen
/// with a working libc.
pub(crate) fn missing(name: &str) -> ! {
    let msg = format!("uvfs-preload: no next definition of {name}\n");
    let _ = rustix::io::write(rustix::stdio::stderr(), msg.as_bytes());
    std::process::abort()
}

/// `real!(name: fn(T, …) -> R)`: the next definition of `name`
/// (`dlsym(RTLD_NEXT)`), resolved on first use and cached.
macro_rules! real {
    ($name:ident : fn($($t:ty),* $(,)?) -> $r:ty) => {{
        static P: ::std::sync::atomic::AtomicUsize = ::std::sync::atomic::AtomicUsize::new(0);
        let mut p = P.load(::std::sync::atomic::Ordering::Relaxed);
        if p == 0 {
            #[allow(unused_unsafe)]
            // SAFETY: a NUL-terminated symbol name; RTLD_NEXT is valid from
            // a shared object.
            let q = unsafe {
                ::libc::dlsym(
                    ::libc::RTLD_NEXT,
                    concat!(stringify!($name), "\0").as_ptr().cast(),
                )
            };
            p = q as usize;
            if p == 0 {
                $crate::missing(stringify!($name));
            }
            P.store(p, ::std::sync::atomic::Ordering::Relaxed);
        }
        #[allow(unused_unsafe)]
        // SAFETY: `p` is the address of libc's `$name`, whose C signature is
        // the one written here. The pointer is typed as a safe fn because
        // `real!` only ever forwards the arguments of the interposed C call
        // (or values the shim made valid): calling it is exactly what the C
        // caller asked for, under the C caller's own contract.
        let f = unsafe { ::std::mem::transmute::<usize, extern "C" fn($($t),*) -> $r>(p) };
        f
    }};
}
pub(crate) use real;

/// `forward! { name(arg: T, …) -> R = expr; }`: an interposed C function
/// that only hands its arguments to another of the shim's implementations
/// (`stat64` to `do_fstatat`, `creat64` to `creat`, `__fxstat` to `fstat`).
macro_rules! forward {
    ($($name:ident($($a:ident: $t:ty),* $(,)?) -> $r:ty = $e:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            #[allow(unused_unsafe)]
            // SAFETY: the C caller's arguments, forwarded under the contract
            // the caller already meets for this call.
            unsafe { $e }
        }
    )*};
}
pub(crate) use forward;
