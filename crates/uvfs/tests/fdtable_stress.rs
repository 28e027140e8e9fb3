//! Multi-thread stress test of one shared fd table, under both presets.
//!
//! Eight OS threads run for `UVFS_STRESS_SECS` seconds per preset (default
//! 2), with choices drawn from `UVFS_STRESS_SEED` (printed; rerun with it):
//!
//! - six threads share ONE fd table (each a `Process` handle from
//!   `new_thread()`) and mix open (also failing opens), dup, dup2, dup3,
//!   F_DUPFD, close, close_range, F_GETFD/F_SETFD/F_GETFL, fget, fget_raw and
//!   with_file;
//! - two threads each repeatedly fork the shared process while the others
//!   mutate it, and drive the private child with exact expectations (every
//!   result predicted from a model of the child's table), including EMFILE
//!   at a lowered limit and the exec sweep.
//!
//! Ownership protocol (what makes the checks sound under concurrency):
//! - a shared thread only closes, replaces or re-flags fds it owns: those
//!   it got from open/dup (always below `LOW_LIMIT`: at most
//!   `SHARED_THREADS * LOW_CAP` fds are ever taken there, so the lowest free
//!   fd is always below it), and a private high range of `RANGE` fds
//!   (dup2/dup3/F_DUPFD/close_range targets) that no allocation can reach;
//! - every owned fd has a word `seq << 32 | id` published after the fd was
//!   installed and cleared before it is closed or replaced (`seq` is unique
//!   per claim). Claiming an fd whose word is not zero means the fd was
//!   handed out twice. A lookup of any fd that reads the same non-zero word
//!   before and after it saw an fd installed for its whole duration, so the
//!   lookup must return exactly that file;
//! - every file's ops is a [`Probe`]: holders of a reference mark it held and
//!   check it is not released; the release hook fails if the probe is held
//!   or released twice; flush and release are counted, and so are the fd
//!   slots the test saw the file installed in. Each probe also records the
//!   shared-table fds its file was ever at: a lookup hit on a file that was
//!   never at that fd (a reused pool object returned for a stale slot) is a
//!   failure, checked once every claim is made.
//!
//! At the end: every owned fd still maps to its file and the table's open
//! fds are exactly the owned ones; `check_invariants()` holds; once every
//! process is dropped, no file is left unfreed, and each freed file (its
//! probe's `Drop`) was released exactly once and flushed once per fd slot it
//! ever occupied, or, for a failed open, neither; with the type-stable pool
//! every object is back in the depot after the threads exited and the main
//! thread flushed its cache. A watchdog turns a hang (e.g. a lookup spinning
//! on a file freed while still installed) into a failure that prints the
//! violations seen so far.
//!
//! The lookup-vs-reuse race itself (a lookup preempted between its slot load
//! and its increment while the object is freed and reused) needs a
//! preemption inside a window of a few instructions; stress makes it
//! possible, not likely. The loom models in `src/fdtable/loom_tests.rs` cover it
//! deterministically.
//!
//! The global file pool is shared by the whole test process, so this file
//! holds this one test only, and runs the presets one after the other.

mod support;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::rng::Rng;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, File, FileOps, FileRef, Process, Vfs};

const SHARED_THREADS: usize = 6;
const FORK_THREADS: usize = 2;
/// open/dup results stay below this (see the module docs).
const LOW_LIMIT: usize = 200;
/// Fds from open/dup a shared thread keeps at most.
const LOW_CAP: usize = 24;
/// Private high fds per shared thread, from `LOW_LIMIT + t * RANGE`.
const RANGE: usize = 32;
/// Fds with an ownership word.
const WATCH: usize = LOW_LIMIT + SHARED_THREADS * RANGE;
const DEFAULT_SEED: u64 = 0x5eed_f11e_7ab1_e000;
/// Ops each shared thread makes at least, and fork rounds each forker
/// makes at least, however slow the machine: the run's final "did enough"
/// check counts these, never seconds.
const MIN_SHARED_OPS: u64 = 4096;
const MIN_FORK_ROUNDS: u64 = 16;

/// Violations found anywhere (threads, hooks, probe drops; the first one
/// stops every thread), and the probe counts.
#[derive(Default)]
struct Ledger {
    list: Mutex<Vec<String>>,
    stop: AtomicBool,
    /// Probes not yet dropped: a file holds its probe until it is freed.
    live: AtomicUsize,
    opened: AtomicUsize,
    never_opened: AtomicUsize,
}

impl Ledger {
    fn report(&self, msg: String) {
        let mut l = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if l.len() < 40 {
            l.push(msg);
        }
        self.stop.store(true, SeqCst);
    }
}

/// The test double behind every file.
struct Probe {
    id: u64,
    /// The open flags.
    flags: i32,
    fail: Arc<Ledger>,
    /// Set once `open_with` succeeded.
    opened: AtomicBool,
    released: AtomicUsize,
    flushes: AtomicUsize,
    /// Fd slots the test saw installed with this file.
    installs: AtomicUsize,
    /// References the test currently holds and is looking through.
    held: AtomicUsize,
    /// Fds of the shared table this file was ever claimed at (a bitmap).
    at: [AtomicU64; WATCH.div_ceil(64)],
}

impl FileOps for Probe {
    fn flush(&self, file: &File) -> Result<(), Errno> {
        self.flushes.fetch_add(1, SeqCst);
        if self.released.load(SeqCst) != 0 {
            self.fail
                .report(format!("file {}: flushed after its release", self.id));
        }
        if file.count() == 0 {
            self.fail
                .report(format!("file {}: flushed with count zero", self.id));
        }
        Ok(())
    }

    fn release(&self, file: &File) {
        if !self.opened.load(SeqCst) {
            self.fail
                .report(format!("file {}: release hook of a failed open", self.id));
        }
        let held = self.held.load(SeqCst);
        if held != 0 {
            self.fail.report(format!(
                "file {}: released while {held} lookup reference(s) hold it",
                self.id
            ));
        }
        if file.count() != 0 {
            self.fail.report(format!(
                "file {}: released with count {}",
                self.id,
                file.count()
            ));
        }
        let before = self.released.fetch_add(1, SeqCst);
        if before != 0 {
            self.fail
                .report(format!("file {}: released {} times", self.id, before + 1));
        }
    }
}

