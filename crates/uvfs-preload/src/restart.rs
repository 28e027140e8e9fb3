//! The restart rule of the tree's switch (see `namespace`), and its test
//! hook.
//!
//! At a process's first child the shim reopens every uvfs fd through the
//! tree's FUSE mount and becomes a client, with every other thread held
//! out of uvfs (the fork gate). A call that looked its fd up in the fd
//! map, or routed its path, before the switch and reaches the gate after
//! it must not go on with what it looked up (the uvfs fd is closed, the
//! path belongs to the mount): it starts again, on the kernel's side, as
//! Linux restarts a system call that a signal interrupted before it did
//! anything. So every hook that touches a uvfs fd or path takes a
//! [`Ticket`] (one load of the switch's word) before its look-up and checks
//! it inside the gate ([`Ticket::check`]), where the switch is settled: the
//! process becomes a client only after every fd is reopened, under the
//! held gate, so a ticket that reads "client" is taken after the fd map
//! changed, and one that does not and enters the gate after the switch
//! sees it there.
//!
//! The test hook: `UVFS_TEST_PARK=CALL:FD` (read at load) makes the first
//! call of hook `CALL` that finds a uvfs fd or path (in a process not yet a
//! client) write one byte (`P`) to fd `FD`, then wait until the process is
//! a client (or the tree gave up), before it enters the gate: a test's
//! other thread then forks, and the parked call meets the switch
//! deterministically. Its armed bit lives in the switch's word, so a call
//! reads both with the one load it always made.

use crate::path::{CLIENT, PARK, is_client, mode};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use uvfs::Errno;

/// Linux's `ERESTARTSYS` (512), which no system call returns to a program:
/// the uvfs side of a call answers it when the switch came between the
/// call's look-up and the gate, and `dispatch::restartable` starts the call
/// again.
pub(crate) const RESTART: Errno = Errno::from_raw(512);

/// What a call read of the switch before it looked its fd or path up.
#[derive(Clone, Copy)]
pub(crate) struct Ticket(u8);

impl Ticket {
    /// Taken before the look-up (one load).
    #[inline]
    pub(crate) fn take() -> Ticket {
        Ticket(mode())
    }

    /// Whether the process became a client since this ticket was taken.
    /// Settled inside the gate; outside it, a `false` may be stale.
    #[inline]
    pub(crate) fn switched(self) -> bool {
        self.0 & CLIENT == 0 && is_client()
    }

    /// Whether the call decided before the process became a client: the
    /// switch, when it comes, cancels its sleep on the private uvfs.
    #[inline]
    pub(crate) fn pre_client(self) -> bool {
        self.0 & CLIENT == 0
    }

    /// Inside the gate: [`RESTART`] if the switch came since the ticket.
    #[inline]
    pub(crate) fn check(self) -> Result<(), Errno> {
        if self.switched() {
            Err(RESTART)
        } else {
            Ok(())
        }
    }

    /// The test hook (see the module doc): parks the first call of hook
    /// `call` while `UVFS_TEST_PARK` names it. A register test when unarmed.
    #[inline]
    pub(crate) fn park(self, call: &'static str) {
        if self.0 & (PARK | CLIENT) == PARK {
            park(call);
        }
    }
}

/// `UVFS_TEST_PARK`'s call name and fd.
static PARK_AT: OnceLock<(String, i32)> = OnceLock::new();

/// Reads `UVFS_TEST_PARK` (from the library constructor).
pub(crate) fn at_load() {
    let Some(v) = std::env::var_os("UVFS_TEST_PARK") else {
        return;
    };
    let v = v.to_string_lossy();
    let Some((call, fd)) = v.rsplit_once(':') else {
        return;
    };
    let Ok(fd) = fd.parse::<i32>() else { return };
    if PARK_AT.set((call.to_owned(), fd)).is_ok() {
        crate::path::set_park();
    }
}

#[cold]
#[inline(never)]
fn park(call: &'static str) {
    static DONE: AtomicBool = AtomicBool::new(false);
    let Some((want, fd)) = PARK_AT.get() else {
        return;
    };
    if want != call || DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    let _ = rustix::io::write(crate::state::borrow(*fd), b"P");
    while !is_client() && !crate::namespace::gave_up() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
