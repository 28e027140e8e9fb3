//! fd control: `fcntl` (`F_DUPFD*` on uvfs fds, record locks, the rest
//! to uvfs), `lockf`, `flock` and `ioctl`.

use crate::conv::errno_of;
use crate::dispatch::fd_call;
use crate::interpose::{forward, real};
use crate::state::{FDMAP, Fd, before_kernel_fd, borrow};
use libc::{c_int, c_ulong, c_void, off_t};
use uvfs::{Errno, Process};

/// The POSIX record-lock commands on a uvfs fd. Record locks belong to a
/// process and only conflict between processes; uvfs under the preload is
/// private to this process (a fork gets its own copy), so no other process
/// can ever hold a lock on a uvfs file: F_SETLK/F_SETLKW always succeed once
/// the arguments check out, and F_GETLK always answers F_UNLCK — exactly
/// what Linux answers a process that is alone with its files. Open file
/// description locks (F_OFD_*) can conflict inside one process and are
/// refused with EINVAL.
///
/// # Safety
/// `arg` is NULL or points to a readable and writable `struct flock`.
unsafe fn uvfs_lock(
    p: &mut Process,
    u: i32,
    cmd: c_int,
    arg: *mut libc::flock,
) -> Result<c_int, Errno> {
    if arg.is_null() {
        return Err(Errno::EFAULT);
    }
    let fl_flags = p.fcntl(u, libc::F_GETFL, 0)?;
    if fl_flags & libc::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    // SAFETY: non-NULL, so a readable `struct flock` per the contract.
    let mut fl = unsafe { arg.read_unaligned() };
    let start = match fl.l_whence as c_int {
        libc::SEEK_SET => 0,
        libc::SEEK_CUR => p.lseek(u, 0, libc::SEEK_CUR)?,
        libc::SEEK_END => p.fstat(u)?.st_size,
        _ => return Err(Errno::EINVAL),
    }
    .checked_add(fl.l_start)
    .ok_or(Errno::EOVERFLOW)?;
    if start < 0 || (fl.l_len < 0 && start + fl.l_len < 0) {
        return Err(Errno::EINVAL);
    }
    let acc = fl_flags & libc::O_ACCMODE;
    match (cmd, fl.l_type as c_int) {
        (libc::F_GETLK, libc::F_RDLCK | libc::F_WRLCK) => {
            fl.l_type = libc::F_UNLCK as _;
            // SAFETY: non-NULL, so a writable `struct flock` per the
            // contract.
            unsafe { arg.write_unaligned(fl) };
            Ok(0)
        }
        (libc::F_GETLK, _) => Err(Errno::EINVAL),
        (_, libc::F_RDLCK) if acc == libc::O_WRONLY => Err(Errno::EBADF),
        (_, libc::F_WRLCK) if acc == libc::O_RDONLY => Err(Errno::EBADF),
        (_, libc::F_RDLCK | libc::F_WRLCK | libc::F_UNLCK) => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// `struct f_owner_ex` (`F_GETOWN_EX`, `F_SETOWN_EX`).
#[repr(C)]
struct FOwnerEx {
    type_: c_int,
    pid: libc::pid_t,
}

/// `fcntl`/`fcntl64` (`real64`: which next definition the kernel side
/// calls).
///
/// # Safety
/// `arg` is what `cmd` says it is: an integer, or a pointer valid for
/// what the command reads and writes.
unsafe fn do_fcntl(fd: c_int, cmd: c_int, arg: c_ulong, real64: bool) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            if matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) {
                before_kernel_fd();
            }
            // SAFETY: the caller's arguments, unchanged, under its contract
            // for `cmd`.
            unsafe {
                if real64 {
                    real!(fcntl64: fn(c_int, c_int, c_ulong) -> c_int)(fd, cmd, arg)
                } else {
                    real!(fcntl: fn(c_int, c_int, c_ulong) -> c_int)(fd, cmd, arg)
                }
            }
        },
        |s, u| match cmd {
            libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
                let min = arg as c_int;
                if min < 0 {
                    return Err(Errno::EINVAL);
                }
                // The kernel picks the number: with the cache flushed, the
                // one Linux would.
                s.flush();
                let k = rustix::io::fcntl_dupfd_cloexec(borrow(fd), min).map_err(errno_of)?;
                let k = rustix::fd::IntoRawFd::into_raw_fd(k);
                match s.p().fcntl(u, cmd, 0) {
                    Ok(u2) => {
                        s.map(k, u2);
                        Ok(k)
                    }
                    Err(e) => {
                        s.release(k);
                        Err(e)
                    }
                }
            }
            libc::F_GETLK | libc::F_SETLK | libc::F_SETLKW => {
                // SAFETY: for these commands `arg` is a `struct flock *`,
                // valid per the contract.
                unsafe { uvfs_lock(s.p(), u, cmd, arg as *mut libc::flock) }
            }
            libc::F_OFD_GETLK | libc::F_OFD_SETLK | libc::F_OFD_SETLKW => Err(Errno::EINVAL),
            uvfs::uapi::F_GETOWN_EX | uvfs::uapi::F_SETOWN_EX => {
                let p = arg as *mut FOwnerEx;
                if p.is_null() {
                    return Err(Errno::EFAULT);
                }
                if cmd == uvfs::uapi::F_GETOWN_EX {
                    let o = s.p().fcntl_getown_ex(u)?;
                    // SAFETY: for F_GETOWN_EX `arg` is a writable
                    // `struct f_owner_ex *` (the caller's contract).
                    unsafe {
                        p.write_unaligned(FOwnerEx {
                            type_: o.kind,
                            pid: o.pid,
                        })
                    };
                } else {
                    // SAFETY: for F_SETOWN_EX a readable one.
                    let o = unsafe { p.read_unaligned() };
                    s.p().fcntl_setown_ex(
                        u,
                        uvfs::uapi::FOwnerEx {
                            kind: o.type_,
                            pid: o.pid,
                        },
                    )?;
                }
                Ok(0)
            }
            uvfs::uapi::F_DUPFD_QUERY => match FDMAP.get(arg as c_int) {
                Fd::Uvfs(u2) => s.p().fcntl(u, cmd, u2 as u64),
                Fd::Stale => Err(Errno::EBADF),
                Fd::Kernel => {
                    if rustix::io::fcntl_getfd(borrow(arg as c_int)).is_err() {
                        Err(Errno::EBADF)
                    } else {
                        Ok(0)
                    }
                }
            },
            _ => s.p().fcntl(u, cmd, arg),
        },
    )
}

