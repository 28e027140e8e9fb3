//! Calls the shim cannot serve for a uvfs path or fd fail loudly: a clear
//! errno and, once per process per call, one line on stderr naming the
//! call (`uvfs-preload: chroot into a uvfs directory is not supported
//! (EOPNOTSUPP)`),
//! so that a program that goes on without the call (or dies of it) leaves
//! a trace of why. The path or fd never reaches the kernel.

use std::sync::atomic::{AtomicI32, Ordering};
use uvfs::Errno;

/// Where one call's "already said" mark lives: the pid that printed (a
/// forked child, another process, prints its own line).
pub(crate) struct Said(AtomicI32);

impl Said {
    pub(crate) const fn new() -> Said {
        Said(AtomicI32::new(0))
    }
}

/// Says, once per process for `said`, that `call` `what` is not supported,
/// and gives back `e` for the caller to fail with. The line is written
/// with one raw `write` to fd 2 (never through libc's stdio or the shim).
pub(crate) fn say(said: &Said, call: &str, what: &str, e: Errno) -> Errno {
    let name = e.name().unwrap_or("error");
    said_once(said, &format!("{call} {what} is not supported ({name})"));
    e
}

/// `refuse!("chroot", "into a uvfs directory", EOPNOTSUPP)`: [`say`] with a mark of
/// the call site's own, an `Errno`.
macro_rules! refuse {
    ($call:expr, $what:expr, $e:ident) => {{
        static SAID: $crate::refuse::Said = $crate::refuse::Said::new();
        $crate::refuse::say(&SAID, $call, $what, ::uvfs::Errno::$e)
    }};
}
pub(crate) use refuse;

/// Writes `uvfs-preload: {line}` on stderr once per process (`said`).
pub(crate) fn said_once(said: &Said, line: &str) {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    if said.0.swap(pid, Ordering::Relaxed) != pid {
        let msg = format!("uvfs-preload: {line}\n");
        let _ = rustix::io::write(rustix::stdio::stderr(), msg.as_bytes());
    }
}
