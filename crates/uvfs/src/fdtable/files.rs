//! A thread's hold on its fd table (the task's `files` pointer): one
//! registered user, and the safe `fdget` that being one makes possible.

use super::{FdRef, FdTable, ReservedFd};
use crate::errno::Errno;
use crate::fastpaths::FastPaths;
use crate::file_table::{File, FileRef};
use crate::primitive::sync::atomic::Ordering;
use crate::task_work;
use std::sync::Arc;

/// One registered user of an fd table: made by [`new`](Self::new),
/// [`copy`](Self::copy) (a fresh table, whose one user this is) or
/// [`attach`](Self::attach) (one more user of the same table), and giving
/// its user back when dropped. Reads of the table go through `Deref`; the
/// `Arc` itself is never handed out.
///
/// # Why [`fdget`](Self::fdget) is safe
///
/// [`FdTable::fdget`] borrows the table's own reference when the table has
/// one user, so its caller must be a user and must keep `fd` in place while
/// the result lives. Here:
///
/// - The table's user count is never below the number of live handles on
///   it: each handle holds one user from its creation to its drop, and the
///   only other way to change the count is [`FdTable::attach`], which only
///   adds (lookups then merely take references); taking a user away,
///   [`FdTable::detach`], is `unsafe`, and called only by a handle's `Drop`
///   for its own user.
/// - So when `fdget` reads a count of one, `self` is the only handle on the
///   table. A handle dropped before gave its user back after its last use
///   of the table (a release decrement our acquire load observes), so its
///   closes are done.
/// - Every other path to the table goes through this handle: `&self`
///   (`Deref`, hence [`Process::fd_table`](crate::Process::fd_table) and
///   every call on the process) or `attach(&self)` for a new thread. The
///   result borrows `&mut self`, which excludes all of them while it lives:
///   no one closes or replaces `fd`, and no second user appears.
///
/// [`fdget_pinned`](Self::fdget_pinned) keeps that borrow and hands out
/// only the table operations that cannot close or replace an fd
/// ([`NoClose`]).
///
/// # Why the single-user writers are safe (`fd_single_user`)
///
/// [`reserve_fd`](Self::reserve_fd), [`close`](Self::close) and
/// [`dup`](Self::dup) take `&mut self` and, when the count they read is
/// one, write the table without its lock ([`FdTable::alloc_fd_single`],
/// [`FdTable::close_single`]). By the argument above, a count of one read
/// through `&mut self` means no other thread can reach the table while the
/// call runs: no other handle exists, and this one is borrowed exclusively.
/// The hand-overs:
///
/// - One user to two: only [`attach`](Self::attach) adds a user, through
///   this handle (`&self`, which the `&mut` call excludes), so it runs
///   between two of this thread's calls. The new handle reaches its thread
///   by a move (a thread spawn, a channel), which orders everything this
///   thread wrote before it with the new thread's first access; from the
///   attach on, the count is two and both sides take the lock.
/// - Two users to one: the other handle's drop gives its user back with a
///   release decrement after its last access (its unlock included); the
///   acquire load here that reads one orders all of it before this call.
///
/// The loom model `single_user_hand_over` in `loom_tests.rs` checks both
/// (the unlocked accesses are tracked like the lock's guard).
#[derive(Debug)]
pub(crate) struct Files {
    table: Arc<FdTable>,
}

impl Files {
    /// A new, empty table, with this handle its one user.
    pub(crate) fn new(fast: &FastPaths) -> Result<Files, Errno> {
        Ok(Files {
            table: Arc::new(FdTable::new(fast)?),
        })
    }

    /// Another user of the same table (`CLONE_FILES`).
    pub(crate) fn attach(&self) -> Files {
        self.table.attach();
        Files {
            table: self.table.clone(),
        }
    }

