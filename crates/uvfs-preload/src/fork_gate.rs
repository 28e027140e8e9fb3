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
//! Without it, both sides use `SeqCst`.
//!
//! The same gate lets a thread's first uvfs call attach its handle to the
//! fd table of the thread that built uvfs (the *owner*, whose handle is the
//! table's only user while it is alone, so its calls take the library's
//! single-user paths): [`attach`] marks an attach pending and waits until
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
//! ([`Mine::take`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering, compiler_fence};

/// Whether `membarrier`'s private expedited command is registered for
/// this process: then the threads' side of the gate needs no fence.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

/// Registers the process for `membarrier`'s private expedited command
/// (from the library constructor, while the process has one thread: the
/// kernel then registers without waiting for a grace period). Without it
/// (an old kernel, a sandbox without the call) the gate keeps its
/// symmetric fences.
pub(crate) fn at_load() {
    use rustix::thread::{MembarrierCommand, membarrier, membarrier_query};
    if membarrier_query().contains_command(MembarrierCommand::PrivateExpedited)
        && membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
    {
        ASYMMETRIC.store(true, Ordering::Release);
    }
}

/// One thread's flag; slots are reused after their thread exits.
pub(crate) struct Slot {
    inside: AtomicBool,
    taken: AtomicBool,
}

/// Every slot ever handed out (leaked: a slot is two bytes, and slots are
/// reused).
static SLOTS: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// What is pending: [`FORK`] (no thread may enter) and [`ATTACH`] (the
/// owner may not enter); and [`SHARED`], a mark that is never cleared.
static GATE: AtomicU8 = AtomicU8::new(0);

/// A fork is pending: no thread may enter.
pub(crate) const FORK: u8 = 1;
/// A thread is attaching to the owner's handle: the owner may not enter.
pub(crate) const ATTACH: u8 = 2;
/// A second thread has taken a slot (set for good): the owner no longer
/// takes the placeholder cache without its lock.
pub(crate) const SHARED: u8 = 4;

/// Held while the root handle is built or attached to ([`attach`]), always
/// from inside the gate (so never across a fork).
static ATTACH_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held by the forking thread from its prepare handler until its release
/// handler (in the parent and in the child): a thread that found a fork
/// pending waits on it.
static FORK_LOCK: Lock = Lock(std::cell::UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));

