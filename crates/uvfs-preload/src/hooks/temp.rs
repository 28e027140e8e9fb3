//! Temporary files and directories: `mkstemp` and friends, `mkdtemp`.
//! glibc makes them with internal calls the shim cannot see, so for a
//! template under the prefix the shim fills the `XXXXXX` and creates the
//! file or directory in uvfs itself.

use crate::conv::cbytes;
use crate::dispatch::{is_uvfs_path, route};
use crate::fdops::uvfs_open;
use crate::guard::run;
use crate::interpose::{forward, real};
use crate::path::Route;
use crate::state::{State, before_kernel_fd, with_state};
use libc::{c_char, c_int};
use uvfs::Errno;
use uvfs::uapi::AT_FDCWD;

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: an 8-byte buffer; getrandom is not interposed.
    unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, libc::GRND_NONBLOCK) };
    u64::from_ne_bytes(b) ^ (b.as_ptr() as u64).rotate_left(17)
}

/// Fills the `XXXXXX` before `suffix` bytes of `tmpl` and calls `make` until
/// it does not fail with `EEXIST` (as glibc's `__gen_tempname`).
///
/// # Safety
/// `tmpl` is a writable, NUL-terminated string.
unsafe fn gen_temp(
    tmpl: *mut c_char,
    suffix: c_int,
    make: impl Fn(&mut State, i32, &[u8]) -> Result<c_int, Errno>,
) -> Result<c_int, Errno> {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    // SAFETY: a C string per the contract.
    let t = unsafe { cbytes(tmpl) };
    let len = t.len();
    let suffix = usize::try_from(suffix).map_err(|_| Errno::EINVAL)?;
    if len < 6 + suffix || &t[len - 6 - suffix..len - suffix] != b"XXXXXX" {
        return Err(Errno::EINVAL);
    }
    let at = len - 6 - suffix;
    for _ in 0..238_328 {
        let mut v = random_u64();
        for i in 0..6 {
            // SAFETY: within the template (before its suffix), writable
            // per the contract.
            unsafe { *tmpl.add(at + i) = LETTERS[(v % 62) as usize] as c_char };
            v /= 62;
        }
        // SAFETY: the filled template, still a C string.
        let path = unsafe { cbytes(tmpl) }.to_vec();
        let r = match route(AT_FDCWD, &path) {
            Some(Route::Uvfs(d, p)) => with_state(|s| make(s, d, &p)),
            _ => return Err(Errno::EXDEV),
        };
        match r {
            Err(Errno::EEXIST) => continue,
            r => return r,
        }
    }
    Err(Errno::EEXIST)
}

/// The uvfs side of the `mkstemp` family: `O_RDWR | O_CREAT | O_EXCL`
/// plus the caller's other flags, mode 0600.
///
/// # Safety
/// `tmpl` is a writable, NUL-terminated string.
unsafe fn mkstemp_uvfs(tmpl: *mut c_char, suffix: c_int, flags: c_int) -> c_int {
    let flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
    run(-1, || {
        // SAFETY: the caller's template, writable per the contract.
        unsafe { gen_temp(tmpl, suffix, |s, d, p| uvfs_open(s, d, p, flags, 0o600)) }
    })
}

/// `mkstemp`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkstemp(t: *mut c_char) -> c_int {
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        before_kernel_fd();
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe { real!(mkstemp: fn(*mut c_char) -> c_int)(t) };
    }
    // SAFETY: the caller's template, writable per the contract.
    unsafe { mkstemp_uvfs(t, 0, 0) }
}

forward! {
    mkstemp64(t: *mut c_char) -> c_int = mkstemp(t);
}

/// `mkostemp`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkostemp(t: *mut c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        before_kernel_fd();
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe { real!(mkostemp: fn(*mut c_char, c_int) -> c_int)(t, flags) };
    }
    // SAFETY: the caller's template, writable per the contract.
    unsafe { mkstemp_uvfs(t, 0, flags) }
}

forward! {
    mkostemp64(t: *mut c_char, flags: c_int) -> c_int = mkostemp(t, flags);
}

/// `mkstemps`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkstemps(t: *mut c_char, suffix: c_int) -> c_int {
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        before_kernel_fd();
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe { real!(mkstemps: fn(*mut c_char, c_int) -> c_int)(t, suffix) };
    }
    // SAFETY: the caller's template, writable per the contract.
    unsafe { mkstemp_uvfs(t, suffix, 0) }
}

/// `mkostemps`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkostemps(t: *mut c_char, suffix: c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        before_kernel_fd();
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe {
            real!(mkostemps: fn(*mut c_char, c_int, c_int) -> c_int)(t, suffix, flags)
        };
    }
    // SAFETY: the caller's template, writable per the contract.
    unsafe { mkstemp_uvfs(t, suffix, flags) }
}

/// `mkdtemp`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkdtemp(t: *mut c_char) -> *mut c_char {
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        // SAFETY: the caller's template, unchanged, valid per the contract.
        return unsafe { real!(mkdtemp: fn(*mut c_char) -> *mut c_char)(t) };
    }
    let r = run(-1, || {
        // SAFETY: the caller's template, writable per the contract.
        unsafe { gen_temp(t, 0, |s, d, p| s.p().mkdirat(d, p, 0o700).map(|()| 0)) }
    });
    if r < 0 { std::ptr::null_mut() } else { t }
}
