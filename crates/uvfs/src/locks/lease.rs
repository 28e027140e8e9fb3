//! File leases (`F_SETLEASE`, `F_GETLEASE`; the lease half of Linux's
//! `fs/locks.c`), kept in the inode's [`FileLockContext`] beside its locks,
//! and the per-inode open counts they are judged by.
//!
//! # What Linux does (described, not copied)
//!
//! - A lease belongs to an open file description. A read lease is granted
//!   only while nobody has the inode open for writing (the caller's own
//!   file included); a write lease only when the caller's file is the one
//!   open of the inode: the inode's writer count and reader count must be
//!   exactly what the caller's own file contributes. A file that already
//!   holds a lease changes its type in place; `F_UNLCK` removes it (and
//!   clears the file's signal owner and signal); a new lease sets the
//!   file's owner, when it had none, to the calling thread typed as a
//!   process (no process unless it is the main thread). A write lease
//!   is refused while another file holds any lease, and no new lease is
//!   given while some lease is being broken for a writer.
//! - An open that conflicts (for writing, against any lease; for reading,
//!   against a write lease; the holder's own opens too) starts a break: each conflicting lease not yet
//!   being broken that way is marked (unlock pending for a writer,
//!   downgrade pending for a reader) with a deadline of
//!   `lease-break-time` seconds (0: none), and its holder is sent its
//!   file's signal. A non-blocking open then fails with `EWOULDBLOCK`; any
//!   other waits until no lease conflicts: the holder downgrades or
//!   removes it, closes its file, or the deadline passes and the lease is
//!   downgraded or removed by force. The wait is interruptible.
//!   `F_GETLEASE` during a break reports the type being broken to.
//! - Both sides race without a lock: the opener counts itself, then looks
//!   for leases; the setter inserts its lease, then checks the counts again
//!   and withdraws on a conflict. Every access of the pair (the count's
//!   increment, the loads of the context pointer and the lease count, the
//!   lease count's store, the counts' loads) is `SeqCst`: in their single
//!   total order a write comes before the other side's read, so at least
//!   one side sees the other (a Dekker pair, as Linux's `smp_mb()` on both
//!   sides). On x86 that costs the opener nothing beyond the locked
//!   increment it makes anyway (no fence instruction). Loom models
//!   `SeqCst` accesses only as acquire/release, so under loom a `SeqCst`
//!   fence stands after each side's write (`model_fence`), which is what
//!   model `lease_setter_races_with_opener` checks.
//!
//! Like Linux, the deadlines set at a break stay with the lease after the
//! holder answered: a later expiry check applies them again (downgrading a
//! lease that was upgraded meanwhile).

use super::{FileLockContext, State};
use crate::errno::Errno;
use crate::fown::{FOwnCell, FOwner};
use crate::primitive::sync::MutexGuard;
#[cfg(loom)]
use crate::primitive::sync::atomic::fence;
use crate::primitive::sync::atomic::{AtomicU32, Ordering};
use crate::signal::{Interrupted, Sleep, Sleeper};
use crate::uapi::{F_OWNER_PID, F_RDLCK, F_UNLCK, F_WRLCK, SIGIO};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

/// The opens of an inode that leases are judged by (Linux's `i_writecount`
/// and `i_readcount`): files open for writing, and files open for reading
/// only. Regular files only; `O_PATH` files and opens for neither count
/// for nothing.
#[derive(Debug, Default)]
pub(crate) struct OpenCounts {
    write: AtomicU32,
    read: AtomicU32,
}

impl OpenCounts {
    /// Counts an open (a writer if `write`, else a reader), `SeqCst` so
    /// that the opener's look for leases that follows cannot miss a lease
    /// whose setter missed this count (see the module docs).
    #[inline]
    pub(crate) fn get(&self, write: bool) {
        let c = if write { &self.write } else { &self.read };
        c.fetch_add(1, Ordering::SeqCst);
        model_fence();
    }

    /// Uncounts an open counted by [`get`](Self::get).
    #[inline]
    pub(crate) fn put(&self, write: bool) {
        let c = if write { &self.write } else { &self.read };
        c.fetch_sub(1, Ordering::Release);
    }

    /// `(writers, readers)`, for tests.
    pub(crate) fn load(&self) -> (u32, u32) {
        (
            self.write.load(Ordering::Relaxed),
            self.read.load(Ordering::Relaxed),
        )
    }

