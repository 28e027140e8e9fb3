//! Making and dropping fds: the `open` family and `creat`, `close`,
//! `close_range`/`closefrom`, and `dup`/`dup2`/`dup3`, which keep the fd
//! map and the placeholders coherent in both directions (a kernel fd
//! `dup2`'d onto a uvfs number, a uvfs fd onto a kernel number).

use crate::conv::set_errno;
use crate::dispatch::{RESTART, Ticket, fd_call, gated, is_uvfs, path_call, restartable};
use crate::fdops::{self, uvfs_open};
use crate::guard::{busy, run};
use crate::interpose::{forward, real};
use crate::state::{FDMAP, Fd, before_kernel_fd, hole_lower, with_state};
use libc::{c_char, c_int, c_uint, mode_t};
use uvfs::Errno;
use uvfs::uapi::AT_FDCWD;

/// Whether `open` reads its mode argument (`O_CREAT` or `O_TMPFILE`).
fn needs_mode(flags: c_int) -> bool {
    flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE
}

/// The open family: `openat` (`at`) or `open` on the kernel side, with the
/// mode passed only where the flags say it exists.
///
/// # Safety
/// `path` is NULL or a valid C string.
unsafe fn do_openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
    at: bool,
) -> c_int {
    let mode = if needs_mode(flags) { mode } else { 0 };
    let kernel = |d: c_int, p: *const c_char| {
        before_kernel_fd();
        // SAFETY: the caller's path (or it made absolute, alive for the
        // call); the mode is read only with O_CREAT/O_TMPFILE.
        unsafe {
            if at {
                real!(openat: fn(c_int, *const c_char, c_int, mode_t) -> c_int)(d, p, flags, mode)
            } else {
                real!(open: fn(*const c_char, c_int, mode_t) -> c_int)(p, flags, mode)
            }
        }
    };
    let t = Ticket::take();
    // SAFETY: the caller's path, valid per the contract.
    let step = unsafe {
        path_call(
            dirfd,
            path,
            Step::Done(-1),
            |d, p| Step::Done(kernel(d, p)),
            |s, d, p| {
                match uvfs_open(s, d, p, flags, mode) {
                    // A FIFO's open that would wait for the other end, or
                    // a lease break under way (the state's process does
                    // not wait; it declined with nothing changed): wait
                    // outside the state.
                    Err(Errno::EWOULDBLOCK) if flags & libc::O_NONBLOCK == 0 => {
                        let k = s.placeholder()?;
                        Ok(Step::Sleep(Box::new(Sleeper {
                            k,
                            thread: s.p().new_thread(),
                            d,
                            path: p.to_vec(),
                        })))
                    }
                    r => r.map(Step::Done),
                }
            },
        )
    };
    match step {
        Step::Done(r) => r,
        // A FIFO's open waits for the other end, and an open meeting a
        // lease break for the holder: on a thread handle of its own,
        // outside the state and the fork gate (the other end's open, the
        // holder's fcntl, by another thread, must get through), with the
        // fd number reserved meanwhile.
        Step::Sleep(sleeper) => restartable(-1, || {
            let Sleeper {
                k,
                mut thread,
                d,
                path: upath,
            } = *sleeper;
            // The tree's switch cancels the wait (`EINTR`): the other end
            // (or the lease's holder) is now the mount's.
            thread.set_lease_break_wait(true);
            let r = crate::signal::cancellable(t.pre_client(), || {
                thread.openat(d, &upath, flags, mode)
            })
            .0;
            with_state(|s| match r {
                Err(Errno::EINTR) if t.switched() => {
                    // Again, on the mount's FIFO.
                    s.release(k);
                    Err(RESTART)
                }
                Ok(u) => {
                    s.map(k, u);
                    // Its other end (or the lease's release) came before
                    // the switch: the file it opened is the private uvfs's.
                    // It moves to the mount, as the files open at the
                    // switch did.
                    if t.switched() && !crate::namespace::move_late(s, k, u) {
                        static SAID: crate::refuse::Said = crate::refuse::Said::new();
                        crate::refuse::said_once(
                            &SAID,
                            "a uvfs open that waited across the process tree's switch to its mount opened the process's private copy of the file, which could not be moved to the mount: the tree's other processes open the mount's",
                        );
                    }
                    Ok(k)
                }
                Err(e) => {
                    s.release(k);
                    Err(e)
                }
            })
        })
        // SAFETY: the caller's path, valid per the contract.
        .unwrap_or_else(|| unsafe { do_openat(dirfd, path, flags, mode, at) }),
    }
}

