//! Readiness for poll(2) (Linux's `fs/select.c`, with the poll table of
//! `include/linux/poll.h`): what a file reports, and how a poller sleeps
//! until one of its files may have changed.
//!
//! A file without a poll operation of its own (a regular file, a
//! directory) is always ready: `DEFAULT_POLLMASK`, `POLLIN | POLLOUT |
//! POLLRDNORM | POLLWRNORM`. A FIFO reports its pipe's state
//! (`pipe_poll`, in `crate::pipe`). A poller first registers a
//! [`Waiter`] on each file that can change (a pipe keeps a `PollQueue`
//! of them beside its wait queues) and only then reads the file's state,
//! both under the pipe's lock, so a change after the read wakes it: no
//! wake-up is lost between the check and the sleep.
//!
//! A [`Waiter`] sleeps on a condition variable of its own
//! ([`Process::poll`](crate::Process::poll)), or runs a callback when
//! woken ([`Waiter::with_notify`]), for a caller that must also wait for
//! kernel fds: the LD_PRELOAD shim writes to an eventfd it polls with the
//! kernel's poll. The callback runs under the pipe's lock, in the thread
//! that changed the pipe: it must be short and take no lock of uvfs's.

use crate::primitive::sync::{Condvar, Mutex, lock, wait, wait_timeout};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// `struct pollfd`, with the same layout: the fd (negative: ignored),
/// the events asked for, and the events that occurred.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollFd {
    /// The fd; a negative one is skipped (`revents` 0).
    pub fd: i32,
    /// The `POLL*` events of interest.
    pub events: i16,
    /// The events that occurred: those asked for, plus `POLLERR`,
    /// `POLLHUP` and `POLLNVAL` whatever was asked.
    pub revents: i16,
}

/// What a file without a poll operation reports (`DEFAULT_POLLMASK`).
pub(crate) const DEFAULT_POLLMASK: i16 =
    crate::uapi::POLLIN | crate::uapi::POLLOUT | crate::uapi::POLLRDNORM | crate::uapi::POLLWRNORM;

/// A poller's wake-up: an entry on the poll queues of the files it
/// watches (Linux's `poll_table_entry` with its `pollwake`).
pub struct Waiter {
    woken: Mutex<bool>,
    cv: Condvar,
    notify: Option<Box<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Waiter")
    }
}

impl Waiter {
    /// A waiter that sleeps on its own condition variable.
    pub fn new() -> Arc<Waiter> {
        Arc::new(Waiter {
            woken: Mutex::new(false),
            cv: Condvar::new(),
            notify: None,
        })
    }

    /// A waiter that also runs `notify` each time it is woken (in the
    /// waking thread, under the changed file's lock: it must be short and
    /// call nothing of uvfs's).
    pub fn with_notify(notify: impl Fn() + Send + Sync + 'static) -> Arc<Waiter> {
        Arc::new(Waiter {
            woken: Mutex::new(false),
            cv: Condvar::new(),
            notify: Some(Box::new(notify)),
        })
    }

    /// Wakes the waiter (`pollwake`): a file it watches may have changed.
    pub(crate) fn wake(&self) {
        *lock(&self.woken) = true;
        self.cv.notify_all();
        if let Some(f) = &self.notify {
            f();
        }
    }

    /// Sleeps until woken since the last call or until `deadline` (none:
    /// no limit); clears the mark. False if the time ran out unwoken.
    pub(crate) fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut w = lock(&self.woken);
        while !*w {
            match deadline {
                None => w = wait(&self.cv, w),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    w = wait_timeout(&self.cv, w, d - now).0;
                }
            }
        }
        *w = false;
        true
    }
}

/// The pollers watching one object (a pipe): weak references, so a
/// poller that has returned leaves nothing behind but a dead entry,
/// dropped at the next wake or registration.
#[derive(Default)]
pub(crate) struct PollQueue(Vec<Weak<Waiter>>);

impl PollQueue {
    /// Registers `w` (`poll_wait`), once however often it asks.
    pub(crate) fn add(&mut self, w: &Arc<Waiter>) {
        self.0.retain(|x| x.strong_count() > 0);
        if !self
            .0
            .iter()
            .any(|x| std::ptr::eq(x.as_ptr(), Arc::as_ptr(w)))
        {
            self.0.push(Arc::downgrade(w));
        }
    }

    /// Wakes every live poller (`wake_up_interruptible_poll`).
    pub(crate) fn wake_all(&mut self) {
        self.0.retain(|x| match x.upgrade() {
            Some(w) => {
                w.wake();
                true
            }
            None => false,
        });
    }
}
