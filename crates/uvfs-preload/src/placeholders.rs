//! The process's placeholder numbering (see `numbering.rs` for the rules):
//! the one [`Numbering`] the shim keeps, and the kernel it opens and closes
//! placeholders in (raw system calls). Below `state` and `signal`, which
//! both record freed numbers here.

use crate::conv::errno_of;
use crate::numbering::{self, Numbering};
use rustix::fd::IntoRawFd;
use uvfs::Errno;

/// The placeholders' cache and mark (see [`Numbering`]).
pub(crate) static NUMBERING: Numbering = Numbering::new();

/// The kernel as the numbering sees it: raw syscalls.
pub(crate) struct Sys;

impl numbering::Kernel for Sys {
    type Error = Errno;

    fn open_placeholder(&mut self) -> Result<i32, Errno> {
        rustix::fs::openat(
            rustix::fs::CWD,
            c"/dev/null",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map(IntoRawFd::into_raw_fd)
        .map_err(errno_of)
    }

    fn close_placeholder(&mut self, k: i32) {
        // SAFETY: a placeholder the shim opened and no longer maps (the
        // numbering's contract).
        unsafe { rustix::io::close(k) };
    }
}

/// Records that number `k` may now be free in the kernel (called after the
/// number is freed: by an interposed kernel close, or the shim's own).
/// Lock-free; a plain load when `k` is not below the mark.
pub(crate) fn hole_lower(k: i32) {
    NUMBERING.hole_lower(k);
}
