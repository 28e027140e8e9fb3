//! What the shim cannot serve for a uvfs path or fd, refused loudly
//! ([`refuse!`]: a clear errno and one line on stderr per call per
//! process) instead of reaching the kernel, where the path would name
//! nothing (or, worse, a host file of the same name) and the fd would be
//! the placeholder's `/dev/null`:
//!
//! - the `exec` family and `posix_spawn` of a uvfs file: `EACCES`, in
//!   [`exec`](super::exec);
//! - `chroot` into, `mount` on, `umount`/`umount2` of a uvfs directory:
//!   `EOPNOTSUPP`;
//! - `name_to_handle_at` of a uvfs path, `open_by_handle_at` on a uvfs
//!   fd: `EOPNOTSUPP` (Linux's answer for a file system without handles);
//! - `inotify_add_watch` and `fanotify_mark` of a uvfs path or fd:
//!   `EOPNOTSUPP` (no event source; `tail -f` then polls);
//! - `sendmsg`/`sendmmsg` passing a uvfs fd (`SCM_RIGHTS`): `EOPNOTSUPP`
//!   (the receiver would get the placeholder);
//! - `bind`/`connect` of an `AF_UNIX` socket to a path under the prefix:
//!   `EOPNOTSUPP` (a socket file cannot live in uvfs);
//! - glibc's tree walkers and `glob` on a uvfs path (`ftw`, `nftw`,
//!   `fts_open`, their `64` forms, `glob`/`glob64` without
//!   `GLOB_ALTDIRFUNC`): `ENOTSUP`, since they open and read directories
//!   with internal calls the shim cannot see;
//! - POSIX AIO (`aio_read`, `aio_write`, `aio_fsync`, `lio_listio`, their
//!   `64` forms) on a uvfs fd: `EOPNOTSUPP` (glibc's helper threads would
//!   read and write the placeholder).
//!
//! A path that climbs out of the prefix (`/uvfs/../x`) goes to the kernel
//! as the host path it stands for; any other path or fd goes to the next
//! definition unchanged.

use crate::conv::set_errno;
use crate::dispatch::{fd_call, is_uvfs, is_uvfs_path, path_call, route, with_kernel_path};
use crate::interpose::{forward, real};
use crate::path::Route;
use crate::refuse::refuse;
use libc::{c_char, c_int, c_uint, c_ulong, c_void, sockaddr, socklen_t};
use uvfs::uapi::AT_FDCWD;

type P = *const c_char;

/// Fails a call returning -1 with `e` in errno.
fn fail(e: uvfs::Errno) -> c_int {
    set_errno(e.raw());
    -1
}

// ---------------------------------------------------------------------------
// The namespace of the process: chroot, mount, umount.

/// `chroot`.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chroot(path: P) -> c_int {
    // SAFETY: the caller's path (or the host path it stands for).
    let kernel = |_: c_int, p: P| unsafe { real!(chroot: fn(P) -> c_int)(p) };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, path, -1, kernel, |_, _, _| {
            Err(refuse!("chroot", "into a uvfs directory", EOPNOTSUPP))
        })
    }
}

/// `mount`: a target under the prefix refused.
///
/// # Safety
/// The C contract of `mount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mount(
    src: P,
    target: P,
    fstype: P,
    flags: c_ulong,
    data: *const c_void,
) -> c_int {
    let kernel = |_: c_int, t: P| {
        // SAFETY: the caller's arguments, the target perhaps the host path
        // it stands for.
        unsafe {
            real!(mount: fn(P, P, P, c_ulong, *const c_void) -> c_int)(src, t, fstype, flags, data)
        }
    };
    // SAFETY: the caller's target, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, target, -1, kernel, |_, _, _| {
            Err(refuse!("mount", "on a uvfs directory", EOPNOTSUPP))
        })
    }
}

/// `umount2`.
///
/// # Safety
/// `target` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn umount2(target: P, flags: c_int) -> c_int {
    // SAFETY: the caller's target (or the host path it stands for).
    let kernel = |_: c_int, t: P| unsafe { real!(umount2: fn(P, c_int) -> c_int)(t, flags) };
    // SAFETY: the caller's target, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, target, -1, kernel, |_, _, _| {
            Err(refuse!("umount", "of a uvfs directory", EOPNOTSUPP))
        })
    }
}

