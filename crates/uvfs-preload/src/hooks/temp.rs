//! Temporary files and directories: the `mkstemp` family, `mkdtemp` and
//! `mktemp`. glibc makes them with internal calls the shim cannot see, so
//! for a template under the prefix the shim fills the `X`s and creates the
//! file or directory in uvfs itself ([`gen_tempname`]), with glibc's flags,
//! modes and errors; any other template goes to glibc unchanged. (`tmpfile`
//! returns a stream, and lives with the other streams in `stdio`.)

use crate::conv::cbytes;
use crate::dispatch::{Ticket, is_uvfs_path, restartable, route};
use crate::fdops::uvfs_open;
use crate::interpose::{forward, real};
use crate::path::Route;
use crate::state::before_kernel_fd;
use crate::tempname::gen_tempname;
use libc::{c_char, c_int};
use uvfs::Errno;
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

/// The uvfs side of the `mkstemp` family: glibc's `open` of each name with
/// `O_RDWR | O_CREAT | O_EXCL` plus the caller's flags other than the
/// access mode, mode 0600 (less the umask).
///
/// `None`: the tree's switch came since `t` (the template as it was).
///
/// # Safety
/// `tmpl` is a writable, NUL-terminated string.
unsafe fn mkstemp_uvfs(t: Ticket, tmpl: *mut c_char, suffix: c_int, flags: c_int) -> Option<c_int> {
    let flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
    restartable(-1, || {
        // SAFETY: the caller's template, writable per the contract.
        unsafe {
            gen_tempname("mkstemp", t, tmpl, suffix, |s, d, p| {
                uvfs_open(s, d, p, flags, 0o600)
            })
        }
    })
}

/// The kernel side of a template call: `kernel` on the caller's template,
/// or, when the template stands for another host path (its `..` climbs out
/// of the prefix, or it is relative and the cwd is in uvfs), on a copy of
/// that path, whose generated last component is then copied back into the
/// caller's template.
///
/// # Safety
/// `t` is NULL or a writable, NUL-terminated template.
unsafe fn kernel_template<R>(t: *mut c_char, kernel: impl FnOnce(*mut c_char) -> R) -> R {
    if t.is_null() {
        return kernel(t);
    }
    // SAFETY: non-NULL, so a C string per the contract.
    let b = unsafe { cbytes(t) };
    let Some(Route::KernelAbs(mut abs)) = route(AT_FDCWD, b) else {
        return kernel(t);
    };
    let last = |v: &[u8]| v.len() - v.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
    let n = last(b).min(last(&abs));
    let (tlen, alen) = (b.len(), abs.len());
    abs.push(0);
    let r = kernel(abs.as_mut_ptr().cast());
    // SAFETY: the last `n` bytes of both strings (the template's last
    // component and its copy's), the caller's writable per the contract.
    unsafe {
        std::ptr::copy_nonoverlapping(abs.as_ptr().add(alen - n).cast(), t.add(tlen - n), n);
    }
    r
}

/// The `mkstemp` family: a uvfs template made in uvfs, any other handed to
/// `kernel` (the next definition, after the placeholder cache steps aside:
/// it makes an fd).
///
/// # Safety
/// `t` is NULL or a writable, NUL-terminated template.
unsafe fn do_mkstemp(
    t: *mut c_char,
    suffix: c_int,
    flags: c_int,
    kernel: impl FnOnce(*mut c_char) -> c_int,
) -> c_int {
    let tk = Ticket::take();
    // SAFETY: the caller's template, a C string per the contract.
    let uv = unsafe { is_uvfs_path(t) };
    // `None`: the switch came between, the template as it was.
    let made = uv
        .then(|| {
            // SAFETY: the caller's template, writable per the contract.
            unsafe { mkstemp_uvfs(tk, t, suffix, flags) }
        })
        .flatten();
    if let Some(r) = made {
        return r;
    }
    before_kernel_fd();
    // SAFETY: as above.
    unsafe { kernel_template(t, kernel) }
}

/// `mkstemp`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkstemp(t: *mut c_char) -> c_int {
    // SAFETY: the caller's arguments, unchanged, valid per the contract.
    let kernel = |t| unsafe { real!(mkstemp: fn(*mut c_char) -> c_int)(t) };
    // SAFETY: as above.
    unsafe { do_mkstemp(t, 0, 0, kernel) }
}

