//! Advisory file locks (Linux's fs/locks.c): POSIX record locks, open file
//! description (OFD) locks and flock(2) locks, kept per inode in a
//! [`FileLockContext`] (Linux's `i_flctx`), made on an inode's first lock
//! and kept with the inode object.
//!
//! # The three kinds, as Linux has them
//!
//! - **POSIX record locks** (`F_SETLK`, `F_SETLKW`, `F_GETLK`) are owned by
//!   the fd table (Linux's `fl_owner` is the `files_struct`): threads that
//!   share a table share their locks, a fork's child has a table, hence an
//!   owner, of its own and inherits none. An owner's locks on a file are all
//!   released when it closes *any* fd of that file, whichever fd set them.
//!   Each owner holds non-overlapping byte ranges; a new lock replaces the
//!   owner's own locks on its range (splitting them) and merges with
//!   adjacent or overlapping ones of its type.
//! - **OFD locks** (`F_OFD_*`) are the same byte-range locks owned by the
//!   open file instead, released at its last close. They share the POSIX
//!   list: an OFD lock and a POSIX lock conflict even within one process.
//! - **flock locks** are whole-file, owned by the open file, released at its
//!   last close; a lock request on a file that already holds one converts
//!   it, by removing the old lock first (so a failed or blocked conversion
//!   has lost the old lock, as on Linux and BSD). flock locks and the
//!   byte-range locks never see each other.
//!
//! # Waiting
//!
//! A blocking request that meets a conflict registers a waiter naming the
//! lock it is blocked on, with its call's [`Waiter`](crate::Waiter), and
//! sleeps through the caller's [`Sleep`] hook ([`crate::signal`]). Every
//! change to the lists that removes or alters a lock marks the waiters
//! blocked on that lock as woken (under the context's lock, so no wake-up
//! is lost) and wakes them; a woken waiter retries from the start, which
//! may block it again. A sleeper that is not marked sleeps on.
//!
//! A sleep the hook interrupts dequeues the waiter (and its waits-for
//! record) and makes one last try without sleeping: a lock that became
//! free meanwhile is taken and the call succeeds (on Linux the wait
//! checks "unblocked" before "signal pending" in the same way); otherwise
//! it fails with `EINTR`, holding nothing, or, for a handler with
//! `SA_RESTART` ([`Interrupted::Restart`]), blocks again (deadlock check
//! included), as Linux restarts the call.
//!
//! # Deadlock detection
//!
//! A blocked POSIX (not OFD) request records "owner A waits for owner B" in
//! one global table, as Linux's `blocked_hash`. Before blocking, a request
//! follows the chain from the owner of the lock it meets (what is that owner
//! waiting for, and what is that one waiting for …); finding itself there
//! it fails with `EDEADLK`. Like Linux the walk gives up after a few steps
//! (`MAX_DEADLK_ITERATIONS`). Check and record happen under the table's
//! lock, so of two requests closing a cycle the second always sees the
//! first. A waiter's record is removed by whoever wakes it, so the table
//! never holds a stale edge (a stale one could report a false `EDEADLK`).
//!
//! The table is a plain `std` mutex, not the concurrency facade's: it is
//! global (several contexts and owners meet there, as in Linux), and while
//! it is held the code touches nothing of the facade, so no model thread
//! can be switched out holding it.

use crate::errno::Errno;
use crate::primitive::sync::atomic::{AtomicUsize, Ordering};
use crate::primitive::sync::{Mutex, MutexGuard, lock};
use crate::select::Waiter as Wake;
use crate::signal::{Interrupted, Sleep, Sleeper};
use crate::uapi::{F_RDLCK, F_UNLCK, F_WRLCK};
use std::sync::Arc;

mod lease;
pub use lease::LeaseBreak;
pub(crate) use lease::{Holder, OpenCounts, OwnerPtr, break_lease_if_any};

/// The largest file offset a lock can reach (Linux's `OFFSET_MAX`); a lock
/// ending here runs to the end of any file (`l_len` 0).
pub const OFFSET_MAX: i64 = i64::MAX;

