//! `DIR` streams for uvfs directories: glibc's `opendir` and `fdopendir`
//! open and check the directory with internal calls the shim cannot see, so
//! the shim hands out its own stream, a [`UDir`] reading `getdents64`
//! records from uvfs. Its first word is a magic number no glibc `DIR` can
//! start with (glibc's starts with the fd, an int below 2^20), which is how
//! `readdir`, `closedir` and the rest tell the two apart. `scandir` of a
//! uvfs directory is built from such a stream too.

use crate::conv::{errno, set_errno};
use crate::dispatch::{Ticket, gated, is_uvfs, is_uvfs_path, path_call, with_kernel_path};
use crate::fdops::{uvfs_close, uvfs_open};
use crate::guard::busy;
use crate::interpose::{forward, real};
use crate::refuse::refuse;
use crate::state::{State, before_kernel_fd, hole_lower};
use libc::{c_char, c_int, c_long};
use uvfs::Errno;
use uvfs::uapi::{AT_FDCWD, O_CLOEXEC, O_DIRECTORY, O_RDONLY};

const MAGIC: u64 = 0x2152_4944_5346_5655; // "UVFSDIR!" little-endian

#[repr(C)]
struct UDir {
    magic: u64,
    fd: c_int,
    pos: usize,
    len: usize,
    /// The cookie of the last entry returned (`telldir`).
    filepos: i64,
    ent: libc::dirent64,
    buf: [u8; 32768],
}

/// The shim's stream behind `d`, if it is one.
///
/// # Safety
/// `d` is NULL or a live `DIR` (glibc's or the shim's) that nothing else
/// uses while the returned reference lives.
unsafe fn ours(d: *mut libc::DIR) -> Option<&'static mut UDir> {
    if d.is_null() {
        return None;
    }
    // SAFETY: a live DIR per the contract; every DIR (ours or glibc's,
    // whose struct is far larger than 8 bytes) starts with at least 8
    // readable bytes.
    let m = unsafe { d.cast::<u64>().read_unaligned() };
    if m != MAGIC {
        return None;
    }
    // SAFETY: the magic says this is a live `UDir` made by `new_dir`,
    // unaliased per the contract.
    Some(unsafe { &mut *d.cast::<UDir>() })
}

fn new_dir(s: &mut State, k: c_int) -> Result<*mut libc::DIR, Errno> {
    let u = s.ufd(k)?;
    let fl = s.p().fcntl(u, libc::F_GETFL, 0)?;
    if fl & libc::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    if s.p().fstat(u)?.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    // glibc's fdopendir also makes the fd close-on-exec.
    s.p().fcntl(u, libc::F_SETFD, libc::FD_CLOEXEC as u64)?;
    let layout = std::alloc::Layout::new::<UDir>();
    // SAFETY: `UDir` has a non-zero size; all-zero is a valid `UDir` (plain
    // integers and bytes), and the allocation has its layout, so the Box
    // may own and free it.
    let mut d: Box<UDir> = unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<UDir>();
        if p.is_null() {
            return Err(Errno::ENOMEM);
        }
        Box::from_raw(p)
    };
    d.magic = MAGIC;
    d.fd = k;
    Ok(Box::into_raw(d).cast())
}

/// `opendir`: a uvfs directory gets the shim's stream.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut libc::DIR {
    let null = std::ptr::null_mut();
    let kernel = |_: c_int, p: *const c_char| {
        before_kernel_fd();
        // SAFETY: the caller's path (or it made absolute, alive for
        // the call).
        unsafe { real!(opendir: fn(*const c_char) -> *mut libc::DIR)(p) }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, path, null, kernel, |s, d, p| {
            if p.is_empty() {
                return Err(Errno::ENOENT);
            }
            let k = uvfs_open(s, d, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)?;
            new_dir(s, k).inspect_err(|_| {
                let _ = uvfs_close(s, k);
            })
        })
    }
}

/// `fdopendir`: a uvfs fd gets the shim's stream (which then owns it).
///
/// # Safety
/// No pointer arguments; the stream takes `fd` over from the caller.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut libc::DIR {
    // SAFETY: no pointers; the caller's own fd.
    let kernel = || unsafe { real!(fdopendir: fn(c_int) -> *mut libc::DIR)(fd) };
    let t = Ticket::take();
    if !is_uvfs(fd) || busy() {
        return kernel();
    }
    gated("fdopendir", t, std::ptr::null_mut(), |s| new_dir(s, fd)).unwrap_or_else(kernel)
}

