//! Where a call goes. A path call routes its path ([`route`], which asks
//! [`crate::route`] with what it knows of the directory: under the
//! prefix, uvfs; else the kernel) and an fd call looks its fd up in the
//! fd map (lock-free); the kernel's side runs the next definition with no
//! lock taken (a relative path takes the lock briefly to read the cwd), the
//! uvfs side runs on this thread's state inside [`run`]'s frame.

use crate::conv::{cbytes, errno, set_errno};
use crate::guard::{Local, busy, local, run, run_in};
use crate::path::{Route, early_outside, loaded, prefix};
pub(crate) use crate::restart::{RESTART, Ticket};
use crate::route::{Dir, route_abs};
use crate::state::{FDMAP, Fd, State, with_state, with_state_in};
use libc::{c_char, c_int, ssize_t};
use std::ffi::CString;
use uvfs::uapi::AT_FDCWD;
use uvfs::{Errno, Process};

/// What a call that raced the switch returns before it starts again: the
/// errno it found, so that `run` leaves errno as it was.
#[cold]
fn unchanged() -> Errno {
    Errno::from_raw(errno())
}

/// Runs `f`, the uvfs side of hook `call`, which looked its fd or path up
/// after taking `t`, in [`run`]'s frame. `None` when the tree's switch came
/// between the look-up and the gate (`f` answered [`RESTART`], as
/// [`Ticket::check`] does inside the gate): errno is left as it was and the
/// caller starts the call again, on the kernel's side now (its fd was
/// reopened through the mount, its path belongs to the mount).
pub(crate) fn restartable<T>(fail: T, f: impl FnOnce() -> Result<T, Errno>) -> Option<T> {
    let mut raced = false;
    let r = run(fail, || match f() {
        Err(e) if e == RESTART => {
            raced = true;
            Err(unchanged())
        }
        r => r,
    });
    (!raced).then_some(r)
}

/// [`restartable`] for a uvfs side that runs on this thread's state, the
/// switch checked first inside the gate. The test hook
/// ([`Ticket::park`]) parks hook `call` here, between its look-up and the
/// gate.
pub(crate) fn gated<T>(
    call: &'static str,
    t: Ticket,
    fail: T,
    f: impl FnOnce(&mut State) -> Result<T, Errno>,
) -> Option<T> {
    t.park(call);
    restartable(fail, || {
        with_state(|s| {
            t.check()?;
            f(s)
        })
    })
}

/// [`gated`] for the calls that return an error number instead of setting
/// errno (`posix_fallocate`, `posix_fadvise`): errno is left as it was.
pub(crate) fn gated_rc(
    call: &'static str,
    t: Ticket,
    f: impl FnOnce(&mut State) -> Result<(), Errno>,
) -> Option<c_int> {
    let saved = errno();
    let r = gated(call, t, -1, |s| f(s).map(|()| 0))?;
    let e = if r < 0 { errno() } else { 0 };
    set_errno(saved);
    Some(e)
}

/// Where `path` (relative to `dirfd`) goes. `None`: `dirfd` is a stale
/// placeholder (`EBADF`).
pub(crate) fn route(dirfd: c_int, path: &[u8]) -> Option<Route<'_>> {
    route_in(local(), dirfd, path)
}

/// [`route`] with this thread's block `l` already looked up.
#[inline]
fn route_in<'a>(l: &Local, dirfd: c_int, path: &'a [u8]) -> Option<Route<'a>> {
    if l.busy() {
        return Some(Route::Kernel);
    }
    if !loaded() {
        return route_early(dirfd, path);
    }
    route_unguarded(dirfd, path)
}

/// [`route`] before the library constructor has run (a call from another
/// library's constructor): a path certainly outside the prefix goes to the
/// kernel without a single allocation (`path`'s `LOADED` says why). Any
/// other path takes the full route; one that reaches uvfs this early is
/// said once on stderr, since this process has not yet learnt whether it
/// is a client of its tree's mount (it then uses a private uvfs, not the
/// tree's) and `UVFS_SEED` has not been applied.
#[cold]
fn route_early(dirfd: c_int, path: &[u8]) -> Option<Route<'_>> {
    if early_outside(path) {
        return Some(Route::Kernel);
    }
    let r = route_unguarded(dirfd, path);
    if matches!(r, Some(Route::Uvfs(..))) {
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let _ = rustix::io::write(
                rustix::stdio::stderr(),
                b"uvfs-preload: a path under the prefix was used before the shim's constructor ran \
                  (from another library's constructor): served by this process's own uvfs, \
                  without UVFS_SEED and outside any process tree\n",
            );
        }
    }
    r
}