/// How many links of the waits-for chain the deadlock check follows before
/// giving up (Linux's `MAX_DEADLK_ITERATIONS`).
const MAX_DEADLK_ITERATIONS: usize = 10;

/// Linux's `struct flock` (x86-64 layout, the same as `struct flock64`):
/// the argument of the record-lock `fcntl` commands, read and (by the
/// `GETLK` commands) written back.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flock {
    /// `F_RDLCK`, `F_WRLCK` or `F_UNLCK`.
    pub l_type: i16,
    /// Where `l_start` counts from: `SEEK_SET`, `SEEK_CUR` or `SEEK_END`.
    pub l_whence: i16,
    /// The first byte, relative to `l_whence`.
    pub l_start: i64,
    /// The length: 0 to the end of any file, negative for the bytes before
    /// `l_start`.
    pub l_len: i64,
    /// For `F_GETLK`: the pid of the process holding the conflicting lock
    /// (-1 for an OFD lock). Must be 0 for the `F_OFD_*` commands.
    pub l_pid: i32,
}

/// Who owns a byte-range lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// A POSIX lock: the fd table, by its id.
    Files(u64),
    /// An OFD lock: the open file, by its address (the file's locks are
    /// removed before the object is freed or reused).
    File(usize),
}

/// A lock's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockType {
    /// Shared.
    Read,
    /// Exclusive.
    Write,
    /// No lock: a request to remove, or a test's "nothing conflicts".
    Unlock,
}

impl LockType {
    /// From `l_type`; `EINVAL` for anything else.
    pub(crate) fn from_raw(t: i16) -> Result<LockType, Errno> {
        match i32::from(t) {
            F_RDLCK => Ok(LockType::Read),
            F_WRLCK => Ok(LockType::Write),
            F_UNLCK => Ok(LockType::Unlock),
            _ => Err(Errno::EINVAL),
        }
    }

    /// The `l_type` value.
    pub(crate) fn raw(self) -> i16 {
        (match self {
            LockType::Read => F_RDLCK,
            LockType::Write => F_WRLCK,
            LockType::Unlock => F_UNLCK,
        }) as i16
    }
}

/// A byte-range request: `start..=end` (both within `0..=OFFSET_MAX`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PosixRequest {
    pub(crate) owner: Owner,
    /// The tgid recorded in the lock (what `F_GETLK` reports).
    pub(crate) pid: i32,
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) ty: LockType,
}

/// A lock found by a test (`F_GETLK`): type, range and holder's pid (-1
/// for an OFD lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) ty: LockType,
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) pid: i32,
}

/// What a context holds, for tests and consistency checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Byte-range locks (POSIX and OFD).
    pub posix: usize,
    /// flock locks.
    pub flock: usize,
    /// Requests waiting for a lock.
    pub waiters: usize,
    /// Records of the global waits-for table naming this context.
    pub edges: usize,
    /// Leases.
    pub leases: usize,
}

#[derive(Clone, Copy, Debug)]
struct RangeLock {
    /// Identity for the waiters blocked on it: a lock that is removed or
    /// changed gets a new id (or none), which wakes them.
    id: u64,
    owner: Owner,
    pid: i32,
    start: i64,
    end: i64,
    write: bool,
}

#[derive(Clone, Copy, Debug)]
struct FileLock {
    id: u64,
    file: usize,
    write: bool,
}

#[derive(Debug)]
struct Waiter {
    token: u64,
    /// The id of the lock it is blocked on.
    blocker: u64,
    woken: bool,
    /// Whether it has a record in the global waits-for table.
    edge: bool,
    /// The sleeping call's wake-up.
    wake: Arc<Wake>,
}

