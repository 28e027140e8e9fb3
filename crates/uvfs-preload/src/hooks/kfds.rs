//! Kernel fds made or closed by calls the shim otherwise passes through
//! untouched: `pipe`, `socket`, `accept`, `eventfd`, `epoll_create`,
//! `memfd_create`, `popen`, … and `fclose`/`pclose`. They are
//! interposed only to keep the placeholder cache from changing fd numbers
//! (see `state`, "Numbering"): a call that makes an fd first flushes the
//! cache, one that closes one records the freed number. Each costs one
//! atomic load when the cache is empty.

use crate::interpose::real;
use crate::state::{FDMAP, Fd, before_kernel_fd, hole_lower};
use libc::{FILE, c_char, c_int, c_uint, sigset_t, sockaddr, socklen_t};

/// `maker!(name(arg: T, …) -> R)`: an interposed libc function that makes a
/// kernel fd: the cache flushed, then the next definition called unchanged.
macro_rules! maker {
    ($($name:ident($($a:ident: $t:ty),* $(,)?) -> $r:ty;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`, after the placeholder cache is flushed.")]
        ///
        /// # Safety
        /// The C contract of the libc function of this name: the pointers
        /// are valid for what it reads and writes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            before_kernel_fd();
            // SAFETY: the caller's arguments, unchanged, valid per the
            // contract.
            unsafe { real!($name: fn($($t),*) -> $r)($($a),*) }
        }
    )*};
}

maker! {
    pipe(fds: *mut c_int) -> c_int;
    pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    socket(domain: c_int, ty: c_int, proto: c_int) -> c_int;
    socketpair(domain: c_int, ty: c_int, proto: c_int, sv: *mut c_int) -> c_int;
    accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    epoll_create(size: c_int) -> c_int;
    epoll_create1(flags: c_int) -> c_int;
    eventfd(initval: c_uint, flags: c_int) -> c_int;
    signalfd(fd: c_int, mask: *const sigset_t, flags: c_int) -> c_int;
    timerfd_create(clock: c_int, flags: c_int) -> c_int;
    inotify_init() -> c_int;
    inotify_init1(flags: c_int) -> c_int;
    memfd_create(name: *const c_char, flags: c_uint) -> c_int;
    shm_open(name: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int;
    posix_openpt(flags: c_int) -> c_int;
}

/// `popen`: the tree's server first (it makes a child), then the cache
/// flushed (it makes a kernel fd).
///
/// # Safety
/// The C contract of `popen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn popen(cmd: *const c_char, mode: *const c_char) -> *mut FILE {
    crate::namespace::before_child("popen");
    before_kernel_fd();
    // SAFETY: the caller's arguments, unchanged, valid per the contract.
    unsafe { real!(popen: fn(*const c_char, *const c_char) -> *mut FILE)(cmd, mode) }
}

unsafe extern "C" {
    fn fileno_unlocked(f: *mut FILE) -> c_int;
}

/// The kernel fd under stream `f` (-1 for NULL, a cookie stream, or a
/// stream whose fd is a uvfs fd).
///
/// # Safety
/// `f` is NULL or a stream the caller is about to close.
unsafe fn kernel_fileno(f: *mut FILE) -> c_int {
    if f.is_null() {
        return -1;
    }
    // SAFETY: a live stream per the contract; the unlocked read is what
    // fclose itself is about to do with the stream.
    let fd = unsafe { fileno_unlocked(f) };
    if FDMAP.get(fd) == Fd::Kernel { fd } else { -1 }
}

/// `fclose`, the freed kernel fd recorded.
///
/// # Safety
/// `f` is a live stream, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fclose(f: *mut FILE) -> c_int {
    // SAFETY: the caller's stream, live per the contract.
    let fd = unsafe { kernel_fileno(f) };
    // SAFETY: the caller's stream, unchanged.
    let r = unsafe { real!(fclose: fn(*mut FILE) -> c_int)(f) };
    hole_lower(fd);
    r
}

/// `pclose`, the freed kernel fd recorded.
///
/// # Safety
/// `f` is a live stream from `popen`, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pclose(f: *mut FILE) -> c_int {
    // SAFETY: the caller's stream, live per the contract.
    let fd = unsafe { kernel_fileno(f) };
    // SAFETY: the caller's stream, unchanged.
    let r = unsafe { real!(pclose: fn(*mut FILE) -> c_int)(f) };
    hole_lower(fd);
    r
}
