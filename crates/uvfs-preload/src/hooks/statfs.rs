//! File-system information: `statfs`/`fstatfs`, `statvfs`/`fstatvfs`
//! and `pathconf`/`fpathconf`.
//! A uvfs path or fd reports a tmpfs (`TMPFS_MAGIC`, 255-byte names) with
//! the sizes and limits of the host's `/dev/shm`, rather than the
//! placeholder's `/dev/null`.

use crate::dispatch::{fd_call, is_uvfs, is_uvfs_path, path_call, with_kernel_path};
use crate::interpose::{forward, real};
use libc::{c_char, c_int, c_long};
use uvfs::Errno;
use uvfs::uapi::AT_FDCWD;

type P = *const c_char;

/// Fills `buf` as a tmpfs: the host's `/dev/shm` figures (or 4 KiB blocks
/// and zeros when it has none), `TMPFS_MAGIC`, 255-byte names, no fsid.
///
/// # Safety
/// `buf` is NULL (`EFAULT`) or points to a writable `struct statfs`.
unsafe fn tmpfs_statfs(buf: *mut libc::statfs) -> Result<c_int, Errno> {
    if buf.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: a literal C string and a writable buffer (non-NULL, per the
    // contract).
    let r = unsafe { real!(statfs: fn(P, *mut libc::statfs) -> c_int)(c"/dev/shm".as_ptr(), buf) };
    // SAFETY: a writable statfs buffer, just filled (or to be zeroed).
    unsafe {
        if r != 0 {
            buf.write_bytes(0, 1);
            (*buf).f_bsize = 4096;
            (*buf).f_frsize = 4096;
        }
        (*buf).f_type = 0x0102_1994;
        (*buf).f_namelen = 255;
        (*buf).f_fsid = std::mem::zeroed();
    }
    Ok(0)
}

/// The host's `pathconf` answer for `/dev/shm`, a uvfs file's stand-in.
fn tmpfs_pathconf(name: c_int) -> c_long {
    // SAFETY: a literal C string; any `name` is a valid argument.
    unsafe { real!(pathconf: fn(P, c_int) -> c_long)(c"/dev/shm".as_ptr(), name) }
}

/// `statfs`.
///
/// # Safety
/// `path` is NULL or a valid C string; `buf` is NULL or points to a
/// writable `struct statfs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn statfs(path: P, buf: *mut libc::statfs) -> c_int {
    let kernel = |_: c_int, p: *const c_char| {
        // SAFETY: the caller's buffer and path (or it made absolute,
        // alive for the call).
        unsafe { real!(statfs: fn(P, *mut libc::statfs) -> c_int)(p, buf) }
    };
    // SAFETY: the caller's path and buffer, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, path, -1, kernel, |s, d, p| {
            s.p().fstatat(d, p, 0)?;
            tmpfs_statfs(buf)
        })
    }
}

forward! {
    statfs64(path: P, buf: *mut libc::statfs) -> c_int = statfs(path, buf);
}

/// `fstatfs`.
///
/// # Safety
/// `buf` is NULL or points to a writable `struct statfs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatfs(fd: c_int, buf: *mut libc::statfs) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's buffer, unchanged, valid per the contract.
        || unsafe { real!(fstatfs: fn(c_int, *mut libc::statfs) -> c_int)(fd, buf) },
        |s, u| {
            s.p().fstat(u)?;
            // SAFETY: the caller's buffer, valid per the contract.
            unsafe { tmpfs_statfs(buf) }
        },
    )
}

forward! {
    fstatfs64(fd: c_int, buf: *mut libc::statfs) -> c_int = fstatfs(fd, buf);
}

/// `pathconf`.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pathconf(path: P, name: c_int) -> c_long {
    let kernel = |_: c_int, p: *const c_char| {
        // SAFETY: the caller's path (or it made absolute, alive for the
        // call).
        unsafe { real!(pathconf: fn(P, c_int) -> c_long)(p, name) }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, path, -1, kernel, |s, d, p| {
            s.p().fstatat(d, p, 0)?;
            Ok(tmpfs_pathconf(name))
        })
    }
}

