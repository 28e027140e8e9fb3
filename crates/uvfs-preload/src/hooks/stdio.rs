//! stdio on uvfs files. glibc's `fopen` opens, and its `FILE` reads and
//! writes, through internal calls the shim cannot see, so a uvfs file gets
//! an `fopencookie` stream whose functions call the shim's `read`, `write`,
//! `lseek` and `close` ([`fdops`]). The stream's `_fileno` is set to the
//! uvfs fd (glibc marks cookie streams with -2 and uses the field for
//! nothing else), so `fileno()` answers as for a normal stream.
//!
//! [`adopt_std`] is handed to the state by the library constructor: a
//! uvfs fd mapped at 0, 1 or 2 takes over the standard stream.

use crate::conv::cbytes;
use crate::dispatch::{
    RESTART, Ticket, is_uvfs, is_uvfs_path, path_call, restartable, route_unguarded,
    with_kernel_path,
};
use crate::fdops::{self, uvfs_close, uvfs_open};
use crate::guard::busy;
use crate::interpose::{forward, real};
use crate::path::Route;
use crate::state::{before_kernel_fd, with_state};
use crate::tempname::gen_tempname;
use libc::{FILE, c_char, c_int, c_void, off64_t, size_t, ssize_t};
use uvfs::Errno;
use uvfs::uapi::AT_FDCWD;

/// glibc's `struct _IO_FILE`: `_fileno` follows `_flags` (padded to 8) and
/// 13 pointers, on every 64-bit target.
const FILENO_OFFSET: usize = 8 + 13 * 8;

/// glibc's `cookie_io_functions_t`.
#[repr(C)]
struct CookieIo {
    read: unsafe extern "C" fn(*mut c_void, *mut c_char, size_t) -> ssize_t,
    write: unsafe extern "C" fn(*mut c_void, *const c_char, size_t) -> ssize_t,
    seek: unsafe extern "C" fn(*mut c_void, *mut off64_t, c_int) -> c_int,
    close: unsafe extern "C" fn(*mut c_void) -> c_int,
}

unsafe extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, io: CookieIo) -> *mut FILE;
    static mut stdin: *mut FILE;
    static mut stdout: *mut FILE;
    static mut stderr: *mut FILE;
}

/// fopen's mode string: open flags, or `EINVAL`.
fn mode_flags(mode: &[u8]) -> Result<c_int, Errno> {
    let (mut acc, mut fl) = match mode.first() {
        Some(b'r') => (libc::O_RDONLY, 0),
        Some(b'w') => (libc::O_WRONLY, libc::O_CREAT | libc::O_TRUNC),
        Some(b'a') => (libc::O_WRONLY, libc::O_CREAT | libc::O_APPEND),
        _ => return Err(Errno::EINVAL),
    };
    for &c in &mode[1..] {
        match c {
            b'+' => acc = libc::O_RDWR,
            b'x' => fl |= libc::O_EXCL,
            b'e' => fl |= libc::O_CLOEXEC,
            b',' => break,
            _ => {}
        }
    }
    Ok(acc | fl)
}

/// The cookie stream's read: `read` on the fd the cookie holds.
///
/// # Safety
/// `buf` points to `n` writable bytes (glibc's stream buffer).
unsafe extern "C" fn c_read(cookie: *mut c_void, buf: *mut c_char, n: size_t) -> ssize_t {
    // SAFETY: glibc's buffer of `n` writable bytes, per the contract.
    unsafe { fdops::read(cookie as usize as c_int, buf.cast(), n) }
}

/// The cookie stream's write: `write` on the fd the cookie holds.
///
/// # Safety
/// `buf` points to `n` readable bytes (glibc's stream buffer).
unsafe extern "C" fn c_write(cookie: *mut c_void, buf: *const c_char, n: size_t) -> ssize_t {
    // SAFETY: glibc's buffer of `n` readable bytes, per the contract.
    let r = unsafe { fdops::write(cookie as usize as c_int, buf.cast(), n) };
    // A cookie write returning -1 or 0 is an error to glibc; keep errno.
    if r < 0 { 0 } else { r }
}