    /// `check_conflicting_open`: whether the opens of the inode forbid a
    /// lease of type `write` to a file counted as `own` (`Some(true)`: a
    /// writer, `Some(false)`: a reader, `None`: neither).
    /// `lazy` gives the opens counted outside these atomics
    /// (`FastPaths::open_count_lazy`: the file pool's scan, which fences
    /// first), added to them.
    fn conflict(&self, write: bool, own: Option<bool>, lazy: &dyn Fn() -> (u32, u32)) -> bool {
        let (lw, lr) = lazy();
        let w = self.write.load(Ordering::SeqCst) + lw;
        if !write {
            return w != 0;
        }
        let r = self.read.load(Ordering::SeqCst) + lr;
        w != u32::from(own == Some(true)) || r != u32::from(own == Some(false))
    }
}

/// Under loom, the `SeqCst` fence loom needs where the real build relies
/// on its `SeqCst` accesses alone (see the module docs); nothing otherwise.
#[inline(always)]
fn model_fence() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}

/// A lease request's holder: the open file (its identity, and the cell of
/// its signal owner, whom a break signals) and the fd it was set through.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Holder {
    /// The file's identity (the open file's `lock_key`).
    pub(crate) key: usize,
    /// The file's signal owner; `None` in models (no signal).
    pub(crate) file: Option<OwnerPtr>,
    /// The fd named in the signal (`si_fd`).
    pub(crate) fd: i32,
    /// How the file is counted in [`OpenCounts`] (see `conflict`).
    pub(crate) counted: Option<bool>,
}

/// A pointer to the signal-owner cell of the open file holding a lease
/// (the cell lives in the file object). The lease is removed, under the
/// context's lock, by the file's final release before the object is freed
/// or reused, so a lease found under that lock names a live file and so a
/// live cell.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnerPtr(NonNull<FOwnCell>);

// SAFETY: only dereferenced under the context's lock while the lease is
// listed, when the file holding the cell is alive (see the type); the cell
// is an atomic word.
unsafe impl Send for OwnerPtr {}

impl OwnerPtr {
    pub(crate) fn new(cell: &FOwnCell) -> OwnerPtr {
        OwnerPtr(NonNull::from(cell))
    }

    /// # Safety
    /// The lease naming the file is still listed and the caller holds the
    /// context's lock.
    unsafe fn get(&self) -> &FOwnCell {
        // SAFETY: per the contract, the file holding the cell is alive.
        unsafe { self.0.as_ref() }
    }
}

/// A lease break's notice to its holder: the signal Linux sends the
/// holder file's owner (`F_SETOWN`) — its `F_SETSIG` signal, `SIGIO` when
/// that is 0 — naming the fd the lease was set through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseBreak {
    /// `F_OWNER_TID`, `F_OWNER_PID` or `F_OWNER_PGRP`.
    pub kind: i32,
    /// The thread, process or group id (positive).
    pub pid: i32,
    /// The signal to send.
    pub sig: i32,
    /// The fd that set the lease (`si_fd` for a signal set by `F_SETSIG`).
    pub fd: i32,
}

#[derive(Debug)]
pub(super) struct Lease {
    id: u64,
    holder: Holder,
    write: bool,
    /// `FL_UNLOCK_PENDING`: being broken for a writer.
    unlock_pending: bool,
    /// `FL_DOWNGRADE_PENDING`: being broken for a reader.
    downgrade_pending: bool,
    /// When a break for a writer removes it by force (`fl_break_time`).
    break_time: Option<Instant>,
    /// When a break for a reader downgrades it by force.
    downgrade_time: Option<Instant>,
}

impl Lease {
    /// `leases_conflict` with a breaker that wants to write or not.
    fn conflicts(&self, want_write: bool) -> bool {
        want_write || self.write
    }

    /// `target_leasetype`: what `F_GETLEASE` reports.
    fn target(&self) -> i32 {
        if self.unlock_pending {
            F_UNLCK
        } else if self.downgrade_pending {
            F_RDLCK
        } else if self.write {
            F_WRLCK
        } else {
            F_RDLCK
        }
    }

    fn notice(&self) -> Option<LeaseBreak> {
        let f = self.holder.file?;
        // SAFETY: the lease is listed and the caller holds the lock.
        let o = unsafe { f.get() }.get();
        (o.pid != 0).then_some(LeaseBreak {
            kind: o.kind,
            pid: o.pid,
            sig: if o.sig == 0 { SIGIO } else { o.sig },
            fd: self.holder.fd,
        })
    }
}