/// The next entry of a uvfs stream (NULL at the end, errno untouched, or
/// on an error, errno set).
fn next(d: &mut UDir) -> *mut libc::dirent64 {
    let fd = d.fd;
    if d.pos >= d.len {
        let t = Ticket::take();
        let buf = &mut d.buf;
        let n = is_uvfs(fd)
            .then(|| {
                gated("readdir", t, -1isize, |s| {
                    let u = s.ufd(fd)?;
                    Ok(s.p().getdents64(u, buf)? as isize)
                })
            })
            .flatten()
            .unwrap_or_else(|| {
                // A stream opened on uvfs whose fd was reopened through
                // the tree's mount (see `namespace`), at the offset uvfs
                // had reached: the kernel's records from there (those
                // already in the buffer were returned first).
                // SAFETY: the stream's own buffer, writable for its length.
                unsafe {
                    libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) as isize
                }
            });
        if n <= 0 {
            return std::ptr::null_mut();
        }
        d.pos = 0;
        d.len = n as usize;
    }
    let rec = &d.buf[d.pos..d.len];
    let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
    let name = &rec[19..reclen];
    let nlen = name
        .iter()
        .position(|&c| c == 0)
        .unwrap_or(name.len())
        .min(255);
    let e = &mut d.ent;
    e.d_ino = u64::from_ne_bytes(rec[0..8].try_into().unwrap_or([0; 8]));
    e.d_off = i64::from_ne_bytes(rec[8..16].try_into().unwrap_or([0; 8]));
    e.d_reclen = reclen as u16;
    e.d_type = rec[18];
    for (i, &c) in name[..nlen].iter().enumerate() {
        e.d_name[i] = c as c_char;
    }
    e.d_name[nlen] = 0;
    d.pos += reclen;
    d.filepos = e.d_off;
    &mut d.ent
}

/// `readdir64`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, used by no
/// other thread meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // SAFETY: the caller's stream, live per the contract.
    match unsafe { ours(dir) } {
        Some(d) => next(d),
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        None => unsafe { real!(readdir64: fn(*mut libc::DIR) -> *mut libc::dirent64)(dir) },
    }
}

/// `readdir`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, used by no
/// other thread meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // `struct dirent` and `struct dirent64` are the same on 64-bit Linux.
    // SAFETY: the caller's stream, live per the contract.
    match unsafe { ours(dir) } {
        Some(d) => next(d),
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        None => unsafe { real!(readdir: fn(*mut libc::DIR) -> *mut libc::dirent64)(dir) },
    }
}

/// `readdir64_r`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`; `entry`
/// points to a writable `struct dirent64`, `result` to a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir64_r(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    // SAFETY: the caller's stream, live per the contract.
    let Some(d) = (unsafe { ours(dir) }) else {
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        return unsafe {
            real!(readdir64_r: fn(*mut libc::DIR, *mut libc::dirent64, *mut *mut libc::dirent64) -> c_int)(
                dir, entry, result,
            )
        };
    };
    let saved = errno();
    set_errno(0);
    let e = next(d);
    let err = errno();
    set_errno(saved);
    // SAFETY: the caller's entry and result pointers, writable per the
    // contract.
    unsafe {
        if e.is_null() {
            *result = std::ptr::null_mut();
            return err;
        }
        std::ptr::copy_nonoverlapping(e, entry, 1);
        *result = entry;
    }
    0
}

/// `readdir_r`.
///
/// # Safety
/// As for [`readdir64_r`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir_r(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    // SAFETY: the caller's stream, live per the contract.
    if unsafe { ours(dir) }.is_none() {
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        return unsafe {
            real!(readdir_r: fn(*mut libc::DIR, *mut libc::dirent64, *mut *mut libc::dirent64) -> c_int)(
                dir, entry, result,
            )
        };
    }
    // SAFETY: the caller's arguments, valid per the same contract.
    unsafe { readdir64_r(dir, entry, result) }
}

/// `closedir`: a shim stream freed and its uvfs fd closed; for glibc's,
/// the freed kernel fd recorded.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, not used
/// again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    // SAFETY: the caller's stream, live per the contract.
    let Some(d) = (unsafe { ours(dir) }) else {
        let fd = if dir.is_null() {
            -1
        } else {
            // SAFETY: the caller's live glibc stream.
            unsafe { real!(dirfd: fn(*mut libc::DIR) -> c_int)(dir) }
        };
        // SAFETY: the caller's stream (or NULL), unchanged.
        let r = unsafe { real!(closedir: fn(*mut libc::DIR) -> c_int)(dir) };
        hole_lower(fd);
        return r;
    };
    let fd = d.fd;
    d.magic = 0;
    // SAFETY: made by `new_dir` with Box::into_raw; the magic is cleared so
    // a use after close is not taken for a live stream.
    drop(unsafe { Box::from_raw(dir.cast::<UDir>()) });
    let kernel = || {
        // Reopened through the tree's mount: the kernel's fd.
        // SAFETY: the stream owned the fd.
        let r = unsafe { real!(close: fn(c_int) -> c_int)(fd) };
        hole_lower(fd);
        r
    };
    let t = Ticket::take();
    if !is_uvfs(fd) {
        return kernel();
    }
    gated("closedir", t, -1, |s| uvfs_close(s, fd)).unwrap_or_else(kernel)
}