impl Drop for Probe {
    /// The file that held this probe is freed: its final account. (Probes
    /// are not kept in a registry, so memory stays bounded in long runs; a
    /// file never freed keeps its probe alive, which `live` reports.)
    fn drop(&mut self) {
        let (released, flushes, installs) = (
            self.released.load(SeqCst),
            self.flushes.load(SeqCst),
            self.installs.load(SeqCst),
        );
        if self.opened.load(SeqCst) {
            self.fail.opened.fetch_add(1, SeqCst);
            if released != 1 {
                self.fail.report(format!(
                    "file {}: freed after {released} releases, want 1",
                    self.id
                ));
            }
            if flushes != installs {
                self.fail.report(format!(
                    "file {}: flushed {flushes} times, but occupied {installs} fd slots",
                    self.id
                ));
            }
        } else {
            self.fail.never_opened.fetch_add(1, SeqCst);
            if released != 0 || flushes != 0 || installs != 0 {
                self.fail.report(format!(
                    "failed open {}: released {released}, flushed {flushes}, installed \
                     {installs}",
                    self.id
                ));
            }
        }
        self.fail.live.fetch_sub(1, SeqCst);
    }
}

fn probe_of(f: &File) -> Option<&Probe> {
    let ops: &dyn FileOps = &**f.ops()?;
    let any: &dyn Any = ops;
    any.downcast_ref::<Probe>()
}

/// State shared by all threads of one run.
struct World {
    fail: Arc<Ledger>,
    /// Per fd below `WATCH`: 0, or `seq << 32 | id` of its owner's file.
    words: Vec<AtomicU64>,
    seq: AtomicU64,
    next_id: AtomicU64,
    deadline: Instant,
    /// Bumped every 32 shared ops and every fork round: the watchdog's
    /// sign of life.
    progress: Arc<AtomicU64>,
    stats: Stats,
    /// Lookup hits in the shared table on a file not (yet) known to have
    /// been at that fd: checked at the end, when every claim is made.
    unvalidated: Mutex<Vec<(i32, Arc<Probe>)>>,
}

#[derive(Default)]
struct Stats {
    ops: AtomicUsize,
    opens: AtomicUsize,
    closes: AtomicUsize,
    lookups: AtomicUsize,
    /// Lookups of a foreign fd that was stably owned, so their result was
    /// checked exactly.
    validated: AtomicUsize,
    /// Lookups whose fd changed owner meanwhile (result unchecked).
    raced: AtomicUsize,
    forks: AtomicUsize,
    child_ops: AtomicUsize,
}

impl World {
    fn fail(&self, msg: String) {
        self.fail.report(msg);
    }

    fn stopped(&self) -> bool {
        self.fail.stop.load(SeqCst)
    }

    fn new_probe(&self, flags: i32) -> Arc<Probe> {
        let id = self.next_id.fetch_add(1, SeqCst) + 1;
        assert!(id < 1 << 32);
        self.fail.live.fetch_add(1, SeqCst);
        Arc::new(Probe {
            id,
            flags,
            fail: self.fail.clone(),
            opened: AtomicBool::new(false),
            released: AtomicUsize::new(0),
            flushes: AtomicUsize::new(0),
            installs: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            at: std::array::from_fn(|_| AtomicU64::new(0)),
        })
    }

    fn word(&self, fd: i32) -> u64 {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.words.get(i))
            .map_or(0, |w| w.load(SeqCst))
    }

    /// Publishes that `fd` (just installed) belongs to the caller's file
    /// `id`; fails if someone else owns it.
    fn claim(&self, fd: i32, id: u64, what: &str) {
        let Some(w) = self.words.get(fd as usize) else {
            self.fail(format!("{what}: fd {fd} outside the watched range"));
            return;
        };
        let seq = self.seq.fetch_add(1, SeqCst) + 1;
        if let Err(other) = w.compare_exchange(0, seq << 32 | id, SeqCst, SeqCst) {
            self.fail(format!(
                "{what}: fd {fd} handed out twice: got it for file {id}, but file {} \
                 (claim {}) still holds it",
                other & 0xffff_ffff,
                other >> 32
            ));
        }
    }

    /// Withdraws the claim on `fd` before the owner closes or replaces it.
    fn unclaim(&self, fd: i32) {
        self.words[fd as usize].store(0, SeqCst);
    }
}

/// Records that `p` is installed at `fd` of the shared table.
fn mark_at(p: &Probe, fd: i32) {
    if (0..WATCH as i32).contains(&fd) {
        p.at[fd as usize / 64].fetch_or(1 << (fd % 64), SeqCst);
    }
}

fn was_at(p: &Probe, fd: i32) -> bool {
    p.at[fd as usize / 64].load(SeqCst) & 1 << (fd % 64) != 0
}

/// Where a lookup looked.
#[derive(Clone, Copy, PartialEq)]
enum Table {
    Shared,
    Child,
}

/// Looks through a file found by a lookup: marks it held, checks it is a
/// live probe, and returns its id (0 if it has no probe). A hit in the
/// shared table on a file not known to have been at `fd` is queued for the
/// history check.
fn inspect(w: &World, f: &File, fd: i32, table: Table, yield_now: bool) -> u64 {
    let Some(p) = probe_of(f) else {
        w.fail(format!("fd {fd}: lookup returned a file without probe ops"));
        return 0;
    };
    if table == Table::Shared && (0..WATCH as i32).contains(&fd) && !was_at(p, fd) {
        // Its claim may simply not be made yet: check at the end.
        let ops: Arc<dyn Any + Send + Sync> = f.ops().unwrap().clone();
        if let Ok(p) = ops.downcast::<Probe>() {
            w.unvalidated.lock().unwrap().push((fd, p));
        }
    }
    p.held.fetch_add(1, SeqCst);
    if p.released.load(SeqCst) != 0 {
        w.fail(format!("fd {fd}: file {} used after its release", p.id));
    }
    if f.count() == 0 {
        w.fail(format!("fd {fd}: file {} referenced with count zero", p.id));
    }
    if yield_now {
        // Widen the window in which closers run while we hold the file.
        std::thread::yield_now();
        if p.released.load(SeqCst) != 0 {
            w.fail(format!("fd {fd}: file {} released while held", p.id));
        }
    }
    p.held.fetch_sub(1, SeqCst);
    p.id
}