#[derive(Debug, Default)]
struct State {
    /// Byte-range locks in Linux's order (which decides which conflicting
    /// lock `F_GETLK` reports): each owner's locks together and sorted by
    /// start, owners in the order their first current lock came.
    posix: Vec<RangeLock>,
    /// flock locks, oldest first.
    flock: Vec<FileLock>,
    waiters: Vec<Waiter>,
    /// Leases, oldest first (see [`lease`]).
    leases: Vec<lease::Lease>,
    next_id: u64,
}

impl State {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// An inode's locks (Linux's `file_lock_context`).
#[derive(Debug)]
pub struct FileLockContext {
    state: Mutex<State>,
    /// The number of byte-range locks, readable without the lock: close(2)
    /// looks here first and skips the lock when it is zero. Stored under
    /// the lock; see [`FileLockContext::remove_posix`] for why a stale zero
    /// cannot be seen by a close that must remove something.
    posix_nr: AtomicUsize,
    /// The number of leases, readable without the lock: an open looks here
    /// once (see [`lease`]).
    lease_nr: AtomicUsize,
}

/// One record of the global waits-for table: `waiter`'s request `token` in
/// context `ctx` is blocked on a lock of `blocker`.
#[derive(Debug)]
struct Edge {
    waiter: Owner,
    blocker: Owner,
    ctx: usize,
    token: u64,
}

/// The global waits-for table (Linux's `blocked_hash` with its lock); see
/// the module documentation for why it is a `std` mutex.
static EDGES: std::sync::Mutex<Vec<Edge>> = std::sync::Mutex::new(Vec::new());

/// Tests: the waits-for table is global, as Linux's is, so tests whose
/// owners block (and so record edges) run one at a time; two at once on
/// the harness's threads would see each other's owners `Files(1)` and
/// `Files(2)` and answer `EDEADLK` (a loom model did, 2026-11-29).
#[cfg(all(test, not(shuttle)))]
pub(crate) fn edges_serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

fn edges() -> std::sync::MutexGuard<'static, Vec<Edge>> {
    EDGES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `caller`, about to wait for a lock of `blocker`, would close a
/// cycle of waiting owners (`posix_locks_deadlock`). What an owner waits
/// for is its latest record.
fn closes_cycle(table: &[Edge], caller: Owner, mut blocker: Owner) -> bool {
    let mut i = 0;
    while let Some(next) = table.iter().rev().find(|e| e.waiter == blocker) {
        if i > MAX_DEADLK_ITERATIONS {
            return false;
        }
        i += 1;
        if next.blocker == caller {
            return true;
        }
        blocker = next.blocker;
    }
    false
}

fn overlap(a0: i64, a1: i64, b0: i64, b1: i64) -> bool {
    a0 <= b1 && b0 <= a1
}

impl FileLockContext {
    /// An empty context.
    pub(crate) fn new() -> FileLockContext {
        FileLockContext {
            state: Mutex::new(State::default()),
            posix_nr: AtomicUsize::new(0),
            lease_nr: AtomicUsize::new(0),
        }
    }

