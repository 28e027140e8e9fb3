//! The fork gate: what keeps `fork` from copying the process while a thread
//! is inside uvfs (holding one of its locks, which would stay held forever
//! in the child), without a process-wide lock on every call. It works as
//! Linux's `percpu_rw_semaphore`, per thread instead of per CPU: a thread
//! entering uvfs raises a flag of its own (no cache line shared with other
//! threads) and checks that no fork is pending; `fork`'s prepare handler
//! marks a fork pending and waits until every thread's flag is down. A
//! thread that finds a fork pending lowers its flag and waits for the fork
//! to finish.
//!
//! The two sides pair a store and a load each: a thread raises its flag
//! then reads the pending mark, the forker raises the mark then reads the
//! flags, so at least one of them sees the other. Each side needs a full
//! fence between its store and its load. On the thread's side, which every
//! uvfs call crosses, that fence (a locked instruction, tens of cycles) is
//! the gate's whole cost; where the kernel offers `membarrier`'s private
//! expedited command (registered at load), the thread's side is only a
//! compiler fence and the forker's side pays for both with one
//! `membarrier` call, which runs a full fence on every CPU running a
//! thread of the process (the asymmetric fence liburcu and folly use).
//! Without it, both sides use a `SeqCst` fence.
//!
//! The same gate lets a thread's first uvfs call attach its handle to the
//! fd table of the thread that built uvfs (the *owner*, whose handle is the
//! table's only user while it is alone, so its calls take the library's
//! single-user paths): [`Gate::attach`] marks an attach pending and waits until
//! the owner's flag is down; the owner, and only it, treats that mark as
//! it treats a pending fork. Its next entry reads the mark with acquire
//! order (the attach clears it with a release), whether it finds the mark
//! already clear or waits for it to clear, so it sees the table's second
//! user before it touches the table again; and the attach reads the
//! owner's flag after its own mark with the same paired fences as a fork,
//! so either the owner sees the mark or the attach sees the owner inside
//! and waits for it to leave. The [`SHARED`] mark, set by every thread's
//! first entry but the first thread's, hands the placeholder cache over
//! from the owner's lock-free use to the lock in the same way
//! ([`Gate::take`]), and back when the owner is again the only thread with
//! a slot ([`Gate::give_back`]).
//!
//! A thread takes its slot on its first call and gives it back at its
//! exit, both outside uvfs, under the slot list's lock: the flags do not
//! cover that lock, so `fork`'s prepare handler takes it too and keeps it
//! until the release handlers. Before, it let go of it before the fork, and
//! a thread could take it in between: the child then had the list locked
//! by a thread it does not have, and its own next fork (or a new thread's
//! first call) waited for ever. The tree's switch met that
//! (docs/preload-tree.md): the first of its two forks copied the lock
//! held by a thread making its first call, and the second fork, in the
//! intermediate child, hung in its prepare handler.
//!
//! ## The models
//! The gate is a [`Gate`] value (one static in the shim) built from the
//! crate's facade ([`crate::sync`]), so `fork_gate/loom_tests.rs` runs
//! this code under loom: a thread entering against a fork's prepare, an
//! attach against the owner's entries, the [`SHARED`] hand-over of the
//! placeholder cache, two threads' first calls (the build race), and a
//! slot taken and given back against a fork (the list's lock kept across
//! it; `fork_gate/fork_tests.rs` forks for real). Loom cannot run `membarrier`; the models use what it guarantees. The
//! call runs a full fence on every CPU running a thread of the process,
//! at some point between the call's start and its return (a thread not
//! running passes through the scheduler's full barrier before it runs
//! again). Take such a thread's two accesses around its compiler fence,
//! store S then load L: that full fence lands before S, between S and L,
//! or after L. Before S: the forker's mark (stored before the call) is
//! visible to L. After L: S is visible to the forker's loads after the
//! call. Between: exactly a full fence between S and L, paired with the
//! forker's own. In every case the outcome is one that a `SeqCst` fence
//! at the compiler fence and another in place of `membarrier` allow, and
//! that pair forbids the store-buffering outcome the gate must exclude
//! (neither side seeing the other's store). So under `cfg(loom)` the
//! light fence is `fence(SeqCst)` and `membarrier` is `fence(SeqCst)`
//! ([`light_fence`], [`Gate::heavy_fence`]). The symmetric fallback needs
//! no such argument: it is `fence(SeqCst)` on both sides in every build,
//! so its models check the shipped instructions' orderings as they are.
//! (Loom treats a `SeqCst` load or store as acquire/release but models a
//! `SeqCst` fence fully, which is why the fallback uses fences rather than
//! `SeqCst` accesses.)