/// The cookie stream's seek: `lseek` on the fd the cookie holds, the new
/// offset written back.
///
/// # Safety
/// `off` points to a readable and writable offset.
unsafe extern "C" fn c_seek(cookie: *mut c_void, off: *mut off64_t, whence: c_int) -> c_int {
    // SAFETY: glibc's offset, valid per the contract.
    let r = fdops::lseek64(cookie as usize as c_int, unsafe { *off }, whence);
    if r < 0 {
        return -1;
    }
    // SAFETY: as above.
    unsafe { *off = r };
    0
}

/// The cookie stream's close: `close` of the fd the cookie holds.
///
/// # Safety
/// Called once, by glibc closing the stream, which owns the fd.
unsafe extern "C" fn c_close(cookie: *mut c_void) -> c_int {
    // SAFETY: the stream owned this fd, and is closing.
    unsafe { fdops::close(cookie as usize as c_int) }
}

/// A stream over uvfs fd `k` (which it then owns).
///
/// # Safety
/// `mode` is a valid fopen mode string.
unsafe fn stream(k: c_int, mode: *const c_char) -> Result<*mut FILE, Errno> {
    let funcs = CookieIo {
        read: c_read,
        write: c_write,
        seek: c_seek,
        close: c_close,
    };
    // SAFETY: a mode string per the contract; fopencookie copies the
    // functions; the cookie is the fd number.
    let f = unsafe { fopencookie(k as usize as *mut c_void, mode, funcs) };
    if f.is_null() {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: `f` is a glibc FILE; `_fileno` is an int at FILENO_OFFSET.
    unsafe { f.cast::<u8>().add(FILENO_OFFSET).cast::<c_int>().write(k) };
    Ok(f)
}

/// `fopen`/`fopen64`: a uvfs path gets a cookie stream; `real_fn` is the
/// next definition with the caller's mode, given the path to open (the
/// caller's, or the host path it stands for when it climbs out of the
/// prefix).
///
/// # Safety
/// `path` and `mode` are each NULL or a valid C string.
unsafe fn do_fopen(
    path: *const c_char,
    mode: *const c_char,
    real_fn: impl FnOnce(*const c_char) -> *mut FILE,
) -> *mut FILE {
    // The kernel side makes an fd: the placeholder cache steps aside first.
    let real_fn = |p: *const c_char| {
        before_kernel_fd();
        real_fn(p)
    };
    if mode.is_null() {
        return real_fn(path);
    }
    // SAFETY: the caller's path and mode (non-NULL), valid per the
    // contract.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            std::ptr::null_mut(),
            |_, p| real_fn(p),
            |s, d, p| {
                let flags = mode_flags(cbytes(mode))?;
                let k = uvfs_open(s, d, p, flags, 0o666)?;
                stream(k, mode).inspect_err(|_| {
                    let _ = uvfs_close(s, k);
                })
            },
        )
    }
}

/// `fopen`.
///
/// # Safety
/// `path` and `mode` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real_fn = |p: *const c_char| {
        // SAFETY: the caller's mode, and its path or the host path it
        // stands for (a C string alive for the call).
        unsafe { real!(fopen: fn(*const c_char, *const c_char) -> *mut FILE)(p, mode) }
    };
    // SAFETY: the caller's strings, valid per the contract.
    unsafe { do_fopen(path, mode, real_fn) }
}

/// `fopen64`.
///
/// # Safety
/// `path` and `mode` are each NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    let real_fn = |p: *const c_char| {
        // SAFETY: the caller's mode, and its path or the host path it
        // stands for (a C string alive for the call).
        unsafe { real!(fopen64: fn(*const c_char, *const c_char) -> *mut FILE)(p, mode) }
    };
    // SAFETY: the caller's strings, valid per the contract.
    unsafe { do_fopen(path, mode, real_fn) }
}