    /// A private copy of the table (`dup_fd`, see [`FdTable::copy`]), with
    /// the new handle its one user.
    pub(crate) fn copy(&self, below: Option<u32>) -> Result<Files, Errno> {
        Ok(Files {
            table: Arc::new(self.table.copy(below)?),
        })
    }

    /// `fdget`: the file at `fd` unless its mode has a bit of `mask`,
    /// borrowed when this handle is the table's only user (no reference
    /// taken), counted otherwise.
    #[inline]
    pub(crate) fn fdget(&mut self, fd: i32, mask: u32) -> Option<FdRef<'_>> {
        // SAFETY: `self` is a registered user, and the `&mut` borrow the
        // result keeps excludes every other way to reach the table while it
        // lives (see the type's documentation): nothing closes or replaces
        // `fd`, and no other user can be added.
        unsafe { self.table.fdget(fd, mask) }
    }

    /// Whether this handle may write the table without its lock: the
    /// switch is on and the table has one user, which (see the type) is this
    /// handle, borrowed exclusively by the caller.
    #[inline(always)]
    fn single(&mut self) -> bool {
        self.table.single && self.table.users.load(Ordering::Acquire) == 1
    }

    /// Reserves the lowest free fd below `rlimit` (`get_unused_fd_flags`),
    /// without the lock when this handle is the table's only user. Turn the
    /// reservation into a [`ReservedFd`] with [`bind`](Self::bind) (a
    /// separate step, so that the caller's `&mut` borrow ends while the open
    /// it reserves for runs).
    #[inline]
    pub(crate) fn reserve_fd(&mut self, cloexec: bool, rlimit: u64) -> Result<Reservation, Errno> {
        let fd = if self.single() {
            // SAFETY: a single user, this handle, borrowed exclusively: no
            // other thread reaches the table (see the type).
            unsafe { self.table.alloc_fd_single(0, rlimit, cloexec) }?
        } else {
            let r = self.table.get_unused_fd(cloexec, rlimit)?;
            let fd = r.fd;
            std::mem::forget(r);
            fd
        };
        Ok(Reservation {
            table: self.table.id,
            fd,
        })
    }

    /// The reservation `r`, made by [`reserve_fd`](Self::reserve_fd) on this
    /// table, as a [`ReservedFd`] (installed or released as it says).
    /// Panics if `r` came from another table.
    #[inline]
    pub(crate) fn bind(&self, r: Reservation) -> ReservedFd<'_> {
        assert_eq!(
            r.table, self.table.id,
            "a reservation bound to another fd table"
        );
        ReservedFd {
            table: &self.table,
            fd: r.fd,
        }
    }

    /// `close(fd)`'s table half ([`FdTable::close`]), without the lock when
    /// this handle is the table's only user.
    #[inline]
    pub(crate) fn close(&mut self, fd: i32) -> Result<FileRef, Errno> {
        if self.single() {
            // SAFETY: as in `reserve_fd`.
            unsafe { self.table.close_single(fd) }
        } else {
            self.table.close(fd)
        }
    }

    /// `dup(fd)` ([`FdTable::dup`]): with a single user, the file is
    /// borrowed, not counted twice, and the new fd is reserved without the
    /// lock.
    #[inline]
    pub(crate) fn dup(&mut self, fd: i32, rlimit: u64) -> Result<u32, Errno> {
        if !self.single() {
            return self.table.dup(fd, rlimit);
        }
        let table = &*self.table;
        // SAFETY: a single user, this handle, borrowed exclusively: nothing
        // closes `fd` while the borrow lives.
        let file = unsafe { table.lookup_borrowed(fd) }.ok_or(Errno::EBADF)?;
        // SAFETY: as in `reserve_fd`.
        let new = unsafe { table.alloc_fd_single(0, rlimit, false) }?;
        file.get();
        let r = ReservedFd { table, fd: new };
        // SAFETY: `get` just took the reference the new slot will own.
        let file = unsafe { FileRef::from_raw(std::ptr::NonNull::from(file)) };
        // The file came from this table's own slot: the same file memory.
        Ok(r.install_own(file))
    }

    /// As [`fdget`](Self::fdget), with the table operations that leave
    /// every installed fd in place, for callers that need both (fcntl).
    #[inline]
    pub(crate) fn fdget_pinned(&mut self, fd: i32, mask: u32) -> Option<(FdRef<'_>, NoClose<'_>)> {
        let table = &*self.table;
        // SAFETY: as in `fdget`: `self` is a registered user and stays
        // mutably borrowed while the result lives; the `NoClose` view given
        // with it cannot close or replace an fd.
        let file = unsafe { table.fdget(fd, mask) }?;
        Some((file, NoClose { table }))
    }
}