forward! {
    umount(target: P) -> c_int = umount2(target, 0);
}

// ---------------------------------------------------------------------------
// File handles and notifications.

/// `name_to_handle_at`.
///
/// # Safety
/// The C contract of `name_to_handle_at`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn name_to_handle_at(
    dirfd: c_int,
    path: P,
    handle: *mut c_void,
    mount_id: *mut c_int,
    flags: c_int,
) -> c_int {
    let kernel = |d: c_int, p: P| {
        // SAFETY: the caller's arguments, the path perhaps the host path it
        // stands for.
        unsafe {
            real!(name_to_handle_at: fn(c_int, P, *mut c_void, *mut c_int, c_int) -> c_int)(
                d, p, handle, mount_id, flags,
            )
        }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |_, _, _| {
            Err(refuse!("name_to_handle_at", "on a uvfs file", EOPNOTSUPP))
        })
    }
}

/// `open_by_handle_at`: a uvfs `mount_fd` refused.
///
/// # Safety
/// The C contract of `open_by_handle_at`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open_by_handle_at(
    mount_fd: c_int,
    handle: *mut c_void,
    flags: c_int,
) -> c_int {
    fd_call(
        mount_fd,
        -1,
        || {
            crate::state::before_kernel_fd();
            // SAFETY: the caller's arguments, unchanged.
            unsafe {
                real!(open_by_handle_at: fn(c_int, *mut c_void, c_int) -> c_int)(
                    mount_fd, handle, flags,
                )
            }
        },
        |_, _| Err(refuse!("open_by_handle_at", "on a uvfs file", EOPNOTSUPP)),
    )
}

/// `inotify_add_watch`.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn inotify_add_watch(fd: c_int, path: P, mask: u32) -> c_int {
    // SAFETY: the caller's arguments (the path perhaps the host path it
    // stands for).
    let kernel = |_: c_int, p: P| unsafe {
        real!(inotify_add_watch: fn(c_int, P, u32) -> c_int)(fd, p, mask)
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, path, -1, kernel, |_, _, _| {
            Err(refuse!("inotify_add_watch", "on a uvfs file", EOPNOTSUPP))
        })
    }
}

/// `fanotify_mark`: a uvfs path, or with a NULL path a uvfs `dirfd`,
/// refused.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fanotify_mark(
    fd: c_int,
    flags: c_uint,
    mask: u64,
    dirfd: c_int,
    path: P,
) -> c_int {
    let kernel = |d: c_int, p: P| {
        // SAFETY: the caller's arguments (the path perhaps the host path
        // it stands for).
        unsafe {
            real!(fanotify_mark: fn(c_int, c_uint, u64, c_int, P) -> c_int)(fd, flags, mask, d, p)
        }
    };
    if path.is_null() {
        if is_uvfs(dirfd) {
            return fail(refuse!("fanotify_mark", "on a uvfs file", EOPNOTSUPP));
        }
        return kernel(dirfd, path);
    }
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |_, _, _| {
            Err(refuse!("fanotify_mark", "on a uvfs file", EOPNOTSUPP))
        })
    }
}

// ---------------------------------------------------------------------------
// AF_UNIX socket paths.

/// Where the `AF_UNIX` path in `addr` goes: `None` for the kernel with the
/// caller's address, `Some(Ok(addr))` for the kernel with this address
/// (the host path a path climbing out of the prefix stands for),
/// `Some(Err(()))` for a path under the prefix.
///
/// # Safety
/// `addr` is NULL or points to `len` readable bytes.
unsafe fn unix_route(
    addr: *const sockaddr,
    len: socklen_t,
) -> Option<Result<libc::sockaddr_un, ()>> {
    let off = std::mem::offset_of!(libc::sockaddr_un, sun_path);
    let len = len as usize;
    if addr.is_null() || len <= off || len > std::mem::size_of::<libc::sockaddr_un>() {
        return None;
    }
    // SAFETY: at least `off + 1` readable bytes, per the contract.
    if c_int::from(unsafe { (*addr).sa_family }) != libc::AF_UNIX {
        return None;
    }
    // SAFETY: `len` readable bytes, per the contract.
    let raw = unsafe { std::slice::from_raw_parts(addr.cast::<u8>().add(off), len - off) };
    let path = &raw[..raw.iter().position(|&c| c == 0).unwrap_or(raw.len())];
    if path.is_empty() {
        return None; // unnamed or abstract
    }
    match route(AT_FDCWD, path)? {
        Route::Kernel => None,
        Route::Uvfs(..) => Some(Err(())),
        Route::KernelAbs(abs) => {
            // SAFETY: an all-zero sockaddr_un is valid.
            let mut un: libc::sockaddr_un = unsafe { std::mem::zeroed() };
            if abs.len() >= un.sun_path.len() {
                return None;
            }
            un.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (d, &c) in un.sun_path.iter_mut().zip(&abs) {
                *d = c as c_char;
            }
            Some(Ok(un))
        }
    }
}