forward! {
    fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int = do_fcntl(fd, cmd, arg, false);
    fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int = do_fcntl(fd, cmd, arg, true);
}

/// `lockf`: on a uvfs fd, checked and granted (as [`uvfs_lock`]).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lockf(fd: c_int, cmd: c_int, len: off_t) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(lockf: fn(c_int, c_int, off_t) -> c_int)(fd, cmd, len) },
        |s, u| {
            // As uvfs_lock: no other process can hold a lock on a uvfs file.
            match cmd {
                libc::F_ULOCK | libc::F_LOCK | libc::F_TLOCK | libc::F_TEST => {
                    let acc = s.p().fcntl(u, libc::F_GETFL, 0)? & libc::O_ACCMODE;
                    if cmd != libc::F_TEST && cmd != libc::F_ULOCK && acc == libc::O_RDONLY {
                        return Err(Errno::EBADF);
                    }
                    Ok(0)
                }
                _ => Err(Errno::EINVAL),
            }
        },
    )
}

forward! {
    lockf64(fd: c_int, cmd: c_int, len: off_t) -> c_int = lockf(fd, cmd, len);
}

/// `flock`: on a uvfs fd, accepted without conflict tracking.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flock(fd: c_int, op: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: no pointers; any values are valid arguments.
        || unsafe { real!(flock: fn(c_int, c_int) -> c_int)(fd, op) },
        |s, u| {
            s.p().fcntl(u, libc::F_GETFD, 0)?;
            match op & !libc::LOCK_NB {
                libc::LOCK_SH | libc::LOCK_EX | libc::LOCK_UN => Ok(0),
                _ => Err(Errno::EINVAL),
            }
        },
    )
}

/// `ioctl`: on a uvfs fd, `FIOCLEX`, `FIONCLEX`, `FIONREAD`; the clone
/// requests are `EOPNOTSUPP`, the rest `ENOTTY`.
///
/// # Safety
/// `arg` is what `req` says it is (for `FIONREAD`, a writable `int`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, req: c_ulong, arg: *mut c_void) -> c_int {
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments, unchanged, under its contract for
        // `req`.
        || unsafe { real!(ioctl: fn(c_int, c_ulong, *mut c_void) -> c_int)(fd, req, arg) },
        |s, u| match req {
            libc::FIOCLEX => s.p().fcntl(u, libc::F_SETFD, libc::FD_CLOEXEC as u64),
            libc::FIONCLEX => s.p().fcntl(u, libc::F_SETFD, 0),
            libc::FIONREAD => {
                let st = s.p().fstat(u)?;
                let pos = s.p().lseek(u, 0, libc::SEEK_CUR)?;
                if arg.is_null() {
                    return Err(Errno::EFAULT);
                }
                let n = (st.st_size - pos).clamp(0, c_int::MAX as i64) as c_int;
                // SAFETY: FIONREAD's argument is an `int *`.
                unsafe { arg.cast::<c_int>().write_unaligned(n) };
                Ok(0)
            }
            // FICLONE, FICLONERANGE, FIDEDUPERANGE: tmpfs cannot share
            // extents.
            0x4004_9409 | 0x4020_940d | 0xc018_9436 => Err(Errno::EOPNOTSUPP),
            _ => Err(Errno::ENOTTY),
        },
    )
}
