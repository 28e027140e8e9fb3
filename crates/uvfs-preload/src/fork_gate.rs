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

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering, compiler_fence};

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

/// A fork is pending: threads must not enter.
static FORKING: AtomicBool = AtomicBool::new(false);

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
    pub(crate) fn take() -> Mine {
        Mine(take_slot())
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

/// A free slot, or a new one.
fn take_slot() -> &'static Slot {
    let mut all = slots();
    for s in all.iter() {
        if s.taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return s;
        }
    }
    let s: &'static Slot = Box::leak(Box::new(Slot {
        inside: AtomicBool::new(false),
        taken: AtomicBool::new(true),
    }));
    all.push(s);
    s
}

/// Inside uvfs until dropped.
pub(crate) enum Inside {
    /// With this thread's flag raised.
    Flagged(&'static Slot),
    /// Holding the fork lock (a thread whose slot is gone: its
    /// thread-locals are being destroyed at exit).
    Locked,
}

impl Drop for Inside {
    fn drop(&mut self) {
        match self {
            Inside::Flagged(s) => s.inside.store(false, Ordering::Release),
            Inside::Locked => FORK_LOCK.unlock(),
        }
    }
}

/// Enters uvfs with this thread's slot (`None`: a thread whose state is
/// gone, its thread-locals being destroyed at exit): waits while a fork is
/// pending.
pub(crate) fn enter(mine: Option<&Mine>) -> Inside {
    let Some(&Mine(slot)) = mine else {
        FORK_LOCK.lock();
        return Inside::Locked;
    };
    let asymmetric = ASYMMETRIC.load(Ordering::Relaxed);
    loop {
        let forking = if asymmetric {
            // The forker's `membarrier` is the full fence between this
            // store and this load (see the module doc); the compiler must
            // keep them in this order.
            slot.inside.store(true, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            FORKING.load(Ordering::Relaxed)
        } else {
            slot.inside.store(true, Ordering::SeqCst);
            FORKING.load(Ordering::SeqCst)
        };
        if !forking {
            // What the forker does between a fork and the mark's lowering
            // (the child's copy) is ordered before this thread's uvfs work
            // by the fork lock, taken below when the mark was seen; on a
            // clear mark nothing of the forker's needs ordering here.
            return Inside::Flagged(slot);
        }
        slot.inside.store(false, Ordering::SeqCst);
        FORK_LOCK.lock();
        FORK_LOCK.unlock();
    }
}

/// `fork`'s prepare handler: marks a fork pending and waits until no
/// thread is inside uvfs (the forking thread is not: `fork` is never
/// called from inside the shim).
pub(crate) fn before_fork() {
    FORK_LOCK.lock();
    FORKING.store(true, Ordering::SeqCst);
    if ASYMMETRIC.load(Ordering::Relaxed)
        && rustix::thread::membarrier(rustix::thread::MembarrierCommand::PrivateExpedited).is_err()
    {
        // The kernel refuses the command only to a process that did not
        // register; the flags read below could then miss a thread inside
        // uvfs, and the child would inherit a held lock: stop loudly.
        let _ = rustix::io::write(
            rustix::stdio::stderr(),
            b"uvfs-preload: membarrier failed after registration; cannot fork safely\n",
        );
        std::process::abort();
    }
    let all: Vec<&'static Slot> = slots().clone();
    for s in all {
        while s.inside.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }
}

/// `fork`'s release handler, in the parent and in the child.
pub(crate) fn after_fork() {
    FORKING.store(false, Ordering::SeqCst);
    FORK_LOCK.unlock();
}