    fn key(&self) -> usize {
        self as *const FileLockContext as usize
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// `F_GETLK` (`posix_test_lock`): the first lock in list order that
    /// conflicts with `req`, or `None`. An unlock request (`F_OFD_GETLK`
    /// with `F_UNLCK`) asks instead for a lock of the same owner
    /// overlapping the range.
    pub(crate) fn test(&self, req: &PosixRequest) -> Option<Found> {
        if self.posix_nr.load(Ordering::Acquire) == 0 {
            return None;
        }
        let g = self.lock();
        g.posix
            .iter()
            .find(|l| match req.ty {
                LockType::Unlock => {
                    l.owner == req.owner && overlap(l.start, l.end, req.start, req.end)
                }
                ty => conflicts(req.owner, req.start, req.end, ty == LockType::Write, l),
            })
            .map(|l| Found {
                ty: if l.write {
                    LockType::Write
                } else {
                    LockType::Read
                },
                start: l.start,
                end: l.end,
                pid: match l.owner {
                    Owner::File(_) => -1,
                    Owner::Files(_) => l.pid,
                },
            })
    }

    /// `F_SETLK`/`F_SETLKW` and the OFD forms (`posix_lock_inode` and its
    /// wait loop): sets or removes `req`'s range for its owner. A conflict
    /// is `EAGAIN` without `wait`; with it the call sleeps until the lock
    /// is granted, or fails with `EDEADLK` (POSIX owners only) when waiting
    /// would close a cycle of owners waiting for each other.
    #[cfg(test)]
    #[cfg_attr(shuttle, allow(dead_code))] // the unit tests are not built under shuttle
    pub(crate) fn posix_lock(&self, req: &PosixRequest, wait_ok: bool) -> Result<(), Errno> {
        self.posix_lock_wait(req, wait_ok, None)
    }

    /// [`posix_lock`](Self::posix_lock) sleeping through `hook`:
    /// interrupted, it fails with `EINTR` unless its last try gets the
    /// lock (see the module docs).
    pub(crate) fn posix_lock_wait(
        &self,
        req: &PosixRequest,
        wait_ok: bool,
        hook: Option<&dyn Sleep>,
    ) -> Result<(), Errno> {
        let mut sl = Sleeper::new(hook);
        let mut interrupted = false;
        let mut g = self.lock();
        loop {
            if req.ty != LockType::Unlock {
                let write = req.ty == LockType::Write;
                let conflict = g
                    .posix
                    .iter()
                    .find(|l| conflicts(req.owner, req.start, req.end, write, l))
                    .map(|l| (l.id, l.owner));
                if let Some((blocker, blocker_owner)) = conflict {
                    if !wait_ok {
                        return Err(Errno::EAGAIN);
                    }
                    if interrupted {
                        return Err(Errno::EINTR);
                    }
                    let token = g.id();
                    let edge = match req.owner {
                        Owner::Files(_) => {
                            let mut t = edges();
                            if closes_cycle(&t, req.owner, blocker_owner) {
                                return Err(Errno::EDEADLK);
                            }
                            t.push(Edge {
                                waiter: req.owner,
                                blocker: blocker_owner,
                                ctx: self.key(),
                                token,
                            });
                            true
                        }
                        Owner::File(_) => false,
                    };
                    let r;
                    (g, r) = self.sleep(g, token, blocker, edge, &mut sl);
                    interrupted = r == Some(Interrupted::Eintr);
                    continue;
                }
            }
            let changed = apply_posix(&mut g, req);
            self.posix_nr.store(g.posix.len(), Ordering::Release);
            self.wake(&mut g, &changed);
            return Ok(());
        }
    }

    /// Releases every byte-range lock of `owner` (`locks_remove_posix`,
    /// run by each close of an fd of the file, and for OFD owners by the
    /// file's last close).
    ///
    /// The count is read first without the lock. A close that must remove
    /// a lock cannot read a stale zero: the setter stores the count under
    /// this context's lock and then, under the fd table's lock, checks that
    /// its fd still holds the file (see `Process::fcntl_lock`); a close
    /// removes the fd under the table's lock before calling here. Either
    /// the setter's check comes first, and the table lock orders the
    /// count's store before this load, or the setter sees the fd gone and
    /// removes its lock itself.
    pub(crate) fn remove_posix(&self, owner: Owner) {
        if self.posix_nr.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut g = self.lock();
        if !g.posix.iter().any(|l| l.owner == owner) {
            return;
        }
        let req = PosixRequest {
            owner,
            pid: 0,
            start: 0,
            end: OFFSET_MAX,
            ty: LockType::Unlock,
        };
        let changed = apply_posix(&mut g, &req);
        self.posix_nr.store(g.posix.len(), Ordering::Release);
        self.wake(&mut g, &changed);
    }

    /// flock(2) on the open file `file` (`flock_lock_inode` and its wait
    /// loop): `ty` converts or removes the file's lock. A conflict is
    /// `EWOULDBLOCK` without `wait`; with it the call sleeps until granted
    /// (flock has no deadlock detection, as on Linux).
    #[cfg(test)]
    #[cfg_attr(shuttle, allow(dead_code))] // the unit tests are not built under shuttle
    pub(crate) fn flock(&self, file: usize, ty: LockType, wait_ok: bool) -> Result<(), Errno> {
        self.flock_wait(file, ty, wait_ok, None)
    }

    /// [`flock`](Self::flock) sleeping through `hook`: interrupted, it
    /// fails with `EINTR` unless its last try gets the lock (the old lock
    /// of a conversion stays dropped, as on Linux).
    pub(crate) fn flock_wait(
        &self,
        file: usize,
        ty: LockType,
        wait_ok: bool,
        hook: Option<&dyn Sleep>,
    ) -> Result<(), Errno> {
        let mut sl = Sleeper::new(hook);
        let mut interrupted = false;
        let write = ty == LockType::Write;
        let mut g = self.lock();
        loop {
            if let Some(i) = g.flock.iter().position(|l| l.file == file) {
                if ty != LockType::Unlock && g.flock[i].write == write {
                    return Ok(());
                }
                let old = g.flock.remove(i);
                self.wake(&mut g, &[old.id]);
            }
            if ty == LockType::Unlock {
                return Ok(());
            }
            let conflict = g
                .flock
                .iter()
                .find(|l| l.file != file && (write || l.write))
                .map(|l| l.id);
            if let Some(blocker) = conflict {
                if !wait_ok {
                    return Err(Errno::EWOULDBLOCK);
                }
                if interrupted {
                    return Err(Errno::EINTR);
                }
                let token = g.id();
                let r;
                (g, r) = self.sleep(g, token, blocker, false, &mut sl);
                interrupted = r == Some(Interrupted::Eintr);
                continue;
            }
            let id = g.id();
            g.flock.push(FileLock { id, file, write });
            return Ok(());
        }
    }

    /// The last close of the open file `file` (`locks_remove_file`): its
    /// OFD locks, its flock lock and its lease go.
    pub(crate) fn remove_file(&self, file: usize) {
        self.remove_posix(Owner::File(file));
        self.remove_lease(file);
        let mut g = self.lock();
        if let Some(i) = g.flock.iter().position(|l| l.file == file) {
            let old = g.flock.remove(i);
            self.wake(&mut g, &[old.id]);
        }
    }

    /// Registers a waiter blocked on lock `blocker` and sleeps until a
    /// change to that lock marks it woken, or the hook interrupts the
    /// sleep; returns with the lock held, the waiter gone (its global
    /// record, if any, removed by the waker or here) and, if it was
    /// interrupted before being woken, how.
    fn sleep<'a>(
        &'a self,
        mut g: MutexGuard<'a, State>,
        token: u64,
        blocker: u64,
        edge: bool,
        sl: &mut Sleeper<'_>,
    ) -> (MutexGuard<'a, State>, Option<Interrupted>) {
        g.waiters.push(Waiter {
            token,
            blocker,
            woken: false,
            edge,
            wake: sl.waiter().clone(),
        });
        loop {
            drop(g);
            let r = sl.sleep();
            g = self.lock();
            let i = g
                .waiters
                .iter()
                .position(|w| w.token == token)
                .expect("a sleeping waiter stays registered until it leaves");
            if g.waiters[i].woken {
                g.waiters.swap_remove(i);
                return (g, None);
            }
            if let Err(how) = r {
                // Not woken: the record is still ours to drop.
                let w = g.waiters.swap_remove(i);
                if w.edge {
                    let key = self.key();
                    edges().retain(|e| !(e.ctx == key && e.token == token));
                }
                return (g, Some(how));
            }
        }
    }