/// The `flush`/`install` bookkeeping of a file found at a new fd.
fn count_install(w: &World, f: &File, fd: i32, table: Table) -> u64 {
    match probe_of(f) {
        Some(p) => {
            p.installs.fetch_add(1, SeqCst);
            if table == Table::Shared {
                mark_at(p, fd);
            }
            p.id
        }
        None => {
            w.fail(format!("fd {fd}: installed file has no probe"));
            0
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Own {
    id: u64,
    cloexec: bool,
}

fn access_flags(rng: &mut Rng) -> i32 {
    let mut fl = rng.pick(&[O_RDONLY, O_WRONLY, O_RDWR]);
    if rng.chance(30) {
        fl |= O_CLOEXEC;
    }
    if rng.chance(20) {
        fl |= O_NONBLOCK;
    }
    if rng.chance(10) {
        fl |= O_APPEND;
    }
    fl
}

/// What F_GETFL reports for a file opened with `flags`.
fn getfl_of(flags: i32) -> i32 {
    (flags & !O_CLOEXEC) | O_LARGEFILE
}

// ---------------------------------------------------------------------------
// Threads on the shared table.
// ---------------------------------------------------------------------------

struct Worker<'w> {
    w: &'w World,
    t: usize,
    p: Process,
    rng: Rng,
    owned: BTreeMap<i32, Own>,
    base: i32,
}

impl Worker<'_> {
    fn fail(&self, msg: String) {
        self.w.fail(format!("[thread {}] {msg}", self.t));
    }

    fn low_owned(&self) -> usize {
        self.owned.range(..LOW_LIMIT as i32).count()
    }

    fn random_owned(&mut self) -> Option<(i32, Own)> {
        if self.owned.is_empty() {
            return None;
        }
        let i = self.rng.below(self.owned.len());
        self.owned.iter().nth(i).map(|(&fd, &o)| (fd, o))
    }

    /// The id of the file at `fd` through one of the lookup paths, or
    /// `None` for EBADF.
    fn lookup(&mut self, fd: i32) -> Option<u64> {
        let w = self.w;
        let y = self.rng.below(512) == 0;
        match self.rng.below(3) {
            0 => match self.p.fget(fd) {
                Ok(f) => Some(inspect(w, &f, fd, Table::Shared, y)),
                Err(e) => {
                    if e != Errno::EBADF {
                        self.fail(format!("fget({fd}) = {e:?}"));
                    }
                    None
                }
            },
            1 => {
                let f: FileRef = self.p.fget_raw(fd).ok()?;
                Some(inspect(w, &f, fd, Table::Shared, y))
            }
            _ => self
                .p
                .with_file(fd, |f| inspect(w, f, fd, Table::Shared, y))
                .ok(),
        }
    }

    /// Checks that an owned fd still refers to its file.
    fn verify_owned(&mut self, fd: i32, what: &str) {
        let want = self.owned[&fd];
        match self.lookup(fd) {
            Some(id) if id == want.id => {}
            got => self.fail(format!(
                "{what}: own fd {fd} should hold file {}, lookup found {got:?}",
                want.id
            )),
        }
    }

    fn check_getfd(&mut self, fd: i32) {
        let want = i32::from(self.owned[&fd].cloexec);
        let got = self.p.fcntl(fd, F_GETFD, 0);
        if got != Ok(want) {
            self.fail(format!("F_GETFD({fd}) = {got:?}, want Ok({want})"));
        }
    }

    fn op(&mut self) {
        let roll = self.rng.below(100);
        match roll {
            0..=13 => self.open(),
            14..=16 => self.failed_open(),
            17..=29 => self.close(),
            30..=35 => self.dup(),
            36..=45 => self.dup2(),
            46..=50 => self.dupfd(),
            51..=53 => self.close_range(),
            54..=57 => self.setfd(),
            58..=59 => self.getfl(),
            60..=61 => self.verify_all(),
            62 => {
                if let Err(e) = self.p.fd_table().check_invariants() {
                    self.fail(format!("check_invariants: {e}"));
                }
            }
            _ => self.foreign_lookup(),
        }
        if uvfs::task_work::pending() {
            self.fail("deferred releases left queued after a call".into());
        }
    }

    fn open(&mut self) {
        if self.low_owned() >= LOW_CAP {
            return self.close();
        }
        let flags = access_flags(&mut self.rng);
        let probe = self.w.new_probe(flags);
        let ops = probe.clone();
        match self.p.open_with(flags, |o| {
            o.set_ops(ops);
            Ok(())
        }) {
            Ok(fd) => {
                probe.opened.store(true, SeqCst);
                probe.installs.fetch_add(1, SeqCst);
                mark_at(&probe, fd);
                self.w.stats.opens.fetch_add(1, SeqCst);
                if fd < 0 || fd as usize >= LOW_LIMIT {
                    self.fail(format!("open returned fd {fd}, not the lowest free one"));
                    return;
                }
                self.w.claim(fd, probe.id, "open");
                let cloexec = flags & O_CLOEXEC != 0;
                if self
                    .owned
                    .insert(
                        fd,
                        Own {
                            id: probe.id,
                            cloexec,
                        },
                    )
                    .is_some()
                {
                    self.fail(format!("open returned fd {fd}, which this thread holds"));
                }
                self.verify_owned(fd, "open");
                self.check_getfd(fd);
            }
            Err(e) => self.fail(format!("open: {e:?}")),
        }
    }

    fn failed_open(&mut self) {
        let probe = self.w.new_probe(O_RDWR);
        let ops = probe.clone();
        let r = self.p.open_with(O_RDWR, |o| {
            o.set_ops(ops);
            Err(Errno::ENOENT)
        });
        if r != Err(Errno::ENOENT) {
            self.fail(format!("failing open returned {r:?}"));
        }
    }

    fn close(&mut self) {
        let Some((fd, _)) = self.random_owned() else {
            return;
        };
        self.verify_owned(fd, "close");
        self.w.unclaim(fd);
        self.owned.remove(&fd);
        if let Err(e) = self.p.close(fd) {
            self.fail(format!("close of own fd {fd}: {e:?}"));
        }
        self.w.stats.closes.fetch_add(1, SeqCst);
        // Nobody else may close or reuse a high fd of ours.
        if fd as usize >= LOW_LIMIT
            && let Some(id) = self.lookup(fd)
        {
            self.fail(format!("own fd {fd} has file {id} right after close"));
        }
    }

    fn dup(&mut self) {
        if self.low_owned() >= LOW_CAP {
            return self.close();
        }
        let Some((old, own)) = self.random_owned() else {
            return;
        };
        match self.p.dup(old) {
            Ok(fd) if (0..LOW_LIMIT as i32).contains(&fd) => {
                let id = self.installed(fd, "dup");
                if id != own.id {
                    self.fail(format!(
                        "dup({old}) = {fd} holds file {id}, want {}",
                        own.id
                    ));
                }
                self.w.claim(fd, id, "dup");
                self.owned.insert(fd, Own { id, cloexec: false });
                self.check_getfd(fd);
            }
            r => self.fail(format!("dup of own fd {old}: {r:?}")),
        }
    }

    /// Counts the install of the file now at own fd `fd`; its id.
    fn installed(&mut self, fd: i32, what: &str) -> u64 {
        match self.p.fget(fd) {
            Ok(f) => count_install(self.w, &f, fd, Table::Shared),
            Err(e) => {
                self.fail(format!("{what}: new fd {fd} has no file: {e:?}"));
                0
            }
        }
    }

    fn dup2(&mut self) {
        let new = self.base + self.rng.below(RANGE) as i32;
        let own_old = self.rng.chance(70);
        let old = match self.random_owned() {
            Some((fd, _)) if own_old => fd,
            _ => self.rng.below(WATCH) as i32,
        };
        let is_mine = |s: &Self, fd| s.owned.contains_key(&fd);
        let dup3 = self.rng.chance(35);
        let cloexec = dup3 && self.rng.chance(50);
        if old == new {
            let r = if dup3 {
                self.p.dup3(old, new, O_CLOEXEC)
            } else {
                self.p.dup2(old, new)
            };
            let want = match (dup3, is_mine(self, new)) {
                (true, _) => Err(Errno::EINVAL),
                (false, true) => Ok(new),
                (false, false) => Err(Errno::EBADF),
            };
            if r != want {
                self.fail(format!("dup2/3({old}, {new}) = {r:?}, want {want:?}"));
            }
            return;
        }
        let replaced = self.owned.remove(&new);
        if replaced.is_some() {
            self.w.unclaim(new);
        }
        let old_own = self.owned.get(&old).copied();
        let w1 = self.w.word(old);
        let r = if dup3 {
            self.p.dup3(old, new, if cloexec { O_CLOEXEC } else { 0 })
        } else {
            self.p.dup2(old, new)
        };
        let w2 = self.w.word(old);
        let stable = (w1 == w2 && w1 != 0).then_some(w1 & 0xffff_ffff);
        match r {
            Ok(fd) if fd == new => {
                let id = self.installed(new, "dup2");
                if let Some(want) = old_own.map(|o| o.id).or(stable)
                    && id != want
                {
                    self.fail(format!(
                        "dup2({old}, {new}) installed file {id}, want {want}"
                    ));
                }
                self.w.claim(new, id, "dup2");
                self.owned.insert(new, Own { id, cloexec });
                self.check_getfd(new);
            }
            Err(Errno::EBADF) if old_own.is_none() && stable.is_none() => {
                // A free foreign fd: `new` keeps what it had.
                if let Some(o) = replaced {
                    self.w.claim(new, o.id, "dup2 restore");
                    self.owned.insert(new, o);
                    self.verify_owned(new, "failed dup2");
                } else if let Some(id) = self.lookup(new) {
                    self.fail(format!("failed dup2({old}, {new}) left file {id} at {new}"));
                }
            }
            r => self.fail(format!(
                "dup2({old}, {new}) = {r:?} (old own: {old_own:?}, stably file {stable:?})"
            )),
        }
    }

    fn dupfd(&mut self) {
        let Some((old, own)) = self.random_owned() else {
            return;
        };
        let end = self.base + RANGE as i32;
        let Some(want) = (self.base..end).find(|fd| !self.owned.contains_key(fd)) else {
            return;
        };
        let cloexec = self.rng.chance(50);
        let cmd = if cloexec { F_DUPFD_CLOEXEC } else { F_DUPFD };
        let r = self.p.fcntl(old, cmd, self.base as u64);
        if r != Ok(want) {
            self.fail(format!(
                "fcntl({old}, {cmd}, {}) = {r:?}, want the lowest free fd of the range, {want}",
                self.base
            ));
            return;
        }
        let id = self.installed(want, "F_DUPFD");
        if id != own.id {
            self.fail(format!(
                "F_DUPFD of {old} installed file {id}, want {}",
                own.id
            ));
        }
        self.w.claim(want, id, "F_DUPFD");
        self.owned.insert(want, Own { id, cloexec });
        self.check_getfd(want);
    }

    fn close_range(&mut self) {
        let a = self.base + self.rng.below(RANGE) as i32;
        let end = self.base + RANGE as i32;
        let b = a + self.rng.below((end - a) as usize) as i32;
        if self.rng.chance(40) {
            let r = self.p.close_range(a as u32, b as u32, CLOSE_RANGE_CLOEXEC);
            if r != Ok(()) {
                self.fail(format!("close_range({a}, {b}, CLOEXEC) = {r:?}"));
            }
            let fds: Vec<i32> = self.owned.range(a..=b).map(|(&fd, _)| fd).collect();
            for fd in fds {
                self.owned.get_mut(&fd).unwrap().cloexec = true;
                self.check_getfd(fd);
            }
            return;
        }
        let fds: Vec<i32> = self.owned.range(a..=b).map(|(&fd, _)| fd).collect();
        for &fd in &fds {
            self.w.unclaim(fd);
            self.owned.remove(&fd);
        }
        let r = self.p.close_range(a as u32, b as u32, 0);
        if r != Ok(()) {
            self.fail(format!("close_range({a}, {b}, 0) = {r:?}"));
        }
        for fd in a..=b {
            if let Some(id) = self.lookup(fd) {
                self.fail(format!("close_range({a}, {b}) left file {id} at {fd}"));
            }
        }
    }

    fn setfd(&mut self) {
        let Some((fd, _)) = self.random_owned() else {
            return;
        };
        let on = self.rng.chance(50);
        let r = self.p.fcntl(fd, F_SETFD, u64::from(on));
        if r != Ok(0) {
            self.fail(format!("F_SETFD({fd}) = {r:?}"));
        }
        self.owned.get_mut(&fd).unwrap().cloexec = on;
        self.check_getfd(fd);
    }

    fn getfl(&mut self) {
        let Some((fd, own)) = self.random_owned() else {
            return;
        };
        let Some(want) = self
            .p
            .fget(fd)
            .ok()
            .and_then(|f| probe_of(&f).map(|p| p.flags))
        else {
            return self.fail(format!("own fd {fd} has no file with a probe"));
        };
        // Only the fork threads' children change status flags, and only on
        // files they created: this one keeps its open flags.
        let r = self.p.fcntl(fd, F_GETFL, 0);
        if r != Ok(getfl_of(want)) {
            self.fail(format!(
                "F_GETFL({fd}) of file {} = {r:?}, want {:#o}",
                own.id,
                getfl_of(want)
            ));
        }
    }

    fn verify_all(&mut self) {
        let fds: Vec<i32> = self.owned.keys().copied().collect();
        for fd in fds {
            self.verify_owned(fd, "sweep");
        }
    }

    fn foreign_lookup(&mut self) {
        let fd = match self.rng.below(20) {
            0 => self
                .rng
                .pick(&[-1, -100, i32::MIN, i32::MAX, 1_000_000, 1 << 20]),
            1..=3 => (LOW_LIMIT + self.rng.below(WATCH - LOW_LIMIT)) as i32,
            _ => self.rng.below(LOW_LIMIT.min(SHARED_THREADS * LOW_CAP + 8)) as i32,
        };
        self.w.stats.lookups.fetch_add(1, SeqCst);
        let w1 = self.w.word(fd);
        let got = self.lookup(fd);
        let w2 = self.w.word(fd);
        if !(0..WATCH as i32).contains(&fd) {
            if got.is_some() {
                self.fail(format!("lookup of fd {fd} found a file"));
            }
            return;
        }
        if w1 == w2 && w1 != 0 {
            self.w.stats.validated.fetch_add(1, SeqCst);
            let want = w1 & 0xffff_ffff;
            if got != Some(want) {
                self.fail(format!(
                    "lookup of fd {fd}, installed with file {want} (claim {}) throughout, \
                     returned {got:?}",
                    w1 >> 32
                ));
            }
        } else if w1 != w2 {
            self.w.stats.raced.fetch_add(1, SeqCst);
        }
    }
}

// ---------------------------------------------------------------------------
// Fork threads: fork the shared process, then drive the private child with
// exact expectations.
// ---------------------------------------------------------------------------

struct ChildModel {
    fds: BTreeMap<i32, Own>,
    /// F_GETFL expected for files created in this child (nobody else can
    /// reach them).
    getfl: HashMap<u64, i32>,
    created: Vec<Arc<Probe>>,
}

impl ChildModel {
    fn lowest_free(&self, from: i32) -> i32 {
        (from..).find(|fd| !self.fds.contains_key(fd)).unwrap()
    }
}

struct Forker<'w> {
    w: &'w World,
    t: usize,
    h: Process,
    rng: Rng,
}