/// Where a uvfs open got to: done (an fd or -1), or a FIFO open that may
/// wait for the other end, to finish outside the state. The rare case is
/// boxed so that a `Step` is two words: every open's result is copied
/// through `path_call` and the guard's frame, and a `Step` holding a
/// `Process` inline was copied as a block of 16-byte moves each time,
/// reloading stores just made (a stall on every open in a profile of four
/// threads opening).
enum Step {
    Done(c_int),
    Sleep(Box<Sleeper>),
}

/// A [`Step::Sleep`]'s open: the placeholder, a thread handle, the path.
struct Sleeper {
    k: c_int,
    thread: uvfs::Process,
    d: i32,
    path: Vec<u8>,
}

forward! {
    open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(AT_FDCWD, path, flags, mode, false);
    open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(AT_FDCWD, path, flags | libc::O_LARGEFILE, mode, false);
    __open_2(path: *const c_char, flags: c_int) -> c_int =
        do_openat(AT_FDCWD, path, flags, 0, false);
    __open64_2(path: *const c_char, flags: c_int) -> c_int =
        do_openat(AT_FDCWD, path, flags | libc::O_LARGEFILE, 0, false);
    openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(dirfd, path, flags, mode, true);
    openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int =
        do_openat(dirfd, path, flags | libc::O_LARGEFILE, mode, true);
    __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int =
        do_openat(dirfd, path, flags, 0, true);
    __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int =
        do_openat(dirfd, path, flags | libc::O_LARGEFILE, 0, true);
}

/// `creat`: `open` with `O_CREAT | O_WRONLY | O_TRUNC`.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn creat(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        do_openat(
            AT_FDCWD,
            path,
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            mode,
            false,
        )
    }
}

forward! {
    creat64(path: *const c_char, mode: mode_t) -> c_int = creat(path, mode);
}

forward! {
    close(fd: c_int) -> c_int = fdops::close(fd);
}

/// `close_range`: the uvfs fds in the range closed (or marked
/// close-on-exec) in uvfs, then the kernel's call for the rest, which
/// closes their placeholders too.
///
/// # Safety
/// No pointer arguments; the caller owns the fds it closes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let hi = FDMAP.hi.load(std::sync::atomic::Ordering::Relaxed);
    if !busy() && hi > 0 && first <= last && (first as i64) < hi as i64 {
        let r = run(-1, || {
            with_state(|s| {
                let end = (last as i64).min(hi as i64 - 1) as i32;
                for k in first as i32..=end {
                    match FDMAP.get(k) {
                        Fd::Uvfs(u) => {
                            if flags & libc::CLOSE_RANGE_CLOEXEC as c_int != 0 {
                                let _ = s.p().fcntl(u, libc::F_SETFD, libc::FD_CLOEXEC as u64);
                            } else {
                                let _ = s.p().close(u);
                                s.unmap(k);
                            }
                        }
                        Fd::Stale if flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 => s.unmap(k),
                        _ => {}
                    }
                }
                Ok(0)
            })
        });
        if r < 0 {
            return r;
        }
    }
    let r = kernel_close_range(first, last, flags);
    if r == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        hole_lower(i32::try_from(first).unwrap_or(i32::MAX));
    }
    r
}

/// The kernel's `close_range` over `[first, last]` less the memfds that
/// hold mapped uvfs files' data (no fds of the program's): one call per
/// stretch between them.
fn kernel_close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    // SAFETY: no pointers; the caller's own fds, per the contract.
    let call = |a: c_uint, b: c_uint| unsafe {
        real!(close_range: fn(c_uint, c_uint, c_int) -> c_int)(a, b, flags)
    };
    let lo = i32::try_from(first).unwrap_or(i32::MAX);
    let hi = i32::try_from(last).unwrap_or(i32::MAX);
    let held = if first <= last {
        uvfs::fs::tmpfs::kernel_fds_in(lo, hi)
    } else {
        Vec::new()
    };
    if held.is_empty() {
        return call(first, last);
    }
    let mut from = first;
    for h in held {
        let h = h as c_uint;
        if h > from {
            let r = call(from, h - 1);
            if r != 0 {
                return r;
            }
        }
        from = h + 1;
    }
    if from <= last && from != 0 {
        call(from, last)
    } else {
        0
    }
}