    /// Marks the waiters blocked on the locks `changed` (removed or
    /// altered) as woken, drops their waits-for records and wakes the
    /// sleepers (`locks_wake_up_blocks`).
    fn wake(&self, g: &mut State, changed: &[u64]) {
        if changed.is_empty() || g.waiters.is_empty() {
            return;
        }
        let mut dropped = Vec::new();
        for w in g.waiters.iter_mut() {
            if !w.woken && changed.contains(&w.blocker) {
                w.woken = true;
                w.wake.wake();
                if w.edge {
                    dropped.push(w.token);
                }
            }
        }
        if !dropped.is_empty() {
            let key = self.key();
            edges().retain(|e| !(e.ctx == key && dropped.contains(&e.token)));
        }
    }

    /// What the context holds (for tests).
    pub fn stats(&self) -> LockStats {
        let g = self.lock();
        let key = self.key();
        LockStats {
            posix: g.posix.len(),
            flock: g.flock.len(),
            waiters: g.waiters.len(),
            edges: edges().iter().filter(|e| e.ctx == key).count(),
            leases: g.leases.len(),
        }
    }
}

/// Whether a request by `owner` for `start..=end` (`write` or not)
/// conflicts with `l` (`posix_locks_conflict`): another owner, overlapping,
/// one of the two exclusive.
fn conflicts(owner: Owner, start: i64, end: i64, write: bool, l: &RangeLock) -> bool {
    l.owner != owner && overlap(start, end, l.start, l.end) && (write || l.write)
}

/// Applies `req` to its owner's locks (no conflict left to check): the
/// range is taken out of the owner's locks (splitting them), then, unless
/// it is an unlock, added as one lock merged with the owner's adjacent or
/// overlapping locks of its type. Returns the ids of locks removed or
/// changed. The owner's locks stay together, sorted by start; an owner
/// with none before goes to the end of the list.
fn apply_posix(g: &mut State, req: &PosixRequest) -> Vec<u64> {
    let first = g.posix.iter().position(|l| l.owner == req.owner);
    let (g0, g1) = match first {
        Some(i) => {
            let n = g.posix[i..]
                .iter()
                .take_while(|l| l.owner == req.owner)
                .count();
            (i, i + n)
        }
        None => (g.posix.len(), g.posix.len()),
    };
    let old: Vec<RangeLock> = g.posix[g0..g1].to_vec();
    if old.is_empty() && req.ty == LockType::Unlock {
        return Vec::new();
    }
    // Pieces of the old locks outside the range; new ids are 0 for now.
    let mut new: Vec<RangeLock> = Vec::with_capacity(old.len() + 2);
    for l in &old {
        if !overlap(l.start, l.end, req.start, req.end) {
            new.push(*l);
            continue;
        }
        if l.start < req.start {
            new.push(RangeLock {
                id: 0,
                end: req.start - 1,
                ..*l
            });
        }
        if l.end > req.end {
            new.push(RangeLock {
                id: 0,
                start: req.end + 1,
                ..*l
            });
        }
    }
    if req.ty != LockType::Unlock {
        let write = req.ty == LockType::Write;
        let mut lock = RangeLock {
            id: 0,
            owner: req.owner,
            pid: req.pid,
            start: req.start,
            end: req.end,
            write,
        };
        // Absorb the owner's locks of the same type that touch the range
        // (none overlaps it any more).
        new.retain(|l| {
            let touches = l.write == write
                && (l.end.checked_add(1) == Some(lock.start)
                    || lock.end.checked_add(1) == Some(l.start));
            if touches {
                lock.start = lock.start.min(l.start);
                lock.end = lock.end.max(l.end);
            }
            !touches
        });
        new.push(lock);
        new.sort_by_key(|l| l.start);
    }
    // A lock identical to an old one keeps its id (its waiters need no
    // wake-up); every other one gets a fresh id.
    for l in new.iter_mut() {
        if l.id == 0 {
            l.id = match old
                .iter()
                .find(|o| o.start == l.start && o.end == l.end && o.write == l.write)
            {
                Some(o) => o.id,
                None => {
                    g.next_id += 1;
                    g.next_id
                }
            };
        }
    }
    let changed: Vec<u64> = old
        .iter()
        .filter(|o| !new.iter().any(|l| l.id == o.id))
        .map(|o| o.id)
        .collect();
    g.posix.splice(g0..g1, new);
    changed
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