/// [`route`] for a caller already inside the shim's frame on behalf of the
/// program (the temp-file calls, which generate names and route each one
/// themselves): the re-entry guard is not consulted. Must not be called
/// from inside [`with_state`].
pub(crate) fn route_unguarded(dirfd: c_int, path: &[u8]) -> Option<Route<'_>> {
    let Some(pre) = prefix() else {
        return Some(Route::Kernel);
    };
    if path.first() == Some(&b'/') {
        // An absolute path needs no state (no cwd): no lock.
        return Some(route_abs(pre, path));
    }
    if dirfd != AT_FDCWD {
        // A kernel directory's path is read from `/proc/self/fd` (one
        // syscall) only for a path that may enter the prefix; one the
        // kernel cannot name (removed, or `/proc` not mounted) keeps the
        // kernel's route.
        return match FDMAP.get(dirfd) {
            Fd::Kernel => Some(crate::route::route(
                Some(pre),
                Dir::KernelFd(|| kernel_fd_path(dirfd)),
                path,
            )),
            Fd::Stale => None,
            Fd::Uvfs(u) => Some(with_state(|s| s.route_uvfs_fd(u, path))),
        };
    }
    Some(with_state(|s| s.route_cwd(path)))
}

/// The absolute path of kernel fd `fd` (`/proc/self/fd/N`), if it names a
/// directory that still exists.
fn kernel_fd_path(fd: c_int) -> Option<Vec<u8>> {
    let link = format!("/proc/self/fd/{fd}");
    let target = rustix::fs::readlink(link.as_str(), Vec::new()).ok()?;
    let t = target.into_bytes();
    (t.first() == Some(&b'/') && !t.ends_with(b" (deleted)")).then_some(t)
}

/// A path call: routes `path`, then runs `kernel(dirfd, path)` (with the
/// caller's arguments, or `AT_FDCWD` and an absolute path when the cwd is in
/// uvfs) or `uvfs(state, dirfd, path)` on this thread's state. The path `kernel`
/// gets is the caller's or a C string alive until `kernel` returns.
///
/// # Safety
/// `path` is NULL or a valid C string.
pub(crate) unsafe fn path_call<T>(
    dirfd: c_int,
    path: *const c_char,
    fail: T,
    kernel: impl FnOnce(c_int, *const c_char) -> T,
    uvfs: impl FnOnce(&mut State, i32, &[u8]) -> Result<T, Errno>,
) -> T {
    if path.is_null() {
        return kernel(dirfd, path);
    }
    // SAFETY: non-NULL and valid per the contract.
    let p = unsafe { cbytes(path) };
    let t = Ticket::take();
    // One look-up of this thread's block for the guard, the frame and the
    // state (in a shared object each is a `__tls_get_addr` call for every
    // thread but the owner).
    let l = local();
    match route_in(l, dirfd, p) {
        None => {
            set_errno(libc::EBADF);
            fail
        }
        Some(Route::Kernel) => kernel(dirfd, path),
        Some(Route::KernelAbs(abs)) => match CString::new(abs) {
            Ok(c) => kernel(AT_FDCWD, c.as_ptr()),
            Err(_) => kernel(dirfd, path),
        },
        Some(Route::Uvfs(d, up)) => {
            // A symlink in uvfs whose absolute target lies outside the
            // prefix: the walk stops there (`EXDEV`) with the host path it
            // reached, which the kernel resolves, as it would have.
            let mut escaped = None;
            let mut raced = false;
            let mut uvfs = Some(uvfs);
            let r = run_in(l, fail, || {
                with_state_in(l, |s| {
                    // (The switch checked first: `uvfs` stays for the
                    // call's second start.)
                    let Some(uvfs) = uvfs.take_if(|_| !t.switched()) else {
                        raced = true;
                        return Err(unchanged());
                    };
                    let r = uvfs(s, d, &up);
                    if r.as_ref().err() == Some(&Errno::EXDEV) {
                        escaped = s.p().take_escape();
                    }
                    r
                })
            });
            if raced && let Some(uvfs) = uvfs {
                // SAFETY: the caller's contract, passed on.
                return unsafe { path_call(dirfd, path, r, kernel, uvfs) };
            }
            match escaped.and_then(|e| CString::new(e).ok()) {
                Some(host) => kernel(AT_FDCWD, host.as_ptr()),
                None => r,
            }
        }
    }
}