impl Forker<'_> {
    fn fail(&self, msg: String) {
        self.w.fail(format!("[fork thread {}] {msg}", self.t));
    }

    fn round(&mut self) {
        let before: Vec<u64> = (0..WATCH as i32).map(|fd| self.w.word(fd)).collect();
        let mut child = match self.h.fork() {
            Ok(c) => c,
            Err(e) => return self.fail(format!("fork: {e:?}")),
        };
        self.w.stats.forks.fetch_add(1, SeqCst);
        let mut m = ChildModel {
            fds: BTreeMap::new(),
            getfl: HashMap::new(),
            created: Vec::new(),
        };
        // The copy: every fd has a live file; count the new slots.
        let mut kept: Vec<FileRef> = Vec::new();
        for fd in child.fd_table().open_fds() {
            let fd = fd as i32;
            match child.fget(fd) {
                Ok(f) => {
                    let id = count_install(self.w, &f, fd, Table::Child);
                    inspect(self.w, &f, fd, Table::Child, false);
                    let cloexec = child.fcntl(fd, F_GETFD, 0) == Ok(FD_CLOEXEC);
                    m.fds.insert(fd, Own { id, cloexec });
                    if kept.len() < 4 && self.rng.chance(20) {
                        kept.push(f);
                    }
                }
                Err(e) => self.fail(format!("fork copy: fd {fd} open without a file: {e:?}")),
            }
        }
        // Fds of the parent that were installed throughout the fork are in
        // the copy, with the same file.
        for (fd, &w1) in before.iter().enumerate() {
            let w2 = self.w.word(fd as i32);
            if w1 == w2 && w1 != 0 {
                let want = w1 & 0xffff_ffff;
                let got = m.fds.get(&(fd as i32)).map(|o| o.id);
                if got != Some(want) {
                    self.fail(format!(
                        "fork: parent fd {fd} held file {want} throughout, the copy has {got:?}"
                    ));
                }
            }
        }
        if let Err(e) = child.fd_table().check_invariants() {
            self.fail(format!("fork copy: check_invariants: {e}"));
        }
        let n = 48 + self.rng.below(64);
        for _ in 0..n {
            if self.w.stopped() {
                break;
            }
            self.child_op(&mut child, &mut m);
            self.w.stats.child_ops.fetch_add(1, SeqCst);
            if uvfs::task_work::pending() {
                self.fail("deferred releases left queued after a call".into());
            }
        }
        self.verify_child(&mut child, &m);
        for f in kept {
            inspect(self.w, &f, -1, Table::Child, false);
        }
        drop(child);
        // The child's own files were only ever in its table: the exit of
        // its last thread released them.
        for p in &m.created {
            let want = usize::from(p.opened.load(SeqCst));
            if p.released.load(SeqCst) != want {
                self.fail(format!(
                    "file {} of a dropped child: released {} times, want {want}",
                    p.id,
                    p.released.load(SeqCst)
                ));
            }
        }
    }

    fn verify_child(&self, c: &mut Process, m: &ChildModel) {
        let open: Vec<i32> = c.fd_table().open_fds().iter().map(|&f| f as i32).collect();
        let want: Vec<i32> = m.fds.keys().copied().collect();
        if open != want {
            self.fail(format!("child open fds {open:?}, model {want:?}"));
        }
        for (&fd, o) in &m.fds {
            let got = c.with_file(fd, |f| inspect(self.w, f, fd, Table::Child, false));
            if got != Ok(o.id) {
                self.fail(format!("child fd {fd}: found {got:?}, want file {}", o.id));
            }
            let getfd = c.fcntl(fd, F_GETFD, 0);
            if getfd != Ok(i32::from(o.cloexec)) {
                self.fail(format!(
                    "child F_GETFD({fd}) = {getfd:?}, want {}",
                    o.cloexec
                ));
            }
            if let Some(&fl) = m.getfl.get(&o.id) {
                let got = c.fcntl(fd, F_GETFL, 0);
                if got != Ok(fl) {
                    self.fail(format!("child F_GETFL({fd}) = {got:?}, want {fl:#o}"));
                }
            }
        }
        if let Err(e) = c.fd_table().check_invariants() {
            self.fail(format!("child check_invariants: {e}"));
        }
    }

    fn pick_fd(&mut self, m: &ChildModel) -> i32 {
        if !m.fds.is_empty() && self.rng.chance(75) {
            let i = self.rng.below(m.fds.len());
            *m.fds.keys().nth(i).unwrap()
        } else {
            self.rng.below(100) as i32
        }
    }

    fn expect<T: PartialEq + std::fmt::Debug>(&self, what: String, got: T, want: T) -> bool {
        if got != want {
            self.fail(format!("child {what} = {got:?}, want {want:?}"));
        }
        got == want
    }

    fn child_open(&mut self, c: &mut Process, m: &mut ChildModel, soft: u64) {
        let flags = access_flags(&mut self.rng);
        let probe = self.w.new_probe(flags);
        m.created.push(probe.clone());
        let fail = self.rng.chance(15);
        let ops = probe.clone();
        let r = c.open_with(flags, |o| {
            o.set_ops(ops);
            if fail { Err(Errno::ENOENT) } else { Ok(()) }
        });
        let fd = m.lowest_free(0);
        let want = if fd as u64 >= soft {
            Err(Errno::EMFILE)
        } else if fail {
            Err(Errno::ENOENT)
        } else {
            Ok(fd)
        };
        if self.expect(format!("open({flags:#o})"), r, want) && r.is_ok() {
            probe.opened.store(true, SeqCst);
            probe.installs.fetch_add(1, SeqCst);
            let cloexec = flags & O_CLOEXEC != 0;
            m.fds.insert(
                fd,
                Own {
                    id: probe.id,
                    cloexec,
                },
            );
            m.getfl.insert(probe.id, getfl_of(flags));
        }
    }

    /// Records that `new` now refers to `old`'s file.
    fn child_installed(
        &self,
        c: &mut Process,
        m: &mut ChildModel,
        old: i32,
        new: i32,
        cloexec: bool,
    ) {
        let id = m.fds[&old].id;
        let got = c
            .fget(new)
            .map(|f| count_install(self.w, &f, new, Table::Child));
        if got != Ok(id) {
            self.fail(format!(
                "child fd {new} has {got:?} after a dup of {old} (file {id})"
            ));
        }
        m.fds.insert(new, Own { id, cloexec });
    }

    fn child_op(&mut self, c: &mut Process, m: &mut ChildModel) {
        const SOFT: u64 = 1024;
        match self.rng.below(100) {
            0..=24 => self.child_open(c, m, SOFT),
            25..=39 => {
                let fd = self.pick_fd(m);
                let want = if m.fds.remove(&fd).is_some() {
                    Ok(())
                } else {
                    Err(Errno::EBADF)
                };
                let r = c.close(fd);
                self.expect(format!("close({fd})"), r, want);
            }
            40..=47 => {
                let old = self.pick_fd(m);
                let new = m.lowest_free(0);
                let want = if m.fds.contains_key(&old) {
                    Ok(new)
                } else {
                    Err(Errno::EBADF)
                };
                if self.expect(format!("dup({old})"), c.dup(old), want) && want.is_ok() {
                    self.child_installed(c, m, old, new, false);
                }
            }
            48..=59 => {
                let old = self.pick_fd(m);
                let new = self.pick_fd(m);
                let dup3 = self.rng.chance(40);
                let cloexec = dup3 && self.rng.chance(50);
                let (r, want) = if dup3 {
                    let r = c.dup3(old, new, if cloexec { O_CLOEXEC } else { 0 });
                    let want = if old == new {
                        Err(Errno::EINVAL)
                    } else if m.fds.contains_key(&old) {
                        Ok(new)
                    } else {
                        Err(Errno::EBADF)
                    };
                    (r, want)
                } else {
                    let r = c.dup2(old, new);
                    let want = if m.fds.contains_key(&old) {
                        Ok(new)
                    } else {
                        Err(Errno::EBADF)
                    };
                    (r, want)
                };
                if self.expect(format!("dup2/3({old}, {new}, {cloexec})"), r, want)
                    && r.is_ok()
                    && old != new
                {
                    self.child_installed(c, m, old, new, cloexec);
                }
            }
            60..=66 => {
                let old = self.pick_fd(m);
                let from = self.rng.below(100) as i32;
                let cloexec = self.rng.chance(50);
                let cmd = if cloexec { F_DUPFD_CLOEXEC } else { F_DUPFD };
                let new = m.lowest_free(from);
                let want = if m.fds.contains_key(&old) {
                    Ok(new)
                } else {
                    Err(Errno::EBADF)
                };
                let r = c.fcntl(old, cmd, from as u64);
                if self.expect(format!("fcntl({old}, {cmd}, {from})"), r, want) && r.is_ok() {
                    self.child_installed(c, m, old, new, cloexec);
                }
            }
            67..=71 => {
                let a = self.rng.below(100) as u32;
                let b = a + self.rng.below(8) as u32;
                let cloexec = self.rng.chance(40);
                let flags = if cloexec { CLOSE_RANGE_CLOEXEC } else { 0 };
                let r = c.close_range(a, b, flags);
                self.expect(format!("close_range({a}, {b}, {flags})"), r, Ok(()));
                let fds: Vec<i32> = m.fds.range(a as i32..=b as i32).map(|(&f, _)| f).collect();
                for fd in fds {
                    if cloexec {
                        m.fds.get_mut(&fd).unwrap().cloexec = true;
                    } else {
                        m.fds.remove(&fd);
                    }
                }
            }
            72..=77 => {
                let fd = self.pick_fd(m);
                let on = self.rng.chance(50);
                let r = c.fcntl(fd, F_SETFD, u64::from(on));
                let want = match m.fds.get_mut(&fd) {
                    Some(o) => {
                        o.cloexec = on;
                        Ok(0)
                    }
                    None => Err(Errno::EBADF),
                };
                self.expect(format!("F_SETFD({fd}, {on})"), r, want);
            }
            78..=83 => {
                // Status flags, on files no one outside this child can see.
                let mine: Vec<(i32, u64)> = m
                    .fds
                    .iter()
                    .filter(|(_, o)| m.getfl.contains_key(&o.id))
                    .map(|(&fd, o)| (fd, o.id))
                    .collect();
                if mine.is_empty() {
                    return;
                }
                let (fd, id) = self.rng.pick(&mine);
                let arg = self
                    .rng
                    .pick(&[0, O_APPEND, O_NONBLOCK, O_APPEND | O_NONBLOCK]);
                let r = c.fcntl(fd, F_SETFL, arg as u64);
                self.expect(format!("F_SETFL({fd}, {arg:#o})"), r, Ok(0));
                let fl = m.getfl.get_mut(&id).unwrap();
                *fl = (*fl & !(O_APPEND | O_NONBLOCK)) | arg;
                let fl = *fl;
                self.expect(format!("F_GETFL({fd})"), c.fcntl(fd, F_GETFL, 0), Ok(fl));
            }
            84..=89 => {
                let fd = self.pick_fd(m);
                let want = m.fds.get(&fd).map(|o| o.id).ok_or(Errno::EBADF);
                let w = self.w;
                let r = c.with_file(fd, |f| inspect(w, f, fd, Table::Child, false));
                self.expect(format!("with_file({fd})"), r, want);
            }
            90..=94 => self.emfile_phase(c, m),
            95 => {
                let r = c.exec();
                self.expect("exec".into(), r, Ok(()));
                m.fds.retain(|_, o| !o.cloexec);
                self.verify_child(c, m);
            }
            _ => self.verify_child(c, m),
        }
    }

    /// Lowers the soft limit just above the table's use and checks EMFILE,
    /// then restores it.
    fn emfile_phase(&mut self, c: &mut Process, m: &mut ChildModel) {
        let (soft0, hard) = c.getrlimit_nofile();
        let soft = m.lowest_free(0) as u64 + self.rng.below(3) as u64;
        self.expect(
            format!("setrlimit({soft})"),
            c.setrlimit_nofile(soft, hard),
            Ok(()),
        );
        for _ in 0..4 {
            self.child_open(c, m, soft);
        }
        if let Some((&old, _)) = m.fds.iter().next() {
            let want = if (m.lowest_free(0) as u64) < soft {
                Ok(m.lowest_free(0))
            } else {
                Err(Errno::EMFILE)
            };
            let r = c.dup(old);
            if self.expect(format!("dup({old}) at limit {soft}"), r, want)
                && let Ok(new) = r
            {
                self.child_installed(c, m, old, new, false);
            }
            // dup2(fd, fd) does not look at the limit.
            let new = soft as i32;
            let want = if old == new {
                Ok(new)
            } else {
                Err(Errno::EBADF)
            };
            let r = c.dup2(old, new);
            self.expect(format!("dup2({old}, {new}) at limit {soft}"), r, want);
            let r = c.fcntl(old, F_DUPFD, soft);
            self.expect(
                format!("F_DUPFD({old}, {soft}) at limit {soft}"),
                r,
                Err(Errno::EINVAL),
            );
        }
        self.expect(
            "setrlimit restore".into(),
            c.setrlimit_nofile(soft0, hard),
            Ok(()),
        );
    }

    fn foreign_lookups(&mut self) {
        for _ in 0..16 {
            let fd = self.rng.below(WATCH) as i32;
            let w1 = self.w.word(fd);
            let w = self.w;
            let got = match self.rng.below(2) {
                0 => {
                    let y = self.rng.below(64) == 0;
                    let f = self.h.fget(fd).ok();
                    f.map(|f| inspect(w, &f, fd, Table::Shared, y))
                }
                _ => self
                    .h
                    .with_file(fd, |f| inspect(w, f, fd, Table::Shared, false))
                    .ok(),
            };
            let w2 = self.w.word(fd);
            if w1 == w2 && w1 != 0 && got != Some(w1 & 0xffff_ffff) {
                self.fail(format!(
                    "lookup of fd {fd}, installed with file {} throughout, returned {got:?}",
                    w1 & 0xffff_ffff
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The run.
// ---------------------------------------------------------------------------

fn run(fast: FastPaths, seed: u64, dur: Duration) {
    let pool = uvfs::pool::FilePool::global();
    let pool_objects_before = pool.objects();
    let vfs = Vfs::new(fast);
    let world = World {
        fail: Arc::new(Ledger::default()),
        words: (0..WATCH).map(|_| AtomicU64::new(0)).collect(),
        seq: AtomicU64::new(0),
        next_id: AtomicU64::new(0),
        deadline: Instant::now() + dur,
        progress: Arc::new(AtomicU64::new(0)),
        stats: Stats::default(),
        unvalidated: Mutex::new(Vec::new()),
    };
    let w = &world;
    let root = Process::new(&vfs).expect("Process::new");
    let started = Instant::now();
    let watchdog = Watchdog::start(
        fast,
        seed,
        world.deadline,
        world.progress.clone(),
        world.fail.clone(),
    );

    let owned: Vec<BTreeMap<i32, Own>> = std::thread::scope(|s| {
        let mut shared = Vec::new();
        for t in 0..SHARED_THREADS {
            let p = root.new_thread();
            shared.push(s.spawn(move || {
                let mut wk = Worker {
                    w,
                    t,
                    p,
                    rng: Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f)),
                    owned: BTreeMap::new(),
                    base: (LOW_LIMIT + t * RANGE) as i32,
                };
                let mut i = 0u64;
                // At least MIN_SHARED_OPS whatever the machine's load (the
                // clock only lengthens the run), so the final check that
                // the run exercised everything does not depend on it.
                while !w.stopped()
                    && (i < MIN_SHARED_OPS || !i.is_multiple_of(32) || Instant::now() < w.deadline)
                {
                    wk.op();
                    i += 1;
                    if i.is_multiple_of(32) {
                        w.progress.fetch_add(1, SeqCst);
                    }
                }
                w.stats.ops.fetch_add(i as usize, SeqCst);
                wk.verify_all();
                let owned = std::mem::take(&mut wk.owned);
                drop(wk); // The thread's handle exits; the root keeps the table.
                vfs_pool_flush();
                owned
            }));
        }
        let mut forkers = Vec::new();
        for t in 0..FORK_THREADS {
            let h = root.new_thread();
            forkers.push(s.spawn(move || {
                let mut f = Forker {
                    w,
                    t,
                    h,
                    rng: Rng::new(seed ^ (100 + t as u64).wrapping_mul(0xe703_7ed1_a0b4_28db)),
                };
                let mut rounds = 0;
                while !w.stopped() && (rounds < MIN_FORK_ROUNDS || Instant::now() < w.deadline) {
                    f.round();
                    f.foreign_lookups();
                    rounds += 1;
                    w.progress.fetch_add(1, SeqCst);
                }
                drop(f);
                vfs_pool_flush();
            }));
        }
        // Join explicitly: a scope's implicit wait can return before a
        // thread's thread-locals (its pool magazine) are destroyed.
        let forked: Vec<_> = forkers.into_iter().map(|h| h.join()).collect();
        let owned: Vec<_> = shared.into_iter().map(|h| h.join()).collect();
        if forked.iter().any(Result::is_err) || owned.iter().any(Result::is_err) {
            let l = w.fail.list.lock().unwrap_or_else(|p| p.into_inner());
            panic!(
                "preset {fast}, UVFS_STRESS_SEED={seed:#x}: a thread panicked; violations \
                 recorded before:\n{}",
                l.join("\n")
            );
        }
        owned.into_iter().map(Result::unwrap).collect()
    });

    // Every owned fd holds its file; the table holds nothing else.
    let table = root.fd_table();
    let mut all: BTreeMap<i32, Own> = BTreeMap::new();
    for (t, m) in owned.iter().enumerate() {
        for (&fd, &o) in m {
            if let Some(prev) = all.insert(fd, o) {
                world.fail(format!(
                    "fd {fd} owned by thread {t} and by another ({prev:?})"
                ));
            }
            let word = world.word(fd);
            if word & 0xffff_ffff != o.id {
                world.fail(format!(
                    "fd {fd}: ownership word {word:#x}, owner has file {}",
                    o.id
                ));
            }
            match table.get(fd) {
                Some(f) if probe_of(&f).map(|p| p.id) == Some(o.id) => {}
                Some(f) => world.fail(format!(
                    "fd {fd}: table has file {:?}, owner thread {t} has {}",
                    probe_of(&f).map(|p| p.id),
                    o.id
                )),
                None => world.fail(format!("fd {fd}: owned by thread {t} but not in the table")),
            }
        }
    }
    // A lookup may only ever return a file that was at that fd (with the
    // type-stable pool, not the reused object's new file elsewhere).
    let unvalidated = std::mem::take(&mut *world.unvalidated.lock().unwrap());
    for (fd, p) in &unvalidated {
        if !was_at(p, *fd) {
            world.fail(format!(
                "lookup of fd {fd} returned file {}, which was never at fd {fd}",
                p.id
            ));
        }
    }
    let history_checked = unvalidated.len();
    drop(unvalidated);
    let open: Vec<i32> = table.open_fds().iter().map(|&f| f as i32).collect();
    let want: Vec<i32> = all.keys().copied().collect();
    if open != want {
        world.fail(format!("table open fds {open:?} != owned fds {want:?}"));
    }
    if let Err(e) = table.check_invariants() {
        world.fail(format!("final check_invariants: {e}"));
    }
    if table.users() != 1 {
        world.fail(format!("{} users left on the table, want 1", table.users()));
    }

    // The last user exits: every file is released and freed, which drops
    // its probe (whose `Drop` checks the file's account).
    drop(root);
    assert!(!uvfs::task_work::pending());
    let live = world.fail.live.load(SeqCst);
    if live != 0 {
        world.fail(format!(
            "{live} file(s) never freed after every process exited (leaked references)"
        ));
    }
    let opened = world.fail.opened.load(SeqCst);
    let failed = world.fail.never_opened.load(SeqCst);

    // No pool object leaked.
    pool.flush_thread_cache();
    if fast.typesafe_files {
        if pool.objects() != pool.depot_len() {
            world.fail(format!(
                "file pool: {} objects carved, {} back in the depot",
                pool.objects(),
                pool.depot_len()
            ));
        }
    } else if pool.objects() != pool_objects_before {
        world.fail(format!(
            "heap preset touched the file pool: {} -> {} objects",
            pool_objects_before,
            pool.objects()
        ));
    }

    let st = &world.stats;
    eprintln!(
        "uvfs stress [{fast}]: {:.2}s, {} shared ops, {} opens ({opened} opened files, {failed} \
         failed opens), {} closes, {} lookups ({} validated exactly, {} raced), {} forks, \
         {} child ops, {} lookup hits checked late against fd history, pool {} objects",
        started.elapsed().as_secs_f64(),
        st.ops.load(SeqCst),
        st.opens.load(SeqCst),
        st.closes.load(SeqCst),
        st.lookups.load(SeqCst),
        st.validated.load(SeqCst),
        st.raced.load(SeqCst),
        st.forks.load(SeqCst),
        st.child_ops.load(SeqCst),
        history_checked,
        pool.objects(),
    );
    drop(watchdog);
    let failures = std::mem::take(&mut *world.fail.list.lock().unwrap());
    assert!(
        failures.is_empty(),
        "preset {fast}, UVFS_STRESS_SEED={seed:#x}: {} violation(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The run must have exercised what it checks.
    assert!(
        st.opens.load(SeqCst) > 0
            && st.closes.load(SeqCst) > 0
            && st.validated.load(SeqCst) > 0
            && st.forks.load(SeqCst) > 0
            && failed > 0,
        "preset {fast}: the run did too little to check anything"
    );
}

/// Turns a hang (a lookup spinning on a file freed while still installed,
/// a lost wakeup, a deadlock) into a failure that shows what was seen: past
/// the deadline, no shared op and no fork round anywhere for
/// [`HANG_SECS`]. (A loaded machine slows the threads; it does not stop all
/// eight of them for a minute.)
struct Watchdog {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Seconds without any progress, past the deadline, that count as a hang.
const HANG_SECS: u64 = 60;

impl Watchdog {
    fn start(
        fast: FastPaths,
        seed: u64,
        deadline: Instant,
        progress: Arc<AtomicU64>,
        fail: Arc<Ledger>,
    ) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            let (mut seen, mut since) = (progress.load(SeqCst), Instant::now());
            while !flag.load(SeqCst) {
                let now = progress.load(SeqCst);
                if now != seen {
                    (seen, since) = (now, Instant::now());
                } else if Instant::now() > deadline
                    && since.elapsed() > Duration::from_secs(HANG_SECS)
                {
                    let l = fail.list.lock().unwrap_or_else(|p| p.into_inner());
                    eprintln!(
                        "uvfs stress [{fast}], UVFS_STRESS_SEED={seed:#x}: no progress for \
                         {HANG_SECS}s past the deadline; violations so far:\n{}",
                        l.join("\n")
                    );
                    std::process::exit(101);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Watchdog {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn vfs_pool_flush() {
    uvfs::pool::FilePool::global().flush_thread_cache();
}

fn env_seed() -> u64 {
    match std::env::var("UVFS_STRESS_SEED") {
        Ok(s) => {
            let s = s.trim();
            let r = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            r.expect("UVFS_STRESS_SEED: a decimal or 0x-hex u64")
        }
        Err(_) => DEFAULT_SEED,
    }
}

#[test]
fn stress_shared_fd_table() {
    let secs: f64 = std::env::var("UVFS_STRESS_SECS")
        .ok()
        .map(|s| s.parse().expect("UVFS_STRESS_SECS: seconds"))
        .unwrap_or(2.0);
    let seed = env_seed();
    // Presets run one after the other: the file pool is process-global.
    let presets: Vec<FastPaths> = match std::env::var("UVFS_STRESS_PRESETS") {
        Ok(s) => s
            .split(';')
            .map(|p| FastPaths::parse(p).expect("UVFS_STRESS_PRESETS: `;`-separated presets"))
            .collect(),
        Err(_) => vec![FastPaths::seeds(), FastPaths::stock()],
    };
    eprintln!(
        "uvfs stress: UVFS_STRESS_SEED={seed:#x}, {secs}s per preset, presets {}",
        presets
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    );
    for fast in presets {
        run(fast, seed, Duration::from_secs_f64(secs));
    }
}
