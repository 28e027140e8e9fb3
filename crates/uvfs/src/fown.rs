//! The signal owner of an open file (Linux's `struct fown_struct`, set by
//! `F_SETOWN`, `F_SETOWN_EX` and `F_SETSIG`): who a lease break (and, in
//! Linux, `O_ASYNC` I/O) is signalled to, and with which signal.
//!
//! Its own module, below both the open file (`file_table`, which holds the
//! cell) and the lock table (`locks`, whose leases read and clear it), so
//! that neither has to name the other for it.

use crate::primitive::sync::atomic::{AtomicU64, Ordering};

/// Who receives a file's signals (`struct fown_struct`): a thread, a
/// process or a process group, and the signal (0: `SIGIO`). Stored packed
/// in one atomic word in the open file, so `F_SETOWN` and `F_SETSIG` need
/// no lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FOwner {
    /// `F_OWNER_TID`, `F_OWNER_PID` or `F_OWNER_PGRP` (the `f_owner_ex`
    /// type; a file never given an owner reports `F_OWNER_TID`).
    pub kind: i32,
    /// The id, positive; 0: no owner.
    pub pid: i32,
    /// The signal, `0..=64`.
    pub sig: i32,
}

impl FOwner {
    fn pack(self) -> u64 {
        u64::from(self.pid as u32) | (u64::from(self.kind as u8) << 32) | ((self.sig as u64) << 40)
    }

    fn unpack(w: u64) -> FOwner {
        FOwner {
            pid: w as u32 as i32,
            kind: i32::from((w >> 32) as u8),
            sig: ((w >> 40) & 0xff) as i32,
        }
    }
}

/// An open file's [`FOwner`], packed in one atomic word.
#[derive(Debug)]
pub(crate) struct FOwnCell(AtomicU64);

impl FOwnCell {
    /// No owner, no signal.
    pub(crate) fn new() -> FOwnCell {
        FOwnCell(AtomicU64::new(0))
    }

    /// Back to no owner (a recycled file object).
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// The owner now.
    pub(crate) fn get(&self) -> FOwner {
        FOwner::unpack(self.0.load(Ordering::Relaxed))
    }

    /// Changes the owner with `f`, atomically with respect to other changes.
    pub(crate) fn update(&self, f: impl Fn(FOwner) -> FOwner) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some(f(FOwner::unpack(w)).pack())
            });
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trips() {
        let c = FOwnCell::new();
        assert_eq!(
            c.get(),
            FOwner {
                kind: 0,
                pid: 0,
                sig: 0
            }
        );
        let o = FOwner {
            kind: 2,
            pid: i32::MAX,
            sig: 64,
        };
        c.update(|_| o);
        assert_eq!(c.get(), o);
        c.update(|x| FOwner { sig: 10, ..x });
        assert_eq!(c.get(), FOwner { sig: 10, ..o });
        c.clear();
        assert_eq!(c.get(), FOwner::default());
    }
}