/// Two-path calls (rename, link): both in uvfs, both in the kernel, or
/// `EXDEV`. As in [`path_call`], `kernel` gets the caller's paths or C
/// strings alive until it returns.
///
/// # Safety
/// `p1` and `p2` are each NULL or a valid C string.
pub(crate) unsafe fn path2_call(
    d1: c_int,
    p1: *const c_char,
    d2: c_int,
    p2: *const c_char,
    kernel: impl FnOnce(c_int, *const c_char, c_int, *const c_char) -> c_int,
    uvfs: impl FnOnce(&mut Process, i32, &[u8], i32, &[u8]) -> Result<(), Errno>,
) -> c_int {
    if p1.is_null() || p2.is_null() {
        return kernel(d1, p1, d2, p2);
    }
    // SAFETY: valid C strings per the callers' contracts.
    let (b1, b2) = unsafe { (cbytes(p1), cbytes(p2)) };
    let t = Ticket::take();
    let (Some(r1), Some(r2)) = (route(d1, b1), route(d2, b2)) else {
        set_errno(libc::EBADF);
        return -1;
    };
    let kpath =
        |r: Route, d: c_int, p: *const c_char| -> Option<(c_int, Option<CString>, *const c_char)> {
            match r {
                Route::Kernel => Some((d, None, p)),
                Route::KernelAbs(a) => {
                    let c = CString::new(a).ok()?;
                    let ptr = c.as_ptr();
                    Some((AT_FDCWD, Some(c), ptr))
                }
                Route::Uvfs(..) => None,
            }
        };
    match (r1, r2) {
        (Route::Uvfs(ud1, up1), Route::Uvfs(ud2, up2)) => {
            let mut uvfs = Some(uvfs);
            let r = run(-1, || {
                with_state(|s| match uvfs.take_if(|_| !t.switched()) {
                    Some(f) => f(s.p(), ud1, &up1, ud2, &up2).map(|()| 0),
                    None => Err(unchanged()),
                })
            });
            match uvfs {
                // The switch came between the route and the call.
                Some(f) => {
                    // SAFETY: the caller's contract, passed on.
                    unsafe { path2_call(d1, p1, d2, p2, kernel, f) }
                }
                None => r,
            }
        }
        (a, b) => match (kpath(a, d1, p1), kpath(b, d2, p2)) {
            (Some((kd1, _c1, kp1)), Some((kd2, _c2, kp2))) => kernel(kd1, kp1, kd2, kp2),
            _ => {
                set_errno(libc::EXDEV);
                -1
            }
        },
    }
}

/// An fd call: the kernel's fd goes to `kernel`, a uvfs fd to `uvfs(state,
/// uvfs fd)` on this thread's state, a stale placeholder is `EBADF`.
#[inline]
pub(crate) fn fd_call<T>(
    fd: c_int,
    fail: T,
    kernel: impl FnOnce() -> T,
    uvfs: impl FnOnce(&mut State, i32) -> Result<T, Errno>,
) -> T {
    let t = Ticket::take();
    match FDMAP.get(fd) {
        Fd::Kernel => kernel(),
        Fd::Stale => {
            set_errno(libc::EBADF);
            fail
        }
        Fd::Uvfs(u) => {
            // One thread-local lookup for the guard and the state.
            let l = local();
            if l.busy() {
                return kernel();
            }
            let mut uvfs = Some(uvfs);
            // `u` as read above: another thread closing or replacing `fd`
            // meanwhile is the program's race, as on Linux.
            let r = run_in(l, fail, || {
                with_state_in(l, |s| match uvfs.take_if(|_| !t.switched()) {
                    Some(f) => f(s, u),
                    None => Err(unchanged()),
                })
            });
            match uvfs {
                Some(f) => fd_call(fd, r, kernel, f),
                None => r,
            }
        }
    }
}