/// `bind`: an `AF_UNIX` path under the prefix refused.
///
/// # Safety
/// The C contract of `bind`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    let real_fn = real!(bind: fn(c_int, *const sockaddr, socklen_t) -> c_int);
    // SAFETY: the caller's address, per the contract.
    match unsafe { unix_route(addr, len) } {
        // SAFETY: the caller's arguments, unchanged.
        None => unsafe { real_fn(fd, addr, len) },
        Some(Err(())) => fail(refuse!("bind", "of a socket under the prefix", EOPNOTSUPP)),
        // SAFETY: a valid sockaddr_un of our own, alive for the call.
        Some(Ok(un)) => unsafe {
            real_fn(
                fd,
                (&raw const un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as socklen_t,
            )
        },
    }
}

/// `connect`: an `AF_UNIX` path under the prefix refused.
///
/// # Safety
/// The C contract of `connect`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    let real_fn = real!(connect: fn(c_int, *const sockaddr, socklen_t) -> c_int);
    // SAFETY: the caller's address, per the contract.
    match unsafe { unix_route(addr, len) } {
        // SAFETY: the caller's arguments, unchanged.
        None => unsafe { real_fn(fd, addr, len) },
        Some(Err(())) => fail(refuse!(
            "connect",
            "to a socket under the prefix",
            EOPNOTSUPP
        )),
        // SAFETY: a valid sockaddr_un of our own, alive for the call.
        Some(Ok(un)) => unsafe {
            real_fn(
                fd,
                (&raw const un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as socklen_t,
            )
        },
    }
}

/// Whether the message `msg` passes (`SCM_RIGHTS`) a uvfs fd, which
/// would arrive as the placeholder `/dev/null` (a process that is its
/// tree's client holds kernel fds only, so never there).
///
/// # Safety
/// `msg` is NULL or the caller's valid `msghdr`.
unsafe fn passes_uvfs_fd(msg: *const libc::msghdr) -> bool {
    if msg.is_null() || crate::guard::busy() {
        return false;
    }
    // SAFETY: a valid msghdr per the contract; the CMSG macros stay inside
    // its control buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<c_int>();
                let n = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<c_int>();
                if (0..n).any(|i| is_uvfs(data.add(i).read_unaligned())) {
                    return true;
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    false
}

/// `sendmsg`: a uvfs fd passed with `SCM_RIGHTS` refused (the receiver
/// would get the placeholder `/dev/null`).
///
/// # Safety
/// The C contract of `sendmsg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const libc::msghdr, flags: c_int) -> isize {
    // SAFETY: the caller's message, per the contract.
    if unsafe { passes_uvfs_fd(msg) } {
        return fail(refuse!("sendmsg", "of a uvfs fd (SCM_RIGHTS)", EOPNOTSUPP)) as isize;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(sendmsg: fn(c_int, *const libc::msghdr, c_int) -> isize)(fd, msg, flags) }
}

/// `sendmmsg`: as `sendmsg`, for any of the messages.
///
/// # Safety
/// The C contract of `sendmmsg`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sendmmsg(
    fd: c_int,
    msgs: *mut libc::mmsghdr,
    n: c_uint,
    flags: c_int,
) -> c_int {
    if !msgs.is_null() {
        for i in 0..n as usize {
            // SAFETY: the caller's `n` messages, per the contract.
            if unsafe { passes_uvfs_fd(&raw const (*msgs.add(i)).msg_hdr) } {
                return fail(refuse!("sendmmsg", "of a uvfs fd (SCM_RIGHTS)", EOPNOTSUPP));
            }
        }
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(sendmmsg: fn(c_int, *mut libc::mmsghdr, c_uint, c_int) -> c_int)(fd, msgs, n, flags)
    }
}

