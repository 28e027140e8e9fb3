//! File contents: `read`/`write` and their positional and vector forms,
//! `lseek`, `getdents64`, and sizes and sync (`truncate`, `ftruncate`,
//! `fallocate`, `posix_fallocate`, `posix_fadvise`, `fsync`,
//! `fdatasync`), and the calls glibc would otherwise send to the
//! placeholder (`preadv2`, `pwritev2`, `getdirentries`, `readahead`,
//! `sync_file_range`, `syncfs`). `read`, `write`, `pread64`, `pwrite64` and `lseek64`
//! are [`fdops`]'s, which the stdio streams and the copy loop share.

use crate::conv::{buf_mut, buf_ref, iovs};
use crate::dispatch::{Ticket, fd_call, fd_call_io, gated_rc, is_uvfs, path_call};
use crate::fdops;
use crate::guard::busy;
use crate::interpose::{forward, real};
use libc::{c_char, c_int, c_void, iovec, off_t, size_t, ssize_t};
use uvfs::uapi::AT_FDCWD;
use uvfs::{Errno, Process};

forward! {
    read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t = fdops::read(fd, buf, n);
    write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t = fdops::write(fd, buf, n);
    pread64(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t =
        fdops::pread64(fd, buf, n, off);
    pread(fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t =
        fdops::pread64(fd, buf, n, off);
    pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t =
        fdops::pwrite64(fd, buf, n, off);
    pwrite(fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t =
        fdops::pwrite64(fd, buf, n, off);
    lseek64(fd: c_int, off: off_t, whence: c_int) -> off_t = fdops::lseek64(fd, off, whence);
    lseek(fd: c_int, off: off_t, whence: c_int) -> off_t = fdops::lseek64(fd, off, whence);
}

/// `__read_chk` (`_FORTIFY_SOURCE`'s `read`): glibc's own when `n` exceeds
/// the buffer (it aborts), else `read`.
///
/// # Safety
/// `buf` points to `buflen` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        // SAFETY: the caller's arguments, unchanged; glibc reports the
        // overflow.
        return unsafe {
            real!(__read_chk: fn(c_int, *mut c_void, size_t, size_t) -> ssize_t)(fd, buf, n, buflen)
        };
    }
    // SAFETY: `n <= buflen` writable bytes, per the contract.
    unsafe { fdops::read(fd, buf, n) }
}

/// `__pread64_chk`: glibc's own when `n` exceeds the buffer, else
/// `pread64`.
///
/// # Safety
/// `buf` points to `buflen` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __pread64_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: off_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        // SAFETY: the caller's arguments, unchanged; glibc reports the
        // overflow.
        return unsafe {
            real!(__pread64_chk: fn(c_int, *mut c_void, size_t, off_t, size_t) -> ssize_t)(
                fd, buf, n, off, buflen,
            )
        };
    }
    // SAFETY: `n <= buflen` writable bytes, per the contract.
    unsafe { fdops::pread64(fd, buf, n, off) }
}

forward! {
    __pread_chk(fd: c_int, buf: *mut c_void, n: size_t, off: off_t, buflen: size_t) -> ssize_t =
        __pread64_chk(fd, buf, n, off, buflen);
}

/// `readv`.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a writable buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    fd_call_io(
        fd,
        // SAFETY: the caller's iovecs, unchanged, valid per the contract.
        || unsafe { real!(readv: fn(c_int, *const iovec, c_int) -> ssize_t)(fd, iov, cnt) },
        |p, u| {
            // SAFETY: the caller's iovecs, each a writable buffer.
            let v = unsafe { iovs(iov, cnt) }?;
            let mut bufs = Vec::with_capacity(v.len());
            for x in v {
                // SAFETY: as above.
                bufs.push(unsafe { buf_mut(x.iov_base, x.iov_len) }?);
            }
            Ok(p.readv(u, &mut bufs)? as ssize_t)
        },
        // A cancelled read has read nothing.
        |_| 0,
    )
}

/// `writev`.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a readable buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    fd_call_io(
        fd,
        // SAFETY: the caller's iovecs, unchanged, valid per the contract.
        || unsafe { real!(writev: fn(c_int, *const iovec, c_int) -> ssize_t)(fd, iov, cnt) },
        |p, u| {
            // SAFETY: the caller's iovecs.
            let v = unsafe { iovs(iov, cnt) }?;
            let mut bufs = Vec::with_capacity(v.len());
            for x in v {
                // SAFETY: as above.
                bufs.push(unsafe { buf_ref(x.iov_base, x.iov_len) }?);
            }
            crate::fdops::sigpipe(p.writev(u, &bufs)).map(|n| n as ssize_t)
        },
        // SAFETY: the caller's iovecs, as above.
        |done| unsafe { writev_rest(fd, iov, cnt, done) },
    )
}

