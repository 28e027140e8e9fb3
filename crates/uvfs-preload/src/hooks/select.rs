//! `poll`, `ppoll`, `select`, `pselect` (and the `_FORTIFY_SOURCE` forms
//! `__poll_chk`, `__ppoll_chk`) over a set that holds uvfs fds, alone or
//! mixed with kernel fds. A set of kernel fds only goes to the next
//! definition unchanged.
//!
//! A mixed set is served as Linux's `do_poll` serves one: a scan of every
//! entry, then a sleep until one of them may have changed, then another
//! scan. The uvfs entries are scanned by [`Process::poll_register`], the
//! kernel entries by the kernel's `ppoll` (with the uvfs entries left
//! out), and the sleep is that same `ppoll` over the kernel entries plus
//! an eventfd: the scan registered a [`Waiter`] on every uvfs FIFO of the
//! set whose callback writes to the eventfd, so a change of a uvfs FIFO
//! wakes the kernel's poll as a kernel fd's change would. Signals
//! interrupt the wait as they would the plain call (`EINTR`), with
//! `ppoll`'s and `pselect`'s signal mask in force while it sleeps.
//!
//! The eventfd is made only when the call must sleep (nothing ready at the
//! first scan and a time limit other than 0), with raw system calls; it
//! goes with the waiter, when the last thread that might write to it lets
//! go, and its number is then recorded as free (the placeholder cache's
//! numbering, see `state`). While the call sleeps it holds one kernel fd
//! number the program did not ask for.
//!
//! `select` and `pselect` are polls of the fds in the sets: readable is
//! `POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR`, writable
//! `POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR`, exceptional `POLLPRI`, as
//! Linux maps them; an fd of the sets that is not open is `EBADF` before
//! any wait (the kernel's check: only fds below the size of its fd table
//! count); an `O_PATH` fd (`POLLNVAL` to poll) is ready in every set, as
//! Linux 6.18 reports it. `select` writes the time left
//! back into its `timeval`, as Linux does.

use crate::conv::{errno, set_errno};
use crate::dispatch::{Ticket, is_uvfs, restartable};
use crate::guard::busy;
use crate::interpose::real;
use crate::signal::EventFd;
use crate::state::with_state;
use libc::{c_int, c_long, nfds_t, pollfd, sigset_t, timespec, timeval};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uvfs::uapi::*;
use uvfs::{Errno, PollFd, Waiter};

type RealPpoll =
    unsafe extern "C" fn(*mut pollfd, nfds_t, *const timespec, *const sigset_t) -> c_int;

fn real_ppoll() -> RealPpoll {
    real!(ppoll: fn(*mut pollfd, nfds_t, *const timespec, *const sigset_t) -> c_int)
}

/// Whether the set holds a uvfs fd (or a stale placeholder).
///
/// # Safety
/// `fds` is NULL or points at `n` readable entries.
unsafe fn has_uvfs(fds: *const pollfd, n: nfds_t) -> bool {
    if fds.is_null() || busy() {
        return false;
    }
    // SAFETY: `n` readable entries per the contract.
    let s = unsafe { std::slice::from_raw_parts(fds, n as usize) };
    s.iter().any(|e| e.fd >= 0 && is_uvfs(e.fd))
}

/// Empties eventfd `fd` (non-blocking) after it fired.
fn drain(fd: c_int) {
    let mut b = [0u8; 8];
    // SAFETY: 8 writable bytes; a non-blocking eventfd the caller keeps
    // alive.
    unsafe { libc::syscall(libc::SYS_read, fd, b.as_mut_ptr(), 8) };
}

/// The sleep of a mixed poll: the waiter and the eventfd it signals.
struct Sleep {
    waiter: Arc<Waiter>,
    ev: c_int,
}

impl Sleep {
    fn new() -> Result<Sleep, Errno> {
        let ev = Arc::new(EventFd::new()?);
        let raw = ev.0;
        let e2 = ev.clone();
        let waiter = Waiter::with_notify(move || e2.signal());
        drop(ev);
        Ok(Sleep { waiter, ev: raw })
    }
}