/// `fdopen`: a uvfs fd gets a cookie stream (its mode checked against
/// the fd's, `O_APPEND` added if asked for).
///
/// # Safety
/// `mode` is NULL or a valid C string; the stream takes `fd` over.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE {
    // SAFETY: the caller's arguments, unchanged, valid per the contract.
    let kernel = || unsafe { real!(fdopen: fn(c_int, *const c_char) -> *mut FILE)(fd, mode) };
    let t = Ticket::take();
    if !is_uvfs(fd) || busy() || mode.is_null() {
        return kernel();
    }
    restartable(std::ptr::null_mut(), || {
        // SAFETY: the caller's mode string.
        let want = mode_flags(unsafe { cbytes(mode) })?;
        t.park("fdopen");
        with_state(|s| {
            t.check()?;
            let u = s.ufd(fd)?;
            let have = s.p().fcntl(u, libc::F_GETFL, 0)?;
            let acc = have & libc::O_ACCMODE;
            let wacc = want & libc::O_ACCMODE;
            let ok = match wacc {
                libc::O_RDONLY => acc == libc::O_RDONLY || acc == libc::O_RDWR,
                libc::O_WRONLY => acc == libc::O_WRONLY || acc == libc::O_RDWR,
                _ => acc == libc::O_RDWR,
            };
            if !ok {
                return Err(Errno::EINVAL);
            }
            if want & libc::O_APPEND != 0 && have & libc::O_APPEND == 0 {
                s.p()
                    .fcntl(u, libc::F_SETFL, (have | libc::O_APPEND) as u64)?;
            }
            Ok(())
        })?;
        // SAFETY: the caller's mode string (non-NULL), valid per the
        // contract.
        unsafe { stream(fd, mode) }
    })
    .unwrap_or_else(kernel)
}

/// `freopen`/`freopen64`: to a uvfs path, the stream closed and a cookie
/// stream opened (a standard stream's variable pointed at it); `real_fn`
/// is the next definition with the caller's mode and stream, given the
/// path.
///
/// # Safety
/// `path` and `mode` are each NULL or a valid C string; `f` is a live
/// stream the caller gives up.
unsafe fn do_freopen(
    path: *const c_char,
    mode: *const c_char,
    f: *mut FILE,
    real_fn: impl FnOnce(*const c_char) -> *mut FILE,
) -> *mut FILE {
    let real_fn = |p: *const c_char| {
        before_kernel_fd();
        real_fn(p)
    };
    // SAFETY: the caller's path, valid per the contract.
    let to_uvfs = !mode.is_null() && unsafe { is_uvfs_path(path) };
    if !to_uvfs {
        // The caller's path, or the host path it stands for.
        // SAFETY: the caller's path, valid per the contract.
        return unsafe { with_kernel_path(path, real_fn) };
    }
    // The stream object cannot be kept (a glibc FILE reads through its fd
    // with calls the shim cannot see): close it, open a cookie stream, and
    // if it was a standard stream, point the standard variable at the new
    // one.
    // SAFETY: reading libc's standard stream variables.
    let which = unsafe {
        if f == stdin {
            0
        } else if f == stdout {
            1
        } else if f == stderr {
            2
        } else {
            3
        }
    };
    // The caller's stream, closed as freopen closes it.
    // SAFETY: the caller's live stream, given up per the contract.
    unsafe { real!(fclose: fn(*mut FILE) -> c_int)(f) };
    // SAFETY: the caller's strings, valid per the contract.
    let nf = unsafe { fopen(path, mode) };
    if !nf.is_null() {
        // SAFETY: assigning libc's standard stream variables.
        unsafe {
            match which {
                0 => stdin = nf,
                1 => stdout = nf,
                2 => stderr = nf,
                _ => {}
            }
        }
    }
    nf
}

/// `freopen`.
///
/// # Safety
/// `path` and `mode` are each NULL or a valid C string; `f` is a live
/// stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn freopen(
    path: *const c_char,
    mode: *const c_char,
    f: *mut FILE,
) -> *mut FILE {
    let real_fn = |p: *const c_char| {
        // SAFETY: the caller's mode and stream, and its path or the host
        // path it stands for (a C string alive for the call).
        unsafe {
            real!(freopen: fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE)(p, mode, f)
        }
    };
    // SAFETY: the caller's arguments, valid per the contract.
    unsafe { do_freopen(path, mode, f, real_fn) }
}