/// The rest of a `writev` whose first `done` bytes were written: the
/// iovecs past them, through `writev` again.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a readable buffer.
unsafe fn writev_rest(fd: c_int, iov: *const iovec, cnt: c_int, done: usize) -> ssize_t {
    // SAFETY: per the contract.
    let Ok(v) = (unsafe { iovs(iov, cnt) }) else {
        return 0;
    };
    let mut skip = done;
    let mut left = Vec::with_capacity(v.len());
    for x in v {
        if skip >= x.iov_len {
            skip -= x.iov_len;
            continue;
        }
        left.push(iovec {
            // SAFETY: `skip` < the buffer's length.
            iov_base: unsafe { x.iov_base.cast::<u8>().add(skip).cast() },
            iov_len: x.iov_len - skip,
        });
        skip = 0;
    }
    if left.is_empty() {
        return 0;
    }
    // SAFETY: parts of the caller's buffers.
    unsafe { writev(fd, left.as_ptr(), left.len() as c_int) }
}

/// preadv/pwritev (and their `v2` forms, with `RWF_*` flags) on uvfs:
/// the library's `preadv2`/`pwritev2`. `off` -1 means the file position
/// only for the `v2` forms (`v2`); for preadv/pwritev every negative
/// offset is `EINVAL`.
///
/// # Safety
/// Each iovec of `v` is a buffer readable (`write`) or writable (not
/// `write`) for its length.
unsafe fn uvfs_preadv(
    p: &mut Process,
    u: i32,
    v: &[iovec],
    off: off_t,
    write: bool,
    flags: Option<c_int>,
) -> Result<ssize_t, Errno> {
    if off < 0 && (flags.is_none() || off != -1) {
        return Err(Errno::EINVAL);
    }
    let flags = flags.unwrap_or(0) as u32;
    if write {
        let mut bufs = Vec::with_capacity(v.len());
        for x in v {
            // SAFETY: a readable buffer, per the contract.
            bufs.push(unsafe { buf_ref(x.iov_base, x.iov_len) }?);
        }
        Ok(p.pwritev2(u, &bufs, off, flags)? as ssize_t)
    } else {
        let mut bufs = Vec::with_capacity(v.len());
        for x in v {
            // SAFETY: a writable buffer, per the contract.
            bufs.push(unsafe { buf_mut(x.iov_base, x.iov_len) }?);
        }
        Ok(p.preadv2(u, &mut bufs, off, flags)? as ssize_t)
    }
}

/// `preadv64v2`.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a writable buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv64v2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: off_t,
    flags: c_int,
) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's iovecs, unchanged, valid per the contract.
        || unsafe {
            real!(preadv64v2: fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t)(
                fd, iov, cnt, off, flags,
            )
        },
        // SAFETY: the caller's iovecs, each a writable buffer.
        |s, u| unsafe { uvfs_preadv(s.p(), u, iovs(iov, cnt)?, off, false, Some(flags)) },
    )
}

forward! {
    preadv2(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t, flags: c_int) -> ssize_t =
        preadv64v2(fd, iov, cnt, off, flags);
}

/// `pwritev64v2`.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a readable buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64v2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: off_t,
    flags: c_int,
) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's iovecs, unchanged, valid per the contract.
        || unsafe {
            real!(pwritev64v2: fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t)(
                fd, iov, cnt, off, flags,
            )
        },
        // SAFETY: the caller's iovecs, each a readable buffer.
        |s, u| unsafe { uvfs_preadv(s.p(), u, iovs(iov, cnt)?, off, true, Some(flags)) },
    )
}

forward! {
    pwritev2(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t, flags: c_int) -> ssize_t =
        pwritev64v2(fd, iov, cnt, off, flags);
}

/// `preadv64`.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a writable buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preadv64(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's iovecs, unchanged, valid per the contract.
        || unsafe {
            real!(preadv64: fn(c_int, *const iovec, c_int, off_t) -> ssize_t)(fd, iov, cnt, off)
        },
        // SAFETY: the caller's iovecs, each a writable buffer.
        |s, u| unsafe { uvfs_preadv(s.p(), u, iovs(iov, cnt)?, off, false, None) },
    )
}

