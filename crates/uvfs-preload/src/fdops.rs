//! The fd operations more than one entry point needs: opening and closing
//! a uvfs fd on this thread's state (`open`, `fopen`, `opendir`, `mkstemp`), and
//! `read`, `write`, `pread64`, `pwrite64`, `lseek64` and `close` on any fd,
//! kernel or uvfs. The interposed functions of those names are thin
//! wrappers over these; the stdio cookie streams and the
//! `sendfile`/`copy_file_range` copy loop call them too, so a stream or a
//! copy whose fd becomes a kernel one again goes to the kernel.

use crate::conv::{buf_mut, buf_ref};
use crate::dispatch::{fd_call, fd_call_io};
use crate::interpose::real;
use crate::state::{State, hole_lower};
use libc::{c_int, c_void, mode_t, off_t, size_t, ssize_t};
use uvfs::Errno;

/// The uvfs side of an open: a placeholder first (the kernel's `EMFILE`
/// wins, as `get_unused_fd` runs before the walk), then the uvfs open.
pub(crate) fn uvfs_open(
    s: &mut State,
    d: i32,
    p: &[u8],
    flags: c_int,
    mode: mode_t,
) -> Result<c_int, Errno> {
    let k = s.placeholder()?;
    match s.p().openat(d, p, flags, mode) {
        Ok(u) => {
            s.map(k, u);
            Ok(k)
        }
        Err(e) => {
            s.release(k);
            Err(e)
        }
    }
}

/// A write's result, with the signal Linux sends with `EPIPE`: the
/// library only returns the error; the shim raises `SIGPIPE` in the
/// calling thread, as the kernel would (ignored or caught, the call then
/// fails with `EPIPE`).
pub(crate) fn sigpipe<T>(r: Result<T, Errno>) -> Result<T, Errno> {
    if r.as_ref().err() == Some(&Errno::EPIPE) {
        // SAFETY: raises a signal in this thread; the program's
        // disposition decides what happens, as with the kernel's.
        unsafe { libc::raise(libc::SIGPIPE) };
    }
    r
}

/// Closes uvfs fd `k` (the caller holds the state).
pub(crate) fn uvfs_close(s: &mut State, k: c_int) -> Result<c_int, Errno> {
    let u = s.ufd(k)?;
    uvfs_close_mapped(s, k, u)
}

/// [`uvfs_close`] of `k`, already looked up as uvfs fd `u`.
#[inline]
fn uvfs_close_mapped(s: &mut State, k: c_int, u: i32) -> Result<c_int, Errno> {
    let r = s.p().close(u);
    s.release(k);
    r.map(|()| 0)
}

/// `close(fd)`: a uvfs fd released, a kernel fd closed by the next
/// definition (and its number recorded as possibly free).
///
/// # Safety
/// `fd` is the program's to close: nothing in the shim owns it.
pub(crate) unsafe fn close(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            // The memfd holding a mapped uvfs file's data is no fd of the
            // program's.
            if uvfs::fs::tmpfs::holds_kernel_fd(fd) {
                crate::conv::set_errno(libc::EBADF);
                return -1;
            }
            // SAFETY: an fd number the caller may close, per the contract.
            let r = unsafe { real!(close: fn(c_int) -> c_int)(fd) };
            hole_lower(fd);
            r
        },
        // `u` as `fd_call` read it: another thread closing or replacing
        // `fd` meanwhile is the program's race, as on Linux.
        |s, u| uvfs_close_mapped(s, fd, u),
    )
}

/// `read(fd, buf, n)`.
///
/// # Safety
/// `buf` points to `n` writable bytes (or `n` is 0).
pub(crate) unsafe fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    fd_call_io(
        fd,
        // SAFETY: the caller's buffer of `n` writable bytes.
        || unsafe { real!(read: fn(c_int, *mut c_void, size_t) -> ssize_t)(fd, buf, n) },
        // SAFETY: as above.
        |p, u| Ok(p.read(u, unsafe { buf_mut(buf, n) }?)? as ssize_t),
        // A cancelled read has read nothing.
        |_| 0,
    )
}

/// `write(fd, buf, n)`.
///
/// # Safety
/// `buf` points to `n` readable bytes (or `n` is 0).
pub(crate) unsafe fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    fd_call_io(
        fd,
        // SAFETY: the caller's buffer of `n` readable bytes.
        || unsafe { real!(write: fn(c_int, *const c_void, size_t) -> ssize_t)(fd, buf, n) },
        // SAFETY: as above.
        |p, u| sigpipe(p.write(u, unsafe { buf_ref(buf, n) }?)).map(|n| n as ssize_t),
        // SAFETY: the rest of the caller's buffer (`done` < `n`).
        |done| unsafe { write(fd, buf.cast::<u8>().add(done).cast(), n - done) },
    )
}

/// `pread64(fd, buf, n, off)`.
///
/// # Safety
/// `buf` points to `n` writable bytes (or `n` is 0).
pub(crate) unsafe fn pread64(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's buffer of `n` writable bytes.
        || unsafe {
            real!(pread64: fn(c_int, *mut c_void, size_t, off_t) -> ssize_t)(fd, buf, n, off)
        },
        // SAFETY: as above.
        |s, u| Ok(s.p().pread(u, unsafe { buf_mut(buf, n) }?, off)? as ssize_t),
    )
}

/// `pwrite64(fd, buf, n, off)`.
///
/// # Safety
/// `buf` points to `n` readable bytes (or `n` is 0).
pub(crate) unsafe fn pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's buffer of `n` readable bytes.
        || unsafe {
            real!(pwrite64: fn(c_int, *const c_void, size_t, off_t) -> ssize_t)(fd, buf, n, off)
        },
        // SAFETY: as above.
        |s, u| Ok(s.p().pwrite(u, unsafe { buf_ref(buf, n) }?, off)? as ssize_t),
    )
}

/// `lseek64(fd, off, whence)`.
pub(crate) fn lseek64(fd: c_int, off: off_t, whence: c_int) -> off_t {
    fd_call(
        fd,
        -1,
        // SAFETY: lseek takes no pointer: any fd number, offset and whence
        // are valid arguments (an error at worst).
        || unsafe { real!(lseek64: fn(c_int, off_t, c_int) -> off_t)(fd, off, whence) },
        |s, u| s.p().lseek(u, off, whence),
    )
}
