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

#[path = "fdtable_stress/fork.rs"]
mod fork;
#[path = "fdtable_stress/shared.rs"]
mod shared;

use fork::*;
use shared::*;

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
