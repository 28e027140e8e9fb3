//! Conversions between the C side and uvfs: errno, C strings, byte and
//! iovec buffers, and the C structs uvfs answers in its own types
//! (`struct stat`, `struct statx`) or takes in them (`timespec` pairs).
//! Nothing here knows about routing or the state.

use libc::{c_char, c_int, c_void, iovec};
use std::ffi::CStr;
use uvfs::Errno;
use uvfs::uapi::Timespec;

/// Sets the C `errno`.
#[inline]
pub(crate) fn set_errno(e: i32) {
    // SAFETY: `__errno_location` returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

/// The C `errno`.
#[inline]
pub(crate) fn errno() -> c_int {
    // SAFETY: `__errno_location` returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// A rustix error as a uvfs `Errno`.
pub(crate) fn errno_of(e: rustix::io::Errno) -> Errno {
    Errno::from_raw(e.raw_os_error())
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
    // SAFETY: non-NULL, so NUL-terminated and alive per the contract.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// Writes a uvfs `Stat` as the C `struct stat`.
///
/// # Safety
/// `buf` is NULL (→ `EFAULT`) or points to a writable `struct stat`.
pub(crate) unsafe fn put_stat(s: &uvfs::Stat, buf: *mut libc::stat) -> Result<c_int, Errno> {
    if buf.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: an all-zero `struct stat` is valid.
    let mut c: libc::stat = unsafe { std::mem::zeroed() };
    c.st_dev = s.st_dev as _;
    c.st_ino = s.st_ino as _;
    c.st_nlink = s.st_nlink as _;
    c.st_mode = s.st_mode as _;
    c.st_uid = s.st_uid;
    c.st_gid = s.st_gid;
    c.st_rdev = s.st_rdev as _;
    c.st_size = s.st_size as _;
    c.st_blksize = s.st_blksize as _;
    c.st_blocks = s.st_blocks as _;
    c.st_atime = s.st_atime as _;
    c.st_atime_nsec = s.st_atime_nsec as _;
    c.st_mtime = s.st_mtime as _;
    c.st_mtime_nsec = s.st_mtime_nsec as _;
    c.st_ctime = s.st_ctime as _;
    c.st_ctime_nsec = s.st_ctime_nsec as _;
    // SAFETY: `buf` is writable per the contract.
    unsafe { buf.write_unaligned(c) };
    Ok(0)
}

/// Writes a uvfs `Statx` as the C `struct statx`.
///
/// # Safety
/// `buf` is NULL (→ `EFAULT`) or points to a writable `struct statx`.
pub(crate) unsafe fn put_statx(s: &uvfs::Statx, buf: *mut libc::statx) -> Result<c_int, Errno> {
    if buf.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: an all-zero `struct statx` is valid.
    let mut c: libc::statx = unsafe { std::mem::zeroed() };
    let ts = |t: uvfs::stat::StatxTimestamp| {
        // SAFETY: all-zero is a valid timestamp.
        let mut x: libc::statx_timestamp = unsafe { std::mem::zeroed() };
        x.tv_sec = t.tv_sec;
        x.tv_nsec = t.tv_nsec;
        x
    };
    c.stx_mask = s.stx_mask;
    c.stx_blksize = s.stx_blksize;
    c.stx_attributes = s.stx_attributes;
    c.stx_nlink = s.stx_nlink;
    c.stx_uid = s.stx_uid;
    c.stx_gid = s.stx_gid;
    c.stx_mode = s.stx_mode;
    c.stx_ino = s.stx_ino;
    c.stx_size = s.stx_size;
    c.stx_blocks = s.stx_blocks;
    c.stx_attributes_mask = s.stx_attributes_mask;
    c.stx_atime = ts(s.stx_atime);
    c.stx_btime = ts(s.stx_btime);
    c.stx_ctime = ts(s.stx_ctime);
    c.stx_mtime = ts(s.stx_mtime);
    c.stx_rdev_major = s.stx_rdev_major;
    c.stx_rdev_minor = s.stx_rdev_minor;
    c.stx_dev_major = s.stx_dev_major;
    c.stx_dev_minor = s.stx_dev_minor;
    c.stx_mnt_id = s.stx_mnt_id;
    // SAFETY: `buf` is writable per the contract.
    unsafe { buf.write_unaligned(c) };
    Ok(0)
}

/// A mutable byte slice from C (empty for a zero length, whatever the
/// pointer; `EFAULT` for NULL).
///
/// # Safety
/// `p` is NULL or points to `n` writable bytes, unaliased for `'a`, when
/// `n > 0`.
pub(crate) unsafe fn buf_mut<'a>(p: *mut c_void, n: usize) -> Result<&'a mut [u8], Errno> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: non-NULL, so `n` writable bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), n) })
}

/// A byte slice from C (empty for a zero length, whatever the pointer;
/// `EFAULT` for NULL).
///
/// # Safety
/// `p` is NULL or points to `n` readable bytes, alive for `'a`, when
/// `n > 0`.
pub(crate) unsafe fn buf_ref<'a>(p: *const c_void, n: usize) -> Result<&'a [u8], Errno> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: non-NULL, so `n` readable bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast(), n) })
}

/// The caller's iovec array (`EINVAL` for a count outside 0..=1024, as
/// `UIO_MAXIOV`; `EFAULT` for NULL).
///
/// # Safety
/// `iov` is NULL or points to `cnt` readable iovecs, alive for `'a`, when
/// `cnt > 0`.
pub(crate) unsafe fn iovs<'a>(iov: *const iovec, cnt: c_int) -> Result<&'a [iovec], Errno> {
    if !(0..=1024).contains(&cnt) {
        return Err(Errno::EINVAL);
    }
    if cnt == 0 {
        return Ok(&[]);
    }
    if iov.is_null() {
        return Err(Errno::EFAULT);
    }
    // SAFETY: non-NULL, so `cnt` iovecs per the contract.
    Ok(unsafe { std::slice::from_raw_parts(iov, cnt as usize) })
}

/// The caller's two timespecs (access, modification) as uvfs's; `None`
/// for NULL (both now).
///
/// # Safety
/// `t` is NULL or points to two readable `struct timespec`s.
pub(crate) unsafe fn times_of(t: *const libc::timespec) -> Option<[Timespec; 2]> {
    if t.is_null() {
        return None;
    }
    // SAFETY: non-NULL, so two timespecs per the contract.
    let (a, m) = unsafe { (t.read_unaligned(), t.add(1).read_unaligned()) };
    Some([
        Timespec {
            tv_sec: a.tv_sec,
            tv_nsec: a.tv_nsec,
        },
        Timespec {
            tv_sec: m.tv_sec,
            tv_nsec: m.tv_nsec,
        },
    ])
}

/// timevals → timespecs (NULL stays NULL: now). `Err` (`EINVAL` to the
/// caller) for microseconds out of range, as glibc's conversion does.
///
/// # Safety
/// `tv` is NULL or points to two readable `struct timeval`s.
pub(crate) unsafe fn tv_to_ts(tv: *const libc::timeval) -> Result<Option<[libc::timespec; 2]>, ()> {
    if tv.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, so two timevals per the contract.
    let (a, m) = unsafe { (tv.read_unaligned(), tv.add(1).read_unaligned()) };
    let c = |t: libc::timeval| -> Result<libc::timespec, ()> {
        if !(0..1_000_000).contains(&t.tv_usec) {
            return Err(());
        }
        Ok(libc::timespec {
            tv_sec: t.tv_sec,
            tv_nsec: t.tv_usec * 1000,
        })
    };
    Ok(Some([c(a)?, c(m)?]))
}