forward! {
    preadv(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t =
        preadv64(fd, iov, cnt, off);
}

/// `pwritev64`.
///
/// # Safety
/// `iov` points to `cnt` iovecs, each a readable buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pwritev64(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: off_t,
) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's iovecs, unchanged, valid per the contract.
        || unsafe {
            real!(pwritev64: fn(c_int, *const iovec, c_int, off_t) -> ssize_t)(fd, iov, cnt, off)
        },
        // SAFETY: the caller's iovecs, each a readable buffer.
        |s, u| unsafe { uvfs_preadv(s.p(), u, iovs(iov, cnt)?, off, true, None) },
    )
}

forward! {
    pwritev(fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t =
        pwritev64(fd, iov, cnt, off);
}

/// `getdents64`.
///
/// # Safety
/// `buf` points to `n` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getdents64(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's buffer of `n` writable bytes.
        || unsafe { real!(getdents64: fn(c_int, *mut c_void, size_t) -> ssize_t)(fd, buf, n) },
        // SAFETY: as above.
        |s, u| Ok(s.p().getdents64(u, unsafe { buf_mut(buf, n) }?)? as ssize_t),
    )
}

// ---------------------------------------------------------------------------
// Sizes and sync.

/// `truncate`.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn truncate(path: *const c_char, len: off_t) -> c_int {
    let kernel = |_: c_int, p: *const c_char| {
        // SAFETY: the caller's path (or it made absolute, alive for the
        // call).
        unsafe { real!(truncate: fn(*const c_char, off_t) -> c_int)(p, len) }
    };
    /// Done, or a lease break to wait for outside the state.
    enum Step {
        Done(c_int),
        Wait(uvfs::Process, Vec<u8>),
    }
    // SAFETY: the caller's path, valid per the contract.
    let step = unsafe {
        path_call(
            AT_FDCWD,
            path,
            Step::Done(-1),
            |d, p| Step::Done(kernel(d, p)),
            |s, d, p| {
                if d != AT_FDCWD {
                    // Only AT_FDCWD routes reach here for a non-at call.
                    return Err(Errno::EBADF);
                }
                match s.p().truncate(p, len) {
                    Ok(()) => Ok(Step::Done(0)),
                    // The state's process does not wait for a lease break
                    // (see `state::new_process`): a thread handle does.
                    Err(Errno::EWOULDBLOCK) => Ok(Step::Wait(s.p().new_thread(), p.to_vec())),
                    Err(e) => Err(e),
                }
            },
        )
    };
    match step {
        Step::Done(r) => r,
        Step::Wait(mut t, p) => crate::guard::run(-1, || {
            t.set_lease_break_wait(true);
            t.truncate(&p, len).map(|()| 0)
        }),
    }
}

forward! {
    truncate64(path: *const c_char, len: off_t) -> c_int = truncate(path, len);
}

/// `ftruncate`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ftruncate(fd: c_int, len: off_t) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(ftruncate: fn(c_int, off_t) -> c_int)(fd, len) },
        |s, u| s.p().ftruncate(u, len).map(|()| 0),
    )
}

forward! {
    ftruncate64(fd: c_int, len: off_t) -> c_int = ftruncate(fd, len);
}

/// `fallocate`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(fallocate: fn(c_int, c_int, off_t, off_t) -> c_int)(fd, mode, off, len) },
        |s, u| s.p().fallocate(u, mode, off, len).map(|()| 0),
    )
}

forward! {
    fallocate64(fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int =
        fallocate(fd, mode, off, len);
}

/// `posix_fallocate` (returns the error number).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_fallocate(fd: c_int, off: off_t, len: off_t) -> c_int {
    // SAFETY: no pointers; any values are valid arguments.
    let kernel =
        || unsafe { real!(posix_fallocate: fn(c_int, off_t, off_t) -> c_int)(fd, off, len) };
    let t = Ticket::take();
    if !is_uvfs(fd) || busy() {
        return kernel();
    }
    gated_rc("posix_fallocate", t, |s| {
        let u = s.ufd(fd)?;
        s.p().fallocate(u, 0, off, len)
    })
    .unwrap_or_else(kernel)
}

forward! {
    posix_fallocate64(fd: c_int, off: off_t, len: off_t) -> c_int = posix_fallocate(fd, off, len);
}

/// `posix_fadvise` (returns the error number).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_fadvise(fd: c_int, off: off_t, len: off_t, advice: c_int) -> c_int {
    let kernel = || {
        // SAFETY: no pointers; any values are valid arguments.
        unsafe {
            real!(posix_fadvise: fn(c_int, off_t, off_t, c_int) -> c_int)(fd, off, len, advice)
        }
    };
    let t = Ticket::take();
    if !is_uvfs(fd) || busy() {
        return kernel();
    }
    // tmpfs ignores advice (Linux: generic_fadvise on shmem is a no-op
    // after the argument checks).
    gated_rc("posix_fadvise", t, |s| {
        let u = s.ufd(fd)?;
        s.p().fstat(u)?;
        if !(0..=5).contains(&advice) || len < 0 {
            return Err(Errno::EINVAL);
        }
        Ok(())
    })
    .unwrap_or_else(kernel)
}