/// The deadline of a time limit (a limit of 0 is a deadline now); none
/// for no limit, or one too far to represent.
fn deadline_after(d: Option<Duration>) -> Option<Instant> {
    d.and_then(|d| Instant::now().checked_add(d))
}

/// What is left of `limit` (`None`: no limit) since `start`.
fn left_after(limit: Option<Duration>, start: Instant) -> Option<Duration> {
    limit.map(|l| l.saturating_sub(start.elapsed()))
}

/// `d` as the kernel's timespec.
fn timespec_of(d: Duration) -> timespec {
    timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as c_long,
    }
}

/// The kernel's timespec for what is left until `deadline` (NULL: none).
fn left(deadline: Option<Instant>) -> Option<timespec> {
    deadline.map(|d| timespec_of(d.saturating_duration_since(Instant::now())))
}

/// Scans the uvfs entries of `fds` (`uv`: their indices), registering
/// `waiter` if any; a stale placeholder is `POLLNVAL`. Returns how many
/// have a non-zero `revents` (written into `fds`).
fn scan_uvfs(
    t: Ticket,
    fds: &mut [pollfd],
    uv: &[usize],
    waiter: Option<&Arc<Waiter>>,
) -> Result<usize, Errno> {
    with_state(|s| {
        t.check()?;
        let mut set: Vec<PollFd> = uv
            .iter()
            .map(|&i| PollFd {
                fd: s.ufd(fds[i].fd).unwrap_or(-1),
                events: fds[i].events,
                revents: 0,
            })
            .collect();
        let p = s.p();
        match waiter {
            Some(w) => p.poll_register(&mut set, w),
            None => p.poll(&mut set, 0)?,
        };
        let mut n = 0;
        for (&i, e) in uv.iter().zip(&set) {
            // A stale placeholder (fd -1 here) is closed as far as the
            // program knows.
            fds[i].revents = if e.fd < 0 { POLLNVAL } else { e.revents };
            if fds[i].revents != 0 {
                n += 1;
            }
        }
        Ok(n)
    })
}

/// One kernel poll of the kernel entries (`kern`: their indices into
/// `fds`) plus `extra` (the eventfd) with `tmo` (NULL: no limit): the
/// count of kernel entries ready, written into `fds`, and whether `extra`
/// fired.
fn scan_kernel(
    fds: &mut [pollfd],
    kern: &[usize],
    extra: Option<c_int>,
    tmo: Option<timespec>,
    sigmask: *const sigset_t,
) -> Result<(usize, bool), Errno> {
    let mut set: Vec<pollfd> = kern
        .iter()
        .map(|&i| pollfd {
            revents: 0,
            ..fds[i]
        })
        .collect();
    if let Some(ev) = extra {
        set.push(pollfd {
            fd: ev,
            events: POLLIN,
            revents: 0,
        });
    }
    let tp = tmo
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const timespec);
    // SAFETY: `set` holds `set.len()` entries; `tp` is NULL or a timespec
    // alive for the call; `sigmask` is the caller's (NULL or valid).
    let r = unsafe { real_ppoll()(set.as_mut_ptr(), set.len() as nfds_t, tp, sigmask) };
    if r < 0 {
        return Err(Errno::from_raw(errno()));
    }
    let mut n = 0;
    for (&i, e) in kern.iter().zip(&set) {
        fds[i].revents = e.revents;
        if e.revents != 0 {
            n += 1;
        }
    }
    let fired = extra.is_some() && set.last().is_some_and(|e| e.revents != 0);
    Ok((n, fired))
}