// ---------------------------------------------------------------------------
// glibc's tree walkers and glob.

type FtwFn = *const c_void;

/// `nftw`.
///
/// # Safety
/// The C contract of `nftw`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nftw(dir: P, f: FtwFn, nopenfd: c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(dir) } {
        return fail(refuse!("nftw", "of a uvfs directory", EOPNOTSUPP));
    }
    // SAFETY: the caller's arguments, the path perhaps the host path it
    // stands for.
    unsafe {
        with_kernel_path(dir, |p| {
            real!(nftw: fn(P, FtwFn, c_int, c_int) -> c_int)(p, f, nopenfd, flags)
        })
    }
}

/// `nftw64`.
///
/// # Safety
/// The C contract of `nftw64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nftw64(dir: P, f: FtwFn, nopenfd: c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(dir) } {
        return fail(refuse!("nftw64", "of a uvfs directory", EOPNOTSUPP));
    }
    // SAFETY: as in `nftw`.
    unsafe {
        with_kernel_path(dir, |p| {
            real!(nftw64: fn(P, FtwFn, c_int, c_int) -> c_int)(p, f, nopenfd, flags)
        })
    }
}

/// `ftw`.
///
/// # Safety
/// The C contract of `ftw`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ftw(dir: P, f: FtwFn, nopenfd: c_int) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(dir) } {
        return fail(refuse!("ftw", "of a uvfs directory", EOPNOTSUPP));
    }
    // SAFETY: as in `nftw`.
    unsafe {
        with_kernel_path(dir, |p| {
            real!(ftw: fn(P, FtwFn, c_int) -> c_int)(p, f, nopenfd)
        })
    }
}

/// `ftw64`.
///
/// # Safety
/// The C contract of `ftw64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ftw64(dir: P, f: FtwFn, nopenfd: c_int) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(dir) } {
        return fail(refuse!("ftw64", "of a uvfs directory", EOPNOTSUPP));
    }
    // SAFETY: as in `nftw`.
    unsafe {
        with_kernel_path(dir, |p| {
            real!(ftw64: fn(P, FtwFn, c_int) -> c_int)(p, f, nopenfd)
        })
    }
}

/// Whether any path of the NULL-terminated list `argv` is a uvfs path.
///
/// # Safety
/// `argv` is NULL or a NULL-terminated array of valid C strings.
unsafe fn any_uvfs(argv: *const *mut c_char) -> bool {
    if argv.is_null() {
        return false;
    }
    let mut i = 0;
    loop {
        // SAFETY: within the NULL-terminated array, per the contract.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            return false;
        }
        // SAFETY: a valid C string, per the contract.
        if unsafe { is_uvfs_path(p) } {
            return true;
        }
        i += 1;
    }
}

/// `fts_open`: a list with a uvfs path refused (NULL).
///
/// # Safety
/// The C contract of `fts_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fts_open(
    argv: *const *mut c_char,
    options: c_int,
    compar: *const c_void,
) -> *mut c_void {
    // SAFETY: the caller's list, valid per the contract.
    if unsafe { any_uvfs(argv) } {
        fail(refuse!("fts_open", "of a uvfs directory", EOPNOTSUPP));
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(fts_open: fn(*const *mut c_char, c_int, *const c_void) -> *mut c_void)(
            argv, options, compar,
        )
    }
}

/// `fts64_open`.
///
/// # Safety
/// The C contract of `fts64_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fts64_open(
    argv: *const *mut c_char,
    options: c_int,
    compar: *const c_void,
) -> *mut c_void {
    // SAFETY: the caller's list, valid per the contract.
    if unsafe { any_uvfs(argv) } {
        fail(refuse!("fts64_open", "of a uvfs directory", EOPNOTSUPP));
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(fts64_open: fn(*const *mut c_char, c_int, *const c_void) -> *mut c_void)(
            argv, options, compar,
        )
    }
}

/// `glob`: a uvfs pattern without the caller's own directory functions
/// refused (`GLOB_ABORTED`).
///
/// # Safety
/// The C contract of `glob`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn glob(
    pattern: P,
    flags: c_int,
    errfunc: *const c_void,
    pglob: *mut c_void,
) -> c_int {
    // SAFETY: the caller's pattern, valid per the contract.
    if flags & libc::GLOB_ALTDIRFUNC == 0 && unsafe { is_uvfs_path(pattern) } {
        fail(refuse!("glob", "of a uvfs path", EOPNOTSUPP));
        return libc::GLOB_ABORTED;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(glob: fn(P, c_int, *const c_void, *mut c_void) -> c_int)(
            pattern, flags, errfunc, pglob,
        )
    }
}