/// `lease_modify` on lease `i`: sets its type (`Some(write)`) and clears
/// what that answers, or removes it (`None`), clearing the holder file's
/// signal owner and signal (`delown`) as Linux does. Returns the lease id
/// when something changed, for the wake-up of its waiters.
fn modify(g: &mut State, i: usize, to: Option<bool>, delown: bool) -> Option<u64> {
    let l = &mut g.leases[i];
    match to {
        Some(write) => {
            let changed = l.write != write || (!write && l.downgrade_pending);
            l.write = write;
            if !write {
                l.downgrade_pending = false;
            }
            changed.then_some(l.id)
        }
        None => {
            let l = g.leases.remove(i);
            if delown && let Some(f) = l.holder.file {
                // SAFETY: the lease was listed until now, under the lock.
                unsafe { f.get() }.update(|_| FOwner {
                    kind: F_OWNER_PID,
                    pid: 0,
                    sig: 0,
                });
            }
            Some(l.id)
        }
    }
}

/// `time_out_leases`: applies the break deadlines that passed.
fn time_out(g: &mut State, now: Instant, changed: &mut Vec<u64>) {
    let past = |t: Option<Instant>| t.is_some_and(|t| now >= t);
    let mut i = 0;
    while i < g.leases.len() {
        if past(g.leases[i].downgrade_time) {
            changed.extend(modify(g, i, Some(false), true));
        }
        if past(g.leases[i].break_time) {
            changed.extend(modify(g, i, None, true));
            continue;
        }
        i += 1;
    }
}

impl FileLockContext {
    fn store_lease_nr(&self, g: &State) {
        self.lease_nr.store(g.leases.len(), Ordering::SeqCst);
    }

    /// Whether the inode may have leases: the opener's one look (after its
    /// count), `break_lease`'s lockless test.
    #[inline]
    pub(crate) fn has_leases(&self) -> bool {
        self.lease_nr.load(Ordering::SeqCst) != 0
    }

    /// `F_SETLEASE` with a valid type, after the permission and file-type
    /// checks (`generic_setlease`): `EAGAIN` when the opens conflict, when
    /// another file's lease forbids it, or for `F_UNLCK` without a lease.
    /// The opens are `counts` plus what `lazy` reports (see
    /// `OpenCounts::conflict`); `lazy` runs under the context's lock.
    pub(crate) fn setlease(
        &self,
        counts: &OpenCounts,
        lazy: &dyn Fn() -> (u32, u32),
        h: Holder,
        ty: i32,
    ) -> Result<(), Errno> {
        let mut g = self.lock();
        let mut changed = Vec::new();
        let r = self.setlease_locked(&mut g, (counts, lazy), h, ty, &mut changed);
        self.store_lease_nr(&g);
        self.wake(&mut g, &changed);
        r
    }

    fn setlease_locked(
        &self,
        g: &mut MutexGuard<'_, State>,
        (counts, lazy): (&OpenCounts, &dyn Fn() -> (u32, u32)),
        h: Holder,
        ty: i32,
        changed: &mut Vec<u64>,
    ) -> Result<(), Errno> {
        let mine = g.leases.iter().position(|l| l.holder.key == h.key);
        if ty == F_UNLCK {
            let i = mine.ok_or(Errno::EAGAIN)?;
            changed.extend(modify(g, i, None, true));
            return Ok(());
        }
        let write = ty == F_WRLCK;
        time_out(g, Instant::now(), changed);
        if counts.conflict(write, h.counted, lazy) {
            return Err(Errno::EAGAIN);
        }
        let mine = g.leases.iter().position(|l| l.holder.key == h.key);
        for l in g.leases.iter().filter(|l| l.holder.key != h.key) {
            if write || l.unlock_pending {
                return Err(Errno::EAGAIN);
            }
        }
        if let Some(i) = mine {
            g.leases[i].holder.fd = h.fd;
            changed.extend(modify(g, i, Some(write), false));
            return Ok(());
        }
        let id = g.id();
        g.leases.push(Lease {
            id,
            holder: h,
            write,
            unlock_pending: false,
            downgrade_pending: false,
            break_time: None,
            downgrade_time: None,
        });
        self.store_lease_nr(g);
        // An opener that counted itself after the check above may have
        // missed the lease: look again (module docs).
        model_fence();
        if counts.conflict(write, h.counted, lazy) {
            g.leases.pop();
            return Err(Errno::EAGAIN);
        }
        Ok(())
    }

    /// `F_GETLEASE` for the file `key`: its lease's type, the target type
    /// during a break, `F_UNLCK` for none.
    pub(crate) fn getlease(&self, key: usize) -> i32 {
        if !self.has_leases() {
            return F_UNLCK;
        }
        let mut g = self.lock();
        let mut changed = Vec::new();
        time_out(&mut g, Instant::now(), &mut changed);
        let t = g
            .leases
            .iter()
            .find(|l| l.holder.key == key)
            .map_or(F_UNLCK, Lease::target);
        self.store_lease_nr(&g);
        self.wake(&mut g, &changed);
        t
    }