struct Lock(std::cell::UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads.
unsafe impl Sync for Lock {}

impl Lock {
    fn lock(&self) {
        // SAFETY: a statically initialized normal mutex, never destroyed.
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
    }

    fn unlock(&self) {
        // SAFETY: as in `lock`; called by the thread that locked it (in a
        // fork child, the only thread, which locked it before the fork).
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
}

/// A thread's slot (its flag), taken on the thread's first entry and given
/// back when dropped (the thread's state is destroyed at its exit).
pub(crate) struct Mine(&'static Slot);

impl Mine {
    /// This thread's slot, taken on its first call. Every thread but the
    /// first to take one marks the process [`SHARED`] for good and waits
    /// until the owner (`owner()`, if there is one yet) is outside uvfs:
    /// the owner takes the placeholder cache without its lock only while
    /// its entry read the mark clear, so after this wait its unlocked
    /// accesses are over and ordered before this thread's first call.
    pub(crate) fn take(owner: impl FnOnce() -> Option<&'static Slot>) -> Mine {
        let (slot, first) = take_slot();
        if !first {
            GATE.fetch_or(SHARED, Ordering::SeqCst);
            fence_others();
            if let Some(o) = owner() {
                while o.inside.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
            }
        }
        Mine(slot)
    }

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

fn slots() -> std::sync::MutexGuard<'static, Vec<&'static Slot>> {
    SLOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A free slot, or a new one; whether it is the first slot ever taken.
fn take_slot() -> (&'static Slot, bool) {
    let mut all = slots();
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

/// Inside uvfs until dropped.
pub(crate) enum Inside {
    /// With this thread's flag raised.
    Flagged(&'static Slot),
    /// With every other thread held out, as for a fork (a thread whose
    /// slot is gone: its thread-locals are being destroyed at exit).
    Alone,
}

impl Drop for Inside {
    fn drop(&mut self) {
        match self {
            Inside::Flagged(s) => s.inside.store(false, Ordering::Release),
            Inside::Alone => after_fork(),
        }
    }
}

/// Enters uvfs with this thread's slot: waits while something in `mask`
/// is pending ([`FORK`] for every thread, [`ATTACH`] too for the owner).
/// `None` (a thread whose state is gone, its thread-locals being
/// destroyed at exit) holds every other thread out until the result is
/// dropped, as a fork does: such a call may then use the owner's handle.
/// Also gives the gate's word as read on the way in (its [`SHARED`] bit).
#[inline]
pub(crate) fn enter(mine: Option<&Mine>, mask: u8) -> (Inside, u8) {
    let Some(&Mine(slot)) = mine else {
        before_fork();
        return (Inside::Alone, GATE.load(Ordering::Acquire));
    };
    let asymmetric = ASYMMETRIC.load(Ordering::Relaxed);
    loop {
        let gate = if asymmetric {
            // The other side's `membarrier` is the full fence between this
            // store and this load (see the module doc); the compiler must
            // keep them in this order. Acquire: a clear mark read from an
            // attach's clearing orders the attach before this call.
            slot.inside.store(true, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            GATE.load(Ordering::Acquire)
        } else {
            slot.inside.store(true, Ordering::SeqCst);
            GATE.load(Ordering::SeqCst)
        };
        let pending = gate & mask;
        if pending == 0 {
            // What the forker does between a fork and the mark's lowering
            // (the child's copy) is ordered before this thread's uvfs work
            // by the fork lock, taken below when the mark was seen; on a
            // clear mark nothing of the forker's needs ordering here.
            return (Inside::Flagged(slot), gate);
        }
        slot.inside.store(false, Ordering::SeqCst);
        if pending & FORK != 0 {
            FORK_LOCK.lock();
            FORK_LOCK.unlock();
        }
        // An attach holds the owner out for a few microseconds (no lock
        // is taken here: one held outside the gate could be copied into
        // a fork child held).
        while GATE.load(Ordering::Acquire) & mask & ATTACH != 0 {
            std::thread::yield_now();
        }
    }
}

fn attach_lock() -> std::sync::MutexGuard<'static, ()> {
    ATTACH_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f` under the attach lock (one thread at a time builds or attaches
/// to the root handle), called from inside the gate. If `owner` (read
/// under the lock) names the slot of the thread whose handle `f` attaches
/// to, first marks an attach pending and waits until the owner is outside
/// uvfs, where it stays until `f` returns: `f` may then reach the owner's
/// handle as its only user.
pub(crate) fn attach<R>(owner: impl FnOnce() -> Option<&'static Slot>, f: impl FnOnce() -> R) -> R {
    let _lock = attach_lock();
    let Some(owner) = owner() else {
        return f();
    };
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            GATE.fetch_and(!ATTACH, Ordering::SeqCst);
        }
    }
    GATE.fetch_or(ATTACH, Ordering::SeqCst);
    let _clear = Clear;
    fence_others();
    while owner.inside.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    f()
}

/// With [`ASYMMETRIC`], the other threads' half of the fence (see the
/// module doc); a failure means the gate cannot work: stops loudly.
fn fence_others() {
    if ASYMMETRIC.load(Ordering::Relaxed)
        && rustix::thread::membarrier(rustix::thread::MembarrierCommand::PrivateExpedited).is_err()
    {
        // The kernel refuses the command only to a process that did not
        // register; the flags read next could then miss a thread inside
        // uvfs, which would keep using what the caller is about to change
        // (or hold a lock a fork child would inherit).
        let _ = rustix::io::write(
            rustix::stdio::stderr(),
            b"uvfs-preload: membarrier failed after registration; cannot hold threads out of uvfs\n",
        );
        std::process::abort();
    }
}

/// `fork`'s prepare handler: marks a fork pending and waits until no
/// thread is inside uvfs (the forking thread is not: `fork` is never
/// called from inside the shim).
pub(crate) fn before_fork() {
    FORK_LOCK.lock();
    GATE.fetch_or(FORK, Ordering::SeqCst);
    fence_others();
    let all: Vec<&'static Slot> = slots().clone();
    for s in all {
        while s.inside.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }
}

/// `fork`'s release handler, in the parent and in the child.
pub(crate) fn after_fork() {
    GATE.fetch_and(!FORK, Ordering::SeqCst);
    FORK_LOCK.unlock();
}