/// `glob64`.
///
/// # Safety
/// The C contract of `glob64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn glob64(
    pattern: P,
    flags: c_int,
    errfunc: *const c_void,
    pglob: *mut c_void,
) -> c_int {
    // SAFETY: the caller's pattern, valid per the contract.
    if flags & libc::GLOB_ALTDIRFUNC == 0 && unsafe { is_uvfs_path(pattern) } {
        fail(refuse!("glob64", "of a uvfs path", EOPNOTSUPP));
        return libc::GLOB_ABORTED;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(glob64: fn(P, c_int, *const c_void, *mut c_void) -> c_int)(
            pattern, flags, errfunc, pglob,
        )
    }
}

// ---------------------------------------------------------------------------
// POSIX AIO: glibc's threads would read and write the placeholder with
// internal calls (reads of nothing, writes thrown away).

/// Whether the request `cb` names a uvfs fd.
///
/// # Safety
/// `cb` is NULL or a readable `struct aiocb`.
unsafe fn aio_uvfs(cb: *const libc::aiocb) -> bool {
    // SAFETY: readable per the contract (checked non-NULL).
    !cb.is_null() && is_uvfs(unsafe { (*cb).aio_fildes })
}

macro_rules! aio_one {
    ($($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: a uvfs fd refused (`EOPNOTSUPP`).")]
        ///
        /// # Safety
        /// `cb` is a valid `struct aiocb`, as the C function requires.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(cb: *mut libc::aiocb) -> c_int {
            // SAFETY: the caller's request, per the contract.
            if unsafe { aio_uvfs(cb) } {
                return fail(refuse!(stringify!($name), "on a uvfs file", EOPNOTSUPP));
            }
            // SAFETY: the caller's request, unchanged.
            unsafe { real!($name: fn(*mut libc::aiocb) -> c_int)(cb) }
        }
    )*};
}

aio_one!(aio_read, aio_read64, aio_write, aio_write64);

/// `aio_fsync`: a uvfs fd refused (`EOPNOTSUPP`).
///
/// # Safety
/// `cb` is a valid `struct aiocb`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aio_fsync(op: c_int, cb: *mut libc::aiocb) -> c_int {
    // SAFETY: the caller's request, per the contract.
    if unsafe { aio_uvfs(cb) } {
        return fail(refuse!("aio_fsync", "on a uvfs file", EOPNOTSUPP));
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(aio_fsync: fn(c_int, *mut libc::aiocb) -> c_int)(op, cb) }
}

forward! {
    aio_fsync64(op: c_int, cb: *mut libc::aiocb) -> c_int = aio_fsync(op, cb);
}

/// `lio_listio`: a list with a request on a uvfs fd refused
/// (`EOPNOTSUPP`), before any request is queued.
///
/// # Safety
/// `list` points to `nent` request pointers (each NULL or valid), `sig` is
/// NULL or a valid `struct sigevent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lio_listio(
    mode: c_int,
    list: *const *mut libc::aiocb,
    nent: c_int,
    sig: *mut libc::sigevent,
) -> c_int {
    if !list.is_null() {
        for i in 0..usize::try_from(nent).unwrap_or(0) {
            // SAFETY: within the caller's `nent` entries; each NULL or a
            // valid request.
            let cb = unsafe { *list.add(i) };
            // SAFETY: as above.
            if unsafe { aio_uvfs(cb) } && unsafe { (*cb).aio_lio_opcode } != libc::LIO_NOP {
                return fail(refuse!("lio_listio", "on a uvfs file", EOPNOTSUPP));
            }
        }
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(lio_listio: fn(c_int, *const *mut libc::aiocb, c_int, *mut libc::sigevent) -> c_int)(
            mode, list, nent, sig,
        )
    }
}

forward! {
    lio_listio64(
        mode: c_int,
        list: *const *mut libc::aiocb,
        nent: c_int,
        sig: *mut libc::sigevent,
    ) -> c_int = lio_listio(mode, list, nent, sig);
}
