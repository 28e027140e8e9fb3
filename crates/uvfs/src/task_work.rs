//! Deferred work, the `task_work` analogue: a put that is not close(2)'s
//! own (a replaced dup2 target, close_range, a lookup's reference, a failed
//! open on the stock path) queues the file's final release on the calling
//! thread, and the queue is drained when the thread's outermost API call
//! returns.
//!
//! Like the kernel's list, the queue is intrusive and knows nothing of what
//! it runs: each queued item is a `Callback` (`struct callback_head`)
//! embedded in the object the work is about (a file), holding the link and
//! the function to run, so queueing allocates nothing. Work added outside
//! any API call (a [`FileRef`](crate::FileRef) dropped by the embedder's own
//! code) has no call to wait for and runs at once, as a kernel thread's
//! fput has no return to user space.

use crate::primitive::cell::UnsafeCell;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// One piece of deferred work (`struct callback_head`), embedded in the
/// object it concerns: the queue's link and the function to run.
pub(crate) struct Callback {
    /// The next queued item; touched only by the thread whose queue holds
    /// this one.
    next: UnsafeCell<*const Callback>,
    func: unsafe fn(NonNull<Callback>),
}

impl Callback {
    /// An unqueued item that will run `func` on itself.
    pub(crate) fn new(func: unsafe fn(NonNull<Callback>)) -> Callback {
        Callback {
            next: UnsafeCell::new(ptr::null()),
            func,
        }
    }

    /// Runs the item's function.
    ///
    /// # Safety
    /// The caller owns the item (it is on no queue, or was just taken off
    /// one), and the item's function may run on it now.
    unsafe fn call(cb: NonNull<Callback>) {
        // SAFETY: per the contract, the item is live and ours.
        let func = unsafe { cb.as_ref() }.func;
        // SAFETY: per the contract.
        unsafe { func(cb) };
    }
}

/// A thread's call depth and queue, in one thread-local (each lookup is
/// a `__tls_get_addr` call when the library is linked into a shared
/// object, such as the preload shim).
struct Queue {
    /// How many API calls this thread is inside.
    depth: Cell<u32>,
    /// The last queued item (the queue runs from here along the links).
    head: Cell<*const Callback>,
}

// Through the facade: under loom and shuttle each modelled thread has a
// queue of its own (their threads share one OS thread).
crate::primitive::thread_local! {
    static QUEUE: Queue = const {
        Queue {
            depth: Cell::new(0),
            head: Cell::new(ptr::null()),
        }
    };
}

/// The queue of the one thread an embedder named with [`set_fast_thread`],
/// reached without a thread-local lookup.
struct FastQueue(Queue);

// SAFETY: only the thread whose thread pointer is in `FAST_TP` touches it
// (see `set_fast_thread`'s contract): never two threads at once.
unsafe impl Sync for FastQueue {}

static FAST: FastQueue = FastQueue(Queue {
    depth: Cell::new(0),
    head: Cell::new(ptr::null()),
});

/// The thread pointer of the thread that uses [`FAST`] (0: none). Only
/// that thread can read its own value here, so relaxed order is enough:
/// it wrote it itself, or the thread that did has exited and its exit is
/// ordered before this thread's start (which reused its thread block).
static FAST_TP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The calling thread's thread pointer (`%fs:0` on x86-64, `tpidr_el0` on
/// aarch64: the address of its thread control block, distinct among live
/// threads and fixed for a thread's life), read with one instruction and no
/// call; 0 where it is not read (other targets, and under loom and shuttle,
/// whose modelled threads share one OS thread).
#[inline(always)]
pub fn thread_pointer() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(any(loom, shuttle))))]
    {
        let tp: usize;
        // SAFETY: on x86-64 Linux the thread control block's first word
        // is its own address (glibc's and musl's `tcbhead_t`); reading it
        // through `%fs` touches no other memory.
        unsafe {
            std::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) tp,
                options(nostack, readonly, preserves_flags, pure)
            );
        }
        tp
    }
    #[cfg(all(target_arch = "aarch64", target_os = "linux", not(any(loom, shuttle))))]
    {
        let tp: usize;
        // SAFETY: reads the thread-pointer register, no memory.
        unsafe {
            std::arch::asm!(
                "mrs {}, tpidr_el0",
                out(reg) tp,
                options(nostack, nomem, preserves_flags, pure)
            );
        }
        tp
    }
    #[cfg(not(all(
        any(target_arch = "x86_64", target_arch = "aarch64"),
        target_os = "linux",
        not(any(loom, shuttle))
    )))]
    {
        0
    }
}

/// Makes the calling thread's depth and queue a global, reached by its
/// thread pointer instead of a thread-local lookup (in a shared object,
/// each lookup is a `__tls_get_addr` call; an LD_PRELOAD shim makes two
/// per API call), or with `on` false, gives the global up. Returns whether
/// the calling thread uses the global now (false where
/// [`thread_pointer`] is 0).
///
/// # Safety
/// Called outside any API call of this thread, and only while no other
/// thread can be using the global: the embedder names one thread at a
/// time, and gives it up (`on` false) before that thread exits, and in a
/// `fork` child made by another thread (whose copy of the named thread
/// does not exist, and a later thread could reuse its thread block); the
/// named thread, if it was inside an API call at the fork, left the global
/// mid-call in the child.
pub unsafe fn set_fast_thread(on: bool) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    if !on {
        FAST_TP.store(0, Relaxed);
        return false;
    }
    let tp = thread_pointer();
    if tp == 0 {
        return false;
    }
    // The thread's own queue is empty outside any call (the outermost call
    // drained it), so its work moves nowhere.
    FAST_TP.store(tp, Relaxed);
    true
}

