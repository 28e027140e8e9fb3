//! The interruptible sleep of uvfs's blocking calls under the shim
//! (`F_SETLKW`, a blocking flock, a FIFO open waiting for its partner, a
//! FIFO read or write that must wait): the library sleeps through this
//! [`Sleep`] hook, set on the process's handle at start-up and shared by
//! its threads and forks (see `uvfs::signal`).
//!
//! Each blocking call gets an eventfd (made at its first sleep, closed when
//! the call ends) that the call's [`Waiter`] writes to when the lock or
//! FIFO changes; the thread sleeps in a blocking `read(2)` of it, in the
//! kernel, so a signal is delivered into the sleep as into any system
//! call: its handler runs there. What happens next is the kernel's own
//! decision, made with the handler's flags: a read of an eventfd is, like
//! the waits it stands in for (FIFO open, read and write; the lock waits),
//! a sleep that answers "restart if the handler has `SA_RESTART`" (Linux's
//! `-ERESTARTSYS`). So with `SA_RESTART` the kernel restarts the read and
//! the uvfs call waits on, and without it the read fails with `EINTR` and
//! the hook answers [`Interrupted::Eintr`]. Nothing has to know which
//! signal came or what its handler's flags are: no `sigaction` or
//! `signal` is interposed, so handlers installed by any means (glibc's
//! `signal`, `sigaction`, a raw `rt_sigaction`, `sigset`) and changed at
//! any time are seen as the kernel sees them, and a stop and continue
//! (`SIGSTOP`, `SIGCONT`) restarts the sleep as it does the kernel's.
//!
//! One difference stays: Linux returns the part of a FIFO write written
//! before a signal even with `SA_RESTART`; here the restarted sleep goes on
//! writing (the kernel hides the restart from the hook).
//!
//! Without a usable eventfd (none could be made, or its read fails), the
//! sleep parks the thread: uninterruptible, as before.

use crate::cancel::Waits;
use crate::conv::errno;
use crate::placeholders::hole_lower;
use libc::c_int;
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};
use uvfs::Errno;
use uvfs::{Interrupted, Sleep, Waiter};

/// The shim's [`Sleep`] hook (one for the whole process; its state is per
/// thread). A wait with a time limit (a lease break's) is not
/// interruptible: the default `sleep_until` waits on the waiter itself.
pub(crate) struct KernelSleep;

/// The shim's lease-break hook: the kernel's signal to the lease holder's
/// owner, sent with kill(2) (a process group: to `-pgrp`; a thread:
/// tgkill within this process).
pub(crate) struct KillNotify;

impl uvfs::LeaseNotify for KillNotify {
    fn lease_break(&self, n: uvfs::LeaseBreak) {
        // SAFETY: sending a signal; no memory is involved.
        unsafe {
            match n.kind {
                uvfs::uapi::F_OWNER_PGRP => {
                    libc::kill(-n.pid, n.sig);
                }
                uvfs::uapi::F_OWNER_TID => {
                    libc::syscall(libc::SYS_tgkill, libc::getpid(), n.pid, n.sig);
                }
                _ => {
                    libc::kill(n.pid, n.sig);
                }
            }
        }
    }
}

/// The thread's sleep in progress: the eventfd its waiter writes to, or
/// none (park).
enum Current {
    None,
    Event(Weak<EventFd>),
    Park,
}

std::thread_local! {
    static CURRENT: RefCell<Current> = const { RefCell::new(Current::None) };
    /// This thread's wait that the tree's switch may cancel (armed by
    /// [`cancellable`] for the call; this thread's own reference to the
    /// registered eventfd keeps its address from being reused while it is
    /// registered).
    static LOCK_WAIT: RefCell<LockWait> = const { RefCell::new(LockWait::Off) };
    /// Whether this thread's sleep answered `EINTR` because the tree's
    /// switch cancelled it (read and cleared by [`cancellable`]).
    static CANCELLED: Cell<bool> = const { Cell::new(false) };
}