/// `freopen64`.
///
/// # Safety
/// `path` and `mode` are each NULL or a valid C string; `f` is a live
/// stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn freopen64(
    path: *const c_char,
    mode: *const c_char,
    f: *mut FILE,
) -> *mut FILE {
    let real_fn = |p: *const c_char| {
        // SAFETY: the caller's mode and stream, and its path or the host
        // path it stands for (a C string alive for the call).
        unsafe {
            real!(freopen64: fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE)(p, mode, f)
        }
    };
    // SAFETY: the caller's arguments, valid per the contract.
    unsafe { do_freopen(path, mode, f, real_fn) }
}

/// A uvfs fd just placed at 0, 1 or 2 (`dup2(fd, 1)`, or an open after
/// `close(1)`): the standard stream on that number writes and reads through
/// internal calls the shim cannot see, so the standard variable is pointed
/// at a cookie stream over the fd instead (its calls go through the shim,
/// to uvfs or, should the fd become a kernel one again, to the kernel). The
/// old stream is left as it was: what it had buffered is written where its
/// fd points at exit.
pub(crate) fn adopt_std(k: c_int) {
    if !(0..=2).contains(&k) {
        return;
    }
    let mode = if k == 0 { c"r" } else { c"w" };
    // SAFETY: a literal mode string.
    let Ok(f) = (unsafe { stream(k, mode.as_ptr()) }) else {
        return;
    };
    // SAFETY: assigning libc's standard stream variables; stderr stays
    // unbuffered as it was.
    unsafe {
        match k {
            0 => stdin = f,
            1 => stdout = f,
            _ => {
                libc::setvbuf(f, std::ptr::null_mut(), libc::_IONBF, 0);
                stderr = f;
            }
        }
    }
}

/// `tmpfile`: glibc's makes its file in `P_tmpdir` (`/tmp`, whatever
/// `TMPDIR` says), so it reaches uvfs only when `/tmp` lies under the
/// prefix. Then, as glibc: an unnamed `O_TMPFILE` file in `/tmp`, mode 0600,
/// or, if that fails, a `/tmp/tmpfXXXXXX` name made and unlinked at once
/// (whose error, if it fails too, is the answer); the fd as a `w+`
/// stream.
///
/// # Safety
/// No arguments; as the C function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tmpfile() -> *mut FILE {
    let tmpdir = c"/tmp";
    let kernel = || {
        before_kernel_fd();
        // SAFETY: no arguments.
        unsafe { real!(tmpfile: fn() -> *mut FILE)() }
    };
    let tk = Ticket::take();
    // SAFETY: a literal C string.
    if !unsafe { is_uvfs_path(tmpdir.as_ptr()) } {
        return kernel();
    }
    restartable(std::ptr::null_mut(), || {
        let Some(Route::Uvfs(d, p)) = route_unguarded(AT_FDCWD, tmpdir.to_bytes()) else {
            return Err(if tk.switched() { RESTART } else { Errno::EXDEV });
        };
        let unnamed = libc::O_RDWR | libc::O_TMPFILE | libc::O_EXCL;
        tk.park("tmpfile");
        let made = with_state(|s| {
            tk.check()?;
            uvfs_open(s, d, &p, unnamed, 0o600)
        });
        let k = match made {
            Err(e) if e == RESTART => return Err(e),
            Ok(k) => k,
            Err(_) => {
                let mut t = *b"/tmp/tmpfXXXXXX\0";
                let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
                // SAFETY: a writable, NUL-terminated template of our own.
                unsafe {
                    gen_tempname("tmpfile", tk, t.as_mut_ptr().cast(), 0, |s, d, p| {
                        let k = uvfs_open(s, d, p, flags, 0o600)?;
                        let _ = s.p().unlinkat(d, p, 0);
                        Ok(k)
                    })
                }?
            }
        };
        // SAFETY: a literal mode string; the stream takes `k` over.
        unsafe { stream(k, c"w+".as_ptr()) }.inspect_err(|_| {
            with_state(|s| {
                let _ = uvfs_close(s, k);
            })
        })
    })
    .unwrap_or_else(kernel)
}

forward! {
    tmpfile64() -> *mut FILE = tmpfile();
}