/// `fpathconf`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpathconf(fd: c_int, name: c_int) -> c_long {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(fpathconf: fn(c_int, c_int) -> c_long)(fd, name) },
        |s, u| {
            s.p().fstat(u)?;
            Ok(tmpfs_pathconf(name))
        },
    )
}

/// A uvfs file's `statvfs`, once the shim's own `statfs` accepted it
/// (into `f`): as its `statfs`, the host's `/dev/shm` figures and mount
/// flags, 255-byte names, no fsid; from `f` alone (no flags) when the host
/// has no `/dev/shm`.
///
/// # Safety
/// `out` is NULL (`EFAULT`) or points to a writable `struct statvfs`.
unsafe fn put_statvfs(f: &libc::statfs, out: *mut libc::statvfs) -> c_int {
    if out.is_null() {
        crate::conv::set_errno(libc::EFAULT);
        return -1;
    }
    // SAFETY: a literal C string and our own buffer.
    let mut v: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let r =
        unsafe { real!(statvfs: fn(P, *mut libc::statvfs) -> c_int)(c"/dev/shm".as_ptr(), &mut v) };
    if r != 0 {
        // SAFETY: an all-zero statvfs is valid.
        v = unsafe { std::mem::zeroed() };
        v.f_bsize = f.f_bsize as _;
        v.f_frsize = if f.f_frsize != 0 {
            f.f_frsize
        } else {
            f.f_bsize
        } as _;
        v.f_blocks = f.f_blocks;
        v.f_bfree = f.f_bfree;
        v.f_bavail = f.f_bavail;
        v.f_files = f.f_files;
        v.f_ffree = f.f_ffree;
        v.f_favail = f.f_ffree;
    }
    v.f_namemax = 255;
    v.f_fsid = 0;
    // SAFETY: writable per the contract.
    unsafe { out.write_unaligned(v) };
    0
}

/// `statvfs`: glibc's calls `statfs` internally, where the shim cannot see
/// it, so a uvfs path is answered from the shim's own `statfs`.
///
/// # Safety
/// `path` is NULL or a valid C string; `buf` is NULL or points to a
/// writable `struct statvfs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn statvfs(path: P, buf: *mut libc::statvfs) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if !unsafe { is_uvfs_path(path) } {
        // SAFETY: the caller's buffer, and its path or the host path it
        // stands for (alive for the call).
        return unsafe {
            with_kernel_path(path, |p| {
                real!(statvfs: fn(P, *mut libc::statvfs) -> c_int)(p, buf)
            })
        };
    }
    // SAFETY: an all-zero statfs is valid.
    let mut f: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's path; our own buffer.
    if unsafe { statfs(path, &mut f) } != 0 {
        return -1;
    }
    // SAFETY: the caller's buffer, per the contract.
    unsafe { put_statvfs(&f, buf) }
}

forward! {
    statvfs64(path: P, buf: *mut libc::statvfs) -> c_int = statvfs(path, buf);
}

/// `fstatvfs`.
///
/// # Safety
/// `buf` is NULL or points to a writable `struct statvfs`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatvfs(fd: c_int, buf: *mut libc::statvfs) -> c_int {
    if !is_uvfs(fd) {
        // SAFETY: the caller's buffer, unchanged, valid per the contract.
        return unsafe { real!(fstatvfs: fn(c_int, *mut libc::statvfs) -> c_int)(fd, buf) };
    }
    // SAFETY: an all-zero statfs is valid.
    let mut f: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: our own buffer.
    if unsafe { fstatfs(fd, &mut f) } != 0 {
        return -1;
    }
    // SAFETY: the caller's buffer, per the contract.
    unsafe { put_statvfs(&f, buf) }
}

forward! {
    fstatvfs64(fd: c_int, buf: *mut libc::statvfs) -> c_int = fstatvfs(fd, buf);
}