forward! {
    posix_fadvise64(fd: c_int, off: off_t, len: off_t, advice: c_int) -> c_int =
        posix_fadvise(fd, off, len, advice);
}

/// `fsync`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any fd number is a valid argument.
        || unsafe { real!(fsync: fn(c_int) -> c_int)(fd) },
        |s, u| s.p().fsync(u).map(|()| 0),
    )
}

/// `fdatasync`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any fd number is a valid argument.
        || unsafe { real!(fdatasync: fn(c_int) -> c_int)(fd) },
        |s, u| s.p().fdatasync(u).map(|()| 0),
    )
}

// ---------------------------------------------------------------------------
// The calls glibc makes with internal syscalls of its own, or that programs
// reach only through their own names: served here for a uvfs fd rather
// than reaching the placeholder (`preadv2`/`pwritev2` and their `64` forms
// are above, with the library's `RWF_*` handling).

/// `getdirentries64`: `getdents64` with the directory's position before
/// the call stored in `*base`.
///
/// # Safety
/// `buf` points to `n` writable bytes; `base` is NULL or a writable
/// `off64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getdirentries64(
    fd: c_int,
    buf: *mut c_char,
    n: size_t,
    base: *mut off_t,
) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        || unsafe {
            real!(getdirentries64: fn(c_int, *mut c_char, size_t, *mut off_t) -> ssize_t)(
                fd, buf, n, base,
            )
        },
        |s, u| {
            let pos = s.p().lseek(u, 0, libc::SEEK_CUR)?;
            // SAFETY: the caller's buffer of `n` writable bytes.
            let r = s.p().getdents64(u, unsafe { buf_mut(buf.cast(), n) }?)?;
            if !base.is_null() {
                // SAFETY: writable per the contract.
                unsafe { *base = pos };
            }
            Ok(r as ssize_t)
        },
    )
}

forward! {
    getdirentries(fd: c_int, buf: *mut c_char, n: size_t, base: *mut off_t) -> ssize_t =
        getdirentries64(fd, buf, n, base);
}

/// `readahead`: on a uvfs file, the kernel's checks (an fd open for
/// reading, a regular file), then nothing to do: 0.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readahead(fd: c_int, off: off_t, count: size_t) -> ssize_t {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(readahead: fn(c_int, off_t, size_t) -> ssize_t)(fd, off, count) },
        |s, u| {
            let fl = s.p().fcntl(u, libc::F_GETFL, 0)?;
            if fl & libc::O_PATH != 0 || fl & libc::O_ACCMODE == libc::O_WRONLY {
                return Err(Errno::EBADF);
            }
            if s.p().fstat(u)?.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Err(Errno::EINVAL);
            }
            Ok(0)
        },
    )
}

/// `sync_file_range`: on a uvfs file, the kernel's argument checks, then
/// nothing to write back: 0.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sync_file_range(
    fd: c_int,
    off: off_t,
    nbytes: off_t,
    flags: libc::c_uint,
) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe {
            real!(sync_file_range: fn(c_int, off_t, off_t, libc::c_uint) -> c_int)(
                fd, off, nbytes, flags,
            )
        },
        |s, u| {
            if flags & !7 != 0 || off < 0 || nbytes < 0 || off.checked_add(nbytes).is_none() {
                return Err(Errno::EINVAL);
            }
            let fl = s.p().fcntl(u, libc::F_GETFL, 0)?;
            if fl & libc::O_PATH != 0 {
                return Err(Errno::EBADF);
            }
            match s.p().fstat(u)?.st_mode & libc::S_IFMT {
                libc::S_IFREG | libc::S_IFDIR | libc::S_IFBLK | libc::S_IFLNK => Ok(0),
                _ => Err(Errno::ESPIPE),
            }
        },
    )
}

/// `syncfs`: nothing to write back for a uvfs fd: 0.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn syncfs(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any fd number is a valid argument.
        || unsafe { real!(syncfs: fn(c_int) -> c_int)(fd) },
        |s, u| {
            if s.p().fcntl(u, libc::F_GETFL, 0)? & libc::O_PATH != 0 {
                return Err(Errno::EBADF);
            }
            Ok(0)
        },
    )
}