/// As [`fd_call`], for a read or write: on an fd that may sleep until
/// another thread acts (a uvfs FIFO, [`Process::may_block`]) `uvfs` runs
/// on a thread handle of its own outside the state and the fork gate, as
/// [`fd_call_sleeping`] does, so that the other threads' calls (the write
/// that wakes a reader) and a fork go on meanwhile; on any other fd it
/// runs as [`fd_call`] does, without the extra handle.
///
/// Such a sleep is cancelled by the tree's switch, which moves the FIFO
/// (its data and every fd on it) to the mount: a read, or a write that had
/// written nothing, is made again where the fd is now; a write that had
/// written `n` bytes goes on with `rest(n)` (the rest of the caller's
/// buffers, written through the fd as it is now), and returns `n` and what
/// that wrote, or `n` alone if that failed (as Linux returns the part
/// written before an error).
pub(crate) fn fd_call_io(
    fd: c_int,
    kernel: impl Fn() -> ssize_t,
    uvfs: impl Fn(&mut Process, i32) -> Result<ssize_t, Errno>,
    rest: impl FnOnce(usize) -> ssize_t,
) -> ssize_t {
    let mut fail = -1;
    loop {
        let t = Ticket::take();
        match FDMAP.get(fd) {
            Fd::Kernel => return kernel(),
            Fd::Stale => {
                set_errno(libc::EBADF);
                return fail;
            }
            Fd::Uvfs(u) => {
                let l = local();
                if l.busy() {
                    return kernel();
                }
                let mut out = Io::Done;
                let r = run_in(l, fail, || fd_io(l, u, t, &uvfs, &mut out));
                match out {
                    Io::Done => return r,
                    // Again, where the fd is now.
                    Io::Again => fail = r,
                    Io::Wrote(n) => {
                        let saved = errno();
                        let m = rest(n);
                        set_errno(saved);
                        return n as ssize_t + m.max(0);
                    }
                }
            }
        }
    }
}

/// How [`fd_io`] left the call.
enum Io {
    /// Its result stands.
    Done,
    /// It raced the tree's switch, or its sleep was cancelled by it before
    /// it moved any byte: made again.
    Again,
    /// Its sleep was cancelled by the switch after it wrote this many
    /// bytes (to the FIFO the switch then moved to the mount).
    Wrote(usize),
}

/// The uvfs side of [`fd_call_io`] on uvfs fd `u`.
#[inline]
fn fd_io(
    l: &Local,
    u: i32,
    t: Ticket,
    uvfs: &impl Fn(&mut Process, i32) -> Result<ssize_t, Errno>,
    out: &mut Io,
) -> Result<ssize_t, Errno> {
    let sleeper = with_state_in(l, |s| {
        if t.switched() {
            *out = Io::Again;
            Err(unchanged())
        } else if s.p().may_block(u) {
            crate::signal::fifo_io_begin();
            Ok::<_, Errno>(Err((s.p().new_thread(), u)))
        } else {
            uvfs(s.p(), u).map(Ok)
        }
    })?;
    match sleeper {
        Ok(v) => Ok(v),
        Err((mut thread, u)) => fifo_io(thread_call(&mut thread, u, t, uvfs), out),
    }
}

/// A FIFO call on its own thread handle, cancellable by the switch (see
/// [`fd_call_io`]); ends the count [`fd_io`] began.
#[cold]
fn thread_call(
    thread: &mut Process,
    u: i32,
    t: Ticket,
    uvfs: &impl Fn(&mut Process, i32) -> Result<ssize_t, Errno>,
) -> (Result<ssize_t, Errno>, bool) {
    let r = crate::signal::cancellable(t.pre_client(), || uvfs(thread, u));
    crate::signal::fifo_io_end();
    r
}

/// What a cancelled FIFO call leaves to [`fd_call_io`].
fn fifo_io((r, cancelled): (Result<ssize_t, Errno>, bool), out: &mut Io) -> Result<ssize_t, Errno> {
    if !cancelled {
        return r;
    }
    match r {
        Err(Errno::EINTR) => {
            *out = Io::Again;
            Err(unchanged())
        }
        Ok(n) if n > 0 => {
            *out = Io::Wrote(n as usize);
            Ok(n)
        }
        r => r,
    }
}