/// `closefrom`: `close_range(low, ~0, 0)`, as glibc's is, or glibc's own
/// when that fails.
///
/// # Safety
/// No pointer arguments; the caller owns the fds it closes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn closefrom(low: c_int) {
    // SAFETY: close_range over [low, ~0] is what glibc's closefrom does,
    // on the caller's own fds.
    if unsafe { close_range(low.max(0) as c_uint, c_uint::MAX, 0) } != 0 {
        // SAFETY: no pointers; the caller's own fds, per the contract.
        unsafe { real!(closefrom: fn(c_int) -> ())(low) };
        hole_lower(low.max(0));
    }
}

/// `dup`: a uvfs fd's duplicate gets a placeholder of its own.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            before_kernel_fd();
            // SAFETY: no pointers; any fd number is a valid argument.
            unsafe { real!(dup: fn(c_int) -> c_int)(fd) }
        },
        |s, u| {
            let k = s.placeholder()?;
            match s.p().dup(u) {
                Ok(u2) => {
                    s.map(k, u2);
                    Ok(k)
                }
                Err(e) => {
                    s.release(k);
                    Err(e)
                }
            }
        },
    )
}

/// dup2/dup3 (`call`) with `new` already known to differ from `old`;
/// `kernel` is the next definition's call.
fn do_dup3(
    call: &'static str,
    old: c_int,
    new: c_int,
    cloexec: bool,
    kernel: impl FnOnce() -> c_int,
) -> c_int {
    // The memfd holding a mapped uvfs file's data is not a number the
    // program may take: as one out of range.
    if !busy() && uvfs::fs::tmpfs::holds_kernel_fd(new) {
        set_errno(libc::EBADF);
        return -1;
    }
    let t = Ticket::take();
    match (FDMAP.get(old), FDMAP.get(new)) {
        (Fd::Stale, _) => {
            set_errno(libc::EBADF);
            -1
        }
        (Fd::Kernel, Fd::Kernel) => kernel(),
        _ if busy() => kernel(),
        (Fd::Kernel, _) => run(-1, || {
            // A kernel fd onto a uvfs (or cached) number: the kernel's dup
            // replaces the placeholder atomically; then uvfs lets go.
            with_state(|s| {
                let r = kernel();
                if r < 0 {
                    return Err(Errno::last_os_error());
                }
                if let Fd::Uvfs(u) = FDMAP.get(new) {
                    let _ = s.p().close(u);
                }
                s.unmap(new);
                Ok(r)
            })
        }),
        (Fd::Uvfs(_), _) => gated(call, t, -1, |s| {
            let u = s.ufd(old)?;
            if new < 0 {
                return Err(Errno::EBADF);
            }
            let flags = if cloexec { libc::O_CLOEXEC } else { 0 };
            if let Fd::Uvfs(un) = FDMAP.get(new) {
                s.p().dup3(u, un, flags)?;
                return Ok(new);
            }
            let u2 = s.p().dup(u)?;
            if let Err(e) = s.placeholder_at(new) {
                let _ = s.p().close(u2);
                return Err(e);
            }
            if cloexec {
                let _ = s.p().fcntl(u2, libc::F_SETFD, libc::FD_CLOEXEC as u64);
            }
            s.map(new, u2);
            Ok(new)
        })
        // The switch came between: `old` is the kernel's now.
        .unwrap_or_else(|| do_dup3(call, old, new, cloexec, kernel)),
    }
}

/// `dup2`.
///
/// # Safety
/// No pointer arguments; the caller owns `new`, which is replaced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    // SAFETY: no pointers; the caller's own fds, per the contract.
    let kernel = || unsafe { real!(dup2: fn(c_int, c_int) -> c_int)(old, new) };
    if old == new {
        return fd_call(old, -1, kernel, |_, _| Ok(new));
    }
    do_dup3("dup2", old, new, false, kernel)
}

/// `dup3`.
///
/// # Safety
/// No pointer arguments; the caller owns `new`, which is replaced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: no pointers; the caller's own fds, per the contract.
    let kernel = || unsafe { real!(dup3: fn(c_int, c_int, c_int) -> c_int)(old, new, flags) };
    if old == new || flags & !libc::O_CLOEXEC != 0 {
        if is_uvfs(old) {
            set_errno(libc::EINVAL);
            return -1;
        }
        return kernel();
    }
    do_dup3("dup3", old, new, flags & libc::O_CLOEXEC != 0, kernel)
}