/// `dirfd`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, used by no
/// other thread meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dirfd(dir: *mut libc::DIR) -> c_int {
    // SAFETY: the caller's stream, live per the contract.
    match unsafe { ours(dir) } {
        Some(d) => d.fd,
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        None => unsafe { real!(dirfd: fn(*mut libc::DIR) -> c_int)(dir) },
    }
}

fn seek(d: &mut UDir, to: i64) {
    let fd = d.fd;
    let t = Ticket::take();
    let done = is_uvfs(fd)
        && gated("seekdir", t, -1, |s| {
            let u = s.ufd(fd)?;
            s.p().lseek(u, to, libc::SEEK_SET)
        })
        .is_some();
    if !done {
        // SAFETY: the stream's fd (reopened through the tree's mount).
        unsafe { libc::syscall(libc::SYS_lseek, fd, to, libc::SEEK_SET) };
    }
    d.pos = 0;
    d.len = 0;
    d.filepos = to;
}

/// `rewinddir`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, used by no
/// other thread meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rewinddir(dir: *mut libc::DIR) {
    // SAFETY: the caller's stream, live per the contract.
    match unsafe { ours(dir) } {
        Some(d) => seek(d, 0),
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        None => unsafe { real!(rewinddir: fn(*mut libc::DIR) -> ())(dir) },
    }
}

/// `seekdir`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, used by no
/// other thread meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seekdir(dir: *mut libc::DIR, loc: c_long) {
    // SAFETY: the caller's stream, live per the contract.
    match unsafe { ours(dir) } {
        Some(d) => seek(d, loc),
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        None => unsafe { real!(seekdir: fn(*mut libc::DIR, c_long) -> ())(dir, loc) },
    }
}

/// `telldir`.
///
/// # Safety
/// `dir` is NULL or a live stream from `opendir`/`fdopendir`, used by no
/// other thread meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telldir(dir: *mut libc::DIR) -> c_long {
    // SAFETY: the caller's stream, live per the contract.
    match unsafe { ours(dir) } {
        Some(d) => d.filepos,
        // SAFETY: the caller's arguments, unchanged: glibc's own stream.
        None => unsafe { real!(telldir: fn(*mut libc::DIR) -> c_long)(dir) },
    }
}

/// `scandir`'s filter and comparison callbacks.
type ScanFilter = Option<unsafe extern "C" fn(*const libc::dirent64) -> c_int>;
type ScanCompar =
    Option<unsafe extern "C" fn(*mut *const libc::dirent64, *mut *const libc::dirent64) -> c_int>;