use crate::sync::atomic::{AtomicBool, AtomicU8, Ordering, fence};
use crate::sync::{ForkGuard, ForkLock, Mutex, RawLock, lock, yield_now};

// (The path spelled out: the fuzz target includes this file by path,
// which would otherwise look for the models beside it.)
#[cfg(all(test, loom))]
#[path = "fork_gate/loom_tests.rs"]
mod loom_tests;

#[cfg(all(test, not(loom)))]
#[path = "fork_gate/fork_tests.rs"]
mod fork_tests;

/// One thread's flag; slots are reused after their thread exits. Each on
/// a cache line of its own (128 bytes: the line and the one the hardware
/// prefetches with it): every uvfs call writes its thread's flag twice,
/// and slots made side by side by the allocator shared a line, which then
/// moved between the CPUs of threads that share nothing else.
#[repr(align(128))]
pub(crate) struct Slot {
    inside: AtomicBool,
    taken: AtomicBool,
}

/// A fork is pending: no thread may enter.
pub(crate) const FORK: u8 = 1;
/// A thread is attaching to the owner's handle: the owner may not enter.
pub(crate) const ATTACH: u8 = 2;
/// A second thread has taken a slot: the owner no longer takes the
/// placeholder cache without its lock (cleared by [`Gate::give_back`] when
/// the owner is the only thread with a slot again).
pub(crate) const SHARED: u8 = 4;

/// What a thread waits for on entry: [`FORK`] for every thread, [`ATTACH`]
/// too for the owner.
#[inline]
pub(crate) fn mask(owner: bool) -> u8 {
    if owner { FORK | ATTACH } else { FORK }
}

/// Whether a call may take the placeholder cache without its lock: the
/// owner's, when its entry read the gate's word (`word`) without the
/// [`SHARED`] mark (see [`Gate::take`]).
#[inline]
pub(crate) fn solo(owner: bool, word: u8) -> bool {
    owner && word & SHARED == 0
}

/// The gate: the threads' slots and what is pending. On cache lines of its
/// own: every uvfs call reads its word, and a static written often beside
/// it would take the line away from every reader.
#[repr(align(128))]
pub(crate) struct Gate {
    /// Whether `membarrier`'s private expedited command is registered for
    /// this process: then the threads' side of the gate needs no fence.
    /// Set once before any second thread exists (the library constructor)
    /// and never again, so not part of any protocol: std's atomic even
    /// under loom (a model sets it before starting its threads).
    asymmetric: std::sync::atomic::AtomicBool,
    /// Every slot ever handed out (leaked: a slot is 128 bytes, and slots
    /// are reused). `fork`'s prepare handler holds its lock until the
    /// release handlers ([`Gate::before_fork`]): a thread taking or giving
    /// back a slot holds it outside uvfs, where the gate's flags do not
    /// see it, and a fork that copied it held would leave the child's
    /// list locked for good.
    slots: ForkLock<Vec<&'static Slot>>,
    /// Whether [`Gate::before_fork`] kept the slot list's lock, for
    /// [`Gate::after_fork`] to give back (written only by the fork lock's
    /// holder; [`Gate::prepare_fork`] alone does not keep it).
    slots_kept: AtomicBool,
    /// What is pending: [`FORK`] (no thread may enter) and [`ATTACH`] (the
    /// owner may not enter); and [`SHARED`] (a thread other than the owner
    /// holds a slot).
    word: AtomicU8,
    /// Held while the root handle is built or attached to ([`Gate::attach`]),
    /// always from inside the gate (so never across a fork).
    attach_lock: Mutex<()>,
    /// Held by the forking thread from its prepare handler until its
    /// release handler (in the parent and in the child): a thread that
    /// found a fork pending waits on it.
    fork_lock: RawLock,
}