/// A poll of a set holding uvfs fds, with a time limit (`None`: none) and
/// the signal mask for the sleep: the count of entries with a non-zero
/// `revents`. [`RESTART`](crate::dispatch::RESTART) when the tree's switch came after `t` (the set's
/// uvfs fds are the mount's now).
fn mixed_poll(
    call: &'static str,
    t: Ticket,
    fds: &mut [pollfd],
    limit: Option<Duration>,
    sigmask: *const sigset_t,
) -> Result<c_int, Errno> {
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    if fds.len() as u64 > nofile {
        return Err(Errno::EINVAL);
    }
    let (mut uv, mut kern) = (Vec::new(), Vec::new());
    for (i, e) in fds.iter_mut().enumerate() {
        e.revents = 0;
        if e.fd < 0 {
            continue;
        }
        if is_uvfs(e.fd) {
            uv.push(i)
        } else {
            kern.push(i)
        }
    }
    // The test hook: between the look-ups and the gate.
    t.park(call);
    let deadline = deadline_after(limit);
    let zero = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // The first scan, without sleeping.
    let nu = scan_uvfs(t, fds, &uv, None)?;
    let (nk, _) = scan_kernel(fds, &kern, None, Some(zero), sigmask)?;
    if nu + nk > 0 || limit == Some(Duration::ZERO) {
        return Ok((nu + nk) as c_int);
    }
    let sleep = Sleep::new()?;
    loop {
        // Register, then look: a change after the look wakes the eventfd.
        let nu = scan_uvfs(t, fds, &uv, Some(&sleep.waiter))?;
        let tmo = if nu > 0 { Some(zero) } else { left(deadline) };
        let (nk, fired) = scan_kernel(fds, &kern, Some(sleep.ev), tmo, sigmask)?;
        if nu + nk > 0 {
            return Ok((nu + nk) as c_int);
        }
        if fired {
            drain(sleep.ev);
            continue;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            // The time ran out: one last look at the uvfs entries, as
            // Linux scans once more.
            let nu = scan_uvfs(t, fds, &uv, None)?;
            return Ok(nu as c_int);
        }
    }
}

/// The caller's entries as a slice.
///
/// # Safety
/// `fds` points at `n` writable entries.
unsafe fn entries<'a>(fds: *mut pollfd, n: nfds_t) -> &'a mut [pollfd] {
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts_mut(fds, n as usize) }
}

/// `poll`: a set with uvfs fds as the module docs say.
///
/// # Safety
/// `fds` points at `n` writable entries (or is NULL with `n` 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
    let t = Ticket::take();
    // SAFETY: the caller's set, per the contract.
    if !unsafe { has_uvfs(fds, n) } {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real!(poll: fn(*mut pollfd, nfds_t, c_int) -> c_int)(fds, n, timeout) };
    }
    let limit = u64::try_from(timeout).ok().map(Duration::from_millis);
    let start = Instant::now();
    // SAFETY: `n` writable entries per the contract.
    let set = unsafe { entries(fds, n) };
    restartable(-1, || mixed_poll("poll", t, set, limit, std::ptr::null())).unwrap_or_else(|| {
        // The switch came: again, for the time left.
        let rest =
            left_after(limit, start).map_or(-1, |r| r.as_millis().min(i32::MAX as u128) as c_int);
        // SAFETY: the caller's set, per the contract.
        unsafe { poll(fds, n, rest) }
    })
}

/// `ppoll`: as [`poll`] with a `timespec` limit (`EINVAL` if invalid) and
/// a signal mask for the wait.
///
/// # Safety
/// `fds` points at `n` writable entries; `tmo` and `sigmask` are NULL or
/// valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ppoll(
    fds: *mut pollfd,
    n: nfds_t,
    tmo: *const timespec,
    sigmask: *const sigset_t,
) -> c_int {
    let t = Ticket::take();
    // SAFETY: the caller's set, per the contract.
    if !unsafe { has_uvfs(fds, n) } {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real_ppoll()(fds, n, tmo, sigmask) };
    }
    // SAFETY: NULL or a valid timespec per the contract.
    let limit = match unsafe { tmo.as_ref() } {
        None => None,
        Some(t) if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) => {
            set_errno(libc::EINVAL);
            return -1;
        }
        Some(t) => Some(Duration::new(t.tv_sec as u64, t.tv_nsec as u32)),
    };
    let start = Instant::now();
    // SAFETY: `n` writable entries per the contract.
    let set = unsafe { entries(fds, n) };
    restartable(-1, || mixed_poll("ppoll", t, set, limit, sigmask)).unwrap_or_else(|| {
        let rest = left_after(limit, start).map(timespec_of);
        let tp = rest
            .as_ref()
            .map_or(std::ptr::null(), |r| r as *const timespec);
        // SAFETY: the caller's set and mask; `tp` NULL or alive for the call.
        unsafe { ppoll(fds, n, tp, sigmask) }
    })
}