/// As [`fd_call`], for a call that may sleep (a lock wait, hook `call`): a thread
/// handle on the uvfs process is taken under the lock, and `uvfs` runs on
/// it after the lock is released, so the other threads' calls (the unlock
/// that wakes this one among them) go on meanwhile.
pub(crate) fn fd_call_sleeping<T>(
    call: &'static str,
    fd: c_int,
    fail: T,
    kernel: impl Fn() -> T,
    uvfs: impl Fn(&mut Process, i32) -> Result<T, Errno>,
) -> T {
    let mut fail = fail;
    loop {
        let t = Ticket::take();
        match FDMAP.get(fd) {
            Fd::Kernel => return kernel(),
            Fd::Uvfs(_) if busy() => return kernel(),
            Fd::Stale => {
                set_errno(libc::EBADF);
                return fail;
            }
            Fd::Uvfs(_) => {}
        }
        let mut raced = false;
        let r = run(fail, || {
            let (mut thread, u) = with_state(|s| {
                // The fd is looked up again inside the gate, after the
                // switch check: a call that raced the switch starts again.
                if t.switched() {
                    raced = true;
                    return Err(unchanged());
                }
                let u = s.ufd(fd)?;
                Ok::<_, Errno>((s.p().new_thread(), u))
            })?;
            // The tree's switch cancels the wait (`EINTR`).
            crate::signal::cancellable(t.pre_client(), || uvfs(&mut thread, u)).0
        });
        // Read inside the gate, where the switch is settled (the switch
        // itself may have woken this call: its reopening closes the
        // private fds, releasing their locks).
        if !raced && !with_state(|_| t.switched()) {
            return r;
        }
        if !raced && !matches!(FDMAP.get(fd), Fd::Uvfs(_)) {
            // The call slept across the switch on the process's private
            // uvfs (cancelled there, or what it got was taken where no
            // other process can see it): made again on the mount, where
            // its fd is now, and said once.
            static SAID: crate::refuse::Said = crate::refuse::Said::new();
            crate::refuse::said_once(
                &SAID,
                &format!(
                    "{call}: a lock wait asleep on the process's private uvfs when the process tree switched to its mount was made again on the mount (a lock taken there would hold nothing)"
                ),
            );
        }
        // Again, where the fd is now: the mount's, or the private uvfs's
        // for an fd kept there (unlinked); `r` stands for a failure.
        fail = r;
    }
}

/// Whether the C path `p` (relative to the cwd) routes to uvfs; false for
/// NULL.
///
/// # Safety
/// `p` is NULL or a valid C string.
pub(crate) unsafe fn is_uvfs_path(p: *const c_char) -> bool {
    // SAFETY: non-NULL (checked first), so a C string per the contract.
    !p.is_null() && matches!(route(AT_FDCWD, unsafe { cbytes(p) }), Some(Route::Uvfs(..)))
}

/// For a path the caller found not to route to uvfs: runs `kernel` with
/// the path the kernel must walk: the caller's, or the host path it stands
/// for (a `..` that climbs out of the prefix, a relative path while the cwd
/// is in uvfs), as a C string alive for the call.
///
/// # Safety
/// `path` is NULL or a valid C string.
pub(crate) unsafe fn with_kernel_path<T>(
    path: *const c_char,
    kernel: impl FnOnce(*const c_char) -> T,
) -> T {
    if path.is_null() {
        return kernel(path);
    }
    // SAFETY: non-NULL and valid per the contract.
    match route(AT_FDCWD, unsafe { cbytes(path) }) {
        Some(Route::KernelAbs(abs)) => match CString::new(abs) {
            Ok(c) => kernel(c.as_ptr()),
            Err(_) => kernel(path),
        },
        _ => kernel(path),
    }
}

/// Whether `fd` is a uvfs fd (or a stale placeholder).
#[inline]
pub(crate) fn is_uvfs(fd: c_int) -> bool {
    FDMAP.get(fd) != Fd::Kernel
}

/// `at_call! { name(arg: T, …); }`: an interposed `name(dirfd, path, arg…)`
/// whose uvfs side is `Process::name(dirfd, path, arg…)` returning `()`.
macro_rules! at_call {
    ($name:ident($($a:ident: $t:ty),* $(,)?);) => {
        #[doc = concat!("`", stringify!($name), "`: a path under the prefix goes to uvfs's `", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `path` is NULL or a NUL-terminated string, as the C function
        /// requires.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dirfd: ::libc::c_int,
            path: *const ::libc::c_char,
            $($a: $t),*
        ) -> ::libc::c_int {
            let kernel = |d: ::libc::c_int, p: *const ::libc::c_char| {
                // SAFETY: the caller's arguments (or its path made absolute,
                // a C string alive for the call) under its own contract.
                unsafe {
                    $crate::interpose::real!(
                        $name: fn(::libc::c_int, *const ::libc::c_char, $($t),*) -> ::libc::c_int
                    )(d, p, $($a),*)
                }
            };
            // SAFETY: the caller's path, valid per the contract.
            unsafe {
                $crate::dispatch::path_call(dirfd, path, -1, kernel, |s, d, p| {
                    s.p().$name(d, p, $($a),*).map(|()| 0)
                })
            }
        }
    };
}
pub(crate) use at_call;
