//! Interruptible sleeps: how a blocked call learns that a signal came
//! (Linux's `TASK_INTERRUPTIBLE` sleep, `signal_pending` and the
//! `-ERESTARTSYS` answer that the syscall exit turns into `EINTR` or a
//! restart).
//!
//! The library has no signals of its own. Every blocking wait of the
//! library — `F_SETLKW` and its OFD form, a blocking flock, a FIFO open
//! waiting for its partner, a FIFO read of an empty pipe, a FIFO write
//! into a full one — sleeps through the caller's [`Sleep`] hook
//! ([`Process::set_sleep`](crate::Process::set_sleep)), which an embedder
//! implements to end the sleep when its thread was signalled. Without a
//! hook a sleep ends only when woken, as before.
//!
//! A wait goes as the kernel's does: it registers the call's [`Waiter`]
//! (from [`Sleep::waiter`]) on the object's wait queue under the object's
//! lock, checks its condition, drops the lock and calls [`Sleep::sleep`],
//! which returns once the waiter was woken (a wake-up between the check
//! and the sleep is kept by the waiter: none is lost) or with
//! [`Interrupted`] when a handler ran. The hook answers how the call ends:
//!
//! - [`Interrupted::Eintr`]: the call fails with `EINTR`.
//! - [`Interrupted::Restart`]: the call goes on waiting, as Linux restarts
//!   a call that returned `-ERESTARTSYS` when the handler had
//!   `SA_RESTART`. Every sleep of the library is of that kind (on Linux:
//!   `fifo_open`'s wait for a partner, `pipe_read`, `pipe_write`, and the
//!   lock waits of `fs/locks.c` all answer `-ERESTARTSYS`); calls that
//!   answer `-ERESTARTNOHAND` (select, ppoll, pselect) or
//!   `-ERESTART_RESTARTBLOCK` (poll with a time limit, nanosleep) never
//!   restart after a handler: [`Process::poll`](crate::Process::poll),
//!   interrupted, is `EINTR` either way (the shim's poll sleeps in the
//!   kernel's own).
//!
//! What an interrupted call leaves, as on Linux: a lock request is
//! dequeued with its waits-for record, after one last try (a lock freed
//! while the signal came is taken: the call then succeeds, and the lock is
//! never held by a call that failed); an interrupted FIFO open gives back
//! its reader or writer count (waking the other side's waiters when it was
//! the last) and its reference on the pipe, unless its partner came
//! meanwhile, when the open succeeds; a read returns `EINTR` (it waits
//! only with nothing read); a write that wrote part returns that count,
//! `EINTR` only with nothing written (whatever `SA_RESTART` says).

pub use crate::locks::LeaseBreak;
use crate::primitive::sync::{Mutex, lock};
use crate::select::Waiter;
use std::sync::Arc;
use std::time::Instant;

/// How an interrupted sleep ends the call (the embedder's choice, from the
/// handler that ran: Linux's `SA_RESTART`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// Fail with `EINTR` (no handler flag `SA_RESTART`).
    Eintr,
    /// Go on waiting, as a restarted call would (`SA_RESTART`).
    Restart,
}

/// An embedder's interruptible sleep (one per thread, or one shared object
/// that keeps per-thread state). Must not call into uvfs.
pub trait Sleep: Send + Sync {
    /// A waiter for one blocking call: what the wait queues wake. The
    /// default sleeps on a condition variable of its own; a hook that
    /// sleeps elsewhere (an eventfd in the kernel's `ppoll`) makes one with
    /// [`Waiter::with_notify`].
    fn waiter(&self) -> Arc<Waiter> {
        Waiter::new()
    }

    /// Sleeps until `waiter` is woken (`Ok`) or the thread is interrupted
    /// (`Err`). Returning `Ok` without a wake-up is allowed: the caller
    /// checks its condition again.
    fn sleep(&self, waiter: &Arc<Waiter>) -> Result<(), Interrupted>;

    /// As [`sleep`](Self::sleep), ending also at `deadline` (none: no
    /// limit): `Ok(false)` once the time ran out unwoken. For
    /// [`Process::poll`](crate::Process::poll), whose interruption is
    /// always `EINTR` (Linux's poll answers `-ERESTART_RESTARTBLOCK`,
    /// never restarted after a handler). The default sleeps
    /// interruptibly only without a limit (a hook whose waiter is not the
    /// library's own cannot be waited on with a limit here).
    fn sleep_until(
        &self,
        waiter: &Arc<Waiter>,
        deadline: Option<Instant>,
    ) -> Result<bool, Interrupted> {
        match deadline {
            None => self.sleep(waiter).map(|()| true),
            Some(_) => Ok(waiter.wait_until(deadline)),
        }
    }
}

/// An embedder's signal sender for lease breaks: the library cannot send
/// host signals itself, so a break hands the holder's notice
/// ([`LeaseBreak`]: owner, signal, fd) to this hook
/// ([`VfsBuilder::lease_notify`](crate::VfsBuilder::lease_notify)), called
/// by the breaking thread outside every lock. A shim sends the signal
/// (`kill(pid, sig)`, to `-pid` for a process group); the default,
/// [`LeaseBreaks`], records it. Must not call into uvfs.
pub trait LeaseNotify: Send + Sync {
    /// The lease holder is to be sent `n.sig`.
    fn lease_break(&self, n: LeaseBreak);
}

