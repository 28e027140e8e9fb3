//! `DIR` streams for uvfs directories: glibc's `opendir` and `fdopendir`
//! open and check the directory with internal calls the shim cannot see, so
//! the shim hands out its own stream, a [`UDir`] reading `getdents64`
//! records from uvfs. Its first word is a magic number no glibc `DIR` can
//! start with (glibc's starts with the fd, an int below 2^20), which is how
//! `readdir`, `closedir` and the rest tell the two apart.
#![allow(clippy::missing_safety_doc)]

use crate::hooks::{is_uvfs, path_call, uvfs_close, uvfs_open};
use crate::state::{State, with_state};
use crate::{busy, forward, real, run};
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

fn ours(d: *mut libc::DIR) -> Option<&'static mut UDir> {
    if d.is_null() {
        return None;
    }
    // SAFETY: every DIR (ours or glibc's, whose struct is far larger than 8
    // bytes) starts with at least 8 readable bytes.
    let m = unsafe { d.cast::<u64>().read_unaligned() };
    if m != MAGIC {
        return None;
    }
    // SAFETY: the magic says this is a live `UDir` made by `new_dir`.
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut libc::DIR {
    let null = std::ptr::null_mut();
    // SAFETY: the caller's path.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            null,
            |_, p| {
                crate::state::before_kernel_fd();
                real!(opendir: fn(*const c_char) -> *mut libc::DIR)(p)
            },
            |s, d, p| {
                if p.is_empty() {
                    return Err(Errno::ENOENT);
                }
                let k = uvfs_open(s, d, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)?;
                new_dir(s, k).inspect_err(|_| {
                    let _ = uvfs_close(s, k);
                })
            },
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut libc::DIR {
    if !is_uvfs(fd) || busy() {
        return real!(fdopendir: fn(c_int) -> *mut libc::DIR)(fd);
    }
    run(std::ptr::null_mut(), || with_state(|s| new_dir(s, fd)))
}

/// The next entry of a uvfs stream (NULL at the end, errno untouched, or
/// on an error, errno set).
fn next(d: &mut UDir) -> *mut libc::dirent64 {
    let fd = d.fd;
    if d.pos >= d.len {
        let n = run(-1isize, || {
            with_state(|s| {
                let u = s.ufd(fd)?;
                Ok(s.p().getdents64(u, &mut d.buf)? as isize)
            })
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    match ours(dir) {
        Some(d) => next(d),
        None => real!(readdir64: fn(*mut libc::DIR) -> *mut libc::dirent64)(dir),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // `struct dirent` and `struct dirent64` are the same on 64-bit Linux.
    match ours(dir) {
        Some(d) => next(d),
        None => real!(readdir: fn(*mut libc::DIR) -> *mut libc::dirent64)(dir),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir64_r(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    let Some(d) = ours(dir) else {
        return real!(readdir64_r: fn(*mut libc::DIR, *mut libc::dirent64, *mut *mut libc::dirent64) -> c_int)(
            dir, entry, result,
        );
    };
    let saved = errno();
    crate::set_errno(0);
    let e = next(d);
    let err = errno();
    crate::set_errno(saved);
    // SAFETY: the caller's entry and result pointers.
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

#[unsafe(no_mangle)]
pub unsafe extern "C" fn readdir_r(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    if ours(dir).is_none() {
        return real!(readdir_r: fn(*mut libc::DIR, *mut libc::dirent64, *mut *mut libc::dirent64) -> c_int)(
            dir, entry, result,
        );
    }
    // SAFETY: forwarded.
    unsafe { readdir64_r(dir, entry, result) }
}

fn errno() -> c_int {
    // SAFETY: this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    let Some(d) = ours(dir) else {
        let fd = if dir.is_null() {
            -1
        } else {
            real!(dirfd: fn(*mut libc::DIR) -> c_int)(dir)
        };
        let r = real!(closedir: fn(*mut libc::DIR) -> c_int)(dir);
        crate::state::hole_lower(fd);
        return r;
    };
    let fd = d.fd;
    d.magic = 0;
    // SAFETY: made by `new_dir` with Box::into_raw; the magic is cleared so
    // a use after close is not taken for a live stream.
    drop(unsafe { Box::from_raw(dir.cast::<UDir>()) });
    run(-1, || with_state(|s| uvfs_close(s, fd)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dirfd(dir: *mut libc::DIR) -> c_int {
    match ours(dir) {
        Some(d) => d.fd,
        None => real!(dirfd: fn(*mut libc::DIR) -> c_int)(dir),
    }
}

fn seek(d: &mut UDir, to: i64) {
    let fd = d.fd;
    let _ = run(-1, || {
        with_state(|s| {
            let u = s.ufd(fd)?;
            s.p().lseek(u, to, libc::SEEK_SET)
        })
    });
    d.pos = 0;
    d.len = 0;
    d.filepos = to;
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rewinddir(dir: *mut libc::DIR) {
    match ours(dir) {
        Some(d) => seek(d, 0),
        None => real!(rewinddir: fn(*mut libc::DIR) -> ())(dir),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn seekdir(dir: *mut libc::DIR, loc: c_long) {
    match ours(dir) {
        Some(d) => seek(d, loc),
        None => real!(seekdir: fn(*mut libc::DIR, c_long) -> ())(dir, loc),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn telldir(dir: *mut libc::DIR) -> c_long {
    match ours(dir) {
        Some(d) => d.filepos,
        None => real!(telldir: fn(*mut libc::DIR) -> c_long)(dir),
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
        crate::set_errno(0);
        // SAFETY: our own live stream.
        let e = unsafe { readdir64(dir) };
        if e.is_null() {
            let err = errno();
            if err != 0 {
                free_all(&v);
                // SAFETY: our own stream, closed once.
                unsafe { closedir(dir) };
                crate::set_errno(err);
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
            crate::set_errno(libc::ENOMEM);
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
        crate::set_errno(libc::ENOMEM);
        return -1;
    }
    // SAFETY: `arr` holds `v.len()` pointers; `list` is the caller's.
    unsafe {
        std::ptr::copy_nonoverlapping(v.as_ptr(), arr, v.len());
        *list = arr;
    }
    crate::set_errno(saved);
    c_int::try_from(v.len()).unwrap_or(c_int::MAX)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn scandir(
    path: *const c_char,
    list: *mut *mut *mut libc::dirent64,
    filter: ScanFilter,
    compar: ScanCompar,
) -> c_int {
    if !crate::hooks::is_uvfs_path(path) {
        return real!(scandir: fn(*const c_char, *mut *mut *mut libc::dirent64, ScanFilter, ScanCompar) -> c_int)(
            path, list, filter, compar,
        );
    }
    // SAFETY: forwarded C arguments.
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