/// The process's table of cancellable waits, the flag set (once, for
/// good) when the tree's switch begins, and the count of FIFO reads and
/// writes under way on the private uvfs: see `crate::cancel` for the rules
/// between a wait and the switch. Every cancellable wait armed by a call
/// that decided before the switch (its ticket read "not a client") is
/// cancelled from then on, also one that registers its eventfd only after
/// the switch has looked at the table. Slot `i` is slot `i % CHUNK` of
/// chunk `i / CHUNK`; chunks are made as the waits need them and never
/// freed. A wait that finds no free slot among all [`NCHUNKS`] chunks
/// (65,536 waits asleep at once) is not cancellable (it waits on). The
/// FIFO calls, each on a thread handle of its own outside the fork gate
/// (`dispatch::fd_call_io`), are counted inside the gate; the switch,
/// holding the gate, cancels them and waits for the count to reach 0
/// before it moves the FIFOs' data to the mount, so no byte is read or
/// written on the private copy after it was moved.
static WAITS: Waits<EventFd, CHUNK, NCHUNKS> = Waits::new();

const CHUNK: usize = 64;
const NCHUNKS: usize = 1024;

/// One more FIFO call on the private uvfs (the caller is inside the gate).
pub(crate) fn fifo_io_begin() {
    WAITS.fifo_begin();
}

/// That call has left the private uvfs.
pub(crate) fn fifo_io_end() {
    WAITS.fifo_end();
}

/// The tree's switch, holding the gate: cancels every wait armed before
/// it (lock waits, FIFO opens, FIFO reads and writes) and waits until no
/// FIFO read or write is left on the private uvfs. False if one is still
/// there after `limit` (a sleep that could not be made interruptible: no
/// eventfd could be made for it); the FIFOs then stay private.
pub(crate) fn begin_switch(limit: std::time::Duration) -> bool {
    cancel_lock_waits();
    let start = std::time::Instant::now();
    while WAITS.fifo_busy() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    true
}

/// This thread's lock wait, as the switch sees it.
enum LockWait {
    /// Not in a [`cancellable`] call.
    Off,
    /// In one, not registered (yet, or no free slot); whether the call
    /// decided before the tree's switch (so the switch's start cancels it).
    Armed(bool),
    /// Registered at this slot of [`WAITS`], with this thread's own
    /// reference to the eventfd there; and as in `Armed`.
    At(usize, Arc<EventFd>, bool),
}

/// Runs `f` (a call that may sleep on uvfs: a lock wait, a FIFO open,
/// read or write) with its sleep cancellable by the tree's switch: the
/// sleep then answers `EINTR`, and the caller, seeing the switch, makes the
/// call again on the mount. `pre`: the call decided before the switch (its
/// ticket did not read "client"), so the switch's start cancels it even if
/// it sleeps only after. Also returns whether a sleep of `f` was cancelled.
pub(crate) fn cancellable<R>(pre: bool, f: impl FnOnce() -> R) -> (R, bool) {
    LOCK_WAIT.with(|w| *w.borrow_mut() = LockWait::Armed(pre));
    CANCELLED.set(false);
    let r = f();
    if let LockWait::At(i, ev, _) = LOCK_WAIT.with(|w| w.replace(LockWait::Off)) {
        let mine = Arc::as_ptr(&ev).cast_mut();
        if WAITS.unregister(i, mine) {
            // SAFETY: the slot's reference, made by `Arc::into_raw` in
            // `register` and swapped out here, so owned here.
            drop(unsafe { Arc::from_raw(mine) });
        }
    }
    (r, CANCELLED.replace(false))
}

/// Registers `ev` if this thread is in a [`cancellable`] call.
fn register(ev: &Arc<EventFd>) {
    LOCK_WAIT.with(|w| {
        let mut w = w.borrow_mut();
        let LockWait::Armed(pre) = *w else {
            return;
        };
        let raw = Arc::into_raw(ev.clone()).cast_mut();
        match WAITS.register(raw) {
            Some(i) => *w = LockWait::At(i, ev.clone(), pre),
            // SAFETY: made by `Arc::into_raw` just above, placed nowhere.
            None => drop(unsafe { Arc::from_raw(raw) }),
        }
    });
}