    /// The last close of the file `key`: its lease goes
    /// (`locks_remove_lease`).
    pub(crate) fn remove_lease(&self, key: usize) {
        if !self.has_leases() {
            return;
        }
        let mut g = self.lock();
        if let Some(i) = g.leases.iter().position(|l| l.holder.key == key) {
            let id = modify(&mut g, i, None, false);
            self.store_lease_nr(&g);
            self.wake(&mut g, id.as_slice());
        }
    }

    /// `__break_lease`: an open for writing (`want_write`) or reading
    /// breaks the leases it conflicts with, sending their holders
    /// `notify`, then, unless `nonblock` (`EWOULDBLOCK`), waits until none
    /// conflicts, each break ending at latest `break_time` later (zero: no
    /// limit). Interrupted through `hook`: `EINTR`, or for
    /// [`Interrupted::Restart`] it waits on (the restarted open would find
    /// the break under way and wait again).
    pub(crate) fn break_lease(
        &self,
        want_write: bool,
        nonblock: bool,
        break_time: Duration,
        hook: Option<&dyn Sleep>,
        notify: &dyn Fn(LeaseBreak),
    ) -> Result<(), Errno> {
        let mut g = self.lock();
        let now = Instant::now();
        let mut changed = Vec::new();
        time_out(&mut g, now, &mut changed);
        self.store_lease_nr(&g);
        self.wake(&mut g, &changed);
        if !g.leases.iter().any(|l| l.conflicts(want_write)) {
            return Ok(());
        }
        let deadline = (!break_time.is_zero()).then(|| now + break_time);
        let mut notices = Vec::new();
        for l in g.leases.iter_mut().filter(|l| l.conflicts(want_write)) {
            if want_write {
                if l.unlock_pending {
                    continue;
                }
                l.unlock_pending = true;
                l.break_time = deadline;
            } else {
                if l.unlock_pending || l.downgrade_pending {
                    continue;
                }
                l.downgrade_pending = true;
                l.downgrade_time = deadline;
            }
            notices.extend(l.notice());
        }
        if !notices.is_empty() {
            drop(g);
            for n in notices {
                notify(n);
            }
            g = self.lock();
        }
        if nonblock {
            return Err(Errno::EWOULDBLOCK);
        }
        let mut sl = Sleeper::new(hook);
        loop {
            let mut changed = Vec::new();
            time_out(&mut g, Instant::now(), &mut changed);
            self.store_lease_nr(&g);
            self.wake(&mut g, &changed);
            let Some(l) = g.leases.iter().find(|l| l.conflicts(want_write)) else {
                return Ok(());
            };
            let (blocker, until) = (l.id, earliest(l.break_time, l.downgrade_time));
            let r;
            (g, r) = self.sleep_lease(g, blocker, until, &mut sl);
            if r == Some(Interrupted::Eintr) {
                return Err(Errno::EINTR);
            }
        }
    }

    /// Waits as [`sleep`](Self::sleep) does, ending also at `until`.
    fn sleep_lease<'a>(
        &'a self,
        mut g: MutexGuard<'a, State>,
        blocker: u64,
        until: Option<Instant>,
        sl: &mut Sleeper<'_>,
    ) -> (MutexGuard<'a, State>, Option<Interrupted>) {
        let token = g.id();
        g.waiters.push(super::Waiter {
            token,
            blocker,
            woken: false,
            edge: false,
            wake: sl.waiter().clone(),
        });
        loop {
            drop(g);
            let r = sl.sleep_until(until);
            g = self.lock();
            let i = g
                .waiters
                .iter()
                .position(|w| w.token == token)
                .expect("a sleeping waiter stays registered until it leaves");
            let woken = g.waiters[i].woken;
            match r {
                _ if woken => {
                    g.waiters.swap_remove(i);
                    return (g, None);
                }
                Err(how) => {
                    g.waiters.swap_remove(i);
                    return (g, Some(how));
                }
                // The time ran out: the caller applies the deadline.
                Ok(false) => {
                    g.waiters.swap_remove(i);
                    return (g, None);
                }
                Ok(true) => {}
            }
        }
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How an open or a truncate meets the inode's leases (`break_lease`):
/// the counted opener looks once for leases, and only when some may be
/// there takes the context's lock.
#[inline]
pub(crate) fn break_lease_if_any(
    ctx: Option<&FileLockContext>,
    want_write: bool,
    nonblock: bool,
    break_time: Duration,
    hook: Option<&dyn Sleep>,
    notify: &dyn Fn(LeaseBreak),
) -> Result<(), Errno> {
    match ctx {
        Some(c) if c.has_leases() => c.break_lease(want_write, nonblock, break_time, hook, notify),
        _ => Ok(()),
    }
}