impl std::ops::Deref for Files {
    type Target = FdTable;
    fn deref(&self) -> &FdTable {
        &self.table
    }
}

impl Drop for Files {
    /// Thread exit (or an unshare): this user of the table is gone; the
    /// last one closes every fd, the releases running as this call ends.
    fn drop(&mut self) {
        let _call = task_work::enter();
        // SAFETY: this handle's user, held since its creation; the handle
        // is going away and makes no further use of the table.
        unsafe { self.table.detach() };
    }
}

/// An fd reserved by [`Files::reserve_fd`], not yet bound to its table
/// ([`Files::bind`]): a number and the table it belongs to. Not to be
/// dropped unbound (the number would stay reserved until the table goes).
#[must_use = "bind the reservation, or its fd stays reserved"]
#[derive(Debug)]
pub(crate) struct Reservation {
    table: u64,
    fd: u32,
}

/// The table while a borrowed [`Files::fdget_pinned`] result lives: only
/// operations that neither close nor replace an installed fd.
pub(crate) struct NoClose<'a> {
    table: &'a FdTable,
}

impl NoClose<'_> {
    /// A counted reference to the file at `fd` ([`FdTable::get`]).
    pub(crate) fn get(&self, fd: i32) -> Option<FileRef> {
        self.table.get(fd)
    }

    /// [`FdTable::holds`]: whether `fd` holds `file` now.
    pub(crate) fn holds(&self, fd: i32, file: &File) -> bool {
        self.table.holds(fd, file)
    }

    /// [`FdTable::get_cloexec`].
    pub(crate) fn get_cloexec(&self, fd: i32) -> bool {
        self.table.get_cloexec(fd)
    }

    /// [`FdTable::set_cloexec`]: changes a bit, not the file.
    pub(crate) fn set_cloexec(&self, fd: i32, on: bool) {
        self.table.set_cloexec(fd, on)
    }

    /// [`FdTable::dup_from`]: installs at a free fd only.
    pub(crate) fn dup_from(
        &self,
        file: &File,
        from: u64,
        cloexec: bool,
        rlimit: u64,
    ) -> Result<u32, Errno> {
        self.table.dup_from(file, from, cloexec, rlimit)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_binds_only_to_its_table() {
        let fast = FastPaths::seeds();
        let mut a = Files::new(&fast).unwrap();
        let b = Files::new(&fast).unwrap();
        let r = a.reserve_fd(false, 1024).unwrap();
        assert_eq!(r.fd, 0);
        let bound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(b.bind(r))));
        assert!(bound.is_err(), "bound to another table");
        // The number stays reserved in `a` (leaked by the refused bind).
        assert!(a.is_reserved(0));
        assert!(b.open_fds().is_empty());
    }

    #[test]
    fn the_unlocked_path_follows_the_user_count() {
        for single in [true, false] {
            let fast = FastPaths::seeds().with("fd_single_user", single);
            let mut a = Files::new(&fast).unwrap();
            assert_eq!(a.single(), single);
            let b = a.attach();
            assert!(!a.single(), "two users");
            drop(b);
            assert_eq!(a.single(), single);
            let mut c = a.copy(None).unwrap();
            assert_eq!(c.single(), single, "a fork's copy keeps the switch");
        }
    }
}