/// The default [`LeaseNotify`]: keeps the notices for the embedder (or a
/// test) to read with [`take`](Self::take).
#[derive(Debug, Default)]
pub struct LeaseBreaks {
    log: std::sync::Mutex<Vec<LeaseBreak>>,
}

impl LeaseBreaks {
    /// The notices recorded since the last call, oldest first.
    pub fn take(&self) -> Vec<LeaseBreak> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl LeaseNotify for LeaseBreaks {
    fn lease_break(&self, n: LeaseBreak) {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).push(n);
    }
}

/// A [`Sleep`] hook interrupted by a call from another thread: the
/// library's own, for embedders whose "signal" is a request to cancel
/// (and for tests). One per thread of the caller; [`Signals::interrupt`]
/// ends the thread's current or next sleep.
#[derive(Default)]
pub struct Signals {
    st: Mutex<SigState>,
}

#[derive(Default)]
struct SigState {
    /// An interrupt not yet taken by a sleep (`signal_pending`).
    pending: Option<Interrupted>,
    /// The waiter of the sleep in progress, to wake.
    current: Option<Arc<Waiter>>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signals")
    }
}

impl Signals {
    /// No interrupt pending.
    pub fn new() -> Arc<Signals> {
        Arc::new(Signals::default())
    }

    /// Interrupts the thread's sleep in progress, or its next one: that
    /// sleep returns `how` (`signal_wake_up`). A later interrupt before
    /// one is taken replaces it.
    pub fn interrupt(&self, how: Interrupted) {
        let cur = {
            let mut s = lock(&self.st);
            s.pending = Some(how);
            s.current.clone()
        };
        if let Some(w) = cur {
            w.wake();
        }
    }

    /// Whether an interrupt waits to be taken by a sleep.
    pub fn pending(&self) -> bool {
        lock(&self.st).pending.is_some()
    }
}

impl Sleep for Signals {
    fn sleep(&self, waiter: &Arc<Waiter>) -> Result<(), Interrupted> {
        self.sleep_until(waiter, None).map(|_| ())
    }

    fn sleep_until(
        &self,
        waiter: &Arc<Waiter>,
        deadline: Option<Instant>,
    ) -> Result<bool, Interrupted> {
        {
            let mut s = lock(&self.st);
            if let Some(how) = s.pending.take() {
                return Err(how);
            }
            s.current = Some(waiter.clone());
        }
        let woken = waiter.wait_until(deadline);
        let mut s = lock(&self.st);
        s.current = None;
        match s.pending.take() {
            Some(how) => Err(how),
            None => Ok(woken),
        }
    }
}

/// One blocking call's sleeps: the caller's hook and, made at the first
/// sleep, its waiter (`DEFINE_WAIT`).
pub(crate) struct Sleeper<'a> {
    hook: Option<&'a dyn Sleep>,
    waiter: Option<Arc<Waiter>>,
}

impl<'a> Sleeper<'a> {
    /// Sleeps through `hook`, or uninterruptibly without one.
    pub(crate) fn new(hook: Option<&'a dyn Sleep>) -> Sleeper<'a> {
        Sleeper { hook, waiter: None }
    }

    /// The call's waiter, to register on a wait queue before the check.
    pub(crate) fn waiter(&mut self) -> &Arc<Waiter> {
        let hook = self.hook;
        self.waiter.get_or_insert_with(|| match hook {
            Some(h) => h.waiter(),
            None => Waiter::new(),
        })
    }

    /// As [`sleep`](Self::sleep), ending also at `deadline` (none: no
    /// limit): `Ok(false)` once the time ran out unwoken.
    pub(crate) fn sleep_until(&mut self, deadline: Option<Instant>) -> Result<bool, Interrupted> {
        let w = self.waiter().clone();
        match self.hook {
            Some(h) => h.sleep_until(&w, deadline),
            None => Ok(w.wait_until(deadline)),
        }
    }

    /// Sleeps until the waiter is woken or (with a hook) interrupted.
    pub(crate) fn sleep(&mut self) -> Result<(), Interrupted> {
        let w = self.waiter().clone();
        match self.hook {
            Some(h) => h.sleep(&w),
            None => {
                w.wait_until(None);
                Ok(())
            }
        }
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn interrupt_before_and_during_sleep() {
        let s = Signals::new();
        let w = s.waiter();
        s.interrupt(Interrupted::Eintr);
        assert!(s.pending());
        assert_eq!(s.sleep(&w), Err(Interrupted::Eintr));
        assert!(!s.pending());
        // A wake-up with nothing pending is a plain return.
        w.wake();
        assert_eq!(s.sleep(&w), Ok(()));
        // Interrupted from another thread while asleep.
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.sleep(&s2.waiter()));
        s.interrupt(Interrupted::Restart);
        assert_eq!(t.join().unwrap(), Err(Interrupted::Restart));
    }
}