/// `mkostemp`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkostemp(t: *mut c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's arguments, unchanged, valid per the contract.
    let kernel = |t| unsafe { real!(mkostemp: fn(*mut c_char, c_int) -> c_int)(t, flags) };
    // SAFETY: as above.
    unsafe { do_mkstemp(t, 0, flags, kernel) }
}

/// `mkstemps`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkstemps(t: *mut c_char, suffix: c_int) -> c_int {
    // SAFETY: the caller's arguments, unchanged, valid per the contract.
    let kernel = |t| unsafe { real!(mkstemps: fn(*mut c_char, c_int) -> c_int)(t, suffix) };
    // SAFETY: as above.
    unsafe { do_mkstemp(t, suffix, 0, kernel) }
}

/// `mkostemps`.
///
/// # Safety
/// `t` is a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkostemps(t: *mut c_char, suffix: c_int, flags: c_int) -> c_int {
    let kernel = |t| {
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        unsafe { real!(mkostemps: fn(*mut c_char, c_int, c_int) -> c_int)(t, suffix, flags) }
    };
    // SAFETY: as above.
    unsafe { do_mkstemp(t, suffix, flags, kernel) }
}

// glibc's `64` names are aliases of the same functions.
forward! {
    mkstemp64(t: *mut c_char) -> c_int = mkstemp(t);
    mkostemp64(t: *mut c_char, flags: c_int) -> c_int = mkostemp(t, flags);
    mkstemps64(t: *mut c_char, suffix: c_int) -> c_int = mkstemps(t, suffix);
    mkostemps64(t: *mut c_char, suffix: c_int, flags: c_int) -> c_int =
        mkostemps(t, suffix, flags);
}

/// `mkdtemp`: glibc's `mkdir` of each name, mode 0700 (less the umask);
/// the template back, or NULL and errno.
///
/// # Safety
/// `t` is NULL or a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkdtemp(t: *mut c_char) -> *mut c_char {
    let tk = Ticket::take();
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        // SAFETY: the caller's template, or a writable copy of the host
        // path it stands for; valid per the contract.
        let r =
            unsafe { kernel_template(t, |k| real!(mkdtemp: fn(*mut c_char) -> *mut c_char)(k)) };
        return if r.is_null() { r } else { t };
    }
    let r = restartable(-1, || {
        // SAFETY: the caller's template, writable per the contract.
        unsafe {
            gen_tempname("mkdtemp", tk, t, 0, |s, d, p| {
                s.p().mkdirat(d, p, 0o700).map(|()| 0)
            })
        }
    });
    match r {
        // SAFETY: the caller's template, as above (the kernel's side now).
        None => unsafe { mkdtemp(t) },
        Some(r) if r < 0 => std::ptr::null_mut(),
        Some(_) => t,
    }
}

/// `mktemp`: a name that did not exist when it was made (glibc's `lstat`
/// of each name until one fails with `ENOENT`; any other error fails).
/// The template back, emptied on failure, as glibc's.
///
/// # Safety
/// `t` is NULL or a writable, NUL-terminated template.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mktemp(t: *mut c_char) -> *mut c_char {
    let tk = Ticket::take();
    // SAFETY: the caller's template, a C string per the contract.
    if !unsafe { is_uvfs_path(t) } {
        // SAFETY: the caller's template, or a writable copy of the host
        // path it stands for; valid per the contract.
        let failed = unsafe {
            kernel_template(t, |k| {
                real!(mktemp: fn(*mut c_char) -> *mut c_char)(k);
                *k == 0
            })
        };
        if failed {
            // SAFETY: non-NULL (the call failed instead of crashing),
            // writable per the contract.
            unsafe { *t = 0 };
        }
        return t;
    }
    let r = restartable(-1, || {
        // SAFETY: the caller's template, writable per the contract.
        unsafe {
            gen_tempname("mktemp", tk, t, 0, |s, d, p| {
                match s.p().fstatat(d, p, AT_SYMLINK_NOFOLLOW) {
                    Ok(_) | Err(Errno::EOVERFLOW) => Err(Errno::EEXIST),
                    Err(Errno::ENOENT) => Ok(0),
                    Err(e) => Err(e),
                }
            })
        }
    });
    match r {
        // SAFETY: the caller's template, as above (the kernel's side now).
        None => unsafe { mktemp(t) },
        Some(r) => {
            if r < 0 {
                // SAFETY: a non-NULL (it routed to uvfs) writable template.
                unsafe { *t = 0 };
            }
            t
        }
    }
}