/// `scandir` of a uvfs directory: glibc's opens the directory with internal
/// calls, so the shim builds the list itself from its own stream, as glibc
/// does (entries `malloc`ed one by one, the array `malloc`ed, sorted with
/// `qsort`; the caller frees them), with errno restored on success.
///
/// # Safety
/// As for [`scandir`].
unsafe fn scandir_uvfs(
    path: *const c_char,
    list: *mut *mut *mut libc::dirent64,
    filter: ScanFilter,
    compar: ScanCompar,
) -> c_int {
    let saved = errno();
    // SAFETY: the caller's path; our own opendir routes it to uvfs.
    let dir = unsafe { opendir(path) };
    if dir.is_null() {
        return -1;
    }
    let mut v: Vec<*mut libc::dirent64> = Vec::new();
    let free_all = |v: &[*mut libc::dirent64]| {
        for &p in v {
            // SAFETY: each entry was malloc'ed below and not handed out.
            unsafe { libc::free(p.cast()) };
        }
    };
    loop {
        set_errno(0);
        // SAFETY: our own live stream.
        let e = unsafe { readdir64(dir) };
        if e.is_null() {
            let err = errno();
            if err != 0 {
                free_all(&v);
                // SAFETY: our own stream, closed once.
                unsafe { closedir(dir) };
                set_errno(err);
                return -1;
            }
            break;
        }
        if let Some(f) = filter {
            // SAFETY: the caller's filter, given an entry as glibc would.
            if unsafe { f(e) } == 0 {
                continue;
            }
        }
        // SAFETY: a plain allocation of one dirent64, filled at once.
        let p =
            unsafe { libc::malloc(std::mem::size_of::<libc::dirent64>()) }.cast::<libc::dirent64>();
        if p.is_null() {
            free_all(&v);
            // SAFETY: as above.
            unsafe { closedir(dir) };
            set_errno(libc::ENOMEM);
            return -1;
        }
        // SAFETY: `e` is our stream's entry, `p` a fresh one of its size.
        unsafe { std::ptr::copy_nonoverlapping(e, p, 1) };
        v.push(p);
    }
    // SAFETY: our own stream, closed once.
    unsafe { closedir(dir) };
    if let Some(c) = compar {
        // SAFETY: qsort calls the comparison with pointers to two elements
        // of the array, exactly the `const struct dirent **` arguments the
        // caller's function takes; the two function types share one ABI.
        unsafe {
            let c: unsafe extern "C" fn(*const libc::c_void, *const libc::c_void) -> c_int =
                std::mem::transmute(c);
            libc::qsort(
                v.as_mut_ptr().cast(),
                v.len(),
                std::mem::size_of::<*mut libc::dirent64>(),
                Some(c),
            );
        }
    }
    let bytes = v.len().max(1) * std::mem::size_of::<*mut libc::dirent64>();
    // SAFETY: a plain allocation for the array of entry pointers.
    let arr = unsafe { libc::malloc(bytes) }.cast::<*mut libc::dirent64>();
    if arr.is_null() {
        free_all(&v);
        set_errno(libc::ENOMEM);
        return -1;
    }
    // SAFETY: `arr` holds `v.len()` pointers; `list` is the caller's.
    unsafe {
        std::ptr::copy_nonoverlapping(v.as_ptr(), arr, v.len());
        *list = arr;
    }
    set_errno(saved);
    c_int::try_from(v.len()).unwrap_or(c_int::MAX)
}

/// `scandir`.
///
/// # Safety
/// `path` is NULL or a valid C string; `list` points to a writable
/// pointer; `filter` and `compar` are NULL or functions of glibc's
/// `scandir` callback types.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scandir(
    path: *const c_char,
    list: *mut *mut *mut libc::dirent64,
    filter: ScanFilter,
    compar: ScanCompar,
) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if !unsafe { is_uvfs_path(path) } {
        // SAFETY: the caller's arguments, valid per the contract, the path
        // perhaps replaced by the host path it stands for.
        return unsafe {
            with_kernel_path(path, |p| {
                real!(scandir: fn(*const c_char, *mut *mut *mut libc::dirent64, ScanFilter, ScanCompar) -> c_int)(
                    p, list, filter, compar,
                )
            })
        };
    }
    // SAFETY: the caller's arguments, valid per the contract.
    unsafe { scandir_uvfs(path, list, filter, compar) }
}

forward! {
    scandir64(
        path: *const c_char,
        list: *mut *mut *mut libc::dirent64,
        filter: ScanFilter,
        compar: ScanCompar,
    ) -> c_int =
        scandir(path, list, filter, compar);
}

/// `scandirat`: relative to the cwd, the shim's `scandir`; a uvfs path
/// relative to another directory fd refused (glibc reads it with internal
/// calls); anything else glibc's.
///
/// # Safety
/// As for [`scandir`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scandirat(
    dirfd: c_int,
    path: *const c_char,
    list: *mut *mut *mut libc::dirent64,
    filter: ScanFilter,
    compar: ScanCompar,
) -> c_int {
    if dirfd == AT_FDCWD {
        // SAFETY: the caller's arguments, valid per the contract.
        return unsafe { scandir(path, list, filter, compar) };
    }
    let kernel = |d: c_int, p: *const c_char| {
        // SAFETY: the caller's arguments, the path perhaps the host path it
        // stands for (alive for the call).
        unsafe {
            real!(scandirat: fn(c_int, *const c_char, *mut *mut *mut libc::dirent64, ScanFilter, ScanCompar) -> c_int)(
                d, p, list, filter, compar,
            )
        }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |_, _, _| {
            Err(refuse!(
                "scandirat",
                "of a uvfs directory from a directory fd",
                EOPNOTSUPP
            ))
        })
    }
}

forward! {
    scandirat64(
        dirfd: c_int,
        path: *const c_char,
        list: *mut *mut *mut libc::dirent64,
        filter: ScanFilter,
        compar: ScanCompar,
    ) -> c_int =
        scandirat(dirfd, path, list, filter, compar);
}
