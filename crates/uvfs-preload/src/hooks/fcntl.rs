//! fd control: `fcntl` (`F_DUPFD*` on uvfs fds, record locks, the rest
//! to uvfs), `lockf`, `flock` and `ioctl`. The advisory locks are uvfs's
//! own ([`Process::fcntl_lock`], [`Process::flock`]); calls that may sleep
//! wait outside the shim's lock.

use crate::conv::errno_of;
use crate::dispatch::{fd_call, fd_call_sleeping};
use crate::interpose::{forward, real};
use crate::state::{FDMAP, Fd, before_kernel_fd, borrow};
use libc::{c_int, c_ulong, c_void, off_t};
use uvfs::{Errno, Flock, Process};

/// The record-lock commands (POSIX and OFD) on a uvfs fd, through
/// [`Process::fcntl_lock`]. Under the shim uvfs is private to the process
/// (a fork's child works on its own copy), so POSIX locks, owned by the
/// process, never conflict here; OFD locks of two open files do, and so do
/// OFD and POSIX locks, as on Linux.
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
    // SAFETY: non-NULL, so a readable `struct flock` per the contract.
    let c = unsafe { arg.read_unaligned() };
    let mut fl = Flock {
        l_type: c.l_type,
        l_whence: c.l_whence,
        l_start: c.l_start,
        l_len: c.l_len,
        l_pid: c.l_pid,
    };
    let r = p.fcntl_lock(u, cmd, &mut fl)?;
    if matches!(cmd, libc::F_GETLK | libc::F_OFD_GETLK) {
        let mut out = c;
        out.l_type = fl.l_type;
        out.l_whence = fl.l_whence;
        out.l_start = fl.l_start;
        out.l_len = fl.l_len;
        out.l_pid = fl.l_pid;
        // SAFETY: non-NULL, so a writable `struct flock` per the contract.
        unsafe { arg.write_unaligned(out) };
    }
    Ok(r)
}

/// Whether `cmd` may sleep (a lock wait).
fn sleeps(cmd: c_int) -> bool {
    matches!(cmd, libc::F_SETLKW | libc::F_OFD_SETLKW)
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
    if sleeps(cmd) {
        // SAFETY: the caller's arguments, unchanged, under its contract.
        let kernel = || unsafe {
            if real64 {
                real!(fcntl64: fn(c_int, c_int, c_ulong) -> c_int)(fd, cmd, arg)
            } else {
                real!(fcntl: fn(c_int, c_int, c_ulong) -> c_int)(fd, cmd, arg)
            }
        };
        // SAFETY: for these commands `arg` is a `struct flock *`, valid
        // per the contract.
        return fd_call_sleeping("fcntl", fd, -1, kernel, |p, u| unsafe {
            uvfs_lock(p, u, cmd, arg as *mut libc::flock)
        });
    }
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
            libc::F_GETLK | libc::F_SETLK | libc::F_OFD_GETLK | libc::F_OFD_SETLK => {
                // SAFETY: for these commands `arg` is a `struct flock *`,
                // valid per the contract.
                unsafe { uvfs_lock(s.p(), u, cmd, arg as *mut libc::flock) }
            }
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

/// `lockf`: on a uvfs fd, as glibc builds it from fcntl: `F_LOCK` and
/// `F_TLOCK` a write lock from the current position for `len` bytes
/// (`F_SETLKW`, `F_SETLK`), `F_ULOCK` removes it, `F_TEST` asks `F_GETLK`
/// for a read lock and fails with `EACCES` if another owner holds one.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lockf(fd: c_int, cmd: c_int, len: off_t) -> c_int {
    // SAFETY: no pointers; any values are valid arguments.
    let kernel = || unsafe { real!(lockf: fn(c_int, c_int, off_t) -> c_int)(fd, cmd, len) };
    let (fcmd, ty) = match cmd {
        libc::F_LOCK => (libc::F_SETLKW, libc::F_WRLCK),
        libc::F_TLOCK => (libc::F_SETLK, libc::F_WRLCK),
        libc::F_ULOCK => (libc::F_SETLK, libc::F_UNLCK),
        libc::F_TEST => (libc::F_GETLK, libc::F_RDLCK),
        _ => (-1, 0),
    };
    let uvfs = |p: &mut Process, u: i32| {
        if fcmd < 0 {
            return Err(Errno::EINVAL);
        }
        let mut fl = Flock {
            l_type: ty as i16,
            l_whence: libc::SEEK_CUR as i16,
            l_start: 0,
            l_len: len,
            l_pid: 0,
        };
        p.fcntl_lock(u, fcmd, &mut fl)?;
        if fcmd == libc::F_GETLK && fl.l_type != libc::F_UNLCK as i16 {
            return Err(Errno::EACCES);
        }
        Ok(0)
    };
    if fcmd == libc::F_SETLKW {
        fd_call_sleeping("lockf", fd, -1, kernel, uvfs)
    } else {
        fd_call(fd, -1, kernel, |s, u| uvfs(s.p(), u))
    }
}

forward! {
    lockf64(fd: c_int, cmd: c_int, len: off_t) -> c_int = lockf(fd, cmd, len);
}

/// `flock`: on a uvfs fd, [`Process::flock`] (a blocking request sleeps
/// outside the shim's lock).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flock(fd: c_int, op: c_int) -> c_int {
    // SAFETY: no pointers; any values are valid arguments.
    let kernel = || unsafe { real!(flock: fn(c_int, c_int) -> c_int)(fd, op) };
    let uvfs = |p: &mut Process, u: i32| p.flock(u, op).map(|()| 0);
    if op & libc::LOCK_NB == 0 && op & (libc::LOCK_SH | libc::LOCK_EX) != 0 {
        fd_call_sleeping("flock", fd, -1, kernel, uvfs)
    } else {
        fd_call(fd, -1, kernel, |s, u| uvfs(s.p(), u))
    }
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
                let n = s.p().ioctl_fionread(u)?;
                if arg.is_null() {
                    return Err(Errno::EFAULT);
                }
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