/// `__poll_chk`: `poll` after fortify's check that the array holds `n`
/// entries (glibc's own when it does not, or with no uvfs fd).
///
/// # Safety
/// As [`poll`]; `len` is the array's size in bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __poll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    timeout: c_int,
    len: usize,
) -> c_int {
    // SAFETY: the caller's set, per the contract.
    if (len / size_of::<pollfd>()) < n as usize || !unsafe { has_uvfs(fds, n) } {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe {
            real!(__poll_chk: fn(*mut pollfd, nfds_t, c_int, usize) -> c_int)(fds, n, timeout, len)
        };
    }
    // SAFETY: as `poll`'s, checked above.
    unsafe { poll(fds, n, timeout) }
}

/// `__ppoll_chk`: `ppoll` after fortify's check (see [`__poll_chk`]).
///
/// # Safety
/// As [`ppoll`]; `len` is the array's size in bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __ppoll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    tmo: *const timespec,
    sigmask: *const sigset_t,
    len: usize,
) -> c_int {
    // SAFETY: the caller's set, per the contract.
    if (len / size_of::<pollfd>()) < n as usize || !unsafe { has_uvfs(fds, n) } {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe {
            real!(__ppoll_chk: fn(*mut pollfd, nfds_t, *const timespec, *const sigset_t, usize) -> c_int)(
                fds, n, tmo, sigmask, len,
            )
        };
    }
    // SAFETY: as `ppoll`'s, checked above.
    unsafe { ppoll(fds, n, tmo, sigmask) }
}

// Linux 6.18 counts a file without a poll of its own answer (`POLLNVAL`:
// an `O_PATH` fd) as ready in every set.
const READ_SET: i16 = POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR | POLLNVAL;
const WRITE_SET: i16 = POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR | POLLNVAL;
const EX_SET: i16 = POLLPRI | POLLNVAL;

/// The bit of `fd` in an `fd_set` given as a word array.
///
/// # Safety
/// `set` is NULL or holds at least `fd / 64 + 1` words.
unsafe fn bit(set: *mut u64, fd: usize) -> bool {
    // SAFETY: per the contract.
    !set.is_null() && unsafe { *set.add(fd / 64) } & (1 << (fd % 64)) != 0
}

/// The sets' fds as poll entries, whether any is a uvfs fd, or `EBADF`
/// for one that is not open (checked only when some fd is a uvfs one).
///
/// # Safety
/// Each set is NULL or holds `nfds` bits.
unsafe fn select_entries(nfds: usize, sets: [*mut u64; 3]) -> Option<Vec<pollfd>> {
    let mut out = Vec::new();
    let mut any = false;
    for fd in 0..nfds {
        // SAFETY: `fd < nfds`, per the contract.
        let [r, w, x] = sets.map(|s| unsafe { bit(s, fd) });
        if !(r || w || x) {
            continue;
        }
        let mut events = 0;
        if r {
            events |= POLLIN | POLLRDNORM | POLLRDBAND;
        }
        if w {
            events |= POLLOUT | POLLWRNORM | POLLWRBAND;
        }
        if x {
            events |= POLLPRI;
        }
        any |= is_uvfs(fd as c_int);
        out.push(pollfd {
            fd: fd as c_int,
            events,
            revents: 0,
        });
    }
    any.then_some(out)
}