/// The process's gate.
#[cfg(not(loom))]
static GATE: Gate = Gate::new();

/// The process's gate.
#[cfg(not(loom))]
pub(crate) fn gate() -> &'static Gate {
    &GATE
}

/// Registers the process for `membarrier`'s private expedited command
/// (from the library constructor, while the process has one thread: the
/// kernel then registers without waiting for a grace period). Without it
/// (an old kernel, a sandbox without the call) the gate keeps its
/// symmetric fences.
#[cfg(not(any(loom, fuzzing)))]
pub(crate) fn at_load() {
    use rustix::thread::{MembarrierCommand, membarrier, membarrier_query};
    if membarrier_query().contains_command(MembarrierCommand::PrivateExpedited)
        && membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
    {
        GATE.asymmetric
            .store(true, std::sync::atomic::Ordering::Release);
    }
}

/// The threads' half of the fence, between a thread's flag store and its
/// read of the gate's word (see the module doc). With `membarrier`
/// (`asymmetric`), only a compiler fence, the forker's `membarrier` being
/// the full fence; under loom, `fence(SeqCst)` (the model's reading of
/// the pair). Without it, a `SeqCst` fence.
#[inline(always)]
fn light_fence(asymmetric: bool) {
    if asymmetric {
        #[cfg(not(loom))]
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        #[cfg(loom)]
        fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// A thread's slot (its flag), taken on the thread's first entry and given
/// back when dropped (the thread's state is destroyed at its exit).
pub(crate) struct Mine(&'static Slot);

impl Mine {
    /// The slot itself.
    pub(crate) fn slot(&self) -> &'static Slot {
        self.0
    }

    /// Keeps the slot taken for good (the owner's: an attach may wait on
    /// its flag after the owner's thread is gone, and must then read the
    /// owner's own last store, not a later thread's).
    pub(crate) fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Mine {
    fn drop(&mut self) {
        self.0.inside.store(false, Ordering::SeqCst);
        self.0.taken.store(false, Ordering::Release);
    }
}

/// Inside uvfs until dropped.
pub(crate) enum Inside<'g> {
    /// With this thread's flag raised.
    Flagged(&'static Slot),
    /// With every other thread held out, as for a fork (a thread whose
    /// slot is gone: its thread-locals are being destroyed at exit).
    Alone(&'g Gate),
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        match self {
            Inside::Flagged(s) => s.inside.store(false, Ordering::Release),
            Inside::Alone(g) => g.after_fork(),
        }
    }
}

impl Gate {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Gate {
        Gate {
            asymmetric: std::sync::atomic::AtomicBool::new(false),
            slots: ForkLock::new(Vec::new()),
            slots_kept: AtomicBool::new(false),
            word: AtomicU8::new(0),
            attach_lock: Mutex::new(()),
            fork_lock: RawLock::new(),
        }
    }

    /// A gate for a model, with `membarrier`'s asymmetric fence taken as
    /// registered or not.
    #[cfg(loom)]
    pub(crate) fn new(asymmetric: bool) -> Gate {
        Gate {
            asymmetric: std::sync::atomic::AtomicBool::new(asymmetric),
            slots: ForkLock::new(Vec::new()),
            slots_kept: AtomicBool::new(false),
            word: AtomicU8::new(0),
            attach_lock: Mutex::new(()),
            fork_lock: RawLock::new(),
        }
    }

    /// This thread's slot, taken on its first call. Every thread but the
    /// first to take one marks the process [`SHARED`] for good and waits
    /// until the owner (`owner()`, if there is one yet) is outside uvfs:
    /// the owner takes the placeholder cache without its lock only while
    /// its entry read the mark clear, so after this wait its unlocked
    /// accesses are over and ordered before this thread's first call.
    /// (An owner that `owner()` does not show yet is still in the call that
    /// builds the root, which was not `solo`; the store that publishes it
    /// and this thread's read of it pair with the gate's fences like a
    /// flag and the mark, so its next entry reads the mark.)
    pub(crate) fn take(&self, owner: impl FnOnce() -> Option<&'static Slot>) -> Mine {
        let (slot, first) = self.take_slot();
        if !first {
            self.word.fetch_or(SHARED, Ordering::SeqCst);
            self.heavy_fence();
            if let Some(o) = owner() {
                while o.inside.load(Ordering::SeqCst) {
                    yield_now();
                }
            }
        }
        Mine(slot)
    }

    /// Gives a thread's slot back at its exit (outside uvfs) and, when no
    /// thread but the owner (`owner`) holds a slot any more, clears
    /// [`SHARED`]: the placeholder cache goes back to the owner's
    /// lock-free use, as a Linux `files_struct` whose count falls back to
    /// one goes back to its single-user paths. Under the slot list's lock,
    /// so a thread taking a slot meanwhile either is seen here (and the
    /// mark stays) or takes it after the clearing (and sets the mark again,
    /// then waits for the owner to leave, as on a first hand-over). The
    /// clearing is a release: the owner's entry that reads the mark clear
    /// (with acquire) is ordered after every use of the cache by the
    /// threads that gave their slots back (each one's under this lock,
    /// after its last call).
    pub(crate) fn give_back(&self, mine: Mine, owner: Option<&'static Slot>) {
        let all = self.slots();
        drop(mine);
        let Some(owner) = owner else {
            return;
        };
        let others = all
            .iter()
            .any(|s| !std::ptr::eq(*s, owner) && s.taken.load(Ordering::Acquire));
        if !others {
            self.word.fetch_and(!SHARED, Ordering::SeqCst);
        }
    }

    fn slots(&self) -> ForkGuard<'_, Vec<&'static Slot>> {
        self.slots.lock()
    }

    /// A free slot, or a new one; whether it is the first slot ever taken.
    fn take_slot(&self) -> (&'static Slot, bool) {
        let mut all = self.slots();
        for s in all.iter() {
            if s.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return (s, false);
            }
        }
        let s: &'static Slot = Box::leak(Box::new(Slot {
            inside: AtomicBool::new(false),
            taken: AtomicBool::new(true),
        }));
        all.push(s);
        (s, all.len() == 1)
    }

    /// Enters uvfs with this thread's slot: waits while something in `mask`
    /// is pending ([`FORK`] for every thread, [`ATTACH`] too for the owner).
    /// `None` (a thread whose state is gone, its thread-locals being
    /// destroyed at exit) holds every other thread out until the result is
    /// dropped, as a fork does: such a call may then use the owner's handle.
    /// Also gives the gate's word as read on the way in (its [`SHARED`] bit).
    /// (Inlined into every call's path: the first attempt's flag store,
    /// fence and load; the rest, rare, out of line.)
    #[inline(always)]
    pub(crate) fn enter(&self, mine: Option<&Mine>, mask: u8) -> (Inside<'_>, u8) {
        let Some(&Mine(slot)) = mine else {
            return self.enter_alone();
        };
        let asymmetric = self.asymmetric.load(std::sync::atomic::Ordering::Relaxed);
        match self.try_enter(slot, mask, asymmetric) {
            Ok(word) => (Inside::Flagged(slot), word),
            Err(pending) => self.enter_after_wait(slot, mask, asymmetric, pending),
        }
    }

    /// [`Gate::enter`] without a slot.
    #[cold]
    #[inline(never)]
    fn enter_alone(&self) -> (Inside<'_>, u8) {
        self.before_fork();
        (Inside::Alone(self), self.word.load(Ordering::Acquire))
    }

    /// [`Gate::enter`] after a first attempt found `pending`.
    #[cold]
    #[inline(never)]
    fn enter_after_wait(
        &self,
        slot: &'static Slot,
        mask: u8,
        asymmetric: bool,
        mut pending: u8,
    ) -> (Inside<'_>, u8) {
        loop {
            self.wait(pending, mask);
            match self.try_enter(slot, mask, asymmetric) {
                Ok(word) => return (Inside::Flagged(slot), word),
                Err(p) => pending = p,
            }
        }
    }

    /// One attempt to enter: raises the flag, then reads the word; the
    /// word if nothing in `mask` is pending (the flag stays up: the caller
    /// is inside), else what is pending (the flag lowered again).
    #[inline(always)]
    fn try_enter(&self, slot: &Slot, mask: u8, asymmetric: bool) -> Result<u8, u8> {
        // The fence pairs with the other side's (see the module doc); with
        // `membarrier` it only keeps the compiler from swapping the two.
        // Acquire: a clear mark read from an attach's clearing orders the
        // attach before this call.
        slot.inside.store(true, Ordering::Relaxed);
        light_fence(asymmetric);
        let word = self.word.load(Ordering::Acquire);
        let pending = word & mask;
        if pending == 0 {
            // What the forker does between a fork and the mark's lowering
            // (the child's copy) is ordered before this thread's uvfs work
            // by the fork lock, taken in `wait` when the mark was seen; on
            // a clear mark nothing of the forker's needs ordering here.
            return Ok(word);
        }
        slot.inside.store(false, Ordering::SeqCst);
        Err(pending)
    }

    /// Waits until what `try_enter` found `pending` is over.
    fn wait(&self, pending: u8, mask: u8) {
        if pending & FORK != 0 {
            self.fork_lock.lock();
            self.fork_lock.unlock();
        }
        // An attach holds the owner out for a few microseconds (no lock
        // is taken here: one held outside the gate could be copied into
        // a fork child held).
        while self.word.load(Ordering::Acquire) & mask & ATTACH != 0 {
            yield_now();
        }
    }

    /// Runs `f` under the attach lock (one thread at a time builds or
    /// attaches to the root handle), called from inside the gate. If
    /// `owner` (read under the lock) names the slot of the thread whose
    /// handle `f` attaches to, first marks an attach pending and waits until
    /// the owner is outside uvfs, where it stays until `f` returns: `f` may
    /// then reach the owner's handle as its only user.
    pub(crate) fn attach<R>(
        &self,
        owner: impl FnOnce() -> Option<&'static Slot>,
        f: impl FnOnce() -> R,
    ) -> R {
        let _lock = lock(&self.attach_lock);
        let Some(owner) = owner() else {
            return f();
        };
        struct Clear<'a>(&'a Gate);
        impl Drop for Clear<'_> {
            fn drop(&mut self) {
                self.0.end_attach();
            }
        }
        self.begin_attach();
        let _clear = Clear(self);
        while owner.inside.load(Ordering::SeqCst) {
            yield_now();
        }
        f()
    }

    /// The first step of an attach: marks it pending, with the forker's
    /// half of the fence (then the owner's flag, read next, is the one
    /// to wait on).
    pub(crate) fn begin_attach(&self) {
        self.word.fetch_or(ATTACH, Ordering::SeqCst);
        self.heavy_fence();
    }

    /// The last step of an attach: the owner may enter again (and its
    /// next entry is ordered after everything the attach did).
    pub(crate) fn end_attach(&self) {
        self.word.fetch_and(!ATTACH, Ordering::SeqCst);
    }

    /// The gate's word as it stands (for checks).
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub(crate) fn word(&self) -> u8 {
        self.word.load(Ordering::SeqCst)
    }

    /// How many slots were ever made (for checks: slots are reused).
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub(crate) fn slot_count(&self) -> usize {
        self.read_slots(Vec::len)
    }

    /// Reads the slot list for a check: through the lock, or, while
    /// [`Gate::before_fork`] keeps it (an alone call or a fork in progress,
    /// made by the fuzz target's one thread, the checker), directly: taking
    /// the lock then would wait for ever on the checker's own hold (the
    /// fuzz target hung there from d4c0e4b on).
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    fn read_slots<R>(&self, f: impl FnOnce(&Vec<&'static Slot>) -> R) -> R {
        if self.slots_kept.load(Ordering::Relaxed) {
            // SAFETY: kept by `before_fork` and not yet given back by
            // `after_fork`; the checks run on the thread that kept it (the
            // fuzz target has one thread).
            unsafe { self.slots.read_kept(f) }
        } else {
            f(&self.slots())
        }
    }

    /// One attempt to enter with `mine` (the fuzz target's single thread
    /// steps the gate with it; [`Gate::enter`] loops on the same step):
    /// inside, with the word read on the way in, or what is pending.
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub(crate) fn attempt(&self, mine: &Mine, mask: u8) -> Result<(Inside<'_>, u8), u8> {
        let asymmetric = self.asymmetric.load(std::sync::atomic::Ordering::Relaxed);
        self.try_enter(mine.0, mask, asymmetric)
            .map(|word| (Inside::Flagged(mine.0), word))
    }

    /// The forker's half of the fence: with [`Gate::asymmetric`],
    /// `membarrier` (the other threads' half too, see the module doc;
    /// under loom `fence(SeqCst)`); else a `SeqCst` fence. A failing
    /// `membarrier` means the gate cannot work: stops loudly.
    fn heavy_fence(&self) {
        // (The fuzz target, built without rustix, never registers.)
        #[cfg(not(any(loom, fuzzing)))]
        if self.asymmetric.load(std::sync::atomic::Ordering::Relaxed) {
            if rustix::thread::membarrier(rustix::thread::MembarrierCommand::PrivateExpedited)
                .is_err()
            {
                // The kernel refuses the command only to a process that did
                // not register; the flags read next could then miss a thread
                // inside uvfs, which would keep using what the caller is
                // about to change (or hold a lock a fork child would
                // inherit).
                let _ = rustix::io::write(
                    rustix::stdio::stderr(),
                    b"uvfs-preload: membarrier failed after registration; cannot hold threads out of uvfs\n",
                );
                std::process::abort();
            }
            return;
        }
        fence(Ordering::SeqCst);
    }

    /// `fork`'s prepare handler: marks a fork pending, waits until no
    /// thread is inside uvfs (the forking thread is not: `fork` is never
    /// called from inside the shim), and keeps the slot list locked until
    /// [`Gate::after_fork`]. A thread's first call takes its slot, and its
    /// exit gives it back, outside uvfs: the flags cannot hold those out,
    /// the list's lock does. (Held while the flags are waited for: no
    /// thread inside uvfs takes it.)
    pub(crate) fn before_fork(&self) {
        self.prepare_fork();
        let all = self.slots();
        for s in all.iter() {
            while s.inside.load(Ordering::SeqCst) {
                yield_now();
            }
        }
        all.keep();
        self.slots_kept.store(true, Ordering::Relaxed);
    }

    /// The first step of `fork`'s prepare handler: takes the fork lock and
    /// marks a fork pending, with the forker's half of the fence (then the
    /// flags, read next, are the ones to wait on).
    pub(crate) fn prepare_fork(&self) {
        self.fork_lock.lock();
        self.word.fetch_or(FORK, Ordering::SeqCst);
        self.heavy_fence();
    }

    /// Frees every slot (the fuzz target makes a gate per input; the
    /// shim's is static and never freed).
    ///
    /// # Safety
    /// No [`Mine`] or [`Inside`] of this gate is alive, and none of its
    /// slots is reached again.
    #[cfg(fuzzing)]
    pub(crate) unsafe fn free_slots(&self) {
        for s in self.slots().drain(..) {
            // SAFETY: every slot came from `Box::leak` in `take_slot`, and
            // the caller promises nothing reaches it any more.
            drop(unsafe { Box::from_raw(std::ptr::from_ref(s).cast_mut()) });
        }
    }

    /// How many threads have their flag raised (for checks).
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub(crate) fn flags_up(&self) -> usize {
        self.read_slots(|all| {
            all.iter()
                .filter(|s| s.inside.load(Ordering::SeqCst))
                .count()
        })
    }

    /// `fork`'s release handler, in the parent and in the child: gives
    /// back the slot list's lock if [`Gate::before_fork`] kept it (in the
    /// child, the forking thread kept it: it is the child's only thread),
    /// then lets threads in again.
    pub(crate) fn after_fork(&self) {
        if self.slots_kept.swap(false, Ordering::Relaxed) {
            self.slots.unlock_kept();
        }
        self.word.fetch_and(!FORK, Ordering::SeqCst);
        self.fork_lock.unlock();
    }
}