/// Runs `f` on this thread's depth and queue: the global one if this is
/// the thread [`set_fast_thread`] named, else its thread-local one.
#[inline(always)]
fn with_queue<R>(f: impl FnOnce(&Queue) -> R) -> R {
    let fast = FAST_TP.load(std::sync::atomic::Ordering::Relaxed);
    if fast != 0 && fast == thread_pointer() {
        return f(&FAST.0);
    }
    QUEUE.with(f)
}

/// Marks the thread as inside an API call until dropped; the outermost one
/// drains the queue on drop.
pub(crate) struct Call {
    _not_send: PhantomData<*const ()>,
}

/// Enters an API call.
#[inline]
pub(crate) fn enter() -> Call {
    with_queue(|q| q.depth.set(q.depth.get() + 1));
    Call {
        _not_send: PhantomData,
    }
}

impl Drop for Call {
    #[inline]
    fn drop(&mut self) {
        let work = with_queue(|q| {
            let n = q.depth.get() - 1;
            q.depth.set(n);
            n == 0 && !q.head.get().is_null()
        });
        if work {
            run();
        }
    }
}

/// `task_work_add`: queues `cb` on this thread, to run when the outermost
/// API call returns, or runs it at once when no API call is in progress.
///
/// # Safety
/// `cb` is live, on no queue, and stays live until its function runs; the
/// caller hands it over (nothing else touches its link meanwhile; the
/// function may be called with it from this thread).
pub(crate) unsafe fn add(cb: NonNull<Callback>) {
    let queued = with_queue(|q| {
        if q.depth.get() == 0 {
            return false;
        }
        // SAFETY: handed over by the caller: the item is live, and we
        // alone touch its link.
        let item = unsafe { cb.as_ref() };
        // SAFETY: as above.
        item.next.with_mut(|n| unsafe { *n = q.head.get() });
        q.head.set(cb.as_ptr());
        true
    });
    if !queued {
        // SAFETY: handed over by the caller, on no queue.
        unsafe { Callback::call(cb) };
    }
}

/// Runs every queued item, including any queued while they run.
pub fn run() {
    // Items run inside a call of their own, so that work they add is
    // queued here instead of recursing.
    let _call = enter();
    loop {
        let mut cur = with_queue(|q| q.head.replace(ptr::null()));
        if cur.is_null() {
            break;
        }
        while let Some(cb) = NonNull::new(cur.cast_mut()) {
            // SAFETY: queued items are live and belong to the queue; the
            // link is read before the function may free the item.
            let item = unsafe { cb.as_ref() };
            // SAFETY: as above.
            cur = item.next.with(|n| unsafe { *n });
            // SAFETY: taken off the queue just now; each item is queued
            // once.
            unsafe { Callback::call(cb) };
        }
    }
    // `_call` is the outermost call only if we were entered from `Call::drop`
    // with depth zero; the queue is empty now, so its drop does nothing.
}

/// Whether the calling thread has releases waiting (for tests).
pub fn pending() -> bool {
    !with_queue(|q| q.head.get().is_null())
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::{Callback, add, enter, pending, set_fast_thread, thread_pointer};
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static RAN: AtomicUsize = AtomicUsize::new(0);

    unsafe fn count(_: NonNull<Callback>) {
        RAN.fetch_add(1, Ordering::SeqCst);
    }

    /// The named thread's work waits for its outermost call, as on a
    /// thread-local queue; another thread's queue stays its own meanwhile;
    /// and after the global is given up the thread is back on its own.
    #[test]
    fn the_named_threads_queue_is_a_global_and_others_keep_theirs() {
        std::thread::spawn(|| {
            let tp = thread_pointer();
            assert_ne!(tp, 0);
            assert_eq!(tp, thread_pointer());
            // SAFETY: outside any call; no other thread is named.
            assert!(unsafe { set_fast_thread(true) });
            let mut cbs = [Callback::new(count), Callback::new(count)];
            let outer = enter();
            let inner = enter();
            // SAFETY: live until the end of this thread's closure, on no
            // queue; run once.
            unsafe { add(NonNull::from(&mut cbs[0])) };
            drop(inner);
            assert!(pending(), "queued until the outermost call returns");
            assert_eq!(RAN.load(Ordering::SeqCst), 0);
            // Another thread's queue is its own (the global is not its).
            std::thread::spawn(|| assert!(!pending())).join().unwrap();
            drop(outer);
            assert!(!pending());
            assert_eq!(RAN.load(Ordering::SeqCst), 1);
            // SAFETY: outside any call.
            assert!(!unsafe { set_fast_thread(false) });
            let call = enter();
            // SAFETY: as above.
            unsafe { add(NonNull::from(&mut cbs[1])) };
            assert!(pending());
            drop(call);
            assert_eq!(RAN.load(Ordering::SeqCst), 2);
        })
        .join()
        .unwrap();
    }

    /// Two live threads never share a thread pointer.
    #[test]
    fn thread_pointers_differ_between_live_threads() {
        let here = thread_pointer();
        let there = std::thread::spawn(thread_pointer).join().unwrap();
        assert_ne!(here, 0);
        assert_ne!(here, there);
    }
}