/// The fd checks of `select`, before any wait, as Linux makes them: the
/// kernel's own select with no wait over copies of the sets (`EBADF` for
/// an fd below the size of the kernel's fd table that is not open; the
/// placeholders are open there), then `EBADF` for a uvfs fd the program
/// closed (a cached placeholder). A kernel fd past the kernel's table is
/// not looked at: it is left out of the poll (`skip`), its bits as they
/// were.
///
/// # Safety
/// Each set is NULL or holds `nfds` bits.
unsafe fn select_check(
    t: Ticket,
    nfds: c_int,
    sets: [*mut u64; 3],
    fds: &mut [pollfd],
) -> Result<Vec<bool>, Errno> {
    let words = (nfds as usize).div_ceil(64);
    let mut copies: [Vec<u64>; 3] = Default::default();
    for (c, s) in copies.iter_mut().zip(sets) {
        if !s.is_null() {
            // SAFETY: `words` words of the caller's set, per the contract.
            *c = unsafe { std::slice::from_raw_parts(s, words) }.to_vec();
        }
    }
    let ptr = |c: &mut Vec<u64>| {
        if c.is_empty() {
            std::ptr::null_mut()
        } else {
            c.as_mut_ptr().cast::<libc::fd_set>()
        }
    };
    let [r, w, x] = &mut copies;
    let (r, w, x) = (ptr(r), ptr(w), ptr(x));
    let mut tv = timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: copies of `nfds` bits each (or NULL), a zero timeout.
    let rc = unsafe {
        real!(select: fn(c_int, *mut libc::fd_set, *mut libc::fd_set, *mut libc::fd_set, *mut timeval) -> c_int)(
            nfds, r, w, x, &mut tv,
        )
    };
    if rc < 0 {
        return Err(Errno::from_raw(errno()));
    }
    let mut skip = vec![false; fds.len()];
    for (e, sk) in fds.iter_mut().zip(skip.iter_mut()) {
        if is_uvfs(e.fd) {
            with_state(|s| {
                t.check()?;
                s.ufd(e.fd)
            })?;
        } else {
            // SAFETY: a plain fcntl query of a number.
            if unsafe { libc::syscall(libc::SYS_fcntl, e.fd, libc::F_GETFD) } < 0 {
                e.fd = -1;
                *sk = true;
            }
        }
    }
    Ok(skip)
}

/// The shared part of `select` and `pselect`: the count of set bits.
///
/// # Safety
/// Each set is NULL or holds `nfds` bits (every fd of `fds` is below
/// `nfds`); `sigmask` is NULL or valid.
unsafe fn mixed_select(
    call: &'static str,
    t: Ticket,
    nfds: c_int,
    mut fds: Vec<pollfd>,
    sets: [*mut u64; 3],
    limit: Option<Duration>,
    sigmask: *const sigset_t,
) -> Result<c_int, Errno> {
    let numbers: Vec<usize> = fds.iter().map(|e| e.fd as usize).collect();
    // SAFETY: the caller's sets, per the contract.
    let skip = unsafe { select_check(t, nfds, sets, &mut fds)? };
    mixed_poll(call, t, &mut fds, limit, sigmask)?;
    let mut n = 0;
    for ((e, &fd), _) in fds.iter().zip(&numbers).zip(&skip).filter(|(_, s)| !**s) {
        for (s, mask) in sets.into_iter().zip([READ_SET, WRITE_SET, EX_SET]) {
            if s.is_null() {
                continue;
            }
            let (word, b) = (fd / 64, 1u64 << (fd % 64));
            // SAFETY: `fd < nfds`, within the set per the contract.
            unsafe {
                if e.fd >= 0 && e.events & mask != 0 && e.revents & mask != 0 {
                    *s.add(word) |= b;
                    n += 1;
                } else {
                    *s.add(word) &= !b;
                }
            }
        }
    }
    Ok(n)
}

/// The poll entries of a `select` whose sets name a uvfs fd, or `None`
/// when the kernel is to answer alone (the shim re-entered, no fds, or no
/// uvfs fd in the sets).
///
/// # Safety
/// Each set is NULL or holds `nfds` bits.
unsafe fn uvfs_entries(nfds: c_int, sets: [*mut u64; 3]) -> Option<Vec<pollfd>> {
    if busy() || nfds <= 0 {
        return None;
    }
    // SAFETY: per this function's contract.
    unsafe { select_entries(nfds as usize, sets) }
}