/// Whether this thread's cancellable wait was cancelled (its slot emptied
/// by [`cancel_lock_waits`], or the switch began after the call decided);
/// if so, recorded for [`cancellable`].
fn cancelled() -> bool {
    let c = LOCK_WAIT.with(|w| match &*w.borrow() {
        LockWait::At(i, ev, pre) => WAITS.cancelled_at(*i, Arc::as_ptr(ev).cast_mut(), *pre),
        LockWait::Armed(pre) => *pre && WAITS.switching(),
        LockWait::Off => false,
    });
    if c {
        CANCELLED.set(true);
    }
    c
}

/// The tree's switch: wakes every registered lock wait, whose sleep then
/// answers `EINTR` (what it waited for is on the private uvfs, where the
/// thread that would release it no longer goes).
pub(crate) fn cancel_lock_waits() {
    WAITS.cancel_all(|p| {
        // SAFETY: a reference made by `Arc::into_raw` in `register`,
        // swapped out of its slot by the switch, so owned here.
        let ev = unsafe { Arc::from_raw(p) };
        ev.signal();
    });
}

impl Sleep for KernelSleep {
    fn waiter(&self) -> Arc<Waiter> {
        match EventFd::with_flags(libc::EFD_CLOEXEC) {
            Ok(ev) => {
                let ev = Arc::new(ev);
                register(&ev);
                CURRENT.with(|c| *c.borrow_mut() = Current::Event(Arc::downgrade(&ev)));
                // The waiter owns the eventfd: it closes with the call's
                // last reference to the waiter. It also unparks the
                // thread, for a sleep whose eventfd read failed.
                let t = std::thread::current();
                Waiter::with_notify(move || {
                    ev.signal();
                    t.unpark();
                })
            }
            Err(_) => {
                CURRENT.with(|c| *c.borrow_mut() = Current::Park);
                let t = std::thread::current();
                Waiter::with_notify(move || t.unpark())
            }
        }
    }

    fn sleep(&self, _waiter: &Arc<Waiter>) -> Result<(), Interrupted> {
        let ev = CURRENT.with(|c| match &*c.borrow() {
            Current::Event(w) => w.upgrade(),
            _ => None,
        });
        let Some(ev) = ev else {
            // An unpark before the park is kept: no wake-up is lost.
            std::thread::park();
            return Ok(());
        };
        // A switch that began before this wait registered (or that has
        // looked at the table already) would not wake it.
        if cancelled() {
            return Err(Interrupted::Eintr);
        }
        let mut b = [0u8; 8];
        // SAFETY: 8 writable bytes; our eventfd, kept open by `ev`. A raw
        // system call: the shim's own `read` hook must not see it.
        let r = unsafe { libc::syscall(libc::SYS_read, ev.0, b.as_mut_ptr(), 8) };
        if r < 0 {
            if crate::conv::errno() == libc::EINTR {
                return Err(Interrupted::Eintr);
            }
            // The eventfd is unusable (closed behind the shim's back by a
            // raw close, say): park instead of spinning on the failed read,
            // uninterruptibly, until the waiter's unpark.
            std::thread::park();
        }
        if cancelled() {
            return Err(Interrupted::Eintr);
        }
        Ok(())
    }
}

/// An eventfd that a [`Waiter`] writes to, closed (and its number
/// recorded as free) when the waiter goes. Non-blocking here; the
/// interruptible sleep of `crate::signal` reads a blocking one.
pub(crate) struct EventFd(pub(crate) c_int);

impl EventFd {
    pub(crate) fn new() -> Result<EventFd, Errno> {
        EventFd::with_flags(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)
    }

    /// An eventfd made with `flags` (`EFD_*`).
    pub(crate) fn with_flags(flags: c_int) -> Result<EventFd, Errno> {
        // SAFETY: plain integer arguments; a raw system call, so no
        // interposed function (and no placeholder cache) sees it.
        let fd = unsafe { libc::syscall(libc::SYS_eventfd2, 0, flags) };
        if fd < 0 {
            return Err(Errno::from_raw(errno()));
        }
        Ok(EventFd(fd as c_int))
    }

    pub(crate) fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: 8 readable bytes; our eventfd, alive while `self` is.
        unsafe { libc::syscall(libc::SYS_write, self.0, one.as_ptr(), 8) };
    }
}

impl Drop for EventFd {
    fn drop(&mut self) {
        // SAFETY: our own fd, closed once.
        unsafe { libc::syscall(libc::SYS_close, self.0) };
        hole_lower(self.0);
    }
}