/// `select`: as the module docs say; the time left is written back.
///
/// # Safety
/// Each set is NULL or holds `nfds` bits; `tv` is NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn select(
    nfds: c_int,
    r: *mut libc::fd_set,
    w: *mut libc::fd_set,
    x: *mut libc::fd_set,
    tv: *mut timeval,
) -> c_int {
    let t = Ticket::take();
    let sets = [r, w, x].map(|s| s.cast::<u64>());
    // SAFETY: the caller's sets, `nfds` bits each per the contract.
    let fds = unsafe { uvfs_entries(nfds, sets) };
    let Some(fds) = fds else {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe {
            real!(select: fn(c_int, *mut libc::fd_set, *mut libc::fd_set, *mut libc::fd_set, *mut timeval) -> c_int)(
                nfds, r, w, x, tv,
            )
        };
    };
    // SAFETY: NULL or valid per the contract.
    let limit = match unsafe { tv.as_ref() } {
        None => None,
        Some(t) if t.tv_sec < 0 || t.tv_usec < 0 => {
            set_errno(libc::EINVAL);
            return -1;
        }
        Some(t) => {
            Some(Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64))
        }
    };
    let start = Instant::now();
    // SAFETY: the caller's sets per the contract.
    let res = restartable(-1, || unsafe {
        mixed_select("select", t, nfds, fds, sets, limit, std::ptr::null())
    });
    // SAFETY: NULL or valid per the contract.
    if let (Some(l), Some(tvp)) = (limit, unsafe { tv.as_mut() }) {
        let rest = l.saturating_sub(start.elapsed());
        tvp.tv_sec = rest.as_secs() as libc::time_t;
        tvp.tv_usec = rest.subsec_micros() as libc::suseconds_t;
    }
    // The switch came (the sets untouched): again, for the time left
    // (just written back).
    // SAFETY: the caller's arguments, valid per the contract.
    res.unwrap_or_else(|| unsafe { select(nfds, r, w, x, tv) })
}

/// `pselect`: as [`select`] with a `timespec` limit (left unchanged) and a
/// signal mask for the wait.
///
/// # Safety
/// Each set is NULL or holds `nfds` bits; `ts` and `sigmask` are NULL or
/// valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pselect(
    nfds: c_int,
    r: *mut libc::fd_set,
    w: *mut libc::fd_set,
    x: *mut libc::fd_set,
    ts: *const timespec,
    sigmask: *const sigset_t,
) -> c_int {
    let t = Ticket::take();
    let sets = [r, w, x].map(|s| s.cast::<u64>());
    // SAFETY: the caller's sets, `nfds` bits each per the contract.
    let fds = unsafe { uvfs_entries(nfds, sets) };
    let Some(fds) = fds else {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe {
            real!(pselect: fn(c_int, *mut libc::fd_set, *mut libc::fd_set, *mut libc::fd_set, *const timespec, *const sigset_t) -> c_int)(
                nfds, r, w, x, ts, sigmask,
            )
        };
    };
    // SAFETY: NULL or valid per the contract.
    let limit = match unsafe { ts.as_ref() } {
        None => None,
        Some(t) if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) => {
            set_errno(libc::EINVAL);
            return -1;
        }
        Some(t) => Some(Duration::new(t.tv_sec as u64, t.tv_nsec as u32)),
    };
    let start = Instant::now();
    // SAFETY: the caller's sets and mask per the contract.
    restartable(-1, || unsafe {
        mixed_select("pselect", t, nfds, fds, sets, limit, sigmask)
    })
    .unwrap_or_else(|| {
        // The switch came (the sets untouched): again, for the time left.
        let rest = left_after(limit, start).map(timespec_of);
        let tp = rest
            .as_ref()
            .map_or(std::ptr::null(), |r| r as *const timespec);
        // SAFETY: the caller's sets and mask; `tp` NULL or alive for the call.
        unsafe { pselect(nfds, r, w, x, tp, sigmask) }
    })
}
